//! Monolithic LSRT2: the two-stage linearly implicit L-stable Rosenbrock method of
//! Bursi et al. (2011), §2.

use super::{check_finite, StepClock, StepSettings, TimeIntegrator};
use crate::assembly::Partition;
use crate::integrators::StepError;
use nalgebra::{DVector, Dyn, LU};

/// LSRT2 (Bursi et al. 2011, eqs 1–4; ALGORITHMS.md A3) on `ẏ = f(y, t) = M⁻¹(F(t) − R(y))` with
/// the constant Jacobian `J = −M⁻¹ J0`, `W = I − γΔt J`:
///
/// `k1 = W⁻¹ f(y_k, t_k) Δt`, `k2 = W⁻¹ (f(y_k + k1/2, t_k + Δt/2) − γ J k1) Δt`,
/// `y_{k+1} = y_k + k2`.
///
/// Multiplying by `M`, `W⁻¹M⁻¹ = D⁻¹` with `D = M + γΔt J0` (factorized once), so
/// `k1 = Δt D⁻¹(F_k − R(y_k))` and `k2 = Δt D⁻¹(F_{k+½} − R(y_k + k1/2) + γ J0 k1)`.
/// `γ = 1 ∓ √2/2` makes the method L-stable: `R(∞) = 0`.
pub struct Lsrt2 {
    parts: [Partition; 1],
    gamma: f64,
    d_lu: LU<f64, Dyn, Dyn>,
    m_lu: LU<f64, Dyn, Dyn>,
    y: DVector<f64>,
    ydot: DVector<f64>,
    k1: DVector<f64>,
    k2: DVector<f64>,
    stage: DVector<f64>,
    load: DVector<f64>,
    res: DVector<f64>,
    clock: StepClock,
}

impl Lsrt2 {
    /// Build with `settings` (its `lsrt2_gamma`, Δt and `t0`), starting at `t0`.
    ///
    /// A physical partition is refused: the two stages evaluate the restoring force at
    /// `t_k` and `t_k + Δt/2` from two different states, which a specimen cannot provide
    /// once per controller tick (the partitioned LSRT2 is the scheme for that).
    pub fn new(mut part: Partition, settings: &StepSettings) -> Result<Self, String> {
        let (gamma, dt, t0) = (settings.lsrt2_gamma, settings.time_step, settings.t0);
        if part.physical.is_some() {
            return Err(format!(
                "lsrt2 evaluates the restoring force twice per step (stages at t and t + Δt/2); \
                 substructure `{}` is physical and can be commanded once per tick only",
                part.state.name
            ));
        }
        let size = part.state.size();
        let y = part.state.y0.clone();
        let mut r = DVector::zeros(size);
        part.residual_at_rest(t0, y.as_slice(), r.as_mut_slice())
            .map_err(|e| e.to_string())?;
        let d = part.state.big_mass() + part.state.j0() * (gamma * dt);
        let d_lu = d.lu();
        if !d_lu.is_invertible() {
            return Err("LSRT2: D = M + γΔt·J0 is singular".into());
        }
        let m_lu = part.state.big_mass().lu();
        let mut s = Self {
            parts: [part],
            gamma,
            d_lu,
            m_lu,
            ydot: DVector::zeros(size),
            k1: DVector::zeros(size),
            k2: DVector::zeros(size),
            stage: DVector::zeros(size),
            load: DVector::zeros(size),
            res: DVector::zeros(size),
            y,
            clock: StepClock::new(t0, dt),
        };
        s.update_rate(t0);
        Ok(s)
    }

    /// Rate `Ẏ = M⁻¹(F − R)` at the current state.
    fn update_rate(&mut self, t: f64) {
        let part = &mut self.parts[0];
        part.state.load(t, self.load.as_mut_slice());
        part.residual(self.y.as_slice(), self.res.as_mut_slice());
        self.ydot.copy_from(&self.load);
        self.ydot -= &self.res;
        self.m_lu.solve_mut(&mut self.ydot);
    }
}

impl TimeIntegrator for Lsrt2 {
    fn name(&self) -> &'static str {
        "lsrt2"
    }
    fn time(&self) -> f64 {
        self.clock.time()
    }
    fn steps_taken(&self) -> u64 {
        self.clock.steps()
    }
    fn time_step(&self) -> f64 {
        self.clock.dt()
    }
    fn step(&mut self) -> Result<(), StepError> {
        let t = self.time();
        let dt = self.clock.dt();
        {
            let part = &mut self.parts[0];
            // Stage 1.
            part.state.load(t, self.load.as_mut_slice());
            part.residual(self.y.as_slice(), self.res.as_mut_slice());
            self.k1.copy_from(&self.load);
            self.k1 -= &self.res;
            self.d_lu.solve_mut(&mut self.k1);
            self.k1 *= dt;
            // Stage 2.
            self.stage.copy_from(&self.y);
            self.stage.axpy(0.5, &self.k1, 1.0);
            part.state.load(t + 0.5 * dt, self.load.as_mut_slice());
            part.residual(self.stage.as_slice(), self.res.as_mut_slice());
            self.k2.copy_from(&self.load);
            self.k2 -= &self.res;
            self.k2.gemv(self.gamma, part.state.j0(), &self.k1, 1.0);
            self.d_lu.solve_mut(&mut self.k2);
            self.k2 *= dt;
        }
        self.y += &self.k2;
        self.clock.advance();
        let t1 = self.time();
        check_finite(self.y.as_slice(), "state", t1, self.clock.steps())?;
        self.update_rate(t1);
        Ok(())
    }
    fn partitions(&self) -> &[Partition] {
        &self.parts
    }
    fn set_external_load(
        &mut self,
        partition: usize,
        dof: usize,
        value: f64,
    ) -> Result<(), String> {
        super::set_external_load_in(&mut self.parts, partition, dof, value)
    }
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn crate::physical::LabControl)) {
        super::labs_of(&mut self.parts, f)
    }
    fn state(&self, _p: usize) -> &[f64] {
        self.y.as_slice()
    }
    fn rate(&self, _p: usize) -> &[f64] {
        self.ydot.as_slice()
    }
    fn energy_source(&self, _p: usize) -> super::EnergySource {
        super::EnergySource::PartitionState
    }
    fn energy(&mut self, _p: usize) -> Option<f64> {
        let Self { parts, y, .. } = self;
        parts[0].energy(y.as_slice())
    }
    fn state_len(&self) -> usize {
        self.y.len()
    }
    fn export_state(&self, out: &mut [f64]) {
        out.copy_from_slice(self.y.as_slice());
    }
    fn import_state(&mut self, x: &[f64]) {
        self.y.copy_from_slice(x);
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
}
