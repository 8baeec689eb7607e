//! Nonlinear elastic (Duffing) spring.

use super::declare::{impl_declared, Declared, Param, Rule};
use super::switching::{deformation, scatter_force};
use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;

/// Duffing spring `r = k d + k3 d³` with `d = u1 − u2` (or `u1` to ground). Conservative; its
/// initial tangent is `k`. Used to show that one constant-D correction is first order on
/// nonlinear problems and `corrections = 2` restores second order (ALGORITHMS.md E38).
#[derive(Debug, Clone)]
pub struct CubicSpring {
    dofs: super::PairDofs,
    /// Linear stiffness (force/length).
    pub stiffness: f64,
    /// Cubic coefficient (force/length³).
    pub cubic: f64,
}

impl Declared for CubicSpring {
    const KIND: &'static str = "cubic_spring";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("k", "F/L", Rule::NonNegative, |e| e.stiffness, |e, x| e.stiffness = x),
        Param::new("k3", "F/L³", Rule::Finite, |e| e.cubic, |e, x| e.cubic = x),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self::new(dofs, 0.0, 0.0)
    }
}

impl CubicSpring {
    /// Spring between `dofs[0]` and `dofs[1]` (or to ground with one DOF).
    pub fn new(dofs: Vec<DofRef>, stiffness: f64, cubic: f64) -> Self {
        assert!(matches!(dofs.len(), 1 | 2));
        Self {
            dofs: dofs.into(),
            stiffness,
            cubic,
        }
    }
}

impl ElementLaw for CubicSpring {
    fn law<T: Scalar>(&self, u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        let d = deformation(u);
        scatter_force(r, d * self.stiffness + d * d * d * self.cubic);
    }
}

impl Element for CubicSpring {
    impl_declared!();
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        Some(0.5 * self.stiffness * d * d + 0.25 * self.cubic * d.powi(4))
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        None
    }
}
