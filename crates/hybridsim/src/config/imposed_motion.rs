//! `[[imposed_motion]]`: prescribed displacement, velocity or acceleration histories of node
//! DOFs (LLM integrator only).

use super::schema::{ImposedMotionSpec, SineSpec};
use super::ElementContext;
use crate::elements::DofRef;
use crate::error::Diagnostics;
use crate::excitation::{self, TimeSeries};
use crate::model::imposed_motion::{ImposedMotion, MotionHistory, MotionQuantity};
use crate::model::{Node, SourceResolver};
use crate::units::Units;

/// The imposed motions, one per driven DOF; each entry is read on its own, so that its
/// problems are reported at `imposed_motion[i]`.
pub(super) fn imposed_motions(
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
        let Some(dofs) = driven_dofs(&spec, &f, ctx, nodes, &out, diag) else {
            continue;
        };
        let Some(name) = entry_name(&spec, &f, &out, diag) else {
            continue;
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

/// `dof` or `dofs` of the entry at field `f`: free, at rest at the start, and not driven by an
/// `earlier` entry (the DOFs with a problem are left out).
fn driven_dofs(
    spec: &ImposedMotionSpec,
    f: &str,
    ctx: &ElementContext,
    nodes: &[Node],
    earlier: &[ImposedMotion],
    diag: &mut Diagnostics,
) -> Option<Vec<DofRef>> {
    let names: Vec<String> = match (&spec.dof, &spec.dofs) {
        (Some(d), None) => vec![d.clone()],
        (None, Some(ds)) if !ds.is_empty() => ds.clone(),
        _ => {
            diag.push(
                f,
                "give the driven DOF as `dof = \"x\"` or `dofs = [\"x\", …]`",
            );
            return None;
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
            let x = n.dof(d).unwrap_or(&n.dofs[0]);
            if x.fixed {
                diag.push(
                    format!("{f}.dof"),
                    format!(
                        "{dof} is fixed; a fixed DOF cannot follow an imposed motion \
                         (remove it from the node's `fixed` list)"
                    ),
                );
                continue;
            }
            if x.u0 != 0.0 || x.v0 != 0.0 {
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
        if let Some(prev) = earlier.iter().find(|m| m.dof == dof) {
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
    Some(dofs)
}

/// `name` of the entry at field `f` (default: `f` itself), not used by an `earlier` entry.
fn entry_name(
    spec: &ImposedMotionSpec,
    f: &str,
    earlier: &[ImposedMotion],
    diag: &mut Diagnostics,
) -> Option<String> {
    match &spec.name {
        Some(n) if n.trim().is_empty() => {
            diag.push(format!("{f}.name"), "must not be empty");
            None
        }
        Some(n) => {
            if let Some(prev) = earlier.iter().find(|m| &m.name == n) {
                diag.push(
                    format!("{f}.name"),
                    format!(
                        "`{n}` is already the name of imposed_motion[{}]",
                        prev.entry
                    ),
                );
                return None;
            }
            Some(n.clone())
        }
        None => Some(f.to_string()),
    }
}

/// The history of the entry at field `f` and its description: exactly one of `sine`,
/// `points`, `file`, `record`, of a `quantity`, times `scale`.
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
        return sine(s, quantity, qname, scale, f, diag);
    }
    let (times, values, description, factor, field) = if let Some(p) = &spec.points {
        let (t, v): (Vec<f64>, Vec<f64>) = p.iter().cloned().unzip();
        let description = format!("{qname} points ({} samples)", p.len());
        (t, v, description, 1.0, "points")
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
                "file",
            ),
            Err(e) => {
                diag.push(format!("{f}.file"), format!("{path}: {e}"));
                return None;
            }
        }
    } else {
        let path = spec.record.as_ref().expect("one history");
        let (series, g) = record(spec, path, f, units, files, diag)?;
        (
            series.times().to_vec(),
            series.values().to_vec(),
            format!("accelerogram {path}"),
            g,
            "record",
        )
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

/// `sine = { amplitude, frequency, phase }` of `quantity`, for the whole analysis.
fn sine(
    s: &SineSpec,
    quantity: MotionQuantity,
    qname: &str,
    scale: f64,
    f: &str,
    diag: &mut Diagnostics,
) -> Option<(MotionHistory, String)> {
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
    Some((
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
    ))
}

/// The accelerogram `record` at `path` (PEER `.AT2` in g, or two columns in `record_units`),
/// scaled to `pga`, and the factor to model units.
fn record(
    spec: &ImposedMotionSpec,
    path: &str,
    f: &str,
    units: &Units,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Option<(TimeSeries, f64)> {
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
    Some((series, g))
}
