//! Algorithm analysis of any configured scheme, without per-scheme algebra.
//!
//! - [`spectral`]: the amplification matrix of one step built numerically from the scheme's flat
//!   algorithmic state ([`spectral::amplification_matrix`], Abbiati et al. 2019, eq 17),
//!   its eigenvalues, spectral radius, discrete frequency Ω̄ and damping ζ̄
//!   (Abbiati et al. 2019, eq 22, with eq 18 read as in ALGORITHMS.md E7) over a sweep of Ω = ωΔt;
//!   constraint-drift modes of partitioned schemes are identified and reported separately; an
//!   estimated/true physical stiffness ratio and a loop delay of k ticks can be imposed;
//! - [`mod@convergence`]: global error against an exact or fine-step reference for a sequence of
//!   time steps, with fitted slopes (Abbiati et al. 2019, Figs 1 and 6);
//! - [`energy`]: total mechanical energy history and its drift (Abbiati et al. 2019, Fig 9);
//! - [`tracking`]: the evaluation criteria J1–J9 of a real-time hybrid test (Silva et al. 2020);
//! - [`mod@critical_delay`]: closed-loop spectral radius of a real-time hybrid test against the
//!   actuator delay, and the critical delay at which it exceeds 1;
//! - [`mod@response_spectrum`]: elastic response spectra of ground-acceleration records;
//! - [`energy_error`]: the cumulative energy error `E_c` of a run against a reference run
//!   (Hung and El-Tawil 2009, eq 18).
//!
//! These are offline tools: they allocate freely and never run inside a real-time loop.

pub mod convergence;
pub mod critical_delay;
pub mod energy;
pub mod energy_error;
pub mod response_spectrum;
pub mod spectral;
pub mod tracking;

pub use convergence::{convergence, ConvergenceOptions, ConvergenceReport, Reference};
pub use critical_delay::{critical_delay, LoopDelayOptions, LoopDelayReport};
pub use energy::{energy_history, EnergyReport};
pub use energy_error::{cumulative_energy_error, energy_error_history, EnergyErrorInput};
pub use response_spectrum::{log_periods, response_spectrum, ResponseSpectrum, SpectrumError};
pub use spectral::{
    spectral_sweep, DelayLine, DelayedProvider, FrequencyReference, RootKind, SpectralOptions,
    SpectralPoint, SpectralReport, WithDelayLines,
};

use crate::assembly::{build_partitions, Grouping};
use crate::error::ModelError;
use crate::integrators::StepError;
use crate::integrators::TimeIntegrator;
use crate::model::Model;

/// Why an analysis could not be carried out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalysisError {
    /// The model (or a setting applied to it) is invalid.
    #[error("{0}")]
    Model(#[from] ModelError),
    /// A step failed (non-finite values, provider error).
    #[error("{0}")]
    Step(#[from] StepError),
    /// An analysis input is unusable.
    #[error("{file}: {field}: {reason}")]
    Input {
        /// The model file the analysis runs on.
        file: String,
        /// The offending option or model field.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

impl AnalysisError {
    pub(crate) fn input(
        model: &Model,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Input {
            file: model.source.clone(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// The model without external loads and ground motions (free vibration), as the
/// amplification matrix and the exact references need, with every imposed-motion DOF
/// restrained: the homogeneous problem of a scheme prescribes zero motion there (Hovmand et al.
/// 2022, §3), so those DOFs carry no mode and no algorithmic state of their own.
pub(crate) fn free_vibration(model: &Model) -> Model {
    free_vibration_with_lab(&numerical_twin(model))
}

/// [`free_vibration`] keeping the `[lab]` and the scheme: for the analyses that model the
/// laboratory loop themselves (the critical loop delay).
pub(crate) fn free_vibration_with_lab(model: &Model) -> Model {
    let mut m = model.clone();
    m.loads.clear();
    m.ground_motions.clear();
    restrain_imposed(&mut m);
    m
}

/// The model with its physical substructures simulated numerically (no `[lab]`): the analyses
/// study the coupling scheme, whose algorithmic state a transfer system's noise, safety layer
/// and network link are not part of (a loop delay and a stiffness mismatch enter through the
/// analysis options instead). Unit-state probes would trip the safety layer of a lab.
pub(crate) fn numerical_twin(model: &Model) -> Model {
    let mut m = model.clone();
    m.lab = None;
    // Without its lab, an explicit RTHS loop is the monolithic generalized-α step it uses on the
    // numerical model, with the specimen computed in the same step.
    if m.analysis.integrator == crate::model::IntegratorKind::ExplicitRths {
        m.analysis.integrator = crate::model::IntegratorKind::MgAlpha;
    }
    m
}

/// The model with every nonlinear element (extra states, or no constant stiffness, damping or
/// mass) replaced by its tangent at the zero state, a linear superelement with the initial
/// stiffness `K0` (extra states condensed, [`crate::elements::driver::initial_matrices`]) and
/// damping `C0`, as an eigenvalue analysis at the initial stiffness does; also the names of the
/// replaced elements. The spectral analysis of a hysteretic model is that of this linearization
/// (small amplitudes about rest).
pub fn linearized_at_rest(model: &Model) -> (Model, Vec<String>) {
    let mut m = model.clone();
    let mut replaced = Vec::new();
    for inst in &mut m.elements {
        let e = inst.element.as_ref();
        let linear = e.n_states() == 0
            && (e.mass().is_some()
                || e.linear_stiffness().is_some()
                || e.linear_damping().is_some());
        if linear {
            continue;
        }
        let (k0, c0) = crate::elements::driver::initial_matrices(e);
        let n = e.dofs().len();
        let mass = e.mass().unwrap_or_else(|| nalgebra::DMatrix::zeros(n, n));
        inst.element = std::sync::Arc::new(crate::elements::LinearSuperelement::new(
            e.dofs().to_vec(),
            mass,
            c0,
            k0,
            e.seismic_influence(),
        ));
        inst.initial_state = Default::default();
        replaced.push(inst.name.to_string());
    }
    (m, replaced)
}

/// Fix every DOF that an `[[imposed_motion]]` drives and drop the motions.
pub(crate) fn restrain_imposed(m: &mut Model) {
    for im in std::mem::take(&mut m.imposed_motions) {
        if let Some(node) = m.nodes.iter_mut().find(|n| n.id == im.dof.node) {
            if let Some(i) = node.position(&im.dof.dof) {
                node.dofs[i].fixed = true;
            }
        }
    }
}

/// Whether every imposed motion of the model is zero at all times (supports held at rest):
/// then the model's response equals that of the model with those DOFs fixed.
pub(crate) fn imposed_motions_at_rest(model: &Model) -> bool {
    model.imposed_motions.iter().all(|m| m.history.is_zero())
}

/// Whether `R(Y)` of the assembled (monolithic) model is linear: superposition
/// `R(x + y) = R(x) + R(y)`, homogeneity `R(3x) = 3R(x)` and oddness `R(−x) = −R(x)`, to `1e-9`
/// relative, for probe states of mixed signs at every amplitude from 1e-8 to 1e3 (a decade
/// apart; `y` at the amplitude of `x` and ten times it). Elements with hysteretic states or
/// nonlinear springs fail it whatever their yield or characteristic sizes in the model's units:
/// mixed signs put some components in loading and others in unloading, and the amplitudes
/// straddle any yield displacement between them (one fixed positive probe per amplitude called a
/// bilinear building in SI units linear: every component stayed in one regime).
pub fn is_linear(model: &Model) -> Result<bool, AnalysisError> {
    let mut parts = build_partitions(&free_vibration(model), Grouping::Monolithic)?;
    let part = &mut parts[0];
    let n = part.state.size();
    let probe = |seed: f64, scale: f64| -> Vec<f64> {
        (0..n)
            .map(|i| scale * (seed * (i as f64 + 1.0) + 0.4).sin())
            .collect()
    };
    let mut eval = |y: &[f64]| -> Vec<f64> {
        let mut out = vec![0.0; n];
        part.state.residual(y, &mut out, &mut part.ws);
        out
    };
    let scales: Vec<f64> = (-8..=3).map(|e| 10f64.powi(e)).collect();
    for &sx in &scales {
        let x = probe(1.7, sx);
        let rx = eval(&x);
        let x3: Vec<f64> = x.iter().map(|a| 3.0 * a).collect();
        let xm: Vec<f64> = x.iter().map(|a| -a).collect();
        let (rx3, rxm) = (eval(&x3), eval(&xm));
        let nx = rx.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..n {
            if (rx3[i] - 3.0 * rx[i]).abs() > 3e-9 * nx.max(f64::MIN_POSITIVE)
                || (rxm[i] + rx[i]).abs() > 1e-9 * nx.max(f64::MIN_POSITIVE)
            {
                return Ok(false);
            }
        }
        for sy in [sx, 10.0 * sx] {
            let y = probe(0.3, sy);
            let xy: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
            let (ry, rxy) = (eval(&y), eval(&xy));
            let norm = rx
                .iter()
                .chain(&ry)
                .fold(0.0f64, |m, v| m.max(v.abs()))
                .max(f64::MIN_POSITIVE);
            for i in 0..n {
                if (rxy[i] - rx[i] - ry[i]).abs() > 1e-9 * norm {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Displacement gap `Σ_X G_u^X u^X` at every interface multiplier of the integrator's current
/// state (zero for monolithic schemes): the constraint a partitioned scheme only enforces at
/// rate level.
pub fn interface_gap(integrator: &dyn TimeIntegrator) -> Vec<f64> {
    let Some(iface) = integrator.interface() else {
        return Vec::new();
    };
    let mut gap = vec![0.0; iface.len()];
    for (p, cs) in iface.couplings.iter().enumerate() {
        let y = integrator.state(p);
        for c in cs {
            gap[c.lambda] += c.sign * y[c.row];
        }
    }
    gap
}

/// Largest displacement magnitude over every partition's DOFs in the integrator's state.
pub(crate) fn max_displacement(integrator: &dyn TimeIntegrator) -> f64 {
    let mut m: f64 = 0.0;
    for (p, part) in integrator.partitions().iter().enumerate() {
        let y = integrator.state(p);
        for v in &y[..part.state.n_dofs()] {
            m = m.max(v.abs());
        }
    }
    m
}

/// Least-squares slope of `log y` against `log x` (points with non-positive values skipped).
pub fn fitted_slope(x: &[f64], y: &[f64]) -> f64 {
    let pts: Vec<(f64, f64)> = x
        .iter()
        .zip(y)
        .filter(|(a, b)| **a > 0.0 && **b > 0.0)
        .map(|(a, b)| (a.ln(), b.ln()))
        .collect();
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return f64::NAN;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}
