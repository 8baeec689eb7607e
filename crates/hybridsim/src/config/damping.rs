//! `[damping]`: Rayleigh damping by coefficients or by target ratios on two modes.

use super::schema::DampingSpec;
use crate::error::Diagnostics;
use crate::model::Rayleigh;

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
