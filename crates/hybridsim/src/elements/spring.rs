//! Linear spring between two nodes, or from a node to the ground.

use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;

/// Linear spring on one DOF direction: `r = k(u1 − u2)` at node 1 and `−k(u1 − u2)` at node 2
/// (resisting forces, OpenSees convention). Node-to-ground form: `r = k u1`.
#[derive(Debug, Clone)]
pub struct Spring {
    dofs: Vec<DofRef>,
    /// Stiffness (force/length).
    pub stiffness: f64,
}

impl Spring {
    /// Spring between `dofs[0]` and `dofs[1]` (or to ground with one DOF).
    pub fn new(dofs: Vec<DofRef>, stiffness: f64) -> Self {
        assert!(matches!(dofs.len(), 1 | 2));
        Self { dofs, stiffness }
    }
}

impl ElementLaw for Spring {
    fn law<T: Scalar>(&self, u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        let d = if u.len() == 2 { u[0] - u[1] } else { u[0] };
        let f = d * self.stiffness;
        r[0] = f;
        if r.len() == 2 {
            r[1] = -f;
        }
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
    fn kind(&self) -> &'static str {
        "spring"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(two_node_matrix(self.dofs.len(), self.stiffness))
    }
    fn rayleigh_by_default(&self) -> bool {
        true
    }
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        let d = if u.len() == 2 { u[0] - u[1] } else { u[0] };
        Some(0.5 * self.stiffness * d * d)
    }
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        vec![("k", self.stiffness)]
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        let rules = [("k", super::switching::Rule::NonNegative)];
        super::switching::settable(self.kind(), &rules, name, value)?;
        self.stiffness = value;
        Ok(())
    }
    fn deformation(&self, u: &[f64]) -> Option<f64> {
        Some(super::switching::deformation(u))
    }
    crate::impl_element_evaluation!();
}
