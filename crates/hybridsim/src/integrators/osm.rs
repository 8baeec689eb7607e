//! Operator splitting (`[analysis] integrator = "osm"`): the predictor–corrector of Nakashima
//! et al. (1990) with the initial stiffness `K_I`, and for ρ∞ < 1 the α-OS form of Combescure
//! and Pegon (1997), for `M a + C v + r = f` with the measured restoring force `r`.
//!
//! # Equations
//!
//! HHT's α = (ρ∞ − 1)/(ρ∞ + 1) ∈ [−1/3, 0], β = (1 − α)²/4, γ = (1 − 2α)/2 (α = 0: Newmark's
//! average acceleration rule). Step `n → n + 1`:
//!
//! 1. **Predictor** (explicit): `d̃ = d_n + Δt v_n + Δt²(1/2 − β) a_n`,
//!    `ṽ = v_n + Δt(1 − γ) a_n`; command `d̃` (and `ṽ`) once, measure `r̃_{n+1}`.
//! 2. **Corrector** with `r_{n+1} ≈ r̃_{n+1} + K_I (d_{n+1} − d̃)`:
//!    `[M + (1+α)γΔt C + (1+α)βΔt² K_I] a_{n+1} = (1+α) f_{n+1} − α f_n − (1+α)(C ṽ + r̃_{n+1})
//!    + α (C v_n + r_n)`, `d_{n+1} = d̃ + βΔt² a_{n+1}`, `v_{n+1} = ṽ + γΔt a_{n+1}`,
//!    `r_{n+1} = r̃_{n+1} + βΔt² K_I a_{n+1}` (ALGORITHMS.md A9, E37).
//!
//! With `i_modification = true` the measured force is first corrected for the displacement
//! control error, `r̃ ← r̃ − K_I (d̃^m − d̃)` (the I-modification of Nakashima et al. 1990), where
//! a port reports the measured displacement `d̃^m` ([`crate::physical::PhysicalSubstructure::measured_displacement`]).
//!
//! Unconditionally stable for linear systems and softening specimens (`K_I` ≥ the tangent);
//! second order on linear models for α = 0 and when `K_I` is exact; with a wrong `K_I` the
//! corrector's linearization error makes it first order.

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::second_order::{
    export_vectors, import_vectors, mat_vec, newmark_corrector, newmark_predictor, SecondOrder,
    Start,
};
use super::{check_finite, StepClock, StepError, TimeIntegrator};
use crate::assembly::Partition;
use crate::error::ModelError;
use crate::model::Model;
use nalgebra::{DMatrix, DVector};

/// Operator splitting / α-OS (module docs).
pub struct Osm {
    sys: SecondOrder,
    alpha: f64,
    beta: f64,
    gamma: f64,
    i_modification: bool,
    dt: f64,
    clock: StepClock,
    d: DVector<f64>,
    v: DVector<f64>,
    a: DVector<f64>,
    r: DVector<f64>,
    /// `[M + (1+α)γΔt C + (1+α)βΔt² K_I]⁻¹`.
    inverse: DMatrix<f64>,
    f0: DVector<f64>,
    f1: DVector<f64>,
    d_tilde: DVector<f64>,
    v_tilde: DVector<f64>,
    r_tilde: DVector<f64>,
    rhs: DVector<f64>,
    tmp: DVector<f64>,
    error: DVector<f64>,
}

impl Osm {
    /// Build for `model` (network laboratories connected by `connector`), measure at rest
    /// and start from `a_0 = M⁻¹(f_0 − C v_0 − r_0)`.
    pub fn new(
        model: &Model,
        connector: Option<&dyn crate::physical::transfer::TransferConnector>,
    ) -> Result<Self, ModelError> {
        let sys = SecondOrder::new(model, connector, "osm")?;
        Self::from_system(model, sys)
            .map_err(|e| ModelError::single(&model.source, "analysis", format!("osm: {e}")))
    }

    fn from_system(model: &Model, mut sys: SecondOrder) -> Result<Self, String> {
        let n = sys.n_dofs();
        let dt = model.analysis.time_step;
        let rho = model.analysis.rho_inf;
        let alpha = (rho - 1.0) / (rho + 1.0);
        let beta = (1.0 - alpha).powi(2) / 4.0;
        let gamma = (1.0 - 2.0 * alpha) / 2.0;
        let a_eff = &sys.mass
            + &sys.damping * ((1.0 + alpha) * gamma * dt)
            + &sys.initial_stiffness * ((1.0 + alpha) * beta * dt * dt);
        let inverse = a_eff
            .try_inverse()
            .ok_or("M + (1+α)γΔt C + (1+α)βΔt² K_I is singular")?;
        let t0 = 0.0;
        let Start { d, v, a, r, f: f0 } = sys.start(t0)?;
        let z = || DVector::zeros(n);
        Ok(Self {
            alpha,
            beta,
            gamma,
            i_modification: model.analysis.estimator.i_modification,
            dt,
            clock: StepClock::new(t0, dt),
            d,
            v,
            a,
            r,
            inverse,
            f0,
            f1: z(),
            d_tilde: z(),
            v_tilde: z(),
            r_tilde: z(),
            rhs: z(),
            tmp: z(),
            error: z(),
            sys,
        })
    }

    /// HHT's α of the scheme (0 for OSM).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl TimeIntegrator for Osm {
    fn name(&self) -> &'static str {
        "osm"
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
        let (dt, alpha, beta, gamma) = (self.dt, self.alpha, self.beta, self.gamma);
        let t0 = self.clock.time();
        let t1 = {
            let mut c = self.clock;
            c.advance();
            c.time()
        };
        self.sys.external(t0, self.f0.as_mut_slice());
        self.sys.external(t1, self.f1.as_mut_slice());
        newmark_predictor(
            self.d.as_slice(),
            self.v.as_slice(),
            self.a.as_slice(),
            dt,
            beta,
            gamma,
            self.d_tilde.as_mut_slice(),
            self.v_tilde.as_mut_slice(),
        );
        check_finite(
            self.d_tilde.as_slice(),
            "osm predictor",
            t1,
            self.clock.steps() + 1,
        )?;
        self.sys.command(
            t1,
            self.d_tilde.as_slice(),
            self.v_tilde.as_slice(),
            self.r_tilde.as_mut_slice(),
        )?;
        if self.i_modification
            && self
                .sys
                .measured_error(self.d_tilde.as_slice(), self.error.as_mut_slice())
        {
            mat_vec(
                &self.sys.initial_stiffness,
                self.error.as_slice(),
                self.tmp.as_mut_slice(),
            );
            for i in 0..n {
                self.r_tilde[i] -= self.tmp[i];
            }
        }
        // rhs = (1+α) f1 − α f0 − (1+α)(C ṽ + r̃) + α (C v_n + r_n)
        mat_vec(
            &self.sys.damping,
            self.v_tilde.as_slice(),
            self.tmp.as_mut_slice(),
        );
        for i in 0..n {
            self.rhs[i] = (1.0 + alpha) * (self.f1[i] - self.tmp[i] - self.r_tilde[i])
                - alpha * (self.f0[i] - self.r[i]);
        }
        if alpha != 0.0 {
            mat_vec(
                &self.sys.damping,
                self.v.as_slice(),
                self.tmp.as_mut_slice(),
            );
            for i in 0..n {
                self.rhs[i] += alpha * self.tmp[i];
            }
        }
        mat_vec(&self.inverse, self.rhs.as_slice(), self.a.as_mut_slice());
        newmark_corrector(
            self.d_tilde.as_slice(),
            self.v_tilde.as_slice(),
            self.a.as_slice(),
            dt,
            beta,
            gamma,
            self.d.as_mut_slice(),
            self.v.as_mut_slice(),
        );
        for i in 0..n {
            self.tmp[i] = beta * dt * dt * self.a[i];
        }
        mat_vec(
            &self.sys.initial_stiffness,
            self.tmp.as_slice(),
            self.r.as_mut_slice(),
        );
        for i in 0..n {
            self.r[i] += self.r_tilde[i];
        }
        self.clock.advance();
        self.sys.finish_step(
            self.d.as_slice(),
            self.v.as_slice(),
            self.a.as_slice(),
            "osm state",
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
        4 * self.sys.n_dofs()
    }
    fn export_state(&self, out: &mut [f64]) {
        export_vectors(&[&self.d, &self.v, &self.a, &self.r], out);
    }
    fn import_state(&mut self, x: &[f64]) {
        import_vectors(&mut [&mut self.d, &mut self.v, &mut self.a, &mut self.r], x);
        self.sys.store(self.d.as_slice(), self.v.as_slice());
        self.sys.store_acceleration(self.a.as_slice());
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
}
