//! Linear spring between two nodes, or from a node to the ground.

use super::declare::{impl_declared, Declared, Param, Rule};
use super::switching::{deformation, scatter_force};
use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;

/// Linear spring on one DOF direction: `r = k(u1 − u2)` at node 1 and `−k(u1 − u2)` at node 2
/// (resisting forces, OpenSees convention). Node-to-ground form: `r = k u1`.
#[derive(Debug, Clone)]
pub struct Spring {
    dofs: super::PairDofs,
    /// Stiffness (force/length).
    pub stiffness: f64,
}

impl Declared for Spring {
    const KIND: &'static str = "spring";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("k", "F/L", Rule::NonNegative, |e| e.stiffness, |e, x| e.stiffness = x),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self::new(dofs, 0.0)
    }
}

impl Spring {
    /// Spring between `dofs[0]` and `dofs[1]` (or to ground with one DOF).
    pub fn new(dofs: Vec<DofRef>, stiffness: f64) -> Self {
        assert!(matches!(dofs.len(), 1 | 2));
        Self {
            dofs: dofs.into(),
            stiffness,
        }
    }
}

impl ElementLaw for Spring {
    fn law<T: Scalar>(&self, u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        scatter_force(r, deformation(u) * self.stiffness);
    }
}

/// `[[1, −1], [−1, 1]]·x` (two nodes) or `[x]` (to ground).
pub(crate) fn two_node_matrix(n: usize, x: f64) -> DMatrix<f64> {
    if n == 1 {
        DMatrix::from_element(1, 1, x)
    } else {
        DMatrix::from_row_slice(2, 2, &[x, -x, -x, x])
    }
}

impl Element for Spring {
    impl_declared!();
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(two_node_matrix(self.dofs.len(), self.stiffness))
    }
    fn rayleigh_by_default(&self) -> bool {
        true
    }
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        Some(0.5 * self.stiffness * d * d)
    }
}
