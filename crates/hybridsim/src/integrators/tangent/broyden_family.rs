//! The Broyden family between BFGS and DFP (Hung and El-Tawil 2009, eq 16).

use super::bfgs::add_bfgs;
use super::dfp::add_dfp;
use super::{Skip, TangentUpdateRule, Workspace};
use nalgebra::DMatrix;

/// `K̂_{n+1} = (1 − ψ) K_BFGS + ψ K_DFP` (ψ = 0: BFGS, ψ = 1: DFP; 0.5 by default).
#[derive(Debug, Clone, Copy)]
pub struct BroydenFamily {
    psi: f64,
}

impl BroydenFamily {
    /// With weight ψ ∈ [0, 1] on DFP.
    pub fn new(psi: f64) -> Self {
        Self { psi }
    }

    /// ψ.
    pub fn psi(&self) -> f64 {
        self.psi
    }
}

impl TangentUpdateRule for BroydenFamily {
    fn name(&self) -> &'static str {
        "broyden-family"
    }
    fn update(
        &self,
        k: &mut DMatrix<f64>,
        s: &[f64],
        y: &[f64],
        ws: &mut Workspace,
    ) -> Result<(), Skip> {
        ws.products(k, s);
        // Both increments are computed from the same K s before `k` changes: check the
        // BFGS denominators first on a copy-free dry run by applying with weight 0.
        add_bfgs(k, s, y, ws, 0.0)?;
        add_dfp(k, s, y, ws, 0.0)?;
        add_bfgs(k, s, y, ws, 1.0 - self.psi)?;
        add_dfp(k, s, y, ws, self.psi)
    }
}
