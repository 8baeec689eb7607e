//! The virtual laboratory: the default transfer system, so that every example runs without
//! hardware.
//!
//! Per controller tick Δt^C (wall clock): every actuator's dynamics turn the command — or,
//! under a servo controller ([`ServoLoop`], `[lab.actuator.controller]`), the controller's
//! output for the command and the previous tick's measured displacement — into an achieved
//! displacement ([`super::actuator`]); a compliant loading system (stiffness `k_ls`)
//! leaves the specimen at `x_s = x_a − F/k_ls` (previous-tick force, an explicit one-tick
//! coupling); the specimen — any element set of the model, evaluated at the prototype scale —
//! gives its force; load cells and LVDTs add seeded Gaussian noise, saturate at their range and
//! quantize at their resolution (ADC), then pass the displacement through the
//! `signals.measurement` blocks (the A/D). Rates are wall-clock rates: the specimen sees the
//! prototype velocity divided by λ and integrates its own states over wall time, so a viscous
//! specimen's force scales with 1/λ while a rate-independent one does not (Abbiati et al. 2019,
//! §2.2; 2020, §1). Scaled specimens: specimen displacement = prototype/`geometric_scale`, specimen
//! force = prototype/`force_scale` (1:2 pier: ×2 and ×4, Abbiati et al. 2020, §3).
//!
//! `lab.csv` shows, beside the measured channels, the noise-free ones
//! ([`TransferSystem::noise_free`]): the achieved displacement as the actuator dynamics left it
//! (before LVDT noise and ADC) and the specimen's force at the actuator (before load-cell
//! noise, ADC and injected sensor faults).
//!
//! Every random draw is a counter-based function of `(seed, tick, channel)`: a run, a threaded
//! run and a re-run give the same noise, independent of thread timing.

use super::actuator::{Actuator, ServoLoop};
use super::blocks::{Block, Series};
use super::setup::SetupMap;
use super::transfer::{ActuatorCommand, Sample, TransferSystem};
use super::{NumericalSpecimen, PhysicalSubstructure, TransferError};
use crate::model::lab::{
    ActuatorDynamics, ActuatorSettings, InjectedFault, InjectedFaultKind, SpecimenDegradation,
};

/// SplitMix64 finalizer.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Standard normal draw for `(seed, tick, channel)` (Box–Muller on two counter-based
/// uniforms). Deterministic and allocation-free.
pub fn gaussian(seed: u64, tick: u64, channel: u64) -> f64 {
    let h = mix(seed ^ mix(tick.wrapping_mul(0x1000_0000_01B3) ^ mix(channel)));
    let h2 = mix(h ^ 0xD1B5_4A32_D192_ED03);
    let u1 = ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (h2 >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// ADC model: saturation at ±range, then quantization at `resolution` (0: none).
pub fn adc(x: f64, resolution: f64, range: f64) -> f64 {
    let s = x.clamp(-range, range);
    if resolution > 0.0 {
        (s / resolution).round() * resolution
    } else {
        s
    }
}

struct Channel {
    settings: ActuatorSettings,
    actuator: Actuator,
    x_prev: f64,
    v_prev: f64,
    force: f64,
    achieved: f64,
    /// The force before noise, ADC and injected sensor faults.
    force_true: f64,
    /// The servo controller between the command and the dynamics, if any.
    servo: Option<ServoLoop>,
    /// Blocks on the measured displacement after the ADC.
    measurement: Option<Series>,
    /// The last command and the direction of its last change (control-error models).
    last_command: f64,
    direction: f64,
}

/// The virtual laboratory.
pub struct VirtualLab {
    specimen: NumericalSpecimen,
    map: SetupMap,
    channels: Vec<Channel>,
    seed: u64,
    dt_c: f64,
    lambda: f64,
    geometric_scale: f64,
    specimen_force_scale: f64,
    /// Specimen mass over the DOFs (real-time regime: its inertia is measured).
    inertia: Option<Vec<f64>>,
    // Workspaces.
    u: Vec<f64>,
    v: Vec<f64>,
    a: Vec<f64>,
    f: Vec<f64>,
    x: Vec<f64>,
    xv: Vec<f64>,
    xa: Vec<f64>,
    fa: Vec<f64>,
    last_tick: Option<u64>,
    /// Injected faults: (channel, wall-clock time from which it acts, kind).
    faults: Vec<(usize, f64, InjectedFaultKind)>,
    /// Wall time of the last tick sent.
    t_wall: f64,
    stalled: bool,
    /// Degrading specimen parameters: (specimen slot, initial value, schedule).
    degradation: Vec<(usize, f64, SpecimenDegradation)>,
}

impl VirtualLab {
    /// A virtual lab over `map.n_dof` partition DOFs. `force_scale` is the prototype/specimen
    /// force ratio including the device multiplier; `k_specimen` (specimen units, one per
    /// actuator) feeds the servo-hydraulic model.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        specimen: NumericalSpecimen,
        map: SetupMap,
        actuators: &[ActuatorSettings],
        seed: u64,
        dt_c: f64,
        lambda: f64,
        geometric_scale: f64,
        force_scale: f64,
        k_specimen: &[f64],
        inertia: Option<Vec<f64>>,
    ) -> Self {
        let n = map.n_dofs();
        let na = map.n_actuators();
        let channels = actuators
            .iter()
            .zip(k_specimen)
            .map(|(s, k)| Channel {
                actuator: Actuator::new(&s.dynamics, dt_c, *k),
                settings: s.clone(),
                x_prev: 0.0,
                v_prev: 0.0,
                force: 0.0,
                achieved: 0.0,
                force_true: 0.0,
                last_command: 0.0,
                direction: 0.0,
                servo: s
                    .controller
                    .as_ref()
                    .map(|c| ServoLoop::new(c, &s.signals.error, dt_c)),
                measurement: if s.signals.measurement.is_empty() {
                    None
                } else {
                    Series::new(&s.signals.measurement, dt_c).ok()
                },
            })
            .collect();
        Self {
            specimen,
            map,
            channels,
            seed,
            dt_c,
            lambda,
            geometric_scale,
            specimen_force_scale: force_scale,
            inertia,
            u: vec![0.0; n],
            v: vec![0.0; n],
            a: vec![0.0; n],
            f: vec![0.0; n],
            x: vec![0.0; na],
            xv: vec![0.0; na],
            xa: vec![0.0; na],
            fa: vec![0.0; na],
            last_tick: None,
            faults: Vec::new(),
            t_wall: f64::NEG_INFINITY,
            stalled: false,
            degradation: Vec::new(),
        }
    }

    /// Degrade the specimen elements of `[[lab.degradation]]` that belong to this lab's
    /// specimen: before every evaluation at wall time `t`, each parameter is set to
    /// [`SpecimenDegradation::value_at`] `t` (the truth that online updating tracks).
    pub fn with_degradation(mut self, degradation: &[SpecimenDegradation]) -> Self {
        self.degradation = degradation
            .iter()
            .filter_map(|d| {
                let (slot, from) = self.specimen.parameter_slot(&d.element, &d.parameter)?;
                Some((slot, from, d.clone()))
            })
            .collect();
        self
    }

    /// Inject the faults of `[[lab.fault]]` that name one of this lab's actuators (the
    /// rehearsal of the safety layer; see [`InjectedFault`]).
    pub fn with_faults(mut self, faults: &[InjectedFault]) -> Self {
        self.faults = faults
            .iter()
            .filter_map(|f| {
                let k = self
                    .channels
                    .iter()
                    .position(|c| c.settings.name == f.actuator)?;
                Some((k, f.at, f.kind))
            })
            .collect();
        self
    }

    /// The fault of kind `what` acting on channel `k` at the current tick, if any.
    fn fault(&self, k: usize, what: fn(&InjectedFaultKind) -> bool) -> Option<InjectedFaultKind> {
        self.faults
            .iter()
            .find(|(c, at, kind)| *c == k && self.t_wall >= *at && what(kind))
            .map(|(_, _, kind)| *kind)
    }

    /// Evaluate the specimen at actuator-space specimen positions `x` (specimen units),
    /// velocities `xv`, accelerations `xa` (wall clock), at wall time `t_wall`; actuator forces
    /// (specimen units) into `self.fa`.
    fn evaluate(&mut self, t_wall: f64, at_rest: bool) -> Result<(), TransferError> {
        let s = self.geometric_scale;
        if let Some(map) = self.map.as_linear() {
            map.actuators_to_dofs(&self.x, &mut self.u);
            map.actuators_to_dofs(&self.xv, &mut self.v);
            map.actuators_to_dofs(&self.xa, &mut self.a);
            if s != 1.0 {
                for i in 0..self.u.len() {
                    self.u[i] *= s;
                    self.v[i] *= s;
                    self.a[i] *= s;
                }
            }
        } else {
            // Kinematic setups: Newton's method from the last solution (`self.u`), see
            // `super::setup`.
            self.map
                .specimen_to_dofs(
                    &self.x,
                    &self.xv,
                    &self.xa,
                    &mut self.u,
                    &mut self.v,
                    &mut self.a,
                )
                .map_err(|e| TransferError::new(format!("virtual lab: {e}")))?;
        }
        if at_rest && !self.degradation.is_empty() {
            // The at-rest measurement starts from fresh elements: reset them first so that
            // the degraded values below hold for it too.
            self.specimen
                .reset()
                .map_err(|e| TransferError::new(format!("virtual specimen: {e}")))?;
        }
        for (slot, from, d) in &self.degradation {
            self.specimen
                .set_slot_parameter(*slot, &d.parameter, d.value_at(*from, t_wall))
                .map_err(|e| {
                    TransferError::new(format!(
                        "virtual specimen: degrading `{}`.{}: {e}",
                        d.element, d.parameter
                    ))
                })?;
        }
        // (With degradation the at-rest reset was done above.)
        let evaluated = if at_rest && self.degradation.is_empty() {
            self.specimen
                .measure_at_rest(t_wall, &self.u, &self.v, &mut self.f)
        } else {
            self.specimen
                .evaluate(t_wall, &self.u, &self.v, &mut self.f)
        };
        evaluated.map_err(|e| TransferError::new(format!("virtual specimen: {e}")))?;
        if let Some(m) = &self.inertia {
            let n = self.u.len();
            for i in 0..n {
                let mut s = 0.0;
                for j in 0..n {
                    s += m[i * n + j] * self.a[j];
                }
                self.f[i] += s;
            }
        }
        if let Some(map) = self.map.as_linear() {
            map.dof_forces_to_actuators(&self.f, &mut self.fa);
        } else {
            self.map
                .dof_forces_to_specimen(&self.u, &self.f, &mut self.fa)
                .map_err(|e| TransferError::new(format!("virtual lab: {e}")))?;
        }
        if self.specimen_force_scale != 1.0 {
            for x in &mut self.fa {
                *x /= self.specimen_force_scale;
            }
        }
        Ok(())
    }

    fn sense(&mut self, tick: u64) {
        for k in 0..self.channels.len() {
            let fault = self.fault(k, |f| {
                matches!(
                    f,
                    InjectedFaultKind::FrozenSensor
                        | InjectedFaultKind::NanForce
                        | InjectedFaultKind::Overload { .. }
                )
            });
            if fault == Some(InjectedFaultKind::FrozenSensor) {
                self.channels[k].force_true = self.fa[k];
                continue;
            }
            let ch = &mut self.channels[k];
            ch.force_true = self.fa[k];
            let s = &ch.settings;
            let mut f = self.fa[k];
            if let Some(InjectedFaultKind::Overload { force }) = fault {
                f += force;
            }
            let mut x = ch.x_prev;
            if s.force_noise > 0.0 {
                f += s.force_noise * gaussian(self.seed, tick, 2 * k as u64);
            }
            if s.displacement_noise > 0.0 {
                x += s.displacement_noise * gaussian(self.seed, tick, 2 * k as u64 + 1);
            }
            ch.force = if fault == Some(InjectedFaultKind::NanForce) {
                f64::NAN
            } else {
                adc(f, s.force_resolution, s.force_range)
            };
            ch.achieved = adc(x, s.displacement_resolution, s.displacement_range);
            if let Some(m) = &mut ch.measurement {
                ch.achieved = m.step(ch.achieved);
            }
        }
    }

    /// Wall-clock λ of this lab.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
}

impl TransferSystem for VirtualLab {
    fn describe(&self) -> String {
        let acts: Vec<String> = self
            .channels
            .iter()
            .map(|c| {
                let dyn_ = match &c.settings.dynamics {
                    ActuatorDynamics::Ideal => "ideal".to_string(),
                    ActuatorDynamics::Delay { delay } => format!("delay {delay} s"),
                    ActuatorDynamics::FirstOrder { tau } => format!("first-order lag {tau} s"),
                    ActuatorDynamics::TransferFunction { num, den } => {
                        format!("transfer function {num:?}/{den:?}")
                    }
                    ActuatorDynamics::ServoHydraulic { .. } => "servo-hydraulic (CSI)".into(),
                    ActuatorDynamics::Blocks(b) => format!("{} blocks in series", b.len()),
                };
                let servo = if c.servo.is_some() {
                    " under a servo controller"
                } else {
                    ""
                };
                format!("{}: {dyn_}{servo}", c.settings.name)
            })
            .collect();
        format!(
            "virtual lab [{}] on {}",
            acts.join("; "),
            self.specimen.describe()
        )
    }

    fn is_virtual(&self) -> bool {
        true
    }

    fn n_actuators(&self) -> usize {
        self.channels.len()
    }

    fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError> {
        // At rest the actuators sit where the specimen is: zero in specimen coordinates,
        // unless the model starts deformed (then the provider commands the initial position
        // as its first, bumpless command).
        for (k, ch) in self.channels.iter_mut().enumerate() {
            self.x[k] = position[k];
            self.xv[k] = 0.0;
            self.xa[k] = 0.0;
            ch.x_prev = position[k];
            ch.v_prev = 0.0;
        }
        self.evaluate(0.0, true)?;
        for (k, ch) in self.channels.iter_mut().enumerate() {
            let u0 = ch.actuator.reset(position[k], self.fa[k]);
            if let Some(servo) = &mut ch.servo {
                servo.reset(position[k], u0);
            }
            if let Some(m) = &mut ch.measurement {
                m.reset(position[k]);
            }
        }
        self.sense(0);
        for (k, ch) in self.channels.iter().enumerate() {
            force[k] = ch.force;
            position[k] = ch.achieved;
        }
        self.last_tick = Some(0);
        Ok(())
    }

    #[allow(clippy::needless_range_loop)] // channels and commands side by side
    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError> {
        let dt = self.dt_c;
        self.t_wall = t_wall;
        for k in 0..self.channels.len() {
            match self.fault(k, |f| {
                matches!(
                    f,
                    InjectedFaultKind::Panic | InjectedFaultKind::Stall { .. }
                )
            }) {
                Some(InjectedFaultKind::Panic) => {
                    panic!("virtual lab: injected `panic` fault at wall time {t_wall} s")
                }
                Some(InjectedFaultKind::Stall { seconds }) if !self.stalled => {
                    self.stalled = true;
                    std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
                }
                _ => {}
            }
        }
        for k in 0..self.channels.len() {
            let stuck = self
                .fault(k, |f| matches!(f, InjectedFaultKind::StuckActuator))
                .is_some();
            let ch = &mut self.channels[k];
            let f_prev = self.fa[k];
            let xa = if stuck {
                ch.x_prev
            } else {
                // With a servo controller, the dynamics' input is the controller's output for
                // the command and the previous tick's measured displacement.
                let u = match &mut ch.servo {
                    Some(servo) => servo.step(cmd[k].d, ch.achieved),
                    None => cmd[k].d,
                };
                let x = ch.actuator.tick(u, dt, f_prev);
                match ch.settings.control_error {
                    Some(e) => {
                        let change = cmd[k].d - ch.last_command;
                        if change != 0.0 {
                            ch.direction = change.signum();
                        }
                        ch.last_command = cmd[k].d;
                        x + e.offset(ch.direction)
                    }
                    None => x,
                }
            };
            let (v, a) = match ch.actuator {
                _ if stuck => (0.0, 0.0),
                // Ideal actuators follow the commanded rates exactly.
                Actuator::Ideal if ch.servo.is_none() => (cmd[k].v, cmd[k].a),
                _ => {
                    let v = (xa - ch.x_prev) / dt;
                    (v, (v - ch.v_prev) / dt)
                }
            };
            ch.x_prev = xa;
            ch.v_prev = v;
            let ls = ch.settings.loading_stiffness;
            self.x[k] = if ls.is_finite() { xa - f_prev / ls } else { xa };
            self.xv[k] = v;
            self.xa[k] = a;
        }
        self.evaluate(t_wall, false)?;
        self.sense(tick);
        self.last_tick = Some(tick);
        Ok(())
    }

    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        // The pistons stay where they are; the sensors read again (new noise).
        self.t_wall = t_wall;
        self.sense(tick);
        self.last_tick = Some(tick);
        self.receive(tick, force, position)
    }

    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError> {
        if self.last_tick != Some(tick) {
            return Err(TransferError::new(format!(
                "virtual lab: no measurement for tick {tick} (last sent {:?})",
                self.last_tick
            )));
        }
        if (0..self.channels.len()).any(|k| {
            self.fault(k, |f| matches!(f, InjectedFaultKind::Dropout))
                .is_some()
        }) {
            return Ok(Sample::Missing);
        }
        for (k, ch) in self.channels.iter().enumerate() {
            force[k] = ch.force;
            achieved[k] = ch.achieved;
        }
        Ok(Sample::Fresh)
    }

    fn potential_energy(&self) -> Option<f64> {
        self.specimen.potential_energy()
    }

    fn noise_free(&self, force: &mut [f64], achieved: &mut [f64]) -> bool {
        // The piston's displacement as the actuator dynamics left it, and the specimen's
        // force at the actuator, before noise, ADC and sensor faults.
        for (k, ch) in self.channels.iter().enumerate() {
            force[k] = ch.force_true;
            achieved[k] = ch.x_prev;
        }
        true
    }

    fn seeds(&self) -> Vec<(String, u64)> {
        if self
            .channels
            .iter()
            .any(|c| c.settings.force_noise > 0.0 || c.settings.displacement_noise > 0.0)
        {
            vec![("virtual_lab.noise".into(), self.seed)]
        } else {
            Vec::new()
        }
    }
}
