//! Element-level partitioning for localized Lagrange multipliers (Hovmand et al. 2022, §2,
//! eqs 1–4, 10).
//!
//! In the LLM mode every element (numerical or physical) is its own partition
//! `M^(i) Ẋ^(i) + R^(i)(X^(i)) = F^(i)(t) + B^(i) Λ^(i)` (eq 3a). Nodal `mass` elements are not
//! partitions: each is distributed among the elements that share its node, evenly by default
//! or by an explicit `split = { element = fraction, … }` (a substructure name gives its share
//! evenly to its elements at that node), as eq 10 splits the node-2 mass between two springs.
//!
//! The generalized interface DOFs `X^g` are the DOFs shared by two or more element partitions
//! or driven by an imposed motion. Each element copy of such a DOF gets one multiplier; the
//! Boolean connectivity of eqs 3b–3d and 4 is kept as index lists:
//! `G^(i)` picks the copy's `u̇` row (+1), `Ḡ^(i)` the global DOF (−1), `B^(i) = [0; l^(i)ᵀ]`
//! puts `Λ^(i)` on the copy's momentum row and `B̄^(i) = Ḡ^(i)ᵀ` (E31, E34); imposed DOFs use
//! `Ḡ^c = −S`, `B̄^c = Ḡ^cᵀ`, so that `h = −ẇ` prescribes the velocity ẇ (E33).

use super::{collect_dofs, map_dofs, scatter, Partition, StateSpace};
use crate::elements::{DofRef, ElementRef, LinearSuperelement, Mass};
use crate::error::{Diagnostics, ModelError};
use crate::model::{ElementInstance, ElementName, Model, Rayleigh, Role};
use crate::physical::{NumericalSpecimen, PhysicalPort, SpecimenElement};
use nalgebra::DMatrix;
use std::sync::Arc;

/// The element partitions of a model in the LLM mode and their connectivity.
pub struct ElementPartitions {
    /// One partition per (non-mass) element, named after the element.
    pub parts: Vec<Partition>,
    /// Generalized interface DOFs `X^g`.
    pub global: Vec<DofRef>,
    /// Per partition: `(partition DOF row, index in X^g)` of its coupled copies, in the order
    /// of its multipliers `Λ^(i)`.
    pub coupled: Vec<Vec<(usize, usize)>>,
    /// Imposed DOFs: `(index in X^g, index in Model::imposed_motions)`.
    pub imposed: Vec<(usize, usize)>,
    /// Per partition: rows of massless copies (imposed DOFs only).
    pub massless: Vec<Vec<usize>>,
}

/// Whether an element instance is a nodal mass (distributed, not a partition).
fn is_nodal_mass(inst: &ElementInstance) -> bool {
    inst.element.kind() == "mass"
}

/// Build the element partitions of `model` with every connectivity check (dangling masses,
/// massless partitions, imposed motions off the structure, mixed excitations).
pub fn build_element_partitions(model: &Model) -> Result<ElementPartitions, ModelError> {
    let mut diag = Diagnostics::new(&model.source);
    let receivers: Vec<usize> = (0..model.elements.len())
        .filter(|i| !is_nodal_mass(&model.elements[*i]))
        .collect();
    if receivers.is_empty() {
        diag.push(
            "element",
            "the llm integrator needs at least one element besides nodal masses",
        );
        return Err(diag.into_error());
    }
    let imposed_dofs: Vec<&DofRef> = model.imposed_motions.iter().map(|m| &m.dof).collect();
    // Absolute coordinates: no uniform ground motion, no mass-proportional damping.
    if !model.imposed_motions.is_empty() {
        for (i, g) in model.ground_motions.iter().enumerate() {
            diag.push(
                format!("ground_motion[{i}]"),
                format!(
                    "a uniform ground motion along `{}` cannot be combined with imposed \
                     motions, which are in absolute coordinates: give each support its own \
                     [[imposed_motion]] (e.g. `record = …`)",
                    g.direction
                ),
            );
        }
        match &model.rayleigh {
            Some(Rayleigh::Coefficients { alpha, .. }) if *alpha != 0.0 => diag.push(
                "damping.alpha",
                "mass-proportional damping would damp the rigid-body motion of the imposed \
                 supports (absolute coordinates); use `beta` only",
            ),
            Some(Rayleigh::Modal { .. }) => diag.push(
                "damping.modes",
                "modal Rayleigh damping has a mass-proportional part, which would damp the \
                 rigid-body motion of the imposed supports (absolute coordinates); give `beta` \
                 only",
            ),
            _ => {}
        }
        for (i, l) in model.loads.iter().enumerate() {
            if imposed_dofs.contains(&&l.dof) {
                diag.push(
                    format!("load[{i}].dof"),
                    format!(
                        "{} follows an imposed motion; a force on it would only change the \
                         support reaction",
                        l.dof
                    ),
                );
            }
        }
    }
    // Physical substructures: one specimen element each (the estimate is its K0).
    for (k, s) in model.substructures.iter().enumerate() {
        let n = model
            .elements
            .iter()
            .filter(|e| e.substructure as usize == k && s.physical && e.role == Role::Specimen)
            .count();
        if s.physical && n > 1 {
            diag.push(
                format!("substructure.{}", s.name),
                format!(
                    "has {n} specimen elements; in the llm mode each specimen element is its own \
                     partition, so give each its own physical substructure and estimate"
                ),
            );
        }
    }
    let rayleigh = super::rayleigh_coefficients(model).ok().flatten();

    // Distribute nodal masses: per receiver, (name, mass element, rayleigh flag).
    let mut shares: Vec<Vec<(String, Mass, bool)>> = vec![Vec::new(); receivers.len()];
    for (mi, inst) in model
        .elements
        .iter()
        .enumerate()
        .filter(|(_, e)| is_nodal_mass(e))
    {
        let Some(m) = inst.element.mass() else {
            continue;
        };
        let dofs: Vec<(usize, DofRef)> = inst
            .element
            .dofs()
            .iter()
            .enumerate()
            .filter(|(_, d)| !model.is_fixed(d))
            .map(|(i, d)| (i, d.clone()))
            .collect();
        let has = |r: usize, d: &DofRef| model.elements[receivers[r]].element.dofs().contains(d);
        let field = model
            .mass_shares
            .iter()
            .find(|s| *s.mass == *inst.name)
            .map(|s| s.field.clone());
        // Fractions per receiver (applied to every DOF the receiver has).
        let mut per: Vec<(usize, Vec<(usize, f64)>)> = Vec::new(); // (dof pos, [(receiver, frac)])
        if let Some(share) = model.mass_shares.iter().find(|s| *s.mass == *inst.name) {
            let field = field.clone().unwrap_or_default();
            let mut fr: Vec<(usize, f64)> = Vec::new();
            for (key, x) in &share.shares {
                if let Some(r) = receivers
                    .iter()
                    .position(|i| *model.elements[*i].name == **key)
                {
                    for (_, d) in &dofs {
                        if !has(r, d) {
                            diag.push(
                                format!("{field}.{key}"),
                                format!(
                                    "element `{key}` has no DOF {d} to take a share of `{}`",
                                    inst.name
                                ),
                            );
                        }
                    }
                    fr.push((r, *x));
                } else if let Some(k) = model.substructures.iter().position(|s| s.name == *key) {
                    let members: Vec<usize> = (0..receivers.len())
                        .filter(|r| {
                            model.elements[receivers[*r]].substructure as usize == k
                                && dofs.iter().any(|(_, d)| has(*r, d))
                        })
                        .collect();
                    if members.is_empty() {
                        diag.push(
                            format!("{field}.{key}"),
                            format!(
                                "substructure `{key}` has no element at the node of `{}`",
                                inst.name
                            ),
                        );
                    }
                    for r in &members {
                        fr.push((*r, x / members.len() as f64));
                    }
                } else {
                    diag.push(
                        format!("{field}.{key}"),
                        "is neither an element nor a substructure of the model",
                    );
                }
            }
            for (pos, _) in &dofs {
                per.push((*pos, fr.clone()));
            }
        } else {
            for (pos, d) in &dofs {
                let rs: Vec<usize> = (0..receivers.len()).filter(|r| has(*r, d)).collect();
                if rs.is_empty() {
                    diag.push(
                        format!("element[{mi}]"),
                        format!(
                            "{d} is a dangling node DOF: it carries the mass `{}` but no other \
                             element connects it to the structure",
                            inst.name
                        ),
                    );
                    continue;
                }
                let x = 1.0 / rs.len() as f64;
                per.push((*pos, rs.into_iter().map(|r| (r, x)).collect()));
            }
        }
        // Gather into one Mass per receiver.
        for r in 0..receivers.len() {
            let mut md = Vec::new();
            let mut mv = Vec::new();
            for (pos, fr) in &per {
                let d = &inst.element.dofs()[*pos];
                let x: f64 = fr.iter().filter(|(q, _)| *q == r).map(|(_, x)| x).sum();
                if x > 0.0 && has(r, d) {
                    md.push(d.clone());
                    mv.push(m[(*pos, *pos)] * x);
                }
            }
            if !md.is_empty() {
                shares[r].push((
                    format!("{}@{}", inst.name, model.elements[receivers[r]].name),
                    Mass::new(md, mv),
                    inst.rayleigh,
                ));
            }
        }
    }
    if diag.has_errors() {
        return Err(diag.into_error());
    }

    // DOFs of each receiver and the generalized interface DOFs.
    let part_dofs: Vec<Vec<DofRef>> = receivers
        .iter()
        .map(|i| collect_dofs(model, &[&model.elements[*i]]))
        .collect();
    let mut global: Vec<DofRef> = Vec::new();
    for dofs in &part_dofs {
        for d in dofs {
            let count = part_dofs.iter().filter(|x| x.contains(d)).count();
            if (count > 1 || imposed_dofs.contains(&d)) && !global.contains(d) {
                global.push(d.clone());
            }
        }
    }
    let order = |d: &DofRef| {
        let n = model.node(d.node).expect("validated node");
        (d.node, n.position(&d.dof).unwrap_or(0))
    };
    global.sort_by_key(order);
    let mut imposed = Vec::new();
    for (k, m) in model.imposed_motions.iter().enumerate() {
        match global.iter().position(|d| *d == m.dof) {
            Some(g) if part_dofs.iter().any(|x| x.contains(&m.dof)) => imposed.push((g, k)),
            _ => diag.push(
                format!("imposed_motion[{}].dof", m.entry),
                format!(
                    "{} belongs to no element (only to a nodal mass), so nothing can follow \
                     the imposed motion",
                    m.dof
                ),
            ),
        }
    }

    // Build each partition.
    let mut scratch = model.clone();
    let mut load_owner: Vec<Option<usize>> = vec![None; model.loads.len()];
    for (li, l) in model.loads.iter().enumerate() {
        load_owner[li] = part_dofs.iter().position(|x| x.contains(&l.dof));
    }
    let mut parts = Vec::new();
    let mut coupled = Vec::new();
    let mut massless = Vec::new();
    for (r, &ei) in receivers.iter().enumerate() {
        let inst = &model.elements[ei];
        let dofs = part_dofs[r].clone();
        let n = dofs.len();
        if n == 0 {
            diag.push(
                format!("element[{ei}]"),
                format!("`{}` acts only on fixed DOFs, so it cannot move", inst.name),
            );
            continue;
        }
        let sub = &model.substructures[inst.substructure as usize];
        let physical = sub.physical && inst.role == Role::Specimen;
        let mut numerical: Vec<(ElementName, ElementRef, Vec<f64>)> = Vec::new();
        let mut specimen = Vec::new();
        let map = map_dofs(&dofs, &inst.element);
        let mut m_r = DMatrix::<f64>::zeros(n, n);
        let mut k_r = DMatrix::<f64>::zeros(n, n);
        let mut mass_diag = vec![0.0; n];
        if physical {
            specimen.push(SpecimenElement {
                name: inst.name.to_string(),
                element: inst.element.clone(),
                map: map.clone(),
                initial_state: inst.initial_state.to_vec(),
            });
        } else {
            numerical.push((
                inst.name.clone(),
                inst.element.clone(),
                inst.initial_state.to_vec(),
            ));
            if inst.rayleigh {
                if let Some(k) = crate::elements::rayleigh_stiffness(inst.element.as_ref()) {
                    scatter(&mut k_r, &k, &map);
                }
                if let Some(m) = inst.element.mass() {
                    scatter(&mut m_r, &m, &map);
                }
            }
        }
        if let Some(m) = inst.element.mass() {
            for (a, ma) in map.iter().enumerate() {
                if let Some(i) = ma {
                    mass_diag[*i] += m[(a, a)];
                }
            }
        }
        for (name, m, ray) in &shares[r] {
            let e: ElementRef = Arc::new(m.clone());
            let emap = map_dofs(&dofs, &e);
            for (a, ma) in emap.iter().enumerate() {
                if let Some(i) = ma {
                    mass_diag[*i] += m.values[a];
                }
            }
            if *ray {
                if let Some(mm) = e.mass() {
                    scatter(&mut m_r, &mm, &emap);
                }
            }
            numerical.push((ElementName::from(name.as_str()), e, Vec::new()));
        }
        // Massless copies: only imposed DOFs may be massless (their motion is prescribed).
        if mass_diag.iter().all(|m| *m <= 0.0) {
            diag.push(
                format!("element[{ei}]"),
                format!(
                    "`{}` is a massless partition: no mass reaches any of its nodes, so its \
                     matrix D is singular (add a `mass` at one of its nodes or give it a \
                     `split` share)",
                    inst.name
                ),
            );
            continue;
        }
        let mut zero_rows = Vec::new();
        for (i, d) in dofs.iter().enumerate() {
            if mass_diag[i] <= 0.0 {
                if imposed_dofs.contains(&d) {
                    zero_rows.push(i);
                } else {
                    diag.push(
                        format!("element[{ei}]"),
                        format!(
                            "`{}` gets no mass at {d}, so its acceleration there is undefined and its \
                             matrix D is singular (add a `mass` at the node or a `split` share \
                             for this element)",
                            inst.name
                        ),
                    );
                }
            }
        }
        let mut placeholders = Vec::new();
        for &i in &zero_rows {
            let e: ElementRef = Arc::new(Mass::new(vec![dofs[i].clone()], vec![1.0]));
            placeholders.push(numerical.len());
            numerical.push((
                ElementName::from(format!("placeholder@{}", dofs[i])),
                e,
                Vec::new(),
            ));
        }
        if let Some((alpha, beta)) = rayleigh {
            let c = m_r * alpha + k_r * beta;
            if c.amax() > 0.0 {
                numerical.push((
                    ElementName::from(format!("rayleigh@{}", inst.name)),
                    Arc::new(LinearSuperelement::new(
                        dofs.clone(),
                        DMatrix::zeros(n, n),
                        c,
                        DMatrix::zeros(n, n),
                        None,
                    )),
                    Vec::new(),
                ));
            }
        }
        scratch.loads = model
            .loads
            .iter()
            .zip(&load_owner)
            .filter(|(_, o)| **o == Some(r))
            .map(|(l, _)| l.clone())
            .collect();
        let estimate = if physical { sub.estimate.clone() } else { None };
        let port: Option<PhysicalPort> = if physical {
            Some(PhysicalPort::new(
                Box::new(NumericalSpecimen::new(n, specimen.clone())),
                n,
            ))
        } else {
            None
        };
        let mut ss = match StateSpace::new(
            &scratch,
            &inst.name,
            physical,
            dofs.clone(),
            numerical.iter().map(|(n, e, s)| (n, e, s.as_slice())),
            estimate.as_ref(),
        ) {
            Ok(ss) => ss,
            Err(e) => {
                for issue in e.issues {
                    diag.push(issue.field, issue.reason);
                }
                continue;
            }
        };
        // Remove the placeholder masses of massless imposed copies again.
        for (&i, &slot) in zero_rows.iter().zip(&placeholders).rev() {
            ss.clear_mass_diagonal(i);
            ss.remove_slot(slot);
        }
        // Imposed copies start where their motion is at t = 0.
        for (i, d) in dofs.iter().enumerate() {
            if let Some(m) = model.imposed_motions.iter().find(|m| m.dof == *d) {
                let [u0, v0, _] = m.kinematics(0.0);
                ss.y0[i] = u0;
                ss.y0[n + i] = v0;
            }
        }
        let specimen_refs = specimen
            .iter()
            .map(|e| (e.element.clone(), e.map.clone()))
            .collect();
        let index = parts.len();
        parts.push(Partition::new(ss, port, specimen_refs, index));
        coupled.push(
            dofs.iter()
                .enumerate()
                .filter_map(|(i, d)| global.iter().position(|g| g == d).map(|g| (i, g)))
                .collect(),
        );
        massless.push(zero_rows);
    }
    diag.finish(ElementPartitions {
        parts,
        global,
        coupled,
        imposed,
        massless,
    })
}
