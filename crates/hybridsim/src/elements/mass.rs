//! Lumped nodal mass.

use super::{DofRef, Element, ElementLaw, ElementRef, Scalar, SmallList};
use nalgebra::DMatrix;
use std::sync::Arc;

/// Lumped mass on some DOFs of one node (translational mass or rotational inertia).
///
/// Up to three DOFs (a node's `x`, `y`, `rz` in 2D) the DOFs and values are kept inside the
/// element: one heap block a mass, its shared handle's (issue 20: three blocks, the element's
/// and two vectors', 144 bytes of the 10⁵-DOF chain's resident memory a storey; now 112).
#[derive(Debug, Clone)]
pub struct Mass {
    dofs: SmallList<DofRef, 3>,
    /// Mass per DOF, in the order of the DOF list (reads as a slice).
    pub values: SmallList<f64, 3>,
}

impl Mass {
    /// Lumped mass `values[i]` on `dofs[i]`.
    pub fn new(dofs: Vec<DofRef>, values: Vec<f64>) -> Self {
        assert_eq!(dofs.len(), values.len());
        Self {
            dofs: dofs.into(),
            values: values.into(),
        }
    }

    /// Lumped mass `values[i]` on `dofs[i]` as an element of a model: a [`SingleDofMass`] on
    /// one DOF, a [`Mass`] otherwise. Both give the same matrices, forces and outputs.
    pub fn element(dofs: Vec<DofRef>, values: Vec<f64>) -> ElementRef {
        assert_eq!(dofs.len(), values.len());
        match (&dofs[..], &values[..]) {
            ([dof], [value]) => Arc::new(SingleDofMass {
                dof: dof.clone(),
                value: *value,
            }),
            _ => Arc::new(Self::new(dofs, values)),
        }
    }

    /// The same mass scaled by `fraction` (mass split between substructures).
    pub fn scaled(&self, fraction: f64) -> Self {
        Self {
            dofs: self.dofs.clone(),
            values: SmallList::new(self.values.iter().map(|m| m * fraction).collect()),
        }
    }
}

impl ElementLaw for Mass {
    fn law<T: Scalar>(&self, _u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        r.iter_mut().for_each(|x| *x = T::zero());
    }
}

impl Element for Mass {
    fn kind(&self) -> &'static str {
        "mass"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn mass(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::from_diagonal(
            &nalgebra::DVector::from_column_slice(&self.values),
        ))
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::zeros(self.dofs.len(), self.dofs.len()))
    }
    fn rayleigh_by_default(&self) -> bool {
        true
    }
    crate::impl_element_evaluation!();
}

/// A lumped mass on one DOF (a storey of a shear chain): the [`Mass`] of one DOF, built by
/// [`Mass::element`], in 24 bytes.
///
/// Issue 20: the 10⁵-DOF chain's 100 000 masses were a [`Mass`] each, room for three DOFs and
/// their lengths (88 bytes, a 112-byte block of glibc's with its shared handle's counts); this
/// one is a 48-byte block, 6.4 MB less of the chain's start-up.
#[derive(Debug, Clone)]
pub struct SingleDofMass {
    dof: DofRef,
    /// The mass (or rotational inertia).
    value: f64,
}

impl SingleDofMass {
    /// The mass, read as the values of a [`Mass`].
    pub fn values(&self) -> &[f64] {
        std::slice::from_ref(&self.value)
    }
}

impl ElementLaw for SingleDofMass {
    fn law<T: Scalar>(&self, _u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        r.iter_mut().for_each(|x| *x = T::zero());
    }
}

impl Element for SingleDofMass {
    fn kind(&self) -> &'static str {
        "mass"
    }
    fn dofs(&self) -> &[DofRef] {
        std::slice::from_ref(&self.dof)
    }
    fn mass(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::from_element(1, 1, self.value))
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::zeros(1, 1))
    }
    fn rayleigh_by_default(&self) -> bool {
        true
    }
    crate::impl_element_evaluation!();
}

#[cfg(test)]
mod tests {
    use super::{Mass, SingleDofMass};
    use crate::elements::{DofRef, Element};

    /// A mass of one DOF is the compact element and gives what a [`Mass`] gives, to the bit;
    /// two or more DOFs stay a [`Mass`].
    #[test]
    fn a_single_dof_mass_is_compact_and_acts_as_a_mass() {
        assert_eq!(std::mem::size_of::<SingleDofMass>(), 24);
        let dofs = vec![DofRef::new(7, "x")];
        let one = Mass::element(dofs.clone(), vec![2.5]);
        let full = Mass::new(dofs.clone(), vec![2.5]);
        assert_eq!(one.kind(), full.kind());
        assert_eq!(one.dofs(), full.dofs());
        assert_eq!(one.mass(), full.mass());
        assert_eq!(one.linear_stiffness(), full.linear_stiffness());
        assert_eq!(one.linear_damping(), full.linear_damping());
        assert_eq!(one.rayleigh_by_default(), full.rayleigh_by_default());
        assert_eq!(one.n_states(), full.n_states());
        let (mut r1, mut r2) = ([1.0], [1.0]);
        one.restoring(&[0.3], &[0.1], &[], &mut r1, &mut []);
        full.restoring(&[0.3], &[0.1], &[], &mut r2, &mut []);
        assert_eq!(r1[0].to_bits(), r2[0].to_bits());
        let two = Mass::element(
            vec![DofRef::new(7, "x"), DofRef::new(7, "y")],
            vec![1.0, 2.0],
        );
        assert_eq!(
            two.mass().map(|m| m.diagonal().as_slice().to_vec()),
            Some(vec![1.0, 2.0])
        );
    }
}
