//! The DFP update (Davidon–Fletcher–Powell; Hung and El-Tawil 2009, eq 14).

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::{curvature, dot, Skip, TangentUpdateRule, Workspace};
use nalgebra::DMatrix;

/// `K̂_{n+1} = (I − y sᵀ/ρ) K (I − s yᵀ/ρ) + y yᵀ/ρ`, `ρ = yᵀs`, expanded as
/// `K − (y (Kᵀs)ᵀ + (K s) yᵀ)/ρ + (sᵀK s/ρ² + 1/ρ) y yᵀ`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dfp;

/// The DFP increment added `weight` times to `k` (`ws.ks`, `ws.kts` must hold `K s`, `Kᵀ s`).
pub(super) fn add_dfp(
    k: &mut DMatrix<f64>,
    s: &[f64],
    y: &[f64],
    ws: &Workspace,
    weight: f64,
) -> Result<(), Skip> {
    let rho = curvature(s, y, true)?;
    let (ks, kts) = (ws.ks.as_slice(), ws.kts.as_slice());
    let c = dot(s, ks) / (rho * rho) + 1.0 / rho;
    let n = s.len();
    for i in 0..n {
        for j in 0..n {
            k[(i, j)] += weight * (c * y[i] * y[j] - (y[i] * kts[j] + ks[i] * y[j]) / rho);
        }
    }
    Ok(())
}

impl TangentUpdateRule for Dfp {
    fn name(&self) -> &'static str {
        "dfp"
    }
    fn update(
        &self,
        k: &mut DMatrix<f64>,
        s: &[f64],
        y: &[f64],
        ws: &mut Workspace,
    ) -> Result<(), Skip> {
        ws.products(k, s);
        add_dfp(k, s, y, ws, 1.0)
    }
}
