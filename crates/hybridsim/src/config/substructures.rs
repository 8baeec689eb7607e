//! `[substructure.NAME]`: numerical or physical substructures, and the estimated initial
//! stiffness and damping of a physical one.

use super::schema::{EstimateSpec, SubstructureSpec};
use super::ElementContext;
use crate::error::Diagnostics;
use crate::model::{Estimate, Substructure};
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// The substructures by name; a model without `[substructure.NAME]` tables has one numerical
/// substructure, `structure`.
pub(super) fn substructures(
    specs: &BTreeMap<String, SubstructureSpec>,
    ctx: &ElementContext,
    diag: &mut Diagnostics,
) -> Vec<Substructure> {
    let mut substructures: Vec<Substructure> = Vec::new();
    if specs.is_empty() {
        substructures.push(Substructure {
            name: "structure".into(),
            physical: false,
            estimate: None,
        });
    }
    for (name, s) in specs {
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
            (Some(e), true) => read_estimate(e, ctx, diag, &format!("{f}.estimate")),
            (None, false) => None,
        };
        substructures.push(Substructure {
            name: name.clone(),
            physical: s.physical,
            estimate,
        });
    }
    substructures
}

/// `[substructure.NAME.estimate]` at field `f`.
fn read_estimate(
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
    if n > super::MAX_DOFS {
        diag.push(
            format!("{f}.dofs"),
            format!(
                "lists {n} DOFs; at most {} are supported (the estimate is dense)",
                super::MAX_DOFS
            ),
        );
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
