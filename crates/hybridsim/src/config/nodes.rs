//! `[[node]]`: ids, named DOFs, fixed DOFs and initial conditions.

use super::schema::NodeSpec;
use crate::error::Diagnostics;
use crate::model::{Node, NodeDof};
use std::collections::{BTreeSet, HashSet};

/// Most DOFs a single element or estimate may list (`linear` elements and estimates are dense
/// `n × n` matrices of their own).
pub const MAX_DOFS: usize = 2_000;

/// Start-up memory the reader lets a model claim (bytes): the model-level check estimates the
/// matrices the chosen integrator forms and refuses a model above this budget.
pub const MEMORY_BUDGET_BYTES: usize = 2 << 30;

/// Estimated bytes per DOF of the sparse start-up path (`mg-alpha`, `pg-alpha`): state space
/// entries, band LU factors and the integrator's vectors, with margin.
const SPARSE_BYTES_PER_DOF: usize = 2_048;

/// Whether integrator `name` (the `[analysis] integrator` key, `None` for the default) starts
/// up on sparse matrices only; every other integrator forms dense `(2N)²` state matrices.
pub(super) fn sparse_integrator(name: Option<&str>) -> bool {
    matches!(
        name,
        None | Some("mg-alpha") | Some("pg-alpha") | Some("trapezoidal")
    )
}

/// Estimated start-up memory (bytes) of `dofs` DOFs with integrator `name`: about 2 KB a DOF on
/// the sparse path, and four dense `(2N)²` matrices of f64 otherwise.
pub fn startup_memory_estimate(dofs: usize, integrator: Option<&str>) -> usize {
    if sparse_integrator(integrator) {
        dofs.saturating_mul(SPARSE_BYTES_PER_DOF)
    } else {
        let big = dofs.saturating_mul(2);
        big.saturating_mul(big).saturating_mul(4 * 8)
    }
}

/// Whether the nodes declare more DOFs than the integrator can start up within
/// [`MEMORY_BUDGET_BYTES`] (recorded at the node that crosses the bound, with `node` for the
/// total).
pub(super) fn too_many_dofs(
    specs: &[NodeSpec],
    integrator: Option<&str>,
    diag: &mut Diagnostics,
) -> bool {
    let total: usize = specs.iter().map(|n| n.dofs.len()).sum();
    let fits = |dofs: usize| startup_memory_estimate(dofs, integrator) <= MEMORY_BUDGET_BYTES;
    if fits(total) {
        return false;
    }
    let name = integrator.unwrap_or("mg-alpha");
    let how = if sparse_integrator(integrator) {
        format!("integrator `{name}` needs about {SPARSE_BYTES_PER_DOF} bytes a DOF")
    } else {
        format!(
            "integrator `{name}` forms dense (2N)² state matrices (`mg-alpha` and `pg-alpha` \
             start up on sparse ones)"
        )
    };
    let mut running = 0usize;
    for (i, n) in specs.iter().enumerate() {
        running += n.dofs.len();
        if !fits(running) {
            diag.push(
                format!("node[{i}].dofs"),
                format!(
                    "node {} declares {} DOFs, bringing the model to {running} (of {total} in \
                     all): {how}, about {} MB for {total} DOFs, over the start-up memory budget \
                     of {} MB",
                    n.id,
                    n.dofs.len(),
                    startup_memory_estimate(total, integrator) >> 20,
                    MEMORY_BUDGET_BYTES >> 20
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
pub(super) fn nodes(specs: &[NodeSpec], diag: &mut Diagnostics) -> (Vec<Node>, NodeDofs) {
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_dofs = NodeDofs::default();
    // The ids seen so far (one table, not a node of a map a node).
    let mut seen: HashSet<i64> = HashSet::with_capacity(specs.len());
    if specs.is_empty() {
        diag.push("node", "the model has no nodes");
    }
    for (i, n) in specs.iter().enumerate() {
        let f = format!("node[{i}]");
        if !seen.insert(n.id) {
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
        node_dofs.push(n.id, &n.dofs);
        nodes.extend(node);
    }
    nodes.sort_by_key(|n| n.id);
    nodes.shrink_to_fit();
    node_dofs.finish();
    (nodes, node_dofs)
}

/// The declared DOF names of the nodes by node id, also of nodes with a problem (what
/// elements, loads, outputs and ground motions are checked against while a model is read).
///
/// One text and three arrays rather than a map of vectors of strings (issue 20: that map took
/// three heap blocks a node for as long as the model was read; once freed, they left about
/// 10 MB of holes among the model's own blocks at the 10⁵-DOF chain, resident to the end).
#[derive(Debug, Default)]
pub struct NodeDofs {
    /// `(node id, index of its first name in ends, number of names)`, by increasing id once
    /// [`NodeDofs::finish`] has sorted them.
    nodes: Vec<(i64, u32, u32)>,
    /// Where each name ends in `text` (name `j` starts where name `j − 1` ends).
    ends: Vec<u32>,
    /// Every name, one after the other.
    text: String,
}

/// The declared DOF names of one node ([`NodeDofs::get`]).
#[derive(Debug, Clone, Copy)]
pub struct DofNames<'a> {
    table: &'a NodeDofs,
    first: u32,
    count: u32,
}

impl NodeDofs {
    /// Add node `id` (not yet added) declaring `names`.
    fn push(&mut self, id: i64, names: &[String]) {
        let first = u32::try_from(self.ends.len()).expect("fewer than 2³² DOF names");
        for name in names {
            self.text.push_str(name);
            self.ends
                .push(u32::try_from(self.text.len()).expect("DOF names under 4 GiB"));
        }
        self.nodes.push((id, first, names.len() as u32));
    }

    /// Order the nodes by id and give back the spare capacity.
    fn finish(&mut self) {
        self.nodes.sort_unstable_by_key(|n| n.0);
        self.nodes.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.text.shrink_to_fit();
    }

    /// Whether a node has id `id`.
    pub fn contains_node(&self, id: i64) -> bool {
        self.position(id).is_some()
    }

    /// The DOF names node `id` declares; `None` for an unknown node.
    pub fn get(&self, id: i64) -> Option<DofNames<'_>> {
        self.position(id).map(|k| self.names_at(k))
    }

    /// Every node's id and DOF names, by increasing id.
    pub fn iter(&self) -> impl Iterator<Item = (i64, DofNames<'_>)> + '_ {
        (0..self.nodes.len()).map(|k| (self.nodes[k].0, self.names_at(k)))
    }

    /// Whether some node declares a DOF named `dof`.
    pub fn any_declares(&self, dof: &str) -> bool {
        self.iter().any(|(_, names)| names.contains(dof))
    }

    fn position(&self, id: i64) -> Option<usize> {
        self.nodes.binary_search_by_key(&id, |n| n.0).ok()
    }

    fn names_at(&self, k: usize) -> DofNames<'_> {
        let (_, first, count) = self.nodes[k];
        DofNames {
            table: self,
            first,
            count,
        }
    }

    /// Name `j` of the table.
    fn name(&self, j: usize) -> &str {
        let start = if j == 0 { 0 } else { self.ends[j - 1] as usize };
        &self.text[start..self.ends[j] as usize]
    }
}

impl<'a> DofNames<'a> {
    /// The names, in the order declared.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + 'a {
        let (table, first) = (self.table, self.first as usize);
        (first..first + self.count as usize).map(move |j| table.name(j))
    }

    /// Whether the node declares `dof`.
    pub fn contains(&self, dof: &str) -> bool {
        self.iter().any(|d| d == dof)
    }

    /// The names joined by `separator`.
    pub fn join(&self, separator: &str) -> String {
        self.iter().collect::<Vec<_>>().join(separator)
    }

    /// The names as owned strings.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_string).collect()
    }
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
        dofs: (n.dofs.iter().enumerate())
            .map(|(k, d)| NodeDof {
                name: d.into(),
                fixed: fixed[k],
                u0: u0[k],
                v0: v0[k],
            })
            .collect(),
    })
}
