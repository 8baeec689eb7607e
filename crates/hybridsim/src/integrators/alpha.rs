//! The generalized-α step shared by the monolithic and partitioned schemes.

use crate::assembly::{
    Coupling, FoldedInPlace, FoldedPredictor, FoldedStep, Partition, StateSpace,
};
use crate::linalg::{BandLu, StateMatrixFactors, MAX_SEPARATOR};
use crate::physical::PortError;
use nalgebra::{DMatrix, DVector};

/// Generalized-α parameters from ρ∞ (Abbiati et al. 2019, eq 7; ALGORITHMS.md A1):
/// `α_m = (3 − ρ∞)/(2(1 + ρ∞))`, `α_f = 1/(1 + ρ∞)`, `γ = 1/2 + α_m − α_f`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlphaParameters {
    /// Spectral radius at infinity.
    pub rho_inf: f64,
    /// α_m.
    pub alpha_m: f64,
    /// α_f.
    pub alpha_f: f64,
    /// γ.
    pub gamma: f64,
}

impl AlphaParameters {
    /// Parameters for `rho_inf ∈ [0, 1]`.
    pub fn new(rho_inf: f64) -> Self {
        let alpha_m = (3.0 - rho_inf) / (2.0 * (1.0 + rho_inf));
        let alpha_f = 1.0 / (1.0 + rho_inf);
        Self {
            rho_inf,
            alpha_m,
            alpha_f,
            gamma: 0.5 + alpha_m - alpha_f,
        }
    }

    /// `c = γ Δt α_f/α_m`, the factor of `Ẏ_{n+1}` in `Y_{n+1}` (eq 13a).
    pub fn c(&self, dt: f64) -> f64 {
        self.gamma * dt * self.alpha_f / self.alpha_m
    }

    /// Spurious root `(α_m − 1)/α_m` of the amplification matrix as Ω → 0.
    pub fn spurious_root(&self) -> f64 {
        (self.alpha_m - 1.0) / self.alpha_m
    }

    /// `𝕄` and `ℕ` of the linear step `𝕄 𝕐_{n+1} + ℕ 𝕐_n = 𝔽_{n+1}` (Abbiati et al. 2019, eq 16)
    /// for `𝕐 = [Y; Ẏ; V]`, with `J0` in place of `K`.
    pub fn step_matrices(
        &self,
        j0: &DMatrix<f64>,
        m: &DMatrix<f64>,
        dt: f64,
    ) -> (DMatrix<f64>, DMatrix<f64>) {
        let n = m.nrows();
        let i = DMatrix::<f64>::identity(n, n);
        let mut mm = DMatrix::zeros(3 * n, 3 * n);
        let mut nn = DMatrix::zeros(3 * n, 3 * n);
        mm.view_mut((0, 0), (n, n)).copy_from(j0);
        mm.view_mut((0, n), (n, n)).copy_from(m);
        mm.view_mut((n, 0), (n, n)).copy_from(&i);
        mm.view_mut((n, 2 * n), (n, n))
            .copy_from(&(&i * (-self.gamma * dt)));
        mm.view_mut((2 * n, n), (n, n))
            .copy_from(&(&i * (-self.alpha_f)));
        mm.view_mut((2 * n, 2 * n), (n, n))
            .copy_from(&(&i * self.alpha_m));
        nn.view_mut((n, 0), (n, n)).copy_from(&(-&i));
        nn.view_mut((n, 2 * n), (n, n))
            .copy_from(&(&i * (-dt * (1.0 - self.gamma))));
        nn.view_mut((2 * n, n), (n, n))
            .copy_from(&(&i * (-(1.0 - self.alpha_f))));
        nn.view_mut((2 * n, 2 * n), (n, n))
            .copy_from(&(&i * (1.0 - self.alpha_m)));
        (mm, nn)
    }
}

/// Algorithmic state of one partition: `Y`, `Ẏ` and the filtered rate `V`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlphaState {
    /// `Y = [u; v; s]`.
    pub y: DVector<f64>,
    /// `Ẏ`.
    pub ydot: DVector<f64>,
    /// `V` (Abbiati et al. 2019, eq 10b).
    pub v: DVector<f64>,
}

impl AlphaState {
    /// Zero state of size `n`.
    pub fn zeros(n: usize) -> Self {
        Self {
            y: DVector::zeros(n),
            ydot: DVector::zeros(n),
            v: DVector::zeros(n),
        }
    }

    /// Copy another state into this one (no allocation).
    pub fn assign(&mut self, other: &AlphaState) {
        self.y.copy_from(&other.y);
        self.ydot.copy_from(&other.ydot);
        self.v.copy_from(&other.v);
    }

    /// Start from `Y_0` of `state` with `Ẏ_0 = M⁻¹ rhs` (`rhs = F_0 − R(Y_0)`, plus `L Λ_0`
    /// for a coupled start) and `V_0 = Ẏ_0` (Abbiati et al. 2019, eqs 14, 24;
    /// ALGORITHMS.md A1, A2).
    /// `Ẏ_0` is solved in place in `Ẏ` (no copy of `rhs`); on an error the state is left
    /// part-written.
    pub fn start(&mut self, state: &StateSpace, rhs: &DVector<f64>) -> Result<(), String> {
        self.ydot.copy_from(rhs);
        if !state.solve_mass(self.ydot.as_mut_slice()) {
            return Err(format!(
                "substructure `{}`: singular mass matrix",
                state.name
            ));
        }
        self.y.copy_from(&state.y0);
        self.v.copy_from(&self.ydot);
        Ok(())
    }

    /// Flat length `3N`.
    pub fn flat_len(&self) -> usize {
        3 * self.y.len()
    }

    /// Write `[Y; Ẏ; V]`.
    pub fn export(&self, out: &mut [f64]) {
        let n = self.y.len();
        out[..n].copy_from_slice(self.y.as_slice());
        out[n..2 * n].copy_from_slice(self.ydot.as_slice());
        out[2 * n..3 * n].copy_from_slice(self.v.as_slice());
    }

    /// Read `[Y; Ẏ; V]`.
    pub fn import(&mut self, x: &[f64]) {
        let n = self.y.len();
        self.y.copy_from_slice(&x[..n]);
        self.ydot.copy_from_slice(&x[n..2 * n]);
        self.v.copy_from_slice(&x[2 * n..3 * n]);
    }
}

/// One generalized-α step of a partition over preallocated workspaces, with
/// `D = M + c J0` factorized once (Abbiati et al. 2019, eqs 11–13; ALGORITHMS.md A1):
///
/// `Ỹ = Y_n + Ẏ_n γΔt(1−α_f)/α_m + V_n Δt(α_m−γ)/α_m`,
/// `Ṽ = Ẏ_n(1−α_f)/α_m − V_n(1−α_m)/α_m`,
/// `Ẏ_{n+1} = D⁻¹(F_{n+1} − R(Ỹ) + L Λ w)`, `Y_{n+1} = Ỹ + c Ẏ_{n+1}`,
/// `V_{n+1} = Ṽ + (α_f/α_m) Ẏ_{n+1}`.
///
/// `D⁻¹` goes through the effective matrix `m + c C + c² K` (the Schur complement of the
/// displacement rows `u̇ − c v̇`, [`crate::linalg::StateMatrixFactors`]) whenever the partition's
/// `D` has those rows, which every assembled partition has; the same factors serve every solve
/// of the step, the link operator and the threaded runner alike.
///
/// With `corrections = k > 1` (numerical partitions only), `k − 1` further fixed-`D`
/// corrections `Ẏ ← Ẏ + D⁻¹(F + LΛw − M Ẏ − R(Ỹ + cẎ))` restore second order on nonlinear
/// problems (ALGORITHMS.md E38).
///
/// With a convergence tolerance ([`AlphaStepper::with_convergence`], the default of models
/// with nonlinear numerical elements, issue 17) a numerical partition with nonlinear elements
/// instead iterates the same modified-Newton correction (the initial tangent in `D`, factored
/// once) until the increment of `Ẏ` is below the tolerance relative to `Ẏ` in each block
/// (`u`, `v`, `s`), at most `max_iterations` times; the states of elements with an exact path
/// update ([`crate::elements::Element::exact_path_update`]: bilinear, Steel01, lead-rubber,
/// Bouc-Wen) are set by that update (a return mapping along the step's straight deformation
/// path, which locates yield and unloading inside the step; for Bouc-Wen the law integrated
/// along that path, so velocity reversals fall at the ends of steps) rather than by their
/// rate law. A step that does not converge keeps its last iterate and is counted
/// ([`AlphaStepper::unconverged_steps`], [`AlphaStepper::nonlinear_report`]).
/// A linear partition takes none of this path (the same bits as before); a physical partition
/// is never iterated (its specimen is commanded once per step).
#[derive(Debug, Clone)]
pub struct AlphaStepper {
    /// Parameters.
    pub params: AlphaParameters,
    /// Step size of this partition.
    pub dt: f64,
    /// `c = γΔt α_f/α_m`.
    pub c: f64,
    /// Corrections per step (≥ 1). Read-only after construction: [`AlphaStepper::new`] sizes
    /// the workspaces for it.
    pub corrections: usize,
    d_fact: StateMatrixFactors,
    y_tilde: DVector<f64>,
    v_tilde: DVector<f64>,
    load: DVector<f64>,
    res: DVector<f64>,
    rhs: DVector<f64>,
    tmp: DVector<f64>,
    y_iter: DVector<f64>,
    /// Relative convergence tolerance of the converged solve (`None`: fixed corrections).
    /// Read-only after construction: [`AlphaStepper::with_convergence`] sizes the workspaces
    /// for it.
    pub tolerance: Option<f64>,
    /// Iteration bound of the converged solve.
    pub max_iterations: usize,
    nonlinear: bool,
    path_rows: Vec<usize>,
    /// `path_rows` as a mask over the rows of `Ẏ` (the convergence check skips them).
    on_path: Vec<bool>,
    unconverged: u64,
    iterations: u64,
    solves: u64,
    first_unconverged: Option<f64>,
    worst_unconverged: f64,
    /// `Y_n` kept by [`AlphaStepper::keep_start`] for [`AlphaStepper::reproject`].
    y_start: DVector<f64>,
    /// Whether the partition has Rayleigh damping with committed tangents, refreshed from
    /// `Y_n` at the start of every step.
    committed_rayleigh: bool,
    /// Newton's method with the current tangent ([`AlphaStepper::with_newton`]).
    newton: Option<Box<NewtonSolve>>,
    /// The relative corrections of the last converged solve, by iteration (`max_iterations`
    /// places; the first `last_len` hold values).
    last_corrections: Vec<f64>,
    last_len: usize,
    /// The residual's plan version ([`StateSpace::plan_version`]) for which the coupling
    /// product `B b_u` of `D⁻¹` is folded into the residual
    /// ([`StateSpace::folds_coupling`]); `None`: not folded.
    folded: Option<u64>,
}

/// The matrix of Newton's method on the step's equations `M Ẏ + R(Ỹ + cẎ) = F + LΛw`
/// (issue 17): `M + c ∂R/∂Y` at the current iterate, re-assembled and re-factored in place
/// every iteration.
#[derive(Debug, Clone)]
struct NewtonSolve {
    /// Band LU on the pattern of the partition's `D` at any state.
    lu: BandLu,
    /// `M` with the state-independent `∂R/∂Y`: `(row, column, m, j)` adds `m + c j`.
    constant: Vec<(usize, usize, f64, f64)>,
    /// The slots whose tangent follows the state.
    slots: Vec<usize>,
    /// Their condensed initial stiffness (path-updated elements at rest).
    k0: Vec<Vec<f64>>,
    /// Iterations whose current-tangent matrix was singular (solved with `D` instead).
    singular: u64,
    /// Whether the converged solve iterates with this matrix (`nonlinear_solver = "newton"`);
    /// false when it is kept only for PG-α's current-tangent link operator.
    iterate: bool,
    /// Link operators built with this matrix, and those whose matrix was singular (the last
    /// operator kept).
    link_builds: u64,
    link_singular: u64,
    /// One column of the link operator (size of the partition's state).
    column: Vec<f64>,
    /// [`StateSpace::kernel_changes`] when `constant`, `slots` and the pattern were built.
    kernel_changes: u64,
}

impl NewtonSolve {
    /// The matrix's constant part, nonlinear slots and band storage for `st`. Allocates.
    fn new(st: &StateSpace, iterate: bool) -> Self {
        let n = st.n_dofs();
        let mut constant: Vec<(usize, usize, f64, f64)> = Vec::new();
        for i in 0..st.size() {
            if !(n..2 * n).contains(&i) {
                constant.push((i, i, 1.0, 0.0));
            }
        }
        for (i, j, m) in st.mass_entries().iter() {
            constant.push((n + i, n + j, m, 0.0));
        }
        for (i, j, v) in st.linear_tangent_entries() {
            constant.push((i, j, 0.0, v));
        }
        Self {
            lu: BandLu::new(st.size(), &st.tangent_pattern()),
            constant,
            slots: st.nonlinear_slots(),
            k0: st.path_initial_stiffness(),
            singular: 0,
            iterate,
            link_builds: 0,
            link_singular: 0,
            column: vec![0.0; st.size()],
            kernel_changes: st.kernel_changes(),
        }
    }
}

/// What the converged nonlinear solve of the numerical partitions did over a run (issue 17),
/// for `run.json`: how many steps it solved, how many of those reached the iteration bound
/// without meeting the tolerance, when the first of them ended, and the worst last correction
/// among them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NonlinearSolveReport {
    /// Steps solved by the converged path (substeps of a subcycled partition count singly).
    pub solves: u64,
    /// Corrections made, all steps.
    pub iterations: u64,
    /// Steps that reached `max_iterations` without meeting the tolerance (each keeps its last
    /// iterate and the run goes on).
    pub unconverged_steps: u64,
    /// End time of the first unconverged step.
    pub first_unconverged_time: Option<f64>,
    /// Worst residual of an unconverged step: the last correction `D⁻¹ r` (`r` the residual of
    /// the step's equations) relative to `Ẏ`, the largest over the blocks `u`, `v`, `s` — the
    /// quantity that `tolerance` bounds (0 when every step converged).
    pub worst_residual: f64,
    /// The tolerance of the solve.
    pub tolerance: f64,
    /// The iteration bound of the solve.
    pub max_iterations: usize,
    /// `nonlinear_solver = "newton"`: the factorizations of the current-tangent matrix
    /// (`None` without Newton's method).
    pub newton_factorizations: Option<u64>,
    /// `nonlinear_solver = "newton"`: iterations whose current-tangent matrix was singular and
    /// were solved with the initial-tangent `D` instead.
    pub newton_singular: u64,
    /// PG-α with `analysis.link_tangent = "current"`: link operators built with the current
    /// tangent (one per step), and those whose matrix was singular (the last operator kept).
    pub link_builds: u64,
    /// See `link_builds`.
    pub link_singular: u64,
}

impl NonlinearSolveReport {
    /// Combine the reports of two partitions.
    pub fn merge(&mut self, other: &NonlinearSolveReport) {
        self.solves += other.solves;
        self.iterations += other.iterations;
        self.unconverged_steps += other.unconverged_steps;
        self.first_unconverged_time =
            match (self.first_unconverged_time, other.first_unconverged_time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        self.worst_residual = self.worst_residual.max(other.worst_residual);
        self.tolerance = self.tolerance.max(other.tolerance);
        self.max_iterations = self.max_iterations.max(other.max_iterations);
        self.newton_factorizations = match (self.newton_factorizations, other.newton_factorizations)
        {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.newton_singular += other.newton_singular;
        self.link_builds += other.link_builds;
        self.link_singular += other.link_singular;
    }
}

impl AlphaStepper {
    /// A stepper of a 0-size partition (a placeholder). Allocation-free.
    pub fn empty(params: AlphaParameters) -> Self {
        Self {
            params,
            dt: 0.0,
            c: 0.0,
            corrections: 1,
            d_fact: StateMatrixFactors::empty(),
            y_tilde: DVector::zeros(0),
            v_tilde: DVector::zeros(0),
            load: DVector::zeros(0),
            res: DVector::zeros(0),
            rhs: DVector::zeros(0),
            tmp: DVector::zeros(0),
            y_iter: DVector::zeros(0),
            tolerance: None,
            max_iterations: 0,
            nonlinear: false,
            path_rows: Vec::new(),
            on_path: Vec::new(),
            unconverged: 0,
            iterations: 0,
            solves: 0,
            first_unconverged: None,
            worst_unconverged: 0.0,
            y_start: DVector::zeros(0),
            committed_rayleigh: false,
            newton: None,
            last_corrections: Vec::new(),
            last_len: 0,
            folded: None,
        }
    }

    /// Solve each step of a numerical partition with nonlinear elements to `tolerance`
    /// (relative increment of `Ẏ` per block), at most `max_iterations` corrections, with the
    /// exact path update of the elements that have one; `None` keeps the fixed number of
    /// corrections. Ignored for a physical partition (never iterated) and for a linear one.
    pub fn with_convergence(mut self, tolerance: Option<f64>, max_iterations: usize) -> Self {
        self.tolerance = tolerance;
        self.max_iterations = max_iterations.max(1);
        self.last_corrections = vec![0.0; self.max_iterations];
        self.with_workspaces()
    }

    /// Iterate the converged solve by Newton's method with the current tangent (issue 17,
    /// `analysis.nonlinear_solver = "newton"`) instead of the fixed `D`: every iteration
    /// solves with `M + c ∂R/∂Y` at the iterate — the consistent tangent of the path-updated
    /// hysteretic states (Simo & Taylor 1985), dual-number Jacobians of the other nonlinear
    /// elements ([`crate::assembly::StateSpace::add_current_tangent`]) — assembled and
    /// factored in place on storage allocated here ([`BandLu`]). Only a numerical partition
    /// with nonlinear elements under the converged solve takes it; a physical partition is
    /// never iterated. The predictor of each step still solves with `D`.
    pub fn with_newton(mut self, part: &Partition, newton: bool) -> Self {
        if !newton || part.physical.is_some() || !self.nonlinear || self.tolerance.is_none() {
            return self;
        }
        self.newton = Some(Box::new(NewtonSolve::new(&part.state, true)));
        self
    }

    /// After [`StateSpace::set_element_parameter`] moved a linear element to the generic path
    /// (online model updating; [`crate::integrators::TimeIntegrator::set_element_parameter`]),
    /// rebuild Newton's constant part, nonlinear slots and band storage, so that the element's
    /// new parameters enter the current tangent (its tangent then follows the element through
    /// the dual numbers, later changes need nothing). Keeps the singular and link counts (the
    /// count of factorizations restarts). Allocates once per
    /// element moved, as the move itself does; nothing when nothing moved.
    fn refresh_newton(&mut self, part: &Partition) {
        let Some(newton) = self.newton.as_deref_mut() else {
            return;
        };
        if newton.kernel_changes == part.state.kernel_changes() {
            return;
        }
        let mut fresh = NewtonSolve::new(&part.state, newton.iterate);
        fresh.singular = newton.singular;
        fresh.link_builds = newton.link_builds;
        fresh.link_singular = newton.link_singular;
        *newton = fresh;
    }

    /// Keep the current-tangent matrix of [`AlphaStepper::with_newton`] for PG-α's link
    /// operator ([`AlphaStepper::current_link_operator`], `analysis.link_tangent = "current"`,
    /// issue 17) even when the converged solve iterates with the fixed `D`. Only a numerical
    /// partition with nonlinear elements under the converged solve takes it. Allocates.
    pub fn with_current_link(mut self, part: &Partition, current: bool) -> Self {
        if !current || self.newton.is_some() {
            return self;
        }
        self = self.with_newton(part, true);
        if let Some(newton) = self.newton.as_deref_mut() {
            newton.iterate = false;
        }
        self
    }

    /// Whether the converged solve iterates by Newton's method ([`AlphaStepper::with_newton`]).
    pub fn is_newton(&self) -> bool {
        self.newton.as_deref().is_some_and(|n| n.iterate)
    }

    /// Whether this stepper can build a current-tangent link operator
    /// ([`AlphaStepper::current_link_operator`]).
    pub fn has_current_link(&self) -> bool {
        self.newton.is_some()
    }

    /// Newton's factorizations so far (iterations whose matrix equalled the one factored last
    /// reuse its factors, and the current-tangent link operators count theirs) and iterations
    /// with a singular matrix (solved with `D`); `None` without Newton's method.
    pub fn newton_factorizations(&self) -> Option<(u64, u64)> {
        self.newton
            .as_deref()
            .filter(|n| n.iterate)
            .map(|n| (n.lu.factorizations(), n.singular))
    }

    /// The link operator of a numerical partition (one step, no subcycles) with the current
    /// tangent: `ℚ_Ẏ = D_t⁻¹ 𝕃`, `ℚ_V = (α_f/α_m) ℚ_Ẏ`, `ℚ_Y = c ℚ_Ẏ` (Abbiati et al. 2019,
    /// eqs 32–33 with `ss = 1`), where `D_t = M + c ∂R/∂Y` is Newton's matrix at the free end
    /// state `y` of the step from `y_start` ([`crate::assembly::StateSpace::add_current_tangent`]:
    /// the consistent tangent of the path-updated states, the committed or current tangent of
    /// Rayleigh damping `β K_t v`). The link update then corrects the velocity with the
    /// damping the partition's residual applies, rather than with `β K_0`. One column per
    /// coupling of `couplings` (the others stay zero); false, with the operator untouched,
    /// without the matrix or when it is singular. Allocation-free.
    #[allow(clippy::too_many_arguments)]
    pub fn current_link_operator(
        &mut self,
        part: &mut Partition,
        y_start: &[f64],
        y: &[f64],
        couplings: &[Coupling],
        q_y: &mut DMatrix<f64>,
        q_ydot: &mut DMatrix<f64>,
        q_v: &mut DMatrix<f64>,
    ) -> bool {
        let Some(newton) = self.newton.as_deref_mut() else {
            return false;
        };
        let (c, w) = (self.c, self.params.alpha_f / self.params.alpha_m);
        let gdt = self.params.gamma * self.dt;
        let n = part.state.n_dofs();
        let NewtonSolve {
            lu,
            constant,
            slots,
            k0,
            link_builds,
            link_singular,
            column,
            ..
        } = newton;
        lu.clear();
        for &(i, j, m, v) in constant.iter() {
            lu.add(i, j, m + c * v);
        }
        part.state
            .add_current_tangent(slots, y_start, y, k0, &mut part.ws, &mut |i, j, v| {
                lu.add(i, j, c * v)
            });
        *link_builds += 1;
        if !lu.factor() {
            *link_singular += 1;
            return false;
        }
        for cp in couplings {
            column.fill(0.0);
            column[n + cp.row] = cp.sign;
            lu.solve(column);
            for (i, &x) in column.iter().enumerate() {
                let v = w * x;
                q_ydot[(i, cp.lambda)] = x;
                q_v[(i, cp.lambda)] = v;
                q_y[(i, cp.lambda)] = gdt * v;
            }
        }
        true
    }

    /// The corrections of the last step of the converged solve, one per iteration: the
    /// largest over the blocks `u`, `v`, `s` of the correction of `Ẏ` relative to `Ẏ` (the
    /// quantity the tolerance bounds). Empty before the first such step.
    pub fn last_corrections(&self) -> &[f64] {
        &self.last_corrections[..self.last_len]
    }

    /// Steps whose converged solve reached `max_iterations` without meeting the tolerance.
    pub fn unconverged_steps(&self) -> u64 {
        self.unconverged
    }

    /// Corrections made by the converged solve so far (all steps).
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// Whether this partition's steps are solved to convergence: a numerical partition with
    /// nonlinear elements and a tolerance.
    pub fn solves_to_convergence(&self) -> bool {
        self.tolerance.is_some() && self.nonlinear
    }

    /// Whether row `row` of `Y` is set by an exact path update in the converged solve.
    pub fn is_path_row(&self, row: usize) -> bool {
        self.on_path.get(row).copied().unwrap_or(false)
    }

    /// The report of the converged solve, if this stepper takes it (a numerical partition with
    /// nonlinear elements and a tolerance); `None` otherwise.
    pub fn nonlinear_report(&self) -> Option<NonlinearSolveReport> {
        let tolerance = self.tolerance?;
        self.nonlinear.then_some(NonlinearSolveReport {
            solves: self.solves,
            iterations: self.iterations,
            unconverged_steps: self.unconverged,
            first_unconverged_time: self.first_unconverged,
            worst_residual: self.worst_unconverged,
            tolerance,
            max_iterations: self.max_iterations,
            newton_factorizations: self.newton_factorizations().map(|(f, _)| f),
            newton_singular: self.newton_factorizations().map_or(0, |(_, s)| s),
            link_builds: self.newton.as_deref().map_or(0, |n| n.link_builds),
            link_singular: self.newton.as_deref().map_or(0, |n| n.link_singular),
        })
    }

    /// Factorize `D = M + c J0` of `part` for step `dt`.
    pub fn new(
        part: &Partition,
        params: AlphaParameters,
        dt: f64,
        corrections: usize,
    ) -> Result<Self, String> {
        let d_fact = Self::factor(&part.state, params, dt)?;
        Self::with_factors(part, params, dt, corrections, d_fact)
    }

    /// [`AlphaStepper::new`] for a partition whose `J0` nothing reads once `D` is factored
    /// (MG-α's): `J0` is freed ([`StateSpace::release_j0`]) as `D = M + c J0` is formed, in
    /// `J0`'s own arrays ([`StateSpace::d_rows_releasing_j0`]: the two never stand together),
    /// before the effective matrix is formed from `D` and factored, so that the
    /// start-up's peak does not hold `J0` beside `D`, the effective matrix and its factor
    /// (issue 20: memory a DOF). When the steps will fold the coupling product `B b_u` into
    /// the residual — a linear numerical partition stepped once per step, without committed
    /// tangents, whose `D` goes through the effective matrix and whose residual is one fused
    /// Rayleigh pass matching `B` (checked on `D`'s rows, [`StateSpace::folds_coupling_rows`])
    /// — `B` is not kept either ([`StateMatrixFactors::from_rows_without_coupling`]): the
    /// factors [`AlphaStepper::release_coupling`] would leave. The same factors and steps;
    /// whatever reads `J0` or `B` later forms them again.
    pub fn new_freeing_j0(
        part: &mut Partition,
        params: AlphaParameters,
        dt: f64,
        corrections: usize,
    ) -> Result<Self, String> {
        let c = params.c(dt);
        let d = part.state.d_rows_releasing_j0(c);
        let st = &part.state;
        let n = st.n_dofs();
        let folds = corrections <= 1
            && part.physical.is_none()
            && !st.has_nonlinear_elements()
            && !st.has_committed_rayleigh()
            && st.folds_coupling_rows(c, |r| {
                let (cols, vals) = d.row(n + r);
                let k = cols.partition_point(|&j| (j as usize) < n);
                (&cols[..k], &vals[..k])
            });
        if !folds {
            let d_fact = Self::factor_rows(st, d, dt)?;
            return Self::with_factors(part, params, dt, corrections, d_fact);
        }
        let d_fact = StateMatrixFactors::from_rows_without_coupling(n, d)
            .ok_or_else(|| Self::singular(st, dt))?;
        let reduced = d_fact.is_reduced();
        let mut stepper = Self::with_factors(part, params, dt, corrections, d_fact)?;
        // Folded only through the effective matrix (`D` factored whole has no `B`).
        stepper.folded = reduced.then(|| part.state.plan_version());
        Ok(stepper)
    }

    /// The error of a singular `D` of `state` for step `dt`.
    fn singular(state: &StateSpace, dt: f64) -> String {
        format!(
            "substructure `{}`: D = M + c·J0 is singular for Δt = {dt}",
            state.name
        )
    }

    /// The stepper of `part` with the factors `d_fact` of its `D` for step `dt`.
    fn with_factors(
        part: &Partition,
        params: AlphaParameters,
        dt: f64,
        corrections: usize,
        d_fact: StateMatrixFactors,
    ) -> Result<Self, String> {
        let st = &part.state;
        let c = params.c(dt);
        let folded = Self::fold(part, &d_fact, c);
        let n = st.size();
        if part.physical.is_some() && corrections > 1 {
            return Err(format!(
                "substructure `{}` is physical: it cannot be corrected (a specimen cannot be reverted)",
                st.name
            ));
        }
        let path_rows = if part.physical.is_none() {
            st.path_update_rows()
        } else {
            Vec::new()
        };
        Ok(Self {
            params,
            dt,
            c,
            corrections: corrections.max(1),
            d_fact,
            y_tilde: DVector::zeros(0),
            v_tilde: DVector::zeros(0),
            load: DVector::zeros(n),
            res: DVector::zeros(0),
            rhs: DVector::zeros(0),
            tmp: DVector::zeros(0),
            y_iter: DVector::zeros(0),
            tolerance: None,
            max_iterations: 20,
            nonlinear: part.physical.is_none() && st.has_nonlinear_elements(),
            path_rows,
            on_path: Vec::new(),
            unconverged: 0,
            iterations: 0,
            solves: 0,
            first_unconverged: None,
            worst_unconverged: 0.0,
            y_start: DVector::zeros(0),
            committed_rayleigh: st.has_committed_rayleigh(),
            newton: None,
            last_corrections: vec![0.0; 20],
            last_len: 0,
            folded,
        }
        .with_workspaces())
    }

    /// Whether a step goes past the one solve of the rate: fixed corrections, or the
    /// converged solve of a numerical partition with nonlinear elements.
    fn iterates(&self) -> bool {
        self.corrections > 1 || self.solves_to_convergence()
    }

    /// Size the workspaces for the paths this stepper's steps take (issue 20: memory a DOF).
    /// Every stepper keeps the load `F`. One that [`AlphaStepper::iterates`] keeps `Ỹ`, `Ṽ`, the
    /// residual, the correction's right-hand side, `M Ẏ` and the iterate `Y`; the others keep
    /// `Ỹ` and `Ṽ` in the end state and write the residual there (six state vectors fewer).
    /// The converged solve adds the mask of the path-updated rows, and its re-projection after
    /// a link correction ([`AlphaStepper::reprojects`]) the start state `Y_n`. Allocates
    /// (construction only).
    fn with_workspaces(mut self) -> Self {
        let size = self.load.len();
        let sized = |v: &mut DVector<f64>, on: bool| {
            let want = if on { size } else { 0 };
            if v.len() != want {
                *v = DVector::zeros(want);
            }
        };
        let iterates = self.iterates();
        for v in [
            &mut self.y_tilde,
            &mut self.v_tilde,
            &mut self.res,
            &mut self.rhs,
            &mut self.tmp,
            &mut self.y_iter,
        ] {
            sized(v, iterates);
        }
        let reprojects = self.reprojects();
        sized(&mut self.y_start, reprojects);
        self.on_path = if self.solves_to_convergence() {
            let mut mask = vec![false; size];
            for &r in &self.path_rows {
                mask[r] = true;
            }
            mask
        } else {
            Vec::new()
        };
        self
    }

    /// The heap bytes of the stepper's workspaces (issue 20: memory a DOF): its vectors of the
    /// state's size (the load `F`, and the iterating paths' `Ỹ`, `Ṽ`, residual, right-hand
    /// side, `M Ẏ`, iterate and start state), the mask of path-updated rows and the record of
    /// corrections; not the factors of `D` nor Newton's matrix.
    pub fn workspace_bytes(&self) -> usize {
        let vectors = [
            &self.y_tilde,
            &self.v_tilde,
            &self.load,
            &self.res,
            &self.rhs,
            &self.tmp,
            &self.y_iter,
            &self.y_start,
        ];
        let values: usize = vectors.iter().map(|v| v.len()).sum();
        8 * (values + self.last_corrections.capacity() + self.path_rows.capacity())
            + self.on_path.capacity()
    }

    /// Solve the effective matrix of a large linear numerical partition on two cores when
    /// `threads ≥ 2`: `D` re-factored with its effective matrix in two parts and a separator,
    /// part B's sweeps on a worker thread ([`StateMatrixFactors::from_rows_on_two_cores`]).
    /// Only where the step folds its coupling product (a linear partition with Rayleigh
    /// damping, one fixed-`D` pass: the step whose time is the sweeps) and the factor in two
    /// parts exists; otherwise the stepper is unchanged ([`StateMatrixFactors::parts`] tells).
    /// The results equal the one-core step's to round-off. Allocates (the factorization).
    pub fn with_threads(mut self, part: &Partition, threads: usize) -> Result<Self, String> {
        if threads < 2 || self.corrections != 1 || self.nonlinear || !self.folds(part) {
            return Ok(self);
        }
        let st = &part.state;
        let d = st.d_rows(self.c);
        let two = StateMatrixFactors::from_rows_on_two_cores(st.n_dofs(), d).ok_or_else(|| {
            format!(
                "substructure `{}`: D = M + c·J0 is singular for Δt = {}",
                st.name, self.dt
            )
        })?;
        if two.parts().is_some() {
            self.folded = Self::fold(part, &two, self.c);
            self.d_fact = two;
        }
        Ok(self)
    }

    /// The plan version for which the step folds `B b_u` into the residual: a numerical
    /// partition without committed tangents whose `D` goes through the effective matrix and
    /// whose residual is one fused Rayleigh pass matching `B` ([`StateSpace::folds_coupling`]).
    fn fold(part: &Partition, d_fact: &StateMatrixFactors, c: f64) -> Option<u64> {
        let st = &part.state;
        if part.physical.is_some() || st.has_committed_rayleigh() {
            return None;
        }
        let (b_start, b_cols, b_vals) = d_fact.coupling()?;
        st.folds_coupling(c, b_start, b_cols, b_vals)
            .then(|| st.plan_version())
    }

    /// Whether this step folds `B b_u` into the residual (see the `folded` field).
    fn folds(&self, part: &Partition) -> bool {
        part.physical.is_none() && self.folded == Some(part.state.plan_version())
    }

    /// The factorization of `D = M + c J0` of `state` for step `dt` (Abbiati et al. 2019,
    /// eq 13: `c = γΔt α_f/α_m`), as [`AlphaStepper::new`] makes it. Allocates.
    pub fn factor(
        state: &StateSpace,
        params: AlphaParameters,
        dt: f64,
    ) -> Result<StateMatrixFactors, String> {
        Self::factor_rows(state, state.d_rows(params.c(dt)), dt)
    }

    /// The factorization of `d`, the `D` of `state` for step `dt`. Allocates.
    fn factor_rows(
        state: &StateSpace,
        d: crate::linalg::CompressedRows,
        dt: f64,
    ) -> Result<StateMatrixFactors, String> {
        StateMatrixFactors::from_rows(state.n_dofs(), d).ok_or_else(|| Self::singular(state, dt))
    }

    /// Exchange the factorization of `D` with `d` (a refactorization built off the real-time
    /// path, [`crate::integrators::Refactorizer`]); `d` then holds the old one. Moves only:
    /// no allocation, nothing freed.
    pub fn swap_factorization(&mut self, d: &mut StateMatrixFactors) {
        std::mem::swap(&mut self.d_fact, d);
        // The new `D` need not be `M + c J0` of the residual's `K`: solve it whole.
        self.folded = None;
    }

    /// Free `B` of the factors of `D` (issue 20: memory a DOF) when no step of this stepper
    /// reads it: a numerical partition stepped once per step (no corrections, no converged
    /// solve) whose coupling product is folded into the residual — its steps solve with
    /// [`StateMatrixFactors::solve_folded`] — as long as the residual's plan is the one
    /// folded. The owner must call [`AlphaStepper::restore_coupling`] before anything that
    /// changes the plan ([`StateSpace::set_element_parameter`]) or solves with `D` otherwise
    /// ([`AlphaStepper::solve_d`], [`AlphaStepper::factorization`]'s `solve`). Whether `B`
    /// was freed. Frees only.
    pub fn release_coupling(&mut self, part: &Partition) -> bool {
        if self.iterates() || !self.folds(part) {
            return false;
        }
        self.d_fact.release_coupling()
    }

    /// Build `B` again (after [`AlphaStepper::release_coupling`]) from `state`, the partition
    /// whose `D` the factors hold, as long as its elements are those factored (before
    /// [`StateSpace::set_element_parameter`] changes one): `D = M + c J0` is formed again and
    /// its coupling rows kept, the entries [`AlphaStepper::new`] had. Nothing when `B` is
    /// held. Allocates (`D` for a moment).
    pub fn restore_coupling(&mut self, state: &StateSpace) {
        if self.d_fact.coupling_released() {
            let d = state.d_rows(self.c);
            self.d_fact.restore_coupling(&d);
        }
    }

    /// Whether a linear correction of this partition's end state must be followed by
    /// [`AlphaStepper::reproject`]: a numerical partition with path-updated states under the
    /// converged solve.
    pub fn reprojects(&self) -> bool {
        self.nonlinear && self.tolerance.is_some() && !self.path_rows.is_empty()
    }

    /// Keep `Y_n` (the state the step started from) for [`AlphaStepper::reproject`].
    /// Allocation-free.
    pub fn keep_start(&mut self, y: &DVector<f64>) {
        if self.reprojects() {
            self.y_start.copy_from(y);
        }
    }

    /// After a linear correction of the step's end state `to` (PG-α's link update
    /// `𝕐 = 𝕐^free + ℚ Λ`, whose operator is built with the initial tangent), put the
    /// path-updated states back on their laws: their values along the straight path from the
    /// kept `Y_n` ([`AlphaStepper::keep_start`]) to the corrected displacements (the return
    /// mapping of the converged solve), with `Ẏ` and `V` of those rows consistent with them
    /// (eq 13). Without it the elastic correction carries the force of a yielded bilinear
    /// bearing past its yield bound (issue 17). Nothing for other partitions. Allocation-free.
    pub fn reproject(&mut self, part: &mut Partition, to: &mut AlphaState) {
        if !self.reprojects() {
            return;
        }
        part.state
            .path_update(self.y_start.as_slice(), to.y.as_mut_slice(), &mut part.ws);
        let w = self.params.alpha_f / self.params.alpha_m;
        for &r in &self.path_rows {
            to.ydot[r] = (to.y[r] - self.y_tilde[r]) / self.c;
            to.v[r] = self.v_tilde[r] + w * to.ydot[r];
        }
    }

    /// The factorization of `D` the steps use.
    pub fn factorization(&self) -> &StateMatrixFactors {
        &self.d_fact
    }

    /// [`StateMatrixFactors::solve_on_one_thread`] of the factors the steps use (tests).
    #[doc(hidden)]
    pub fn solve_on_one_thread(&mut self) {
        self.d_fact.solve_on_one_thread();
    }

    /// Solve `D x = b` in place.
    pub fn solve_d(&self, x: &mut DVector<f64>) {
        self.d_fact.solve(x.as_mut_slice());
    }

    /// Step `from` (at `t_next − dt`) to `to` (at `t_next`). `coupling` adds `w L Λ` to the
    /// momentum rows. The port of a physical partition is commanded once, at `Ỹ`, with the
    /// tick of `t_next`; the corrections evaluate the computed elements only.
    pub fn step(
        &mut self,
        part: &mut Partition,
        from: &AlphaState,
        t_next: f64,
        coupling: Option<(&[Coupling], &DVector<f64>, f64)>,
        to: &mut AlphaState,
    ) -> Result<(), PortError> {
        self.step_from(part, Some(from), t_next, coupling, to)
    }

    /// Whether this stepper can step a state of `part` in place
    /// ([`AlphaStepper::step_in_place`]): a numerical partition (no specimen to command) with
    /// linear elements, stepped by one solve of the rate (no corrections, no converged solve),
    /// without committed tangents. None of these changes after construction (a parameter
    /// change or a refactorization may only change whether the step folds its coupling
    /// product, and both kinds of step run in place).
    pub fn steps_in_place(&self, part: &Partition) -> bool {
        part.physical.is_none()
            && !self.iterates()
            && self.corrections == 1
            && !self.nonlinear
            && !self.committed_rayleigh
            && self.load.len() == part.state.size()
    }

    /// Step `state` from `t_next − dt` to `t_next` in place, without a second state (issue
    /// 20: memory a DOF; MG-α's linear steps): the same values, by the same operations, as
    /// [`AlphaStepper::step`] from a copy of `state` into `state` — each row of the start is
    /// read before the predictor overwrites it with `Ỹ` and `Ṽ` (`Ẏ`'s momentum rows before
    /// the rate's right-hand side overwrites them), and the corrector adds `c Ẏ` and
    /// `(α_f/α_m) Ẏ` to them (eq 13). Only where [`AlphaStepper::steps_in_place`]; otherwise an
    /// error, with nothing done.
    ///
    /// A step that fails leaves `state` part-written: the only failures of these steps are a
    /// non-finite value (found by the caller's check of the result: the run ends) and the
    /// solver's worker thread panicking (`threads = 2`), neither of which a run survives;
    /// nothing reads the state of a failed step of a partition without a laboratory (the
    /// runner makes no row of it, [`crate::runner::run`]). A step that can fail and go on (a
    /// physical partition, the converged solve) steps from one state to another instead.
    /// Allocation-free.
    pub fn step_in_place(
        &mut self,
        part: &mut Partition,
        state: &mut AlphaState,
        t_next: f64,
    ) -> Result<(), PortError> {
        if !self.steps_in_place(part) {
            return Err(Self::not_in_place(part));
        }
        self.step_from(part, None, t_next, None, state)
    }

    /// The error of [`AlphaStepper::step_in_place`] for a partition it cannot step in place.
    #[cold]
    fn not_in_place(part: &Partition) -> PortError {
        PortError::Fault(format!(
            "substructure `{}`: this partition's step cannot run in place",
            part.state.name
        ))
    }

    /// [`AlphaStepper::step`] from `from`, or in place from `to` itself when `from` is
    /// `None` (only where [`AlphaStepper::steps_in_place`]: the caller checks).
    fn step_from(
        &mut self,
        part: &mut Partition,
        from: Option<&AlphaState>,
        t_next: f64,
        coupling: Option<(&[Coupling], &DVector<f64>, f64)>,
        to: &mut AlphaState,
    ) -> Result<(), PortError> {
        let p = self.params;
        let dt = self.dt;
        let am = p.alpha_m;
        let af = p.alpha_f;
        let g = p.gamma;
        let n = part.state.n_dofs();
        self.refresh_newton(part);
        if self.committed_rayleigh {
            // The committed tangent of Rayleigh damping, frozen over the step (issue 17).
            let y_start = from.map_or(to.y.as_slice(), |from| from.y.as_slice());
            part.state.commit_tangent_rayleigh(y_start, &mut part.ws);
        }
        // Predictor (eq 11), one fused pass (the same operations as copy + axpy + axpy).
        let (ky, kv) = (g * dt * (1.0 - af) / am, dt * (am - g) / am);
        let (wy, wv) = ((1.0 - af) / am, -(1.0 - am) / am);
        // A stepper that takes neither corrections nor the converged solve keeps `Ỹ` and `Ṽ`
        // in `to.y` and `to.v` (the corrector then adds `c Ẏ` and `(α_f/α_m) Ẏ` in place: the
        // same operations), the others in its own workspaces, which the corrections read.
        let in_place = !self.iterates();
        debug_assert!(from.is_some() || in_place);
        // The same on two cores: each pass over the rows in two halves, one on the solver's
        // worker next to its part of the solve (the same bits as the one-thread passes).
        let step = FoldedStep {
            ky,
            kv,
            wy,
            wv,
            c: self.c,
        };
        if in_place
            && self.corrections == 1
            && !self.nonlinear
            && self.folds(part)
            && self.d_fact.two_cores().is_some()
        {
            if let Some(done) = self.step_on_two_cores(part, from, t_next, coupling, step, to) {
                return done;
            }
        }
        let AlphaState { y, ydot, v } = &mut *to;
        // A folded linear partition stepped once: the predictor, the residual and the rate's
        // right-hand side in two passes over the rows, the reduced solve, then `x₁ = b₁ − A x₂`
        // and the corrector in one pass (the same operations as below, the same bits).
        // In place, only where the reduced solve follows for certain (a `D` factored whole
        // would send the step on below after the predictor has overwritten the start).
        if self.corrections == 1
            && !self.nonlinear
            && self.folds(part)
            && (from.is_some() || self.d_fact.is_reduced())
        {
            part.state.load(t_next, self.load.as_mut_slice());
            self.add_coupling_load(n, coupling);
            let tilde = if in_place {
                (y.as_mut_slice(), v.as_mut_slice())
            } else {
                (self.y_tilde.as_mut_slice(), self.v_tilde.as_mut_slice())
            };
            let predicted = match from {
                Some(from) => part.state.folded_predictor_rate(
                    step,
                    (from.y.as_slice(), from.ydot.as_slice(), from.v.as_slice()),
                    tilde,
                    self.load.as_slice(),
                    ydot.as_mut_slice(),
                    &mut part.ws,
                ),
                // In place: `Ỹ` and `Ṽ` over `Y` and `V` (`tilde` is `y` and `v` here).
                None => part.state.folded_predictor_rate_in_place(
                    step,
                    (tilde.0, ydot.as_mut_slice(), tilde.1),
                    self.load.as_slice(),
                    &mut part.ws,
                ),
            };
            if predicted {
                if let Some(a) = self.d_fact.solve_folded_velocities(ydot.as_mut_slice()) {
                    if self.d_fact.has_failed() {
                        return Err(Self::solver_failed(part));
                    }
                    let (c, w) = (self.c, self.params.alpha_f / self.params.alpha_m);
                    let (y, v, ydot) = (y.as_mut_slice(), v.as_mut_slice(), ydot.as_mut_slice());
                    if in_place {
                        Self::correct_folded_in_place(c, w, a, y, v, ydot);
                    } else {
                        let tilde = (self.y_tilde.as_slice(), self.v_tilde.as_slice());
                        Self::correct_folded(c, w, a, tilde, y, v, ydot);
                    }
                    return Ok(());
                }
            }
        }
        // Rate (eq 12): the load first (`add_coupling_load` borrows the whole stepper).
        part.state.load(t_next, self.load.as_mut_slice());
        self.add_coupling_load(n, coupling);
        let folded = self.folds(part);
        let (yt, vt) = if in_place {
            (y.as_mut_slice(), v.as_mut_slice())
        } else {
            (self.y_tilde.as_mut_slice(), self.v_tilde.as_mut_slice())
        };
        match from {
            Some(from) => {
                for ((((yt, vt), y), yd), v) in yt
                    .iter_mut()
                    .zip(vt.iter_mut())
                    .zip(from.y.as_slice())
                    .zip(from.ydot.as_slice())
                    .zip(from.v.as_slice())
                {
                    *yt = (y + ky * yd) + kv * v;
                    *vt = yd * wy + wv * v;
                }
            }
            // In place (`yt`, `vt` are `Y`, `V`): each row read before it is overwritten; `Ẏ`
            // is read here and overwritten by the residual below.
            None => {
                for ((yt, vt), yd) in yt.iter_mut().zip(vt.iter_mut()).zip(ydot.as_slice()) {
                    let (y, v) = (*yt, *vt);
                    *yt = (y + ky * yd) + kv * v;
                    *vt = yd * wy + wv * v;
                }
            }
        }
        // `R(Ỹ)` is written into `to.ydot`, then `Ẏ = F − R` in place (the same values as
        // through a separate residual vector, one vector fewer).
        // `B b_u` of `D⁻¹` (`b_u = ṽ`) folded into the residual where it is `c K ṽ` of the
        // fused Rayleigh pass: `K (ũ + (β + c) ṽ)`, one sparse product instead of two.
        let res = ydot.as_mut_slice();
        if folded {
            part.residual_folded(yt, self.c, res);
        } else {
            part.residual(yt, res);
        }
        // The one command of this tick: the specimen at the predictor.
        if let Some(port) = part.physical.as_mut() {
            let tick = port.tick(t_next);
            let force = port.command(tick, yt)?;
            for (r, f) in res[n..2 * n].iter_mut().zip(force) {
                *r += f;
            }
        }
        for (d, l) in res.iter_mut().zip(self.load.as_slice()) {
            *d = l - *d;
        }
        if folded {
            self.d_fact.solve_folded(res);
        } else {
            self.d_fact.solve(res);
        }
        if in_place {
            let (c, w) = (self.c, self.params.alpha_f / self.params.alpha_m);
            for ((y, v), yd) in y
                .as_mut_slice()
                .iter_mut()
                .zip(v.as_mut_slice())
                .zip(ydot.as_slice())
            {
                *y += c * yd;
                *v += w * yd;
            }
            return Ok(());
        }
        if self.d_fact.has_failed() {
            return Err(Self::solver_failed(part));
        }
        // Only a stepper that keeps `Ỹ` and `Ṽ` in the end state steps in place.
        let Some(from) = from else {
            return Err(Self::not_in_place(part));
        };
        if self.nonlinear && part.physical.is_none() {
            if let Some(tol) = self.tolerance {
                self.converge(part, from, tol, t_next, to);
                return self.correct(to);
            }
        }
        // Further fixed-D corrections (numerical partitions only).
        for _ in 1..self.corrections {
            self.y_iter.copy_from(&self.y_tilde);
            self.y_iter.axpy(self.c, &to.ydot, 1.0);
            self.correction_rhs(part, &to.ydot);
            self.d_fact.solve(self.rhs.as_mut_slice());
            to.ydot += &self.rhs;
        }
        self.correct(to)
    }

    /// The folded step of a linear partition stepped once ([`AlphaStepper::step`]'s first
    /// path) with the effective matrix in two parts solved on two cores
    /// ([`StateMatrixFactors::two_cores`]), `Ỹ` and `Ṽ` kept in `to`: the passes over the
    /// rows in halves, the stepping thread's half next to part A of the solve and the
    /// worker's next to part B ([`crate::linalg::TwoPartFactors::join`]), three hand-overs a
    /// step —
    ///
    /// 1. the predictor, `w` and the rows `u̇ = v` ([`crate::assembly::FoldedRows::predictor`])
    ///    of the DOFs `0 .. s₁` | `s₁ .. n`;
    /// 2. the momentum rows' gather ([`crate::assembly::FoldedRows::gather`]) of the rows
    ///    `0 .. s₁` then part A's forward sweep | the rows `s₁ .. n` then part B's;
    ///
    /// then the separator's solve on this thread, and
    ///
    /// 3. part A's backward sweep then the corrector of the DOFs `0 .. s₁` | part B's and the
    ///    DOFs `s₁ .. n`.
    ///
    /// Every value is computed by the operations of the one-thread path, whichever thread
    /// runs it: the same bits. `from` `None`: in place from `to` (the predictor by
    /// [`crate::assembly::FoldedRows::predictor_in_place`]). `None`, with nothing done, when
    /// the partition's passes or workspaces do not fit (then the one-thread path runs).
    /// Allocation-free, lock-free.
    fn step_on_two_cores(
        &mut self,
        part: &mut Partition,
        from: Option<&AlphaState>,
        t_next: f64,
        coupling: Option<(&[Coupling], &DVector<f64>, f64)>,
        step: FoldedStep,
        to: &mut AlphaState,
    ) -> Option<Result<(), PortError>> {
        let n = part.state.n_dofs();
        let size = 2 * n;
        let fits = part.state.folded_rows().is_some()
            && part.ws.folded_weights().len() == n
            && self.load.len() == size
            && [&to.y, &to.ydot, &to.v]
                .into_iter()
                .chain(from.into_iter().flat_map(|f| [&f.y, &f.ydot, &f.v]))
                .all(|v| v.len() == size);
        if !fits {
            return None;
        }
        part.state.load(t_next, self.load.as_mut_slice());
        self.add_coupling_load(n, coupling);
        let (two, a) = self.d_fact.two_cores()?;
        let rows = part.state.folded_rows()?;
        let weights = part.ws.folded_weights();
        let (s0, s1) = two.bounds();
        let m = s1 - s0;
        debug_assert!(m <= MAX_SEPARATOR && s1 <= n);
        let load = self.load.as_slice();
        let (c, wc) = (self.c, self.params.alpha_f / self.params.alpha_m);
        let AlphaState { y, ydot, v } = to;
        let (y, v, ydot) = (y.as_mut_slice(), v.as_mut_slice(), ydot.as_mut_slice());
        // 1. The predictor by DOF.
        let ok = match from {
            Some(from) => {
                let start = (from.y.as_slice(), from.ydot.as_slice(), from.v.as_slice());
                let (first, second) = FoldedPredictor::halves(y, v, ydot, weights, s1);
                two.join(
                    || rows.predictor(step, 0, start, load, first),
                    || rows.predictor(step, s1, start, load, second),
                )
            }
            None => {
                let (first, second) = FoldedInPlace::halves(y, v, ydot, weights, s1);
                two.join(
                    || rows.predictor_in_place(step, 0, load, first),
                    || rows.predictor_in_place(step, s1, load, second),
                )
            }
        };
        let (du, dv) = ydot.split_at_mut(n);
        let (head, xb) = dv.split_at_mut(s1);
        let mut ta = [0.0f64; MAX_SEPARATOR];
        let mut tb = [0.0f64; MAX_SEPARATOR];
        let (ta, tb) = (&mut ta[..m], &mut tb[..m]);
        // 2. The momentum rows' gather and the forward sweeps.
        let ok = ok && {
            let (w, y_tilde) = (&*weights, &*y);
            two.join(
                || {
                    rows.gather(0, w, y_tilde, load, head);
                    two.forward_a(&mut head[..s0], ta);
                },
                || {
                    rows.gather(s1, w, y_tilde, load, xb);
                    two.forward_b(xb, tb);
                },
            )
        };
        if !ok {
            return Some(Err(Self::solver_failed(part)));
        }
        let (xa, xs) = head.split_at_mut(s0);
        two.separator(xs, ta, tb);
        // 3. The backward sweeps and the corrector by DOF.
        let xs = &*xs;
        let (yu, yv) = y.split_at_mut(n);
        let (vu, vv) = v.split_at_mut(n);
        let ((yu0, yu1), (yv0, yv1)) = (yu.split_at_mut(s1), yv.split_at_mut(s1));
        let ((vu0, vu1), (vv0, vv1)) = (vu.split_at_mut(s1), vv.split_at_mut(s1));
        let (du0, du1) = du.split_at_mut(s1);
        let (a0, a1) = a.split_at(s1);
        let ok = two.join(
            || {
                two.backward_a(xa, xs);
                let ((yua, yus), (yva, yvs)) = (yu0.split_at_mut(s0), yv0.split_at_mut(s0));
                let ((vua, vus), (vva, vvs)) = (vu0.split_at_mut(s0), vv0.split_at_mut(s0));
                let (dua, dus) = du0.split_at_mut(s0);
                let (aa, as_) = a0.split_at(s0);
                Self::correct_folded_dofs(c, wc, aa, (yua, yva), (vua, vva), dua, xa);
                Self::correct_folded_dofs(c, wc, as_, (yus, yvs), (vus, vvs), dus, xs);
            },
            || {
                two.backward_b(xb, xs);
                Self::correct_folded_dofs(c, wc, a1, (yu1, yv1), (vu1, vv1), du1, xb);
            },
        );
        if !ok {
            return Some(Err(Self::solver_failed(part)));
        }
        Some(Ok(()))
    }

    /// The error of a step whose solve's worker thread failed.
    #[cold]
    fn solver_failed(part: &Partition) -> PortError {
        PortError::Fault(format!(
            "substructure `{}`: the solver's worker thread (`threads = 2`) panicked; the step \
             cannot be solved",
            part.state.name
        ))
    }

    /// The right-hand side of a correction, `F + LΛw − R(Y) − M Ẏ` with `Y` in `y_iter`,
    /// into `rhs`.
    fn correction_rhs(&mut self, part: &mut Partition, ydot: &DVector<f64>) {
        part.state.residual(
            self.y_iter.as_slice(),
            self.res.as_mut_slice(),
            &mut part.ws,
        );
        part.state
            .mass_times(ydot.as_slice(), self.tmp.as_mut_slice());
        self.rhs.copy_from(&self.load);
        self.rhs -= &self.res;
        self.rhs -= &self.tmp;
    }

    /// `Y = Ỹ + cẎ` into `y_iter`, with the exact path update of the states that have one, and
    /// `Ẏ` of those states made consistent with it.
    fn iterate_state(&mut self, part: &mut Partition, from: &AlphaState, ydot: &mut DVector<f64>) {
        self.y_iter.copy_from(&self.y_tilde);
        self.y_iter.axpy(self.c, ydot, 1.0);
        if !self.path_rows.is_empty() {
            part.state
                .path_update(from.y.as_slice(), self.y_iter.as_mut_slice(), &mut part.ws);
            for &r in &self.path_rows {
                ydot[r] = (self.y_iter[r] - self.y_tilde[r]) / self.c;
            }
        }
    }

    /// The converged solve of `M Ẏ + R(Ỹ + cẎ) = F + LΛw` (modified Newton with `D`).
    fn converge(
        &mut self,
        part: &mut Partition,
        from: &AlphaState,
        tol: f64,
        t_next: f64,
        to: &mut AlphaState,
    ) {
        let n = part.state.n_dofs();
        let size = self.y_iter.len();
        let mut converged = false;
        let mut last = 0.0;
        self.solves += 1;
        self.last_len = 0;
        for iteration in 0..self.max_iterations {
            self.iterate_state(part, from, &mut to.ydot);
            self.correction_rhs(part, &to.ydot);
            for &r in &self.path_rows {
                self.rhs[r] = 0.0;
            }
            if !self.newton_solve(part, from) {
                self.d_fact.solve(self.rhs.as_mut_slice());
            }
            to.ydot += &self.rhs;
            self.iterations += 1;
            converged = true;
            last = 0.0;
            for (lo, hi) in [(0, n), (n, 2 * n), (2 * n, size)] {
                let mut inc: f64 = 0.0;
                let mut mag: f64 = 0.0;
                for i in lo..hi {
                    if self.on_path[i] {
                        continue;
                    }
                    inc = inc.max(self.rhs[i].abs());
                    mag = mag.max(to.ydot[i].abs());
                }
                if inc > tol * mag && inc > f64::MIN_POSITIVE {
                    converged = false;
                }
                last = f64::max(last, if mag > 0.0 { inc / mag } else { inc });
            }
            if let Some(slot) = self.last_corrections.get_mut(iteration) {
                *slot = last;
                self.last_len = iteration + 1;
            }
            if converged {
                break;
            }
        }
        if !converged {
            self.unconverged += 1;
            self.first_unconverged.get_or_insert(t_next);
            self.worst_unconverged = self.worst_unconverged.max(last);
        }
        self.iterate_state(part, from, &mut to.ydot);
    }

    /// With Newton's method: `rhs ← (M + c ∂R/∂Y)⁻¹ rhs` at the iterate `y_iter`; false (and
    /// `rhs` untouched) without it or when that matrix is singular. Allocation-free.
    fn newton_solve(&mut self, part: &mut Partition, from: &AlphaState) -> bool {
        let Some(newton) = self.newton.as_deref_mut().filter(|n| n.iterate) else {
            return false;
        };
        let c = self.c;
        let NewtonSolve {
            lu,
            constant,
            slots,
            k0,
            singular,
            ..
        } = newton;
        lu.clear();
        for &(i, j, m, v) in constant.iter() {
            lu.add(i, j, m + c * v);
        }
        part.state.add_current_tangent(
            slots,
            from.y.as_slice(),
            self.y_iter.as_slice(),
            k0,
            &mut part.ws,
            &mut |i, j, v| lu.add(i, j, c * v),
        );
        if !lu.factor() {
            *singular += 1;
            return false;
        }
        lu.solve(self.rhs.as_mut_slice());
        true
    }

    /// Add `w L Λ` of the coupling to the momentum rows of the load.
    fn add_coupling_load(&mut self, n: usize, coupling: Option<(&[Coupling], &DVector<f64>, f64)>) {
        if let Some((cs, lambda, w)) = coupling {
            if w != 0.0 {
                for c in cs {
                    self.load[n + c.row] += w * c.sign * lambda[c.lambda];
                }
            }
        }
    }

    /// `x₁ = b₁ − A x₂` of the folded solve ([`StateMatrixFactors::solve_folded`]; `a` the
    /// diagonal of `A`, `ydot` holding `b₁` and the solved `x₂`, `tilde` holding `(Ỹ, Ṽ)`)
    /// and the corrector (eq 13) into `y` and `v`, in one pass over the DOFs: the operations
    /// of `solve_folded` and [`AlphaStepper::correct`], in their order. The state has `2n`
    /// rows.
    fn correct_folded(
        c: f64,
        w: f64,
        a: &[f64],
        tilde: (&[f64], &[f64]),
        y: &mut [f64],
        v: &mut [f64],
        ydot: &mut [f64],
    ) {
        let n = a.len();
        let (yu, yv) = y.split_at_mut(n);
        let (vu, vv) = v.split_at_mut(n);
        let (du, dv) = ydot.split_at_mut(n);
        let (ytu, ytv) = tilde.0.split_at(n);
        let (vtu, vtv) = tilde.1.split_at(n);
        let (yv, vv, dv, ytv, vtv) = (&mut yv[..n], &mut vv[..n], &dv[..n], &ytv[..n], &vtv[..n]);
        let (yu, vu, du, ytu, vtu) = (
            &mut yu[..n],
            &mut vu[..n],
            &mut du[..n],
            &ytu[..n],
            &vtu[..n],
        );
        for i in 0..n {
            let xv = dv[i];
            let xu = du[i] - a[i] * xv;
            du[i] = xu;
            yu[i] = ytu[i] + c * xu;
            vu[i] = vtu[i] + w * xu;
            yv[i] = ytv[i] + c * xv;
            vv[i] = vtv[i] + w * xv;
        }
    }

    /// [`AlphaStepper::correct_folded`] with `Ỹ` and `Ṽ` in `y` and `v` (a stepper that keeps
    /// them there): the same operations, each sum written over its first term.
    fn correct_folded_in_place(
        c: f64,
        w: f64,
        a: &[f64],
        y: &mut [f64],
        v: &mut [f64],
        ydot: &mut [f64],
    ) {
        let n = a.len();
        let (yu, yv) = y.split_at_mut(n);
        let (vu, vv) = v.split_at_mut(n);
        let (du, dv) = ydot.split_at_mut(n);
        Self::correct_folded_dofs(c, w, a, (yu, yv), (vu, vv), du, dv);
    }

    /// [`AlphaStepper::correct_folded_in_place`] of a range of DOFs: `a`, the displacement
    /// (`.0`) and velocity (`.1`) rows of `y` and `v`, the displacement rows `du` of `Ẏ` and
    /// the solved velocity rows `dv` of those DOFs (`len = a.len()` values each; extra rows
    /// are left alone). The same operations whatever the range.
    fn correct_folded_dofs(
        c: f64,
        w: f64,
        a: &[f64],
        y: (&mut [f64], &mut [f64]),
        v: (&mut [f64], &mut [f64]),
        du: &mut [f64],
        dv: &[f64],
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2, checked just above.
            unsafe { correct_dofs_avx2(c, w, a, y, v, du, dv) };
            return;
        }
        correct_dofs(c, w, a, y, v, du, dv);
    }

    /// Corrector (eq 13).
    fn correct(&self, to: &mut AlphaState) -> Result<(), PortError> {
        let (c, w) = (self.c, self.params.alpha_f / self.params.alpha_m);
        for ((((y, v), yd), yt), vt) in
            to.y.as_mut_slice()
                .iter_mut()
                .zip(to.v.as_mut_slice())
                .zip(to.ydot.as_slice())
                .zip(self.y_tilde.as_slice())
                .zip(self.v_tilde.as_slice())
        {
            *y = yt + c * yd;
            *v = vt + w * yd;
        }
        Ok(())
    }
}

/// The loop of [`AlphaStepper::correct_folded_dofs`].
#[inline(always)]
fn correct_dofs(
    c: f64,
    w: f64,
    a: &[f64],
    y: (&mut [f64], &mut [f64]),
    v: (&mut [f64], &mut [f64]),
    du: &mut [f64],
    dv: &[f64],
) {
    let n = a.len();
    let ((yu, yv), (vu, vv)) = (y, v);
    let (yv, vv, dv) = (&mut yv[..n], &mut vv[..n], &dv[..n]);
    let (yu, vu, du) = (&mut yu[..n], &mut vu[..n], &mut du[..n]);
    for i in 0..n {
        let xv = dv[i];
        let xu = du[i] - a[i] * xv;
        du[i] = xu;
        yu[i] += c * xu;
        vu[i] += w * xu;
        yv[i] += c * xv;
        vv[i] += w * xv;
    }
}

/// [`correct_dofs`] compiled for AVX2 (four DOFs a register instead of two): the same
/// operations on each DOF, separate multiplications and additions (no fused multiply-add),
/// so the same bits (issue 20, session 26).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn correct_dofs_avx2(
    c: f64,
    w: f64,
    a: &[f64],
    y: (&mut [f64], &mut [f64]),
    v: (&mut [f64], &mut [f64]),
    du: &mut [f64],
    dv: &[f64],
) {
    correct_dofs(c, w, a, y, v, du, dv);
}

#[cfg(all(test, target_arch = "x86_64"))]
mod avx2_tests {
    use super::*;

    /// The AVX2 build of the folded corrector gives the bits of the portable one.
    #[test]
    fn avx2_corrector_equals_the_portable_one_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let n = 29;
        let wave = |a: f64| -> Vec<f64> { (0..n).map(|i| (a * i as f64).sin() * 1e-2).collect() };
        let (a, du, dv) = (wave(0.3), wave(0.7), wave(1.1));
        let run = |avx2: bool| {
            let (mut yu, mut yv, mut vu, mut vv) = (wave(0.2), wave(0.5), wave(0.9), wave(1.3));
            let mut du = du.clone();
            let (y, v) = ((&mut yu[..], &mut yv[..]), (&mut vu[..], &mut vv[..]));
            if avx2 {
                // SAFETY: the processor supports AVX2, checked above.
                unsafe { correct_dofs_avx2(2.5e-4, 0.93, &a, y, v, &mut du, &dv) };
            } else {
                correct_dofs(2.5e-4, 0.93, &a, y, v, &mut du, &dv);
            }
            [yu, yv, vu, vv, du]
                .concat()
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(true), run(false));
    }
}
