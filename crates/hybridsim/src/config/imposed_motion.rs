//! `[[imposed_motion]]` read from the model file and validated, and the LLM mode's mass
//! shares (`split` of a `mass` element).

use super::schema::{AnalysisSpec, ImposedMotionSpec, ModelFile};
use crate::elements::ElementContext;
use crate::error::Diagnostics;
use crate::excitation;
use crate::model::imposed_motion::{ImposedMotion, MassShare, MotionHistory, MotionQuantity};
use crate::model::{Node, SourceResolver};
use crate::units::Units;
use std::collections::BTreeMap;

/// Whether the model file asks for the LLM integrator (`[analysis] integrator = "llm"`).
pub(crate) fn llm_mode(spec: &ModelFile) -> bool {
    spec.analysis
        .as_ref()
        .is_some_and(|a| a.integrator == "llm")
}

/// In the LLM mode a `mass` element's `split` distributes it among *elements* (or
/// substructures): take it out of the shared keys and keep it for the assembly.
pub(crate) fn take_llm_split(
    shared: &mut BTreeMap<&str, toml::Value>,
    name: &str,
    field: &str,
    diag: &mut Diagnostics,
) -> Option<MassShare> {
    let value = shared.remove("split")?;
    let f = format!("{field}.split");
    let toml::Value::Table(t) = value else {
        diag.push(&f, "must be a table `{ element = fraction, … }`");
        return None;
    };
    let mut shares = Vec::new();
    let mut total = 0.0;
    for (k, v) in &t {
        let x = match v {
            toml::Value::Float(x) => *x,
            toml::Value::Integer(x) => *x as f64,
            _ => {
                diag.push(format!("{f}.{k}"), "must be a number");
                return None;
            }
        };
        if !(x.is_finite() && x > 0.0 && x <= 1.0) {
            diag.push(
                format!("{f}.{k}"),
                format!("fraction must be in (0, 1], found {x}"),
            );
            return None;
        }
        total += x;
        shares.push((k.clone(), x));
    }
    if (total - 1.0).abs() > 1e-9 {
        diag.push(
            &f,
            format!("fractions must add up to 1, they add up to {total}"),
        );
        return None;
    }
    Some(MassShare {
        mass: name.to_string(),
        field: f,
        shares,
    })
}

/// Parse and validate the `[[imposed_motion]]` entries.
pub(crate) fn build(
    value: Option<&toml::Value>,
    llm: bool,
    ctx: &ElementContext,
    nodes: &[Node],
    units: &Units,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Vec<ImposedMotion> {
    let Some(value) = value else {
        return Vec::new();
    };
    let entries: Vec<toml::Value> = match value {
        toml::Value::Array(a) => a.clone(),
        toml::Value::Table(_) => vec![value.clone()],
        _ => {
            diag.push(
                "imposed_motion",
                "must be an array of tables `[[imposed_motion]]`",
            );
            return Vec::new();
        }
    };
    if !llm {
        diag.push(
            "imposed_motion",
            "imposed motions need the element-level partitioned integrator: set \
             `[analysis] integrator = \"llm\"`",
        );
        return Vec::new();
    }
    let mut out: Vec<ImposedMotion> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let f = format!("imposed_motion[{i}]");
        let spec: ImposedMotionSpec = match entry.try_into() {
            Ok(s) => s,
            Err(e) => {
                diag.push(&f, e.to_string().trim().replace('\n', " "));
                continue;
            }
        };
        let names: Vec<String> = match (&spec.dof, &spec.dofs) {
            (Some(d), None) => vec![d.clone()],
            (None, Some(ds)) if !ds.is_empty() => ds.clone(),
            _ => {
                diag.push(
                    &f,
                    "give the driven DOF as `dof = \"x\"` or `dofs = [\"x\", …]`",
                );
                continue;
            }
        };
        let mut dofs = Vec::new();
        for d in &names {
            let Some(dof) = ctx.dof_at(
                spec.node,
                d,
                diag,
                &format!("{f}.node"),
                &format!("{f}.dof"),
            ) else {
                continue;
            };
            let node = nodes.iter().find(|n| n.id == spec.node);
            if let Some(n) = node {
                let k = n.dofs.iter().position(|x| x == d).unwrap_or(0);
                if n.fixed[k] {
                    diag.push(
                        format!("{f}.dof"),
                        format!(
                            "{dof} is fixed; a fixed DOF cannot follow an imposed motion \
                             (remove it from the node's `fixed` list)"
                        ),
                    );
                    continue;
                }
                if n.u0[k] != 0.0 || n.v0[k] != 0.0 {
                    diag.push(
                        format!("{f}.dof"),
                        format!(
                            "{dof} has an initial displacement or velocity on its node, but an \
                             imposed DOF starts where its motion is at t = 0"
                        ),
                    );
                    continue;
                }
            }
            if let Some(prev) = out.iter().find(|m| m.dof == dof) {
                diag.push(
                    format!("{f}.dof"),
                    format!(
                        "{dof} is over-constrained: imposed_motion[{}] already drives it",
                        prev.entry
                    ),
                );
                continue;
            }
            dofs.push(dof);
        }
        let name = match &spec.name {
            Some(n) if n.trim().is_empty() => {
                diag.push(format!("{f}.name"), "must not be empty");
                continue;
            }
            Some(n) => {
                if let Some(prev) = out.iter().find(|m| &m.name == n) {
                    diag.push(
                        format!("{f}.name"),
                        format!(
                            "`{n}` is already the name of imposed_motion[{}]",
                            prev.entry
                        ),
                    );
                    continue;
                }
                n.clone()
            }
            None => f.clone(),
        };
        let Some((history, description)) = history(&spec, &f, units, files, diag) else {
            continue;
        };
        for dof in dofs {
            out.push(ImposedMotion {
                name: name.clone(),
                dof,
                history: history.clone(),
                description: description.clone(),
                entry: i,
            });
        }
    }
    out
}

fn history(
    spec: &ImposedMotionSpec,
    f: &str,
    units: &Units,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Option<(MotionHistory, String)> {
    let given = [
        spec.sine.is_some(),
        spec.points.is_some(),
        spec.file.is_some(),
        spec.record.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if given != 1 {
        diag.push(f, "give exactly one of `sine`, `points`, `file`, `record`");
        return None;
    }
    let default_quantity = if spec.record.is_some() {
        "acceleration"
    } else {
        "displacement"
    };
    let qname = spec.quantity.as_deref().unwrap_or(default_quantity);
    let Some(quantity) = MotionQuantity::parse(qname) else {
        diag.push(
            format!("{f}.quantity"),
            format!("must be \"displacement\", \"velocity\" or \"acceleration\", found `{qname}`"),
        );
        return None;
    };
    if spec.record.is_some() && quantity != MotionQuantity::Acceleration {
        diag.push(
            format!("{f}.quantity"),
            "a `record` is an accelerogram; use `file` or `points` for displacement or \
             velocity histories",
        );
        return None;
    }
    if spec.pga.is_some() && spec.record.is_none() {
        diag.push(format!("{f}.pga"), "only a `record` can be scaled to a PGA");
        return None;
    }
    if spec.pga.is_some() && spec.scale.is_some() {
        diag.push(
            format!("{f}.scale"),
            "give either `pga` or `scale`, not both",
        );
        return None;
    }
    if spec.record_units.is_some() && spec.record.is_none() {
        diag.push(format!("{f}.record_units"), "only applies to a `record`");
        return None;
    }
    let scale = spec.scale.unwrap_or(1.0);
    if !scale.is_finite() {
        diag.push(
            format!("{f}.scale"),
            format!("must be finite, found {scale}"),
        );
        return None;
    }
    if let Some(s) = &spec.sine {
        if s.start != 0.0 || s.end.is_some() {
            diag.push(
                format!("{f}.sine"),
                "an imposed sine runs for the whole analysis (no `start`/`end`; use `points` \
                 or `file` for a windowed history)",
            );
            return None;
        }
        if !(s.amplitude.is_finite()
            && s.frequency.is_finite()
            && s.frequency > 0.0
            && s.phase.is_finite())
        {
            diag.push(
                format!("{f}.sine"),
                "amplitude and phase must be finite and frequency positive",
            );
            return None;
        }
        return Some((
            MotionHistory::Sine {
                quantity,
                amplitude: s.amplitude * scale,
                omega: std::f64::consts::TAU * s.frequency,
                phase: s.phase,
            },
            format!(
                "{qname} sine, amplitude {}, {} Hz, phase {} rad",
                s.amplitude * scale,
                s.frequency,
                s.phase
            ),
        ));
    }
    let (times, values, description, factor) = if let Some(p) = &spec.points {
        let (t, v): (Vec<f64>, Vec<f64>) = p.iter().cloned().unzip();
        (t, v, format!("{qname} points ({} samples)", p.len()), 1.0)
    } else if let Some(path) = &spec.file {
        let text = match files.read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                diag.push(format!("{f}.file"), e);
                return None;
            }
        };
        match excitation::parse_two_column(&text) {
            Ok(s) => (
                s.times().to_vec(),
                s.values().to_vec(),
                format!("{qname} file {path}"),
                1.0,
            ),
            Err(e) => {
                diag.push(format!("{f}.file"), format!("{path}: {e}"));
                return None;
            }
        }
    } else {
        let path = spec.record.as_ref().expect("one history");
        let is_at2 = path.to_ascii_lowercase().ends_with(".at2");
        let in_g = match (is_at2, spec.record_units.as_deref()) {
            (true, None | Some("g")) => true,
            (true, Some(_)) => {
                diag.push(
                    format!("{f}.record_units"),
                    "a PEER .AT2 record is always in g",
                );
                return None;
            }
            (false, Some("g")) => true,
            (false, Some("model")) => false,
            (false, other) => {
                diag.push(
                    format!("{f}.record_units"),
                    format!(
                        "a two-column record needs `record_units = \"g\"` or `\"model\"`{}",
                        other.map(|o| format!(", found `{o}`")).unwrap_or_default()
                    ),
                );
                return None;
            }
        };
        let text = match files.read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                diag.push(format!("{f}.record"), e);
                return None;
            }
        };
        let parsed = if is_at2 {
            excitation::parse_at2(&text).map(|(s, _)| s)
        } else {
            excitation::parse_two_column(&text)
        };
        let mut series = match parsed {
            Ok(s) => s,
            Err(e) => {
                diag.push(format!("{f}.record"), format!("{path}: {e}"));
                return None;
            }
        };
        if let Some(p) = spec.pga {
            if !(p.is_finite() && p > 0.0) {
                diag.push(
                    format!("{f}.pga"),
                    format!("must be a positive PGA in g, found {p}"),
                );
                return None;
            }
            if !in_g {
                diag.push(format!("{f}.pga"), "a PGA in g needs a record in g");
                return None;
            }
            if let Err(e) = series.scaled_to_peak(p) {
                diag.push(format!("{f}.pga"), e.to_string());
                return None;
            }
        }
        let g = if in_g { units.gravity() } else { 1.0 };
        (
            series.times().to_vec(),
            series.values().to_vec(),
            format!("accelerogram {path}"),
            g,
        )
    };
    let field = if spec.points.is_some() {
        "points"
    } else if spec.file.is_some() {
        "file"
    } else {
        "record"
    };
    let values: Vec<f64> = values.iter().map(|x| x * scale * factor).collect();
    match MotionHistory::from_samples(quantity, &times, &values) {
        Ok(h) => Some((h, description)),
        Err(e) => {
            diag.push(format!("{f}.{field}"), e);
            None
        }
    }
}

/// `[analysis] basic_solver` of the `llm` integrator: `trapezoidal` (Hovmand et al. 2022, eqs 5–9,
/// the default; ρ∞ = 1) or `generalized-alpha` (ρ∞ from `rho_inf`).
pub(crate) fn check_basic_solver(a: &AnalysisSpec, diag: &mut Diagnostics) {
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
