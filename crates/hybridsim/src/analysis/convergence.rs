//! Order of accuracy: the global truncation error (GTE) of the configured scheme for a
//! sequence of time steps, against an exact or a fine-step reference, with fitted slopes
//! (Abbiati et al. 2019, Figs 1 and 6: the paper measures the GTE at a fixed time against a
//! monolithic trapezoidal solution with a tiny step).
//!
//! - `Reference::Exact`: the linearized coupled model in free vibration,
//!   `z(t) = exp(A t) z0` with `z = [u; v]`, `A = [[0, I], [−m⁻¹k, −m⁻¹c]]` (Rayleigh
//!   damping included). Only for linear models without load, ground motion or extra states.
//! - `Reference::Fine`: the monolithic model integrated by MG-α with ρ∞ = 1 (the trapezoidal
//!   rule) and three fixed-`D` corrections per step (second order also on nonlinear models,
//!   ALGORITHMS.md E38), at a step `fine_factor` times smaller than the smallest tested one.
//!
//! The error is the largest displacement difference over every DOF copy of every partition
//! at the final time. On nonlinear models the single linearized correction of MG-α and PG-α
//! gives first order (E38): the report says so rather than failing.

use super::{fitted_slope, free_vibration, is_linear, AnalysisError};
use crate::assembly::{linearize, rayleigh_coefficients};
use crate::elements::DofRef;
use crate::integrators::{self, TimeIntegrator};
use crate::model::{IntegratorKind, Model};
use nalgebra::{DMatrix, DVector};

/// The reference solution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reference {
    /// Exact when the model allows it (linear, free vibration), fine-step otherwise.
    Auto,
    /// Matrix-exponential solution of the linearized coupled model.
    Exact,
    /// Monolithic trapezoidal solution with a step `fine_factor` times smaller.
    Fine,
}

/// Options of a convergence study.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvergenceOptions {
    /// Coarse time steps, largest first.
    pub time_steps: Vec<f64>,
    /// Time at which the error is measured (a multiple of every step).
    pub until: f64,
    /// Reference solution.
    pub reference: Reference,
    /// Fine reference step = smallest step / `fine_factor`.
    pub fine_factor: usize,
}

impl ConvergenceOptions {
    /// `levels` halvings from `dt0`, error at `until`.
    pub fn halving(dt0: f64, levels: usize, until: f64) -> Self {
        Self {
            time_steps: (0..levels).map(|i| dt0 / 2f64.powi(i as i32)).collect(),
            until,
            reference: Reference::Auto,
            fine_factor: 64,
        }
    }
}

/// The result of a convergence study.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvergenceReport {
    /// Scheme name.
    pub scheme: String,
    /// Time of the error measure.
    pub until: f64,
    /// Description of the reference.
    pub reference: String,
    /// `(Δt, GTE)` pairs.
    pub errors: Vec<(f64, f64)>,
    /// Largest reference displacement magnitude (for relative errors).
    pub reference_scale: f64,
    /// Slopes log(e_i/e_{i+1}) / log(Δt_i/Δt_{i+1}).
    pub slopes: Vec<f64>,
    /// Least-squares slope over all steps.
    pub fitted_slope: f64,
    /// Whether the model is linear.
    pub linear: bool,
    /// Expected order (None: no prediction).
    pub expected_order: Option<f64>,
    /// What to expect, in words.
    pub label: String,
}

/// Run `model` with step `dt` to `until` and return every displacement copy.
fn run_to(model: &Model, dt: f64, until: f64) -> Result<Vec<(DofRef, f64)>, AnalysisError> {
    let steps = (until / dt).round();
    if steps < 1.0 || ((steps * dt - until).abs() > 1e-9 * until.abs().max(dt)) {
        return Err(AnalysisError::input(
            model,
            "until",
            format!("{until} is not a whole multiple of the time step {dt}"),
        ));
    }
    let mut m = super::numerical_twin(model);
    m.analysis.time_step = dt;
    m.analysis.duration = until;
    let mut integ = integrators::build(&m)?;
    for _ in 0..steps as u64 {
        integ.step()?;
    }
    Ok(displacements(integ.as_ref()))
}

fn displacements(integ: &dyn TimeIntegrator) -> Vec<(DofRef, f64)> {
    let mut out = Vec::new();
    for (p, part) in integ.partitions().iter().enumerate() {
        let y = integ.state(p);
        for (i, d) in part.state.dofs.iter().enumerate() {
            out.push((d.clone(), y[i]));
        }
    }
    out
}

/// Exact free-vibration displacements of the linearized coupled model at `t`.
fn exact_solution(model: &Model, t: f64) -> Result<Vec<(DofRef, f64)>, AnalysisError> {
    let lin = linearize(model);
    let n = lin.dofs.len();
    let (alpha, beta) = rayleigh_coefficients(model)?.unwrap_or((0.0, 0.0));
    let c = &lin.c + &lin.m_rayleigh * alpha + &lin.k_rayleigh * beta;
    let m_lu = lin.m.clone().lu();
    let mk = m_lu
        .solve(&lin.k)
        .ok_or_else(|| AnalysisError::input(model, "element", "singular mass matrix"))?;
    let mc = m_lu
        .solve(&c)
        .ok_or_else(|| AnalysisError::input(model, "element", "singular mass matrix"))?;
    let mut a = DMatrix::zeros(2 * n, 2 * n);
    for i in 0..n {
        a[(i, n + i)] = 1.0;
        for j in 0..n {
            a[(n + i, j)] = -mk[(i, j)];
            a[(n + i, n + j)] = -mc[(i, j)];
        }
    }
    let mut z0 = DVector::zeros(2 * n);
    for (i, d) in lin.dofs.iter().enumerate() {
        let (u0, v0) = model.initial(d);
        z0[i] = u0;
        z0[n + i] = v0;
    }
    let z = (a * t).exp() * z0;
    Ok(lin.dofs.iter().cloned().zip(z.iter().copied()).collect())
}

fn exact_available(model: &Model, linear: bool) -> bool {
    linear
        && model.loads.is_empty()
        && model.ground_motions.is_empty()
        && super::imposed_motions_at_rest(model)
        && model.elements.iter().all(|e| e.element.n_states() == 0)
}

/// Run a convergence study of the model's configured scheme.
pub fn convergence(
    model: &Model,
    opts: &ConvergenceOptions,
) -> Result<ConvergenceReport, AnalysisError> {
    if opts.time_steps.len() < 2 {
        return Err(AnalysisError::input(
            model,
            "steps",
            "a convergence study needs at least two time steps",
        ));
    }
    if opts
        .time_steps
        .iter()
        .any(|dt| !(dt.is_finite() && *dt > 0.0))
    {
        return Err(AnalysisError::input(
            model,
            "time_step",
            "every time step must be positive and finite",
        ));
    }
    if !(opts.until.is_finite() && opts.until > 0.0) {
        return Err(AnalysisError::input(
            model,
            "until",
            format!("must be a positive time, found {}", opts.until),
        ));
    }
    let linear = is_linear(model)?;
    let use_exact = match opts.reference {
        Reference::Exact => {
            if !exact_available(model, linear) {
                return Err(AnalysisError::input(
                    model,
                    "reference",
                    "the exact reference needs a linear model in free vibration (no load, no \
                     ground motion, no moving imposed motion, no element with extra states); use \
                     the fine reference",
                ));
            }
            true
        }
        Reference::Fine => false,
        Reference::Auto => exact_available(model, linear),
    };
    let (reference, ref_label) = if use_exact {
        (
            exact_solution(&free_vibration(model), opts.until)?,
            "exact (matrix exponential of the linearized coupled model)".to_string(),
        )
    } else {
        let dt_min = opts
            .time_steps
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let dt_ref = dt_min / opts.fine_factor.max(1) as f64;
        let mut m = model.clone();
        if model.imposed_motions.is_empty() {
            m.analysis.integrator = IntegratorKind::MgAlpha;
            m.analysis.rho_inf = 1.0;
            m.analysis.corrections = if linear { 1 } else { 3 };
            (
                run_to(&m, dt_ref, opts.until)?,
                format!(
                    "monolithic trapezoidal rule (MG-α, ρ∞ = 1, {} correction(s)) with Δt = {dt_ref:e}",
                    m.analysis.corrections
                ),
            )
        } else {
            // Imposed motions are prescribed by the LLM scheme only (massless supports make the
            // monolithic D singular): the reference is the scheme itself at the fine step
            // (self-convergence).
            if !linear {
                m.analysis.corrections = m.analysis.corrections.max(3);
            }
            (
                run_to(&m, dt_ref, opts.until)?,
                format!(
                    "the same scheme at Δt = {dt_ref:e} (self-convergence: the imposed motions \
                     need a scheme that prescribes them)"
                ),
            )
        }
    };
    let scale = reference.iter().fold(0.0f64, |m, (_, u)| m.max(u.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return Err(AnalysisError::input(
            model,
            "until",
            format!(
                "the reference displacements at t = {} are {}: nothing to measure the error \
                 against (give an initial displacement or velocity, a load or a ground motion \
                 that acts before then, or a later --until)",
                opts.until,
                if scale == 0.0 {
                    "all zero"
                } else {
                    "not finite"
                }
            ),
        ));
    }
    let mut errors = Vec::new();
    let mut scheme = String::new();
    for dt in &opts.time_steps {
        let got = run_to(model, *dt, opts.until)?;
        let mut e: f64 = 0.0;
        for (d, u) in &got {
            let Some((_, r)) = reference.iter().find(|(rd, _)| rd == d) else {
                continue;
            };
            e = e.max((u - r).abs());
        }
        errors.push((*dt, e));
        if scheme.is_empty() {
            let mut m = super::numerical_twin(model);
            m.analysis.time_step = *dt;
            scheme = integrators::build(&m)?.name().to_string();
        }
    }
    let slopes = errors
        .windows(2)
        .map(|w| (w[0].1 / w[1].1).ln() / (w[0].0 / w[1].0).ln())
        .collect();
    let fitted = fitted_slope(
        &errors.iter().map(|e| e.0).collect::<Vec<_>>(),
        &errors.iter().map(|e| e.1).collect::<Vec<_>>(),
    );
    let a = &model.analysis;
    // `nonlinear_tolerance` is `Some` for the converged solve (the default), `None` for a
    // fixed number of corrections.
    let converged = a.nonlinear_tolerance.is_some();
    let single_correction = match a.integrator {
        IntegratorKind::PgAlpha => {
            // The physical partition is never corrected (a specimen cannot be reverted).
            model.substructures.iter().any(|s| s.physical) || (!converged && a.corrections <= 1)
        }
        IntegratorKind::MgAlpha => !converged && a.corrections <= 1,
        _ => false,
    };
    let (expected, label) = if linear {
        (
            Some(2.0),
            "second order expected on a linear model (Abbiati et al. 2019, Figs 1 and 6)"
                .to_string(),
        )
    } else if single_correction {
        (
            Some(1.0),
            "slope ≈ 1 expected: one linearized correction with constant D on a nonlinear \
             (hysteretic) model is first order (ALGORITHMS.md E38)"
                .to_string(),
        )
    } else if converged
        && matches!(
            a.integrator,
            IntegratorKind::MgAlpha | IntegratorKind::PgAlpha
        )
    {
        (
            Some(2.0),
            "second order expected: the nonlinear numerical partitions are solved to \
             convergence (analysis.nonlinear_solver = \"converged\")"
                .into(),
        )
    } else if matches!(a.integrator, IntegratorKind::MgAlpha) {
        (
            Some(2.0),
            "second order expected: extra fixed-D corrections on a nonlinear model (E38)".into(),
        )
    } else {
        (
            None,
            "no order predicted for this scheme on a nonlinear model".into(),
        )
    };
    Ok(ConvergenceReport {
        scheme,
        until: opts.until,
        reference: ref_label,
        errors,
        reference_scale: scale,
        slopes,
        fitted_slope: fitted,
        linear,
        expected_order: expected,
        label,
    })
}
