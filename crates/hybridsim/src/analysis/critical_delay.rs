//! Closed-loop stability of a real-time hybrid test against the actuator delay, and its
//! critical delay (`hybridsim analyze delay`).
//!
//! A linear model is tested through actuators that reproduce the command after a pure delay
//! τ = (w + φ)Δt^C (`w` whole controller samples and a fraction φ ∈ [0, 1)), interpolated
//! linearly between samples as the virtual lab does: the achieved displacement of tick k is
//! `x_k = (1 − φ) c_{k−w} + φ c_{k−w−1}` ([`crate::physical::actuator`]), and the specimen
//! (its zero-state stiffness `K_s` and damping `C_s`) answers
//! `f_k = K_s x_k + C_s (x_k − x_{k−1})/Δt^C` (the virtual lab differentiates the achieved
//! displacement of a delayed actuator). The loop is closed by the scheme:
//!
//! - **explicit-rths** ([`crate::integrators::ExplicitRths`]): the numerical model's
//!   generalized-α step `𝕐_{n+1} = A 𝕐_n + B f_{n−d}` (`d = force_delay`), with `A` and `B`
//!   built column by column by the very stepper the run uses (no per-scheme algebra), and the
//!   command `c_n = S u_n`. The closed-loop state is
//!   `z_n = [𝕐_n; c_{n−1}; …; c_{n−m}]`, `m = d + w + 2`, and
//!   `z_{n+1} = T(τ) z_n` with `f_{n−d} = Σ_j G_j c_{n−j}`:
//!   `G_{d+w} += (1−φ)(K_s + C_s/Δt)`, `G_{d+w+1} += φ(K_s + C_s/Δt) − (1−φ)C_s/Δt`,
//!   `G_{d+w+2} += −φ C_s/Δt`. τ is continuous: ρ(T(τ)) is continuous in τ, and the critical
//!   delay (the smallest τ with ρ > 1) is found by a sweep and bisection.
//! - **pg-alpha**: the amplification matrix of one coarse step is built numerically from the
//!   scheme's flat state with the measured force delayed by k physical substeps
//!   ([`super::spectral::DelayedProvider`]; for a memoryless linear specimen a delay of the force
//!   equals a delay of the displacement); only whole substeps are supported, so its critical
//!   delay is bracketed to one sample.
//!
//! Loop delays destabilize a hybrid test by feeding energy into it, a negative damping of about
//! `K_s τ` (Horiuchi et al. 1999); the structure's damping must absorb it. Noise, quantization,
//! compensation and the loading-system compliance are not modelled (the models that use them are
//! refused, naming the field).

use super::spectral::{self, amplification_matrix, build_for_analysis, SpectralOptions};
use super::{free_vibration_with_lab, is_linear, AnalysisError};
use crate::assembly::Coupling;
use crate::integrators::{AlphaParameters, AlphaState, AlphaStepper};
use crate::model::lab::ActuatorDynamics;
use crate::model::{IntegratorKind, Model};
use nalgebra::{DMatrix, DVector};

/// Options of a critical-delay analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopDelayOptions {
    /// Largest actuator delay swept, in seconds (model time); `None`: 40 controller samples.
    pub max_delay: Option<f64>,
    /// Sweep points per controller sample (explicit-rths; PG-α sweeps whole samples).
    pub points_per_sample: usize,
    /// Bisection tolerance of the critical delay, in controller samples.
    pub tolerance: f64,
}

impl Default for LoopDelayOptions {
    fn default() -> Self {
        Self {
            max_delay: None,
            points_per_sample: 4,
            tolerance: 1e-6,
        }
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopDelayPoint {
    /// Actuator delay τ in seconds.
    pub delay: f64,
    /// τ in controller samples.
    pub samples: f64,
    /// Spectral radius of the closed loop.
    pub rho: f64,
}

/// The result of [`critical_delay`].
#[derive(Debug, Clone, PartialEq)]
pub struct LoopDelayReport {
    /// Scheme name.
    pub scheme: String,
    /// Controller sample Δt^C (the explicit scheme's step; PG-α's physical substep Δt^P).
    pub sample: f64,
    /// The scheme's own force delay in samples (explicit-rths).
    pub force_delay: usize,
    /// The sweep.
    pub points: Vec<LoopDelayPoint>,
    /// The smallest delay with ρ > 1, in seconds (`None`: stable over the whole sweep).
    pub critical: Option<f64>,
    /// Whether the critical delay is resolved continuously (explicit-rths) or to one sample
    /// (PG-α: the largest stable whole-sample delay + 1).
    pub continuous: bool,
}

impl LoopDelayReport {
    /// The critical delay in controller samples.
    pub fn critical_samples(&self) -> Option<f64> {
        self.critical.map(|c| c / self.sample)
    }
}

/// Threshold of instability: ρ above `1 + RHO_TOLERANCE`.
pub const RHO_TOLERANCE: f64 = 1e-10;

/// Whether a spectral radius is unstable (above `1 + RHO_TOLERANCE`, or not a number: the
/// eigenvalue iteration failed, which is never taken for stable).
pub fn unstable_rho(rho: f64) -> bool {
    rho.is_nan() || rho > 1.0 + RHO_TOLERANCE
}

/// The closed loop of an explicit RTHS test of a linear model, ready to be evaluated at any
/// actuator delay ([`ExplicitLoop::matrix`]).
#[derive(Debug, Clone)]
pub struct ExplicitLoop {
    /// One step of the numerical model, `𝕐_{n+1} = A 𝕐_n + B f` (`𝕐 = [Y; Ẏ; V]`, or
    /// `[Y; Ẏ]` when `V` feeds nothing back, as with ρ∞ = 1).
    pub a: DMatrix<f64>,
    /// Its force input over the physical DOFs (`3N × n_p`).
    pub b: DMatrix<f64>,
    /// Rows of the physical DOFs' displacements in `𝕐`.
    pub rows: Vec<usize>,
    /// Specimen stiffness over the physical DOFs.
    pub k_s: DMatrix<f64>,
    /// Specimen damping over the physical DOFs.
    pub c_s: DMatrix<f64>,
    /// Δt = Δt^C.
    pub dt: f64,
    /// The scheme's force delay `d`.
    pub force_delay: usize,
}

impl ExplicitLoop {
    /// Build for `model` (integrator `explicit-rths`, linear).
    pub fn new(model: &Model) -> Result<Self, AnalysisError> {
        check_loop_model(model)?;
        let m = free_vibration_with_lab(model);
        let (mut part, physical) = crate::integrators::explicit_rths_partitions(&m, None)?;
        let a_s = &m.analysis;
        let dt = a_s.time_step;
        let params = AlphaParameters::new(a_s.rho_inf);
        let mut stepper = AlphaStepper::new(&part, params, dt, 1)
            .map_err(|e| AnalysisError::input(model, "analysis", e))?;
        let size = part.state.size();
        let n = part.state.n_dofs();
        // The physical DOFs (each once) and the specimens over them.
        let mut rows: Vec<usize> = Vec::new();
        for p in &physical {
            for d in p.state.dofs.iter() {
                let r = part.state.dofs.iter().position(|x| x == d).ok_or_else(|| {
                    AnalysisError::input(model, "substructure", format!("DOF {d} has no mass"))
                })?;
                if !rows.contains(&r) {
                    rows.push(r);
                }
            }
        }
        let np = rows.len();
        let mut k_s = DMatrix::zeros(np, np);
        let mut c_s = DMatrix::zeros(np, np);
        for (k, sub) in m.substructures.iter().enumerate() {
            if !sub.physical {
                continue;
            }
            let Some(est) = spectral::true_specimen_estimate(&m, k) else {
                continue;
            };
            let idx: Vec<usize> = est
                .dofs
                .iter()
                .map(|d| {
                    let r = part
                        .state
                        .dofs
                        .iter()
                        .position(|x| x == d)
                        .unwrap_or(usize::MAX);
                    rows.iter().position(|x| *x == r).unwrap_or(usize::MAX)
                })
                .collect();
            for (i, a) in idx.iter().enumerate() {
                for (j, b) in idx.iter().enumerate() {
                    if *a < np && *b < np {
                        k_s[(*a, *b)] += est.stiffness[(i, j)];
                        c_s[(*a, *b)] += est.damping[(i, j)];
                    }
                }
            }
        }
        // A and B column by column, by the stepper of the run.
        let t1 = dt;
        let mut from = AlphaState::zeros(size);
        let mut to = AlphaState::zeros(size);
        let mut a = DMatrix::zeros(3 * size, 3 * size);
        let mut e = vec![0.0; 3 * size];
        let mut out = vec![0.0; 3 * size];
        let step_err =
            |e: crate::physical::PortError| AnalysisError::input(model, "analysis", e.to_string());
        for j in 0..3 * size {
            e.iter_mut().for_each(|x| *x = 0.0);
            e[j] = 1.0;
            from.import(&e);
            stepper
                .step(&mut part, &from, t1, None, &mut to)
                .map_err(step_err)?;
            to.export(&mut out);
            a.column_mut(j).copy_from_slice(&out);
        }
        let mut b = DMatrix::zeros(3 * size, np);
        let couplings: Vec<Coupling> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| Coupling {
                row: *r,
                lambda: i,
                sign: -1.0,
            })
            .collect();
        let zero = AlphaState::zeros(size);
        for i in 0..np {
            let mut f = DVector::zeros(np);
            f[i] = 1.0;
            stepper
                .step(&mut part, &zero, t1, Some((&couplings, &f, 1.0)), &mut to)
                .map_err(step_err)?;
            to.export(&mut out);
            b.column_mut(i).copy_from_slice(&out);
        }
        let _ = n;
        // With α_m = γ (ρ∞ = 1) the filtered rate V feeds nothing back: its spurious root
        // (α_m − 1)/α_m = −1 is an output of the loop, not a mode of it, and is left out.
        let (a, b) = if a.view((0, 2 * size), (2 * size, size)).amax() == 0.0 {
            (
                a.view((0, 0), (2 * size, 2 * size)).clone_owned(),
                b.rows(0, 2 * size).clone_owned(),
            )
        } else {
            (a, b)
        };
        Ok(Self {
            a,
            b,
            rows,
            k_s,
            c_s,
            dt,
            force_delay: a_s.force_delay,
        })
    }

    /// The closed-loop matrix `T(τ)` for an actuator delay of `tau` seconds (see the module
    /// documentation).
    pub fn matrix(&self, tau: f64) -> DMatrix<f64> {
        let ny = self.a.nrows();
        let np = self.rows.len();
        let x = (tau / self.dt).max(0.0);
        // Whole samples and fraction, robust to round-off at whole samples.
        let mut w = x.floor();
        if x - w > 1.0 - 1e-12 {
            w += 1.0;
        }
        let phi = (x - w).max(0.0);
        let w = w as usize;
        let d = self.force_delay;
        let m = d + w + 2;
        let kc = &self.k_s + &self.c_s / self.dt;
        let cd = &self.c_s / self.dt;
        let mut g: Vec<DMatrix<f64>> = vec![DMatrix::zeros(np, np); m + 1];
        g[d + w] += &kc * (1.0 - phi);
        g[d + w + 1] += &kc * phi - &cd * (1.0 - phi);
        g[d + w + 2] -= &cd * phi;
        let size = ny + m * np;
        let mut t = DMatrix::zeros(size, size);
        t.view_mut((0, 0), (ny, ny)).copy_from(&self.a);
        // S: the physical displacements of 𝕐.
        let mut s = DMatrix::zeros(np, ny);
        for (i, r) in self.rows.iter().enumerate() {
            s[(i, *r)] = 1.0;
        }
        let bg0 = &self.b * &g[0] * &s;
        let mut top = t.view_mut((0, 0), (ny, ny));
        top += bg0;
        for (j, gj) in g.iter().enumerate().skip(1) {
            let c = ny + (j - 1) * np;
            t.view_mut((0, c), (ny, np)).copy_from(&(&self.b * gj));
        }
        // History: slot 1 ← c_n = S 𝕐_n, slot j + 1 ← slot j.
        t.view_mut((ny, 0), (np, ny)).copy_from(&s);
        for j in 1..m {
            let r = ny + j * np;
            let c = ny + (j - 1) * np;
            for i in 0..np {
                t[(r + i, c + i)] = 1.0;
            }
        }
        t
    }

    /// Spectral radius of `T(τ)`.
    pub fn spectral_radius(&self, tau: f64) -> f64 {
        spectral::spectral_radius(&self.matrix(tau))
    }
}

/// The model must be linear, tested through pure-delay (or ideal) actuators without
/// compensation or compliant loading systems.
fn check_loop_model(model: &Model) -> Result<(), AnalysisError> {
    if !is_linear(model)? {
        return Err(AnalysisError::input(
            model,
            "element",
            "the critical-delay analysis needs a linear model (its closed loop is a linear \
             map); this one has nonlinear elements",
        ));
    }
    if let Some(lab) = &model.lab {
        for (i, a) in lab.lab.actuators.iter().enumerate() {
            if !matches!(
                a.dynamics,
                ActuatorDynamics::Ideal | ActuatorDynamics::Delay { .. }
            ) {
                return Err(AnalysisError::input(
                    model,
                    format!("lab.actuator[{i}].dynamics"),
                    "the critical-delay analysis models each actuator as a pure delay (swept); \
                     set dynamics = { kind = \"delay\", … } or leave it ideal",
                ));
            }
            if a.delay_compensation.is_some() || a.compliance_compensation.is_some() {
                return Err(AnalysisError::input(
                    model,
                    format!("lab.actuator[{i}].compensation"),
                    "the critical-delay analysis does not model compensation: remove it to \
                     analyse the uncompensated loop",
                ));
            }
            if a.loading_stiffness.is_finite() {
                return Err(AnalysisError::input(
                    model,
                    format!("lab.actuator[{i}].loading_stiffness"),
                    "the critical-delay analysis does not model a compliant loading system",
                ));
            }
        }
    }
    Ok(())
}

/// Sweep the actuator delay, print-ready, and find the critical delay of `model`'s scheme
/// (`explicit-rths`: continuous; `pg-alpha`: whole physical substeps).
pub fn critical_delay(
    model: &Model,
    opts: &LoopDelayOptions,
) -> Result<LoopDelayReport, AnalysisError> {
    match model.analysis.integrator {
        IntegratorKind::ExplicitRths => explicit_critical_delay(model, opts),
        IntegratorKind::PgAlpha => pg_alpha_critical_delay(model, opts),
        other => Err(AnalysisError::input(
            model,
            "analysis.integrator",
            format!(
                "the critical-delay analysis needs a coupled scheme with a loop (explicit-rths \
                 or pg-alpha), found `{}`",
                other.name()
            ),
        )),
    }
}

fn explicit_critical_delay(
    model: &Model,
    opts: &LoopDelayOptions,
) -> Result<LoopDelayReport, AnalysisError> {
    let lp = ExplicitLoop::new(model)?;
    let dt = lp.dt;
    let max = opts.max_delay.unwrap_or(40.0 * dt);
    let per = opts.points_per_sample.max(1);
    let n = ((max / dt) * per as f64).ceil() as usize;
    let mut points = Vec::with_capacity(n + 1);
    for i in 0..=n {
        let samples = i as f64 / per as f64;
        let tau = samples * dt;
        points.push(LoopDelayPoint {
            delay: tau,
            samples,
            rho: lp.spectral_radius(tau),
        });
    }
    let unstable = unstable_rho;
    let critical = match points.iter().position(|p| unstable(p.rho)) {
        None => None,
        Some(0) => Some(0.0),
        Some(i) => {
            let (mut lo, mut hi) = (points[i - 1].delay, points[i].delay);
            while hi - lo > opts.tolerance * dt {
                let mid = 0.5 * (lo + hi);
                if unstable(lp.spectral_radius(mid)) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            Some(hi)
        }
    };
    Ok(LoopDelayReport {
        scheme: "explicit-rths".into(),
        sample: dt,
        force_delay: lp.force_delay,
        points,
        critical,
        continuous: true,
    })
}

fn pg_alpha_critical_delay(
    model: &Model,
    opts: &LoopDelayOptions,
) -> Result<LoopDelayReport, AnalysisError> {
    check_loop_model(model)?;
    let mut m = model.clone();
    // The specimens answer through their numerical stand-ins (linear and memoryless); the
    // delay line stands in for the actuator.
    m.lab = None;
    let a = &model.analysis;
    let dt_p = a.time_step / a.subcycles.max(1) as f64;
    let max = opts.max_delay.unwrap_or(40.0 * dt_p);
    let kmax = (max / dt_p).round() as usize;
    let mut points = Vec::new();
    let mut critical = None;
    for k in 0..=kmax {
        let so = SpectralOptions {
            delay_ticks: k,
            ..SpectralOptions::default()
        };
        let mut integ = build_for_analysis(&m, a.time_step, &so)?;
        let amp = amplification_matrix(integ.as_mut())?;
        let rho = spectral::spectral_radius(&amp);
        points.push(LoopDelayPoint {
            delay: k as f64 * dt_p,
            samples: k as f64,
            rho,
        });
        if critical.is_none() && unstable_rho(rho) {
            critical = Some(k as f64 * dt_p);
        }
    }
    Ok(LoopDelayReport {
        scheme: "pg-alpha".into(),
        sample: dt_p,
        force_delay: 0,
        points,
        critical,
        continuous: false,
    })
}
