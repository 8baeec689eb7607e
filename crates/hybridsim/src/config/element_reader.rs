//! Reading the parameter table of a declared element ([`Declared::PARAMETERS`]) from a model
//! file: unknown keys, missing keys, then every bad value at its own field.

use super::registry::{parse_params, ElementContext};
use crate::elements::declare::{check_value, filled, listing, Declared};
use crate::elements::{
    ElementRef, FrictionTable, LeadLaw, LeadRubberBearing, MrDamper, TripleSlidingBearing,
};
use crate::error::Diagnostics;
use std::sync::Arc;

/// Registry builder of a declared element: keys `nodes` (one node, to ground, or two) and
/// `dof`, and the parameters of [`Declared::PARAMETERS`].
pub fn build<E: Declared>(
    ctx: &ElementContext,
    table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    read::<E>(ctx, table, diag, field).map(|e| Arc::new(e) as ElementRef)
}

/// Read a declared element from its model-file table (the caller removes keys it handles
/// itself). Unknown keys are reported, then missing ones; otherwise every bad value at its
/// own field, the nodes, and the joint conditions.
pub fn read<E: Declared>(
    ctx: &ElementContext,
    table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<E> {
    read_also::<E>(ctx, table, diag, field, &[])
}

/// [`read`] for a builder that took the keys `also` out of the table itself: an unknown key's
/// message lists them too.
pub fn read_also<E: Declared>(
    ctx: &ElementContext,
    table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
    also: &[&str],
) -> Option<E> {
    let params = E::PARAMETERS;
    let known = |k: &str| k == "nodes" || k == "dof" || params.iter().any(|p| p.name == k);
    let mut unknown = table.keys().filter(|k| !known(k)).peekable();
    if unknown.peek().is_some() {
        let also: String = also.iter().map(|k| format!(", {k}")).collect();
        for k in unknown {
            diag.push(
                format!("{field}.{k}"),
                format!(
                    "unknown field `{k}`, which is not a parameter of this element (it takes \
                     nodes, dof, {}{also})",
                    listing(params)
                ),
            );
        }
        return None;
    }
    let required = params.iter().filter(|p| p.default.is_none());
    let missing: Vec<&str> = ["nodes", "dof"]
        .into_iter()
        .chain(required.map(|p| p.name))
        .filter(|k| !table.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        for k in missing {
            diag.push(format!("{field}.{k}"), "is required");
        }
        return None;
    }
    let mut ok = true;
    let mut values = Vec::with_capacity(params.len());
    for p in params {
        let x = match table.get(p.name) {
            None => p.default.unwrap_or(0.0),
            Some(toml::Value::Float(x)) => *x,
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(other) => {
                diag.push(
                    format!("{field}.{}", p.name),
                    format!("must be a number, found {other}"),
                );
                ok = false;
                continue;
            }
        };
        if let Err(r) = check_value(x, p.rule) {
            diag.push(format!("{field}.{}", p.name), r);
            ok = false;
        }
        values.push(x);
    }
    let nodes = typed::<Vec<i64>>(&table, "nodes", diag, field);
    let dof = typed::<String>(&table, "dof", diag, field);
    let dofs = ctx.node_pair(&nodes?, &dof?, diag, field);
    if !ok {
        return None;
    }
    let e: E = filled(dofs?, &values);
    if let Err((key, r)) = e.check_joint() {
        diag.push(format!("{field}.{key}"), r);
        return None;
    }
    Some(e)
}

fn typed<T: serde::de::DeserializeOwned>(
    table: &toml::Table,
    key: &str,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<T> {
    let value = table.get(key)?.clone();
    value
        .try_into()
        .map_err(|e: toml::de::Error| {
            diag.push(
                format!("{field}.{key}"),
                e.to_string().trim().replace('\n', " "),
            )
        })
        .ok()
}

/// Registry builder for `type = "sliding_bearing"`: the declared keys (`nodes`, `dof`, `k0`,
/// `delta0`, `k1`, `delta1`, `k2`) and an optional
/// `friction = { velocity, mu0, mu1, reference_velocity }`.
pub(crate) fn sliding_bearing(
    ctx: &ElementContext,
    mut table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let at = format!("{field}.friction");
    let friction = match table.remove("friction") {
        None => Some(None),
        Some(toml::Value::Table(t)) => {
            parse_params::<FrictionTable>(t, diag, &at).and_then(|f| match f.check() {
                Ok(()) => Some(Some(f)),
                Err((k, e)) => {
                    diag.push(format!("{at}.{k}"), e);
                    None
                }
            })
        }
        Some(other) => {
            diag.push(at, format!("must be a table, found {other}"));
            None
        }
    };
    let mut e = read::<TripleSlidingBearing>(ctx, table, diag, field)?;
    e.friction = friction?;
    Some(Arc::new(e))
}

/// Registry builder for `type = "lead_rubber"`: the declared keys (`nodes`, `dof`, `r_lead`,
/// `k_rubber`, `n_rubber`, `a_lead`, `p0`), the lead law `lead = "band"` (default) or
/// `"rigid"` (eq 42 of Abbiati et al. 2019 as printed), and for the band law an optional
/// `lead_stiffness` (finite, > 0) replacing the law's own stiffness of the lead in its band.
pub(crate) fn lead_rubber(
    ctx: &ElementContext,
    mut table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let law = match table.remove("lead") {
        None => Some(LeadLaw::Band),
        Some(toml::Value::String(name)) => LeadLaw::from_name(&name).or_else(|| {
            diag.push(
                format!("{field}.lead"),
                format!("must be \"band\" or \"rigid\", found \"{name}\""),
            );
            None
        }),
        Some(other) => {
            diag.push(
                format!("{field}.lead"),
                format!("must be \"band\" or \"rigid\", found {other}"),
            );
            None
        }
    };
    let at = format!("{field}.lead_stiffness");
    let stiffness = match table.remove("lead_stiffness") {
        None => Some(None),
        Some(value) => {
            let x = match value {
                toml::Value::Float(x) => Some(x),
                toml::Value::Integer(i) => Some(i as f64),
                other => {
                    diag.push(&at, format!("must be a number, found {other}"));
                    None
                }
            };
            x.and_then(
                |k| match crate::elements::lead_rubber::check_lead_stiffness(k) {
                    Ok(()) if law == Some(LeadLaw::Rigid) => {
                        diag.push(&at, crate::elements::lead_rubber::RIGID_WITH_STIFFNESS);
                        None
                    }
                    Ok(()) => Some(Some(k)),
                    Err(r) => {
                        diag.push(&at, r);
                        None
                    }
                },
            )
        }
    };
    let e = read_also::<LeadRubberBearing>(ctx, table, diag, field, &["lead", "lead_stiffness"])?;
    match e.with_lead(law?, stiffness?) {
        Ok(e) => Some(Arc::new(e)),
        Err(reason) => {
            diag.push(&at, reason);
            None
        }
    }
}

/// Registry builder for `type = "mr_damper"`: the declared keys and an optional command
/// voltage history `voltage_points = [[t, V], …]` (instead of the constant `voltage`).
pub(crate) fn mr_damper(
    ctx: &ElementContext,
    mut table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let at = format!("{field}.voltage_points");
    let points = match table.remove("voltage_points") {
        None => Some(None),
        Some(value) => match number_pairs(&value) {
            Some(p) => match crate::elements::mr_damper::check_voltage_points(&p) {
                Ok(()) => Some(Some(p)),
                Err(e) => {
                    diag.push(at, e);
                    None
                }
            },
            None => {
                diag.push(
                    at,
                    format!(
                        "must be an array of [time, voltage] pairs of numbers, e.g. \
                         [[0.0, 0.0], [1.0, 2.25]], found {value}"
                    ),
                );
                None
            }
        },
    };
    let mut e = read::<MrDamper>(ctx, table, diag, field)?;
    e.set_voltage_points(points?).ok()?;
    Some(Arc::new(e))
}

/// `[[a, b], …]` of numbers (integers or floats), or `None`.
fn number_pairs(value: &toml::Value) -> Option<Vec<(f64, f64)>> {
    let number = |v: &toml::Value| match v {
        toml::Value::Float(x) => Some(*x),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    };
    value
        .as_array()?
        .iter()
        .map(|pair| match pair.as_array()?.as_slice() {
            [a, b] => Some((number(a)?, number(b)?)),
            _ => None,
        })
        .collect()
}
