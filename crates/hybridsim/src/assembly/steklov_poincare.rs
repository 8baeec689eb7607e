//! The Steklov–Poincaré (interface) operator `H`, factorized once and solved every step.
//!
//! PG-α assembles it from the partitions' link operators, `H = Σ_X 𝔾^X ℚ^X`
//! (Abbiati et al. 2019, eq 38); the element-level LLM scheme from the element partitions'
//! `D^(i)⁻¹` columns, the Boolean matrices of the generalized interface DOFs and the
//! imposed motions (Hovmand et al. 2022, eq 9). Both then solve `H Λ = r` for the multipliers
//! of every step through this one type.

use nalgebra::{DMatrix, DVector, Dyn, LU};

/// `H` and its LU factors.
#[derive(Debug, Clone)]
pub struct SteklovPoincare {
    h: DMatrix<f64>,
    lu: LU<f64, Dyn, Dyn>,
}

impl SteklovPoincare {
    /// Factorize `h`; `None` when it is singular.
    pub fn new(h: DMatrix<f64>) -> Option<Self> {
        let lu = h.clone().lu();
        lu.is_invertible().then_some(Self { h, lu })
    }

    /// The operator `H`.
    pub fn h(&self) -> &DMatrix<f64> {
        &self.h
    }

    /// Number of multipliers.
    pub fn len(&self) -> usize {
        self.h.nrows()
    }

    /// Whether `H` is 0×0.
    pub fn is_empty(&self) -> bool {
        self.h.nrows() == 0
    }

    /// `x ← H⁻¹ x`. Allocation-free.
    pub fn solve_mut(&self, x: &mut DVector<f64>) {
        self.lu.solve_mut(x);
    }
}
