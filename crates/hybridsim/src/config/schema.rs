//! The model file as written (TOML), before validation.
//!
//! Top-level tables: `title`, `[units]`, `[[node]]`, `[[element]]`, `[substructure.NAME]`,
//! `[damping]`, `[[load]]`, `[[ground_motion]]`, `[[imposed_motion]]`, `[analysis]`, `[output]`,
//! `[lab]`, `[safety]`, `[runner]`, `[updating]`. The table `network` is
//! reserved for a later version; any other key is rejected.

use crate::units::Units;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Top-level tables reserved for later versions of the schema.
pub const RESERVED_TABLES: &[(&str, &str)] = &[("network", "network transfer systems")];

/// A whole model file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// Free text shown in summaries and results.
    #[serde(default)]
    pub title: Option<String>,
    /// Unit system (SI by default).
    #[serde(default)]
    pub units: Units,
    /// Nodes.
    #[serde(default)]
    pub node: Vec<NodeSpec>,
    /// Elements, each a table with `type` and the kind's parameters.
    #[serde(default)]
    pub element: Vec<toml::Table>,
    /// Substructures by name.
    #[serde(default)]
    pub substructure: BTreeMap<String, SubstructureSpec>,
    /// Rayleigh damping.
    #[serde(default)]
    pub damping: Option<DampingSpec>,
    /// Nodal force histories.
    #[serde(default)]
    pub load: Vec<LoadSpec>,
    /// Uniform ground accelerations.
    #[serde(default)]
    pub ground_motion: Vec<GroundMotionSpec>,
    /// Integrator and time stepping.
    pub analysis: Option<AnalysisSpec>,
    /// What is recorded.
    #[serde(default)]
    pub output: OutputSpec,
    /// Transfer system, read in a second pass ([`LabSpec`]).
    #[serde(default)]
    pub lab: Option<toml::Value>,
    /// Safety limits, read in a second pass ([`SafetySpec`]).
    #[serde(default)]
    pub safety: Option<toml::Value>,
    /// Real-time runner, read in a second pass ([`RunnerSpec`]).
    #[serde(default)]
    pub runner: Option<toml::Value>,
    /// Imposed (Dirichlet) motions, read entry by entry ([`ImposedMotionSpec`]).
    #[serde(default)]
    pub imposed_motion: Option<toml::Value>,
    /// Online model updating, read in a second pass (`config/updating.rs`).
    #[serde(default)]
    pub updating: Option<toml::Value>,
    /// Reserved.
    #[serde(default)]
    pub network: Option<toml::Value>,
}

/// `[[node]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Node id, unique.
    pub id: i64,
    /// Named DOFs, e.g. `["x"]` or `["x", "y", "rz"]`.
    pub dofs: Vec<String>,
    /// DOFs restrained to the ground.
    #[serde(default)]
    pub fixed: Vec<String>,
    /// Initial displacements by DOF name (relative to the ground).
    #[serde(default)]
    pub initial_displacement: BTreeMap<String, f64>,
    /// Initial velocities by DOF name.
    #[serde(default)]
    pub initial_velocity: BTreeMap<String, f64>,
}

/// `[substructure.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubstructureSpec {
    /// A physical substructure is tested in the lab (here: a numerical stand-in).
    #[serde(default)]
    pub physical: bool,
    /// Estimated initial stiffness/damping of a physical substructure (builds D^P and H only).
    #[serde(default)]
    pub estimate: Option<EstimateSpec>,
}

/// `[substructure.NAME.estimate]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EstimateSpec {
    /// DOF list `[[node, "dof"], …]` the matrices refer to.
    pub dofs: Vec<(i64, String)>,
    /// Estimated initial stiffness.
    pub stiffness: Vec<Vec<f64>>,
    /// Estimated initial damping (zero if absent).
    #[serde(default)]
    pub damping: Option<Vec<Vec<f64>>>,
}

/// `[damping]`: Rayleigh damping, by coefficients or by target ratios on two modes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DampingSpec {
    /// Mass-proportional coefficient α (1/time).
    #[serde(default)]
    pub alpha: Option<f64>,
    /// Stiffness-proportional coefficient β (time).
    #[serde(default)]
    pub beta: Option<f64>,
    /// Two mode numbers (1-based) of the linearized coupled model.
    #[serde(default)]
    pub modes: Option<Vec<usize>>,
    /// Target damping ratios on those modes.
    #[serde(default)]
    pub ratios: Option<Vec<f64>>,
    /// Stiffness of the `β K` term of hysteretic elements: `initial`, `committed`, `current`.
    #[serde(default)]
    pub stiffness: Option<String>,
}

/// A sine time function.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct SineSpec {
    /// Amplitude.
    pub amplitude: f64,
    /// Frequency in Hz.
    pub frequency: f64,
    /// Phase in rad.
    #[serde(default)]
    pub phase: f64,
    /// Start time.
    #[serde(default)]
    pub start: f64,
    /// End time (none: forever).
    #[serde(default)]
    pub end: Option<f64>,
}

/// `[[load]]`: a nodal force history; exactly one of `sine`, `constant`, `points`, `record`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Node id.
    pub node: i64,
    /// DOF name.
    pub dof: String,
    /// Sine force.
    #[serde(default)]
    pub sine: Option<SineSpec>,
    /// Constant force.
    #[serde(default)]
    pub constant: Option<f64>,
    /// `[[t, f], …]` samples, linearly interpolated, zero after the last.
    #[serde(default)]
    pub points: Option<Vec<(f64, f64)>>,
    /// Two-column file (time, force), relative to the model file.
    #[serde(default)]
    pub record: Option<String>,
    /// Factor on the history.
    #[serde(default)]
    pub scale: Option<f64>,
}

/// `[ground_motion.synthetic]`: Kanai–Tajimi filtered noise under an intensity envelope.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct SyntheticSpec {
    /// Random seed (recorded in `run.json`).
    pub seed: u64,
    /// Duration in seconds.
    pub duration: f64,
    /// Peak ground acceleration in g.
    pub pga: f64,
    /// Sample interval in seconds (default 0.005).
    #[serde(default)]
    pub dt: Option<f64>,
    /// Ground filter frequency in rad/s (default 15.6).
    #[serde(default)]
    pub omega_g: Option<f64>,
    /// Ground filter damping ratio (default 0.6).
    #[serde(default)]
    pub zeta_g: Option<f64>,
}

/// `[[ground_motion]]`: uniform ground acceleration along one DOF direction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroundMotionSpec {
    /// DOF name the acceleration acts along (every DOF with this name is excited).
    pub direction: String,
    /// PEER `.AT2` (in g) or two-column file, relative to the model file.
    #[serde(default)]
    pub record: Option<String>,
    /// Units of a two-column record: `g` or `model` (length/time² of `[units]`).
    #[serde(default)]
    pub record_units: Option<String>,
    /// Synthetic accelerogram instead of a record.
    #[serde(default)]
    pub synthetic: Option<SyntheticSpec>,
    /// Scale the record to this peak ground acceleration, in g.
    #[serde(default)]
    pub pga: Option<f64>,
    /// Factor on the record (exclusive with `pga`).
    #[serde(default)]
    pub scale: Option<f64>,
}

/// `[analysis]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisSpec {
    /// `mg-alpha` (monolithic, assembled model), `pg-alpha` (partitioned), `lsrt2`, or
    /// `trapezoidal` (MG-α with ρ∞ = 1).
    pub integrator: String,
    /// Spectral radius at infinity ρ∞ ∈ [0, 1] (default 1).
    #[serde(default)]
    pub rho_inf: Option<f64>,
    /// Coarse (numerical substructure) time step Δt^N.
    pub time_step: f64,
    /// Subcycles ss = Δt^N/Δt^P of the physical substructures (default 1).
    #[serde(default)]
    pub subcycles: Option<i64>,
    /// Simulated duration.
    pub duration: f64,
    /// Fixed-D corrections of the numerical substructure per step (default 1).
    #[serde(default)]
    pub corrections: Option<i64>,
    /// `consistent` (default) or `zero`: how Λ0 is obtained.
    #[serde(default)]
    pub start: Option<String>,
    /// LSRT2 diagonal coefficient: `low` (1 − √2/2, default) or `high` (1 + √2/2).
    #[serde(default)]
    pub lsrt2_gamma: Option<String>,
    /// Basic solver of the `llm` integrator: `trapezoidal` (default) or `generalized-alpha`.
    #[serde(default)]
    pub basic_solver: Option<String>,
    /// `explicit-rths`: controller samples between measuring a force and applying it
    /// (default 0).
    #[serde(default)]
    pub force_delay: Option<i64>,
    /// Partitioned LSRT2: `none` (default), `velocity` or `displacement-velocity`, the
    /// projection onto compatible interface motion at the end of each step.
    #[serde(default)]
    pub projection: Option<String>,
    /// `lsrt2-interfield`: the substructure integrated at the coarse step 4Δt (default: the
    /// numerical one).
    #[serde(default)]
    pub coarse: Option<String>,
    /// `fom`/`osm`: tangent-stiffness estimation and scheme options.
    #[serde(default)]
    pub estimator: Option<EstimatorSpec>,
    /// `converged` (default unless `corrections` is given) or `corrections`: how numerical
    /// partitions with nonlinear elements solve each step.
    #[serde(default)]
    pub nonlinear_solver: Option<String>,
    /// Relative tolerance of the converged solve (default 1e-10).
    #[serde(default)]
    pub nonlinear_tolerance: Option<f64>,
    /// Iteration bound of the converged solve (default 20).
    #[serde(default)]
    pub nonlinear_max_iterations: Option<i64>,
    /// PG-α: `none` (default) or `previous`, the share of the interface force the free
    /// solutions carry.
    #[serde(default)]
    pub multiplier_predictor: Option<String>,
    /// PG-α: `initial` (default) or `current`, the tangent the numerical partition's link
    /// operator and the Steklov–Poincaré operator are built with.
    #[serde(default)]
    pub link_tangent: Option<String>,
    /// MG-α: cores the step of a large linear numerical substructure may use, 1 (default)
    /// or 2 (its effective matrix solved in two parts on two cores).
    #[serde(default)]
    pub threads: Option<i64>,
}

/// `[analysis.estimator]` (integrators `fom` and `osm`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EstimatorSpec {
    /// `none`, `bfgs` (default), `dfp`, `broyden`, `broyden-family`, `sr1` (fom).
    #[serde(default)]
    pub update: Option<String>,
    /// ψ of the Broyden family, in [0, 1] (default 0.5).
    #[serde(default)]
    pub psi: Option<f64>,
    /// Reset to the initial stiffness at a displacement reversal (default true).
    #[serde(default)]
    pub reset_at_reversal: Option<bool>,
    /// Smallest predictor increment that updates the estimate (model length units; default
    /// 2.5 × the actuators' displacement resolution).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// fom: apply the corrector (default true).
    #[serde(default)]
    pub corrector: Option<bool>,
    /// fom: `predictor` (default) or `corrected`: where the predictor linearizes.
    #[serde(default)]
    pub linearize: Option<String>,
    /// osm: the I-modification of the measured force (default false).
    #[serde(default)]
    pub i_modification: Option<bool>,
}

/// `[output]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Record every `every`-th step (default 1).
    #[serde(default)]
    pub every: Option<i64>,
    /// Element forces and states: `true` (every element, the default), `false` (none) or the
    /// names of the elements to record (read by [`crate::config`] so that a bad name is
    /// reported at `output.elements`).
    #[serde(default)]
    pub elements: Option<toml::Value>,
    /// Record each substructure's energy (default true).
    #[serde(default)]
    pub energy: Option<bool>,
    /// Node ids whose displacement, velocity and absolute acceleration are recorded (default
    /// every node); the DOFs of physical substructures and of the interface are always
    /// recorded.
    #[serde(default)]
    pub nodes: Option<Vec<i64>>,
    /// DOF names recorded at the recorded nodes (default every DOF), e.g. `["x"]`.
    #[serde(default)]
    pub dofs: Option<Vec<String>>,
    /// How the results rows are written: `"csv"` (default, `results.csv`) or `"binary"`
    /// (`results.bin`, little-endian f64 rows after a self-describing header).
    #[serde(default)]
    pub format: Option<String>,
}

/// `[[imposed_motion]]`, one entry (read in a second pass, so that its problems are reported
/// at `imposed_motion[i]`); exactly one of `sine`, `points`, `file`, `record`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImposedMotionSpec {
    /// Name of the entry (default `imposed_motion[i]`).
    #[serde(default)]
    pub name: Option<String>,
    /// Node id.
    pub node: i64,
    /// One driven DOF.
    #[serde(default)]
    pub dof: Option<String>,
    /// Several driven DOFs of the node.
    #[serde(default)]
    pub dofs: Option<Vec<String>>,
    /// `displacement`, `velocity` or `acceleration`.
    #[serde(default)]
    pub quantity: Option<String>,
    /// Harmonic history.
    #[serde(default)]
    pub sine: Option<SineSpec>,
    /// `[[t, x], …]` samples.
    #[serde(default)]
    pub points: Option<Vec<(f64, f64)>>,
    /// Two-column file of samples, relative to the model file.
    #[serde(default)]
    pub file: Option<String>,
    /// Accelerogram (PEER `.AT2` or two columns), relative to the model file.
    #[serde(default)]
    pub record: Option<String>,
    /// Units of a two-column record: `g` or `model`.
    #[serde(default)]
    pub record_units: Option<String>,
    /// Scale the record to this peak ground acceleration, in g.
    #[serde(default)]
    pub pga: Option<f64>,
    /// Factor on the history (exclusive with `pga`).
    #[serde(default)]
    pub scale: Option<f64>,
}

/// `[lab]` (read in a second pass, so that its problems are reported at `lab.…`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSpec {
    /// Transfer system (`virtual`, `udp`, `tcp`, `opensees`).
    #[serde(default)]
    pub transfer: Option<String>,
    /// `[lab.link]`, for a network transfer system, read as [`LinkSpec`] so that problems
    /// are reported at `lab.link.…`.
    #[serde(default)]
    pub link: Option<toml::Value>,
    /// `pseudodynamic` or `real-time`.
    #[serde(default)]
    pub regime: Option<String>,
    /// Testing time scale λ.
    #[serde(default)]
    pub time_scale: Option<f64>,
    /// Controller rate 1/Δt^C in Hz.
    #[serde(default)]
    pub controller_rate: Option<f64>,
    /// Seed of the lab's random draws.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Prototype/specimen displacement ratio.
    #[serde(default)]
    pub geometric_scale: Option<f64>,
    /// Prototype/specimen force ratio.
    #[serde(default)]
    pub force_scale: Option<f64>,
    /// Device multiplier on the force.
    #[serde(default)]
    pub device_multiplier: Option<f64>,
    /// `[[lab.actuator]]`.
    #[serde(default)]
    pub actuator: Vec<ActuatorSpec>,
    /// `[[lab.force_control]]`.
    #[serde(default)]
    pub force_control: Vec<ForceControlSpec>,
    /// `[[lab.fault]]`, read entry by entry ([`FaultSpec`]) so that problems are reported at
    /// `lab.fault[i]`.
    #[serde(default)]
    pub fault: Vec<toml::Value>,
    /// `[[lab.setup]]`, read entry by entry ([`SetupSpec`]) so that problems are reported at
    /// `lab.setup[i]`.
    #[serde(default)]
    pub setup: Vec<toml::Value>,
    /// `[[lab.degradation]]`, read entry by entry ([`DegradationSpec`]) so that problems are
    /// reported at `lab.degradation[i]`.
    #[serde(default)]
    pub degradation: Vec<toml::Value>,
}

/// `[[lab.degradation]]`: a specimen element of the virtual laboratory whose parameter moves
/// linearly from its model-file value to `to` between two wall-clock test times.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DegradationSpec {
    /// Name of a specimen element.
    #[serde(default)]
    pub element: Option<String>,
    /// One of the element's parameters.
    #[serde(default)]
    pub parameter: Option<String>,
    /// Value reached at `until_time`.
    #[serde(default)]
    pub to: Option<f64>,
    /// Wall-clock test time (s) at which the change starts (default 0).
    #[serde(default)]
    pub from_time: Option<f64>,
    /// Wall-clock test time (s) at which `to` is reached (required, ≥ `from_time`).
    #[serde(default)]
    pub until_time: Option<f64>,
}

/// `[lab.link]`: the peer of a network transfer system.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// `host:port` of the controller or remote site.
    #[serde(default)]
    pub address: Option<String>,
    /// Local address to bind.
    #[serde(default)]
    pub bind: Option<String>,
    /// Reply timeout, s.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `lock_step` or `streaming`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Stale-reply lag in ticks (streaming).
    #[serde(default)]
    pub max_lag: Option<i64>,
    /// `tcp` (default) or `udp`, for `transfer = "opensees"`.
    #[serde(default)]
    pub protocol: Option<String>,
    /// `adapter` (default) or `element_server`, for `transfer = "opensees"`.
    #[serde(default)]
    pub peer: Option<String>,
}

/// `[[lab.fault]]`: a fault injected into the virtual laboratory.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Actuator name.
    #[serde(default)]
    pub actuator: Option<String>,
    /// Wall-clock test time (s) from which the fault acts.
    #[serde(default)]
    pub at: Option<f64>,
    /// `stuck_actuator`, `frozen_sensor`, `dropout`, `nan_force`, `overload`, `panic`, `stall`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Added force of an `overload` (specimen units).
    #[serde(default)]
    pub force: Option<f64>,
    /// Length of a `stall` (s).
    #[serde(default)]
    pub seconds: Option<f64>,
}

/// `[[lab.actuator]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActuatorSpec {
    /// Name.
    pub name: String,
    /// Driven DOFs `[[node, "dof"], …]` (none for an actuator of a `[[lab.setup]]`).
    #[serde(default)]
    pub dofs: Vec<(i64, String)>,
    /// `d = Σ c_i u_i` coefficients.
    #[serde(default)]
    pub coefficients: Option<Vec<f64>>,
    /// Dynamics: one table with `kind` and its parameters, or an array of block tables applied
    /// in series.
    #[serde(default)]
    pub dynamics: Option<toml::Value>,
    /// Sensor noise.
    #[serde(default)]
    pub noise: Option<NoiseSpec>,
    /// ADC resolution and range.
    #[serde(default)]
    pub adc: Option<AdcSpec>,
    /// Loading-system stiffness.
    #[serde(default)]
    pub loading_stiffness: Option<f64>,
    /// Virtual lab: a constant displacement control error `{ kind = "overshoot" |
    /// "undershoot", amount }` (specimen length units).
    #[serde(default)]
    pub control_error: Option<ControlErrorSpec>,
    /// Delay and compliance compensation.
    #[serde(default)]
    pub compensation: Option<CompensationSpec>,
    /// Declared capacity (required).
    #[serde(default)]
    pub capacity: Option<CapacitySpec>,
    /// Servo controller of the virtual lab: `{ feedback = [blocks], feedforward = [blocks] }`.
    #[serde(default)]
    pub controller: Option<toml::Value>,
    /// Block chains on the signals: `{ target, command, error, measurement }`.
    #[serde(default)]
    pub signals: Option<toml::Value>,
    /// The physical substructure the actuator loads (required when one of its DOFs belongs to
    /// several).
    #[serde(default)]
    pub substructure: Option<String>,
    /// Prototype/specimen displacement ratio of this actuator's specimen (default
    /// `lab.geometric_scale`).
    #[serde(default)]
    pub geometric_scale: Option<f64>,
    /// Prototype/specimen force ratio of this actuator's specimen (default: its
    /// `geometric_scale` squared when it gives one, else `lab.force_scale`).
    #[serde(default)]
    pub force_scale: Option<f64>,
    /// Device multiplier on this actuator's specimen force (default `lab.device_multiplier`).
    #[serde(default)]
    pub device_multiplier: Option<f64>,
}

/// `[[lab.setup]]`: a kinematic experimental setup (see `crate::physical::setup`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupSpec {
    /// `one_actuator`, `two_actuators_2d`, `three_actuators_2d`, `inverted_v_brace_2d`.
    pub kind: String,
    /// `linear` (default) or `nonlinear`.
    #[serde(default)]
    pub geometry: Option<String>,
    /// Actuator names, in the kind's order.
    pub actuators: Vec<String>,
    /// DOFs `[[node, "dof"], …]`, in the kind's order.
    pub dofs: Vec<(i64, String)>,
    /// Reference actuator lengths, in the kind's order.
    pub lengths: Vec<f64>,
    /// `one_actuator`: angle between the actuator and the DOF, degrees (default 0).
    #[serde(default)]
    pub angle: Option<f64>,
    /// Distance between the vertical actuators (three-actuator kinds).
    #[serde(default)]
    pub beam_length: Option<f64>,
    /// Height of the loading beam above the brace tip (`inverted_v_brace_2d`).
    #[serde(default)]
    pub arm_height: Option<f64>,
    /// Prototype/specimen displacement ratio per DOF.
    #[serde(default)]
    pub displacement_scale: Option<Vec<f64>>,
    /// Prototype/specimen force ratio per DOF.
    #[serde(default)]
    pub force_scale: Option<Vec<f64>>,
}

/// `[lab.actuator.capacity]`: what the hardware can do (specimen units, wall-clock rates).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySpec {
    /// Half stroke.
    #[serde(default)]
    pub stroke: Option<f64>,
    /// Largest velocity.
    #[serde(default)]
    pub velocity: Option<f64>,
    /// Largest force.
    #[serde(default)]
    pub force: Option<f64>,
}

/// `[lab.actuator.noise]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseSpec {
    /// Displacement noise RMS.
    #[serde(default)]
    pub displacement_rms: Option<f64>,
    /// Force noise RMS.
    #[serde(default)]
    pub force_rms: Option<f64>,
}

/// `[lab.actuator.adc]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdcSpec {
    /// Displacement channel resolution.
    #[serde(default)]
    pub displacement_resolution: Option<f64>,
    /// Force channel resolution.
    #[serde(default)]
    pub force_resolution: Option<f64>,
    /// Displacement channel full scale.
    #[serde(default)]
    pub displacement_range: Option<f64>,
    /// Force channel full scale.
    #[serde(default)]
    pub force_range: Option<f64>,
}

/// `[lab.actuator.compensation]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompensationSpec {
    /// Delay compensation.
    #[serde(default)]
    pub delay: Option<DelayCompSpec>,
    /// Compliance compensation.
    #[serde(default)]
    pub compliance: Option<ComplianceSpec>,
    /// Model-based inverse compensation.
    #[serde(default)]
    pub inverse: Option<InverseSpec>,
    /// Adaptive time series compensation.
    #[serde(default)]
    pub adaptive: Option<AdaptiveSpec>,
}

/// `[lab.actuator.compensation.inverse]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InverseSpec {
    /// `"first_order"` or `"second_order"`.
    pub model: String,
    /// τ of the first-order model (s).
    #[serde(default)]
    pub tau: Option<f64>,
    /// Natural frequency of the second-order model (Hz).
    #[serde(default)]
    pub frequency: Option<f64>,
    /// Damping ratio of the second-order model.
    #[serde(default)]
    pub damping: Option<f64>,
    /// Time constant of the low-pass that makes the inverse proper (s).
    pub filter_time_constant: f64,
}

/// `[lab.actuator.compensation.adaptive]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveSpec {
    /// Ticks in the identification window.
    pub window: i64,
    /// Ticks between identifications (default 1).
    #[serde(default)]
    pub update_every: Option<i64>,
    /// Initial (a0, a1, a2) (default [1, 0, 0]).
    #[serde(default)]
    pub initial: Option<Vec<f64>>,
    /// Lower bounds (default [0.1, 0, 0]).
    #[serde(default)]
    pub lower: Option<Vec<f64>>,
    /// Upper bounds (default [10, 0.1, 0.01]).
    #[serde(default)]
    pub upper: Option<Vec<f64>>,
    /// RMS target velocity below which no identification is made (default 0).
    #[serde(default)]
    pub min_velocity: Option<f64>,
    /// Spacing of the backward differences (ticks; default one coarse step).
    #[serde(default)]
    pub difference_spacing: Option<i64>,
}

/// `[lab.actuator.compensation.delay]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayCompSpec {
    /// Polynomial order.
    pub order: i64,
    /// Estimated delay in seconds.
    pub estimate: f64,
    /// Node spacing: ticks (integer ≥ 1) or `"coarse_step"`.
    #[serde(default)]
    pub node_spacing: Option<toml::Value>,
    /// Start-up policy: `"passthrough"` (default), `"hold_order"`, `"rest_history"`.
    #[serde(default)]
    pub startup: Option<String>,
}

/// `[lab.actuator.compensation.compliance]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComplianceSpec {
    /// Stiffness for non-negative feedback force.
    pub k_positive: f64,
    /// Stiffness for negative feedback force.
    pub k_negative: f64,
    /// Their unit, force/length.
    pub units: String,
}

/// `[[lab.force_control]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForceControlSpec {
    /// The DOF `[node, "dof"]`.
    pub dof: (i64, String),
    /// Constant force.
    pub force: f64,
}

/// `[safety]` (read in a second pass, so that its problems are reported at `safety.…`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetySpec {
    /// `hold` or `ramp_down`.
    #[serde(default)]
    pub on_trip: Option<String>,
    /// Speed of `ramp_down`.
    #[serde(default)]
    pub ramp_rate: Option<f64>,
    /// Consecutive deadline overruns that latch an event.
    #[serde(default)]
    pub max_overruns: Option<i64>,
    /// Limits by actuator name.
    #[serde(default)]
    pub actuator: BTreeMap<String, LimitsSpec>,
    /// Divergence criterion.
    #[serde(default)]
    pub divergence: Option<DivergenceSpec>,
}

/// `[safety.actuator.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Stroke.
    pub displacement: Option<f64>,
    /// Velocity.
    pub velocity: Option<f64>,
    /// Force.
    pub force: Option<f64>,
    /// Increment per tick.
    pub increment: Option<f64>,
    /// Following-error threshold (length).
    #[serde(default)]
    pub following_error: Option<f64>,
    /// How long the following error may exceed its threshold (s).
    #[serde(default)]
    pub following_time: Option<f64>,
    /// How long a reading may stay frozen (s, 0: off).
    #[serde(default)]
    pub frozen_time: Option<f64>,
    /// Consecutive ticks without a sample that trip.
    #[serde(default)]
    pub dropout_ticks: Option<i64>,
}

/// `[safety.divergence]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DivergenceSpec {
    /// Bound on |u|.
    pub displacement: Option<f64>,
    /// Bound on |Λ|.
    pub force: Option<f64>,
    /// Growth factor per window.
    #[serde(default)]
    pub growth: Option<f64>,
    /// Window length.
    #[serde(default)]
    pub window: Option<f64>,
    /// Consecutive growing windows.
    #[serde(default)]
    pub windows: Option<i64>,
    /// Amplitude floor.
    #[serde(default)]
    pub floor: Option<f64>,
    /// Bound on the generated energy.
    #[serde(default)]
    pub energy: Option<f64>,
    /// `window` (default) or `cumulative`.
    #[serde(default)]
    pub energy_mode: Option<String>,
    /// Length of the energy window (s).
    #[serde(default)]
    pub energy_window: Option<f64>,
}

/// `[runner]` (read in a second pass, so that its problems are reported at `runner.…`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerSpec {
    /// `fast` or `realtime`.
    #[serde(default)]
    pub pacing: Option<String>,
    /// CPUs to pin to.
    #[serde(default)]
    pub cpus: Option<Vec<i64>>,
    /// SCHED_FIFO priority.
    #[serde(default)]
    pub priority: Option<i64>,
    /// Results ring capacity in rows (default: as many rows as fit 64 MiB, 16 to 8192).
    #[serde(default)]
    pub results_ring: Option<i64>,
    /// Spin budget of the paced waits (µs).
    #[serde(default)]
    pub spin_budget: Option<f64>,
}

/// `[[lab.actuator]] control_error`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlErrorSpec {
    /// `overshoot` or `undershoot`.
    pub kind: String,
    /// Size of the error (specimen length units, > 0).
    pub amount: f64,
}
