//! Lumped nodal mass.

use super::{DofRef, Element, ElementLaw, Scalar, SmallList};
use nalgebra::DMatrix;

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
