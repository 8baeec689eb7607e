//! Static (Guyan) condensation of a linear finite-element model to a superelement.
//!
//! A [`FrameModel`] is a linear frame or truss described by geometry and sections: nodes with
//! coordinates, [`truss`](Truss), [`2D beam-column`](Beam2d) and
//! [`3D beam-column`](Beam3d) elements (Euler–Bernoulli, elastic), restraints and nodal
//! masses. [`FrameModel::condense`] keeps a set of *retained* DOFs (those that connect the
//! superelement to the rest of the hybrid model: interface, actuator and mass DOFs) and
//! eliminates the others (Guyan 1965):
//!
//! `K_r = K_rr − K_ro K_oo⁻¹ K_or`, `T = [I; −K_oo⁻¹ K_or]`, `M_r = Tᵀ M T`,
//!
//! exact for the stiffness (a static load on the retained DOFs gives the same retained
//! displacements), approximate for the mass (the omitted DOFs follow the retained ones
//! statically). The result is the `m`, `k` pair of a `linear` element over the retained DOFs.
//!
//! Element matrices follow the standard displacement formulation (e.g. Przemieniecki 1968,
//! McGuire, Gallagher & Ziemian 2000): cubic Hermitian bending, linear axial and torsion,
//! consistent or lumped mass. The 3D element's local axes follow OpenSees's `Linear`
//! geometric transformation: `x` along the element, `vecxz` a vector in the local `x–z` plane.
//!
//! An offline tool of model building: it allocates freely.

mod beam2d;
mod beam3d;
mod truss;

pub use beam2d::Beam2d;
pub use beam3d::Beam3d;
pub use truss::Truss;

use nalgebra::{DMatrix, Vector3};

/// The DOF names of a frame node, in the order of the element matrices: translations `x`,
/// `y`, `z`, rotations `rx`, `ry`, `rz`.
pub const FRAME_DOFS: [&str; 6] = ["x", "y", "z", "rx", "ry", "rz"];

/// How element mass is distributed to the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MassForm {
    /// Consistent mass (the element's own shape functions).
    Consistent,
    /// Lumped translational mass, half of the element's mass at each end.
    Lumped,
}

/// An element of a frame model: its nodes (indices into [`FrameModel::nodes`]) and its
/// global stiffness and mass matrices over those nodes' six DOFs each.
pub trait FrameElement: std::fmt::Debug {
    /// Indices of its two nodes.
    fn nodes(&self) -> [usize; 2];
    /// The 12 × 12 global stiffness over `[node a: x y z rx ry rz, node b: …]`.
    fn stiffness(&self, coords: &[Vector3<f64>]) -> Result<DMatrix<f64>, String>;
    /// The 12 × 12 global mass in the same order.
    fn mass(&self, coords: &[Vector3<f64>], form: MassForm) -> Result<DMatrix<f64>, String>;
}

/// A linear frame/truss model to condense.
#[derive(Debug, Default)]
pub struct FrameModel {
    /// Node coordinates.
    pub nodes: Vec<Vector3<f64>>,
    /// Elements.
    pub elements: Vec<Box<dyn FrameElement>>,
    /// Restrained DOFs `(node, dof index in FRAME_DOFS)`.
    pub fixed: Vec<(usize, usize)>,
    /// Lumped nodal masses `(node, dof index, mass)`.
    pub masses: Vec<(usize, usize, f64)>,
    /// Mass distribution of the elements.
    pub mass_form: Option<MassForm>,
}

/// The condensed matrices over the retained DOFs, in the order they were asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Superelement {
    /// Condensed stiffness `K_r`.
    pub stiffness: DMatrix<f64>,
    /// Condensed mass `Tᵀ M T`.
    pub mass: DMatrix<f64>,
}

impl FrameModel {
    fn global_index(node: usize, dof: usize) -> usize {
        6 * node + dof
    }

    /// The assembled global stiffness and mass (6 DOFs per node, restraints not applied).
    pub fn assemble(&self) -> Result<(DMatrix<f64>, DMatrix<f64>), String> {
        let n = 6 * self.nodes.len();
        let mut k = DMatrix::zeros(n, n);
        let mut m = DMatrix::zeros(n, n);
        let form = self.mass_form.unwrap_or(MassForm::Consistent);
        for (i, e) in self.elements.iter().enumerate() {
            let [a, b] = e.nodes();
            if a >= self.nodes.len() || b >= self.nodes.len() || a == b {
                return Err(format!(
                    "element {i}: nodes {a} and {b} are not two distinct nodes"
                ));
            }
            let ke = e
                .stiffness(&self.nodes)
                .map_err(|w| format!("element {i}: {w}"))?;
            let me = e
                .mass(&self.nodes, form)
                .map_err(|w| format!("element {i}: {w}"))?;
            let map: Vec<usize> = (0..12)
                .map(|l| Self::global_index(if l < 6 { a } else { b }, l % 6))
                .collect();
            for r in 0..12 {
                for c in 0..12 {
                    k[(map[r], map[c])] += ke[(r, c)];
                    m[(map[r], map[c])] += me[(r, c)];
                }
            }
        }
        for &(node, dof, mass) in &self.masses {
            if node >= self.nodes.len() || dof >= 6 {
                return Err(format!("nodal mass at node {node}, DOF {dof}: no such DOF"));
            }
            m[(Self::global_index(node, dof), Self::global_index(node, dof))] += mass;
        }
        Ok((k, m))
    }

    /// Guyan condensation to the `retained` DOFs `(node, dof index)`. Every DOF that is
    /// neither retained nor fixed is condensed out; DOFs without stiffness (e.g. the
    /// rotations of a pure truss, the out-of-plane DOFs of a plane frame) must be fixed, or
    /// the condensation reports the singular `K_oo`.
    pub fn condense(&self, retained: &[(usize, usize)]) -> Result<Superelement, String> {
        let r = self.reduce(retained)?;
        let k_r = match &r.x {
            None => r.sub_k(&r.r_idx, &r.r_idx),
            Some(x) => r.sub_k(&r.r_idx, &r.r_idx) - r.sub_k(&r.o_idx, &r.r_idx).transpose() * x,
        };
        let t = r.transformation();
        let mut all = r.r_idx.clone();
        all.extend(&r.o_idx);
        let m_all = DMatrix::from_fn(all.len(), all.len(), |i, j| r.m[(all[i], all[j])]);
        let m_r = t.transpose() * m_all * &t;
        let symmetric = |a: DMatrix<f64>| (&a + a.transpose()) * 0.5;
        Ok(Superelement {
            stiffness: symmetric(k_r),
            mass: symmetric(m_r),
        })
    }

    /// The condensed seismic load vector `p = Tᵀ M ι` over the `retained` DOFs for a ground
    /// acceleration along global axis `axis` (0 = x, 1 = y, 2 = z): `ι` is the rigid-body
    /// translation of *every* node (free and restrained) along that axis, so a base-fixed
    /// member's mass that the condensation moves to the retained DOFs is loaded by the ground
    /// motion as in the full model (the load is `−p a_g`). For a model whose only masses sit
    /// at retained DOFs this is `M_r ι_r`; in general it is not.
    pub fn seismic_load(
        &self,
        retained: &[(usize, usize)],
        axis: usize,
    ) -> Result<nalgebra::DVector<f64>, String> {
        if axis > 2 {
            return Err(format!("axis {axis}: a ground motion acts along x, y or z"));
        }
        let r = self.reduce(retained)?;
        let n = r.m.nrows();
        let iota = nalgebra::DVector::from_fn(n, |g, _| if g % 6 == axis { 1.0 } else { 0.0 });
        let m_iota = &r.m * iota;
        let mut all = r.r_idx.clone();
        all.extend(&r.o_idx);
        let f = nalgebra::DVector::from_fn(all.len(), |i, _| m_iota[all[i]]);
        Ok(r.transformation().transpose() * f)
    }

    /// The partition of the free DOFs into retained and omitted ones and `X = K_oo⁻¹ K_or`.
    fn reduce(&self, retained: &[(usize, usize)]) -> Result<Reduction, String> {
        let (k, m) = self.assemble()?;
        let n = k.nrows();
        let mut is_fixed = vec![false; n];
        for &(node, dof) in &self.fixed {
            if node >= self.nodes.len() || dof >= 6 {
                return Err(format!("restraint at node {node}, DOF {dof}: no such DOF"));
            }
            is_fixed[Self::global_index(node, dof)] = true;
        }
        let mut r_idx = Vec::with_capacity(retained.len());
        for &(node, dof) in retained {
            if node >= self.nodes.len() || dof >= 6 {
                return Err(format!(
                    "retained DOF at node {node}, DOF {dof}: no such DOF"
                ));
            }
            let g = Self::global_index(node, dof);
            if is_fixed[g] {
                return Err(format!(
                    "retained DOF {} of node {node} is restrained",
                    FRAME_DOFS[dof]
                ));
            }
            if r_idx.contains(&g) {
                return Err(format!(
                    "DOF {} of node {node} is retained twice",
                    FRAME_DOFS[dof]
                ));
            }
            r_idx.push(g);
        }
        let o_idx: Vec<usize> = (0..n)
            .filter(|g| !is_fixed[*g] && !r_idx.contains(g))
            .collect();
        let mut red = Reduction {
            k,
            m,
            r_idx,
            o_idx,
            x: None,
        };
        if red.o_idx.is_empty() {
            return Ok(red);
        }
        let k_oo = red.sub_k(&red.o_idx, &red.o_idx);
        let k_or = red.sub_k(&red.o_idx, &red.r_idx);
        let scale = k_oo.amax().max(f64::MIN_POSITIVE);
        let lu = k_oo.clone().lu();
        // K_oo⁻¹ K_or; a singular K_oo means a mechanism among the condensed DOFs.
        let x = lu.solve(&k_or).ok_or_else(|| {
            let free = red
                .o_idx
                .iter()
                .find(|&&g| red.k[(g, g)].abs() <= 1e-12 * scale)
                .map(|&g| {
                    format!(
                        " (DOF {} of node {} has no stiffness: fix it)",
                        FRAME_DOFS[g % 6],
                        g / 6
                    )
                })
                .unwrap_or_default();
            format!("the condensed DOFs form a mechanism: K_oo is singular{free}")
        })?;
        let residual = (&k_oo * &x - &k_or).amax();
        if !residual.is_finite() || residual > 1e-8 * scale.max(k_or.amax()) {
            return Err("the condensed DOFs form a mechanism: K_oo is singular".into());
        }
        red.x = Some(x);
        Ok(red)
    }
}

/// The assembled matrices, the retained and omitted free DOFs (global indices) and
/// `X = K_oo⁻¹ K_or` (none when nothing is omitted).
struct Reduction {
    k: DMatrix<f64>,
    m: DMatrix<f64>,
    r_idx: Vec<usize>,
    o_idx: Vec<usize>,
    x: Option<DMatrix<f64>>,
}

impl Reduction {
    fn sub_k(&self, rows: &[usize], cols: &[usize]) -> DMatrix<f64> {
        DMatrix::from_fn(rows.len(), cols.len(), |i, j| self.k[(rows[i], cols[j])])
    }

    /// `T = [I; −X]` over `(retained, omitted)`.
    fn transformation(&self) -> DMatrix<f64> {
        let nr = self.r_idx.len();
        let mut t = DMatrix::zeros(nr + self.o_idx.len(), nr);
        for i in 0..nr {
            t[(i, i)] = 1.0;
        }
        if let Some(x) = &self.x {
            t.view_mut((nr, 0), (self.o_idx.len(), nr)).copy_from(&(-x));
        }
        t
    }
}

/// The length and direction cosines of the element from `a` to `b`.
pub(crate) fn axis(
    coords: &[Vector3<f64>],
    a: usize,
    b: usize,
) -> Result<(f64, Vector3<f64>), String> {
    let d = coords[b] - coords[a];
    let l = d.norm();
    if !(l.is_finite() && l > 0.0) {
        return Err(format!("nodes {a} and {b} coincide: zero length"));
    }
    Ok((l, d / l))
}

/// A positive finite section or material property, or an error naming it.
pub(crate) fn positive(name: &str, x: f64) -> Result<f64, String> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(format!("{name} must be positive and finite, found {x}"))
    }
}

/// A non-negative finite property (mass density), or an error naming it.
pub(crate) fn non_negative(name: &str, x: f64) -> Result<f64, String> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("{name} must be ≥ 0 and finite, found {x}"))
    }
}

/// `Tᵀ k T` for a 12 × 12 local matrix and the 3 × 3 rotation `r` (rows: local axes in
/// global components), applied to each of the four 3-DOF blocks.
pub(crate) fn rotate(local: &DMatrix<f64>, r: &nalgebra::Matrix3<f64>) -> DMatrix<f64> {
    let mut t = DMatrix::zeros(12, 12);
    for b in 0..4 {
        t.view_mut((3 * b, 3 * b), (3, 3)).copy_from(r);
    }
    t.transpose() * local * t
}

#[cfg(test)]
mod tests;
