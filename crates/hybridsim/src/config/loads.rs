//! `[[load]]`: nodal force histories.

use super::finite_positive;
use super::schema::{LoadSpec, SineSpec};
use super::ElementContext;
use crate::error::Diagnostics;
use crate::excitation::{self, TimeFunction, TimeSeries};
use crate::model::{NodalLoad, Node, SourceResolver};

/// The loads on free DOFs.
pub(super) fn loads(
    specs: &[LoadSpec],
    ctx: &ElementContext,
    nodes: &[Node],
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Vec<NodalLoad> {
    specs
        .iter()
        .enumerate()
        .filter_map(|(i, l)| load(l, &format!("load[{i}]"), ctx, nodes, files, diag))
        .collect()
}

/// One load at field `f`.
fn load(
    l: &LoadSpec,
    f: &str,
    ctx: &ElementContext,
    nodes: &[Node],
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Option<NodalLoad> {
    let dof = ctx.dof_at(
        l.node,
        &l.dof,
        diag,
        &format!("{f}.node"),
        &format!("{f}.dof"),
    )?;
    if nodes.iter().any(|n| n.id == l.node) && {
        let n = nodes.iter().find(|n| n.id == l.node).unwrap();
        n.dof(&l.dof).unwrap().fixed
    } {
        diag.push(
            format!("{f}.dof"),
            format!("{dof} is fixed; a force on it does nothing"),
        );
        return None;
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
            f,
            "give exactly one of `sine`, `constant`, `points`, `record`",
        );
        return None;
    }
    let scale = l.scale.unwrap_or(1.0);
    if !scale.is_finite() {
        diag.push(format!("{f}.scale"), "must be finite");
        return None;
    }
    let function = history(l, scale, f, files, diag)?;
    Some(NodalLoad { dof, function })
}

/// The force history of a load with exactly one of `sine`, `constant`, `points`, `record`.
fn history(
    l: &LoadSpec,
    scale: f64,
    f: &str,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Option<TimeFunction> {
    if let Some(s) = &l.sine {
        sine_function(s, scale, diag, &format!("{f}.sine"))
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
    }
}

/// A sine force `scale × amplitude sin(2π f t + φ)` between `start` and `end`.
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
