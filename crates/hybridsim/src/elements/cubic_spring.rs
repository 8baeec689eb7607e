//! Nonlinear elastic (Duffing) spring.

use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;

/// Duffing spring `r = k d + k3 d³` with `d = u1 − u2` (or `u1` to ground). Conservative; its
/// initial tangent is `k`. Used to show that one constant-D correction is first order on
/// nonlinear problems and `corrections = 2` restores second order (ALGORITHMS.md E38).
#[derive(Debug, Clone)]
pub struct CubicSpring {
    dofs: Vec<DofRef>,
    /// Linear stiffness (force/length).
    pub stiffness: f64,
    /// Cubic coefficient (force/length³).
    pub cubic: f64,
}

impl CubicSpring {
    /// Spring between `dofs[0]` and `dofs[1]` (or to ground with one DOF).
    pub fn new(dofs: Vec<DofRef>, stiffness: f64, cubic: f64) -> Self {
        assert!(matches!(dofs.len(), 1 | 2));
        Self {
            dofs,
            stiffness,
            cubic,
        }
    }
}

impl ElementLaw for CubicSpring {
    fn law<T: Scalar>(&self, u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        let d = if u.len() == 2 { u[0] - u[1] } else { u[0] };
        let f = d * self.stiffness + d * d * d * self.cubic;
        r[0] = f;
        if r.len() == 2 {
            r[1] = -f;
        }
    }
}

impl Element for CubicSpring {
    fn kind(&self) -> &'static str {
        "cubic_spring"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        let d = if u.len() == 2 { u[0] - u[1] } else { u[0] };
        Some(0.5 * self.stiffness * d * d + 0.25 * self.cubic * d.powi(4))
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        None
    }
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        vec![("k", self.stiffness), ("k3", self.cubic)]
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        use super::switching::Rule;
        let rules = [("k", Rule::NonNegative), ("k3", Rule::Finite)];
        match super::switching::settable(self.kind(), &rules, name, value)? {
            0 => self.stiffness = value,
            _ => self.cubic = value,
        }
        Ok(())
    }
    fn deformation(&self, u: &[f64]) -> Option<f64> {
        Some(super::switching::deformation(u))
    }
    crate::impl_element_evaluation!();
}
