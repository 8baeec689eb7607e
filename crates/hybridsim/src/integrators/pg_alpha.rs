//! Partitioned generalized-α (PG-α) with subcycling, Abbiati et al. (2019), §2.2
//! (Steps 1–15, eqs 23–38).

use super::{
    check_finite, AlphaParameters, AlphaState, AlphaStepper, StepClock, StepSettings,
    TimeIntegrator,
};
use crate::assembly::{ConstraintLevel, Interface, Partition};
use crate::integrators::StepError;
use crate::linalg::StateMatrixFactors;
use crate::model::{MultiplierPredictor, StartMode};
use nalgebra::{DMatrix, DVector};

/// Per-partition machinery of PG-α: its stepper, coupled and free states, and its link
/// operator `ℚ^X = [ℚ_Y; ℚ_Ẏ; ℚ_V]` (Abbiati et al. 2019, eqs 32–33, with E9's reading of eq 32a).
pub struct PartitionRun {
    /// Generalized-α stepper with `D^X` factorized once.
    pub stepper: AlphaStepper,
    /// Coupled state at `t_n`.
    pub coupled: AlphaState,
    /// Free state (after the free step / the last free substep).
    pub free: AlphaState,
    scratch: AlphaState,
    /// Link operator blocks, each `size × n_Λ`.
    pub q_y: DMatrix<f64>,
    /// `ℚ_Ẏ`.
    pub q_ydot: DMatrix<f64>,
    /// `ℚ_V`.
    pub q_v: DMatrix<f64>,
    /// Substeps per coarse step (1 for the numerical partition).
    pub substeps: usize,
    /// The share of the interface force its free solution carries.
    pub predictor: MultiplierPredictor,
    /// Whether the free step rebuilds `ℚ^X` with the current tangent of its end state
    /// (`analysis.link_tangent = "current"`; a nonlinear numerical partition only).
    pub current_link: bool,
}

impl PartitionRun {
    /// The run of a 0-size partition (a placeholder). Allocation-free.
    fn empty(params: AlphaParameters) -> Self {
        Self {
            stepper: AlphaStepper::empty(params),
            coupled: AlphaState::zeros(0),
            free: AlphaState::zeros(0),
            scratch: AlphaState::zeros(0),
            q_y: DMatrix::zeros(0, 0),
            q_ydot: DMatrix::zeros(0, 0),
            q_v: DMatrix::zeros(0, 0),
            substeps: 1,
            predictor: MultiplierPredictor::None,
            current_link: false,
        }
    }
}

/// Partitioned generalized-α.
///
/// Each coarse step Δt^N runs, as separately callable phases over preallocated workspaces:
/// 1. [`PgAlpha::free_numerical_step`]: the numerical partition's free step (Steps 4–6);
/// 2. [`PgAlpha::free_physical_substep`] for `j = 1..ss` of every physical partition
///    (Steps 7–11): from the coupled state at `t_n` for `j = 1`, from the free chain after
///    (E10), with `(1 − j/ss) L^P Λ_n` on the right-hand side (eq 30);
/// 3. [`PgAlpha::interface_solve`]: `Λ_{n+1} = −H⁻¹ Σ G^X Ẏ^{X,free}` (eq 37);
/// 4. [`PgAlpha::link_update`]: `𝕐^X = 𝕐^{X,free} + ℚ^X Λ_{n+1}` (Steps 13–14).
///
/// With [`MultiplierPredictor::Previous`] the free solutions carry `Λ_n` in full (the numerical
/// one at `t_{n+1}`, the physical one at every substep) and the interface solve and link update
/// work on the increment `Λ_{n+1} − Λ_n`. By superposition this is the same coupled step when
/// every free step is linear with the operator its `ℚ^X` is built on (a linear specimen whose
/// estimate is its stiffness): the same `ℚ^X`, `H` and amplification matrix. With another
/// estimate the two splits differ, and so do their spectral radii. On a hysteretic specimen
/// it commands a free path that lacks only `(j/ss) ℚ_j (Λ_{n+1} − Λ_n)` of the coupled one
/// instead of `(j/ss) ℚ_j Λ_{n+1}`, so the jump of the command at the start of the next coarse
/// step (the link update of the specimen) shrinks from `ℚ_Y Λ_{n+1}` to `ℚ_Y ΔΛ`.
///
/// `H = Σ 𝔾^X ℚ^X` (eq 38) is the Steklov–Poincaré operator, factorized once;
/// `D^N` uses Δt^N (E8) and `D^P` the estimated specimen stiffness with Δt^P. The start is
/// the coupled, acceleration-compatible one (E11): `Λ_0` from the initial state.
pub struct PgAlpha {
    parts: Vec<Partition>,
    runs: Vec<PartitionRun>,
    numerical: usize,
    interface: Interface,
    lambda: DVector<f64>,
    /// `Λ_{n+1}`, or its increment `Λ_{n+1} − Λ_n` under [`MultiplierPredictor::Previous`].
    lambda_next: DVector<f64>,
    predictor: MultiplierPredictor,
    /// Initial multipliers Λ0.
    pub lambda0: DVector<f64>,
    params: AlphaParameters,
    dt: f64,
    subcycles: usize,
    clock: StepClock,
    /// Partitions currently detached to worker threads.
    detached: usize,
    /// `Σ_P 𝔾^P ℚ^P` of the physical partitions, and the in-place factors of
    /// `H = 𝔾^N ℚ^N + Σ_P 𝔾^P ℚ^P`, when the numerical `ℚ^N` follows the current tangent
    /// (`analysis.link_tangent = "current"`, issue 17).
    current_h: Option<CurrentInterfaceOperator>,
}

/// `H` re-assembled and re-factored every step from the numerical partition's current-tangent
/// link operator (allocation-free after start-up).
struct CurrentInterfaceOperator {
    physical: DMatrix<f64>,
    lu: crate::linalg::BandLu,
}

impl PgAlpha {
    /// Build from partitions (exactly one numerical), precompute `D^X`, `ℚ^X`, `H`, and start
    /// at `t0` (`settings`: ρ∞, Δt^N, ss, corrections of the numerical partition, start mode
    /// of Λ0, `t0`).
    pub fn new(mut parts: Vec<Partition>, settings: &StepSettings) -> Result<Self, String> {
        let StepSettings {
            rho_inf,
            time_step: dt,
            subcycles,
            corrections,
            start,
            t0,
            ..
        } = *settings;
        let numerical = parts
            .iter()
            .position(|p| !p.state.physical)
            .ok_or("pg-alpha needs a numerical substructure")?;
        if parts.iter().filter(|p| !p.state.physical).count() != 1 {
            return Err("pg-alpha needs exactly one numerical substructure".into());
        }
        let ss = subcycles.max(1);
        let params = AlphaParameters::new(rho_inf);
        let mut interface = Interface::new(&parts, ConstraintLevel::Velocity);
        let nl = interface.len();
        if nl == 0 {
            return Err("the substructures share no DOF: there is no interface".into());
        }
        let mut runs = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            let physical = k != numerical;
            let substeps = if physical { ss } else { 1 };
            let dtx = dt / substeps as f64;
            let stepper =
                AlphaStepper::new(part, params, dtx, if physical { 1 } else { corrections })?
                    .with_convergence(
                        settings.nonlinear_tolerance,
                        settings.nonlinear_max_iterations,
                    )
                    .with_newton(part, settings.nonlinear_newton)
                    .with_current_link(part, settings.link_current_tangent && !physical);
            let current_link =
                !physical && settings.link_current_tangent && stepper.has_current_link();
            let size = part.state.size();
            let (q_y, q_ydot, q_v) = link_operator(
                &part.state,
                k,
                &interface,
                stepper.factorization(),
                params,
                dtx,
                substeps,
            )?;
            runs.push(PartitionRun {
                stepper,
                coupled: AlphaState::zeros(size),
                free: AlphaState::zeros(size),
                scratch: AlphaState::zeros(size),
                q_y,
                q_ydot,
                q_v,
                substeps,
                predictor: settings.multiplier_predictor,
                current_link,
            });
        }
        set_steklov_poincare(&parts, &runs, &mut interface)?;
        let current_h = runs[numerical]
            .current_link
            .then(|| CurrentInterfaceOperator {
                physical: steklov_poincare_sum(&parts, &runs, &interface, Some(numerical)),
                lu: crate::linalg::BandLu::new(
                    nl,
                    &(0..nl)
                        .flat_map(|i| (0..nl).map(move |j| (i, j)))
                        .collect::<Vec<_>>(),
                ),
            });
        // Consistent start (Steps 1–2; E11, E12).
        let mut f0: Vec<DVector<f64>> = Vec::new();
        let mut r0: Vec<DVector<f64>> = Vec::new();
        for (k, part) in parts.iter_mut().enumerate() {
            let size = part.state.size();
            let mut f = DVector::zeros(size);
            let mut r = DVector::zeros(size);
            runs[k].coupled.y.copy_from(&part.state.y0);
            part.state.load(t0, f.as_mut_slice());
            // A safety event at rest is not a model error: the layer has tripped and latched
            // it, and the first step reports it (its first exchange is refused), so that the
            // runner stops the test through the safety layer with the at-rest record kept.
            match part.residual_at_rest(t0, part.state.y0.clone().as_slice(), r.as_mut_slice()) {
                Ok(()) | Err(crate::physical::PortError::Safety(_)) => {}
                Err(e) => return Err(format!("substructure `{}`: {e}", part.state.name)),
            }
            f0.push(f);
            r0.push(r);
        }
        let mut lambda0 = DVector::zeros(nl);
        if start == StartMode::Consistent {
            // Σ_X S^X m_X⁻¹ S^Xᵀ Λ0 = −Σ_X S^X m_X⁻¹ (f0 − r0)_v
            let mut a = DMatrix::zeros(nl, nl);
            let mut b = DVector::zeros(nl);
            for (k, part) in parts.iter().enumerate() {
                let n = part.state.n_dofs();
                let mut s = DMatrix::zeros(nl, n);
                for c in &interface.couplings[k] {
                    s[(c.lambda, c.row)] = c.sign;
                }
                // m⁻¹ column by column through the state space's mass solve (entry-wise for a
                // lumped mass): no dense `n × n` factorization.
                let mut x = vec![0.0; part.state.size()];
                let mut minv = |col: &[f64]| -> Result<DVector<f64>, String> {
                    x.fill(0.0);
                    x[n..2 * n].copy_from_slice(col);
                    if !part.state.solve_mass(&mut x) {
                        return Err("singular mass".into());
                    }
                    Ok(DVector::from_column_slice(&x[n..2 * n]))
                };
                let mut minv_st = DMatrix::zeros(n, nl);
                for l in 0..nl {
                    let col: Vec<f64> = s.row(l).iter().copied().collect();
                    minv_st.set_column(l, &minv(&col)?);
                }
                a += &s * &minv_st;
                let fr = f0[k].rows(n, n) - r0[k].rows(n, n);
                let minv_fr = minv(fr.as_slice())?;
                b += &s * minv_fr;
            }
            lambda0 = -a.lu().solve(&b).ok_or("singular start operator")?;
        }
        for (k, part) in parts.iter().enumerate() {
            let size = part.state.size();
            let l = interface.l_matrix(k, part.state.n_dofs(), size);
            let rhs = &f0[k] - &r0[k] + l * &lambda0;
            runs[k].coupled.start(&part.state, &rhs)?;
            let c = runs[k].coupled.clone();
            runs[k].free.assign(&c);
        }
        Ok(Self {
            parts,
            runs,
            numerical,
            interface,
            lambda: lambda0.clone(),
            lambda_next: lambda0.clone(),
            predictor: settings.multiplier_predictor,
            lambda0,
            params,
            dt,
            subcycles: ss,
            clock: StepClock::new(t0, dt),
            detached: 0,
            current_h,
        })
    }

    /// Whether the numerical partition's link operator and `H` follow the current tangent
    /// (`analysis.link_tangent = "current"` on a nonlinear numerical partition under the
    /// converged solve).
    pub fn links_with_current_tangent(&self) -> bool {
        self.current_h.is_some()
    }

    /// Replace the estimated stiffness/damping of physical partition `k` and rebuild
    /// `D^P`, `ℚ^P` and the Steklov–Poincaré operator `H` (e.g. after a tangent update).
    /// Not for the real-time loop: it allocates and factorizes.
    pub fn set_estimate(
        &mut self,
        k: usize,
        estimate: crate::model::Estimate,
    ) -> Result<(), String> {
        if k == self.numerical {
            return Err("only a physical substructure has an estimated stiffness".into());
        }
        self.parts[k].state.set_estimate(Some(estimate));
        let run = &mut self.runs[k];
        let dtx = self.dt / run.substeps as f64;
        run.stepper = AlphaStepper::new(&self.parts[k], self.params, dtx, 1)?;
        let (q_y, q_ydot, q_v) = link_operator(
            &self.parts[k].state,
            k,
            &self.interface,
            run.stepper.factorization(),
            self.params,
            dtx,
            run.substeps,
        )?;
        run.q_y = q_y;
        run.q_ydot = q_ydot;
        run.q_v = q_v;
        set_steklov_poincare(&self.parts, &self.runs, &mut self.interface)?;
        if let Some(current) = self.current_h.as_mut() {
            current.physical = steklov_poincare_sum(
                &self.parts,
                &self.runs,
                &self.interface,
                Some(self.numerical),
            );
        }
        Ok(())
    }

    /// Index of the numerical partition.
    pub fn numerical(&self) -> usize {
        self.numerical
    }

    /// Indices of the physical partitions.
    pub fn physical(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.parts.len()).filter(move |k| *k != self.numerical)
    }

    /// Subcycles ss.
    pub fn subcycles(&self) -> usize {
        self.subcycles
    }

    /// The generalized-α parameters.
    pub fn parameters(&self) -> AlphaParameters {
        self.params
    }

    /// Per-partition runs (states, link operators).
    pub fn runs(&self) -> &[PartitionRun] {
        &self.runs
    }

    /// Phase 1: free step of the numerical partition from `t_n` to `t_{n+1}` (Steps 4–6).
    pub fn free_numerical_step(&mut self) -> Result<(), StepError> {
        let k = self.numerical;
        let t_n = self.time();
        numerical_free_step(
            &mut self.parts[k],
            &mut self.runs[k],
            &self.interface.couplings[k],
            &self.lambda,
            t_n,
            self.dt,
        )
    }

    /// Phase 2: free substep `j ∈ 1..=ss` of physical partition `k` (Steps 7–11, eq 30).
    pub fn free_physical_substep(&mut self, k: usize, j: usize) -> Result<(), StepError> {
        let t_n = self.time();
        physical_free_substep(
            &mut self.parts[k],
            &mut self.runs[k],
            &self.interface.couplings[k],
            &self.lambda,
            t_n,
            self.dt,
            j,
        )
    }

    /// Move partition `k` with its run, couplings and `Λ_n` into `task` (which holds an
    /// empty partition from [`FreeTask::new`] or an earlier [`PgAlpha::attach`]), so that its
    /// free solution of the coming coarse step can run on any thread while the caller owns
    /// nothing of it (Abbiati et al. 2020, §2.2: the NS and PS free solutions are parallel
    /// independent processes, synchronized by the link solution). Until every detached task
    /// is attached again, [`TimeIntegrator::step`] refuses to run. Running
    /// [`FreeTask::numerical_step`] and every [`FreeTask::physical_substep`], attaching, then
    /// [`PgAlpha::interface_solve`] and [`PgAlpha::link_update`] is bit-identical to
    /// [`TimeIntegrator::step`]. Allocation-free.
    pub fn detach(&mut self, k: usize, task: &mut FreeTask) {
        debug_assert!(
            task.part.state.dofs.is_empty(),
            "a task must be empty to detach into"
        );
        std::mem::swap(&mut task.part, &mut self.parts[k]);
        std::mem::swap(&mut task.run, &mut self.runs[k]);
        std::mem::swap(&mut task.couplings, &mut self.interface.couplings[k]);
        task.lambda.copy_from(&self.lambda);
        task.t_n = self.time();
        task.dt = self.dt;
        task.index = k;
        task.numerical = k == self.numerical;
        self.detached += 1;
    }

    /// Put a detached task's partition back (see [`PgAlpha::detach`]); `task` is left empty.
    pub fn attach(&mut self, task: &mut FreeTask) {
        let k = task.index;
        std::mem::swap(&mut task.part, &mut self.parts[k]);
        std::mem::swap(&mut task.run, &mut self.runs[k]);
        std::mem::swap(&mut task.couplings, &mut self.interface.couplings[k]);
        self.detached -= 1;
    }

    /// Phase 3: the interface solve `Λ_{n+1} = −H⁻¹ Σ G^X Ẏ^{X,free}` (Step 12, eq 37); under
    /// [`MultiplierPredictor::Previous`] the free rates already carry `Λ_n` and the same solve
    /// gives the increment `Λ_{n+1} − Λ_n`.
    ///
    /// With the current-tangent link (`analysis.link_tangent = "current"`) `H` is first
    /// re-assembled from the numerical partition's `ℚ^N` of this step and the physical
    /// partitions' fixed share, and re-factored in place.
    pub fn interface_solve(&mut self) {
        self.interface.begin();
        for (k, run) in self.runs.iter().enumerate() {
            let n = self.parts[k].state.n_dofs();
            self.interface.add(k, run.free.ydot.as_slice(), n);
        }
        if let Some(current) = self.current_h.as_mut() {
            let k = self.numerical;
            let h = &mut self.interface.h;
            h.copy_from(&current.physical);
            let q = &self.runs[k].q_ydot;
            for c in &self.interface.couplings[k] {
                for col in 0..h.ncols() {
                    h[(c.lambda, col)] += c.sign * q[(c.row, col)];
                }
            }
            current.lu.clear();
            for col in 0..h.ncols() {
                for row in 0..h.nrows() {
                    current.lu.add(row, col, h[(row, col)]);
                }
            }
            if current.lu.factor() {
                self.lambda_next.copy_from_slice(self.interface.gap());
                current.lu.solve(self.lambda_next.as_mut_slice());
                self.lambda_next.neg_mut();
                return;
            }
        }
        self.interface.solve(&mut self.lambda_next);
    }

    /// Phase 4: link update `𝕐^X = 𝕐^{X,free} + ℚ^X Λ_{n+1}` of every partition and
    /// advance to `t_{n+1}` (Steps 13–14); `ℚ^X (Λ_{n+1} − Λ_n)` under
    /// [`MultiplierPredictor::Previous`]. The states of hysteretic elements with an exact path
    /// update in the numerical partition are then put back on their laws
    /// ([`AlphaStepper::reproject`]): `ℚ` is built with the initial tangent, so the linear
    /// correction alone would move a yielded bilinear force past its bound (found on
    /// `examples/bridge_iso.toml`: the D-CSB slider reached 1.39 δ). The other element states
    /// of a partition solved to convergence (Bouc-Wen, rate laws) are solved again at the
    /// linked kinematics (`settle_states`).
    pub fn link_update(&mut self) -> Result<(), StepError> {
        for (run, part) in self.runs.iter_mut().zip(self.parts.iter_mut()) {
            update_partition(run, part, &self.lambda_next);
        }
        self.advance_multipliers();
        let t = self.time();
        let n = self.clock.steps();
        check_finite(self.lambda.as_slice(), "interface multipliers", t, n)?;
        for run in &self.runs {
            check_finite(run.coupled.y.as_slice(), "state", t, n)?;
        }
        Ok(())
    }

    /// Phase 4 split in two for a pipelined runner (docs/realtime-pipeline.md): the link
    /// update of every physical partition, `Λ_{n+1}` and the clock advanced to `t_{n+1}` —
    /// all that the physical free substeps of step `n + 1` need, so that their job can leave
    /// before the numerical partition is updated. [`PgAlpha::link_update_numerical`] follows;
    /// the two are bit-identical to [`PgAlpha::link_update`]: each partition's update reads only
    /// its own run and `Λ_{n+1}` (Abbiati et al. 2019, Steps 13–14). Checks the multipliers and
    /// the physical states. Allocation-free.
    pub fn link_update_physical(&mut self) -> Result<(), StepError> {
        let k = self.numerical;
        for (x, (run, part)) in self.runs.iter_mut().zip(self.parts.iter_mut()).enumerate() {
            if x != k {
                update_partition(run, part, &self.lambda_next);
            }
        }
        self.advance_multipliers();
        let t = self.time();
        let n = self.clock.steps();
        check_finite(self.lambda.as_slice(), "interface multipliers", t, n)?;
        for (x, run) in self.runs.iter().enumerate() {
            if x != k {
                check_finite(run.coupled.y.as_slice(), "state", t, n)?;
            }
        }
        Ok(())
    }

    /// The numerical partition's link update after [`PgAlpha::link_update_physical`] (the
    /// physical partitions may be detached meanwhile: only the numerical one is touched).
    /// Checks its state. Allocation-free.
    pub fn link_update_numerical(&mut self) -> Result<(), StepError> {
        let k = self.numerical;
        update_partition(&mut self.runs[k], &mut self.parts[k], &self.lambda_next);
        check_finite(
            self.runs[k].coupled.y.as_slice(),
            "state",
            self.time(),
            self.clock.steps(),
        )
    }

    /// `Λ_{n+1}` (or `Λ_n` plus the increment) and the clock to `t_{n+1}`.
    fn advance_multipliers(&mut self) {
        match self.predictor {
            MultiplierPredictor::None => self.lambda.copy_from(&self.lambda_next),
            MultiplierPredictor::Previous => self.lambda += &self.lambda_next,
        }
        self.clock.advance();
    }
}

/// The link update of one partition, `𝕐^X = 𝕐^{X,free} + ℚ^X Λ_{n+1}` (Abbiati et al. 2019,
/// Steps 13–14), its hysteretic states put back on their laws.
fn update_partition(run: &mut PartitionRun, part: &mut Partition, lambda_next: &DVector<f64>) {
    run.stepper.keep_start(&run.coupled.y);
    run.coupled.y.copy_from(&run.free.y);
    run.coupled.y.gemv(1.0, &run.q_y, lambda_next, 1.0);
    run.coupled.ydot.copy_from(&run.free.ydot);
    run.coupled.ydot.gemv(1.0, &run.q_ydot, lambda_next, 1.0);
    run.coupled.v.copy_from(&run.free.v);
    run.coupled.v.gemv(1.0, &run.q_v, lambda_next, 1.0);
    // Hysteretic states back on their laws after the linear correction (issue 17).
    run.stepper.reproject(part, &mut run.coupled);
    if run.stepper.solves_to_convergence() {
        settle_states(part, run);
    }
}

/// One partition's free solution over a coarse step, owned: moved out of a [`PgAlpha`] by
/// [`PgAlpha::detach`] and back by [`PgAlpha::attach`], so that a worker thread can run it
/// without sharing anything with the coordinator. Allocation-free once built.
pub struct FreeTask {
    part: Partition,
    run: PartitionRun,
    couplings: Vec<crate::assembly::Coupling>,
    lambda: DVector<f64>,
    t_n: f64,
    dt: f64,
    index: usize,
    numerical: bool,
}

impl FreeTask {
    /// An empty task for the partitions of `pg` (allocates `Λ`'s buffer once).
    pub fn new(pg: &PgAlpha) -> Self {
        Self {
            part: Partition::empty(),
            run: PartitionRun::empty(pg.params),
            couplings: Vec::new(),
            lambda: DVector::zeros(pg.lambda.len()),
            t_n: 0.0,
            dt: 0.0,
            index: usize::MAX,
            numerical: false,
        }
    }

    /// Whether this is the numerical partition.
    pub fn is_numerical(&self) -> bool {
        self.numerical
    }

    /// Partition index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The laboratory of this task's partition, if a transfer system stands behind it: a
    /// worker that holds the task trips it itself when its runner's watchdog asks it to.
    pub fn lab_mut(&mut self) -> Option<&mut dyn crate::physical::LabControl> {
        self.part.lab_mut()
    }

    /// Start time `t_n` of the coarse step the task was detached for.
    pub fn step_time(&self) -> f64 {
        self.t_n
    }

    /// Substeps of this partition (ss for physical ones, 1 for the numerical one).
    pub fn substeps(&self) -> usize {
        self.run.substeps
    }

    /// Free step of the numerical partition (Steps 4–6).
    pub fn numerical_step(&mut self) -> Result<(), StepError> {
        numerical_free_step(
            &mut self.part,
            &mut self.run,
            &self.couplings,
            &self.lambda,
            self.t_n,
            self.dt,
        )
    }

    /// Free substep `j ∈ 1..=ss` of a physical partition (Steps 7–11, eq 30).
    pub fn physical_substep(&mut self, j: usize) -> Result<(), StepError> {
        physical_free_substep(
            &mut self.part,
            &mut self.run,
            &self.couplings,
            &self.lambda,
            self.t_n,
            self.dt,
            j,
        )
    }
}

/// The numerical partition's free step; under [`MultiplierPredictor::Previous`] with `Λ_n` at
/// `t_{n+1}` on its interface DOFs.
fn numerical_free_step(
    part: &mut Partition,
    run: &mut PartitionRun,
    couplings: &[crate::assembly::Coupling],
    lambda: &DVector<f64>,
    t_n: f64,
    dt: f64,
) -> Result<(), StepError> {
    let t_next = t_n + dt;
    let PartitionRun {
        stepper,
        coupled,
        free,
        predictor,
        current_link,
        q_y,
        q_ydot,
        q_v,
        ..
    } = run;
    let coupling = match predictor {
        MultiplierPredictor::None => None,
        MultiplierPredictor::Previous => Some((couplings, lambda, 1.0)),
    };
    stepper
        .step(part, coupled, t_next, coupling, free)
        .map_err(|e| StepError::from_port(&part.state.name, e))?;
    if *current_link {
        // ℚ^N with the current tangent of the free end state (issue 17); on a singular
        // matrix the previous operator stays.
        stepper.current_link_operator(
            part,
            coupled.y.as_slice(),
            free.y.as_slice(),
            couplings,
            q_y,
            q_ydot,
            q_v,
        );
    }
    Ok(())
}

fn physical_free_substep(
    part: &mut Partition,
    run: &mut PartitionRun,
    couplings: &[crate::assembly::Coupling],
    lambda: &DVector<f64>,
    t_n: f64,
    dt: f64,
    j: usize,
) -> Result<(), StepError> {
    let ss = run.substeps;
    let t = t_n + dt * j as f64 / ss as f64;
    // eq 30's known share of Λ_{n+j/ss}, or all of Λ_n under the `previous` predictor.
    let w = match run.predictor {
        MultiplierPredictor::None => 1.0 - j as f64 / ss as f64,
        MultiplierPredictor::Previous => 1.0,
    };
    let PartitionRun {
        stepper,
        coupled,
        free,
        scratch,
        ..
    } = run;
    let from = if j == 1 { &*coupled } else { &*free };
    let res = stepper.step(part, from, t, Some((couplings, lambda, w)), scratch);
    std::mem::swap(free, scratch);
    res.map_err(|e| StepError::from_port(&part.state.name, e))
}

/// After the link update of a numerical partition solved to convergence: the element states
/// that have no exact path update (Bouc-Wen, and any other rate law) are solved again at the
/// linked kinematics, `s = s̃ + c ṡ(u, v, s)` with `s̃ = s − cṡ` of the linked state, by
/// fixed-point iteration to the partition's tolerance (at most its iteration bound); `Ẏ` and
/// `V` of those rows follow. The linear `ℚΛ` increment gives them the initial tangent's rates
/// only: a Bouc-Wen pier at the interface of the isolated bridge absorbed negative energy.
/// Allocation-free (uses the run's scratch state).
fn settle_states(part: &mut Partition, run: &mut PartitionRun) {
    let stepper = &run.stepper;
    let (c, w) = (stepper.c, stepper.params.alpha_f / stepper.params.alpha_m);
    let n = part.state.n_dofs();
    let size = run.coupled.y.len();
    let tol = stepper.tolerance.unwrap_or(0.0);
    for r in 2 * n..size {
        run.scratch.ydot[r] = run.coupled.y[r] - c * run.coupled.ydot[r];
    }
    for _ in 0..stepper.max_iterations {
        part.state.residual(
            run.coupled.y.as_slice(),
            run.scratch.y.as_mut_slice(),
            &mut part.ws,
        );
        let (mut change, mut magnitude): (f64, f64) = (0.0, 0.0);
        for r in 2 * n..size {
            if stepper.is_path_row(r) {
                continue;
            }
            let rate = -run.scratch.y[r];
            let delta = rate - run.coupled.ydot[r];
            run.coupled.ydot[r] = rate;
            run.coupled.y[r] = run.scratch.ydot[r] + c * rate;
            run.coupled.v[r] += w * delta;
            change = change.max(delta.abs());
            magnitude = magnitude.max(rate.abs());
        }
        if change <= tol * magnitude || change <= f64::MIN_POSITIVE {
            break;
        }
    }
}

/// The `Y`, `Ẏ` and `V` blocks of a link operator.
pub(crate) type LinkBlocks = (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>);

/// Link operator `ℚ^X` of partition `k`: `ℚ_0 = 0`,
/// `ℚ_j = 𝕄⁻¹((j/ss) 𝕃 − ℕ ℚ_{j−1})`, `ℚ^X = ℚ_ss` (Abbiati et al. 2019, eqs 32–33 as read in E9),
/// split into its `Y`, `Ẏ` and `V` blocks.
///
/// One column per interface DOF, without forming the `3N × 3N` step matrix `𝕄`: its block rows
/// `J0 Y + M Ẏ = r₁`, `Y − γΔt V = r₂`, `−α_f Ẏ + α_m V = r₃` reduce to
/// `D Ẏ = r₁ − J0 (r₂ + (γΔt/α_m) r₃)` with `D = M + c J0` (the stepper's factored matrix),
/// then `V = (r₃ + α_f Ẏ)/α_m` and `Y = r₂ + γΔt V`: `O(n_Λ · ss · nnz)`.
pub(crate) fn link_operator(
    st: &crate::assembly::StateSpace,
    k: usize,
    interface: &Interface,
    d: &StateMatrixFactors,
    params: AlphaParameters,
    dtx: f64,
    substeps: usize,
) -> Result<LinkBlocks, String> {
    let size = st.size();
    let nl = interface.len();
    let (gdt, am, af, g) = (
        params.gamma * dtx,
        params.alpha_m,
        params.alpha_f,
        params.gamma,
    );
    let l = interface.l_matrix(k, st.n_dofs(), size);
    let mut q_y = DMatrix::zeros(size, nl);
    let mut q_ydot = DMatrix::zeros(size, nl);
    let mut q_v = DMatrix::zeros(size, nl);
    let (mut y, mut yd, mut v) = (vec![0.0; size], vec![0.0; size], vec![0.0; size]);
    let (mut r2, mut r3) = (vec![0.0; size], vec![0.0; size]);
    let mut rhs = DVector::zeros(size);
    for col in 0..nl {
        y.fill(0.0);
        yd.fill(0.0);
        v.fill(0.0);
        for j in 1..=substeps {
            let w = j as f64 / substeps as f64;
            for i in 0..size {
                // r = (j/ss) 𝕃 − ℕ ℚ_{j−1}, block by block.
                r2[i] = y[i] + dtx * (1.0 - g) * v[i];
                r3[i] = (1.0 - af) * yd[i] - (1.0 - am) * v[i];
                rhs[i] = l[(i, col)] * w;
            }
            let j0 = st.j0_entries();
            for i in 0..j0.n_rows() {
                let (cols, vals) = j0.row(i);
                for (&c, x) in cols.iter().zip(vals) {
                    let c = c as usize;
                    rhs[i] -= x * (r2[c] + gdt / am * r3[c]);
                }
            }
            d.solve(rhs.as_mut_slice());
            if rhs.iter().any(|x| !x.is_finite()) {
                return Err(format!("substructure `{}`: singular step matrix", st.name));
            }
            for i in 0..size {
                yd[i] = rhs[i];
                v[i] = (r3[i] + af * yd[i]) / am;
                y[i] = r2[i] + gdt * v[i];
            }
        }
        q_y.column_mut(col).copy_from_slice(&y);
        q_ydot.column_mut(col).copy_from_slice(&yd);
        q_v.column_mut(col).copy_from_slice(&v);
    }
    Ok((q_y, q_ydot, q_v))
}

/// `H = Σ_X 𝔾^X ℚ^X` (Abbiati et al. 2019, eq 38), factorized once.
fn set_steklov_poincare(
    parts: &[Partition],
    runs: &[PartitionRun],
    interface: &mut Interface,
) -> Result<(), String> {
    let h = steklov_poincare_sum(parts, runs, interface, None);
    if interface.set_operator(h) {
        Ok(())
    } else {
        Err(
            "the Steklov-Poincaré operator H is singular (check the interface DOFs and \
             the estimated stiffness)"
                .into(),
        )
    }
}

/// `Σ_X 𝔾^X ℚ^X` (Abbiati et al. 2019, eq 38) over the partitions other than `except`: the
/// whole of `H` with `None`; with `Some(numerical)` the physical share that the
/// current-tangent link keeps fixed. Allocates.
fn steklov_poincare_sum(
    parts: &[Partition],
    runs: &[PartitionRun],
    interface: &Interface,
    except: Option<usize>,
) -> DMatrix<f64> {
    let nl = interface.len();
    let mut h = DMatrix::zeros(nl, nl);
    for (k, (part, run)) in parts.iter().zip(runs).enumerate() {
        if Some(k) != except {
            let g = interface.g_matrix(k, part.state.n_dofs(), part.state.size());
            h += &g * &run.q_ydot;
        }
    }
    h
}

impl TimeIntegrator for PgAlpha {
    fn name(&self) -> &'static str {
        "pg-alpha"
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
        if self.detached > 0 {
            return Err(StepError::Physical {
                substructure: "pg-alpha".into(),
                reason: "partitions are detached to worker threads".into(),
            });
        }
        self.free_numerical_step()?;
        for k in 0..self.parts.len() {
            if k == self.numerical {
                continue;
            }
            for j in 1..=self.runs[k].substeps {
                self.free_physical_substep(k, j)?;
            }
        }
        self.interface_solve();
        self.link_update()
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
        super::set_parameter_in(&mut self.parts, partition, element, parameter, value)
    }

    fn refactorizer(
        &self,
        partition: usize,
        receivers: &[usize],
        parameters: &[&'static str],
    ) -> Result<super::Refactorizer, String> {
        if partition != self.numerical {
            return Err(
                "pg-alpha rebuilds the operators of its numerical substructure only".into(),
            );
        }
        if self.detached > 0 {
            return Err("partitions are detached to worker threads".into());
        }
        let k = self.numerical;
        let products = self
            .parts
            .iter()
            .zip(&self.runs)
            .enumerate()
            .map(|(x, (part, run))| {
                (x != k).then(|| {
                    &self
                        .interface
                        .g_matrix(x, part.state.n_dofs(), part.state.size())
                        * &run.q_ydot
                })
            })
            .collect();
        let st = &self.parts[k].state;
        let context = super::refactorization::PartitionedContext {
            k,
            interface: self.interface.clone(),
            products,
            g: self.interface.g_matrix(k, st.n_dofs(), st.size()),
        };
        super::Refactorizer::new(
            st.clone(),
            k,
            receivers,
            parameters,
            self.params,
            self.dt,
            Some(context),
        )
    }

    fn swap_operators(&mut self, operators: &mut super::Operators) -> Result<(), &'static str> {
        if self.detached > 0 {
            return Err("partitions are detached to worker threads");
        }
        let (Some(link), Some((h, op))) = (operators.link.as_mut(), operators.h.as_mut()) else {
            return Err("these operators are not pg-alpha's");
        };
        let run = &mut self.runs[self.numerical];
        if link.0.shape() != run.q_y.shape() || h.shape() != self.interface.h.shape() {
            return Err("these operators do not fit this pg-alpha");
        }
        run.stepper.swap_factorization(&mut operators.d);
        std::mem::swap(&mut run.q_y, &mut link.0);
        std::mem::swap(&mut run.q_ydot, &mut link.1);
        std::mem::swap(&mut run.q_v, &mut link.2);
        self.interface.swap_operator(h, op);
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
    fn state(&self, p: usize) -> &[f64] {
        self.runs[p].coupled.y.as_slice()
    }
    fn rate(&self, p: usize) -> &[f64] {
        self.runs[p].coupled.ydot.as_slice()
    }
    fn multipliers(&self) -> &[f64] {
        self.lambda.as_slice()
    }
    fn initial_multipliers(&self) -> &[f64] {
        self.lambda0.as_slice()
    }
    fn interface(&self) -> Option<&Interface> {
        Some(&self.interface)
    }
    fn energy_source(&self, _p: usize) -> super::EnergySource {
        super::EnergySource::PartitionState
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        let Self { parts, runs, .. } = self;
        parts[p].energy(runs[p].coupled.y.as_slice())
    }
    fn state_len(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.coupled.flat_len())
            .sum::<usize>()
            + self.lambda.len()
    }
    fn export_state(&self, out: &mut [f64]) {
        let mut o = 0;
        for r in &self.runs {
            let l = r.coupled.flat_len();
            r.coupled.export(&mut out[o..o + l]);
            o += l;
        }
        out[o..o + self.lambda.len()].copy_from_slice(self.lambda.as_slice());
    }
    fn import_state(&mut self, x: &[f64]) {
        let mut o = 0;
        for r in &mut self.runs {
            let l = r.coupled.flat_len();
            r.coupled.import(&x[o..o + l]);
            o += l;
        }
        let nl = self.lambda.len();
        self.lambda.copy_from_slice(&x[o..o + nl]);
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
    fn nonlinear_solve(&self) -> Option<super::NonlinearSolveReport> {
        let mut reports = self
            .runs
            .iter()
            .filter_map(|r| r.stepper.nonlinear_report());
        let mut total = reports.next()?;
        for r in reports {
            total.merge(&r);
        }
        Some(total)
    }
}

#[cfg(test)]
mod link_operator_tests {
    use super::*;
    use crate::assembly::{build_partitions, Grouping};
    use crate::model::{Model, NoFiles};

    /// A chain of `n` storeys, storey 1 tested, the rest numerical, with a consistent-mass
    /// `linear` element in the numerical part (so `m` is not diagonal there).
    fn split_chain(n: usize) -> Model {
        let mut t = String::from("title = \"split chain\"\n");
        for i in 1..=n {
            t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
        }
        t += "[substructure.frame]\n[substructure.storey]\nphysical = true\n\
              estimate = { dofs = [[1, \"x\"]], stiffness = [[40000.0]], damping = [[60.0]] }\n";
        t += "[[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = 50.0\n\
              split = { frame = 0.5, storey = 0.5 }\n";
        t += "[[element]]\ntype = \"spring\"\nname = \"k1\"\nnodes = [1]\ndof = \"x\"\n\
              k = 4.0e4\nsubstructure = \"storey\"\n";
        for i in 2..=n {
            t += &format!(
                "[[element]]\ntype = \"spring\"\nname = \"k{i}\"\nnodes = [{}, {i}]\n\
                 dof = \"x\"\nk = 4.0e4\nsubstructure = \"frame\"\n\
                 [[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n\
                 substructure = \"frame\"\n",
                i - 1
            );
        }
        t += "[[element]]\ntype = \"linear\"\nname = \"coupler\"\n\
              dofs = [[2, \"x\"], [3, \"x\"]]\nm = [[2.0, 1.0], [1.0, 2.0]]\n\
              substructure = \"frame\"\n";
        t += "[damping]\nalpha = 0.05\nbeta = 0.001\n";
        t += "[analysis]\nintegrator = \"pg-alpha\"\ntime_step = 0.001\nsubcycles = 3\n\
              duration = 0.01\n";
        Model::from_toml(&t, "split_chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The link operator by one `D` solve per interface DOF and substep equals the dense
    /// recursion `ℚ_j = 𝕄⁻¹((j/ss) 𝕃 − ℕ ℚ_{j−1})` with the `3N × 3N` step matrices (to
    /// round-off), for the numerical and the subcycled physical partition.
    #[test]
    fn link_operator_by_interface_solves_equals_the_dense_recursion() {
        let parts = build_partitions(&split_chain(12), Grouping::Partitioned)
            .unwrap_or_else(|e| panic!("{e}"));
        let interface = Interface::new(&parts, ConstraintLevel::Velocity);
        let nl = interface.len();
        assert_eq!(nl, 1);
        for rho in [1.0, 0.6] {
            let params = AlphaParameters::new(rho);
            for (k, part) in parts.iter().enumerate() {
                let substeps = if part.state.physical { 3 } else { 1 };
                let dtx = 1.0e-3 / substeps as f64;
                let stepper = AlphaStepper::new(part, params, dtx, 1).expect("stepper");
                let (qy, qyd, qv) = link_operator(
                    &part.state,
                    k,
                    &interface,
                    stepper.factorization(),
                    params,
                    dtx,
                    substeps,
                )
                .expect("link operator");
                let st = &part.state;
                let size = st.size();
                let (mm, nn) = params.step_matrices(st.j0(), &st.big_mass(), dtx);
                let lu = mm.lu();
                let l = interface.l_matrix(k, st.n_dofs(), size);
                let mut ll = DMatrix::zeros(3 * size, nl);
                ll.view_mut((0, 0), (size, nl)).copy_from(&l);
                let mut q = DMatrix::zeros(3 * size, nl);
                for j in 1..=substeps {
                    let rhs = &ll * (j as f64 / substeps as f64) - &nn * &q;
                    q = lu.solve(&rhs).expect("solves");
                }
                for (block, sparse) in [(0, &qy), (1, &qyd), (2, &qv)] {
                    let dense = q.rows(block * size, size);
                    let scale = dense.amax().max(1e-300);
                    let diff = (dense - sparse).amax();
                    assert!(
                        diff <= 1e-10 * scale,
                        "part {k}, block {block}: {diff:e} of {scale:e}"
                    );
                }
                assert!(qyd.amax() > 0.0);
            }
        }
    }
}
