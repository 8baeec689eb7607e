//! Time integrators, behind one [`TimeIntegrator`] trait.
//!
//! - [`MgAlpha`]: monolithic generalized-α in the Brüls–Arnold state-space form
//!   (Abbiati et al. 2019, §2.1, eqs 5–14; ALGORITHMS.md A1), ρ∞ = 1 being the trapezoidal rule;
//! - [`PgAlpha`]: partitioned generalized-α with subcycling, Lagrange multipliers and the
//!   Steklov–Poincaré operator (Abbiati et al. 2019, §2.2, eqs 23–38; A2), exposed as separately
//!   callable phases for the real-time runner;
//! - [`Lsrt2`]: the monolithic linearly implicit Rosenbrock method LSRT2
//!   (Bursi et al. 2011, §2; A3).
//!
//! Every integrator exports and imports its full algorithmic state as a flat vector, so that
//! the amplification matrix of any scheme can be built numerically ([`crate::analysis::spectral::amplification_matrix`]).

mod alpha;
mod explicit_rths;
mod fom;
mod llm;
mod lsrt2;
mod lsrt2_interfield;
mod lsrt2_partitioned;
mod mg_alpha;
mod osm;
mod pg_alpha;
mod refactorization;
pub mod second_order;
mod step_error;
pub mod tangent;

pub use alpha::{AlphaParameters, AlphaState, AlphaStepper, NonlinearSolveReport};
pub use explicit_rths::ExplicitRths;
pub use fom::Fom;
pub use llm::{Llm, LlmRun};
pub use lsrt2::Lsrt2;
pub use lsrt2_interfield::Lsrt2Interfield;
pub use lsrt2_partitioned::Lsrt2Partitioned;
pub use mg_alpha::MgAlpha;
pub use osm::Osm;
pub use pg_alpha::{FreeTask, PartitionRun, PgAlpha};
pub use refactorization::{Operators, Refactorizer};
pub use step_error::StepError;

use crate::assembly::{build_partitions, Grouping, Interface, Partition};
use crate::error::ModelError;
use crate::model::{AnalysisSettings, IntegratorKind, Model, StartMode};
use crate::physical::LabControl;

/// How a scheme steps: the settings of the `[analysis]` table that the integrators use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSettings {
    /// Spectral radius at infinity ρ∞ (generalized-α schemes).
    pub rho_inf: f64,
    /// Coarse time step Δt (Δt^N for PG-α).
    pub time_step: f64,
    /// Physical substeps per coarse step, ss (PG-α).
    pub subcycles: usize,
    /// Corrections per step on numerical partitions (ALGORITHMS.md E38).
    pub corrections: usize,
    /// How Λ0 is obtained (PG-α).
    pub start: StartMode,
    /// Diagonal coefficient γ of LSRT2.
    pub lsrt2_gamma: f64,
    /// Start time.
    pub t0: f64,
    /// Partitioned LSRT2: the projection at the end of each step.
    pub projection: crate::model::Lsrt2Projection,
    /// `lsrt2-interfield`: index of the coarse partition (None: the first numerical one).
    pub coarse: Option<usize>,
    /// Converged solve of nonlinear numerical partitions: relative tolerance (`None`: the
    /// fixed number of `corrections`; issue 17).
    pub nonlinear_tolerance: Option<f64>,
    /// Iteration bound of the converged solve.
    pub nonlinear_max_iterations: usize,
    /// The converged solve by Newton's method with the current tangent (issue 17).
    pub nonlinear_newton: bool,
    /// PG-α: the share of the interface force carried by the free solutions.
    pub multiplier_predictor: crate::model::MultiplierPredictor,
    /// PG-α: the numerical link operator and `H` with the current tangent (issue 17).
    pub link_current_tangent: bool,
    /// Cores the step of a large linear MG-α partition may use (`analysis.threads`; 2: its
    /// effective matrix solved in two parts on two cores, [`AlphaStepper::with_threads`]).
    pub threads: usize,
}

impl StepSettings {
    /// Step `time_step` with ρ∞ = 1, no subcycling, one correction, the consistent start,
    /// γ = 1 − √2/2 and `t0 = 0`.
    pub fn new(time_step: f64) -> Self {
        Self {
            rho_inf: 1.0,
            time_step,
            subcycles: 1,
            corrections: 1,
            start: StartMode::Consistent,
            lsrt2_gamma: crate::model::LSRT2_GAMMA_LOW,
            t0: 0.0,
            projection: crate::model::Lsrt2Projection::None,
            coarse: None,
            nonlinear_tolerance: None,
            nonlinear_max_iterations: crate::model::NONLINEAR_MAX_ITERATIONS,
            nonlinear_newton: false,
            multiplier_predictor: crate::model::MultiplierPredictor::None,
            link_current_tangent: false,
            threads: 1,
        }
    }

    /// The settings of a model's `[analysis]`, starting at `t0 = 0`.
    pub fn from_analysis(a: &AnalysisSettings) -> Self {
        Self {
            rho_inf: a.rho_inf,
            time_step: a.time_step,
            subcycles: a.subcycles,
            corrections: a.corrections,
            start: a.start,
            lsrt2_gamma: a.lsrt2_gamma,
            t0: 0.0,
            projection: a.projection,
            coarse: a.coarse,
            nonlinear_tolerance: a.nonlinear_tolerance,
            nonlinear_max_iterations: a.nonlinear_max_iterations,
            nonlinear_newton: a.nonlinear_newton,
            multiplier_predictor: a.multiplier_predictor,
            link_current_tangent: a.link_current_tangent,
            threads: a.threads,
        }
    }

    /// With ρ∞.
    pub fn rho_inf(mut self, rho_inf: f64) -> Self {
        self.rho_inf = rho_inf;
        self
    }

    /// With ss physical substeps per coarse step.
    pub fn subcycles(mut self, subcycles: usize) -> Self {
        self.subcycles = subcycles;
        self
    }

    /// With `corrections` per step.
    pub fn corrections(mut self, corrections: usize) -> Self {
        self.corrections = corrections;
        self
    }

    /// With the start mode of Λ0.
    pub fn start(mut self, start: StartMode) -> Self {
        self.start = start;
        self
    }

    /// With LSRT2's γ.
    pub fn lsrt2_gamma(mut self, gamma: f64) -> Self {
        self.lsrt2_gamma = gamma;
        self
    }

    /// With the end-of-step projection of the partitioned LSRT2 schemes.
    pub fn projection(mut self, projection: crate::model::Lsrt2Projection) -> Self {
        self.projection = projection;
        self
    }

    /// With the coarse partition of `lsrt2-interfield`.
    pub fn coarse(mut self, coarse: usize) -> Self {
        self.coarse = Some(coarse);
        self
    }
}

/// The step clock every integrator keeps: `t_n = t0 + n Δt` (one formula, so that every
/// scheme and runner agree on the bits of the time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepClock {
    t0: f64,
    dt: f64,
    n: u64,
}

impl StepClock {
    /// At step 0, time `t0`, step `dt`.
    pub fn new(t0: f64, dt: f64) -> Self {
        Self { t0, dt, n: 0 }
    }

    /// `t_n`.
    pub fn time(&self) -> f64 {
        self.t0 + self.n as f64 * self.dt
    }

    /// Steps taken, `n`.
    pub fn steps(&self) -> u64 {
        self.n
    }

    /// Δt.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// `n → n + 1`.
    pub fn advance(&mut self) {
        self.n += 1;
    }

    /// Shift the origin so that `t_n = t` (used with imported states).
    pub fn set_time(&mut self, t: f64) {
        self.t0 = t - self.n as f64 * self.dt;
    }
}

/// Connect the laboratories of `parts` whose transfer system is on the network with
/// `connector` ([`crate::physical::transfer::connect_lab`]), before an integrator is built on
/// them (its consistent start measures them at rest).
pub fn connect_labs(
    parts: &mut [Partition],
    connector: Option<&dyn crate::physical::transfer::TransferConnector>,
) -> Result<(), String> {
    for part in parts.iter_mut() {
        if let Some(lab) = part.lab_mut() {
            crate::physical::transfer::connect_lab(lab, connector)?;
        }
    }
    Ok(())
}

/// [`TimeIntegrator::for_each_lab`] over a set of partitions.
pub(crate) fn labs_of(parts: &mut [Partition], f: &mut dyn FnMut(usize, &mut dyn LabControl)) {
    for (k, p) in parts.iter_mut().enumerate() {
        if let Some(lab) = p.lab_mut() {
            f(k, lab);
        }
    }
}

/// A time integrator of a (possibly partitioned) model.
pub trait TimeIntegrator: Send {
    /// Scheme name (`mg-alpha`, `pg-alpha`, `lsrt2`).
    fn name(&self) -> &'static str;
    /// Current simulation time `t_n`.
    fn time(&self) -> f64;
    /// Coarse steps taken.
    fn steps_taken(&self) -> u64;
    /// Coarse time step.
    fn time_step(&self) -> f64;
    /// Advance one coarse step. Must not allocate.
    fn step(&mut self) -> Result<(), StepError>;
    /// The partitions (one for monolithic schemes).
    fn partitions(&self) -> &[Partition];
    /// The DOFs of all partitions together (interface DOFs once per partition): the size
    /// start-up memory is reported against.
    fn total_dofs(&self) -> usize {
        self.partitions().iter().map(|p| p.state.n_dofs()).sum()
    }
    /// Call `f` with the lab-control handle of every physical partition that has one, with
    /// the partition index (the runner's only way to a laboratory: drain records, trip,
    /// read the safety state; never to command). Allocation-free.
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn LabControl));
    /// State `Y` of partition `p` at `t_n`.
    fn state(&self, p: usize) -> &[f64];
    /// Rate `Ẏ` of partition `p` at `t_n`.
    fn rate(&self, p: usize) -> &[f64];
    /// Multipliers `Λ_n` (empty for monolithic schemes).
    fn multipliers(&self) -> &[f64] {
        &[]
    }
    /// Initial multipliers `Λ_0` of the coupled start (partitioned schemes).
    fn initial_multipliers(&self) -> &[f64] {
        &[]
    }
    /// The interface (partitioned schemes).
    fn interface(&self) -> Option<&Interface> {
        None
    }
    /// Every interface multiplier with where it acts and its `Λ_0`, for summaries and
    /// `run.json`; by default from [`TimeIntegrator::interface`] (the LLM scheme, which has
    /// no substructure [`Interface`], lists its localized and imposed-motion multipliers).
    fn multiplier_info(&self) -> Vec<MultiplierInfo> {
        let Some(iface) = self.interface() else {
            return Vec::new();
        };
        let parts = self.partitions();
        iface
            .dofs
            .iter()
            .enumerate()
            .map(|(k, d)| MultiplierInfo {
                dof: d.dof.clone(),
                plus: parts[d.plus].state.name.clone(),
                minus: parts[d.minus].state.name.clone(),
                lambda0: self.initial_multipliers().get(k).copied(),
                channel: format!("lambda.{}.{}", d.dof.node, d.dof.dof),
                kind: "substructure",
            })
            .collect()
    }
    /// Mechanical energy of partition `p` with its own DOF copy, if all elements are
    /// conservative.
    fn energy(&mut self, p: usize) -> Option<f64>;
    /// What [`TimeIntegrator::energy`] of partition `p` is made of, so that a recorder can
    /// evaluate it later from a copy of the state instead of after every step (by default:
    /// only the integrator knows, the recorder asks it after every step it copies).
    fn energy_source(&self, _p: usize) -> EnergySource {
        EnergySource::Integrator
    }
    /// Length of the flat algorithmic state.
    fn state_len(&self) -> usize;
    /// Export the full algorithmic state (e.g. `[Y; Ẏ; V]` per partition and `Λ_n`).
    fn export_state(&self, out: &mut [f64]);
    /// Import a full algorithmic state (inverse of [`TimeIntegrator::export_state`]).
    fn import_state(&mut self, state: &[f64]);
    /// Set the simulation time (used with imported states).
    fn set_time(&mut self, t: f64);
    /// Further recorded channels of the scheme, `(name, quantity, DOF name for the unit)`
    /// (e.g. the LLM multipliers per element and the imposed-motion drift).
    fn extra_channels(&self) -> Vec<(String, crate::elements::Quantity, String)> {
        Vec::new()
    }
    /// Values of [`TimeIntegrator::extra_channels`] at `t_n`. Must not allocate.
    fn extra_values(&self, _out: &mut [f64]) {}
    /// Change parameter `parameter` of element `element` (index into the partition's
    /// [`crate::assembly::StateSpace::slots`]) of partition `partition` between two steps
    /// (online model updating, Abbiati et al. 2020, §2.1). The scheme keeps its iteration
    /// matrices (`D^N`, the Steklov–Poincaré operator `H`): no refactorization. The first
    /// call on an element may allocate ([`crate::assembly::StateSpace::set_element_parameter`]);
    /// later ones must not. By default the scheme cannot: an error naming it.
    fn set_element_parameter(
        &mut self,
        partition: usize,
        element: usize,
        parameter: &str,
        value: f64,
    ) -> Result<(), String> {
        let _ = (partition, element, parameter, value);
        Err(format!(
            "the `{}` integrator cannot change element parameters during a run",
            self.name()
        ))
    }
    /// A [`Refactorizer`] of partition `partition`, whose elements `receivers` (slots) take
    /// new values of `parameters` during the run (`[updating] refactorize = "on_update"`):
    /// it rebuilds `D^N` (and PG-α's `ℚ^N` and `H`) off the real-time path, to be swapped in
    /// with [`TimeIntegrator::swap_operators`]. Called at start-up; allocates. By default the
    /// scheme cannot: an error naming it.
    fn refactorizer(
        &self,
        partition: usize,
        receivers: &[usize],
        parameters: &[&'static str],
    ) -> Result<Refactorizer, String> {
        let _ = (partition, receivers, parameters);
        Err(format!(
            "the `{}` integrator cannot rebuild its matrices during a run (mg-alpha and \
             pg-alpha can)",
            self.name()
        ))
    }
    /// Exchange the operators the steps use with `operators` (built by a [`Refactorizer`] of
    /// this integrator), which then hold the old ones. At a coarse-step boundary only (for
    /// PG-α: with every partition attached). Moves only: no allocation, nothing freed, no
    /// lock. By default the scheme cannot.
    fn swap_operators(&mut self, operators: &mut Operators) -> Result<(), &'static str> {
        let _ = operators;
        Err("this integrator cannot swap its operators")
    }
    /// Hold an external nodal load `value` (model force unit) on DOF `dof` of partition
    /// `partition` from the next step on, until changed (step-by-step co-simulation: a
    /// front end adds a force the model file does not describe). Schemes whose partitions
    /// evaluate their loads through [`crate::assembly::StateSpace::load`] at every stage
    /// take it; the others refuse with the reason.
    fn set_external_load(
        &mut self,
        partition: usize,
        dof: usize,
        value: f64,
    ) -> Result<(), String> {
        let _ = (partition, dof, value);
        Err(format!(
            "integrator `{}` does not take external loads between steps",
            self.name()
        ))
    }
    /// Impose the interface forces `Λ` of the next step instead of computing them. No scheme
    /// allows it so far: each one computes `Λ` from the interface compatibility condition
    /// (partitioned schemes) or has none (monolithic schemes); the error says which.
    fn override_multipliers(&mut self, lambda: &[f64]) -> Result<(), String> {
        let _ = lambda;
        Err(if self.multipliers().is_empty() {
            format!(
                "integrator `{}` has no interface multipliers to override (a monolithic scheme)",
                self.name()
            )
        } else {
            format!(
                "integrator `{}` computes the interface forces Λ of every step from the \
                 interface compatibility condition; imposing them would break the coupling of \
                 the substructures (apply an external load with set_external_load instead)",
                self.name()
            )
        })
    }
    /// What the converged nonlinear solve (`analysis.nonlinear_solver = "converged"`) of the
    /// numerical partitions did so far: `None` for schemes and models that do not take it.
    fn nonlinear_solve(&self) -> Option<NonlinearSolveReport> {
        None
    }
    /// The sizes of the two parts and the separator of a numerical partition's effective
    /// matrix solved on two cores (`analysis.threads = 2`, [`AlphaStepper::with_threads`]):
    /// `None` when every solve runs on one core.
    fn solve_parts(&self) -> Option<(usize, usize, usize)> {
        None
    }
}

/// [`TimeIntegrator::set_element_parameter`] over a set of partitions.
pub(crate) fn set_parameter_in(
    parts: &mut [Partition],
    partition: usize,
    element: usize,
    parameter: &str,
    value: f64,
) -> Result<(), String> {
    parts
        .get_mut(partition)
        .ok_or_else(|| format!("no partition {partition}"))?
        .state
        .set_element_parameter(element, parameter, value)
}

/// [`TimeIntegrator::set_external_load`] over an integrator's partitions.
pub(crate) fn set_external_load_in(
    parts: &mut [Partition],
    partition: usize,
    dof: usize,
    value: f64,
) -> Result<(), String> {
    let n = parts.len();
    parts
        .get_mut(partition)
        .ok_or_else(|| format!("no partition {partition} (the model has {n})"))?
        .state
        .set_external_load(dof, value)
}

/// What [`TimeIntegrator::energy`] of a partition is made of ([`TimeIntegrator::energy_source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnergySource {
    /// Only [`TimeIntegrator::energy`] gives it.
    #[default]
    Integrator,
    /// [`crate::assembly::Partition::energy`] of the partition at [`TimeIntegrator::state`]:
    /// a function of the state (kinetic energy, the elements' stored energy and their
    /// absorbed-energy states, integrated with the state) and of the work the laboratory
    /// accumulates behind the port ([`crate::assembly::Partition::held_energy`]), read when
    /// the state is copied.
    PartitionState,
    /// Only the work the laboratory accumulates behind the partition's port.
    Specimen,
}

/// One interface multiplier ([`TimeIntegrator::multiplier_info`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiplierInfo {
    /// The DOF it acts on.
    pub dof: crate::elements::DofRef,
    /// What `+Λ` acts on (partition or element name).
    pub plus: String,
    /// What `−Λ` acts on (partition name, or the generalized interface DOF / imposed motion).
    pub minus: String,
    /// `Λ_0` of the coupled start, if known.
    pub lambda0: Option<f64>,
    /// Its column in `results.csv` (without the unit; for `imposed` the column holds the
    /// support reaction on the structure, `−Λ^c`).
    pub channel: String,
    /// `substructure` (PG-α), `localized` (LLM, Hovmand et al. 2022, eq 3a) or `imposed`
    /// (LLM, eq 3c).
    pub kind: &'static str,
}

/// Build the integrator the model's `[analysis]` asks for.
///
/// A `[lab]` is driven by PG-α (one command per controller tick, ss per coarse step) and by
/// the explicit RTHS coupling ([`ExplicitRths`], one command per step at Δt = Δt^C);
/// with any other scheme the model is refused here, naming the scheme, instead of running the
/// specimen numerically while the lab sits idle. A laboratory on the network cannot start
/// here (the core reaches no network): see [`build_with`].
pub fn build(model: &Model) -> Result<Box<dyn TimeIntegrator>, ModelError> {
    build_with(model, None)
}

/// [`build`], with the laboratories whose transfer system is on the network (`lab.transfer =
/// "udp"`, …) connected by `connector` before the integrator's consistent start measures them
/// at rest; a connection that fails is an error at `lab.link` naming the peer.
pub fn build_with(
    model: &Model,
    connector: Option<&dyn crate::physical::transfer::TransferConnector>,
) -> Result<Box<dyn TimeIntegrator>, ModelError> {
    let a = &model.analysis;
    let scheme = a.integrator.name();
    let err = |e: String| ModelError::single(&model.source, "analysis", format!("{scheme}: {e}"));
    if a.integrator == IntegratorKind::ExplicitRths {
        return build_explicit_rths(model, connector);
    }
    if a.integrator == IntegratorKind::Fom {
        return Ok(Box::new(Fom::new(model, connector)?));
    }
    if a.integrator == IntegratorKind::Osm {
        return Ok(Box::new(Osm::new(model, connector)?));
    }
    if model.lab.is_some()
        && !matches!(
            a.integrator,
            IntegratorKind::PgAlpha
                | IntegratorKind::Lsrt2Partitioned
                | IntegratorKind::Lsrt2Interfield
        )
    {
        let physical: Vec<&str> = model
            .substructures
            .iter()
            .filter(|s| s.physical)
            .map(|s| s.name.as_str())
            .collect();
        let why = match a.integrator {
            IntegratorKind::MgAlpha => {
                "it is monolithic: the specimen would be one more element of a single \
                 substructure, with no interface to command through a transfer system"
            }
            IntegratorKind::Lsrt2 => {
                "it is monolithic and evaluates the restoring force at two stages per step, \
                 which a specimen cannot provide once per controller tick"
            }
            IntegratorKind::Llm
            | IntegratorKind::PgAlpha
            | IntegratorKind::ExplicitRths
            | IntegratorKind::Lsrt2Partitioned
            | IntegratorKind::Lsrt2Interfield
            | IntegratorKind::Fom
            | IntegratorKind::Osm => {
                "its physical elements are evaluated by numerical stand-ins: the laboratory \
                 behind them is not driven by this scheme yet"
            }
        };
        return Err(ModelError::single(
            &model.source,
            "analysis.integrator",
            format!(
                "`{scheme}` cannot drive the [lab] of physical substructure{} {}: {why}; \
                 use `pg-alpha` or `explicit-rths`, or remove [lab] to simulate the specimen \
                 numerically",
                if physical.len() == 1 { "" } else { "s" },
                physical
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let settings = StepSettings::from_analysis(a);
    Ok(match a.integrator {
        IntegratorKind::MgAlpha => {
            let parts = build_partitions(model, Grouping::Monolithic)?;
            let part = parts.into_iter().next().expect("one partition");
            Box::new(MgAlpha::new(part, &settings).map_err(err)?)
        }
        IntegratorKind::Lsrt2 => {
            let parts = build_partitions(model, Grouping::Monolithic)?;
            let part = parts.into_iter().next().expect("one partition");
            Box::new(Lsrt2::new(part, &settings).map_err(err)?)
        }
        IntegratorKind::Llm => {
            let ep = crate::assembly::build_element_partitions(model)?;
            Box::new(Llm::new(ep, &model.imposed_motions, &settings).map_err(err)?)
        }
        IntegratorKind::PgAlpha => {
            let mut parts = build_partitions(model, Grouping::Partitioned)?;
            connect_labs(&mut parts, connector)
                .map_err(|e| ModelError::single(&model.source, "lab.link", e))?;
            Box::new(PgAlpha::new(parts, &settings).map_err(err)?)
        }
        IntegratorKind::ExplicitRths | IntegratorKind::Fom | IntegratorKind::Osm => {
            unreachable!("built above")
        }
        IntegratorKind::Lsrt2Partitioned => {
            let mut parts = build_partitions(model, Grouping::Partitioned)?;
            connect_labs(&mut parts, connector)
                .map_err(|e| ModelError::single(&model.source, "lab.link", e))?;
            Box::new(Lsrt2Partitioned::new(parts, &settings).map_err(err)?)
        }
        IntegratorKind::Lsrt2Interfield => {
            let mut parts = build_partitions(model, Grouping::Partitioned)?;
            connect_labs(&mut parts, connector)
                .map_err(|e| ModelError::single(&model.source, "lab.link", e))?;
            Box::new(Lsrt2Interfield::new(parts, &settings).map_err(err)?)
        }
    })
}

/// The partitions of the explicit RTHS coupling ([`ExplicitRths`]) of `model`: the numerical
/// model — every element but the specimens, over all DOFs, with the Rayleigh coefficients of
/// the whole model — and the physical partitions with their ports (network labs connected by
/// `connector`). Checks that the model can use the scheme: a `[lab]` at λ = 1 (so that
/// Δt = Δt^C with ss = 1), no imposed motions.
pub fn explicit_rths_partitions(
    model: &Model,
    connector: Option<&dyn crate::physical::transfer::TransferConnector>,
) -> Result<(Partition, Vec<Partition>), ModelError> {
    let a = &model.analysis;
    let refuse = |field: &str, why: String| ModelError::single(&model.source, field, why);
    let Some(lab) = &model.lab else {
        return Err(refuse(
            "analysis.integrator",
            "explicit-rths steps the numerical model at the controller rate of a laboratory: \
             add a [lab] (time_scale = 1) for the physical substructure, or use pg-alpha to \
             simulate the specimen numerically"
                .into(),
        ));
    };
    let ts = lab.lab.time_scale;
    if (ts.lambda - 1.0).abs() > 1e-12 {
        return Err(refuse(
            "lab.time_scale",
            format!(
                "explicit-rths runs in real time, one numerical step per controller tick \
                 (Δt = Δt^C): it needs λ = 1, found λ = {}",
                ts.lambda
            ),
        ));
    }
    if a.subcycles != 1 {
        return Err(refuse(
            "analysis.subcycles",
            format!(
                "explicit-rths steps once per controller tick: ss must be 1, found {}",
                a.subcycles
            ),
        ));
    }
    if !model.imposed_motions.is_empty() {
        return Err(refuse(
            "imposed_motion",
            "explicit-rths does not support imposed motions (use pg-alpha or llm)".into(),
        ));
    }
    let mut numerical_model = model.clone();
    numerical_model.elements.retain(|e| {
        !(model.substructures[e.substructure as usize].physical
            && e.role == crate::model::Role::Specimen)
    });
    if let Some((alpha, beta)) = crate::assembly::rayleigh_coefficients(model)? {
        numerical_model.rayleigh = Some(crate::model::Rayleigh::Coefficients { alpha, beta });
    }
    numerical_model.lab = None;
    let numerical = build_partitions(&numerical_model, Grouping::Monolithic)?
        .into_iter()
        .next()
        .expect("one partition");
    let mut physical: Vec<Partition> = build_partitions(model, Grouping::Partitioned)?
        .into_iter()
        .filter(|p| p.state.physical)
        .collect();
    connect_labs(&mut physical, connector)
        .map_err(|e| ModelError::single(&model.source, "lab.link", e))?;
    Ok((numerical, physical))
}

fn build_explicit_rths(
    model: &Model,
    connector: Option<&dyn crate::physical::transfer::TransferConnector>,
) -> Result<Box<dyn TimeIntegrator>, ModelError> {
    let (numerical, physical) = explicit_rths_partitions(model, connector)?;
    let settings = StepSettings::from_analysis(&model.analysis);
    let e = ExplicitRths::new(numerical, physical, &settings, model.analysis.force_delay).map_err(
        |e| ModelError::single(&model.source, "analysis", format!("explicit-rths: {e}")),
    )?;
    Ok(Box::new(e))
}

pub(crate) fn check_finite(
    x: &[f64],
    what: &'static str,
    time: f64,
    step: u64,
) -> Result<(), StepError> {
    if all_finite(x) {
        Ok(())
    } else {
        Err(StepError::NonFinite { what, time, step })
    }
}

/// Whether every value of `x` is finite: branch-free over blocks of 64 (vectorizable),
/// instead of a test and a branch a value; in AVX2 registers where the processor has them
/// (four values a register instead of two: issue 20, session 26, the check of the 990-DOF
/// frame's state 9.3 → 3.0 thousand instructions a step).
#[inline]
fn all_finite(x: &[f64]) -> bool {
    #[inline(always)]
    fn blocks(x: &[f64]) -> bool {
        x.chunks(64)
            .all(|b| b.iter().fold(true, |all, v| all & v.is_finite()))
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn blocks_avx2(x: &[f64]) -> bool {
        blocks(x)
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor supports AVX2, checked just above.
        return unsafe { blocks_avx2(x) };
    }
    blocks(x)
}
