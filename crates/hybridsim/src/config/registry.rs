//! The element registry: element kinds by the name used in model files.
//!
//! New element kinds plug in by registering a builder; the model reader hands each builder the
//! element's table without the keys every element shares (`type`, `name`, `substructure`,
//! `split`, `role`, `rayleigh`, `initial_state`).

use super::element_reader::{build, lead_rubber, mr_damper, sliding_bearing};
use crate::elements::{
    BoucWen, CubicSpring, Dashpot, DofRef, ElastomericBearing, ElementRef, LinearSuperelement,
    Mass, Mostaghel, Spring, Steel01, Steel02, ViscousDamper,
};
use crate::error::Diagnostics;
use nalgebra::{DMatrix, DVector};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// What a builder may look up while building an element.
pub struct ElementContext<'a> {
    /// Declared DOF names of every node, by node id.
    pub node_dofs: &'a super::NodeDofs,
    /// The constant matrices read so far, each once, for the elements to share.
    pub shared: SharedMatrices,
}

/// The constant matrices of the elements read from one model file, each distinct one once:
/// an element whose matrix has the same values, to the bit, as an earlier element's holds the
/// same copy (issue 20: every member of a frame of identical beams and columns held its own
/// 6 × 6 stiffness, 288 bytes and a heap block a member). Bits, not values, decide: `0.0` and
/// `-0.0` stay apart, so every element computes with exactly the numbers it was given.
#[derive(Default)]
pub struct SharedMatrices {
    distinct: RefCell<HashSet<Bits>>,
}

/// A matrix's values, hashed and compared by their bits.
struct Bits(Arc<[f64]>);

impl PartialEq for Bits {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(other.0.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Eq for Bits {}

impl Hash for Bits {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.len().hash(state);
        for x in self.0.iter() {
            x.to_bits().hash(state);
        }
    }
}

impl SharedMatrices {
    /// The one copy of `values` (the earlier element's if one had the same bits).
    pub fn share(&self, values: &[f64]) -> Arc<[f64]> {
        let mut distinct = self.distinct.borrow_mut();
        let key = Bits(Arc::from(values));
        if let Some(Bits(copy)) = distinct.get(&key) {
            return copy.clone();
        }
        let copy = key.0.clone();
        distinct.insert(key);
        copy
    }

    /// Number of distinct matrices held.
    pub fn len(&self) -> usize {
        self.distinct.borrow().len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> ElementContext<'a> {
    /// The context of the nodes `node_dofs`, no matrix shared yet.
    pub fn new(node_dofs: &'a super::NodeDofs) -> Self {
        Self {
            node_dofs,
            shared: SharedMatrices::default(),
        }
    }

    /// Resolve `(node, dof)` or record why it does not exist.
    pub fn dof(&self, node: i64, dof: &str, diag: &mut Diagnostics, field: &str) -> Option<DofRef> {
        match self.node_dofs.get(node) {
            None => {
                diag.push(field, format!("unknown node {node}"));
                None
            }
            Some(names) if !names.contains(dof) => {
                diag.push(
                    field,
                    format!(
                        "node {node} has no DOF `{dof}` (it declares {})",
                        names.join(", ")
                    ),
                );
                None
            }
            Some(_) => Some(DofRef::new(node, dof)),
        }
    }

    /// Resolve `(node, dof)` like [`Self::dof`], reporting an unknown node at `node_field` and
    /// a DOF the node does not declare at `dof_field`.
    pub fn dof_at(
        &self,
        node: i64,
        dof: &str,
        diag: &mut Diagnostics,
        node_field: &str,
        dof_field: &str,
    ) -> Option<DofRef> {
        let field = if self.node_dofs.contains_node(node) {
            dof_field
        } else {
            node_field
        };
        self.dof(node, dof, diag, field)
    }

    /// DOFs for a one- or two-node element on direction `dof`.
    pub fn node_pair(
        &self,
        nodes: &[i64],
        dof: &str,
        diag: &mut Diagnostics,
        field: &str,
    ) -> Option<Vec<DofRef>> {
        if !matches!(nodes.len(), 1 | 2) {
            diag.push(
                format!("{field}.nodes"),
                format!(
                    "needs one node (to ground) or two nodes, found {}",
                    nodes.len()
                ),
            );
            return None;
        }
        if nodes.len() == 2 && nodes[0] == nodes[1] {
            diag.push(
                format!("{field}.nodes"),
                format!("both ends are node {}", nodes[0]),
            );
            return None;
        }
        // Sized exactly: a growing vector of 16-byte references starts at four (issue 20).
        let mut out = Vec::with_capacity(nodes.len());
        for n in nodes {
            out.push(self.dof_at(
                *n,
                dof,
                diag,
                &format!("{field}.nodes"),
                &format!("{field}.dof"),
            )?);
        }
        Some(out)
    }
}

/// Builds one element kind from its parameter table; records problems in `diag` under `field`.
pub type ElementBuilder =
    fn(&ElementContext, toml::Table, &mut Diagnostics, &str) -> Option<ElementRef>;

/// Element kinds by name.
#[derive(Clone)]
pub struct ElementRegistry {
    builders: BTreeMap<&'static str, ElementBuilder>,
}

impl Default for ElementRegistry {
    fn default() -> Self {
        let mut r = Self {
            builders: BTreeMap::new(),
        };
        r.register("mass", build_mass);
        r.register("spring", build::<Spring>);
        r.register("dashpot", build::<Dashpot>);
        r.register("cubic_spring", build::<CubicSpring>);
        r.register("linear", build_linear);
        r.register("bouc_wen", build::<BoucWen>);
        r.register("mostaghel", build::<Mostaghel>);
        r.register("sliding_bearing", sliding_bearing);
        r.register("lead_rubber", lead_rubber);
        r.register("mr_damper", mr_damper);
        r.register("viscous_damper", build::<ViscousDamper>);
        r.register("steel01", build::<Steel01>);
        r.register("steel02", build::<Steel02>);
        r.register("elastomeric_bearing", build::<ElastomericBearing>);
        r.register("frame", super::frame::build_frame);
        r
    }
}

impl ElementRegistry {
    /// Add or replace an element kind.
    pub fn register(&mut self, kind: &'static str, builder: ElementBuilder) {
        self.builders.insert(kind, builder);
    }

    /// The builder for `kind`.
    pub fn get(&self, kind: &str) -> Option<ElementBuilder> {
        self.builders.get(kind).copied()
    }

    /// Registered kind names.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.builders.keys().copied().collect()
    }
}

/// Deserialize an element's own parameters, rejecting unknown keys. An unknown or missing key
/// is reported at its own field (`element[3].stiff`), other problems at `field`.
pub fn parse_params<T: DeserializeOwned>(
    table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<T> {
    match toml::Value::Table(table).try_into::<T>() {
        Ok(v) => Some(v),
        Err(e) => {
            let reason = e.to_string().trim().replace('\n', " ");
            let key = ["unknown field `", "missing field `"]
                .iter()
                .find_map(|p| reason.strip_prefix(p))
                .and_then(|rest| rest.split('`').next())
                .filter(|k| !k.is_empty());
            match key {
                Some(k) => diag.push(format!("{field}.{k}"), reason.clone()),
                None => diag.push(field, reason),
            }
            None
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScalarOrList {
    Scalar(f64),
    List(Vec<f64>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MassParams {
    node: i64,
    mass: ScalarOrList,
    #[serde(default)]
    dofs: Option<Vec<String>>,
}

fn build_mass(
    ctx: &ElementContext,
    t: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let p: MassParams = parse_params(t, diag, field)?;
    let Some(node_dofs) = ctx.node_dofs.get(p.node) else {
        diag.push(format!("{field}.node"), format!("unknown node {}", p.node));
        return None;
    };
    let names: Vec<String> = p.dofs.clone().unwrap_or_else(|| node_dofs.to_vec());
    if names.is_empty() {
        diag.push(
            format!("{field}.dofs"),
            "is empty: list the DOFs the mass acts on, or omit `dofs` for all of the node's DOFs",
        );
        return None;
    }
    let mut dofs = Vec::with_capacity(names.len());
    for name in &names {
        dofs.push(ctx.dof(p.node, name, diag, &format!("{field}.dofs"))?);
    }
    let values = match p.mass {
        ScalarOrList::Scalar(m) => vec![m; dofs.len()],
        ScalarOrList::List(v) => {
            if v.len() != dofs.len() {
                diag.push(
                    format!("{field}.mass"),
                    format!("has {} values for {} DOFs", v.len(), dofs.len()),
                );
                return None;
            }
            v
        }
    };
    for (i, m) in values.iter().enumerate() {
        if !m.is_finite() || *m < 0.0 {
            diag.push(
                format!("{field}.mass"),
                format!("value {i} must be finite and not negative, found {m}"),
            );
            return None;
        }
    }
    Some(Mass::element(dofs, values))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinearParams {
    dofs: Vec<(i64, String)>,
    #[serde(default)]
    m: Option<Vec<Vec<f64>>>,
    #[serde(default)]
    c: Option<Vec<Vec<f64>>>,
    #[serde(default)]
    k: Option<Vec<Vec<f64>>>,
    #[serde(default)]
    influence: Option<Vec<f64>>,
}

fn matrix(
    rows: Option<Vec<Vec<f64>>>,
    n: usize,
    name: &str,
    symmetric: bool,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<DMatrix<f64>> {
    let Some(rows) = rows else {
        return Some(DMatrix::zeros(n, n));
    };
    if rows.len() != n || rows.iter().any(|r| r.len() != n) {
        diag.push(
            format!("{field}.{name}"),
            format!(
                "must be {n}×{n} to match the {n} entries of `dofs`, found {} rows of lengths {:?}",
                rows.len(),
                rows.iter().map(|r| r.len()).collect::<Vec<_>>()
            ),
        );
        return None;
    }
    let m = DMatrix::from_fn(n, n, |i, j| rows[i][j]);
    if let Err(e) = crate::elements::check_matrix(&m, n, symmetric) {
        diag.push(format!("{field}.{name}"), e);
        return None;
    }
    Some(m)
}

fn build_linear(
    ctx: &ElementContext,
    t: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let p: LinearParams = parse_params(t, diag, field)?;
    let n = p.dofs.len();
    if n == 0 {
        diag.push(format!("{field}.dofs"), "is empty");
        return None;
    }
    if n > super::MAX_DOFS {
        diag.push(
            format!("{field}.dofs"),
            format!(
                "lists {n} DOFs; at most {} are supported (its matrices are dense)",
                super::MAX_DOFS
            ),
        );
        return None;
    }
    let mut dofs: Vec<DofRef> = Vec::with_capacity(n);
    for (i, (node, dof)) in p.dofs.iter().enumerate() {
        let d = ctx.dof(*node, dof, diag, &format!("{field}.dofs[{i}]"))?;
        if dofs.contains(&d) {
            diag.push(format!("{field}.dofs[{i}]"), format!("{d} is listed twice"));
            return None;
        }
        dofs.push(d);
    }
    let m = matrix(p.m, n, "m", true, diag, field);
    let c = matrix(p.c, n, "c", true, diag, field);
    let k = matrix(p.k, n, "k", true, diag, field);
    let (m, c, k) = (m?, c?, k?);
    // m must be positive semi-definite.
    let eig = nalgebra::SymmetricEigen::new(m.clone());
    let scale = m.amax().max(f64::MIN_POSITIVE);
    if let Some(min) = eig.eigenvalues.iter().cloned().reduce(f64::min) {
        if min < -1e-12 * scale {
            diag.push(
                format!("{field}.m"),
                format!("must be positive semi-definite, has eigenvalue {min:.6e}"),
            );
            return None;
        }
    }
    let influence = match p.influence {
        None => None,
        Some(v) if v.len() != n => {
            diag.push(
                format!("{field}.influence"),
                format!("has {} entries for {n} DOFs", v.len()),
            );
            return None;
        }
        Some(v) if v.iter().any(|x| !x.is_finite()) => {
            diag.push(format!("{field}.influence"), "contains a non-finite entry");
            return None;
        }
        Some(v) => Some(DVector::from_vec(v)),
    };
    let k = ctx.shared.share(k.as_slice());
    Some(Arc::new(LinearSuperelement::with_shared_stiffness(
        dofs, m, c, k, influence,
    )))
}

/// Keys of `type = "mass"` (for [`super::keys::model_keys`]).
pub(super) fn mass_keys() -> Vec<String> {
    super::keys::struct_keys::<MassParams>()
}

/// Keys of `type = "linear"` (for [`super::keys::model_keys`]).
pub(super) fn linear_keys() -> Vec<String> {
    super::keys::struct_keys::<LinearParams>()
}

#[cfg(test)]
mod tests {
    use super::SharedMatrices;
    use std::sync::Arc;

    /// Matrices with the same bits share one copy; any other bit (`-0.0` for `0.0`, a last
    /// digit) keeps its own.
    #[test]
    fn matrices_with_the_same_bits_share_one_copy() {
        let shared = SharedMatrices::default();
        let a = shared.share(&[1.0, 0.0, 0.0, 1.0]);
        let b = shared.share(&[1.0, 0.0, 0.0, 1.0]);
        let c = shared.share(&[1.0, -0.0, 0.0, 1.0]);
        let d = shared.share(&[1.0, 0.0, 0.0, 1.0 + f64::EPSILON]);
        let e = shared.share(&[1.0, 0.0, 0.0]);
        assert!(Arc::ptr_eq(&a, &b));
        for other in [&c, &d, &e] {
            assert!(!Arc::ptr_eq(&a, other));
        }
        assert_eq!(shared.len(), 4);
        assert_eq!(c[1].to_bits(), (-0.0f64).to_bits());
    }
}
