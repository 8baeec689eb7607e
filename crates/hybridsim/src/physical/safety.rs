//! The safety layer: mandatory, on the production path, wrapping every transfer system.
//!
//! - Every actuator has required limits on displacement, velocity, force and command increment
//!   (no silent infinite default, see [`crate::model::lab::SafetySettings`]).
//! - The *final* command of every tick — after compensation, scaling and the DOF→actuator
//!   transform, in specimen units — is checked before it is sent; every measurement is checked
//!   when it is received (finite, force and displacement within limits).
//! - It starts armed and bumpless: the reference for the first increment is the position
//!   measured at rest.
//! - On an event it never sends the offending command: it latches the event, then holds the last
//!   accepted command or ramps down to the rest position within the limits, and refuses every
//!   further command. Deadline overruns, writer overflow, divergence and an operator abort take
//!   the same path through [`SafetyLayer::trip`].

use super::transfer::{ActuatorCommand, TransferSystem};
use super::ProviderError;
use crate::model::lab::{ActuatorLimits, DivergenceSettings, TripAction};

/// What caused a safety event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A command beyond the stroke.
    DisplacementLimit,
    /// A command velocity beyond the limit.
    VelocityLimit,
    /// A command increment beyond the limit.
    IncrementLimit,
    /// A non-finite command.
    NonFiniteCommand,
    /// A measured force beyond the limit.
    ForceLimit,
    /// A measured displacement beyond the stroke.
    MeasuredDisplacement,
    /// A non-finite measurement.
    NonFiniteMeasurement,
    /// The response diverges (criterion in [`DivergenceMonitor`]).
    Divergence,
    /// Repeated deadline overruns.
    DeadlineOverruns,
    /// The results ring overflowed (data loss is unacceptable).
    WriterOverflow,
    /// The operator aborted (Ctrl-C).
    OperatorAbort,
    /// The transfer system failed.
    TransferFault,
}

impl EventKind {
    /// Short name for run.json and lab.csv.
    pub fn name(&self) -> &'static str {
        match self {
            Self::DisplacementLimit => "displacement_limit",
            Self::VelocityLimit => "velocity_limit",
            Self::IncrementLimit => "increment_limit",
            Self::NonFiniteCommand => "non_finite_command",
            Self::ForceLimit => "force_limit",
            Self::MeasuredDisplacement => "measured_displacement_limit",
            Self::NonFiniteMeasurement => "non_finite_measurement",
            Self::Divergence => "divergence",
            Self::DeadlineOverruns => "deadline_overruns",
            Self::WriterOverflow => "writer_overflow",
            Self::OperatorAbort => "operator_abort",
            Self::TransferFault => "transfer_fault",
        }
    }
}

/// A latched safety event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SafetyEvent {
    /// Cause.
    pub kind: EventKind,
    /// Controller tick.
    pub tick: u64,
    /// Simulation time.
    pub time: f64,
    /// Actuator index, when the event is about one.
    pub actuator: Option<usize>,
    /// Offending value (NaN when not applicable).
    pub value: f64,
    /// The limit it broke (NaN when not applicable).
    pub limit: f64,
}

impl std::fmt::Display for SafetyEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "safety event `{}` at tick {} (t = {:.6} s)",
            self.kind.name(),
            self.tick,
            self.time
        )?;
        if let Some(a) = self.actuator {
            write!(f, ", actuator {a}")?;
        }
        if self.value.is_finite() || self.value.is_infinite() {
            write!(f, ": value {:e}", self.value)?;
        } else if self.value.is_nan() && self.kind == EventKind::NonFiniteMeasurement {
            write!(f, ": value NaN")?;
        }
        if !self.limit.is_nan() {
            write!(f, " beyond limit {:e}", self.limit)?;
        }
        write!(f, "; no offending command was sent")
    }
}

/// Safety state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafetyState {
    /// Commands pass.
    Armed,
    /// An event latched; nothing more is sent except the configured ramp-down.
    Tripped,
}

/// The safety layer around a transfer system.
pub struct SafetyLayer<T: TransferSystem> {
    inner: T,
    limits: Vec<ActuatorLimits>,
    on_trip: TripAction,
    dt_c: f64,
    last: Vec<f64>,
    rest: Vec<f64>,
    state: SafetyState,
    event: Option<SafetyEvent>,
    max_sent: Vec<f64>,
    sent: u64,
    ramp: Vec<ActuatorCommand>,
    scratch_f: Vec<f64>,
    scratch_x: Vec<f64>,
}

impl<T: TransferSystem> SafetyLayer<T> {
    /// Wrap `inner` with one limit set per actuator.
    pub fn new(inner: T, limits: Vec<ActuatorLimits>, on_trip: TripAction, dt_c: f64) -> Self {
        let n = limits.len();
        Self {
            inner,
            limits,
            on_trip,
            dt_c,
            last: vec![0.0; n],
            rest: vec![0.0; n],
            state: SafetyState::Armed,
            event: None,
            max_sent: vec![0.0; n],
            sent: 0,
            ramp: vec![ActuatorCommand::default(); n],
            scratch_f: vec![0.0; n],
            scratch_x: vec![0.0; n],
        }
    }

    /// The wrapped transfer system.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Limits per actuator.
    pub fn limits(&self) -> &[ActuatorLimits] {
        &self.limits
    }

    /// Current state.
    pub fn state(&self) -> SafetyState {
        self.state
    }

    /// The latched event.
    pub fn event(&self) -> Option<SafetyEvent> {
        self.event
    }

    /// Largest |d| ever sent per actuator (the record that no command beyond a limit left).
    pub fn max_sent(&self) -> &[f64] {
        &self.max_sent
    }

    /// Commands sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Last accepted command per actuator.
    pub fn last_accepted(&self) -> &[f64] {
        &self.last
    }

    /// Measure at rest and arm; the rest position is the bumpless reference.
    pub fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), ProviderError> {
        self.inner.measure_at_rest(force, position)?;
        self.state = SafetyState::Armed;
        self.event = None;
        self.last.copy_from_slice(position);
        self.rest.copy_from_slice(position);
        self.check_measurement(0, 0.0, force, position)
            .map_err(|e| ProviderError(e.to_string()))
    }

    fn check_command(&self, tick: u64, time: f64, cmd: &[ActuatorCommand]) -> Option<SafetyEvent> {
        for (k, (c, l)) in cmd.iter().zip(&self.limits).enumerate() {
            let ev = |kind, value, limit| {
                Some(SafetyEvent {
                    kind,
                    tick,
                    time,
                    actuator: Some(k),
                    value,
                    limit,
                })
            };
            if !(c.d.is_finite() && c.v.is_finite() && c.a.is_finite()) {
                return ev(EventKind::NonFiniteCommand, c.d, f64::NAN);
            }
            if c.d.abs() > l.displacement {
                return ev(EventKind::DisplacementLimit, c.d, l.displacement);
            }
            if c.v.abs() > l.velocity {
                return ev(EventKind::VelocityLimit, c.v, l.velocity);
            }
            let inc = c.d - self.last[k];
            if inc.abs() > l.increment {
                return ev(EventKind::IncrementLimit, inc, l.increment);
            }
        }
        None
    }

    fn check_measurement(
        &self,
        tick: u64,
        time: f64,
        force: &[f64],
        achieved: &[f64],
    ) -> Result<(), SafetyEvent> {
        for (k, l) in self.limits.iter().enumerate() {
            let ev = |kind, value, limit| SafetyEvent {
                kind,
                tick,
                time,
                actuator: Some(k),
                value,
                limit,
            };
            if !force[k].is_finite() {
                return Err(ev(EventKind::NonFiniteMeasurement, force[k], f64::NAN));
            }
            if !achieved[k].is_finite() {
                return Err(ev(EventKind::NonFiniteMeasurement, achieved[k], f64::NAN));
            }
            if force[k].abs() > l.force {
                return Err(ev(EventKind::ForceLimit, force[k], l.force));
            }
            if achieved[k].abs() > l.displacement {
                return Err(ev(
                    EventKind::MeasuredDisplacement,
                    achieved[k],
                    l.displacement,
                ));
            }
        }
        Ok(())
    }

    /// Check and send one tick, then receive its measurement. On an event nothing offending is
    /// sent; the layer trips and the error says why.
    pub fn exchange(
        &mut self,
        tick: u64,
        time: f64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<(), SafetyEvent> {
        if self.state == SafetyState::Tripped {
            return Err(self.event.expect("tripped with an event"));
        }
        if let Some(ev) = self.check_command(tick, time, cmd) {
            self.trip(ev);
            return Err(ev);
        }
        if let Err(e) = self.inner.send(tick, t_wall, cmd) {
            let _ = e;
            let ev = SafetyEvent {
                kind: EventKind::TransferFault,
                tick,
                time,
                actuator: None,
                value: f64::NAN,
                limit: f64::NAN,
            };
            self.trip(ev);
            return Err(ev);
        }
        self.sent += 1;
        for (k, c) in cmd.iter().enumerate() {
            self.last[k] = c.d;
            self.max_sent[k] = self.max_sent[k].max(c.d.abs());
        }
        let recv = self.inner.receive(tick, force, achieved);
        let checked = match recv {
            Ok(()) => self.check_measurement(tick, time, force, achieved),
            Err(_) => Err(SafetyEvent {
                kind: EventKind::TransferFault,
                tick,
                time,
                actuator: None,
                value: f64::NAN,
                limit: f64::NAN,
            }),
        };
        if let Err(ev) = checked {
            self.trip(ev);
            return Err(ev);
        }
        Ok(())
    }

    /// Latch `event` (the first one wins) and bring the actuators to the configured safe state:
    /// hold the last accepted command, or ramp to the rest position in steps within the
    /// increment and velocity limits. Idempotent.
    pub fn trip(&mut self, event: SafetyEvent) {
        if self.state == SafetyState::Tripped {
            return;
        }
        self.state = SafetyState::Tripped;
        self.event = Some(event);
        if let TripAction::RampDown { rate } = self.on_trip {
            let mut tick = event.tick + 1;
            loop {
                let mut done = true;
                for (k, l) in self.limits.iter().enumerate() {
                    let step = (rate * self.dt_c)
                        .min(l.increment)
                        .min(l.velocity * self.dt_c);
                    let gap = self.rest[k] - self.last[k];
                    let d = if gap.abs() <= step {
                        self.rest[k]
                    } else {
                        done = false;
                        self.last[k] + step.copysign(gap)
                    };
                    self.ramp[k] = ActuatorCommand {
                        d,
                        v: (d - self.last[k]) / self.dt_c,
                        a: 0.0,
                    };
                }
                // Every ramp command is within the limits by construction; check anyway.
                if self.check_command(tick, event.time, &self.ramp).is_some() {
                    break;
                }
                if self
                    .inner
                    .send(tick, tick as f64 * self.dt_c, &self.ramp)
                    .is_err()
                {
                    break;
                }
                let _ = self
                    .inner
                    .receive(tick, &mut self.scratch_f, &mut self.scratch_x);
                self.sent += 1;
                for k in 0..self.last.len() {
                    self.last[k] = self.ramp[k].d;
                    self.max_sent[k] = self.max_sent[k].max(self.ramp[k].d.abs());
                }
                tick += 1;
                if done {
                    break;
                }
            }
        }
    }
}

/// Divergence criterion (stated in [`DivergenceSettings`]): non-finite values; |u| above the
/// displacement bound; |Λ| above the force bound; or the peak |u| per window growing by the
/// growth factor in `windows` consecutive windows while above the floor. Allocation-free.
#[derive(Debug, Clone)]
pub struct DivergenceMonitor {
    settings: DivergenceSettings,
    window_start: f64,
    peak: f64,
    last_peak: f64,
    growing: usize,
    started: bool,
}

impl DivergenceMonitor {
    /// A monitor with the given criterion.
    pub fn new(settings: DivergenceSettings) -> Self {
        Self {
            settings,
            window_start: 0.0,
            peak: 0.0,
            last_peak: f64::NAN,
            growing: 0,
            started: false,
        }
    }

    /// The criterion.
    pub fn settings(&self) -> &DivergenceSettings {
        &self.settings
    }

    /// Observe displacements `u` at simulation time `t`; `Some(value)` when diverging.
    pub fn observe_displacement(&mut self, t: f64, u: &[f64]) -> Option<f64> {
        if !self.started {
            self.started = true;
            self.window_start = t;
        }
        let mut m = 0.0f64;
        for x in u {
            if !x.is_finite() {
                return Some(*x);
            }
            m = m.max(x.abs());
        }
        if m > self.settings.displacement {
            return Some(m);
        }
        self.peak = self.peak.max(m);
        if t - self.window_start >= self.settings.window {
            if self.last_peak.is_finite()
                && self.peak > self.settings.floor
                && self.peak >= self.settings.growth * self.last_peak
            {
                self.growing += 1;
            } else {
                self.growing = 0;
            }
            self.last_peak = self.peak;
            self.peak = 0.0;
            self.window_start = t;
            if self.growing >= self.settings.windows {
                return Some(self.last_peak);
            }
        }
        None
    }

    /// Observe multipliers Λ; `Some(value)` when beyond the bound or non-finite.
    pub fn observe_force(&self, lambda: &[f64]) -> Option<f64> {
        lambda
            .iter()
            .find(|x| !x.is_finite() || x.abs() > self.settings.force)
            .copied()
    }
}
