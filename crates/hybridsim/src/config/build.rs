//! A model file's tables to the model types.

use super::imposed_motion;
use super::lab;
use super::schema::*;
use crate::elements::{DofRef, ElementContext, ElementRef, ElementRegistry, Mass};
use crate::error::{Diagnostics, ModelError};
use crate::excitation::{self, KanaiTajimi, TimeFunction, TimeSeries};
use crate::model::{
    AnalysisSettings, ElementInstance, Estimate, GroundMotion, IntegratorKind, Model, NodalLoad,
    Node, OutputSettings, Rayleigh, Role, SourceResolver, StartMode, Substructure,
    LSRT2_GAMMA_HIGH, LSRT2_GAMMA_LOW, MAX_SUBCYCLES,
};
use nalgebra::DMatrix;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Read a model from TOML text and check every field; the checks that need the assembled
/// layout come after, in [`crate::config`] ([`Model::from_toml`]).
pub(crate) fn parse(
    text: &str,
    source: &str,
    files: &dyn SourceResolver,
    registry: &ElementRegistry,
) -> Result<Model, ModelError> {
    {
        let spec: ModelFile = match toml::from_str(text) {
            Ok(s) => s,
            Err(e) => {
                let reason = e.message().trim().replace('\n', " ");
                let Some(start) = e.span().map(|sp| sp.start.min(text.len())) else {
                    return Err(ModelError::single(source, "file", reason));
                };
                let line = text.get(..start).unwrap_or(text).matches('\n').count() + 1;
                // An unknown key written as `key = …` is reported at its dotted path.
                let field = reason
                    .strip_prefix("unknown field `")
                    .and_then(|rest| rest.split('`').next())
                    .and_then(|key| key_path(text, line, key));
                return Err(match field {
                    Some(field) => {
                        ModelError::single(source, field, format!("{reason} (line {line})"))
                    }
                    None => ModelError::single(source, format!("line {line}"), reason),
                });
            }
        };
        build(spec, source, files, registry)
    }
}

/// Dotted path of `key`, written as `key = …` on 1-based `line`, from the table header above it
/// (`[analysis]` → `analysis.key`, the third `[[node]]` → `node[2].key`); `None` when the key is
/// not written that way (inline tables, dotted keys).
fn key_path(text: &str, line: usize, key: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?.trim_start();
    let after = here.strip_prefix(key)?.trim_start();
    if key.is_empty() || !after.starts_with('=') {
        return None;
    }
    let header = |l: &str| -> Option<(String, bool)> {
        let l = l.trim();
        let (inner, array) = match l.strip_prefix("[[") {
            Some(rest) => (rest.split("]]").next()?, true),
            None => (l.strip_prefix('[')?.split(']').next()?, false),
        };
        Some((inner.replace([' ', '"'], ""), array))
    };
    let above = &lines[..line - 1];
    let Some(at) = above.iter().rposition(|l| header(l).is_some()) else {
        return Some(key.to_string());
    };
    let (name, array) = header(above[at])?;
    if array {
        let index = above[..at]
            .iter()
            .filter(|l| header(l) == Some((name.clone(), true)))
            .count();
        Some(format!("{name}[{index}].{key}"))
    } else {
        Some(format!("{name}.{key}"))
    }
}

fn finite_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

const SHARED_KEYS: &[&str] = &[
    "type",
    "name",
    "substructure",
    "split",
    "role",
    "rayleigh",
    "initial_state",
];

fn build(
    spec: ModelFile,
    source: &str,
    files: &dyn SourceResolver,
    registry: &ElementRegistry,
) -> Result<Model, ModelError> {
    let mut diag = Diagnostics::new(source);
    let llm = imposed_motion::llm_mode(&spec);

    // Reserved tables.
    let reserved = [
        ("updating", spec.updating.is_some()),
        ("network", spec.network.is_some()),
    ];
    for (name, present) in reserved {
        if present {
            let what = RESERVED_TABLES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, w)| *w)
                .unwrap_or("");
            diag.push(
                name,
                format!("is reserved for {what}, which this version does not support yet"),
            );
        }
    }

    // Units.
    let units = spec.units;
    if units.length_in_m().is_none() {
        diag.push(
            "units.length",
            format!("unknown length unit `{}` (m, cm, mm, in, ft)", units.length),
        );
    }
    if units.force_in_n().is_none() {
        diag.push(
            "units.force",
            format!("unknown force unit `{}` (N, kN, MN, lbf, kip)", units.force),
        );
    }
    if units.time_in_s().is_none() {
        diag.push(
            "units.time",
            format!("unknown time unit `{}` (s, ms)", units.time),
        );
    }

    // Nodes.
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_dofs: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    if spec.node.is_empty() {
        diag.push("node", "the model has no nodes");
    }
    for (i, n) in spec.node.iter().enumerate() {
        let f = format!("node[{i}]");
        if node_dofs.contains_key(&n.id) {
            diag.push(format!("{f}.id"), format!("node {} is defined twice", n.id));
            continue;
        }
        if n.dofs.is_empty() {
            diag.push(
                format!("{f}.dofs"),
                format!("node {} declares no DOF", n.id),
            );
            continue;
        }
        let mut seen = BTreeSet::new();
        let mut ok = true;
        for d in &n.dofs {
            if d.is_empty() || !d.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                diag.push(
                    format!("{f}.dofs"),
                    format!("DOF name `{d}` must be a non-empty word (letters, digits, _)"),
                );
                ok = false;
            }
            if !seen.insert(d.clone()) {
                diag.push(format!("{f}.dofs"), format!("DOF `{d}` is listed twice"));
                ok = false;
            }
        }
        let mut fixed = vec![false; n.dofs.len()];
        for d in &n.fixed {
            match n.dofs.iter().position(|x| x == d) {
                Some(k) => fixed[k] = true,
                None => {
                    diag.push(
                        format!("{f}.fixed"),
                        format!("node {} has no DOF `{d}` to fix", n.id),
                    );
                    ok = false;
                }
            }
        }
        let mut u0 = vec![0.0; n.dofs.len()];
        let mut v0 = vec![0.0; n.dofs.len()];
        for (table, out, name) in [
            (&n.initial_displacement, &mut u0, "initial_displacement"),
            (&n.initial_velocity, &mut v0, "initial_velocity"),
        ] {
            for (d, x) in table {
                match n.dofs.iter().position(|y| y == d) {
                    None => {
                        diag.push(
                            format!("{f}.{name}.{d}"),
                            format!("node {} has no DOF `{d}`", n.id),
                        );
                        ok = false;
                    }
                    Some(k) if fixed[k] && *x != 0.0 => {
                        diag.push(
                            format!("{f}.{name}.{d}"),
                            format!("DOF `{d}` of node {} is fixed and cannot move", n.id),
                        );
                        ok = false;
                    }
                    Some(_) if !x.is_finite() => {
                        diag.push(
                            format!("{f}.{name}.{d}"),
                            format!("must be finite, found {x}"),
                        );
                        ok = false;
                    }
                    Some(k) => out[k] = *x,
                }
            }
        }
        node_dofs.insert(n.id, n.dofs.clone());
        if ok {
            nodes.push(Node {
                id: n.id,
                dofs: n.dofs.clone(),
                fixed,
                u0,
                v0,
            });
        }
    }
    nodes.sort_by_key(|n| n.id);

    // Substructures.
    let mut substructures: Vec<Substructure> = Vec::new();
    let ctx = ElementContext {
        node_dofs: &node_dofs,
    };
    let implicit = spec.substructure.is_empty();
    if implicit {
        substructures.push(Substructure {
            name: "structure".into(),
            physical: false,
            estimate: None,
        });
    }
    for (name, s) in &spec.substructure {
        let f = format!("substructure.{name}");
        let estimate = match (&s.estimate, s.physical) {
            (Some(_), false) => {
                diag.push(
                    format!("{f}.estimate"),
                    "only a physical substructure takes an estimated stiffness",
                );
                None
            }
            (None, true) => {
                diag.push(
                    format!("{f}.estimate"),
                    "a physical substructure needs the estimated initial stiffness of its \
                     specimen (it builds D^P and the interface operator; keep it separate \
                     from the specimen itself)",
                );
                None
            }
            (Some(e), true) => build_estimate(e, &ctx, &mut diag, &format!("{f}.estimate")),
            (None, false) => None,
        };
        substructures.push(Substructure {
            name: name.clone(),
            physical: s.physical,
            estimate,
        });
    }
    let n_numerical = substructures.iter().filter(|s| !s.physical).count();

    // Elements.
    let issues_before_elements = diag.len();
    let mut elements: Vec<ElementInstance> = Vec::new();
    let mut names = BTreeSet::new();
    let mut mass_shares = Vec::new();
    if spec.element.is_empty() {
        diag.push("element", "the model has no elements");
    }
    for (i, table) in spec.element.iter().enumerate() {
        let f = format!("element[{i}]");
        let mut table = table.clone();
        let mut shared = BTreeMap::new();
        for k in SHARED_KEYS {
            if let Some(v) = table.remove(*k) {
                shared.insert(*k, v);
            }
        }
        let kind = match shared.get("type") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => {
                diag.push(format!("{f}.type"), "must be a string");
                continue;
            }
            None => {
                diag.push(
                    format!("{f}.type"),
                    format!("is missing (one of: {})", registry.kinds().join(", ")),
                );
                continue;
            }
        };
        let name = match shared.get("name") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => {
                diag.push(format!("{f}.name"), "must be a string");
                continue;
            }
            None => format!("{kind}{i}"),
        };
        if !names.insert(name.clone()) {
            diag.push(
                format!("{f}.name"),
                format!("element name `{name}` is used twice"),
            );
        }
        let Some(builder) = registry.get(&kind) else {
            diag.push(
                format!("{f}.type"),
                format!(
                    "unknown element type `{kind}` (known: {})",
                    registry.kinds().join(", ")
                ),
            );
            continue;
        };
        let before = diag.len();
        let Some(element) = builder(&ctx, table, &mut diag, &f) else {
            if diag.len() == before {
                diag.push(&f, "could not be built");
            }
            continue;
        };
        // Substructure membership, or a split for masses.
        let mut members: Vec<(usize, f64)> = Vec::new();
        if llm && kind == "mass" {
            mass_shares.extend(imposed_motion::take_llm_split(
                &mut shared,
                &name,
                &f,
                &mut diag,
            ));
        }
        match (shared.get("substructure"), shared.get("split")) {
            (Some(_), Some(_)) => {
                diag.push(
                    format!("{f}.split"),
                    "give either `substructure` or `split`, not both",
                );
                continue;
            }
            (Some(toml::Value::String(s)), None) => {
                match substructures.iter().position(|x| x.name == *s) {
                    Some(k) => members.push((k, 1.0)),
                    None => {
                        diag.push(
                            format!("{f}.substructure"),
                            format!(
                                "unknown substructure `{s}` (defined: {})",
                                substructures
                                    .iter()
                                    .map(|x| x.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                        continue;
                    }
                }
            }
            (Some(_), None) => {
                diag.push(format!("{f}.substructure"), "must be a string");
                continue;
            }
            (None, Some(toml::Value::Table(t))) => {
                if kind != "mass" {
                    diag.push(format!("{f}.split"), "only `mass` elements can be split");
                    continue;
                }
                let mut total = 0.0;
                let mut ok = true;
                for (s, x) in t {
                    let x = match x {
                        toml::Value::Float(x) => *x,
                        toml::Value::Integer(x) => *x as f64,
                        _ => {
                            diag.push(format!("{f}.split.{s}"), "must be a number");
                            ok = false;
                            continue;
                        }
                    };
                    if !(x.is_finite() && x > 0.0 && x <= 1.0) {
                        diag.push(
                            format!("{f}.split.{s}"),
                            format!("fraction must be in (0, 1], found {x}"),
                        );
                        ok = false;
                    }
                    match substructures.iter().position(|y| y.name == *s) {
                        Some(k) => members.push((k, x)),
                        None => {
                            diag.push(
                                format!("{f}.split.{s}"),
                                format!("unknown substructure `{s}`"),
                            );
                            ok = false;
                        }
                    }
                    total += x;
                }
                if ok && (total - 1.0).abs() > 1e-9 {
                    diag.push(
                        format!("{f}.split"),
                        format!("fractions must add up to 1, they add up to {total}"),
                    );
                    ok = false;
                }
                if !ok {
                    continue;
                }
            }
            (None, Some(_)) => {
                diag.push(
                    format!("{f}.split"),
                    "must be a table `{ substructure = fraction, … }`",
                );
                continue;
            }
            (None, None) => {
                if substructures.len() == 1 || (llm && kind == "mass") {
                    members.push((0, 1.0));
                } else {
                    diag.push(
                        format!("{f}.substructure"),
                        "is required when the model has more than one substructure",
                    );
                    continue;
                }
            }
        }
        // Role.
        let role = match shared.get("role") {
            None => None,
            Some(toml::Value::String(r)) if r == "numerical" => Some(Role::Numerical),
            Some(toml::Value::String(r)) if r == "specimen" => Some(Role::Specimen),
            Some(other) => {
                diag.push(
                    format!("{f}.role"),
                    format!("must be \"numerical\" or \"specimen\", found {other}"),
                );
                continue;
            }
        };
        let rayleigh = match shared.get("rayleigh") {
            None => element.rayleigh_by_default(),
            Some(toml::Value::Boolean(b)) => *b,
            Some(_) => {
                diag.push(format!("{f}.rayleigh"), "must be true or false");
                continue;
            }
        };
        let initial_state = match shared.get("initial_state") {
            None => vec![0.0; element.n_states()],
            Some(toml::Value::Array(a)) => {
                let v: Vec<f64> = a
                    .iter()
                    .filter_map(|x| match x {
                        toml::Value::Float(x) => Some(*x),
                        toml::Value::Integer(x) => Some(*x as f64),
                        _ => None,
                    })
                    .collect();
                if v.len() != a.len()
                    || v.len() != element.n_states()
                    || v.iter().any(|x| !x.is_finite())
                {
                    diag.push(
                        format!("{f}.initial_state"),
                        format!(
                            "must be {} finite numbers ({} element states: {})",
                            element.n_states(),
                            kind,
                            element.state_names().join(", ")
                        ),
                    );
                    continue;
                }
                v
            }
            Some(_) => {
                diag.push(format!("{f}.initial_state"), "must be an array of numbers");
                continue;
            }
        };
        let split = members.len() > 1;
        for (sub, fraction) in members {
            let physical = substructures[sub].physical;
            let role = match (physical, role) {
                (false, Some(Role::Specimen)) => {
                    diag.push(
                        format!("{f}.role"),
                        format!(
                            "`specimen` is only meaningful in a physical substructure; `{}` is numerical",
                            substructures[sub].name
                        ),
                    );
                    Role::Numerical
                }
                (false, _) => Role::Numerical,
                (true, Some(r)) => r,
                (true, None) => {
                    if element.mass().is_some()
                        && element
                            .linear_stiffness()
                            .map(|k| k.amax() == 0.0)
                            .unwrap_or(false)
                    {
                        Role::Numerical
                    } else {
                        Role::Specimen
                    }
                }
            };
            if physical && role == Role::Specimen && rayleigh && shared.contains_key("rayleigh") {
                diag.push(
                    format!("{f}.rayleigh"),
                    "Rayleigh damping cannot be applied to a physical specimen: its damping is measured",
                );
            }
            let (element, name) = if split {
                let Some(m) = element_as_mass(&element) else {
                    continue;
                };
                let e: ElementRef = Arc::new(m.scaled(fraction));
                (e, format!("{name}@{}", substructures[sub].name))
            } else {
                (element.clone(), name.clone())
            };
            elements.push(ElementInstance {
                name,
                element,
                substructure: sub,
                role,
                rayleigh: rayleigh && !(physical && role == Role::Specimen),
                initial_state: initial_state.clone(),
            });
        }
    }

    // The checks below look at what the elements cover; when an element could not be built they
    // would only repeat its problem as a gap elsewhere, so they wait until the elements are right.
    let elements_ok = diag.len() == issues_before_elements;

    // Every free node DOF must be touched by an element.
    for n in nodes.iter().filter(|_| elements_ok) {
        let i = spec
            .node
            .iter()
            .position(|x| x.id == n.id)
            .unwrap_or_default();
        for (k, d) in n.dofs.iter().enumerate() {
            if n.fixed[k] {
                continue;
            }
            let dr = DofRef::new(n.id, d);
            if !elements.iter().any(|e| e.element.dofs().contains(&dr)) {
                diag.push(
                    format!("node[{i}].dofs"),
                    format!("{dr} is free but no element acts on it (fix it or remove it)"),
                );
            }
        }
    }

    // Substructure checks.
    for (k, s) in substructures.iter().enumerate().filter(|_| elements_ok) {
        let members: Vec<&ElementInstance> =
            elements.iter().filter(|e| e.substructure == k).collect();
        if members.is_empty() {
            diag.push(format!("substructure.{}", s.name), "has no elements");
            continue;
        }
        if s.physical && !members.iter().any(|e| e.role == Role::Specimen) {
            diag.push(
                format!("substructure.{}", s.name),
                "is physical but has no specimen element (set role = \"specimen\" on the tested elements)",
            );
        }
        if let Some(est) = &s.estimate {
            for d in &est.dofs {
                if !members.iter().any(|e| e.element.dofs().contains(d)) {
                    diag.push(
                        format!("substructure.{}.estimate.dofs", s.name),
                        format!("{d} is not a DOF of this substructure"),
                    );
                }
            }
        }
    }

    // Damping.
    let rayleigh =
        spec.damping
            .as_ref()
            .and_then(|d| match (d.alpha, d.beta, &d.modes, &d.ratios) {
                (a, b, None, None) if a.is_some() || b.is_some() => {
                    let (a, b) = (a.unwrap_or(0.0), b.unwrap_or(0.0));
                    if !(a.is_finite() && a >= 0.0 && b.is_finite() && b >= 0.0) {
                        diag.push(
                            "damping",
                            format!(
                                "alpha and beta must be finite and not negative, found {a}, {b}"
                            ),
                        );
                        None
                    } else {
                        Some(Rayleigh::Coefficients { alpha: a, beta: b })
                    }
                }
                (None, None, Some(_), None) => {
                    diag.push(
                    "damping.ratios",
                    "is required with `modes`: the target damping ratio of each of the two modes",
                );
                    None
                }
                (None, None, None, Some(_)) => {
                    diag.push(
                    "damping.modes",
                    "is required with `ratios`: the two mode numbers (1-based) the ratios apply to",
                );
                    None
                }
                (None, None, Some(m), Some(r)) => {
                    if m.len() != 2 || r.len() != 2 {
                        diag.push("damping.modes", "give exactly two modes and two ratios");
                        None
                    } else if m[0] == 0 || m[1] == 0 || m[0] == m[1] {
                        diag.push(
                            "damping.modes",
                            format!("must be two different mode numbers ≥ 1, found {m:?}"),
                        );
                        None
                    } else if r.iter().any(|x| !(x.is_finite() && *x >= 0.0 && *x < 1.0)) {
                        diag.push("damping.ratios", format!("must be in [0, 1), found {r:?}"));
                        None
                    } else {
                        Some(Rayleigh::Modal {
                            modes: [m[0], m[1]],
                            ratios: [r[0], r[1]],
                        })
                    }
                }
                _ => {
                    diag.push(
                        "damping",
                        "give either `alpha`/`beta`, or `modes` and `ratios` (two each)",
                    );
                    None
                }
            });

    // Loads.
    let mut loads = Vec::new();
    for (i, l) in spec.load.iter().enumerate() {
        let f = format!("load[{i}]");
        let Some(dof) = ctx.dof_at(
            l.node,
            &l.dof,
            &mut diag,
            &format!("{f}.node"),
            &format!("{f}.dof"),
        ) else {
            continue;
        };
        if nodes.iter().any(|n| n.id == l.node) && {
            let n = nodes.iter().find(|n| n.id == l.node).unwrap();
            n.fixed[n.dofs.iter().position(|x| *x == l.dof).unwrap()]
        } {
            diag.push(
                format!("{f}.dof"),
                format!("{dof} is fixed; a force on it does nothing"),
            );
            continue;
        }
        let given = [
            l.sine.is_some(),
            l.constant.is_some(),
            l.points.is_some(),
            l.record.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count();
        if given != 1 {
            diag.push(
                &f,
                "give exactly one of `sine`, `constant`, `points`, `record`",
            );
            continue;
        }
        let scale = l.scale.unwrap_or(1.0);
        if !scale.is_finite() {
            diag.push(format!("{f}.scale"), "must be finite");
            continue;
        }
        let function = if let Some(s) = &l.sine {
            sine_function(s, scale, &mut diag, &format!("{f}.sine"))
        } else if let Some(c) = l.constant {
            if c.is_finite() {
                Some(TimeFunction::Constant(c * scale))
            } else {
                diag.push(format!("{f}.constant"), "must be finite");
                None
            }
        } else if let Some(p) = &l.points {
            let (t, v): (Vec<f64>, Vec<f64>) = p.iter().cloned().unzip();
            match TimeSeries::from_points(t, v.iter().map(|x| x * scale).collect()) {
                Ok(s) => Some(TimeFunction::Series(s)),
                Err(e) => {
                    diag.push(format!("{f}.points"), e.to_string());
                    None
                }
            }
        } else {
            let path = l.record.as_ref().unwrap();
            match files.read_to_string(path) {
                Err(e) => {
                    diag.push(format!("{f}.record"), e);
                    None
                }
                Ok(text) => match excitation::parse_two_column(&text) {
                    Ok(mut s) => {
                        s.scale(scale);
                        Some(TimeFunction::Series(s))
                    }
                    Err(e) => {
                        diag.push(format!("{f}.record"), format!("{path}: {e}"));
                        None
                    }
                },
            }
        };
        if let Some(function) = function {
            loads.push(NodalLoad { dof, function });
        }
    }

    // Ground motions.
    let mut ground_motions = Vec::new();
    let g = units.gravity();
    for (i, gm) in spec.ground_motion.iter().enumerate() {
        let f = format!("ground_motion[{i}]");
        if !node_dofs.values().any(|d| d.contains(&gm.direction)) {
            diag.push(
                format!("{f}.direction"),
                format!("no node has a DOF named `{}`", gm.direction),
            );
            continue;
        }
        if ground_motions
            .iter()
            .any(|x: &GroundMotion| x.direction == gm.direction)
        {
            diag.push(
                format!("{f}.direction"),
                format!("direction `{}` is excited twice", gm.direction),
            );
            continue;
        }
        if gm.pga.is_some() && gm.scale.is_some() {
            diag.push(
                format!("{f}.scale"),
                "give either `pga` or `scale`, not both",
            );
            continue;
        }
        if let Some(p) = gm.pga {
            if !finite_positive(p) {
                diag.push(
                    format!("{f}.pga"),
                    format!("must be a positive PGA in g, found {p}"),
                );
                continue;
            }
        }
        if let Some(s) = gm.scale {
            if !s.is_finite() {
                diag.push(format!("{f}.scale"), "must be finite");
                continue;
            }
        }
        let (series_g, description, seed) = match (&gm.record, &gm.synthetic) {
            (Some(_), Some(_)) | (None, None) => {
                diag.push(&f, "give exactly one of `record` or `synthetic`");
                continue;
            }
            (None, Some(s)) => {
                if gm.pga.is_some() || gm.scale.is_some() {
                    diag.push(
                        format!("{f}.pga"),
                        "a synthetic record takes its PGA in `synthetic.pga`",
                    );
                    continue;
                }
                if !finite_positive(s.pga) {
                    diag.push(
                        format!("{f}.synthetic.pga"),
                        format!("must be a positive PGA in g, found {}", s.pga),
                    );
                    continue;
                }
                let mut kt = KanaiTajimi::new(s.pga, s.duration, s.seed);
                if let Some(dt) = s.dt {
                    kt.dt = dt;
                }
                if let Some(w) = s.omega_g {
                    kt.omega_g = w;
                }
                if let Some(z) = s.zeta_g {
                    kt.zeta_g = z;
                }
                match kt.generate() {
                    Ok(series) => (
                        series,
                        format!(
                            "synthetic Kanai-Tajimi record (seed {}, {} s, PGA {} g, omega_g {} rad/s, zeta_g {})",
                            s.seed, kt.duration, s.pga, kt.omega_g, kt.zeta_g
                        ),
                        Some(s.seed),
                    ),
                    Err(e) => {
                        diag.push(format!("{f}.synthetic"), e.to_string());
                        continue;
                    }
                }
            }
            (Some(path), None) => {
                let is_at2 = path.to_ascii_lowercase().ends_with(".at2");
                // The units are checked before the file is read, so that both problems show.
                let units_ok = match (is_at2, gm.record_units.as_deref()) {
                    (true, Some(u)) if u != "g" => {
                        diag.push(
                            format!("{f}.record_units"),
                            "a PEER .AT2 record is always in g",
                        );
                        false
                    }
                    (true, _) | (false, Some("g" | "model")) => true,
                    (false, Some(other)) => {
                        diag.push(
                            format!("{f}.record_units"),
                            format!("must be \"g\" or \"model\", found `{other}`"),
                        );
                        false
                    }
                    (false, None) => {
                        diag.push(
                            format!("{f}.record_units"),
                            "is required for a two-column record: \"g\" or \"model\"",
                        );
                        false
                    }
                };
                let text = match files.read_to_string(path) {
                    Ok(t) => t,
                    Err(e) => {
                        diag.push(format!("{f}.record"), e);
                        continue;
                    }
                };
                if !units_ok {
                    continue;
                }
                let parsed = if is_at2 {
                    excitation::parse_at2(&text).map(|(s, _)| s)
                } else if gm.record_units.as_deref() == Some("model") {
                    excitation::parse_two_column(&text).map(|mut s| {
                        s.scale(1.0 / g);
                        s
                    })
                } else {
                    excitation::parse_two_column(&text)
                };
                match parsed {
                    Ok(s) => (s, format!("record {path}"), None),
                    Err(e) => {
                        diag.push(format!("{f}.record"), format!("{path}: {e}"));
                        continue;
                    }
                }
            }
        };
        let mut series_g = series_g;
        if let Some(p) = gm.pga {
            if let Err(e) = series_g.scaled_to_peak(p) {
                diag.push(format!("{f}.pga"), e.to_string());
                continue;
            }
        } else if let Some(s) = gm.scale {
            series_g.scale(s);
        }
        let pga_g = series_g.peak_abs();
        series_g.scale(g);
        ground_motions.push(GroundMotion {
            direction: gm.direction.clone(),
            acceleration: TimeFunction::Series(series_g),
            description,
            seed,
            pga_g,
        });
    }

    // Imposed motions.
    let imposed_motions = imposed_motion::build(
        spec.imposed_motion.as_ref(),
        llm,
        &ctx,
        &nodes,
        &units,
        files,
        &mut diag,
    );

    // Analysis.
    let analysis = match &spec.analysis {
        None => {
            diag.push("analysis", "the [analysis] table is required");
            None
        }
        Some(a) => build_analysis(a, &mut diag, substructures.len(), n_numerical),
    };

    // Output.
    let every = spec.output.every.unwrap_or(1);
    if every < 1 {
        diag.push("output.every", format!("must be at least 1, found {every}"));
    }
    let output = OutputSettings {
        every: every.max(1) as u64,
        elements: spec.output.elements.unwrap_or(true),
        energy: spec.output.energy.unwrap_or(true),
    };

    // Lab, safety and runner.
    let lab_config = {
        let physical_dofs = elements
            .iter()
            .filter(|e| substructures[e.substructure].physical)
            .flat_map(|e| e.element.dofs().iter().map(|d| (d.node, d.dof.clone())))
            .collect();
        let specimen_masses = elements
            .iter()
            .enumerate()
            .filter(|(_, e)| e.role == Role::Specimen && e.element.kind() == "mass")
            .map(|(i, e)| format!("element[{i}] ({})", e.name))
            .collect();
        let (dt_n, ss, duration) = analysis
            .as_ref()
            .map(|a| (a.time_step, a.subcycles, a.duration))
            .unwrap_or((1.0, 1, 1.0));
        let ctx = lab::LabContext {
            dt_n,
            ss,
            duration,
            units: &units,
            physical_dofs,
            has_physical: substructures.iter().any(|s| s.physical),
            specimen_masses,
        };
        lab::parse(
            spec.lab.as_ref(),
            spec.safety.as_ref(),
            spec.runner.as_ref(),
            &ctx,
            &mut diag,
        )
    };

    if diag.has_errors() {
        return Err(diag.into_error());
    }
    let analysis = analysis.expect("analysis validated");
    let model = Model {
        title: spec.title.unwrap_or_default(),
        source: source.to_string(),
        units,
        nodes,
        elements,
        substructures,
        rayleigh,
        loads,
        ground_motions,
        analysis,
        output,
        imposed_motions,
        mass_shares,
        lab: lab_config,
    };
    Ok(model)
}

fn element_as_mass(e: &ElementRef) -> Option<Mass> {
    let m = e.mass()?;
    let dofs = e.dofs().to_vec();
    let values = (0..dofs.len()).map(|i| m[(i, i)]).collect();
    Some(Mass::new(dofs, values))
}

fn sine_function(
    s: &SineSpec,
    scale: f64,
    diag: &mut Diagnostics,
    f: &str,
) -> Option<TimeFunction> {
    if !s.amplitude.is_finite()
        || !finite_positive(s.frequency)
        || !s.phase.is_finite()
        || !s.start.is_finite()
    {
        diag.push(
            f,
            "amplitude, phase and start must be finite and frequency positive",
        );
        return None;
    }
    if let Some(e) = s.end {
        if !(e.is_finite() && e > s.start) {
            diag.push(format!("{f}.end"), "must be after `start`");
            return None;
        }
    }
    Some(TimeFunction::Sine {
        amplitude: s.amplitude * scale,
        frequency_hz: s.frequency,
        phase: s.phase,
        start: s.start,
        end: s.end,
    })
}

fn build_estimate(
    e: &EstimateSpec,
    ctx: &ElementContext,
    diag: &mut Diagnostics,
    f: &str,
) -> Option<Estimate> {
    let n = e.dofs.len();
    if n == 0 {
        diag.push(format!("{f}.dofs"), "is empty");
        return None;
    }
    let mut dofs = Vec::new();
    for (i, (node, d)) in e.dofs.iter().enumerate() {
        dofs.push(ctx.dof(*node, d, diag, &format!("{f}.dofs[{i}]"))?);
    }
    let to_matrix =
        |rows: &Vec<Vec<f64>>, name: &str, diag: &mut Diagnostics| -> Option<DMatrix<f64>> {
            if rows.len() != n || rows.iter().any(|r| r.len() != n) {
                diag.push(
                    format!("{f}.{name}"),
                    format!("must be {n}×{n} to match `dofs`"),
                );
                return None;
            }
            let m = DMatrix::from_fn(n, n, |i, j| rows[i][j]);
            if let Err(e) = crate::elements::check_matrix(&m, n, false) {
                diag.push(format!("{f}.{name}"), e);
                return None;
            }
            Some(m)
        };
    let k = to_matrix(&e.stiffness, "stiffness", diag);
    let c = match &e.damping {
        Some(c) => to_matrix(c, "damping", diag),
        None => Some(DMatrix::zeros(n, n)),
    };
    Some(Estimate {
        dofs,
        stiffness: k?,
        damping: c?,
    })
}

fn build_analysis(
    a: &AnalysisSpec,
    diag: &mut Diagnostics,
    n_sub: usize,
    n_numerical: usize,
) -> Option<AnalysisSettings> {
    let before = diag.len();
    let integrator = match a.integrator.as_str() {
        "mg-alpha" | "trapezoidal" => IntegratorKind::MgAlpha,
        "pg-alpha" => IntegratorKind::PgAlpha,
        "lsrt2" => IntegratorKind::Lsrt2,
        "llm" => IntegratorKind::Llm,
        other => {
            diag.push(
                "analysis.integrator",
                format!(
                    "unknown integrator `{other}` (mg-alpha, pg-alpha, lsrt2, trapezoidal, llm)"
                ),
            );
            IntegratorKind::MgAlpha
        }
    };
    imposed_motion::check_basic_solver(a, diag);
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
    if subcycles > 1 && integrator != IntegratorKind::PgAlpha {
        diag.push(
            "analysis.subcycles",
            "subcycling needs the partitioned integrator `pg-alpha`",
        );
    }
    let corrections = a.corrections.unwrap_or(1);
    if !(1..=20).contains(&corrections) {
        diag.push(
            "analysis.corrections",
            format!("must be between 1 and 20, found {corrections}"),
        );
    }
    if corrections > 1 && integrator == IntegratorKind::Lsrt2 {
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
    if a.lsrt2_gamma.is_some() && integrator != IntegratorKind::Lsrt2 {
        diag.push(
            "analysis.lsrt2_gamma",
            "only applies to integrator = \"lsrt2\"",
        );
    }
    if integrator == IntegratorKind::PgAlpha {
        if n_sub < 2 {
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
    })
}
