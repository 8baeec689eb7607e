//! The typed port of a physical substructure, and the lab-control handle of the runner.
//!
//! A physical substructure is reached in exactly two ways:
//!
//! - by an **integrator**, through the [`PhysicalPort`] of its partition: measure at rest
//!   once, then command the target displacement and velocity once per controller tick and
//!   receive the measured restoring force. Commanding consumes a [`Tick`], which only the
//!   core's integrators can mint (one per physical substep, at that substep's time), and a
//!   port never reverts: a specimen cannot be un-deformed. Residual evaluation
//!   ([`crate::assembly::StateSpace::residual`]) never touches the port, so a scheme that
//!   iterates on its residual cannot command the specimen by accident; schemes that would
//!   need the specimen force more than once per tick are refused when they are built
//!   ([`crate::integrators::build`]).
//! - by a **runner**, through [`LabControl`]: drain the controller-rate lab records, trip the
//!   safety layer, read the safety summary and the seeds. It cannot command anything.
//!
//! Errors are a [`PortError`]; a safety stop carries the latched [`SafetyEvent`] by value, so
//! nothing allocates when a test trips.

use super::safety::{EventKind, SafetyEvent};
use crate::elements::Quantity;
use crate::model::lab::ActuatorLimits;

/// A failure at a physical substructure's port.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PortError {
    /// The safety layer stopped the test; the event is latched in the layer.
    #[error("{0}")]
    Safety(SafetyEvent),
    /// A fault that is not a safety event (a numerical stand-in that cannot evaluate its
    /// elements, a non-finite stand-in force).
    #[error("{0}")]
    Fault(String),
}

/// A failure of a transfer system (link, controller, virtual lab). The safety layer turns
/// every transfer error into an event of its `kind` ([`EventKind::TransferFault`] unless the
/// transfer system knows better: a link timeout, a controller interlock, …) and keeps the
/// message for run.json.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct TransferError {
    /// The safety event it becomes.
    pub kind: EventKind,
    /// What happened (names the peer, the tick and the cause).
    pub message: String,
}

impl TransferError {
    /// A transfer fault.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            kind: EventKind::TransferFault,
            message: message.into(),
        }
    }

    /// A failure that is the safety event `kind`.
    pub fn of(kind: EventKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// The right to command a physical substructure once, at one controller tick.
///
/// Not `Clone` nor `Copy`, and only the core's integrators can make one
/// (the port's `tick` is crate-private): whoever holds a port outside the core (a runner,
/// a front end) cannot command the specimen, and every command an integrator sends is
/// counted against the ticks it minted.
#[derive(Debug)]
pub struct Tick {
    time: f64,
}

impl Tick {
    /// Simulation time of the tick.
    pub fn time(&self) -> f64 {
        self.time
    }
}

/// What a physical substructure does for an integrator.
///
/// `u`, `v` and `force` are over the partition DOFs (in the order of
/// [`crate::assembly::StateSpace::dofs`]). The force is the *resisting* force the specimen
/// exerts back on those DOFs.
pub trait PhysicalSubstructure: Send {
    /// A short description for summaries (`numerical stand-in (2 elements)`, …).
    fn describe(&self) -> String;

    /// Measure the force at rest before step 1 (the consistent start uses it).
    fn measure_at_rest(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError>;

    /// Command displacement `u` and velocity `v` at the time of `tick` and return the
    /// measured force. Called once per controller tick; never reverted. Must not allocate.
    fn command(
        &mut self,
        tick: &Tick,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError>;

    /// Energy held or absorbed by the specimen at its last commanded state (stored strain
    /// energy, or the work `∫ F·dd` it absorbed), when known.
    fn potential_energy(&self) -> Option<f64> {
        None
    }

    /// The displacement measured at the last command, over the partition DOFs, into `out`;
    /// `false` when the substructure has no displacement measurement (stand-ins, links). Used
    /// by the I-modification of operator splitting. Allocation-free.
    fn measured_displacement(&self, _out: &mut [f64]) -> bool {
        false
    }

    /// Names of the substructure's recorded channels (element states, …).
    fn channel_names(&self) -> Vec<(String, Quantity, String)> {
        Vec::new()
    }

    /// Values of those channels (length of [`PhysicalSubstructure::channel_names`]).
    fn channels(&self, _out: &mut [f64]) {}

    /// Make an independent copy in its initial state, when possible (numerical stand-ins can;
    /// a laboratory cannot).
    fn try_clone(&self) -> Option<Box<dyn PhysicalSubstructure>> {
        None
    }

    /// The lab-control handle, when a transfer system stands behind the port.
    fn lab(&self) -> Option<&dyn LabControl> {
        None
    }

    /// The lab-control handle, mutably.
    fn lab_mut(&mut self) -> Option<&mut dyn LabControl> {
        None
    }
}

/// The wall clock of a runner that paces controller ticks: the bumpless start of a
/// laboratory ([`crate::physical::safety::SafetyLayer::approach`]) runs before the test
/// clock starts (inside the consistent start of the integrator), so a wall-clock runner hands
/// its clock to every laboratory first ([`LabControl::set_tick_clock`]).
pub trait TickClock: Send {
    /// Wait for the next controller tick (sleep to its deadline).
    fn wait_tick(&mut self);
}

/// What a runner may do with a laboratory: everything but commanding it.
pub trait LabControl: Send {
    /// Column names of the controller-rate lab records.
    fn lab_columns(&self) -> Vec<String>;

    /// Pace the ticks of the bumpless start by `clock` (one per controller tick of wall time);
    /// without one they follow each other at once, which is right for the virtual lab,
    /// whose clock is the tick count.
    fn set_tick_clock(&mut self, clock: Box<dyn TickClock>);

    /// Hand the lab records gathered since the last call to `sink`, oldest first.
    /// Allocation-free.
    fn drain_lab(&mut self, sink: &mut dyn FnMut(&[f64]));

    /// Whether the controller-rate lab records are gathered (yes unless told otherwise): a
    /// front end that would discard them (an in-memory run without lab records) turns them
    /// off and spares the lab a record per tick. Nothing else depends on them: the run, its
    /// results and its safety state are the same either way.
    fn set_records_kept(&mut self, _kept: bool) {}

    /// Trip the safety layer from outside (operator abort, deadline overruns, writer failure,
    /// divergence of Λ): the same path as a limit breach. The first event latches.
    /// Allocation-free.
    fn trip(&mut self, kind: EventKind, time: f64);

    /// The latched safety event, if any (allocation-free).
    fn event(&self) -> Option<SafetyEvent>;

    /// After a trip with `on_trip = "ramp_down"`: send the next command of the paced ramp to
    /// the rest position (one per controller tick; the runner paces the calls), checked
    /// against the limits, measured, checked again and logged as a lab record. An event
    /// during the ramp (a breach, a transfer error) latches a second event and holds.
    /// Returns `true` while the ramp goes on. Allocation-free.
    fn ramp_tick(&mut self) -> bool;

    /// State of the safety layer.
    fn safety_summary(&self) -> SafetySummary;

    /// Whether the transfer system is virtual (no hardware behind it).
    fn is_virtual(&self) -> bool;

    /// Random seeds used by the transfer system (recorded in run.json).
    fn seeds(&self) -> Vec<(String, u64)>;

    /// What this laboratory's transfer system is and where it is: a front end that reaches
    /// the network connects it ([`LabControl::attach_transfer`]).
    fn transfer_request(&self) -> super::transfer::TransferRequest;

    /// Put `transfer` in place of the laboratory's transfer system (a network link built by a
    /// front end for [`LabControl::transfer_request`]). Refused once anything was sent or
    /// measured, and when its actuator count differs.
    fn attach_transfer(
        &mut self,
        transfer: Box<dyn super::transfer::TransferSystem>,
    ) -> Result<(), String>;

    /// A fresh virtual laboratory with this laboratory's actuators, sensors, specimen and
    /// injected faults: what `hybridsim controller` serves on a controller link.
    fn virtual_twin(&self) -> Box<dyn super::transfer::TransferSystem>;
}

/// The state of a lab's safety layer (for run.json, reports and tests).
#[derive(Debug, Clone, PartialEq)]
pub struct SafetySummary {
    /// Still armed (no event).
    pub armed: bool,
    /// The latched event.
    pub event: Option<SafetyEvent>,
    /// Actuator names.
    pub actuators: Vec<String>,
    /// Largest |command| ever sent per actuator (specimen units).
    pub max_sent: Vec<f64>,
    /// Limits per actuator.
    pub limits: Vec<ActuatorLimits>,
    /// Commands sent.
    pub commands_sent: u64,
    /// Lab records overwritten before being drained.
    pub lab_records_dropped: u64,
    /// Energy generated by the physical substructure so far (`−W`, force·length, model units;
    /// the energy-growth part of the divergence criterion).
    pub energy_generated: f64,
    /// Its bound.
    pub energy_bound: f64,
    /// The largest value the energy criterion compared with its bound (the energy generated
    /// over a window, net of the recoverable elastic energy, or since the start, by
    /// `energy_mode`; −∞ before the first tick).
    pub energy_peak: f64,
    /// How the ramp-down went: `none` (hold, or no trip), `ramping`, `completed` (at the
    /// rest position) or `held` (a second event stopped it).
    pub ramp: RampState,
    /// Commands of the ramp-down sent so far.
    pub ramp_commands: u64,
    /// An event during the ramp-down, which stopped it and left the actuators holding.
    pub second_event: Option<SafetyEvent>,
    /// The transfer system's own account of its first failure (a link timeout naming the
    /// peer and the tick, …).
    pub transfer_fault: Option<String>,
    /// The transfer system's statistics (link latency and losses; empty for the virtual lab).
    pub transfer_statistics: Vec<(String, f64)>,
    /// Per actuator, the largest change of the command sent in one controller tick (specimen
    /// units), the bumpless start excluded.
    pub largest_command_jump: Vec<f64>,
    /// Online estimates of the compensators (adaptive time series: delay, amplitude factor).
    pub compensation_statistics: Vec<(String, f64)>,
}

/// Progress of a paced ramp-down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RampState {
    /// No ramp (armed, or `on_trip = "hold"`).
    None,
    /// Going on: one command per controller tick.
    Ramping,
    /// At the rest position.
    Completed,
    /// Stopped by a second event: holding the last accepted command.
    Held,
}

impl RampState {
    /// Name in run.json.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Ramping => "ramping",
            Self::Completed => "completed",
            Self::Held => "held",
        }
    }
}

/// A physical substructure as a partition holds it: the port, the last measured force and the
/// count of commands.
pub struct PhysicalPort {
    inner: Box<dyn PhysicalSubstructure>,
    measured: Vec<f64>,
    commands: u64,
    last_open_loop: Option<f64>,
}

impl PhysicalPort {
    /// Wrap a physical substructure over `n_dofs` partition DOFs.
    pub fn new(inner: Box<dyn PhysicalSubstructure>, n_dofs: usize) -> Self {
        Self {
            inner,
            measured: vec![0.0; n_dofs],
            commands: 0,
            last_open_loop: None,
        }
    }

    /// Mint the tick of one command at simulation time `time` (integrators only).
    pub(crate) fn tick(&self, time: f64) -> Tick {
        Tick { time }
    }

    /// Measure at rest: `y = [u; v; …]` over `n` DOFs. Returns the measured force.
    pub fn measure_at_rest(&mut self, t: f64, y: &[f64]) -> Result<&[f64], PortError> {
        let n = self.measured.len();
        self.last_open_loop = None;
        self.inner
            .measure_at_rest(t, &y[..n], &y[n..2 * n], &mut self.measured)?;
        Ok(&self.measured)
    }

    /// Command the state `y = [u; v; …]` at `tick` (consumed) and return the measured force.
    /// Allocation-free.
    pub fn command(&mut self, tick: Tick, y: &[f64]) -> Result<&[f64], PortError> {
        let n = self.measured.len();
        self.commands += 1;
        self.inner
            .command(&tick, &y[..n], &y[n..2 * n], &mut self.measured)?;
        Ok(&self.measured)
    }

    /// Command the state `y` at time `t` outside an integrator (an open-loop, displacement-
    /// controlled test of the specimen through its safety layer, as a lab runs before a hybrid
    /// test). `t` must be later than every earlier command: a specimen cannot go back.
    pub fn command_open_loop(&mut self, t: f64, y: &[f64]) -> Result<&[f64], PortError> {
        if self
            .last_open_loop
            .is_some_and(|last| t.partial_cmp(&last) != Some(std::cmp::Ordering::Greater))
        {
            return Err(PortError::Fault(format!(
                "open-loop command at t = {t} is not later than the previous one"
            )));
        }
        self.last_open_loop = Some(t);
        self.command(Tick { time: t }, y)
    }

    /// The last measured force over the partition DOFs.
    pub fn measured(&self) -> &[f64] {
        &self.measured
    }

    /// Commands sent so far (ticks consumed).
    pub fn commands(&self) -> u64 {
        self.commands
    }

    /// The physical substructure behind the port (read-only: describe, channels, energy).
    pub fn substructure(&self) -> &dyn PhysicalSubstructure {
        self.inner.as_ref()
    }

    /// Replace the substructure behind the port (analysis wrappers such as a delay line),
    /// keeping the command count.
    pub fn map_substructure(
        &mut self,
        f: impl FnOnce(Box<dyn PhysicalSubstructure>) -> Box<dyn PhysicalSubstructure>,
    ) {
        let placeholder: Box<dyn PhysicalSubstructure> = Box::new(Unplugged);
        let inner = std::mem::replace(&mut self.inner, placeholder);
        self.inner = f(inner);
    }

    /// Put a command hook in front of the substructure ([`Intercepted`]): fault injection,
    /// counting, tracing.
    pub fn intercept(&mut self, hook: Box<CommandHook>) {
        self.map_substructure(|inner| Box::new(Intercepted::new(inner, hook)));
    }

    /// The lab-control handle, when a transfer system stands behind the port.
    pub fn lab(&self) -> Option<&dyn LabControl> {
        self.inner.lab()
    }

    /// The lab-control handle, mutably.
    pub fn lab_mut(&mut self) -> Option<&mut dyn LabControl> {
        self.inner.lab_mut()
    }
}

/// The hook of an [`Intercepted`] substructure: it receives the inner substructure and the
/// arguments of every command, and decides what the integrator gets back.
pub type CommandHook = dyn FnMut(&mut dyn PhysicalSubstructure, &Tick, &[f64], &[f64], &mut [f64]) -> Result<(), PortError>
    + Send;

/// A physical substructure seen through a hook on every command (fault injection in tests and
/// reliability campaigns, counting, tracing); everything else is forwarded to the inner one,
/// the lab-control handle included.
pub struct Intercepted {
    inner: Box<dyn PhysicalSubstructure>,
    hook: Box<CommandHook>,
}

impl Intercepted {
    /// Wrap `inner`; `hook(inner, tick, u, v, force)` runs in place of each command.
    pub fn new(inner: Box<dyn PhysicalSubstructure>, hook: Box<CommandHook>) -> Self {
        Self { inner, hook }
    }
}

impl PhysicalSubstructure for Intercepted {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn measure_at_rest(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        self.inner.measure_at_rest(t, u, v, force)
    }
    fn command(
        &mut self,
        tick: &Tick,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        (self.hook)(self.inner.as_mut(), tick, u, v, force)
    }
    fn potential_energy(&self) -> Option<f64> {
        self.inner.potential_energy()
    }
    fn measured_displacement(&self, out: &mut [f64]) -> bool {
        self.inner.measured_displacement(out)
    }
    fn channel_names(&self) -> Vec<(String, Quantity, String)> {
        self.inner.channel_names()
    }
    fn channels(&self, out: &mut [f64]) {
        self.inner.channels(out)
    }
    fn lab(&self) -> Option<&dyn LabControl> {
        self.inner.lab()
    }
    fn lab_mut(&mut self) -> Option<&mut dyn LabControl> {
        self.inner.lab_mut()
    }
}

/// Stands in a port for the instant its substructure is being replaced.
struct Unplugged;

impl PhysicalSubstructure for Unplugged {
    fn describe(&self) -> String {
        "unplugged".into()
    }
    fn measure_at_rest(
        &mut self,
        _: f64,
        _: &[f64],
        _: &[f64],
        _: &mut [f64],
    ) -> Result<(), PortError> {
        Err(PortError::Fault(
            "no physical substructure is plugged in".into(),
        ))
    }
    fn command(&mut self, _: &Tick, _: &[f64], _: &[f64], _: &mut [f64]) -> Result<(), PortError> {
        Err(PortError::Fault(
            "no physical substructure is plugged in".into(),
        ))
    }
}
