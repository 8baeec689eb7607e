//! Assembly of state-space substructures and of the interface between them.
//!
//! Each substructure `X` becomes a first-order system (Abbiati et al. 2019, eqs 1–2)
//! `M^X Ẏ^X + R^X(Y^X) = F^X(t) + L^X Λ`, `Y = [u; v; s]`, `M = diag(I, m, I)`,
//! `R = [−v; r(u, v, s); −ṡ]`, `F = [0; f(t); 0]`. A node shared by substructures keeps one copy
//! of its DOFs in each; every shared DOF gets a Lagrange multiplier `Λ_k`, the force the
//! numerical side exerts on the physical side: `+Λ` on the "plus" copy (the physical one, or
//! the later one), `−Λ` on the "minus" copy (ALGORITHMS.md E13). `G` carries the same signs on
//! the `u̇` rows (velocity-level compatibility) or on the `v̇` rows (acceleration level).

mod element_partitions;
mod interface;
mod served;
mod state_space;
mod steklov_poincare;

pub use crate::linalg::CompressedRows;
pub use element_partitions::{build_element_partitions, ElementPartitions};
pub use interface::{ConstraintLevel, Coupling, Interface, InterfaceDof};
pub use served::{ServeError, ServedSubstructure};
pub use state_space::{
    ElementSlot, ElementWorkspace, FoldedInPlace, FoldedPredictor, FoldedRows, FoldedStep,
    LentStiffness, Partition, StateSpace,
};
pub use steklov_poincare::SteklovPoincare;

use crate::elements::{DofRef, ElementRef, RayleighDamping};
use crate::error::{Diagnostics, ModelError};
use crate::model::{ElementName, Model, Rayleigh, RayleighStiffness, Role};
use crate::physical::{PhysicalPort, SpecimenElement};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// DOFs of a set of element instances, sorted by node id then by the node's DOF order,
/// without fixed DOFs.
fn collect_dofs(model: &Model, elements: &[&crate::model::ElementInstance]) -> Vec<DofRef> {
    let mut dofs: Vec<DofRef> = Vec::new();
    let mut seen: std::collections::HashSet<&DofRef> = std::collections::HashSet::new();
    for e in elements {
        for d in e.element.dofs() {
            if !seen.contains(d) && !model.is_fixed(d) {
                seen.insert(d);
                dofs.push(d.clone());
            }
        }
    }
    let order = |d: &DofRef| {
        let n = model.node(d.node).expect("validated node");
        (d.node, n.position(&d.dof).unwrap_or(0))
    };
    dofs.sort_by_cached_key(order);
    dofs
}

fn map_dofs(dofs: &[DofRef], element: &ElementRef) -> Vec<Option<usize>> {
    element
        .dofs()
        .iter()
        .map(|d| dofs.iter().position(|x| x == d))
        .collect()
}

/// Row of every DOF of a partition's DOF list, by hash: the `dofs.iter().position(..)` of a
/// DOF in O(1), so that mapping every element of an N-DOF partition is O(N), not O(N²).
/// A DOF listed twice maps to its first row, as `position` does.
pub(crate) struct DofIndex<'a>(std::collections::HashMap<&'a DofRef, usize>);

impl<'a> DofIndex<'a> {
    /// Index the DOFs of a partition.
    pub(crate) fn new(dofs: &'a [DofRef]) -> Self {
        let mut map = std::collections::HashMap::with_capacity(dofs.len());
        for (i, d) in dofs.iter().enumerate() {
            map.entry(d).or_insert(i);
        }
        Self(map)
    }

    /// Row of `d`, if the partition has it.
    pub(crate) fn get(&self, d: &DofRef) -> Option<usize> {
        self.0.get(d).copied()
    }

    /// Rows of an element's DOFs (none for a DOF outside the partition: fixed or elsewhere).
    pub(crate) fn map(&self, element: &ElementRef) -> Vec<Option<usize>> {
        element.dofs().iter().map(|d| self.get(d)).collect()
    }
}

/// How the elements of a model are grouped into partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// Every substructure is a partition; specimens go behind providers.
    Partitioned,
    /// One partition with every element (the reference monolithic model); specimens are
    /// evaluated as ordinary numerical elements.
    Monolithic,
}

/// The contributions `(i, j, m, k)` of one element to the Rayleigh mass `M_R` and stiffness
/// `K_R` of a partition, through its DOF map, appended to `out` (the element's mass and its
/// [`crate::elements::rayleigh_stiffness`]).
///
/// With `tangent_stiffness` the element's stiffness is left out: its `β K` term follows its
/// state instead ([`tangent_rayleigh_stiffness`], [`StateSpace::add_tangent_rayleigh`]).
pub(crate) fn rayleigh_contributions(
    element: &dyn crate::elements::Element,
    map: &[Option<usize>],
    tangent_stiffness: bool,
    out: &mut Vec<(u32, u32, f64, f64)>,
) {
    let m = element.mass();
    let k = if tangent_stiffness {
        None
    } else {
        crate::elements::rayleigh_stiffness(element)
    };
    if m.is_none() && k.is_none() {
        return;
    }
    for (i, mi) in map.iter().enumerate() {
        let Some(a) = mi else { continue };
        for (j, mj) in map.iter().enumerate() {
            let Some(b) = mj else { continue };
            let mij = m.as_ref().map_or(0.0, |m| m[(i, j)]);
            let kij = k.as_ref().map_or(0.0, |k| k[(i, j)]);
            if mij != 0.0 || kij != 0.0 {
                let (a, b) = (state_space::column_index(*a), state_space::column_index(*b));
                out.push((a, b, mij, kij));
            }
        }
    }
}

/// The initial stiffness `K_0` of an element whose Rayleigh `β K` term follows its state
/// under `stiffness` (`committed` or `current`): a hysteretic element, i.e. one with a
/// stiffness but no constant stiffness matrix. `None` for linear elements, masses and
/// dampers, and always under `initial` (their `β K` is then a constant matrix of the Rayleigh
/// element).
pub(crate) fn tangent_rayleigh_stiffness(
    element: &dyn crate::elements::Element,
    stiffness: RayleighStiffness,
) -> Option<DMatrix<f64>> {
    if stiffness == RayleighStiffness::Initial || element.linear_stiffness().is_some() {
        return None;
    }
    crate::elements::rayleigh_stiffness(element)
}

/// The Rayleigh damping `C = α M_R + β K_R` of substructure `name` over `dofs` as one sparse
/// linear damping element (`rayleigh@name`, [`RayleighDamping`]), in the
/// `(name, element, initial state)` form of the partition builders; none when `C` vanishes.
/// `contributions` are the elements' `(i, j, m, k)` terms ([`rayleigh_contributions`]) in
/// assembly order.
pub(crate) fn rayleigh_element(
    name: &str,
    dofs: Arc<[DofRef]>,
    contributions: Vec<(u32, u32, f64, f64)>,
    (alpha, beta): (f64, f64),
) -> Option<(ElementName, ElementRef, Vec<f64>)> {
    let c = RayleighDamping::from_contributions(dofs, contributions, alpha, beta)?;
    let element: ElementRef = Arc::new(c);
    Some((
        ElementName::from(format!("rayleigh@{name}")),
        element,
        Vec::new(),
    ))
}

/// Build the partitions of `model`. Rayleigh damping is added as one extra damping element per
/// partition over the participating elements.
pub fn build_partitions(model: &Model, grouping: Grouping) -> Result<Vec<Partition>, ModelError> {
    let groups: Vec<(String, bool, Vec<usize>)> = match grouping {
        Grouping::Monolithic => vec![(
            if model.substructures.len() == 1 {
                model.substructures[0].name.clone()
            } else {
                "assembled".into()
            },
            false,
            (0..model.elements.len()).collect(),
        )],
        Grouping::Partitioned => model
            .substructures
            .iter()
            .enumerate()
            .map(|(k, s)| {
                (
                    s.name.clone(),
                    s.physical,
                    model
                        .elements
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.substructure as usize == k)
                        .map(|(i, _)| i)
                        .collect(),
                )
            })
            .collect(),
    };
    let rayleigh = rayleigh_coefficients(model)?;
    let mut out = Vec::new();
    let mut diag = Diagnostics::new(&model.source);
    for (gi, (name, physical, members)) in groups.iter().enumerate() {
        let instances: Vec<&crate::model::ElementInstance> =
            members.iter().map(|i| &model.elements[*i]).collect();
        let dofs: Arc<[DofRef]> = collect_dofs(model, &instances).into();
        let index = DofIndex::new(&dofs);
        let mut specimen: Vec<SpecimenElement> = Vec::new();
        let mut rayleigh_terms = Vec::new();
        let mut tangent_terms = Vec::new();
        let mut any_rayleigh = false;
        for inst in &instances {
            let map = index.map(&inst.element);
            if *physical && inst.role == Role::Specimen {
                specimen.push(SpecimenElement {
                    name: inst.name.to_string(),
                    element: inst.element.clone(),
                    map,
                    initial_state: inst.initial_state.to_vec(),
                });
                continue;
            }
            if inst.rayleigh {
                any_rayleigh = true;
                let tangent =
                    tangent_rayleigh_stiffness(inst.element.as_ref(), model.rayleigh_stiffness);
                rayleigh_contributions(
                    inst.element.as_ref(),
                    &map,
                    tangent.is_some(),
                    &mut rayleigh_terms,
                );
                if let Some(k0) = tangent {
                    tangent_terms.push((inst.name.clone(), k0));
                }
            }
        }
        drop(index);
        let damping = match (rayleigh, any_rayleigh) {
            (Some(coefficients), true) => {
                rayleigh_element(name, dofs.clone(), rayleigh_terms, coefficients)
            }
            _ => None,
        };
        // The computed elements, read from the model's instances where they are (issue 20:
        // no list of them beside the state space's slots), then the Rayleigh element.
        let numerical = (instances.iter())
            .filter(|inst| !(*physical && inst.role == Role::Specimen))
            .map(|inst| (&inst.name, &inst.element, &*inst.initial_state))
            .chain(damping.iter().map(|(n, e, s)| (n, e, s.as_slice())));
        let estimate = if *physical {
            model
                .substructures
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| s.estimate.clone())
        } else {
            None
        };
        let port: Option<PhysicalPort> = if *physical {
            Some(
                crate::physical::build_port(model, name, &dofs, specimen.clone())
                    .map_err(|e| ModelError::single(&model.source, "lab", e))?,
            )
        } else {
            None
        };
        match StateSpace::new(model, name, *physical, dofs, numerical, estimate.as_ref()) {
            Ok(mut ss) => {
                if let Some((_, beta)) = rayleigh.filter(|(_, beta)| *beta != 0.0) {
                    for (element, k0) in &tangent_terms {
                        ss.add_tangent_rayleigh(element, beta, model.rayleigh_stiffness, k0);
                    }
                }
                let specimen_refs = specimen
                    .iter()
                    .map(|e| (e.element.clone(), e.map.clone()))
                    .collect();
                out.push(Partition::new(ss, port, specimen_refs, gi));
            }
            Err(e) => {
                for issue in e.issues {
                    diag.push(issue.field, issue.reason);
                }
            }
        }
    }
    // A nodal load on a DOF that several partitions share acts on one copy only: the
    // numerical one (else the first partition holding it), never on every copy.
    for load in &model.loads {
        let holders: Vec<usize> = (0..out.len())
            .filter(|k| out[*k].state.dofs.contains(&load.dof))
            .collect();
        let owner = holders
            .iter()
            .copied()
            .find(|k| !out[*k].state.physical)
            .or(holders.first().copied());
        for k in holders {
            if Some(k) != owner {
                let d = load.dof.clone();
                out[k].state.retain_loads(|x| *x != d);
            }
        }
    }
    diag.finish(out)
}

fn scatter(target: &mut DMatrix<f64>, local: &DMatrix<f64>, map: &[Option<usize>]) {
    for (i, mi) in map.iter().enumerate() {
        let Some(a) = mi else { continue };
        for (j, mj) in map.iter().enumerate() {
            let Some(b) = mj else { continue };
            target[(*a, *b)] += local[(i, j)];
        }
    }
}

/// Linearized coupled model: mass, stiffness and damping matrices over the assembled DOFs
/// (every element at its zero-state tangent, specimens included, no Rayleigh term).
pub struct LinearizedModel {
    /// Assembled DOFs.
    pub dofs: Vec<DofRef>,
    /// Mass.
    pub m: DMatrix<f64>,
    /// Tangent stiffness `∂r/∂u` (condensed over extra states when present: ignored).
    pub k: DMatrix<f64>,
    /// Tangent damping `∂r/∂v`.
    pub c: DMatrix<f64>,
    /// Mass of the elements Rayleigh damping applies to.
    pub m_rayleigh: DMatrix<f64>,
    /// Stiffness of the elements Rayleigh damping applies to.
    pub k_rayleigh: DMatrix<f64>,
}

/// Linearize the assembled model at the zero state.
pub fn linearize(model: &Model) -> LinearizedModel {
    let all: Vec<&crate::model::ElementInstance> = model.elements.iter().collect();
    let dofs = collect_dofs(model, &all);
    let n = dofs.len();
    let index = DofIndex::new(&dofs);
    let mut m = DMatrix::zeros(n, n);
    let mut k = DMatrix::zeros(n, n);
    let mut c = DMatrix::zeros(n, n);
    let mut m_rayleigh = DMatrix::zeros(n, n);
    let mut k_rayleigh = DMatrix::zeros(n, n);
    for inst in &all {
        let map = index.map(&inst.element);
        if inst.rayleigh {
            if let Some(me) = inst.element.mass() {
                scatter(&mut m_rayleigh, &me, &map);
            }
            if let Some(ke) = crate::elements::rayleigh_stiffness(inst.element.as_ref()) {
                scatter(&mut k_rayleigh, &ke, &map);
            }
        }
        if let Some(me) = inst.element.mass() {
            scatter(&mut m, &me, &map);
        }
        // Elastic tangent with the extra states folded in (∂r/∂u + ∂r/∂s·∂ṡ/∂v), so that
        // force-state elements (Bouc-Wen, sliders) contribute their initial stiffness.
        let (ke, ce) = crate::elements::driver::initial_matrices(inst.element.as_ref());
        scatter(&mut k, &ke, &map);
        scatter(&mut c, &ce, &map);
    }
    drop(index);
    LinearizedModel {
        dofs,
        m,
        k,
        c,
        m_rayleigh,
        k_rayleigh,
    }
}

/// Rayleigh coefficients `(α, β)` of the model, solving for them from target modal ratios
/// when so given: `ζ_i = α/(2ω_i) + β ω_i/2` on the two chosen modes.
pub fn rayleigh_coefficients(model: &Model) -> Result<Option<(f64, f64)>, ModelError> {
    match &model.rayleigh {
        None => Ok(None),
        Some(Rayleigh::Coefficients { alpha, beta }) => Ok(Some((*alpha, *beta))),
        Some(Rayleigh::Modal { modes, ratios }) => {
            let lin = linearize(model);
            let modal = crate::modal::modes(&lin.m, &lin.k)
                .map_err(|e| ModelError::single(&model.source, "damping.modes", e))?;
            let nm = modal.omega.len();
            for (i, m) in modes.iter().enumerate() {
                if *m > nm {
                    return Err(ModelError::single(
                        &model.source,
                        format!("damping.modes[{i}]"),
                        format!("mode {m} does not exist: the linearized model has {nm} modes"),
                    ));
                }
            }
            let (w1, w2) = (modal.omega[modes[0] - 1], modal.omega[modes[1] - 1]);
            if w1 <= 0.0 || w2 <= 0.0 || (w1 - w2).abs() < 1e-12 * w1.max(w2) {
                return Err(ModelError::single(
                    &model.source,
                    "damping.modes",
                    format!("modes need distinct positive frequencies, found {w1} and {w2} rad/s"),
                ));
            }
            // ζ_i = φ_iᵀ(α M_R + β K_R)φ_i / (2ω_i) over the participating elements only
            // (the classical α/(2ω) + βω/2 when every element participates).
            let coefficient = |mode: usize, mat: &DMatrix<f64>| -> f64 {
                let phi = modal.shapes.column(mode - 1);
                (phi.transpose() * mat * phi)[(0, 0)] / (2.0 * modal.omega[mode - 1])
            };
            let a = nalgebra::Matrix2::new(
                coefficient(modes[0], &lin.m_rayleigh),
                coefficient(modes[0], &lin.k_rayleigh),
                coefficient(modes[1], &lin.m_rayleigh),
                coefficient(modes[1], &lin.k_rayleigh),
            );
            let b = nalgebra::Vector2::new(ratios[0], ratios[1]);
            let x = a.lu().solve(&b).ok_or_else(|| {
                ModelError::single(
                    &model.source,
                    "damping.modes",
                    "no Rayleigh damping can reach these ratios: the damped elements do not take part in both modes",
                )
            })?;
            Ok(Some((x[0], x[1])))
        }
    }
}

/// Seismic load vector `p` (load `−p a_g`) of a set of elements over `dofs`, along `direction`.
pub(crate) fn seismic_vector<'e>(
    elements: impl Iterator<Item = &'e ElementRef>,
    dofs: &[DofRef],
    direction: &str,
) -> DVector<f64> {
    let mut p = DVector::zeros(dofs.len());
    let index = DofIndex::new(dofs);
    for e in elements {
        let Some(m) = e.mass() else { continue };
        let ed = e.dofs();
        let iota: DVector<f64> = e.seismic_influence().unwrap_or_else(|| {
            DVector::from_iterator(
                ed.len(),
                ed.iter()
                    .map(|d| if d.dof == direction { 1.0 } else { 0.0 }),
            )
        });
        let pe = &m * iota;
        for (i, d) in ed.iter().enumerate() {
            if let Some(k) = index.get(d) {
                p[k] += pe[i];
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NoFiles;

    fn chain(n: usize) -> Model {
        let mut t = String::from("title = \"chain\"\n");
        for i in 1..=n {
            t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
        }
        for i in 1..=n {
            let nodes = if i == 1 {
                "[1]".to_string()
            } else {
                format!("[{}, {i}]", i - 1)
            };
            t += &format!(
                "[[element]]\ntype = \"spring\"\nname = \"k{i}\"\nnodes = {nodes}\ndof = \"x\"\n\
                 k = 4.0e4\n[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n"
            );
        }
        t += "[damping]\nalpha = 0.05\nbeta = 0.001\n";
        t += "[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\n";
        Model::from_toml(&t, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The hashed DOF rows equal the linear search they replace, element by element (DOFs
    /// outside the partition map to none, a DOF listed twice to its first row), and a model
    /// whose node list is not sorted by id still finds every node.
    #[test]
    fn hashed_dof_rows_equal_the_linear_search() {
        let model = chain(50);
        let all: Vec<&crate::model::ElementInstance> = model.elements.iter().collect();
        let mut dofs = collect_dofs(&model, &all);
        assert_eq!(dofs.len(), 50);
        // Only part of the DOFs, one of them twice.
        dofs.truncate(30);
        dofs.push(dofs[7].clone());
        let index = DofIndex::new(&dofs);
        for inst in &model.elements {
            assert_eq!(index.map(&inst.element), map_dofs(&dofs, &inst.element));
        }
        assert_eq!(index.get(&dofs[7]), Some(7));
        assert_eq!(index.get(&DofRef::new(40, "x")), None);
        let mut shuffled = model.clone();
        shuffled.nodes.reverse();
        for id in 1..=50 {
            assert_eq!(shuffled.node(id).map(|n| n.id), Some(id));
            assert_eq!(model.node(id).map(|n| n.id), Some(id));
        }
        assert!(model.node(51).is_none() && shuffled.node(0).is_none());
    }

    /// The Rayleigh damping of a chain is one sparse element whose force, `J0` block and
    /// recorded output touch `O(N)` terms (3N − 2 nonzeros of `C`, N mass entries), so a
    /// results row costs `O(N)` whatever N; its force equals `(αM + βK) v` assembled densely
    /// and independently here.
    #[test]
    fn rayleigh_damping_work_is_linear_in_the_chain_length() {
        let (alpha, beta) = (0.05, 0.001);
        for n in [10usize, 100, 1000] {
            let parts = build_partitions(&chain(n), Grouping::Monolithic).expect("builds");
            let st = &parts[0].state;
            let slot = st
                .slots
                .iter()
                .position(|s| s.name().starts_with("rayleigh@"))
                .expect("a Rayleigh element");
            let c = st.slots[slot].element.sparse_damping().expect("sparse");
            // The work of one evaluation of its force (one multiply-add per stored entry).
            assert_eq!(c.nnz(), 3 * n - 2, "N = {n}");
            assert!(st.slots[slot].is_precomputed_linear());
            assert_eq!(st.mass_entries.len(), n);
            // Every other element works on at most two DOFs.
            assert!(st
                .slots
                .iter()
                .enumerate()
                .all(|(k, s)| k == slot || s.n_dofs() <= 2));
            if n <= 100 {
                // Dense reference: C = α M + β K of the chain.
                let mut dense = DMatrix::<f64>::zeros(n, n);
                for i in 0..n {
                    dense[(i, i)] = alpha * 50.0 + beta * if i + 1 < n { 8.0e4 } else { 4.0e4 };
                    if i + 1 < n {
                        dense[(i, i + 1)] = -beta * 4.0e4;
                        dense[(i + 1, i)] = -beta * 4.0e4;
                    }
                }
                let mut y = vec![0.0; st.size()];
                for i in 0..n {
                    y[n + i] = (0.3 * i as f64).sin();
                }
                let mut ws = st.workspace();
                let mut force = vec![0.0; n];
                st.element_force(slot, &y, &mut force, &mut ws);
                let expect = &dense * DVector::from_column_slice(&y[n..2 * n]);
                for i in 0..n {
                    assert!((force[i] - expect[i]).abs() < 1e-12 * expect.amax().max(1.0));
                }
                // The J0 block it contributes is that matrix.
                for i in 0..n {
                    for j in 0..n {
                        let expect = dense[(i, j)];
                        assert!((st.j0()[(n + i, n + j)] - expect).abs() < 1e-9);
                    }
                }
            }
        }
    }

    /// `J0` and the mass are assembled as entries: `D = M + c J0` from them equals the dense
    /// `big_mass() + J0 c` to the last bit (with a Rayleigh term and an estimate on the same
    /// rows), and building the partitions of a chain
    /// beyond the old 2000-DOF limit forms no dense matrix.
    #[test]
    fn sparse_j0_and_mass_equal_the_dense_assembly_and_form_no_dense_matrix() {
        let mut st = build_partitions(&chain(30), Grouping::Monolithic)
            .expect("builds")
            .remove(0)
            .state;
        assert_eq!(st.dense_formed(), (false, false));
        let estimate = crate::model::Estimate {
            dofs: st.dofs[..2].to_vec(),
            stiffness: DMatrix::from_row_slice(2, 2, &[3.0e4, -1.0e4, -1.0e4, 2.0e4]),
            damping: DMatrix::from_row_slice(2, 2, &[60.0, 0.0, 0.0, 7.5]),
        };
        for c in [0.0, 1.0e-3 / 3.0, 0.0137] {
            for est in [None, Some(estimate.clone())] {
                st.set_estimate(est);
                let dense = st.big_mass() + st.j0() * c;
                let entries = st.d_entries(c);
                let mut from_entries = DMatrix::<f64>::zeros(st.size(), st.size());
                for &(i, j, v) in &entries {
                    assert!(v != 0.0);
                    from_entries[(i, j)] = v;
                }
                for (a, b) in dense.iter().zip(from_entries.iter()) {
                    assert_eq!(a.to_bits(), b.to_bits());
                }
                // Row by row, by column within a row.
                assert!(entries
                    .windows(2)
                    .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
            }
        }
        // After the dense copy was handed out, a new estimate updates it in place.
        st.set_estimate(Some(estimate));
        let again = {
            let mut m = DMatrix::<f64>::zeros(st.size(), st.size());
            for (i, j, v) in st.j0_entries().iter() {
                m[(i, j)] = v;
            }
            m
        };
        assert_eq!(st.j0(), &again);
        // Beyond the old limit: entries only, O(N) of them.
        let n = 3000;
        let parts = build_partitions(&chain(n), Grouping::Monolithic).expect("builds");
        let st = &parts[0].state;
        assert_eq!(st.dense_formed(), (false, false));
        assert_eq!(st.mass_entries().len(), n);
        // −I, the springs' K (3N − 2) and the Rayleigh C (3N − 2).
        assert_eq!(st.j0_entries().len(), n + 2 * (3 * n - 2));
    }
}
