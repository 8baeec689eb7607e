//! Linear viscous dashpot between two nodes, or from a node to the ground.

use super::declare::{impl_declared, Declared, Param, Rule};
use super::spring::two_node_matrix;
use super::switching::{deformation, scatter_force};
use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;

/// Linear dashpot: `r = c(v1 − v2)` at node 1 and `−c(v1 − v2)` at node 2.
#[derive(Debug, Clone)]
pub struct Dashpot {
    dofs: super::PairDofs,
    /// Damping coefficient (force·time/length).
    pub damping: f64,
}

impl Declared for Dashpot {
    const KIND: &'static str = "dashpot";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("c", "F·T/L", Rule::NonNegative, |e| e.damping, |e, x| e.damping = x),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self::new(dofs, 0.0)
    }
}

impl Dashpot {
    /// Dashpot between `dofs[0]` and `dofs[1]` (or to ground with one DOF).
    pub fn new(dofs: Vec<DofRef>, damping: f64) -> Self {
        assert!(matches!(dofs.len(), 1 | 2));
        Self {
            dofs: dofs.into(),
            damping,
        }
    }
}

impl ElementLaw for Dashpot {
    fn law<T: Scalar>(&self, _u: &[T], v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        scatter_force(r, deformation(v) * self.damping);
    }
}

impl Element for Dashpot {
    impl_declared!();
    fn linear_damping(&self) -> Option<DMatrix<f64>> {
        Some(two_node_matrix(self.dofs.len(), self.damping))
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::zeros(self.dofs.len(), self.dofs.len()))
    }
}
