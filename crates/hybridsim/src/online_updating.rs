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
//! the same steps and give the same bits. The integrator's iteration matrices (`D^N`, the
//! Steklov–Poincaré operator `H`) are kept: no refactorization. A frozen or tripped
//! identification sends nothing more; the receivers keep the last values they received.
//!
//! [`Model::updating`]: crate::model::Model::updating
//! [`PhysicalSubstructure::measured_displacement`]: crate::physical::PhysicalSubstructure::measured_displacement
//! [`Element::deformation`]: crate::elements::Element::deformation

use crate::assembly::ElementWorkspace;
use crate::error::ModelError;
use crate::integrators::StepError;
use crate::integrators::TimeIntegrator;
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

/// The online updating task of a run (see the module documentation).
pub struct OnlineUpdating {
    identification: Identification<ElementModel>,
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
    dt: f64,
    since: u64,
    /// Deformation and its rate at the end of the last update (or the start).
    start: [f64; 2],
    pending: bool,
    values: Vec<f64>,
    applied: u64,
    apply_error: Option<(usize, usize)>,
    // Buffers.
    partition_u: Vec<f64>,
    element_u: Vec<f64>,
    element_v: Vec<f64>,
    element_f: Vec<f64>,
    ws: ElementWorkspace,
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
        let name = instance.name.clone();
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
                if let Some(slot) = part.state.slots.iter().position(|s| s.name == name) {
                    let map = part.state.slots[slot].map.clone();
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
                    .position(|s| &s.name == rname)
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
            receivers.push((k, s, rname.clone()));
        }
        let parameters: Vec<&'static str> = identification.model().parameter_names().to_vec();
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
        let part = &integ.partitions()[match source {
            IdentifiedSource::Specimen { partition }
            | IdentifiedSource::Numerical { partition, .. } => partition,
        }];
        let n = part.state.n_dofs();
        let ne = map.len();
        let ws = part.state.workspace();
        let np = parameters.len();
        let width = 4 + 2 * np;
        let period = cfg.period.max(1);
        let capacity = (n_steps / period + 1) as usize;
        let mut me = Self {
            identification,
            identified: name,
            source,
            map,
            force_dof,
            force_sign,
            parameters,
            receivers,
            period,
            dt: integ.time_step(),
            since: 0,
            start: [0.0; 2],
            pending: false,
            values: vec![0.0; np],
            applied: 0,
            apply_error: None,
            partition_u: vec![0.0; n],
            element_u: vec![0.0; ne],
            element_v: vec![0.0; ne],
            element_f: vec![0.0; ne],
            ws,
            record: vec![0.0; capacity * width],
            width,
            rows: 0,
            capacity,
            dropped: 0,
            frozen_at: None,
            tripped_at: None,
            updates: 0,
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
        let element = self.identification.model().element();
        let d = element.deformation(&self.element_u).unwrap_or(f64::NAN);
        let v = element.deformation(&self.element_v).unwrap_or(f64::NAN);
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

    /// After every completed coarse step: apply the estimates of the previous update (one
    /// step of latency), watch the ground acceleration, and update every `period` steps.
    /// Allocation-free.
    pub fn after_step(&mut self, integ: &mut dyn TimeIntegrator) {
        if self.pending {
            self.pending = false;
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
                }
            }
        }
        let t = integ.time();
        let p = self.partition();
        let d = self.map[self.force_dof].expect("a free DOF");
        let ag = integ.partitions()[p].state.ground_acceleration(d, t);
        self.identification.observe_ground_acceleration(ag);
        self.note_state(t);
        self.since += 1;
        if self.since < self.period {
            return;
        }
        self.since = 0;
        let end = self.kinematics(integ, true);
        let force = self.force(integ);
        let kinematics = crate::updating::StepKinematics {
            dt: self.period as f64 * self.dt,
            displacement: [self.start[0], end[0]],
            velocity: [self.start[1], end[1]],
        };
        self.start = end;
        let sending = !self.identification.is_frozen() && self.identification.trip().is_none();
        let trip = self.identification.update(&kinematics, force);
        self.updates += 1;
        if sending && trip.is_none() {
            for (j, v) in self.values.iter_mut().enumerate() {
                *v = self.identification.parameter(j);
            }
            self.pending = true;
        }
        self.note_state(t);
        self.push_row(t, force);
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

    /// The identification.
    pub fn identification(&self) -> &Identification<ElementModel> {
        &self.identification
    }

    /// Where the identified element sits.
    pub fn source(&self) -> IdentifiedSource {
        self.source
    }

    /// Updates taken so far.
    pub fn updates(&self) -> u64 {
        self.updates
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
    /// form; the state as its code: 0 active, 1 frozen, 2 tripped.
    pub fn csv(&self) -> String {
        let mut out = self.csv_headers().join(",");
        out.push('\n');
        for row in self.record.chunks(self.width).take(self.rows) {
            let (nums, state) = row.split_at(self.width - 1);
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

    /// What run.json says.
    pub fn summary(&self) -> UpdatingSummary {
        let id = &self.identification;
        let frozen = id.frozen().map(|f| {
            let why = match f {
                Frozen::Requested => "requested".to_string(),
                Frozen::GroundAcceleration => "ground acceleration above freeze_above_pga".into(),
                Frozen::AtBound(i) => format!("`{}` reached a bound", self.parameters[i]),
            };
            (why, self.frozen_at.unwrap_or(f64::NAN))
        });
        let tripped = id
            .trip()
            .map(|t: Trip| (format!("{t:?}"), self.tripped_at.unwrap_or(f64::NAN)));
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
            parameters: self
                .parameters
                .iter()
                .enumerate()
                .map(|(j, p)| (p.to_string(), id.parameter(j), id.parameter_sd(j)))
                .collect(),
            updates: self.updates,
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
            dropped: self.dropped,
        }
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
}
