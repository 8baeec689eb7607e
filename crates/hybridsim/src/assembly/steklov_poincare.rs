//! The Steklov–Poincaré (interface) operator `H`, factorized once and solved every step.
//!
//! PG-α assembles it from the partitions' link operators, `H = Σ_X 𝔾^X ℚ^X`
//! (Abbiati et al. 2019, eq 38); the element-level LLM scheme from the element partitions'
//! `D^(i)⁻¹` columns, the Boolean matrices of the generalized interface DOFs and the
//! imposed motions (Hovmand et al. 2022, eq 9). Both then solve `H Λ = r` for the multipliers
//! of every step through this one type.

use nalgebra::{DMatrix, DVector, Dyn, LU};

/// The LU factors of `H` (the assembled `H` stays with its owner, for summaries).
#[derive(Debug, Clone)]
pub struct SteklovPoincare {
    lu: LU<f64, Dyn, Dyn>,
}

impl SteklovPoincare {
    /// Factorize `h`; `None` when it is singular.
    pub fn new(h: &DMatrix<f64>) -> Option<Self> {
        let lu = h.clone().lu();
        lu.is_invertible().then_some(Self { lu })
    }

    /// `x ← H⁻¹ x`. Allocation-free.
    pub fn solve_mut(&self, x: &mut DVector<f64>) {
        self.lu.solve_mut(x);
    }
}
