//! Linear viscous dashpot between two nodes, or from a node to the ground.

use super::spring::two_node_matrix;
use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;

/// Linear dashpot: `r = c(v1 − v2)` at node 1 and `−c(v1 − v2)` at node 2.
#[derive(Debug, Clone)]
pub struct Dashpot {
    dofs: Vec<DofRef>,
    /// Damping coefficient (force·time/length).
    pub damping: f64,
}

impl Dashpot {
    /// Dashpot between `dofs[0]` and `dofs[1]` (or to ground with one DOF).
    pub fn new(dofs: Vec<DofRef>, damping: f64) -> Self {
        assert!(matches!(dofs.len(), 1 | 2));
        Self { dofs, damping }
    }
}

impl ElementLaw for Dashpot {
    fn law<T: Scalar>(&self, _u: &[T], v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        let d = if v.len() == 2 { v[0] - v[1] } else { v[0] };
        let f = d * self.damping;
        r[0] = f;
        if r.len() == 2 {
            r[1] = -f;
        }
    }
}

impl Element for Dashpot {
    fn kind(&self) -> &'static str {
        "dashpot"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn linear_damping(&self) -> Option<DMatrix<f64>> {
        Some(two_node_matrix(self.dofs.len(), self.damping))
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::zeros(self.dofs.len(), self.dofs.len()))
    }
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        vec![("c", self.damping)]
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        let rules = [("c", super::switching::Rule::NonNegative)];
        super::switching::settable(self.kind(), &rules, name, value)?;
        self.damping = value;
        Ok(())
    }
    fn deformation(&self, u: &[f64]) -> Option<f64> {
        Some(super::switching::deformation(u))
    }
    crate::impl_element_evaluation!();
}
