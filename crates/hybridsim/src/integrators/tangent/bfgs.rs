//! The BFGS update (Broyden–Fletcher–Goldfarb–Shanno; Hung and El-Tawil 2009, eq 13).

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::{curvature, dot, Skip, TangentUpdateRule, Workspace, DENOMINATOR_TOLERANCE};
use nalgebra::DMatrix;

/// `K̂_{n+1} = K + y yᵀ/(yᵀs) − (K s)(K s)ᵀ/(sᵀK s)`: symmetric, rank two, positive definite
/// while `yᵀs > 0` and `K` is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bfgs;

/// The BFGS increment `y yᵀ/(yᵀs) − (K s)(K s)ᵀ/(sᵀK s)` added `weight` times to `k`
/// (`ws.ks` must hold `K s`).
pub(super) fn add_bfgs(
    k: &mut DMatrix<f64>,
    s: &[f64],
    y: &[f64],
    ws: &Workspace,
    weight: f64,
) -> Result<(), Skip> {
    let ys = curvature(s, y, true)?;
    let ks = ws.ks.as_slice();
    let sks = dot(s, ks);
    if sks.abs() <= DENOMINATOR_TOLERANCE * k.amax() * dot(s, s) || sks == 0.0 {
        return Err(Skip::Degenerate);
    }
    let n = s.len();
    for i in 0..n {
        for j in 0..n {
            k[(i, j)] += weight * (y[i] * y[j] / ys - ks[i] * ks[j] / sks);
        }
    }
    Ok(())
}

impl TangentUpdateRule for Bfgs {
    fn name(&self) -> &'static str {
        "bfgs"
    }
    fn update(
        &self,
        k: &mut DMatrix<f64>,
        s: &[f64],
        y: &[f64],
        ws: &mut Workspace,
    ) -> Result<(), Skip> {
        ws.products(k, s);
        add_bfgs(k, s, y, ws, 1.0)
    }
}
