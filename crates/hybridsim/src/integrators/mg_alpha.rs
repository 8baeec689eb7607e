//! Monolithic generalized-α (MG-α), Abbiati et al. (2019), §2.1.

use super::{
    check_finite, AlphaParameters, AlphaState, AlphaStepper, StepClock, StepSettings,
    TimeIntegrator,
};
use crate::assembly::Partition;
use crate::integrators::StepError;
use nalgebra::DVector;

/// Monolithic generalized-α on one partition (the assembled model): one linearized
/// correction per step with `D` built from the zero-state Jacobian
/// (Abbiati et al. 2019, eqs 11–14), started with `Ẏ_0 = M⁻¹(F_0 − R(Y_0))` and `V_0 = Ẏ_0` (A1).
///
/// A linear numerical model stepped by one solve a step ([`AlphaStepper::steps_in_place`])
/// is stepped in place, in its one state (issue 20: memory a DOF, `3 · 2N` values fewer): a
/// failed step of such a model (a non-finite value, which ends the run) leaves the state
/// part-written. Every other model (nonlinear elements, corrections, a physical partition)
/// steps into a second state, swapped in only when the step succeeded: a failed step leaves
/// the state as it was.
pub struct MgAlpha {
    parts: [Partition; 1],
    stepper: AlphaStepper,
    state: AlphaState,
    /// The end state of a step into a second state; empty (0 rows) when the steps run in
    /// place.
    next: AlphaState,
    clock: StepClock,
}

impl MgAlpha {
    /// Build with `settings` (ρ∞, Δt, corrections, `t0`) and start at `t0` from the
    /// partition's initial state.
    pub fn new(mut part: Partition, settings: &StepSettings) -> Result<Self, String> {
        let (dt, t0) = (settings.time_step, settings.t0);
        let params = AlphaParameters::new(settings.rho_inf);
        let mut stepper =
            AlphaStepper::new_freeing_j0(&mut part, params, dt, settings.corrections)?
                .with_convergence(
                    settings.nonlinear_tolerance,
                    settings.nonlinear_max_iterations,
                )
                .with_newton(&part, settings.nonlinear_newton)
                .with_threads(&part, settings.threads)?;
        // The folded steps never read `B` of `D`'s factors: freed until a parameter change
        // (`set_element_parameter` builds it again first).
        stepper.release_coupling(&part);
        // Nothing the steps do reads `J0` (the factors hold `D`): freed once `D` was formed
        // (and again if the factorization on two cores formed it once more) until something
        // asks for it (a parameter change, a refactorization, `j0`), which forms it again from
        // the elements, the same bits (issue 20: memory a DOF).
        part.state.release_j0();
        let size = part.state.size();
        let mut state = AlphaState::zeros(size);
        state.y.copy_from(&part.state.y0);
        // `F_0 − R(Y_0)` with `R` written in `Ẏ` for a moment (one vector besides the state).
        let mut f = DVector::zeros(size);
        part.state.load(t0, f.as_mut_slice());
        part.residual_at_rest(t0, state.y.as_slice(), state.ydot.as_mut_slice())
            .map_err(|e| e.to_string())?;
        f -= &state.ydot;
        state.start(&part.state, &f)?;
        drop(f);
        let next = if stepper.steps_in_place(&part) {
            AlphaState::zeros(0)
        } else {
            state.clone()
        };
        Ok(Self {
            parts: [part],
            stepper,
            next,
            state,
            clock: StepClock::new(t0, dt),
        })
    }

    /// Whether the steps run in place, in the one state (see [`MgAlpha`]): a failed step then
    /// leaves the state part-written.
    pub fn steps_in_place(&self) -> bool {
        self.next.y.is_empty() && !self.state.y.is_empty()
    }

    /// The heap bytes of the algorithmic states and of the stepper's workspaces (issue 20:
    /// memory a DOF): `Y`, `Ẏ`, `V` of the state, of the second state when the steps do not
    /// run in place, and the stepper's vectors ([`AlphaStepper::workspace_bytes`]); not the
    /// partition nor the factors of `D`.
    pub fn memory_bytes(&self) -> usize {
        let state = |s: &AlphaState| 8 * (s.y.len() + s.ydot.len() + s.v.len());
        state(&self.state) + state(&self.next) + self.stepper.workspace_bytes()
    }

    /// The generalized-α parameters.
    pub fn parameters(&self) -> AlphaParameters {
        self.stepper.params
    }

    /// The stepper (its converged solve's record: [`AlphaStepper::last_corrections`]).
    pub fn stepper(&self) -> &AlphaStepper {
        &self.stepper
    }

    /// [`AlphaStepper::solve_on_one_thread`] (tests).
    #[doc(hidden)]
    pub fn solve_on_one_thread(&mut self) {
        self.stepper.solve_on_one_thread();
    }

    /// Step into a second state from now on, as a model that cannot step in place does (tests:
    /// the in-place step against it). Allocates.
    #[doc(hidden)]
    pub fn keep_second_state(&mut self) {
        self.next = self.state.clone();
    }

    /// The current algorithmic state.
    pub fn alpha_state(&self) -> &AlphaState {
        &self.state
    }
}

impl TimeIntegrator for MgAlpha {
    fn name(&self) -> &'static str {
        "mg-alpha"
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
        let t_next = self.time() + self.clock.dt();
        let in_place = self.steps_in_place();
        let [part] = &mut self.parts;
        if in_place {
            // A failure leaves the state part-written (see `MgAlpha`): it ends the run.
            self.stepper
                .step_in_place(part, &mut self.state, t_next)
                .map_err(|e| StepError::from_port(&part.state.name, e))?;
        } else {
            self.stepper
                .step(part, &self.state, t_next, None, &mut self.next)
                .map_err(|e| StepError::from_port(&part.state.name, e))?;
        }
        let end = if in_place { &self.state } else { &self.next };
        check_finite(end.y.as_slice(), "state", t_next, self.clock.steps() + 1)?;
        if !in_place {
            std::mem::swap(&mut self.state, &mut self.next);
        }
        self.clock.advance();
        Ok(())
    }
    fn partitions(&self) -> &[Partition] {
        &self.parts
    }
    fn set_element_parameter(
        &mut self,
        partition: usize,
        element: usize,
        parameter: &str,
        value: f64,
    ) -> Result<(), String> {
        // The plan the steps fold may change: `B` back first, from the elements as factored.
        if partition == 0 {
            self.stepper.restore_coupling(&self.parts[0].state);
        }
        super::set_parameter_in(&mut self.parts, partition, element, parameter, value)
    }

    fn refactorizer(
        &self,
        partition: usize,
        receivers: &[usize],
        parameters: &[&'static str],
    ) -> Result<super::Refactorizer, String> {
        if partition != 0 {
            return Err(format!("no partition {partition}"));
        }
        super::Refactorizer::new(
            self.parts[0].state.clone(),
            0,
            receivers,
            parameters,
            self.stepper.params,
            self.stepper.dt,
            None,
        )
    }

    fn swap_operators(&mut self, operators: &mut super::Operators) -> Result<(), &'static str> {
        if operators.link.is_some() {
            return Err("these operators are pg-alpha's");
        }
        self.stepper.swap_factorization(&mut operators.d);
        Ok(())
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
        self.state.y.as_slice()
    }
    fn rate(&self, _p: usize) -> &[f64] {
        self.state.ydot.as_slice()
    }
    fn energy_source(&self, _p: usize) -> super::EnergySource {
        super::EnergySource::PartitionState
    }
    fn energy(&mut self, _p: usize) -> Option<f64> {
        let Self { parts, state, .. } = self;
        parts[0].energy(state.y.as_slice())
    }
    fn state_len(&self) -> usize {
        self.state.flat_len()
    }
    fn export_state(&self, out: &mut [f64]) {
        self.state.export(out)
    }
    fn import_state(&mut self, x: &[f64]) {
        self.state.import(x)
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
    fn nonlinear_solve(&self) -> Option<super::NonlinearSolveReport> {
        self.stepper.nonlinear_report()
    }
    fn solve_parts(&self) -> Option<(usize, usize, usize)> {
        self.stepper
            .factorization()
            .parts()
            .filter(|(_, worker)| *worker)
            .map(|(sizes, _)| sizes)
    }
}
