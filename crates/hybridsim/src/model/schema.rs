//! The model file as written (TOML), before validation.
//!
//! Top-level tables: `title`, `[units]`, `[[node]]`, `[[element]]`, `[substructure.NAME]`,
//! `[damping]`, `[[load]]`, `[[ground_motion]]`, `[[imposed_motion]]`, `[analysis]`, `[output]`,
//! `[lab]`, `[safety]`, `[runner]` (see `model::lab`). The tables `updating` and `network` are
//! reserved for later versions; any other key is rejected.

use crate::units::Units;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Top-level tables reserved for later versions of the schema.
pub const RESERVED_TABLES: &[(&str, &str)] = &[
    ("updating", "online model updating"),
    ("network", "network transfer systems"),
];

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
    /// Reserved.
    #[serde(default)]
    pub lab: Option<toml::Value>,
    /// Reserved.
    #[serde(default)]
    pub safety: Option<toml::Value>,
    /// Reserved.
    #[serde(default)]
    pub runner: Option<toml::Value>,
    /// Imposed (Dirichlet) motions, parsed in [`super::imposed_motion`].
    #[serde(default)]
    pub imposed_motion: Option<toml::Value>,
    /// Reserved.
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
}

/// `[output]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Record every `every`-th step (default 1).
    #[serde(default)]
    pub every: Option<i64>,
    /// Record element forces and states (default true).
    #[serde(default)]
    pub elements: Option<bool>,
    /// Record each substructure's energy (default true).
    #[serde(default)]
    pub energy: Option<bool>,
}
