//! The full-operator method (`[analysis] integrator = "fom"`): the predictor–corrector of
//! Hung and El-Tawil (2009, eqs 5–12) for `M a + C v + r = f`, `r` the measured restoring
//! force, with an estimated tangent stiffness `K̂` updated online ([`super::tangent`]).
//!
//! # Equations
//!
//! Newmark's average acceleration rule (β = 1/4, γ = 1/2) with the explicit parts
//! `d̃ = d_n + Δt v_n + Δt²(1/2 − β) a_n`, `ṽ = v_n + Δt(1 − γ) a_n`. Step `n → n + 1`:
//!
//! 1. **Predictor** (eqs 5–8): the restoring force is linearized about the last predictor
//!    displacement `d̂_n`, where `r_n` was measured, `r(d̂_{n+1}) ≈ r_n + K̂ (d̂_{n+1} − d̂_n)`
//!    (ALGORITHMS.md E36; `linearize = "corrected"` uses `d_n` as eq 7 is printed), so
//!    `M̂ â = f_{n+1} − C ṽ − r_n − K̂ (d̃ − d̂_n)`, `M̂ = M + γΔt C + βΔt² K̂`, and
//!    `d̂_{n+1} = d̃ + βΔt² â`, `v̂_{n+1} = ṽ + γΔt â` (eq 6).
//! 2. **Command** `d̂_{n+1}` and `v̂_{n+1}` once through every physical port and measure
//!    `r_{n+1}` (the numerical elements are evaluated there too, eq 11: `r_{n+1} := r̂_{n+1}`).
//! 3. **Corrector** (eq 12): `M' a_{n+1} = f_{n+1} − C ṽ − r_{n+1}`, `M' = M + γΔt C`,
//!    `d_{n+1} = d̃ + βΔt² a_{n+1}`, `v_{n+1} = ṽ + γΔt a_{n+1}` (eq 2). With
//!    `corrector = false` the predictor is kept (`a = â`, `d = d̂`, `v = v̂`).
//! 4. **Update** `K̂` from `s = d̂_{n+1} − d̂_n` and `y = r_{n+1} − r_n` (eqs 13–17) under
//!    the reset and threshold rules.
//!
//! # Accuracy and stability
//!
//! With the exact tangent the predictor is the implicit Newmark step and the corrector
//! reproduces it: second order on linear models. The corrector uses only the measured force,
//! which shields it from a wrong `K̂`; the scheme is nevertheless not unconditionally
//! stable when `K̂` overestimates the stiffness (ALGORITHMS.md E39: ρ = 1.000109 at Ω = 0.1
//! with `K̂ = 10 K`); `hybridsim analyze spectral --estimate-ratio` gives ρ(Ω).

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::second_order::{
    export_vectors, import_vectors, mat_vec, newmark_corrector, newmark_predictor, solve_in_place,
    SecondOrder, Start,
};
use super::tangent::{rule, TangentEstimator};
use super::{check_finite, StepClock, StepError, TimeIntegrator};
use crate::assembly::Partition;
use crate::error::ModelError;
use crate::model::fom::{EstimatorSettings, Linearization};
use crate::model::Model;
use nalgebra::{DMatrix, DVector};

/// Newmark β of the scheme.
pub const BETA: f64 = 0.25;
/// Newmark γ of the scheme.
pub const GAMMA: f64 = 0.5;

/// The full-operator method (module docs).
pub struct Fom {
    sys: SecondOrder,
    estimator: TangentEstimator,
    settings: EstimatorSettings,
    /// Set by [`TimeIntegrator::import_state`]: the analyses step imported states, whose
    /// increments say nothing about the structure, so the estimate stays as it is.
    frozen: bool,
    dt: f64,
    clock: StepClock,
    d: DVector<f64>,
    v: DVector<f64>,
    a: DVector<f64>,
    r: DVector<f64>,
    d_hat: DVector<f64>,
    /// `M'⁻¹`, constant.
    corrector_inverse: DMatrix<f64>,
    // Scratch.
    m_hat: DMatrix<f64>,
    f: DVector<f64>,
    d_tilde: DVector<f64>,
    v_tilde: DVector<f64>,
    rhs: DVector<f64>,
    tmp: DVector<f64>,
    r_new: DVector<f64>,
    d_hat_new: DVector<f64>,
    v_hat: DVector<f64>,
    s: DVector<f64>,
    y: DVector<f64>,
}

impl Fom {
    /// Build for `model` (network laboratories connected by `connector`), measure at rest
    /// and start from `a_0 = M⁻¹(f_0 − C v_0 − r_0)`.
    pub fn new(
        model: &Model,
        connector: Option<&dyn crate::physical::transfer::TransferConnector>,
    ) -> Result<Self, ModelError> {
        let sys = SecondOrder::new(model, connector, "fom")?;
        let settings = model.analysis.estimator;
        let threshold = settings.threshold.unwrap_or(sys.default_threshold());
        let estimator = TangentEstimator::new(
            sys.initial_stiffness.clone(),
            rule(settings.update),
            threshold,
            settings.reset_at_reversal,
        );
        Self::from_parts(model, sys, estimator, settings, 0.0)
            .map_err(|e| ModelError::single(&model.source, "analysis", format!("fom: {e}")))
    }

    fn from_parts(
        model: &Model,
        mut sys: SecondOrder,
        estimator: TangentEstimator,
        settings: EstimatorSettings,
        t0: f64,
    ) -> Result<Self, String> {
        let n = sys.n_dofs();
        let dt = model.analysis.time_step;
        let mut m_prime = &sys.mass + &sys.damping * (GAMMA * dt);
        let corrector_inverse = std::mem::replace(&mut m_prime, DMatrix::zeros(0, 0))
            .try_inverse()
            .ok_or("M + γΔt C is singular")?;
        let Start { d, v, a, r, f } = sys.start(t0)?;
        let z = || DVector::zeros(n);
        Ok(Self {
            estimator,
            settings,
            frozen: false,
            dt,
            clock: StepClock::new(t0, dt),
            d_hat: d.clone(),
            d,
            v,
            a,
            r,
            corrector_inverse,
            m_hat: DMatrix::zeros(n, n),
            f,
            d_tilde: z(),
            v_tilde: z(),
            rhs: z(),
            tmp: z(),
            r_new: z(),
            d_hat_new: z(),
            v_hat: z(),
            s: z(),
            y: z(),
            sys,
        })
    }

    /// The current estimate `K̂`.
    pub fn estimate(&self) -> &DMatrix<f64> {
        self.estimator.stiffness()
    }

    /// The tangent estimator (counts, threshold, rule).
    pub fn estimator(&self) -> &TangentEstimator {
        &self.estimator
    }

    /// The last predictor displacement `d̂_n` (what the specimens were commanded to).
    pub fn predictor_displacement(&self) -> &[f64] {
        self.d_hat.as_slice()
    }

    /// The restoring force `r_n` measured at `d̂_n`.
    pub fn restoring_force(&self) -> &[f64] {
        self.r.as_slice()
    }

    /// Entries of `K̂` in the exported state: none. The exported state `[d; v; a; r; d̂]` is
    /// that of the step with the current estimate frozen (the step is bilinear in `K̂` and the
    /// displacements, so a state holding `K̂` would not be linear): the amplification matrix
    /// of `hybridsim analyze spectral` is that of FOM at the current `K̂`, which an import
    /// freezes.
    fn estimate_len(&self) -> usize {
        0
    }
}

impl TimeIntegrator for Fom {
    fn name(&self) -> &'static str {
        "fom"
    }
    fn time(&self) -> f64 {
        self.clock.time()
    }
    fn steps_taken(&self) -> u64 {
        self.clock.steps()
    }
    fn time_step(&self) -> f64 {
        self.dt
    }
    fn step(&mut self) -> Result<(), StepError> {
        let n = self.sys.n_dofs();
        let dt = self.dt;
        let t1 = {
            let mut c = self.clock;
            c.advance();
            c.time()
        };
        self.sys.external(t1, self.f.as_mut_slice());
        newmark_predictor(
            self.d.as_slice(),
            self.v.as_slice(),
            self.a.as_slice(),
            dt,
            BETA,
            GAMMA,
            self.d_tilde.as_mut_slice(),
            self.v_tilde.as_mut_slice(),
        );
        // Predictor (eq 8), linearized about d̂_n (or d_n).
        let base = match self.settings.linearization {
            Linearization::Predictor => &self.d_hat,
            Linearization::Corrected => &self.d,
        };
        for i in 0..n {
            self.tmp[i] = self.d_tilde[i] - base[i];
        }
        let k = self.estimator.stiffness();
        mat_vec(k, self.tmp.as_slice(), self.rhs.as_mut_slice());
        mat_vec(
            &self.sys.damping,
            self.v_tilde.as_slice(),
            self.tmp.as_mut_slice(),
        );
        for i in 0..n {
            self.rhs[i] = self.f[i] - self.tmp[i] - self.r[i] - self.rhs[i];
            for j in 0..n {
                self.m_hat[(i, j)] = self.sys.mass[(i, j)]
                    + GAMMA * dt * self.sys.damping[(i, j)]
                    + BETA * dt * dt * k[(i, j)];
            }
        }
        if !solve_in_place(&mut self.m_hat, self.rhs.as_mut_slice()) {
            return Err(StepError::NonFinite {
                what: "fom predictor (M + γΔt C + βΔt² K̂ is singular)",
                time: t1,
                step: self.clock.steps() + 1,
            });
        }
        for i in 0..n {
            self.d_hat_new[i] = self.d_tilde[i] + BETA * dt * dt * self.rhs[i];
            self.v_hat[i] = self.v_tilde[i] + GAMMA * dt * self.rhs[i];
        }
        check_finite(
            self.d_hat_new.as_slice(),
            "fom predictor",
            t1,
            self.clock.steps() + 1,
        )?;
        // Command once, measure r_{n+1} (eq 11).
        self.sys.command(
            t1,
            self.d_hat_new.as_slice(),
            self.v_hat.as_slice(),
            self.r_new.as_mut_slice(),
        )?;
        // Corrector (eq 12).
        if self.settings.corrector {
            mat_vec(
                &self.sys.damping,
                self.v_tilde.as_slice(),
                self.tmp.as_mut_slice(),
            );
            for i in 0..n {
                self.tmp[i] = self.f[i] - self.tmp[i] - self.r_new[i];
            }
            mat_vec(
                &self.corrector_inverse,
                self.tmp.as_slice(),
                self.a.as_mut_slice(),
            );
            newmark_corrector(
                self.d_tilde.as_slice(),
                self.v_tilde.as_slice(),
                self.a.as_slice(),
                dt,
                BETA,
                GAMMA,
                self.d.as_mut_slice(),
                self.v.as_mut_slice(),
            );
        } else {
            self.a.copy_from(&self.rhs);
            self.d.copy_from(&self.d_hat_new);
            self.v.copy_from(&self.v_hat);
        }
        // Tangent update from the measured increments.
        for i in 0..n {
            self.s[i] = self.d_hat_new[i] - self.d_hat[i];
            self.y[i] = self.r_new[i] - self.r[i];
        }
        if !self.frozen {
            self.estimator.observe(self.s.as_slice(), self.y.as_slice());
        }
        self.r.copy_from(&self.r_new);
        self.d_hat.copy_from(&self.d_hat_new);
        self.clock.advance();
        self.sys.finish_step(
            self.d.as_slice(),
            self.v.as_slice(),
            self.a.as_slice(),
            "fom state",
            t1,
            self.clock.steps(),
        )
    }
    fn partitions(&self) -> &[Partition] {
        self.sys.partitions()
    }
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn crate::physical::LabControl)) {
        super::labs_of(self.sys.partitions_mut(), f)
    }
    fn state(&self, p: usize) -> &[f64] {
        self.sys.state(p)
    }
    fn rate(&self, p: usize) -> &[f64] {
        self.sys.rate(p)
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        self.sys.energy(p)
    }
    fn state_len(&self) -> usize {
        5 * self.sys.n_dofs() + self.estimate_len()
    }
    fn export_state(&self, out: &mut [f64]) {
        let n = self.sys.n_dofs();
        export_vectors(&[&self.d, &self.v, &self.a, &self.r, &self.d_hat], out);
        let l = self.estimate_len();
        out[5 * n..5 * n + l].copy_from_slice(&self.estimator.stiffness().as_slice()[..l]);
    }
    fn import_state(&mut self, x: &[f64]) {
        let n = self.sys.n_dofs();
        import_vectors(
            &mut [
                &mut self.d,
                &mut self.v,
                &mut self.a,
                &mut self.r,
                &mut self.d_hat,
            ],
            x,
        );
        let l = self.estimate_len();
        if l > 0 {
            self.estimator.set_stiffness(&x[5 * n..5 * n + l]);
        }
        self.frozen = true;
        self.sys.store(self.d.as_slice(), self.v.as_slice());
        self.sys.store_acceleration(self.a.as_slice());
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
    fn extra_channels(&self) -> Vec<(String, crate::elements::Quantity, String)> {
        estimate_channels(&self.sys)
    }
    fn extra_values(&self, out: &mut [f64]) {
        estimate_values(&self.sys, self.estimator.stiffness(), out)
    }
}

/// Recorded entries of the estimate: the full matrix up to 6 DOFs, else its diagonal.
fn recorded_entries(n: usize) -> impl Iterator<Item = (usize, usize)> {
    let full = n <= 6;
    (0..n).flat_map(move |i| (0..n).filter(move |j| full || *j == i).map(move |j| (i, j)))
}

/// Channels `k_hat.NODE.DOF.NODE.DOF` of the estimated tangent stiffness.
pub(crate) fn estimate_channels(
    sys: &SecondOrder,
) -> Vec<(String, crate::elements::Quantity, String)> {
    let dofs = &sys.partitions()[0].state.dofs;
    recorded_entries(dofs.len())
        .map(|(i, j)| {
            (
                format!(
                    "k_hat.{}.{}.{}.{}",
                    dofs[i].node, dofs[i].dof, dofs[j].node, dofs[j].dof
                ),
                crate::elements::Quantity::Stiffness,
                dofs[i].dof.to_string(),
            )
        })
        .collect()
}

/// Values of [`estimate_channels`].
pub(crate) fn estimate_values(sys: &SecondOrder, k: &DMatrix<f64>, out: &mut [f64]) {
    for (o, (i, j)) in out.iter_mut().zip(recorded_entries(sys.n_dofs())) {
        *o = k[(i, j)];
    }
}
