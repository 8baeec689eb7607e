//! `[[node]]`: ids, named DOFs, fixed DOFs and initial conditions.

use super::schema::NodeSpec;
use crate::error::Diagnostics;
use crate::model::Node;
use std::collections::{BTreeMap, BTreeSet};

/// Most DOFs a model may declare over all its nodes. The assembly, the partitions and the
/// interface operators are dense: a model of `n` DOFs allocates several `n × n` and
/// `(2n + states)²` matrices of f64 and factors them (O(n³)), so 2 000 DOFs already mean
/// about 130 MB per state matrix.
pub const MAX_DOFS: usize = 2_000;

/// Whether the nodes declare more than [`MAX_DOFS`] DOFs in all (recorded at the node that
/// crosses the bound, with `node` for the total).
pub(super) fn too_many_dofs(specs: &[NodeSpec], diag: &mut Diagnostics) -> bool {
    let total: usize = specs.iter().map(|n| n.dofs.len()).sum();
    if total <= MAX_DOFS {
        return false;
    }
    let mut running = 0usize;
    for (i, n) in specs.iter().enumerate() {
        running += n.dofs.len();
        if running > MAX_DOFS {
            diag.push(
                format!("node[{i}].dofs"),
                format!(
                    "node {} declares {} DOFs, bringing the model to {running} (of {total} in                      all); at most {MAX_DOFS} DOFs are supported (the assembled matrices are                      dense)",
                    n.id,
                    n.dofs.len()
                ),
            );
            break;
        }
    }
    true
}

/// The valid nodes sorted by id, and the declared DOF names of every node with a new id and at
/// least one DOF (what elements and loads are checked against, even when the node itself has a
/// problem).
pub(super) fn nodes(
    specs: &[NodeSpec],
    diag: &mut Diagnostics,
) -> (Vec<Node>, BTreeMap<i64, Vec<String>>) {
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_dofs: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    if specs.is_empty() {
        diag.push("node", "the model has no nodes");
    }
    for (i, n) in specs.iter().enumerate() {
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
        let node = node(n, &f, diag);
        node_dofs.insert(n.id, n.dofs.clone());
        nodes.extend(node);
    }
    nodes.sort_by_key(|n| n.id);
    (nodes, node_dofs)
}

/// One node with at least one DOF, at field `f`.
fn node(n: &NodeSpec, f: &str, diag: &mut Diagnostics) -> Option<Node> {
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
    ok.then(|| Node {
        id: n.id,
        dofs: n.dofs.clone(),
        fixed,
        u0,
        v0,
    })
}
