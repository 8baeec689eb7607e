//! `[analysis]` (integrator and time stepping) and `[output]` (what is recorded).

use super::finite_positive;
use super::schema::{AnalysisSpec, OutputSpec};
use crate::error::Diagnostics;
use crate::model::fom::{EstimatorSettings, Linearization, TangentUpdate, DEFAULT_PSI};
use crate::model::{
    AnalysisSettings, IntegratorKind, Lsrt2Projection, MultiplierPredictor, OutputFormat,
    OutputSelection, OutputSettings, RayleighStiffness, StartMode, Substructure, LSRT2_GAMMA_HIGH,
    LSRT2_GAMMA_LOW, MAX_FORCE_DELAY, MAX_SUBCYCLES,
};

/// Whether the model file asks for the LLM integrator (`[analysis] integrator = "llm"`).
pub(super) fn llm_mode(spec: Option<&AnalysisSpec>) -> bool {
    spec.is_some_and(|a| a.integrator == "llm")
}

/// `[analysis]`, required; checked against the substructures (pg-alpha needs a partition).
pub(super) fn analysis(
    spec: Option<&AnalysisSpec>,
    substructures: &[Substructure],
    diag: &mut Diagnostics,
) -> Option<AnalysisSettings> {
    let Some(a) = spec else {
        diag.push("analysis", "the [analysis] table is required");
        return None;
    };
    let before = diag.len();
    let integrator = integrator(a, diag);
    check_basic_solver(a, diag);
    let rho_inf = rho_inf(a, diag);
    let subcycles = time_stepping(a, integrator, diag);
    let corrections = a.corrections.unwrap_or(1);
    if !(1..=20).contains(&corrections) {
        diag.push(
            "analysis.corrections",
            format!("must be between 1 and 20, found {corrections}"),
        );
    }
    if corrections > 1 && is_lsrt2(integrator) {
        diag.push("analysis.corrections", "LSRT2 has no corrections");
    }
    let start = match a.start.as_deref() {
        None | Some("consistent") => StartMode::Consistent,
        Some("zero") => StartMode::Zero,
        Some(other) => {
            diag.push(
                "analysis.start",
                format!("must be \"consistent\" or \"zero\", found `{other}`"),
            );
            StartMode::Consistent
        }
    };
    let lsrt2_gamma = lsrt2_gamma(a, integrator, diag);
    if integrator == IntegratorKind::PgAlpha {
        check_partition(substructures, diag);
    }
    let force_delay = force_delay(a, integrator, substructures, diag);
    let (projection, coarse) = lsrt2_partitioned(a, integrator, start, substructures, diag);
    let estimator = estimator(a, integrator, rho_inf, diag);
    let (nonlinear_tolerance, nonlinear_max_iterations, nonlinear_newton) =
        nonlinear_solver(a, integrator, diag);
    let multiplier_predictor = multiplier_predictor(a, integrator, diag);
    let link_current_tangent = link_tangent(a, integrator, nonlinear_tolerance, diag);
    let threads = threads(a, integrator, diag);
    if diag.len() > before {
        return None;
    }
    Some(AnalysisSettings {
        integrator,
        rho_inf,
        time_step: a.time_step,
        subcycles: subcycles as usize,
        duration: a.duration,
        corrections: corrections as usize,
        start,
        lsrt2_gamma,
        force_delay,
        projection,
        coarse,
        estimator,
        nonlinear_tolerance,
        nonlinear_max_iterations,
        nonlinear_newton,
        multiplier_predictor,
        link_current_tangent,
        threads,
    })
}

/// `analysis.threads` (MG-α only, issue 20): 1 (the default) or 2 — the effective matrix of a
/// large linear numerical substructure solved in two parts and a separator, part B on a
/// second core (`hybridsim run` only; the real-time runner's two cores are taken).
fn threads(a: &AnalysisSpec, integrator: IntegratorKind, diag: &mut Diagnostics) -> usize {
    let Some(t) = a.threads else {
        return 1;
    };
    if !(1..=2).contains(&t) {
        diag.push("analysis.threads", format!("must be 1 or 2, found {t}"));
        return 1;
    }
    if integrator != IntegratorKind::MgAlpha {
        diag.push(
            "analysis.threads",
            format!(
                "only used by integrator = \"mg-alpha\", not `{}`",
                integrator.name()
            ),
        );
    }
    t as usize
}

/// `analysis.link_tangent` (PG-α only, issue 17): `initial` (the link operator `ℚ` and `H`
/// built once with `J0`) or `current` (the numerical partition's `ℚ` and `H` rebuilt every
/// step with the current tangent of its free state, which needs the converged solve).
fn link_tangent(
    a: &AnalysisSpec,
    integrator: IntegratorKind,
    nonlinear_tolerance: Option<f64>,
    diag: &mut Diagnostics,
) -> bool {
    let current = match a.link_tangent.as_deref() {
        None | Some("initial") => false,
        Some("current") => true,
        Some(other) => {
            diag.push(
                "analysis.link_tangent",
                format!("must be \"initial\" or \"current\", found `{other}`"),
            );
            return false;
        }
    };
    if a.link_tangent.is_some() && integrator != IntegratorKind::PgAlpha {
        diag.push(
            "analysis.link_tangent",
            format!(
                "only used by integrator = \"pg-alpha\", not `{}`",
                integrator.name()
            ),
        );
    }
    if current && nonlinear_tolerance.is_none() {
        diag.push(
            "analysis.link_tangent",
            "\"current\" takes the tangent of the converged free state: it needs \
             nonlinear_solver = \"converged\" or \"newton\", not \"corrections\"",
        );
    }
    current
}

/// The default of `analysis.link_tangent` when the key is absent: `current` for PG-α with a
/// tangent Rayleigh damping (`damping.stiffness = "committed"` or `"current"`) and a converged
/// solve, `initial` otherwise. With the initial-tangent link, PG-α's link update corrects the
/// velocity with `ℚ` built on `β K_0` while the numerical substructure applies `β K_t v`: a
/// first-order gap to MG-α and OpenSees at the same step (2.2e-4 of the peak at Δt = 1 ms),
/// which the current-tangent link closes to the solve's tolerance (issue 17; BENCHMARKS.md,
/// "Issue 17, session 19"). Under the fixed `corrections` there is no converged free state to
/// take the tangent from, so the published link stays.
pub(super) fn default_link_tangent(
    a: &mut AnalysisSettings,
    stiffness: RayleighStiffness,
    given: bool,
) {
    if !given
        && a.integrator == IntegratorKind::PgAlpha
        && stiffness != RayleighStiffness::Initial
        && a.nonlinear_tolerance.is_some()
    {
        a.link_current_tangent = true;
    }
}

/// `analysis.multiplier_predictor` (PG-α only): `none` (the published split) or `previous`.
fn multiplier_predictor(
    a: &AnalysisSpec,
    integrator: IntegratorKind,
    diag: &mut Diagnostics,
) -> MultiplierPredictor {
    let predictor = match a.multiplier_predictor.as_deref() {
        None | Some("none") => MultiplierPredictor::None,
        Some("previous") => MultiplierPredictor::Previous,
        Some(other) => {
            diag.push(
                "analysis.multiplier_predictor",
                format!("must be \"none\" or \"previous\", found `{other}`"),
            );
            return MultiplierPredictor::None;
        }
    };
    if a.multiplier_predictor.is_some() && integrator != IntegratorKind::PgAlpha {
        diag.push(
            "analysis.multiplier_predictor",
            format!(
                "only used by integrator = \"pg-alpha\", not `{}`",
                integrator.name()
            ),
        );
    }
    predictor
}

/// Whether `integrator` is one of the LSRT2 schemes.
fn is_lsrt2(integrator: IntegratorKind) -> bool {
    matches!(
        integrator,
        IntegratorKind::Lsrt2 | IntegratorKind::Lsrt2Partitioned | IntegratorKind::Lsrt2Interfield
    )
}

/// `projection` and `coarse` of the partitioned LSRT2 schemes (Bursi et al. 2011, §§3–6):
/// at least two substructures; `coarse` names a numerical one (`lsrt2-interfield` only); Λ is
/// computed at every stage, so `start = "zero"` does not apply.
fn lsrt2_partitioned(
    a: &AnalysisSpec,
    integrator: IntegratorKind,
    start: StartMode,
    substructures: &[Substructure],
    diag: &mut Diagnostics,
) -> (Lsrt2Projection, Option<usize>) {
    let partitioned = matches!(
        integrator,
        IntegratorKind::Lsrt2Partitioned | IntegratorKind::Lsrt2Interfield
    );
    let name = integrator.name();
    let projection = match a.projection.as_deref() {
        None | Some("none") => Lsrt2Projection::None,
        Some("velocity") => Lsrt2Projection::Velocity,
        Some("displacement-velocity") => Lsrt2Projection::DisplacementVelocity,
        Some(other) => {
            diag.push(
                "analysis.projection",
                format!(
                    "must be \"none\", \"velocity\" or \"displacement-velocity\", found `{other}`"
                ),
            );
            Lsrt2Projection::None
        }
    };
    if a.projection.is_some() && !partitioned {
        diag.push(
            "analysis.projection",
            "only applies to integrator = \"lsrt2-partitioned\" or \"lsrt2-interfield\"",
        );
    }
    if !partitioned {
        if a.coarse.is_some() {
            diag.push(
                "analysis.coarse",
                "only applies to integrator = \"lsrt2-interfield\"",
            );
        }
        return (projection, None);
    }
    if substructures.len() < 2 {
        diag.push(
            "analysis.integrator",
            format!("{name} needs at least two substructures ([substructure.NAME] tables)"),
        );
    }
    if start == StartMode::Zero {
        diag.push(
            "analysis.start",
            format!(
                "{name} computes the multipliers from the state at every stage (Bursi et al. \
                 2011, eqs 13 and 16): there is no Λ0 to set to zero"
            ),
        );
    }
    if integrator == IntegratorKind::Lsrt2Partitioned {
        if let Some(c) = &a.coarse {
            diag.push(
                "analysis.coarse",
                format!(
                    "`{c}`: lsrt2-partitioned steps every substructure at the same Δt; a coarse \
                     substructure needs integrator = \"lsrt2-interfield\""
                ),
            );
        }
        return (projection, None);
    }
    let coarse = match &a.coarse {
        Some(c) => match substructures.iter().position(|s| &s.name == c) {
            Some(k) if substructures[k].physical => {
                diag.push(
                    "analysis.coarse",
                    format!(
                        "`{c}` is physical: the coarse subdomain runs four interleaved processes \
                         two exchange steps ahead of the fine ones, which a specimen commanded \
                         once per controller tick cannot follow; name a numerical substructure"
                    ),
                );
                None
            }
            Some(k) => Some(k),
            None => {
                diag.push(
                    "analysis.coarse",
                    format!(
                        "no substructure `{c}` (the substructures are {})",
                        substructures
                            .iter()
                            .map(|s| format!("`{}`", s.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                None
            }
        },
        None => {
            let k = substructures.iter().position(|s| !s.physical);
            if k.is_none() {
                diag.push(
                    "analysis.coarse",
                    "lsrt2-interfield needs a numerical substructure for the coarse subdomain",
                );
            }
            k
        }
    };
    (projection, coarse)
}

/// `integrator` (`trapezoidal` is MG-α with ρ∞ = 1).
fn integrator(a: &AnalysisSpec, diag: &mut Diagnostics) -> IntegratorKind {
    match a.integrator.as_str() {
        "mg-alpha" | "trapezoidal" => IntegratorKind::MgAlpha,
        "pg-alpha" => IntegratorKind::PgAlpha,
        "lsrt2" => IntegratorKind::Lsrt2,
        "llm" => IntegratorKind::Llm,
        "explicit-rths" => IntegratorKind::ExplicitRths,
        "lsrt2-partitioned" => IntegratorKind::Lsrt2Partitioned,
        "lsrt2-interfield" => IntegratorKind::Lsrt2Interfield,
        "fom" => IntegratorKind::Fom,
        "osm" => IntegratorKind::Osm,
        other => {
            diag.push(
                "analysis.integrator",
                format!(
                    "unknown integrator `{other}` (mg-alpha, pg-alpha, lsrt2, trapezoidal, llm, \
                     explicit-rths, lsrt2-partitioned, lsrt2-interfield, fom, osm)"
                ),
            );
            IntegratorKind::MgAlpha
        }
    }
}

/// `rho_inf` in [0, 1] (default 1; only 1 for the trapezoidal rule).
fn rho_inf(a: &AnalysisSpec, diag: &mut Diagnostics) -> f64 {
    let rho_inf = match (a.integrator.as_str(), a.rho_inf) {
        ("trapezoidal", Some(r)) if r != 1.0 => {
            diag.push(
                "analysis.rho_inf",
                "the trapezoidal rule is ρ∞ = 1; use mg-alpha for other values",
            );
            1.0
        }
        (_, r) => r.unwrap_or(1.0),
    };
    if !(rho_inf.is_finite() && (0.0..=1.0).contains(&rho_inf)) {
        diag.push(
            "analysis.rho_inf",
            format!("must be in [0, 1], found {rho_inf}"),
        );
    }
    rho_inf
}

/// `time_step`, `duration` and `subcycles` (returned; subcycling only with pg-alpha).
fn time_stepping(a: &AnalysisSpec, integrator: IntegratorKind, diag: &mut Diagnostics) -> i64 {
    if !finite_positive(a.time_step) {
        diag.push(
            "analysis.time_step",
            format!("must be positive and finite, found {}", a.time_step),
        );
    }
    if !finite_positive(a.duration) {
        diag.push(
            "analysis.duration",
            format!("must be positive and finite, found {}", a.duration),
        );
    } else if finite_positive(a.time_step) && a.duration < a.time_step {
        diag.push("analysis.duration", "is shorter than one time step");
    }
    let subcycles = a.subcycles.unwrap_or(1);
    if subcycles < 1 {
        diag.push(
            "analysis.subcycles",
            format!("must be a whole number ≥ 1, found {subcycles}"),
        );
    } else if subcycles > MAX_SUBCYCLES {
        diag.push(
            "analysis.subcycles",
            format!(
                "must be at most {MAX_SUBCYCLES} substeps per numerical step, found {subcycles}"
            ),
        );
    }
    if subcycles > 1
        && !matches!(
            integrator,
            IntegratorKind::PgAlpha | IntegratorKind::Lsrt2Interfield
        )
    {
        diag.push(
            "analysis.subcycles",
            "subcycling needs the partitioned integrator `pg-alpha` or `lsrt2-interfield`",
        );
    }
    subcycles
}

/// `lsrt2_gamma`: `low` (default) or `high`, only for LSRT2.
fn lsrt2_gamma(a: &AnalysisSpec, integrator: IntegratorKind, diag: &mut Diagnostics) -> f64 {
    let lsrt2_gamma = match a.lsrt2_gamma.as_deref() {
        None | Some("low") => LSRT2_GAMMA_LOW,
        Some("high") => LSRT2_GAMMA_HIGH,
        Some(other) => {
            diag.push(
                "analysis.lsrt2_gamma",
                format!("must be \"low\" or \"high\", found `{other}`"),
            );
            LSRT2_GAMMA_LOW
        }
    };
    if a.lsrt2_gamma.is_some() && !is_lsrt2(integrator) {
        diag.push(
            "analysis.lsrt2_gamma",
            "only applies to integrator = \"lsrt2\", \"lsrt2-partitioned\" or \"lsrt2-interfield\"",
        );
    }
    lsrt2_gamma
}

/// `force_delay` (controller samples, 0 to [`MAX_FORCE_DELAY`], default 0), only for
/// `explicit-rths`, which also needs a physical substructure to couple.
fn force_delay(
    a: &AnalysisSpec,
    integrator: IntegratorKind,
    substructures: &[Substructure],
    diag: &mut Diagnostics,
) -> usize {
    let explicit = integrator == IntegratorKind::ExplicitRths;
    if explicit && !substructures.iter().any(|s| s.physical) {
        diag.push(
            "analysis.integrator",
            "explicit-rths couples a physical substructure to the numerical model; none is \
             declared (add `physical = true` to a [substructure.NAME] and a [lab])",
        );
    }
    let Some(d) = a.force_delay else {
        return 0;
    };
    if !explicit {
        diag.push(
            "analysis.force_delay",
            "only applies to integrator = \"explicit-rths\"",
        );
        return 0;
    }
    if !(0..=MAX_FORCE_DELAY).contains(&d) {
        diag.push(
            "analysis.force_delay",
            format!(
                "must be a whole number of controller samples from 0 to {MAX_FORCE_DELAY}, \
                 found {d}"
            ),
        );
        return 0;
    }
    d as usize
}

/// pg-alpha: at least two substructures, exactly one of them numerical.
fn check_partition(substructures: &[Substructure], diag: &mut Diagnostics) {
    let n_numerical = substructures.iter().filter(|s| !s.physical).count();
    if substructures.len() < 2 {
        diag.push(
            "analysis.integrator",
            "pg-alpha needs at least two substructures ([substructure.NAME] tables)",
        );
    } else if n_numerical != 1 {
        diag.push(
            "analysis.integrator",
            format!("pg-alpha needs exactly one numerical substructure, found {n_numerical}"),
        );
    }
}

/// `[analysis] basic_solver` of the `llm` integrator: `trapezoidal` (Hovmand et al. 2022, eqs 5–9,
/// the default; ρ∞ = 1) or `generalized-alpha` (ρ∞ from `rho_inf`).
fn check_basic_solver(a: &AnalysisSpec, diag: &mut Diagnostics) {
    let llm = a.integrator == "llm";
    match (a.basic_solver.as_deref(), llm) {
        (Some(_), false) => diag.push(
            "analysis.basic_solver",
            "only applies to integrator = \"llm\"",
        ),
        (None | Some("trapezoidal"), true) => {
            if let Some(r) = a.rho_inf {
                if r != 1.0 {
                    diag.push(
                        "analysis.rho_inf",
                        "the trapezoidal basic solver is ρ∞ = 1; set basic_solver = \
                         \"generalized-alpha\" for algorithmic damping",
                    );
                }
            }
        }
        (Some("generalized-alpha"), true) | (None, false) => {}
        (Some(other), true) => diag.push(
            "analysis.basic_solver",
            format!("must be \"trapezoidal\" or \"generalized-alpha\", found `{other}`"),
        ),
    }
    if llm && a.start.as_deref() == Some("zero") {
        diag.push(
            "analysis.start",
            "the llm integrator always starts from the coupled, consistent state",
        );
    }
}

/// `[output]`: record every `every`-th step (≥ 1), element forces and states (all, none or
/// by name), energies, and the nodal selection (`nodes`, `dofs`), checked against the model's
/// nodes (`node_dofs`, DOF names by node id) and element names: an unknown node, DOF or
/// element is an error at its field naming it.
pub(super) fn output(
    spec: &OutputSpec,
    node_dofs: &super::NodeDofs,
    element_names: &[&str],
    diag: &mut Diagnostics,
) -> OutputSettings {
    let every = spec.every.unwrap_or(1);
    if every < 1 {
        diag.push("output.every", format!("must be at least 1, found {every}"));
    }
    let (elements, element_selection) = match &spec.elements {
        None => (true, None),
        Some(toml::Value::Boolean(b)) => (*b, None),
        Some(toml::Value::Array(items)) => {
            // What a name may be: an element's name or what comes before any `@` of one (a
            // split element's name), in a hash set: a scan of every element for each name was
            // O(N²) for a selection of every member (63 630 at 10⁵ DOFs, issue 20).
            let known: std::collections::HashSet<&str> = element_names
                .iter()
                .flat_map(|e| {
                    e.match_indices('@')
                        .map(|(i, _)| &e[..i])
                        .chain(std::iter::once(*e))
                })
                .collect();
            let mut names = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(n) if known.contains(n) => names.push(n.to_string()),
                    Some(n) => diag.push(
                        format!("output.elements[{i}]"),
                        format!("no element is named `{n}`"),
                    ),
                    None => diag.push(
                        format!("output.elements[{i}]"),
                        format!("must be an element name (a string), found {item}"),
                    ),
                }
            }
            (true, Some(names))
        }
        Some(other) => {
            diag.push(
                "output.elements",
                format!(
                    "must be true, false or an array of element names, found {}",
                    other.type_str()
                ),
            );
            (true, None)
        }
    };
    if let Some(nodes) = &spec.nodes {
        for (i, id) in nodes.iter().enumerate() {
            if !node_dofs.contains_node(*id) {
                diag.push(format!("output.nodes[{i}]"), format!("no node has id {id}"));
            }
        }
    }
    if let Some(dofs) = &spec.dofs {
        // The selected node ids in a hash set (a scan of them for every node was O(N²)).
        let selected: Option<std::collections::HashSet<i64>> =
            spec.nodes.as_ref().map(|n| n.iter().copied().collect());
        for (i, d) in dofs.iter().enumerate() {
            // A DOF name must be declared on a selected node (on any node without `nodes`).
            let declared = node_dofs
                .iter()
                .filter(|(id, _)| selected.as_ref().is_none_or(|n| n.contains(id)))
                .any(|(_, names)| names.contains(d));
            if !declared {
                let on = if spec.nodes.is_some() {
                    "the selected nodes"
                } else {
                    "any node"
                };
                diag.push(
                    format!("output.dofs[{i}]"),
                    format!("`{d}` is not a DOF of {on}"),
                );
            }
        }
    }
    let selection = (spec.nodes.is_some() || spec.dofs.is_some() || element_selection.is_some())
        .then(|| OutputSelection {
            nodes: spec.nodes.clone(),
            dofs: spec.dofs.clone(),
            elements: element_selection,
        });
    let format = match spec.format.as_deref() {
        None | Some("csv") => OutputFormat::Csv,
        Some("binary") => OutputFormat::Binary,
        Some(other) => {
            diag.push(
                "output.format",
                format!("must be \"csv\" or \"binary\", found `{other}`"),
            );
            OutputFormat::Csv
        }
    };
    OutputSettings {
        every: every.max(1) as u64,
        elements,
        energy: spec.energy.unwrap_or(true),
        selection,
        format,
    }
}

/// `[analysis.estimator]` of `fom` and `osm` (defaults without the table), and ρ∞ of the two
/// schemes: FOM is Newmark's average acceleration (ρ∞ = 1 only), OSM becomes α-OS for
/// ρ∞ ∈ [0.5, 1) (HHT α = (ρ∞ − 1)/(ρ∞ + 1) ∈ [−1/3, 0]).
fn estimator(
    a: &AnalysisSpec,
    integrator: IntegratorKind,
    rho_inf: f64,
    diag: &mut Diagnostics,
) -> EstimatorSettings {
    let fom = integrator == IntegratorKind::Fom;
    let osm = integrator == IntegratorKind::Osm;
    if fom && a.rho_inf.is_some_and(|r| r != 1.0) {
        diag.push(
            "analysis.rho_inf",
            "fom steps with Newmark's average acceleration rule (ρ∞ = 1); use osm for α-OS",
        );
    }
    if osm && rho_inf.is_finite() && rho_inf < 0.5 {
        diag.push(
            "analysis.rho_inf",
            format!("osm (α-OS) needs ρ∞ in [0.5, 1] (HHT α in [−1/3, 0]), found {rho_inf}"),
        );
    }
    let mut out = EstimatorSettings::default();
    let Some(e) = &a.estimator else {
        return out;
    };
    if !fom && !osm {
        diag.push(
            "analysis.estimator",
            "only applies to integrator = \"fom\" or \"osm\"",
        );
        return out;
    }
    let only_fom = |key: &str, given: bool, diag: &mut Diagnostics| {
        if given && !fom {
            diag.push(
                format!("analysis.estimator.{key}"),
                "only applies to integrator = \"fom\" (osm keeps the initial stiffness)",
            );
        }
    };
    only_fom("update", e.update.is_some(), diag);
    only_fom("psi", e.psi.is_some(), diag);
    only_fom("corrector", e.corrector.is_some(), diag);
    only_fom("linearize", e.linearize.is_some(), diag);
    only_fom("reset_at_reversal", e.reset_at_reversal.is_some(), diag);
    only_fom("threshold", e.threshold.is_some(), diag);
    if e.i_modification.is_some() && !osm {
        diag.push(
            "analysis.estimator.i_modification",
            "only applies to integrator = \"osm\" (the I-modification corrects its \
             initial-stiffness corrector)",
        );
    }
    let psi = e.psi.unwrap_or(DEFAULT_PSI);
    if !(psi.is_finite() && (0.0..=1.0).contains(&psi)) {
        diag.push(
            "analysis.estimator.psi",
            format!("must be in [0, 1] (0: BFGS, 1: DFP), found {psi}"),
        );
    }
    out.update = match e.update.as_deref() {
        None | Some("bfgs") => TangentUpdate::Bfgs,
        Some("none") => TangentUpdate::Fixed,
        Some("dfp") => TangentUpdate::Dfp,
        Some("broyden") => TangentUpdate::Broyden,
        Some("broyden-family") => TangentUpdate::BroydenFamily { psi },
        Some("sr1") => TangentUpdate::Sr1,
        Some(other) => {
            diag.push(
                "analysis.estimator.update",
                format!(
                    "unknown tangent update `{other}` (none, bfgs, dfp, broyden, \
                     broyden-family, sr1)"
                ),
            );
            TangentUpdate::Fixed
        }
    };
    if e.psi.is_some() && !matches!(out.update, TangentUpdate::BroydenFamily { .. }) {
        diag.push(
            "analysis.estimator.psi",
            "only applies to update = \"broyden-family\"",
        );
    }
    if osm {
        out.update = TangentUpdate::Fixed;
    }
    if let Some(t) = e.threshold {
        if !(t.is_finite() && t >= 0.0) {
            diag.push(
                "analysis.estimator.threshold",
                format!("must be a finite length ≥ 0, found {t}"),
            );
        }
    }
    out.threshold = e.threshold;
    out.reset_at_reversal = e.reset_at_reversal.unwrap_or(true);
    out.corrector = e.corrector.unwrap_or(true);
    out.linearization = match e.linearize.as_deref() {
        None | Some("predictor") => Linearization::Predictor,
        Some("corrected") => Linearization::Corrected,
        Some(other) => {
            diag.push(
                "analysis.estimator.linearize",
                format!("must be \"predictor\" or \"corrected\", found `{other}`"),
            );
            Linearization::Predictor
        }
    };
    out.i_modification = e.i_modification.unwrap_or(false);
    out
}

/// `analysis.nonlinear_solver`, `nonlinear_tolerance`, `nonlinear_max_iterations` (issue 17):
/// the converged solve is the default, except when `corrections` is given without
/// `nonlinear_solver` (a fixed number of corrections, as before). `newton` is the converged
/// solve with the current tangent (the third value).
fn nonlinear_solver(
    a: &AnalysisSpec,
    integrator: IntegratorKind,
    diag: &mut Diagnostics,
) -> (Option<f64>, usize, bool) {
    let newton = a.nonlinear_solver.as_deref() == Some("newton");
    if newton
        && !matches!(
            integrator,
            IntegratorKind::MgAlpha | IntegratorKind::PgAlpha
        )
    {
        diag.push(
            "analysis.nonlinear_solver",
            format!(
                "\"newton\" iterates the numerical substructure of mg-alpha and pg-alpha; \
                 `{}` does not take it (remove the key or use \"converged\")",
                integrator.name()
            ),
        );
    }
    let converged = match a.nonlinear_solver.as_deref() {
        None => a.corrections.is_none(),
        Some("converged") | Some("newton") => true,
        Some("corrections") => false,
        Some(other) => {
            diag.push(
                "analysis.nonlinear_solver",
                format!("must be \"converged\", \"newton\" or \"corrections\", found `{other}`"),
            );
            true
        }
    };
    let tol = a
        .nonlinear_tolerance
        .unwrap_or(crate::model::NONLINEAR_TOLERANCE);
    if !(tol.is_finite() && tol > 0.0 && tol < 1.0) {
        diag.push(
            "analysis.nonlinear_tolerance",
            format!("must be in (0, 1), found {tol}"),
        );
    }
    let max_it = a
        .nonlinear_max_iterations
        .unwrap_or(crate::model::NONLINEAR_MAX_ITERATIONS as i64);
    if !(1..=1000).contains(&max_it) {
        diag.push(
            "analysis.nonlinear_max_iterations",
            format!("must be between 1 and 1000, found {max_it}"),
        );
    }
    let given = a.nonlinear_tolerance.is_some() || a.nonlinear_max_iterations.is_some();
    if !converged && given {
        diag.push(
            "analysis.nonlinear_tolerance",
            "only used with nonlinear_solver = \"converged\" or \"newton\"",
        );
    }
    (
        converged.then_some(tol),
        max_it.clamp(1, 1000) as usize,
        newton,
    )
}
