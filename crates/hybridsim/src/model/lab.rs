//! `[lab]`, `[safety]` and `[runner]`: the transfer system of the physical substructures, the
//! actuator safety limits and the real-time runner, validated (read from the model file by the
//! configuration layer).
//!
//! Time scale (Abbiati et al. 2019, §2.2; 2020, §2.2; ALGORITHMS.md A17): the user gives Δt^N
//! (`analysis.time_step`), ss (`analysis.subcycles`) and either λ (`lab.time_scale`) or the
//! controller rate (`lab.controller_rate`); then Δt^P = Δt^N/ss, Δt^C = λ Δt^P (wall clock),
//! Δt^S = ss Δt^C, and the two are checked against each other when both are given.
//!
//! Safety limits are required for every actuator: there is no silent infinite default.

use std::collections::BTreeMap;

/// Derived time scale of a hybrid test (A17). Simulation times Δt^N, Δt^P; wall-clock times
/// Δt^C, Δt^S.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeScale {
    /// Numerical (coarse) step Δt^N, simulation time.
    pub dt_n: f64,
    /// Subcycles ss = Δt^N/Δt^P = Δt^S/Δt^C.
    pub ss: usize,
    /// Testing time scale λ = Δt^C/Δt^P = Δt^S/Δt^N.
    pub lambda: f64,
    /// Physical substep Δt^P = Δt^N/ss, simulation time.
    pub dt_p: f64,
    /// Controller tick Δt^C = λ Δt^P, wall clock.
    pub dt_c: f64,
    /// Wall-clock window of one coarse step Δt^S = ss Δt^C.
    pub dt_s: f64,
}

impl TimeScale {
    /// Derive from Δt^N, ss and λ.
    pub fn new(dt_n: f64, ss: usize, lambda: f64) -> Self {
        let ss = ss.max(1);
        let dt_p = dt_n / ss as f64;
        let dt_c = lambda * dt_p;
        Self {
            dt_n,
            ss,
            lambda,
            dt_p,
            dt_c,
            dt_s: ss as f64 * dt_c,
        }
    }

    /// Controller rate 1/Δt^C in Hz.
    pub fn controller_rate(&self) -> f64 {
        1.0 / self.dt_c
    }

    /// One line for summaries.
    pub fn describe(&self, time_unit: &str) -> String {
        format!(
            "time scale: dt_N = {:.6e} {time_unit}, ss = {}, lambda = {}, dt_P = {:.6e} {time_unit}, \
             dt_C = {:.6e} s wall ({:.3} Hz controller), dt_S = {:.6e} s wall",
            self.dt_n,
            self.ss,
            self.lambda,
            self.dt_p,
            self.dt_c,
            self.controller_rate(),
            self.dt_s
        )
    }
}

/// Testing regime: which side carries the specimen's inertia and damping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// λ ≫ 1: the physical substructure's numerical mass and damping carry its full inertia and
    /// damping; a specimen `mass` element is not allowed.
    Pseudodynamic,
    /// λ = 1: the measured force contains the specimen's own inertia and damping, so specimen
    /// `mass` elements are measured (left out of M^P) while their seismic load stays numerical.
    RealTime,
}

/// Kind of transfer system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferKind {
    /// The virtual laboratory (default): simulated actuators, sensors and specimen.
    Virtual,
    /// A real-time controller on the UDP controller link (`docs/controller-link.md`).
    Udp,
    /// The same controller link over TCP.
    Tcp,
    /// A remote site speaking the OpenSees/OpenFresco `genericClient` protocol: OpenSees's
    /// `adapter` element or another `hybridsim serve` (multi-site hybrid simulation).
    OpenSees,
    /// A transfer system that the front end supplies in-process (a Python object in the
    /// `hybridsim` Python package); never read from a model file. Connected like the network
    /// kinds ([`crate::physical::transfer::TransferConnector`]).
    External,
}

impl TransferKind {
    /// Name in the model file (`lab.transfer`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Virtual => "virtual",
            Self::Udp => "udp",
            Self::Tcp => "tcp",
            Self::OpenSees => "opensees",
            Self::External => "external",
        }
    }

    /// Whether the transfer system is reached over the network (`[lab.link]` applies), or
    /// otherwise connected by the front end ([`TransferKind::External`]).
    pub fn is_network(&self) -> bool {
        !matches!(self, Self::Virtual)
    }
}

/// How the runner waits for the controller's replies on a network link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMode {
    /// Every command waits for the reply that echoes it (up to `timeout`): the two ends move
    /// tick by tick, and a test over the link is bit-identical to the same test in-process.
    LockStep,
    /// A command takes the newest reply available without waiting; ticks with no new reply
    /// are missing samples (held by the safety layer up to `dropout_ticks`), and a reply that
    /// trails the command by more than `max_lag` ticks is stale. For controllers that run on
    /// their own clock.
    Streaming,
}

/// `[lab.link]`: where a network transfer system is and how long its replies may take.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSettings {
    /// Address of the peer (`host:port`; an IPv4 dotted quad for `opensees`).
    pub address: String,
    /// Local address to bind (default `127.0.0.1:0`, or `0.0.0.0:0` for a non-loopback peer).
    pub bind: Option<String>,
    /// Reply timeout in seconds (wall clock): a reply missing past it trips the safety layer.
    pub timeout: f64,
    /// Lock-step or streaming.
    pub mode: LinkMode,
    /// Largest lag, in controller ticks, between a command and the reply that echoes it before
    /// the reply counts as stale (streaming mode).
    pub max_lag: u64,
    /// The transport of `transfer = "opensees"`: UDP instead of TCP.
    pub udp: bool,
    /// What serves a `transfer = "opensees"` link.
    pub peer: RemotePeer,
}

/// The server at the other end of a `transfer = "opensees"` link (the `genericClient`
/// protocol; hybridsim is the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemotePeer {
    /// OpenSees's `adapter` element: per tick a trial (action 3) and a force request (10);
    /// every tick is one analysis step of the remote model, which must not be committed
    /// explicitly.
    Adapter,
    /// An element server (`hybridsim serve`, OpenFresco's `SimAppElemServer`): per tick a trial
    /// (3), a force request (10) and a commit (5).
    ElementServer,
}

/// Actuator dynamics from command to achieved displacement (wall-clock time).
#[derive(Debug, Clone, PartialEq)]
pub enum ActuatorDynamics {
    /// Achieved = commanded.
    Ideal,
    /// Pure delay τ (s, wall clock; fractional ticks interpolated linearly).
    Delay {
        /// τ in seconds.
        delay: f64,
    },
    /// First-order lag τ ẋ + x = d.
    FirstOrder {
        /// Time constant in seconds.
        tau: f64,
    },
    /// General linear transfer function num(s)/den(s) (coefficients, highest power first),
    /// discretized by the bilinear (Tustin) transform at Δt^C.
    TransferFunction {
        /// Numerator.
        num: Vec<f64>,
        /// Denominator.
        den: Vec<f64>,
    },
    /// Servo-hydraulic actuator coupled with the specimen (control–structure interaction):
    /// `m ẍ = A p − F_s`, `(V/4β) ṗ = K (d − x) − A ẋ − c_l p`, specimen units.
    ServoHydraulic {
        /// Proportional flow gain K (length³/s per unit of displacement error).
        gain: f64,
        /// Piston area A (length²).
        area: f64,
        /// V/(4β) (length³/pressure, i.e. length⁵/force).
        compliance: f64,
        /// Leakage c_l (length³/(s·pressure)).
        leakage: f64,
        /// Moving mass m (force·s²/length).
        mass: f64,
        /// Internal integration substeps per tick.
        substeps: usize,
    },
    /// Blocks applied in series, the output of one into the next
    /// ([`crate::physical::blocks`]); configured as an array of block tables, or as one table of
    /// a block-only kind or with a `discretization`.
    Blocks(Vec<BlockSpec>),
}

/// How a continuous linear block is discretized at the controller tick Δt^C.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Discretization {
    /// Zero-order hold: exact for an input held constant over each tick.
    Zoh,
    /// First-order (triangle) hold: exact for an input linear between ticks.
    Foh,
    /// Bilinear (Tustin) transform, optionally prewarped so that the response at
    /// `prewarp_hz` (Hz) is exact.
    Tustin {
        /// Prewarp frequency (Hz), below the Nyquist frequency.
        prewarp_hz: Option<f64>,
    },
}

/// Parameters of the servo-valve + actuator + control–structure interaction plant (Dyke et al.
/// 1995; Silva et al. 2020), specimen units:
/// servo-valve `x_v/u = k_v ω_v² / (s² + 2ζ_v ω_v s + ω_v²)`, actuator force
/// `ḟ = a1 x_v − a2 ẋ − a3 f`, specimen (with the moving piston) `m ẍ + c ẋ + k x = f`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoValveCsi {
    /// Servo-valve static gain k_v (valve opening per unit command).
    pub valve_gain: f64,
    /// Servo-valve natural frequency ω_v/2π (Hz).
    pub valve_frequency: f64,
    /// Servo-valve damping ratio ζ_v.
    pub valve_damping: f64,
    /// a1: force rate per unit valve opening.
    pub a1: f64,
    /// a2: force rate per unit piston velocity (the velocity feedback of the chamber).
    pub a2: f64,
    /// a3: pole of the chamber pressure dynamics (1/s), leakage and compressibility.
    pub a3: f64,
    /// m: specimen mass including the moving piston.
    pub mass: f64,
    /// c: specimen damping.
    pub damping: f64,
    /// k: specimen stiffness.
    pub stiffness: f64,
    /// Optional proportional servo loop `u = k_p (d − x)`: the block's input is then the
    /// displacement command instead of the servo-valve command.
    pub proportional_gain: Option<f64>,
}

/// One block of an actuator's dynamics chain ([`ActuatorDynamics::Blocks`]).
#[derive(Debug, Clone, PartialEq)]
pub enum BlockSpec {
    /// Single-input single-output state space `ẋ = A x + B u`, `y = C x + D u`.
    StateSpace {
        /// A, row by row (n × n).
        a: Vec<Vec<f64>>,
        /// B (n).
        b: Vec<f64>,
        /// C (n).
        c: Vec<f64>,
        /// D.
        d: f64,
        /// Discretization.
        discretization: Discretization,
    },
    /// num(s)/den(s), coefficients highest power first (proper, stable).
    TransferFunction {
        /// Numerator.
        num: Vec<f64>,
        /// Denominator.
        den: Vec<f64>,
        /// Discretization.
        discretization: Discretization,
    },
    /// First-order lag 1/(τ s + 1).
    FirstOrder {
        /// τ in seconds.
        tau: f64,
        /// Discretization.
        discretization: Discretization,
    },
    /// Pure delay (s), fractional ticks interpolated linearly.
    Delay {
        /// Delay in seconds.
        delay: f64,
    },
    /// Clamp to `[min, max]`.
    Saturation {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// Output moves by at most `rate` per second (wall clock).
    RateLimit {
        /// Largest rate (units/s).
        rate: f64,
    },
    /// Mid-tread quantizer saturating at ±`range`.
    Quantizer {
        /// Step.
        resolution: f64,
        /// Full scale.
        range: f64,
    },
    /// Servo-valve + actuator + control–structure interaction plant; its output in the chain is
    /// the achieved displacement.
    ServoValveCsi {
        /// Parameters.
        params: ServoValveCsi,
        /// Discretization.
        discretization: Discretization,
    },
    /// PID controller `k_p + k_i/s + k_d s/(T_f s + 1)` with an output limit and clamping
    /// anti-windup ([`crate::physical::blocks::Pid`]).
    Pid {
        /// Proportional gain.
        kp: f64,
        /// Integral gain (1/s).
        ki: f64,
        /// Derivative gain (s).
        kd: f64,
        /// Derivative filter time constant T_f (s); unused when `kd = 0`.
        derivative_time_constant: f64,
        /// Lower output limit (−∞: none).
        min: f64,
        /// Upper output limit (∞: none).
        max: f64,
        /// Discretization.
        discretization: Discretization,
    },
    /// Phase lead/lag `K (s + z)/(s + p)` ([`mod@crate::physical::blocks::lead_lag`]).
    LeadLag {
        /// K, the high-frequency gain.
        gain: f64,
        /// z (rad/s).
        zero: f64,
        /// p (rad/s), positive.
        pole: f64,
        /// Discretization.
        discretization: Discretization,
    },
}

/// Delay compensation by polynomial extrapolation of the desired displacement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayCompensation {
    /// Polynomial order (0..=3).
    pub order: usize,
    /// Estimated delay in seconds (wall clock).
    pub estimate: f64,
    /// Distance between the extrapolation nodes (default: one controller tick).
    pub node_spacing: NodeSpacing,
    /// What the compensator does before it has seen `order · spacing + 1` targets.
    pub startup: StartupPolicy,
}

/// Distance between the nodes of the polynomial extrapolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSpacing {
    /// This many controller ticks (≥ 1).
    Ticks(usize),
    /// This many coarse (numerical) steps of `ss` ticks: the nodes are the targets of the same
    /// phase of past coarse steps, so that the command follows the extrapolated coarse-step
    /// sequence and stays continuous across coarse steps.
    CoarseSteps(usize),
}

/// Start-up policy of the polynomial extrapolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupPolicy {
    /// The target itself until `order · spacing + 1` targets have been seen (the default, and
    /// the behaviour of earlier versions).
    Passthrough,
    /// The highest order the targets seen so far support (order 0 — the target — at the start,
    /// then 1, 2, …).
    HoldOrder,
    /// The full order from the start, the history filled with the rest position (the specimen
    /// was at rest before the test).
    RestHistory,
}

impl StartupPolicy {
    /// The configuration name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Passthrough => "passthrough",
            Self::HoldOrder => "hold_order",
            Self::RestHistory => "rest_history",
        }
    }
}

/// Model-based inverse compensation: the command is the target passed through the inverse of
/// a low-order actuator model `G(s)` (unit DC gain), made proper by a low-pass
/// `1/(T_f s + 1)^r` (`r` the relative degree) and discretized by Tustin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InverseCompensation {
    /// The actuator model inverted.
    pub model: ActuatorModel,
    /// Time constant T_f of the low-pass that makes the inverse proper (s, wall clock).
    pub filter_time_constant: f64,
}

/// A low-order actuator model with unit DC gain, for [`InverseCompensation`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ActuatorModel {
    /// `1/(τ s + 1)`.
    FirstOrder {
        /// τ (s).
        tau: f64,
    },
    /// `ω²/(s² + 2ζω s + ω²)`.
    SecondOrder {
        /// ω/2π (Hz).
        frequency: f64,
        /// ζ.
        damping: f64,
    },
}

/// Adaptive time series (ATS) compensation, Chae, Kazemibidokhti & Ricles (2013): the command
/// is `u_k = a0 x_k + a1 ẋ_k + a2 ẍ_k` of the target `x`, with `(a0, a1, a2)` identified every
/// `update_every` ticks by least squares over the last `window` ticks of (measured displacement
/// and its derivatives → command sent), each clamped to its bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveCompensation {
    /// Ticks in the identification window.
    pub window: usize,
    /// Ticks between identifications.
    pub update_every: usize,
    /// Initial (a0, a1, a2) (a1 in s, a2 in s²).
    pub initial: [f64; 3],
    /// Lower bounds on (a0, a1, a2).
    pub lower: [f64; 3],
    /// Upper bounds on (a0, a1, a2).
    pub upper: [f64; 3],
    /// Identification only while the target's RMS velocity over the window exceeds this
    /// (units/s; at rest the regression is ill-conditioned).
    pub min_velocity: f64,
    /// Spacing h (ticks) of the backward differences that give the derivatives.
    pub difference_spacing: usize,
}

/// A servo controller of one actuator of the virtual laboratory: the plant input (the
/// actuator `dynamics`' input, e.g. the servo-valve command) is
/// `feedforward(command) + feedback(error(command − measured))`, the measured displacement
/// being the displacement channel (noise, ADC, `signals.measurement`) of the previous tick.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ControllerSettings {
    /// Blocks on the error, in series (PID, lead/lag, …).
    pub feedback: Vec<BlockSpec>,
    /// Blocks on the command, in series (empty: no feedforward).
    pub feedforward: Vec<BlockSpec>,
}

/// Block chains placed on the signals of one actuator (`[lab.actuator.signals]`); empty
/// chains leave the signal untouched.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SignalChains {
    /// On the target (desired displacement), before compensation.
    pub target: Vec<BlockSpec>,
    /// On the command after compensation, before the safety check (the D/A).
    pub command: Vec<BlockSpec>,
    /// On the controller's error (needs a controller).
    pub error: Vec<BlockSpec>,
    /// On the measured displacement after the ADC (the A/D).
    pub measurement: Vec<BlockSpec>,
}

impl SignalChains {
    /// Whether no chain is set.
    pub fn is_empty(&self) -> bool {
        self.target.is_empty()
            && self.command.is_empty()
            && self.error.is_empty()
            && self.measurement.is_empty()
    }
}

/// Compliance compensation of the loading system (Abbiati et al. 2020, eq 15, E29):
/// `d_cmd = d_des + r/k`, `k = k_positive` if `r ≥ 0` else `k_negative`, in model units (converted
/// from the given ones).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ComplianceCompensation {
    /// Stiffness for non-negative feedback force, model units.
    pub k_positive: f64,
    /// Stiffness for negative feedback force, model units.
    pub k_negative: f64,
}

/// One actuator of the transfer system.
#[derive(Debug, Clone, PartialEq)]
pub struct ActuatorSettings {
    /// Name (used for limits and lab.csv columns).
    pub name: String,
    /// DOFs the actuator drives, `(node, dof)`.
    pub dofs: Vec<(i64, String)>,
    /// `d = Σ c_i u_i` over those DOFs.
    pub coefficients: Vec<f64>,
    /// Dynamics.
    pub dynamics: ActuatorDynamics,
    /// Displacement sensor noise RMS (specimen units).
    pub displacement_noise: f64,
    /// Force sensor noise RMS (specimen units).
    pub force_noise: f64,
    /// ADC resolution of the displacement channel (0: none).
    pub displacement_resolution: f64,
    /// ADC resolution of the force channel (0: none).
    pub force_resolution: f64,
    /// ADC full scale of the displacement channel (saturation; ∞ allowed).
    pub displacement_range: f64,
    /// ADC full scale of the force channel.
    pub force_range: f64,
    /// Loading-system stiffness between actuator and specimen (∞: rigid).
    pub loading_stiffness: f64,
    /// Delay compensation.
    pub delay_compensation: Option<DelayCompensation>,
    /// Compliance compensation.
    pub compliance_compensation: Option<ComplianceCompensation>,
    /// Model-based inverse compensation.
    pub inverse_compensation: Option<InverseCompensation>,
    /// Adaptive time series compensation.
    pub adaptive_compensation: Option<AdaptiveCompensation>,
    /// Servo controller of the virtual lab (none: the command drives the dynamics directly).
    pub controller: Option<ControllerSettings>,
    /// Blocks on the target, command, error and measurement.
    pub signals: SignalChains,
    /// Declared capacity of the actuator (what the hardware can do); the safety limits must
    /// lie within it.
    pub capacity: ActuatorCapacity,
    /// The physical substructure the actuator loads: `substructure` in the file, else the one
    /// its DOFs belong to (the reader refuses an actuator on DOFs of several without it).
    /// `None` (a lab built in code): every physical substructure one of its DOFs belongs to.
    pub substructure: Option<String>,
    /// Index into [`LabSettings::setups`] of the kinematic setup the actuator belongs to (its
    /// `dofs` are then the setup's and `coefficients` is empty).
    pub setup: Option<usize>,
    /// A constant displacement control error of the virtual lab (none by default).
    pub control_error: Option<ControlError>,
    /// The scales of this actuator's specimen when they differ from the lab's (a 1:2 pier and
    /// a full-scale bearing tested at once); `None`: `lab.geometric_scale`, `lab.force_scale`
    /// and `lab.device_multiplier`. The actuators of one substructure share them.
    pub scale: Option<SpecimenScale>,
}

/// Prototype/specimen scales of one physical substructure's specimen
/// (`[[lab.actuator]] geometric_scale`, `force_scale`, `device_multiplier`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecimenScale {
    /// Prototype displacement = `geometric_scale` × specimen displacement.
    pub geometric_scale: f64,
    /// Prototype force = `force_scale` × `device_multiplier` × specimen force.
    pub force_scale: f64,
    /// Device multiplier on the force.
    pub device_multiplier: f64,
}

/// A constant displacement control error (Hung and El-Tawil 2009; OpenFresco's
/// `ErrorSimUndershoot`/`ErrorSimOvershoot` filters): the achieved displacement is the
/// actuator's output plus `amount` in the direction of the command's last change
/// (overshoot), or minus it (undershoot). Specimen length units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ControlError {
    /// Past the target in the direction of motion.
    Overshoot(f64),
    /// Short of the target.
    Undershoot(f64),
}

impl ControlError {
    /// The signed offset for a command moving in direction `direction` (±1, 0 at rest).
    pub fn offset(&self, direction: f64) -> f64 {
        match self {
            Self::Overshoot(e) => e * direction,
            Self::Undershoot(e) => -e * direction,
        }
    }
}

/// Kinematics of an experimental setup (`[[lab.setup]] geometry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Geometry {
    /// The tangent at the reference configuration (small displacements).
    Linear,
    /// Exact actuator lengths (large displacements and rotations).
    Nonlinear,
}

/// The kind of an experimental setup with its geometry (specimen units; see
/// `crate::physical::setup`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SetupKind {
    /// One actuator on one DOF, its axis at `angle` (radians) to the DOF's direction.
    OneActuator {
        /// Reference actuator length.
        length: f64,
        /// Angle between the actuator's axis and the DOF's direction, radians.
        angle: f64,
    },
    /// Horizontal and vertical actuators at one point (DOFs u, v).
    TwoActuators2d {
        /// Reference lengths `[horizontal, vertical]`.
        lengths: [f64; 2],
    },
    /// A loading beam: one horizontal actuator at its centre, two vertical at ±`beam_length`/2
    /// (DOFs u, v, θ).
    ThreeActuators2d {
        /// Reference lengths `[horizontal, left vertical, right vertical]`.
        lengths: [f64; 3],
        /// Distance between the vertical actuators.
        beam_length: f64,
    },
    /// The three-actuator loading beam a rigid arm `arm_height` above the tip of an inverted-V
    /// brace (DOFs u, v, θ of the tip).
    InvertedVBrace2d {
        /// Reference lengths `[horizontal, left vertical, right vertical]`.
        lengths: [f64; 3],
        /// Distance between the vertical actuators.
        beam_length: f64,
        /// Height of the loading beam above the brace tip.
        arm_height: f64,
    },
}

impl SetupKind {
    /// The name used in the model file.
    pub fn name(&self) -> &'static str {
        match self {
            Self::OneActuator { .. } => "one_actuator",
            Self::TwoActuators2d { .. } => "two_actuators_2d",
            Self::ThreeActuators2d { .. } => "three_actuators_2d",
            Self::InvertedVBrace2d { .. } => "inverted_v_brace_2d",
        }
    }
}

/// `[[lab.setup]]`: a kinematic experimental setup, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupSettings {
    /// Kind and geometry parameters.
    pub kind: SetupKind,
    /// Linear or nonlinear kinematics.
    pub geometry: Geometry,
    /// Its actuators (names of `[[lab.actuator]]`), in the kind's order.
    pub actuators: Vec<String>,
    /// Its DOFs `(node, dof)`, in the kind's order.
    pub dofs: Vec<(i64, String)>,
    /// Prototype/specimen displacement ratio per DOF (on top of `lab.geometric_scale`).
    pub displacement_scale: Vec<f64>,
    /// Prototype/specimen force ratio per DOF (on top of `lab.force_scale`).
    pub force_scale: Vec<f64>,
}

/// Declared capacity of one actuator (`[[lab.actuator]] capacity`), specimen units and
/// wall-clock rates: the stroke, velocity and force the hardware can deliver. The safety
/// limits of `[safety.actuator.NAME]` must lie within it, and the force limit strictly below
/// the load-cell range (`adc.force_range`): a saturated load cell would hide an overload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActuatorCapacity {
    /// Half stroke: the largest |d| the actuator can reach.
    pub stroke: f64,
    /// Largest |ḋ| the servo-valve can deliver.
    pub velocity: f64,
    /// Largest |F| the actuator can exert.
    pub force: f64,
}

/// A fault injected into the virtual laboratory (`[[lab.fault]]`), to rehearse the safety
/// layer: from wall-clock test time `at` on, the named actuator misbehaves in the given way.
/// Refused with any transfer system other than the virtual one.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectedFault {
    /// Actuator name.
    pub actuator: String,
    /// Wall-clock test time (s, `tick · Δt^C`) from which the fault acts.
    pub at: f64,
    /// What goes wrong.
    pub kind: InjectedFaultKind,
}

/// Kinds of [`InjectedFault`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InjectedFaultKind {
    /// The piston stops where it is (a seized actuator, a closed valve).
    StuckActuator,
    /// The displacement and force readings stop changing (a frozen acquisition channel).
    FrozenSensor,
    /// No new sample arrives (a lost acquisition frame).
    Dropout,
    /// The load cell reads NaN.
    NanForce,
    /// The load cell reads this force on top of the specimen's (an overload).
    Overload {
        /// Added force (specimen units).
        force: f64,
    },
    /// The transfer system panics (a bug in the controller link).
    Panic,
    /// The transfer system blocks for this long in one tick (a stalled link).
    Stall {
        /// Seconds.
        seconds: f64,
    },
}

impl InjectedFaultKind {
    /// The name used in the model file.
    pub fn name(&self) -> &'static str {
        match self {
            Self::StuckActuator => "stuck_actuator",
            Self::FrozenSensor => "frozen_sensor",
            Self::Dropout => "dropout",
            Self::NanForce => "nan_force",
            Self::Overload { .. } => "overload",
            Self::Panic => "panic",
            Self::Stall { .. } => "stall",
        }
    }
}

/// A DOF held at a constant force (vertical load by a jack).
#[derive(Debug, Clone, PartialEq)]
pub struct ForceControl {
    /// The DOF.
    pub dof: (i64, String),
    /// Force applied to the specimen (model units, resisting-force sign convention).
    pub force: f64,
}

/// `[lab]`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSettings {
    /// Transfer system.
    pub transfer: TransferKind,
    /// Regime.
    pub regime: Regime,
    /// Time scale (derived).
    pub time_scale: TimeScale,
    /// Seed of every random draw of the lab (noise), recorded in run.json.
    pub seed: u64,
    /// Prototype displacement = `geometric_scale` × specimen displacement.
    pub geometric_scale: f64,
    /// Prototype force = `force_scale` × specimen force.
    pub force_scale: f64,
    /// Device multiplier on the force (one bearing of a pair tested: 2).
    pub device_multiplier: f64,
    /// Actuators.
    pub actuators: Vec<ActuatorSettings>,
    /// Force-controlled DOFs.
    pub force_control: Vec<ForceControl>,
    /// Faults injected into the virtual laboratory (rehearsal of the safety layer); with a
    /// controller link they act in the virtual lab that `hybridsim controller` serves.
    pub faults: Vec<InjectedFault>,
    /// The network link (`[lab.link]`), for every transfer system but the virtual one.
    pub link: Option<LinkSettings>,
    /// Kinematic experimental setups (`[[lab.setup]]`).
    pub setups: Vec<SetupSettings>,
    /// Specimen degradation of the virtual laboratory (`[[lab.degradation]]`).
    pub degradation: Vec<SpecimenDegradation>,
}

/// A specimen element of the virtual laboratory whose parameter changes during the test
/// (`[[lab.degradation]]`): a tested pier that loses stiffness, the truth that online model
/// updating has to track. The parameter moves linearly from the element's model-file value at
/// wall-clock test time `from_time` to `to` at `until_time` (a step when they are equal) and
/// stays there; the element's states are kept (see `ElementDriver::set_parameter`).
#[derive(Debug, Clone, PartialEq)]
pub struct SpecimenDegradation {
    /// Name of the specimen element.
    pub element: String,
    /// The parameter (one of the element's `parameters()`).
    pub parameter: String,
    /// Final value.
    pub to: f64,
    /// Wall-clock test time (s) at which the change starts.
    pub from_time: f64,
    /// Wall-clock test time (s) at which `to` is reached.
    pub until_time: f64,
}

impl SpecimenDegradation {
    /// The parameter's value at wall-clock test time `t`, from its initial value `from`.
    pub fn value_at(&self, from: f64, t: f64) -> f64 {
        if t <= self.from_time {
            from
        } else if t >= self.until_time {
            self.to
        } else {
            let s = (t - self.from_time) / (self.until_time - self.from_time);
            from + s * (self.to - from)
        }
    }
}

/// What the safety layer does after an event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TripAction {
    /// Hold the last accepted command.
    Hold,
    /// Ramp from the last accepted command to the rest position at this speed (specimen units/s),
    /// within the limits.
    RampDown {
        /// Speed (length/s).
        rate: f64,
    },
}

/// Limits of one actuator, specimen units, wall-clock rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActuatorLimits {
    /// |d| ≤ displacement (stroke).
    pub displacement: f64,
    /// |ḋ| ≤ velocity.
    pub velocity: f64,
    /// |F| ≤ force.
    pub force: f64,
    /// |d_k − d_{k−1}| ≤ increment per tick.
    pub increment: f64,
    /// Following error: |compensated command − measured displacement| above this for
    /// `following_time` trips (a stuck or runaway actuator).
    pub following_error: f64,
    /// How long (wall-clock s) the following error may stay above its threshold.
    pub following_time: f64,
    /// A reading that stays bit-identical this long (wall-clock s) while the command moves
    /// by more than `following_error / 2` is a frozen sensor (0: off).
    pub frozen_time: f64,
    /// Consecutive ticks without a new sample that trip (a dropout); shorter gaps hold the
    /// last sample.
    pub dropout_ticks: u64,
}

/// How the energy part of the divergence criterion reads the energy generated by the physical
/// substructure ([`DivergenceSettings::energy_mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnergyMode {
    /// Default: the energy generated over the last `energy_window` seconds of simulation
    /// time, net of the change of the recoverable energy (its secant estimate), above the
    /// bound. Bounded for every test whose response stays bounded, however long it runs.
    #[default]
    Window,
    /// The energy generated since the start, above the bound. A stable test whose loop feeds a
    /// small positive power (noise, residual delay) reaches any bound eventually; kept for the
    /// short tests it was written for.
    Cumulative,
}

impl EnergyMode {
    /// The configuration name (`window`, `cumulative`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Window => "window",
            Self::Cumulative => "cumulative",
        }
    }
}

/// Default length of the energy window, simulation seconds ([`DivergenceSettings::energy_window`]).
pub const DEFAULT_ENERGY_WINDOW: f64 = 2.0;

/// Divergence criterion (stated): non-finite values; |u| of any interface DOF above
/// `displacement`; |Λ| above `force`; the peak |u| over the interface DOFs growing by at least
/// `growth` in each of `windows` consecutive windows of `window` simulation time while above
/// `floor`; or the energy *generated* by the physical substructure beyond `energy`, read over a
/// sliding window (default) or since the start (`energy_mode`).
///
/// Work: the lab provider accumulates, every controller tick, the work of the measured force on
/// the commanded (desired) prototype displacement, trapezoidal rule,
/// `W_k = W_{k−1} + ½ (F_k + F_{k−1})ᵀ (d_k − d_{k−1})`. A passive specimen (springs, dampers,
/// hysteretic elements, measured inertia) starting at rest absorbs energy, `W ≥ 0` up to noise
/// and quadrature error; `E_gen = −W > 0` is energy the transfer system feeds into the test
/// (an uncompensated delay τ acts as negative damping, generating ≈ π k A² sin(ωτ) per cycle of
/// amplitude A).
///
/// - `energy_mode = "window"` (default): `G_k = −W_k + Σ_a ½ (F_a,k − F_a,0)(d_a,k − d_a,0)` —
///   the generated energy net of the secant estimate of the recoverable energy of each
///   actuator's specimen from the state at rest (`F_a,0`, `d_a,0`) — and the run stops when
///   `G(t) − G(t − energy_window) > energy`. For a linear spring `G` is constant without delay,
///   whatever its stiffness; for a hysteretic specimen the estimate errs by at most about its
///   secant energy `½ F d`; with a delay τ, `G` rises by about `k τ ω² A² / 2` per second at
///   amplitude A and frequency ω. The window
///   difference therefore stays bounded as long as the response does, and a stable test never
///   stops on it however long it runs, while a loop whose delay makes it unstable (amplitude
///   growing) reaches the bound.
/// - `energy_mode = "cumulative"`: the run stops when `E_gen = −W > energy` (the criterion of
///   earlier versions). Noise and a residual delay make a stable test generate a small positive
///   power, so this bound is reached by every long enough test: it stopped a stable 50 s test
///   at 4.87 s (issue 12).
///
/// Default `energy` (k̂: the largest actuator-space estimated stiffness, prototype units; u_b
/// the displacement bound): window mode `½ k̂ u_b²`, the elastic energy at the displacement
/// bound — the secant estimate of the recoverable energy of a specimen no stiffer than k̂ errs
/// by less within the bound; cumulative mode `⅛ k̂ u_b²`, the elastic energy at half the bound.
/// Without a stiffness estimate the energy criterion is off unless `energy` is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DivergenceSettings {
    /// Bound on |u| (model units).
    pub displacement: f64,
    /// Bound on |Λ| (model units).
    pub force: f64,
    /// Growth factor per window.
    pub growth: f64,
    /// Window length (simulation time).
    pub window: f64,
    /// Consecutive growing windows.
    pub windows: usize,
    /// Amplitudes below this never count as growth (model units). Default: 1 % of
    /// `displacement`, so that the growth of tiny amplitudes at rest (noise, the start of a
    /// record) is not taken for divergence; `0` counts every amplitude, and is allowed only when
    /// written explicitly. Must lie below `displacement`.
    pub floor: f64,
    /// Bound on the energy generated by the physical substructure (force·length, model units);
    /// `None`: the default derived by the lab provider, `½ k̂ u_b²` (window) or `⅛ k̂ u_b²`
    /// (cumulative).
    pub energy: Option<f64>,
    /// Whether `energy` bounds the energy generated over a sliding window (default) or since
    /// the start.
    pub energy_mode: EnergyMode,
    /// Length of the sliding window of `energy_mode = "window"` (simulation seconds, default
    /// [`DEFAULT_ENERGY_WINDOW`]).
    pub energy_window: f64,
}

/// `[safety]`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetySettings {
    /// Limits by actuator name.
    pub limits: BTreeMap<String, ActuatorLimits>,
    /// Action after an event.
    pub on_trip: TripAction,
    /// Consecutive deadline overruns that latch an event.
    pub max_overruns: u64,
    /// Divergence criterion.
    pub divergence: DivergenceSettings,
}

/// Most memory the real-time runner preallocates for its results and lab rings (bytes);
/// `[runner] results_ring` is refused by the configuration when its rings would need more.
pub const MAX_RING_BYTES: u128 = 2 << 30;

/// Rows of the real-time runner's lab ring of one physical partition: `results_ring × ss /
/// every` controller ticks, at least 64 coarse steps and 1 024 rows (computed in `u128`, so it
/// never overflows).
pub fn lab_ring_rows(results_ring: usize, ss: usize, every: usize) -> u128 {
    let ss = ss as u128;
    (64 * ss)
        .max(results_ring as u128 * ss / every.max(1) as u128)
        .max(1024)
}

/// Columns of the lab record of a partition with `actuators` actuators: time, wall time and
/// desired, compensated, measured, force, safety state, noise-free achieved displacement and
/// noise-free force of each actuator.
pub fn lab_columns(actuators: usize) -> usize {
    2 + LAB_COLUMNS_PER_ACTUATOR * actuators
}

/// Columns per actuator in the lab record (see [`lab_columns`]).
pub const LAB_COLUMNS_PER_ACTUATOR: usize = 7;

/// Pacing of the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// As fast as possible (same code path).
    Fast,
    /// Wall clock, one tick per Δt^C.
    Realtime,
}

/// `[runner]`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerSettings {
    /// Pacing.
    pub pacing: Pacing,
    /// CPUs to pin the tasks to (empty: no pinning).
    pub cpus: Vec<usize>,
    /// SCHED_FIFO priority when permitted.
    pub priority: u8,
    /// Capacity of the results ring in rows.
    pub results_ring: usize,
    /// The last stretch of every paced wait that spins instead of sleeping (µs; the runner
    /// sleeps with an absolute `clock_nanosleep` to this much before each deadline).
    pub spin_budget: f64,
    /// Whether `[runner] results_ring` was given; if not, the runner sizes the ring by bytes
    /// ([`RunnerSettings::results_ring_rows`]).
    pub results_ring_given: bool,
}

/// Bytes of the real-time runner's results ring when `[runner] results_ring` is not given:
/// the ring holds as many rows as fit (at most [`DEFAULT_RESULTS_RING_ROWS`], at least 16), so
/// its memory does not grow with the row width (about 7 columns a DOF: 8192 rows were
/// 0.46 MB a DOF, locked in memory by a SCHED_FIFO run).
pub const DEFAULT_RESULTS_RING_BYTES: usize = 64 << 20;
/// Most rows of the default results ring (the `[runner] results_ring` default of narrow rows).
pub const DEFAULT_RESULTS_RING_ROWS: usize = 8192;

/// Default `[runner] spin_budget` (µs).
pub const DEFAULT_SPIN_BUDGET_US: f64 = 50.0;
/// Largest `[runner] spin_budget` (µs).
pub const MAX_SPIN_BUDGET_US: f64 = 10_000.0;

impl RunnerSettings {
    /// [`RunnerSettings::spin_budget`] in nanoseconds.
    pub fn spin_budget_ns(&self) -> u64 {
        (self.spin_budget * 1e3).round().max(0.0) as u64
    }

    /// Rows of the results ring for rows of `columns` values: `[runner] results_ring` when
    /// given, else as many rows as fit [`DEFAULT_RESULTS_RING_BYTES`], between 16 and
    /// [`DEFAULT_RESULTS_RING_ROWS`].
    pub fn results_ring_rows(&self, columns: usize) -> usize {
        if self.results_ring_given {
            self.results_ring
        } else {
            (DEFAULT_RESULTS_RING_BYTES / (8 * columns.max(1)))
                .clamp(16, DEFAULT_RESULTS_RING_ROWS)
                .min(self.results_ring)
        }
    }
}

/// Everything about the laboratory side of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct LabConfig {
    /// `[lab]`.
    pub lab: LabSettings,
    /// `[safety]`.
    pub safety: SafetySettings,
    /// `[runner]`.
    pub runner: RunnerSettings,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner(results_ring: usize, given: bool) -> RunnerSettings {
        RunnerSettings {
            pacing: Pacing::Fast,
            cpus: Vec::new(),
            priority: 80,
            results_ring,
            spin_budget: DEFAULT_SPIN_BUDGET_US,
            results_ring_given: given,
        }
    }

    /// Without `[runner] results_ring` the ring holds 64 MiB of rows (8192 narrow rows, fewer
    /// wide ones, never fewer than 16), so its memory stays bounded as N grows; a given size
    /// is kept whatever the width.
    #[test]
    fn the_default_results_ring_is_sized_by_bytes_and_a_given_one_is_kept() {
        let auto = runner(DEFAULT_RESULTS_RING_ROWS, false);
        assert_eq!(auto.results_ring_rows(10), 8192);
        assert_eq!(auto.results_ring_rows(1024), 8192);
        // A chain of 1000 storeys records about 7 columns a DOF.
        assert_eq!(auto.results_ring_rows(7006), (64 << 20) / (8 * 7006));
        assert_eq!(auto.results_ring_rows(7006), 1197);
        assert!(auto.results_ring_rows(7006) * 7006 * 8 <= 64 << 20);
        assert_eq!(auto.results_ring_rows(10_000_000), 16);
        assert_eq!(auto.results_ring_rows(0), 8192);
        let given = runner(8192, true);
        assert_eq!(given.results_ring_rows(7006), 8192);
        assert_eq!(runner(20, true).results_ring_rows(10), 20);
    }
}
