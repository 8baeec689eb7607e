//! The validated model: nodes, elements, substructures, loads and analysis settings.
//!
//! These are the types the rest of the core works on, with their small methods. Reading them
//! from a model file (TOML text, every problem reported by file, field and reason) is the job
//! of the configuration layer above, [`Model::from_toml`]; referenced files (records) are read
//! through a [`SourceResolver`] supplied by the caller, so this crate performs no I/O itself.

pub mod fom;
pub mod imposed_motion;
pub mod lab;
pub mod updating;

use crate::elements::{DofRef, ElementRef};
use crate::excitation::TimeFunction;
use crate::units::Units;
use nalgebra::DMatrix;

/// Reads files a model refers to (records), relative to the model file.
pub trait SourceResolver {
    /// The text of `path` (as written in the model file), or a reason it cannot be read.
    fn read_to_string(&self, path: &str) -> Result<String, String>;
}

/// A resolver that refuses every file (for models without referenced files).
pub struct NoFiles;

impl SourceResolver for NoFiles {
    fn read_to_string(&self, path: &str) -> Result<String, String> {
        Err(format!(
            "cannot read `{path}`: no file access in this context"
        ))
    }
}

/// A node with named DOFs: its id and one record a DOF, in one block (issue 20: four
/// vectors a node were 104 bytes and four heap blocks; this is 24 bytes and one block of 24
/// bytes a DOF).
#[derive(Debug, Clone)]
pub struct Node {
    /// Id as written.
    pub id: i64,
    /// The DOFs, in the order declared.
    pub dofs: Box<[NodeDof]>,
}

/// One DOF of a [`Node`]: its name, whether it is fixed, its initial displacement and velocity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeDof {
    /// DOF name.
    pub name: crate::elements::DofName,
    /// Fixed to the ground.
    pub fixed: bool,
    /// Initial displacement.
    pub u0: f64,
    /// Initial velocity.
    pub v0: f64,
}

impl Node {
    /// Index of DOF `name` among the node's DOFs.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.dofs.iter().position(|d| d.name == name)
    }

    /// The record of DOF `name`.
    pub fn dof(&self, name: &str) -> Option<&NodeDof> {
        self.dofs.iter().find(|d| d.name == name)
    }
}

/// Role of an element inside a physical substructure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Computed (numerical mass and damping of a physical substructure, or any element of a
    /// numerical one).
    Numerical,
    /// Part of the tested specimen: its force is measured (here: a numerical stand-in).
    Specimen,
}

/// An element placed in a substructure.
///
/// The name is an entry of the model's one table of names ([`ElementName`], shared with the
/// state space's slot of the element), the
/// initial states are behind one thin pointer, null for an element without states, and the
/// substructure index is 32-bit: 48 bytes (issue 20: 80 bytes and a second copy of the name in
/// the state space an element of the 10⁵-DOF chain's 200 000; 56 with the states a boxed
/// slice).
#[derive(Debug, Clone)]
pub struct ElementInstance {
    /// Unique name (given or `kind#index`); split masses get `name@substructure`.
    pub name: ElementName,
    /// The element.
    pub element: ElementRef,
    /// Index into [`Model::substructures`] (32-bit: the instance is 56 bytes).
    pub substructure: u32,
    /// Numerical or specimen.
    pub role: Role,
    /// Whether Rayleigh damping applies to it.
    pub rayleigh: bool,
    /// Initial extra states.
    pub initial_state: InitialState,
}

/// The names of a model's elements, all in one text: name `i` is `text[ends[i − 1]..ends[i]]`.
///
/// Issue 20: an `Arc<str>` a name was a heap block an element (the 10⁵-DOF chain's 200 000
/// names, 27 bytes requested for `column12345` but a 48-byte block of glibc's, ≈ 8 MB of
/// resident memory); the table is two blocks for all of them.
#[derive(Debug, Default)]
pub struct NameTable {
    text: String,
    ends: Vec<u32>,
}

impl NameTable {
    /// An empty table with room for `count` names.
    pub fn with_capacity(count: usize) -> Self {
        Self {
            text: String::new(),
            ends: Vec::with_capacity(count),
        }
    }

    /// Append `name`; its index.
    pub fn push(&mut self, name: &str) -> u32 {
        self.text.push_str(name);
        let index = u32::try_from(self.ends.len()).expect("fewer than 2³² names");
        self.ends
            .push(u32::try_from(self.text.len()).expect("names of fewer than 2³² bytes in all"));
        index
    }

    /// Name `index`.
    pub fn get(&self, index: u32) -> &str {
        let i = index as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the table has no names.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Free the spare capacity (the text grows by doubling while a model is read).
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// The name of an element: a shared handle on its model's [`NameTable`] and an index in it,
/// 16 bytes like the `Arc<str>` it replaces, without a heap block of its own (issue 20).
/// Cloning it (the state space's slot of an element holds the same name) counts a reference
/// to the table. It reads, prints and compares like its text.
#[derive(Clone)]
pub struct ElementName {
    table: std::sync::Arc<NameTable>,
    index: u32,
}

impl ElementName {
    /// Name `index` of `table`.
    ///
    /// # Panics
    /// If the table has no name `index`.
    pub fn in_table(table: &std::sync::Arc<NameTable>, index: u32) -> Self {
        assert!(
            (index as usize) < table.len(),
            "no name {index} in the table"
        );
        Self {
            table: table.clone(),
            index,
        }
    }

    /// Name `index` of a table still being filled (the reader of the element tables, which
    /// sets the final table once all names are read).
    pub(crate) fn pending(table: &std::sync::Arc<NameTable>, index: u32) -> Self {
        Self {
            table: table.clone(),
            index,
        }
    }

    /// The name's text.
    pub fn as_str(&self) -> &str {
        self.table.get(self.index)
    }

    /// The table the name is in, and its index there (what [`ElementName::pending`] takes
    /// back): a holder that packs the index beside fields of its own (the state space's
    /// slot of an element, issue 20) keeps the two apart.
    pub(crate) fn into_parts(self) -> (std::sync::Arc<NameTable>, u32) {
        (self.table, self.index)
    }

    /// Whether `a` and `b` are the same entry of the same table (not only equal texts).
    pub fn same(a: &Self, b: &Self) -> bool {
        std::sync::Arc::ptr_eq(&a.table, &b.table) && a.index == b.index
    }
}

impl From<&str> for ElementName {
    /// A name in a table of its own (one element built outside a model file).
    fn from(name: &str) -> Self {
        let mut table = NameTable::with_capacity(1);
        let index = table.push(name);
        Self {
            table: std::sync::Arc::new(table),
            index,
        }
    }
}

impl From<String> for ElementName {
    fn from(name: String) -> Self {
        Self::from(name.as_str())
    }
}

impl From<&String> for ElementName {
    fn from(name: &String) -> Self {
        Self::from(name.as_str())
    }
}

impl std::ops::Deref for ElementName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ElementName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for ElementName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for ElementName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ElementName {}

impl PartialEq<str> for ElementName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ElementName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::hash::Hash for ElementName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl std::fmt::Display for ElementName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.as_str(), f)
    }
}

impl std::fmt::Debug for ElementName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for ElementName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The initial extra states of an [`ElementInstance`], read as a slice: none (most elements)
/// without a heap block, else the values in a boxed slice behind a thin pointer, so that the
/// instance holds 8 bytes for them, not a slice's 16 (issue 20).
#[derive(Clone, Default, PartialEq)]
pub struct InitialState(Option<Box<Box<[f64]>>>);

impl InitialState {
    /// The states `values` (none: no heap block).
    pub fn new(values: Vec<f64>) -> Self {
        Self((!values.is_empty()).then(|| Box::new(values.into_boxed_slice())))
    }
}

impl From<Vec<f64>> for InitialState {
    fn from(values: Vec<f64>) -> Self {
        Self::new(values)
    }
}

impl std::ops::Deref for InitialState {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        self.0.as_deref().map_or(&[], |b| b)
    }
}

impl std::fmt::Debug for InitialState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl serde::Serialize for InitialState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Estimated initial stiffness and damping of a physical substructure, over its DOFs.
#[derive(Debug, Clone)]
pub struct Estimate {
    /// DOFs of the matrices.
    pub dofs: Vec<DofRef>,
    /// Estimated stiffness.
    pub stiffness: DMatrix<f64>,
    /// Estimated damping.
    pub damping: DMatrix<f64>,
}

/// A substructure definition.
#[derive(Debug, Clone)]
pub struct Substructure {
    /// Name.
    pub name: String,
    /// Tested in the lab.
    pub physical: bool,
    /// Estimated initial stiffness/damping (physical substructures).
    pub estimate: Option<Estimate>,
}

/// Rayleigh damping `C = α M + β K` on the participating elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Rayleigh {
    /// Given coefficients.
    Coefficients {
        /// α (1/time).
        alpha: f64,
        /// β (time).
        beta: f64,
    },
    /// Target ratios on two modes (1-based) of the linearized coupled model.
    Modal {
        /// Mode numbers.
        modes: [usize; 2],
        /// Damping ratios.
        ratios: [f64; 2],
    },
}

/// The stiffness the `β K` term of Rayleigh damping uses for a hysteretic (state-dependent)
/// element, `[damping] stiffness` (issue 17). Linear elements always use their constant
/// stiffness; the three choices are those of OpenSees's `rayleigh αM βK βK_init βK_comm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RayleighStiffness {
    /// The initial stiffness `K_0` at rest (a constant matrix): `β K_0 v`.
    #[default]
    Initial,
    /// The tangent `K_c` of the state the step started from (the last committed one), frozen
    /// over the step: `β K_c v`.
    Committed,
    /// The tangent `K_t` of the current (trial) state: `β K_t v`.
    Current,
}

impl RayleighStiffness {
    /// The model-file spelling.
    pub fn name(self) -> &'static str {
        match self {
            RayleighStiffness::Initial => "initial",
            RayleighStiffness::Committed => "committed",
            RayleighStiffness::Current => "current",
        }
    }
}

/// A nodal force history.
#[derive(Debug, Clone)]
pub struct NodalLoad {
    /// Loaded DOF.
    pub dof: DofRef,
    /// Force as a function of time.
    pub function: TimeFunction,
}

/// Uniform ground acceleration along a direction, in model units (length/time²).
#[derive(Debug, Clone)]
pub struct GroundMotion {
    /// DOF name.
    pub direction: String,
    /// Acceleration history in model units.
    pub acceleration: TimeFunction,
    /// Description (record file or synthetic parameters).
    pub description: String,
    /// Seed of a synthetic record.
    pub seed: Option<u64>,
    /// Peak ground acceleration in g.
    pub pga_g: f64,
    /// The record file the motion was read from (as written in the model file, relative to
    /// it), with its sample interval and duration; `None` for a synthetic motion.
    pub record: Option<RecordSource>,
}

/// Where a recorded ground motion came from: enough for a results folder to say which record
/// was used (the front end hashes the file).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSource {
    /// Path as written in the model file.
    pub path: String,
    /// Sample interval of the record (None when not uniform).
    pub dt: Option<f64>,
    /// Time of the last sample.
    pub end_time: f64,
    /// Scale applied to the record's values (to its `pga`, or its `scale`).
    pub scale: f64,
}

/// Integrator choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegratorKind {
    /// Monolithic generalized-α on the assembled model.
    MgAlpha,
    /// Partitioned generalized-α with subcycling.
    PgAlpha,
    /// Monolithic LSRT2 Rosenbrock.
    Lsrt2,
    /// Element-level partitioning with localized Lagrange multipliers (Hovmand et al. 2022), basic
    /// solver trapezoidal (ρ∞ = 1) or generalized-α.
    Llm,
    /// Explicit real-time hybrid coupling: the whole numerical model stepped at the controller
    /// rate with the measured force fed back `force_delay` controller samples later
    /// ([`crate::integrators::ExplicitRths`]).
    ExplicitRths,
    /// The full-operator method of Hung and El-Tawil (2009), predictor–corrector with an
    /// estimated tangent stiffness ([`crate::integrators::Fom`]).
    Fom,
    /// Operator splitting with the initial stiffness (Nakashima et al. 1990), α-OS for
    /// ρ∞ < 1 (Combescure and Pegon 1997) ([`crate::integrators::Osm`]).
    Osm,
    /// Partitioned LSRT2 with the acceleration-continuity constraint and explicit multipliers
    /// at both stages, every subdomain at the same step (Bursi et al. 2011, §3).
    Lsrt2Partitioned,
    /// Interfield parallel LSRT2: a coarse subdomain at 4Δt in four interleaved processes, the
    /// fine ones at Δt/ss (Bursi et al. 2011, §4), started with the partitioned scheme.
    Lsrt2Interfield,
}

/// How PG-α splits the interface force of a coarse step between the free and the link
/// solutions (`analysis.multiplier_predictor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MultiplierPredictor {
    /// As published (Abbiati et al. 2019, eq 30): the free solutions carry the known share
    /// `(1 − j/ss) Λ_n` of `Λ_{n+j/ss}`, the link solution the rest, `(j/ss) Λ_{n+1}`.
    #[default]
    None,
    /// The free solutions carry `Λ_n` over the whole coarse step (the numerical one at
    /// `t_{n+1}` too); the interface solve gives the increment `Λ_{n+1} − Λ_n` and the link
    /// solution carries `(j/ss)(Λ_{n+1} − Λ_n)`. The same coupled solution for linear
    /// partitions whose estimate is their stiffness (superposition); for a hysteretic specimen
    /// the commanded free path is the coupled one up to the increment, so the link update
    /// moves it by `ℚ ΔΛ` only.
    Previous,
}

impl MultiplierPredictor {
    /// Name as in model files.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Previous => "previous",
        }
    }
}

/// The projection of the partitioned LSRT2 schemes at the end of each step, onto the
/// interface compatibility of the shared DOFs (mass-weighted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lsrt2Projection {
    /// None: only the accelerations are compatible, the interface displacements drift.
    None,
    /// Velocities (Bursi et al. 2011, §6).
    Velocity,
    /// Displacements and velocities (Bauchau and Laulusa 2008).
    DisplacementVelocity,
}

impl Lsrt2Projection {
    /// Name as in model files.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Velocity => "velocity",
            Self::DisplacementVelocity => "displacement-velocity",
        }
    }
}

impl IntegratorKind {
    /// Name as in model files.
    pub fn name(&self) -> &'static str {
        match self {
            Self::MgAlpha => "mg-alpha",
            Self::PgAlpha => "pg-alpha",
            Self::Lsrt2 => "lsrt2",
            Self::Llm => "llm",
            Self::ExplicitRths => "explicit-rths",
            Self::Lsrt2Partitioned => "lsrt2-partitioned",
            Self::Lsrt2Interfield => "lsrt2-interfield",
            Self::Fom => "fom",
            Self::Osm => "osm",
        }
    }
}

/// How the initial multipliers Λ0 are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMode {
    /// Coupled, acceleration-compatible start (ALGORITHMS.md E11).
    Consistent,
    /// Λ0 = 0 (the papers' shortcut; only right for zero initial conditions and load).
    Zero,
}

/// `[analysis]`, validated.
#[derive(Debug, Clone)]
pub struct AnalysisSettings {
    /// Integrator.
    pub integrator: IntegratorKind,
    /// ρ∞.
    pub rho_inf: f64,
    /// Δt^N.
    pub time_step: f64,
    /// ss.
    pub subcycles: usize,
    /// Simulated duration.
    pub duration: f64,
    /// Numerical-substructure corrections per step.
    pub corrections: usize,
    /// Λ0 start.
    pub start: StartMode,
    /// LSRT2 γ.
    pub lsrt2_gamma: f64,
    /// `explicit-rths`: controller samples between the measurement of a force and the step
    /// it loads (0: the force measured at the last tick).
    pub force_delay: usize,
    /// Partitioned LSRT2: the projection at the end of each step.
    pub projection: Lsrt2Projection,
    /// `lsrt2-interfield`: index of the coarse substructure (None: not that scheme).
    pub coarse: Option<usize>,
    /// `fom`/`osm`: `[analysis.estimator]`.
    pub estimator: fom::EstimatorSettings,
    /// `analysis.nonlinear_solver = "converged"` (the default): relative tolerance of the
    /// converged solve of nonlinear numerical partitions; `None` for `"corrections"` (the fixed
    /// number of corrections of earlier versions).
    pub nonlinear_tolerance: Option<f64>,
    /// `analysis.nonlinear_max_iterations`.
    pub nonlinear_max_iterations: usize,
    /// `analysis.nonlinear_solver = "newton"`: the converged solve iterates with the current
    /// tangent of the nonlinear elements, re-factored every iteration, instead of the initial
    /// one (issue 17).
    pub nonlinear_newton: bool,
    /// PG-α: `analysis.multiplier_predictor`.
    pub multiplier_predictor: MultiplierPredictor,
    /// PG-α, `analysis.link_tangent = "current"`: the numerical partition's link operator `ℚ`
    /// and the Steklov–Poincaré operator `H` rebuilt every step with the current tangent of
    /// the free state (issue 17); `false` (`"initial"`): built once with `J0`.
    pub link_current_tangent: bool,
    /// MG-α, `analysis.threads`: cores the step of a large linear numerical substructure may
    /// use (1 or 2; issue 20).
    pub threads: usize,
}

/// Default relative tolerance of the converged nonlinear solve (`analysis.nonlinear_tolerance`).
pub const NONLINEAR_TOLERANCE: f64 = 1e-10;
/// Default iteration bound of the converged nonlinear solve.
pub const NONLINEAR_MAX_ITERATIONS: usize = 20;

impl AnalysisSettings {
    /// Number of coarse steps.
    pub fn n_steps(&self) -> u64 {
        (self.duration / self.time_step - 1e-9).ceil().max(0.0) as u64
    }

    /// Commands sent to a physical substructure per step, i.e. controller ticks per step: ss
    /// for PG-α; two per (sub)step for the partitioned LSRT2 schemes, whose two stages each
    /// evaluate the restoring force (at t and t + h/2).
    pub fn commands_per_step(&self) -> usize {
        match self.integrator {
            IntegratorKind::Lsrt2Partitioned | IntegratorKind::Lsrt2Interfield => {
                2 * self.subcycles.max(1)
            }
            _ => self.subcycles.max(1),
        }
    }
}

/// `[output]`, validated.
#[derive(Debug, Clone)]
pub struct OutputSettings {
    /// Record every n-th step.
    pub every: u64,
    /// Element forces and states.
    pub elements: bool,
    /// Substructure energies.
    pub energy: bool,
    /// The recorded selection (`nodes`, `dofs`, element names); `None` records everything.
    pub selection: Option<OutputSelection>,
    /// How the results rows are written (`[output] format`).
    pub format: OutputFormat,
}

/// How the results rows are written (`[output] format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// `results.csv`: shortest round-trip numbers as text (the default).
    #[default]
    Csv,
    /// `results.bin`: little-endian f64 rows after a self-describing header (the layout is
    /// documented in docs/model-reference.md, `[output]`).
    Binary,
}

impl OutputFormat {
    /// The results file's name in a run folder.
    pub fn results_file_name(self) -> &'static str {
        match self {
            OutputFormat::Csv => "results.csv",
            OutputFormat::Binary => "results.bin",
        }
    }
}

/// What `[output]` `nodes`, `dofs` and `elements = [names]` select, validated against the
/// model: the nodal columns (`u`, `v`, `a_abs`) of the selected nodes' selected DOFs and the
/// element columns of the named elements, as an OpenSees `recorder Node -node … -dof …` or
/// `recorder Element -ele …` would. The DOFs of physical substructures and of the interface
/// (and the measured forces, multipliers and gaps) are recorded whatever the selection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputSelection {
    /// Node ids (`None`: every node).
    pub nodes: Option<Vec<i64>>,
    /// DOF names (`None`: every DOF of the selected nodes).
    pub dofs: Option<Vec<String>>,
    /// Element names (`None`: every element, when `elements` is on).
    pub elements: Option<Vec<String>>,
}

impl OutputSelection {
    /// Whether the nodal columns of `node`'s DOF `dof` are selected.
    pub fn has_dof(&self, node: i64, dof: &str) -> bool {
        self.nodes.as_ref().is_none_or(|n| n.contains(&node))
            && self
                .dofs
                .as_ref()
                .is_none_or(|d| d.iter().any(|x| x == dof))
    }

    /// Whether the columns of the element slot `slot` (an element's name, `name@receiver` for
    /// a share of a split element, `rayleigh@name` for its Rayleigh term) are selected.
    pub fn has_element_slot(&self, slot: &str) -> bool {
        let Some(names) = &self.elements else {
            return true;
        };
        names.iter().any(|n| {
            slot == n
                || slot
                    .strip_prefix(n.as_str())
                    .is_some_and(|r| r.starts_with('@'))
                || slot.strip_prefix("rayleigh@") == Some(n.as_str())
        })
    }
}

/// A validated model.
#[derive(Debug, Clone)]
pub struct Model {
    /// Title.
    pub title: String,
    /// Source name (file) for messages.
    pub source: String,
    /// Units.
    pub units: Units,
    /// Nodes sorted by id.
    pub nodes: Vec<Node>,
    /// Elements with their substructure.
    pub elements: Vec<ElementInstance>,
    /// Substructures (index 0.. as referenced by elements).
    pub substructures: Vec<Substructure>,
    /// Rayleigh damping.
    pub rayleigh: Option<Rayleigh>,
    /// The stiffness of the `β K` term of hysteretic elements (`[damping] stiffness`).
    pub rayleigh_stiffness: RayleighStiffness,
    /// Nodal loads.
    pub loads: Vec<NodalLoad>,
    /// Ground motions.
    pub ground_motions: Vec<GroundMotion>,
    /// Analysis settings.
    pub analysis: AnalysisSettings,
    /// Output settings.
    pub output: OutputSettings,
    /// Imposed (Dirichlet) motions, `[[imposed_motion]]`.
    pub imposed_motions: Vec<imposed_motion::ImposedMotion>,
    /// Explicit mass distributions among element partitions (LLM mode).
    pub mass_shares: Vec<imposed_motion::MassShare>,
    /// Transfer system, safety limits and runner (`[lab]`, `[safety]`, `[runner]`).
    pub lab: Option<lab::LabConfig>,
    /// Online model updating (`[updating]`).
    pub updating: Option<updating::UpdatingConfig>,
    /// Plausibility warnings of the model file (valid values that are probably not meant),
    /// for the front ends to show and record.
    pub warnings: Vec<crate::error::ModelIssue>,
}

/// Largest `analysis.subcycles`: every coarse step runs ss physical substeps and the lab keeps
/// a ring of 4·ss records, so an absurd ss would exhaust time and memory.
pub const MAX_SUBCYCLES: i64 = 10_000;

/// Largest `analysis.force_delay` (controller samples) of `explicit-rths`.
pub const MAX_FORCE_DELAY: i64 = 1_000;

/// LSRT2 γ = 1 − √2/2.
pub const LSRT2_GAMMA_LOW: f64 = 1.0 - std::f64::consts::FRAC_1_SQRT_2;
/// LSRT2 γ = 1 + √2/2.
pub const LSRT2_GAMMA_HIGH: f64 = 1.0 + std::f64::consts::FRAC_1_SQRT_2;

impl Model {
    /// Index of a node by id.
    ///
    /// `nodes` is sorted by id (as the model reader leaves it), so this is a binary search;
    /// a list built otherwise is searched linearly when the binary search misses.
    pub fn node(&self, id: i64) -> Option<&Node> {
        match self.nodes.binary_search_by_key(&id, |n| n.id) {
            Ok(i) => Some(&self.nodes[i]),
            Err(_) => self.nodes.iter().find(|n| n.id == id),
        }
    }

    /// Initial displacement and velocity of a DOF.
    pub fn initial(&self, d: &DofRef) -> (f64, f64) {
        self.node(d.node)
            .and_then(|n| n.dofs.iter().find(|x| x.name == d.dof))
            .map_or((0.0, 0.0), |x| (x.u0, x.v0))
    }

    /// Whether a DOF is fixed to the ground.
    pub fn is_fixed(&self, d: &DofRef) -> bool {
        self.node(d.node)
            .and_then(|n| n.dofs.iter().find(|x| x.name == d.dof))
            .is_some_and(|x| x.fixed)
    }

    /// Index of the numerical substructure.
    pub fn numerical_substructure(&self) -> Option<usize> {
        self.substructures.iter().position(|s| !s.physical)
    }
}
