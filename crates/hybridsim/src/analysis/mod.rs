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
//!   actuator delay, and the critical delay at which it exceeds 1.
//!
//! These are offline tools: they allocate freely and never run inside a real-time loop.

pub mod convergence;
pub mod critical_delay;
pub mod energy;
pub mod spectral;
pub mod tracking;

pub use convergence::{convergence, ConvergenceOptions, ConvergenceReport, Reference};
pub use critical_delay::{critical_delay, LoopDelayOptions, LoopDelayReport};
pub use energy::{energy_history, EnergyReport};
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
/// amplification matrix and the exact references need.
pub(crate) fn free_vibration(model: &Model) -> Model {
    let mut m = model.clone();
    m.loads.clear();
    m.ground_motions.clear();
    m
}

/// Whether `R(Y)` of the assembled (monolithic) model is linear: `R(a x) = a R(x)` and
/// `R(x + y) = R(x) + R(y)` for two fixed probe states, to `1e-9` relative. Elements with
/// hysteretic states or nonlinear springs fail it.
pub fn is_linear(model: &Model) -> Result<bool, AnalysisError> {
    let mut parts = build_partitions(&free_vibration(model), Grouping::Monolithic)?;
    let part = &mut parts[0];
    let n = part.state.size();
    let probe = |seed: f64, scale: f64| -> Vec<f64> {
        (0..n)
            .map(|i| scale * (1.0 + 0.5 * (seed * (i as f64 + 1.0)).sin()))
            .collect()
    };
    let mut eval = |y: &[f64]| -> Vec<f64> {
        let mut out = vec![0.0; n];
        part.state.residual(y, &mut out, &mut part.ws);
        out
    };
    // Probe amplitudes: small and large, so that mild and strong nonlinearity both show.
    for scale in [1e-4, 1e-1] {
        let x = probe(1.7, scale);
        let y = probe(0.3, scale);
        let xy: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        let x3: Vec<f64> = x.iter().map(|a| 3.0 * a).collect();
        let (rx, ry, rxy, rx3) = (eval(&x), eval(&y), eval(&xy), eval(&x3));
        let norm = rx
            .iter()
            .chain(&ry)
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        for i in 0..n {
            if (rxy[i] - rx[i] - ry[i]).abs() > 1e-9 * norm
                || (rx3[i] - 3.0 * rx[i]).abs() > 3e-9 * norm
            {
                return Ok(false);
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
