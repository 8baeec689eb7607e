//! `[damping]`: Rayleigh damping by coefficients or by target ratios on two modes.

use super::schema::DampingSpec;
use crate::error::Diagnostics;
use crate::model::{IntegratorKind, Rayleigh, RayleighStiffness};

/// `alpha`/`beta`, or `modes` and `ratios` (two each); `None` without the table.
pub(super) fn damping(spec: Option<&DampingSpec>, diag: &mut Diagnostics) -> Option<Rayleigh> {
    let d = spec?;
    match (d.alpha, d.beta, &d.modes, &d.ratios) {
        (a, b, None, None) if a.is_some() || b.is_some() => {
            let (a, b) = (a.unwrap_or(0.0), b.unwrap_or(0.0));
            if !(a.is_finite() && a >= 0.0 && b.is_finite() && b >= 0.0) {
                diag.push(
                    "damping",
                    format!("alpha and beta must be finite and not negative, found {a}, {b}"),
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
        (None, None, Some(m), Some(r)) => modal(m, r, diag),
        _ => {
            diag.push(
                "damping",
                "give either `alpha`/`beta`, or `modes` and `ratios` (two each)",
            );
            None
        }
    }
}

/// Target ratios `r` on the two modes `m`.
fn modal(m: &[usize], r: &[f64], diag: &mut Diagnostics) -> Option<Rayleigh> {
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

/// `stiffness`: the stiffness of the `β K` term of hysteretic elements (issue 17); `initial`
/// without the key (or without the table).
pub(super) fn stiffness(spec: Option<&DampingSpec>, diag: &mut Diagnostics) -> RayleighStiffness {
    let Some(name) = spec.and_then(|d| d.stiffness.as_deref()) else {
        return RayleighStiffness::Initial;
    };
    match name {
        "initial" => RayleighStiffness::Initial,
        "committed" => RayleighStiffness::Committed,
        "current" => RayleighStiffness::Current,
        other => {
            diag.push(
                "damping.stiffness",
                format!(
                    "unknown stiffness `{other}`: give \"initial\" (β K_0, the default), \
                     \"committed\" (β K of the state the step started from) or \"current\" \
                     (β K of the current state)"
                ),
            );
            RayleighStiffness::Initial
        }
    }
}

/// The committed and current tangents are evaluated by the generalized-α steppers of the
/// state-space substructures (MG-α, PG-α): other integrators refuse them.
pub(super) fn check_stiffness_against_analysis(
    stiffness: RayleighStiffness,
    integrator: IntegratorKind,
    diag: &mut Diagnostics,
) {
    if stiffness != RayleighStiffness::Initial
        && !matches!(
            integrator,
            IntegratorKind::MgAlpha | IntegratorKind::PgAlpha
        )
    {
        diag.push(
            "damping.stiffness",
            format!(
                "`{}` is supported by the mg-alpha (trapezoidal) and pg-alpha integrators only, \
                 not by `{}`; use \"initial\" or one of those integrators",
                stiffness.name(),
                integrator.name()
            ),
        );
    }
}
