//! Online model updating during a run (Abbiati et al. 2020, §2.1–2.2; the filter and the
//! identification model are in [`crate::updating`]): the identification of
//! `[updating]` fed after every coarse step with the identified element's interface kinematics
//! and force, its estimates applied to the numerical elements that share the element's law.
//!
//! [`OnlineUpdating`] is built once, at start-up, from [`Model::updating`] and the integrator:
//! every name is resolved to an index then, every buffer (the record of every update
//! included) allocated then, and each receiver is given its own copy of its element (the first
//! [`TimeIntegrator::set_element_parameter`] of an element may allocate). After that,
//! [`OnlineUpdating::after_step`] allocates nothing, locks nothing and touches no file.
//!
//! **What it reads.** After coarse step `n → n + 1`:
//!
//! - the *displacement* of the identified element's DOFs: for a specimen behind a physical
//!   port, the displacement the laboratory measured at its last controller tick
//!   ([`PhysicalSubstructure::measured_displacement`]) where the laboratory provides it,
//!   otherwise the partition's state at `t_{n+1}` (the command of the step's last tick); for a
//!   numerical element (a purely numerical test), the partition's state;
//! - the *velocity*: always the partition's state at `t_{n+1}` (the commanded velocity; a
//!   laboratory measures none);
//! - the *force*: the port's measured restoring force on the element's first DOF (the
//!   identified element must then be the only specimen element on that DOF, checked at
//!   start-up), or the numerical element's own restoring force;
//! - the ground acceleration at `t_{n+1}` on that DOF, for the `above_pga` freeze (sampled once
//!   per coarse step).
//!
//! The deformation of the element follows from the element's DOFs through
//! [`Element::deformation`] (`u₁ − u₂`, or `u₁` to the ground).
//!
//! **When it writes.** Every `period` steps the identification takes one update over the
//! `period` steps since the last one. The estimates of an update after step `n` are applied to
//! the receivers after step `n + 1`, i.e. before step `n + 2`: a fixed latency of one coarse
//! step whatever the runner, so a threaded and a single-threaded run apply the same values at
//! the same steps and give the same bits. By default (`refactorize = "never"`) the
//! integrator's iteration matrices (`D^N`, the Steklov–Poincaré operator `H`) are kept. With
//! `refactorize = "on_update"` every applied estimate that changes the receivers' zero-state
//! tangent also has the receiving partition's operators rebuilt by a
//! [`Refactorizer`] (inline here, on the updating task in the threaded runner) and swapped in
//! at the same step boundary ([`OnlineUpdating::take_operators`]), so the fixed latency is the
//! same for the values and the matrices. A frozen or tripped identification sends nothing
//! more; the receivers keep the last values they received.
//!
//! [`Model::updating`]: crate::model::Model::updating
//! [`PhysicalSubstructure::measured_displacement`]: crate::physical::PhysicalSubstructure::measured_displacement
//! [`Element::deformation`]: crate::elements::Element::deformation

use crate::assembly::ElementWorkspace;
use crate::error::ModelError;
use crate::integrators::StepError;
use crate::integrators::TimeIntegrator;
use crate::integrators::{Operators, Refactorizer};
use crate::model::{Model, Role};
use crate::runner::{Fault, StepExecutor};
use crate::updating::{ElementModel, Frozen, Identification, IdentificationModel, Trip};

/// Where the identified element sits in the integrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentifiedSource {
    /// A specimen element behind the physical port of partition `partition`.
    Specimen {
        /// The partition.
        partition: usize,
    },
    /// Element `slot` of the numerical partition `partition`.
    Numerical {
        /// The partition.
        partition: usize,
        /// Index into the partition's slots.
        slot: usize,
    },
}

/// State of the identification in one record of `updating.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateState {
    /// Updating and sending its estimates.
    Active,
    /// Frozen: estimates kept, nothing sent any more.
    Frozen,
    /// The filter tripped: the last good estimates kept, nothing sent any more.
    Tripped,
}

impl UpdateState {
    /// Name in `updating.csv` and run.json.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Frozen => "frozen",
            Self::Tripped => "tripped",
        }
    }

    fn code(&self) -> f64 {
        match self {
            Self::Active => 0.0,
            Self::Frozen => 1.0,
            Self::Tripped => 2.0,
        }
    }

    fn from_code(c: f64) -> Self {
        if c == 1.0 {
            Self::Frozen
        } else if c == 2.0 {
            Self::Tripped
        } else {
            Self::Active
        }
    }
}

/// Most parameters one `[updating]` identifies (the estimates travel in fixed-size messages,
/// [`UpdateEstimate`], so that a threaded runner can pass them without allocating).
pub const MAX_UPDATE_PARAMETERS: usize = 16;

/// What the step thread observes after one coarse step, for the filter ([`UpdateFilter`]):
/// the ground acceleration every step and, on an update step, the identified element's
/// deformation and its rate at the start and at the end of the update and the force on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpdateSnapshot {
    /// Steps taken after the step (`n + 1` after step `n → n + 1`).
    pub step: u64,
    /// Time at the end of the step.
    pub time: f64,
    /// Ground acceleration at that time on the identified element's DOF.
    pub ground_acceleration: f64,
    /// Whether the filter takes an update at this step.
    pub update: bool,
    /// Deformation and rate at the start of the update.
    pub start: [f64; 2],
    /// Deformation and rate at its end.
    pub end: [f64; 2],
    /// Force on the element's first DOF at the end.
    pub force: f64,
}

/// What the filter returns after an update step ([`UpdateFilter::process`]): the estimates,
/// and whether they are to be sent to the receivers (not when the identification is frozen
/// or tripped).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpdateEstimate {
    /// The step of the snapshot it answers.
    pub step: u64,
    /// Send the values to the receivers.
    pub send: bool,
    /// The estimates (the first [`UpdateFilter::parameter_count`] are used).
    pub values: [f64; MAX_UPDATE_PARAMETERS],
    /// The task that ran the filter failed (a panic): updating is to be turned off.
    pub task_failed: bool,
}

/// Why updating was turned off by its task rather than by the filter
/// ([`OnlineUpdating::turn_off`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdatingOff {
    /// The task that runs the filter panicked.
    Panic,
    /// An estimate was not finite (it is never applied).
    NonFinite,
    /// The task fell behind: its snapshot queue was full.
    Stalled,
}

impl UpdatingOff {
    /// A short description for run.json.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Panic => "the updating task panicked",
            Self::NonFinite => "a non-finite estimate (not applied)",
            Self::Stalled => "the updating task fell behind (its snapshot queue was full)",
        }
    }
}

/// The outcome of one refactorization build ([`Refactorizer::build`]) for an applied
/// estimate.
#[derive(Debug)]
pub enum Rebuilt {
    /// The new values leave the zero-state tangent as it was: nothing to swap.
    Unchanged,
    /// New operators, to be swapped in.
    Built(Box<Operators>),
    /// The build failed (a panic, a singular matrix, a refused value): refactorization is
    /// turned off, the operators in use are kept.
    Failed(String),
}

/// A refactorization build for the estimate of update `step`, and how long it took.
#[derive(Debug)]
pub struct RefactorMessage {
    /// The step of the update whose estimate it was built for.
    pub step: u64,
    /// What came of it.
    pub rebuilt: Rebuilt,
    /// Time of the build (ns, monotonic clock).
    pub build_ns: u64,
}

/// Run `refactorizer` for the estimate of `step` with `values`, catching a panic (which turns
/// refactorization off, never the run). Allocates: off the real-time path.
pub fn build_operators(
    refactorizer: &mut Refactorizer,
    step: u64,
    values: &[f64],
) -> RefactorMessage {
    let t0 = std::time::Instant::now();
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        refactorizer.build(step, values)
    }));
    let build_ns = t0.elapsed().as_nanos() as u64;
    let rebuilt = match out {
        Ok(Ok(Some(ops))) => Rebuilt::Built(ops),
        Ok(Ok(None)) => Rebuilt::Unchanged,
        Ok(Err(e)) => Rebuilt::Failed(e),
        Err(payload) => Rebuilt::Failed(format!(
            "the build panicked: {}",
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        )),
    };
    RefactorMessage {
        step,
        rebuilt,
        build_ns,
    }
}

/// What a run did with `refactorize = "on_update"` ([`UpdatingSummary::refactorization`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RefactorRecord {
    /// Operators swapped in.
    pub swaps: u64,
    /// Applied estimates that left the tangent unchanged (nothing to swap).
    pub unchanged: u64,
    /// Builds not back when due (the operators in use were kept).
    pub misses: u64,
    /// Builds that came back after they were due (dropped).
    pub late: u64,
    /// Builds timed, their total and longest time (s).
    pub builds: u64,
    /// Total build time (s).
    pub build_seconds: f64,
    /// Longest build (s).
    pub longest_build_seconds: f64,
    /// Why refactorization was turned off (a failed build), and when.
    pub off: Option<(String, f64)>,
}

/// The identification side of [`OnlineUpdating`]: the filter, fed one [`UpdateSnapshot`] per
/// coarse step, and the record of its updates. It runs inline after every step
/// ([`OnlineUpdating::after_step`]) or, taken out with [`OnlineUpdating::take_filter`], on a
/// task of its own (the threaded real-time runner), with the same arithmetic in the same
/// order. Allocation-free after construction.
pub struct UpdateFilter {
    identification: Identification<ElementModel>,
    parameters: Vec<&'static str>,
    period: u64,
    dt: f64,
    // Record: one row per update, `[t, θ…, σ…, predicted force, measured force, state]`.
    record: Vec<f64>,
    width: usize,
    rows: usize,
    capacity: usize,
    dropped: u64,
    frozen_at: Option<f64>,
    tripped_at: Option<f64>,
    updates: u64,
}

/// The online updating of a run (see the module documentation): the step-thread side (what
/// is observed after each step, what is applied to the receivers) and its [`UpdateFilter`].
pub struct OnlineUpdating {
    filter: Option<Box<UpdateFilter>>,
    /// The identified element as the model holds it (its deformation map).
    element: std::sync::Arc<dyn crate::elements::Element>,
    identified: String,
    source: IdentifiedSource,
    /// Partition DOF of each element DOF.
    map: Vec<Option<usize>>,
    /// Index of the element DOF whose force is measured, and the sign that turns the force on
    /// it into the force on the element's first DOF.
    force_dof: usize,
    force_sign: f64,
    parameters: Vec<&'static str>,
    /// `(partition, slot, name)` of every receiver.
    receivers: Vec<(usize, usize, String)>,
    period: u64,
    since: u64,
    /// Deformation and its rate at the end of the last update (or the start).
    start: [f64; 2],
    /// The step whose estimate is due at the next step's end.
    awaiting: Option<u64>,
    /// The estimate of the inline filter, waiting for its step of latency.
    ready: Option<UpdateEstimate>,
    values: Vec<f64>,
    applied: u64,
    apply_error: Option<(usize, usize)>,
    /// Estimates that were not back when due (threaded runner).
    misses: u64,
    /// Update snapshots taken.
    observed: u64,
    /// Updating turned off by its task, and when.
    off: Option<(UpdatingOff, f64)>,
    /// `refactorize = "on_update"`.
    refactorize: bool,
    /// The refactorizer when the builds run inline (`None` while it is out on the updating
    /// task, or once refactorization is off).
    refactorizer: Option<Box<Refactorizer>>,
    /// The update whose operators are due now (its estimate was just applied).
    refactor_due: Option<u64>,
    refactor: RefactorRecord,
    // Buffers.
    partition_u: Vec<f64>,
    element_u: Vec<f64>,
    element_v: Vec<f64>,
    element_f: Vec<f64>,
    ws: ElementWorkspace,
}

/// What run.json says of an online updating ([`OnlineUpdating::summary`]).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatingSummary {
    /// The identified element.
    pub identified: String,
    /// `specimen` or `numerical`.
    pub source: &'static str,
    /// Where its displacement came from (`measured` or `state`).
    pub displacement: &'static str,
    /// The receivers.
    pub receivers: Vec<String>,
    /// `(name, final estimate, final σ)` per parameter.
    pub parameters: Vec<(String, f64, f64)>,
    /// Updates taken.
    pub updates: u64,
    /// Times a set of estimates was applied to the receivers.
    pub applied: u64,
    /// Steps between updates.
    pub period: u64,
    /// State at the end.
    pub state: UpdateState,
    /// Why it froze and when.
    pub frozen: Option<(String, f64)>,
    /// Why the filter tripped and when.
    pub tripped: Option<(String, f64)>,
    /// Why a receiver refused an estimate (updating then stopped sending).
    pub apply_error: Option<String>,
    /// Records that did not fit the buffer (0 unless the run went beyond its planned steps).
    pub dropped: u64,
    /// Updating turned off by its task (a panic, a non-finite estimate, a stall), and when.
    pub task_fault: Option<(&'static str, f64)>,
    /// Estimates that were not back from the updating task when due (the previous ones were
    /// kept); 0 when the filter runs inline.
    pub misses: u64,
    /// `refactorize = "on_update"`: what the refactorization did (`None` with `"never"`).
    pub refactorization: Option<RefactorRecord>,
}

impl OnlineUpdating {
    /// The updating of `model` (`None` without `[updating]`) for the integrator `integ`, over
    /// at most `n_steps` coarse steps. Errors are at `updating.identify` (an element the
    /// integrator does not hold where it can be observed) and `updating.receivers` (a receiver
    /// that is not a numerical element, or an integrator that cannot change its parameters).
    pub fn new(
        model: &Model,
        integ: &mut dyn TimeIntegrator,
        n_steps: u64,
    ) -> Result<Option<Self>, ModelError> {
        let Some(cfg) = &model.updating else {
            return Ok(None);
        };
        let err = |field: &str, why: String| {
            ModelError::single(&model.source, format!("updating.{field}"), why)
        };
        let identification = cfg
            .identification(&model.elements)
            .map_err(|e| err("identify", e))?;
        let instance = &model.elements[cfg.identify];
        let name = instance.name.to_string();
        // Locate the identified element.
        let mut found: Option<(IdentifiedSource, Vec<Option<usize>>)> = None;
        for (k, part) in integ.partitions().iter().enumerate() {
            if part.physical.is_some() {
                if let Some((_, map)) = part
                    .specimen
                    .iter()
                    .find(|(e, _)| std::sync::Arc::ptr_eq(e, &instance.element))
                {
                    found = Some((IdentifiedSource::Specimen { partition: k }, map.clone()));
                    break;
                }
            } else if !part.state.physical {
                if let Some(slot) = part.state.slots.iter().position(|s| s.name() == name) {
                    let map = part.state.dof_map(slot).to_vec();
                    found = Some((IdentifiedSource::Numerical { partition: k, slot }, map));
                    break;
                }
            }
        }
        let Some((source, map)) = found else {
            return Err(err(
                "identify",
                format!(
                    "`{name}` is neither a specimen element behind a physical port nor an \
                     element of a numerical substructure of the `{}` integrator, so its \
                     interface kinematics and force cannot be observed",
                    integ.name()
                ),
            ));
        };
        let Some(force_dof) = map.iter().position(Option::is_some) else {
            return Err(err(
                "identify",
                format!("`{name}` has no free DOF to observe"),
            ));
        };
        let force_sign = if force_dof == 0 { 1.0 } else { -1.0 };
        if let IdentifiedSource::Specimen { partition } = source {
            let part = &integ.partitions()[partition];
            let d = map[force_dof];
            let others = part
                .specimen
                .iter()
                .filter(|(e, m)| !std::sync::Arc::ptr_eq(e, &instance.element) && m.contains(&d))
                .count();
            if others > 0 {
                return Err(err(
                    "identify",
                    format!(
                        "`{name}` shares its DOF with {others} other specimen element(s): the \
                         measured force would be their sum, not the identified element's"
                    ),
                ));
            }
        }
        // Receivers: numerical elements, by name.
        let mut receivers = Vec::with_capacity(cfg.receivers.len());
        for &r in &cfg.receivers {
            let rname = &model.elements[r].name;
            if model.elements[r].role == Role::Specimen {
                return Err(err(
                    "receivers",
                    format!("`{rname}` is a specimen element, not a numerical one"),
                ));
            }
            let at = integ.partitions().iter().enumerate().find_map(|(k, p)| {
                p.state
                    .slots
                    .iter()
                    .position(|s| s.name() == &**rname)
                    .map(|s| (k, s))
            });
            let Some((k, s)) = at else {
                return Err(err(
                    "receivers",
                    format!(
                        "`{rname}` is not a numerical element of the `{}` integrator",
                        integ.name()
                    ),
                ));
            };
            receivers.push((k, s, rname.to_string()));
        }
        let parameters: Vec<&'static str> = identification.model().parameter_names().to_vec();
        if parameters.len() > MAX_UPDATE_PARAMETERS {
            return Err(err(
                "parameters",
                format!(
                    "{} parameters identified; at most {MAX_UPDATE_PARAMETERS} are supported",
                    parameters.len()
                ),
            ));
        }
        // Give every receiver its own copy of its element now (this allocates), with the
        // value it has; an integrator that cannot change parameters says so here.
        for (k, s, rname) in &receivers {
            let current = integ.partitions()[*k].state.slots[*s].element.parameters();
            for p in &parameters {
                let Some(v) = current.iter().find(|(n, _)| n == p).map(|x| x.1) else {
                    return Err(err(
                        "receivers",
                        format!("`{rname}` has no parameter `{p}`"),
                    ));
                };
                integ
                    .set_element_parameter(*k, *s, p, v)
                    .map_err(|e| err("receivers", format!("`{rname}`: {e}")))?;
            }
        }
        let refactorizer = match cfg.refactorize {
            crate::model::updating::Refactorize::Never => None,
            crate::model::updating::Refactorize::OnUpdate => {
                let k = receivers[0].0;
                if let Some((_, _, other)) = receivers.iter().find(|r| r.0 != k) {
                    return Err(err(
                        "refactorize",
                        format!(
                            "the receivers lie in different substructures (`{other}` is not in \
                             `{}`); \"on_update\" rebuilds one",
                            integ.partitions()[k].state.name
                        ),
                    ));
                }
                let slots: Vec<usize> = receivers.iter().map(|r| r.1).collect();
                let r = integ
                    .refactorizer(k, &slots, &parameters)
                    .map_err(|e| err("refactorize", e))?;
                Some(Box::new(r))
            }
        };
        let part = &integ.partitions()[match source {
            IdentifiedSource::Specimen { partition }
            | IdentifiedSource::Numerical { partition, .. } => partition,
        }];
        let n = part.state.n_dofs();
        let ne = map.len();
        let ws = part.state.workspace_for(match source {
            IdentifiedSource::Numerical { slot, .. } => Some(slot),
            IdentifiedSource::Specimen { .. } => None,
        });
        let np = parameters.len();
        let width = 4 + 2 * np;
        let period = cfg.period.max(1);
        let capacity = (n_steps / period + 1) as usize;
        let filter = UpdateFilter {
            identification,
            parameters: parameters.clone(),
            period,
            dt: integ.time_step(),
            record: vec![0.0; capacity * width],
            width,
            rows: 0,
            capacity,
            dropped: 0,
            frozen_at: None,
            tripped_at: None,
            updates: 0,
        };
        let mut me = Self {
            filter: Some(Box::new(filter)),
            element: instance.element.clone(),
            identified: name,
            source,
            map,
            force_dof,
            force_sign,
            parameters,
            receivers,
            period,
            since: 0,
            start: [0.0; 2],
            awaiting: None,
            ready: None,
            values: vec![0.0; np],
            applied: 0,
            apply_error: None,
            misses: 0,
            observed: 0,
            off: None,
            refactorize: refactorizer.is_some(),
            refactorizer,
            refactor_due: None,
            refactor: RefactorRecord::default(),
            partition_u: vec![0.0; n],
            element_u: vec![0.0; ne],
            element_v: vec![0.0; ne],
            element_f: vec![0.0; ne],
            ws,
        };
        // The start of the first update: the state the integrator starts from.
        me.start = me.kinematics(integ, false);
        Ok(Some(me))
    }

    fn partition(&self) -> usize {
        match self.source {
            IdentifiedSource::Specimen { partition }
            | IdentifiedSource::Numerical { partition, .. } => partition,
        }
    }

    /// Deformation and its rate of the identified element now (`measured`: the laboratory's
    /// measured displacement where it provides one).
    fn kinematics(&mut self, integ: &dyn TimeIntegrator, measured: bool) -> [f64; 2] {
        let p = self.partition();
        let part = &integ.partitions()[p];
        let y = integ.state(p);
        let n = self.partition_u.len();
        let use_measured = measured
            && part.physical.as_ref().is_some_and(|port| {
                port.substructure()
                    .measured_displacement(&mut self.partition_u)
            });
        if !use_measured {
            self.partition_u.copy_from_slice(&y[..n]);
        }
        for (i, m) in self.map.iter().enumerate() {
            self.element_u[i] = m.map_or(0.0, |d| self.partition_u[d]);
            self.element_v[i] = m.map_or(0.0, |d| y[n + d]);
        }
        let d = self
            .element
            .deformation(&self.element_u)
            .unwrap_or(f64::NAN);
        let v = self
            .element
            .deformation(&self.element_v)
            .unwrap_or(f64::NAN);
        [d, v]
    }

    /// The force on the identified element's first DOF now.
    fn force(&mut self, integ: &dyn TimeIntegrator) -> f64 {
        let p = self.partition();
        let part = &integ.partitions()[p];
        let d = self.map[self.force_dof].expect("a free DOF");
        let f = match self.source {
            IdentifiedSource::Specimen { .. } => part
                .physical
                .as_ref()
                .map_or(f64::NAN, |port| port.measured()[d]),
            IdentifiedSource::Numerical { slot, .. } => {
                part.state
                    .element_force(slot, integ.state(p), &mut self.element_f, &mut self.ws);
                self.element_f[self.force_dof]
            }
        };
        self.force_sign * f
    }

    /// After every completed coarse step, with the filter inline: apply the estimates of the
    /// previous update (one step of latency), observe the step and run the filter on it.
    /// Allocation-free.
    pub fn after_step(&mut self, integ: &mut dyn TimeIntegrator) {
        if self.awaiting.is_some() {
            let ready = self.ready.take();
            self.apply_estimate(integ, ready.as_ref());
        }
        if self.off.is_some() {
            return;
        }
        let snapshot = self.observe(integ);
        if let Some(filter) = self.filter.as_mut() {
            self.ready = filter.process(&snapshot);
        }
    }

    /// The step whose estimate is due now (at the end of the step after it), if any.
    pub fn awaiting(&self) -> Option<u64> {
        self.awaiting
    }

    /// Apply the estimate due now ([`OnlineUpdating::awaiting`]); `None` when it is not back
    /// from the updating task in time: a miss, and the receivers keep the previous values. An
    /// estimate of a failed task or with a non-finite value turns updating off
    /// ([`OnlineUpdating::turn_off`]) and is not applied. Allocation-free.
    pub fn apply_estimate(
        &mut self,
        integ: &mut dyn TimeIntegrator,
        estimate: Option<&UpdateEstimate>,
    ) {
        self.awaiting = None;
        let Some(e) = estimate else {
            self.misses += 1;
            return;
        };
        let t = integ.time();
        if e.task_failed {
            self.turn_off(UpdatingOff::Panic, t);
            return;
        }
        if !e.send || self.off.is_some() {
            return;
        }
        let np = self.parameters.len();
        if e.values[..np].iter().any(|v| !v.is_finite()) {
            self.turn_off(UpdatingOff::NonFinite, t);
            return;
        }
        self.values.copy_from_slice(&e.values[..np]);
        if self.apply_error.is_none() {
            'apply: for (r, (k, s, _)) in self.receivers.iter().enumerate() {
                for (j, p) in self.parameters.iter().enumerate() {
                    if integ
                        .set_element_parameter(*k, *s, p, self.values[j])
                        .is_err()
                    {
                        self.apply_error = Some((r, j));
                        break 'apply;
                    }
                }
            }
            if self.apply_error.is_none() {
                self.applied += 1;
                if self.refactorize && self.refactor.off.is_none() {
                    self.refactor_due = Some(e.step);
                    self.refactor_inline(integ);
                }
            }
        }
    }

    /// Inline refactorization (the refactorizer is here, not on a task): build the operators
    /// for the values just applied and swap them in now; the old ones are dropped here.
    fn refactor_inline(&mut self, integ: &mut dyn TimeIntegrator) {
        let Some(step) = self.refactor_due else {
            return;
        };
        let Some(r) = self.refactorizer.as_mut() else {
            return;
        };
        let message = build_operators(r, step, &self.values);
        drop(self.take_operators(integ, message));
    }

    /// The update whose refactorization is due now: its estimate was just applied and the
    /// refactorizer is out on the updating task (the threaded runner hands the build to
    /// [`OnlineUpdating::take_operators`], or reports a miss with
    /// [`OnlineUpdating::refactor_missed`]).
    pub fn refactor_due(&self) -> Option<u64> {
        if self.refactorizer.is_some() {
            return None;
        }
        self.refactor_due
    }

    /// Take a refactorization build: a build for the update due now swaps its operators in
    /// (at this step boundary) and returns the old ones, to be dropped off the real-time
    /// thread; a build for an earlier update (late) is returned unused and counted; a failed
    /// build turns refactorization off (the operators in use are kept). Allocation-free
    /// (moves only; the reason of a failure is kept, not freed).
    pub fn take_operators(
        &mut self,
        integ: &mut dyn TimeIntegrator,
        message: RefactorMessage,
    ) -> Option<Box<Operators>> {
        let due = self.refactor_due == Some(message.step);
        if due {
            self.refactor_due = None;
        }
        let seconds = message.build_ns as f64 * 1e-9;
        self.refactor.builds += 1;
        self.refactor.build_seconds += seconds;
        self.refactor.longest_build_seconds = self.refactor.longest_build_seconds.max(seconds);
        match message.rebuilt {
            Rebuilt::Failed(why) => {
                if self.refactor.off.is_none() {
                    self.refactor.off = Some((why, integ.time()));
                }
                self.refactor_due = None;
                self.refactorizer = None;
                None
            }
            Rebuilt::Unchanged => {
                if due {
                    self.refactor.unchanged += 1;
                } else {
                    self.refactor.late += 1;
                }
                None
            }
            Rebuilt::Built(mut ops) => {
                if !due || self.refactor.off.is_some() {
                    self.refactor.late += 1;
                    return Some(ops);
                }
                match integ.swap_operators(&mut ops) {
                    Ok(()) => self.refactor.swaps += 1,
                    Err(why) => {
                        self.refactor.off = Some((why.to_string(), integ.time()));
                        self.refactorizer = None;
                    }
                }
                Some(ops)
            }
        }
    }

    /// The build due now was not back in time (threaded runner): the operators in use are
    /// kept, and the miss counted.
    pub fn refactor_missed(&mut self) {
        if self.refactor_due.take().is_some() {
            self.refactor.misses += 1;
        }
    }

    /// Take the refactorizer out to run its builds on the updating task (`None` with
    /// `refactorize = "never"` or if already taken).
    pub fn take_refactorizer(&mut self) -> Option<Box<Refactorizer>> {
        self.refactorizer.take()
    }

    /// The refactorizer while it is here (inline builds), e.g. to inject a fault in a test.
    pub fn refactorizer_mut(&mut self) -> Option<&mut Refactorizer> {
        self.refactorizer.as_deref_mut()
    }

    /// What the refactorization did so far (`None` with `refactorize = "never"`).
    pub fn refactorization(&self) -> Option<&RefactorRecord> {
        self.refactorize.then_some(&self.refactor)
    }

    /// What the filter needs of the step just completed (the ground acceleration; on an
    /// update step, the element's kinematics and force); on an update step, its estimate is
    /// due at the end of the next step ([`OnlineUpdating::awaiting`]). Allocation-free.
    pub fn observe(&mut self, integ: &dyn TimeIntegrator) -> UpdateSnapshot {
        let t = integ.time();
        let p = self.partition();
        let d = self.map[self.force_dof].expect("a free DOF");
        let ag = integ.partitions()[p].state.ground_acceleration(d, t);
        let mut s = UpdateSnapshot {
            step: integ.steps_taken(),
            time: t,
            ground_acceleration: ag,
            update: false,
            start: self.start,
            end: [0.0; 2],
            force: 0.0,
        };
        self.since += 1;
        if self.since < self.period {
            return s;
        }
        self.since = 0;
        s.update = true;
        s.end = self.kinematics(integ, true);
        s.force = self.force(integ);
        self.start = s.end;
        self.awaiting = Some(s.step);
        self.observed += 1;
        s
    }

    /// Turn updating off (its task failed): nothing more is observed or applied; the
    /// receivers keep the last values they received. The first reason is kept.
    pub fn turn_off(&mut self, why: UpdatingOff, time: f64) {
        self.off.get_or_insert((why, time));
        self.awaiting = None;
    }

    /// Whether updating was turned off by its task.
    pub fn is_off(&self) -> bool {
        self.off.is_some()
    }

    /// Take the filter out to run it on a task of its own (`None` if already taken).
    pub fn take_filter(&mut self) -> Option<Box<UpdateFilter>> {
        self.filter.take()
    }

    /// Put the filter back after its task ended (for the record and the summary).
    pub fn restore_filter(&mut self, filter: Box<UpdateFilter>) {
        self.filter = Some(filter);
    }

    /// The identification (`None` while the filter is out on its task).
    pub fn identification(&self) -> Option<&Identification<ElementModel>> {
        self.filter.as_ref().map(|f| &f.identification)
    }

    /// Where the identified element sits.
    pub fn source(&self) -> IdentifiedSource {
        self.source
    }

    /// Updates taken so far (by the filter; the update snapshots taken while it is out).
    pub fn updates(&self) -> u64 {
        self.filter.as_ref().map_or(self.observed, |f| f.updates)
    }

    /// Estimates that were not back from the updating task when due.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// The headers of `updating.csv`: `time`, each parameter, `sd.`each parameter,
    /// `force.predicted`, `force.measured`, `state`.
    pub fn csv_headers(&self) -> Vec<String> {
        let mut h = vec!["time".to_string()];
        h.extend(self.parameters.iter().map(|p| p.to_string()));
        h.extend(self.parameters.iter().map(|p| format!("sd.{p}")));
        h.extend(["force.predicted", "force.measured", "state"].map(String::from));
        h
    }

    /// `updating.csv` as text: one row per update, numbers in Rust's shortest round-trip
    /// form; the state as its code: 0 active, 1 frozen, 2 tripped (only the headers when
    /// the filter was lost with a task that never ended).
    pub fn csv(&self) -> String {
        let mut out = self.csv_headers().join(",");
        out.push('\n');
        let Some(f) = &self.filter else {
            return out;
        };
        for row in f.record.chunks(f.width).take(f.rows) {
            let (nums, state) = row.split_at(f.width - 1);
            for x in nums {
                out.push_str(&format!("{x:e},"));
            }
            // The state as its code (every column of a results table is a number).
            out.push_str(&format!(
                "{}",
                UpdateState::from_code(state[0]).code() as u8
            ));
            out.push('\n');
        }
        out
    }

    fn state(&self) -> UpdateState {
        match &self.filter {
            _ if self.off.is_some() => UpdateState::Tripped,
            Some(f) => f.state(),
            None => UpdateState::Tripped,
        }
    }

    /// What run.json says.
    pub fn summary(&self) -> UpdatingSummary {
        let (parameters, frozen, tripped, dropped) = match &self.filter {
            Some(f) => {
                let id = &f.identification;
                let frozen = id.frozen().map(|fr| {
                    let why = match fr {
                        Frozen::Requested => "requested".to_string(),
                        Frozen::GroundAcceleration => {
                            "ground acceleration above freeze_above_pga".into()
                        }
                        Frozen::AtBound(i) => format!("`{}` reached a bound", self.parameters[i]),
                    };
                    (why, f.frozen_at.unwrap_or(f64::NAN))
                });
                let tripped = id
                    .trip()
                    .map(|t: Trip| (format!("{t:?}"), f.tripped_at.unwrap_or(f64::NAN)));
                let parameters = self
                    .parameters
                    .iter()
                    .enumerate()
                    .map(|(j, p)| (p.to_string(), id.parameter(j), id.parameter_sd(j)))
                    .collect();
                (parameters, frozen, tripped, f.dropped)
            }
            None => (
                self.parameters
                    .iter()
                    .enumerate()
                    .map(|(j, p)| (p.to_string(), self.values[j], f64::NAN))
                    .collect(),
                None,
                None,
                0,
            ),
        };
        UpdatingSummary {
            identified: self.identified.clone(),
            source: match self.source {
                IdentifiedSource::Specimen { .. } => "specimen",
                IdentifiedSource::Numerical { .. } => "numerical",
            },
            displacement: match self.source {
                IdentifiedSource::Specimen { .. } => "measured",
                IdentifiedSource::Numerical { .. } => "state",
            },
            receivers: self.receivers.iter().map(|r| r.2.clone()).collect(),
            parameters,
            updates: self.updates(),
            applied: self.applied,
            period: self.period,
            state: self.state(),
            frozen,
            tripped,
            apply_error: self.apply_error.map(|(r, j)| {
                format!(
                    "`{}` refused {} = {:e}",
                    self.receivers[r].2, self.parameters[j], self.values[j]
                )
            }),
            dropped,
            task_fault: self.off.map(|(why, t)| (why.describe(), t)),
            misses: self.misses,
            refactorization: self.refactorization().cloned(),
        }
    }
}

impl UpdateFilter {
    /// Parameters identified (the used length of [`UpdateEstimate::values`]).
    pub fn parameter_count(&self) -> usize {
        self.parameters.len()
    }

    /// The identification.
    pub fn identification(&self) -> &Identification<ElementModel> {
        &self.identification
    }

    /// Take one step's snapshot: watch the ground acceleration and, on an update step, take
    /// one update over the `period` steps since the last one; returns its estimate then.
    /// Allocation-free.
    pub fn process(&mut self, s: &UpdateSnapshot) -> Option<UpdateEstimate> {
        let t = s.time;
        self.identification
            .observe_ground_acceleration(s.ground_acceleration);
        self.note_state(t);
        if !s.update {
            return None;
        }
        let kinematics = crate::updating::StepKinematics {
            dt: self.period as f64 * self.dt,
            displacement: [s.start[0], s.end[0]],
            velocity: [s.start[1], s.end[1]],
        };
        let sending = !self.identification.is_frozen() && self.identification.trip().is_none();
        let trip = self.identification.update(&kinematics, s.force);
        self.updates += 1;
        let mut e = UpdateEstimate {
            step: s.step,
            send: sending && trip.is_none(),
            values: [0.0; MAX_UPDATE_PARAMETERS],
            task_failed: false,
        };
        for (j, v) in e.values.iter_mut().take(self.parameters.len()).enumerate() {
            *v = self.identification.parameter(j);
        }
        self.note_state(t);
        self.push_row(t, s.force);
        Some(e)
    }

    fn note_state(&mut self, t: f64) {
        if self.frozen_at.is_none() && self.identification.is_frozen() {
            self.frozen_at = Some(t);
        }
        if self.tripped_at.is_none() && self.identification.trip().is_some() {
            self.tripped_at = Some(t);
        }
    }

    fn state(&self) -> UpdateState {
        if self.identification.trip().is_some() {
            UpdateState::Tripped
        } else if self.identification.is_frozen() {
            UpdateState::Frozen
        } else {
            UpdateState::Active
        }
    }

    fn push_row(&mut self, t: f64, measured: f64) {
        if self.rows == self.capacity {
            self.dropped += 1;
            return;
        }
        let np = self.parameters.len();
        let state = self.state().code();
        let row = &mut self.record[self.rows * self.width..(self.rows + 1) * self.width];
        row[0] = t;
        for j in 0..np {
            row[1 + j] = self.identification.parameter(j);
            row[1 + np + j] = self.identification.parameter_sd(j);
        }
        row[1 + 2 * np] = self.identification.force();
        row[2 + 2 * np] = measured;
        row[3 + 2 * np] = state;
        self.rows += 1;
    }
}

/// A [`StepExecutor`] that runs an [`OnlineUpdating`] after every completed step of another
/// one (the run loop is unchanged: [`StepExecutor::after_step`]).
pub struct WithUpdating<'a> {
    /// The executor of the steps.
    pub inner: &'a mut dyn StepExecutor,
    /// The updating.
    pub updating: &'a mut OnlineUpdating,
}

impl StepExecutor for WithUpdating<'_> {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.inner.integrator()
    }
    fn step(&mut self) -> Result<(), StepError> {
        self.inner.step()
    }
    fn overruns(&self) -> u64 {
        self.inner.overruns()
    }
    fn after_step(&mut self) {
        self.inner.after_step();
        self.updating.after_step(self.inner.integrator());
    }
    fn wait_tick(&mut self) {
        self.inner.wait_tick()
    }
    fn take_fault(&mut self) -> Option<Fault> {
        self.inner.take_fault()
    }
    fn partitions_attached(&self) -> bool {
        self.inner.partitions_attached()
    }
}
