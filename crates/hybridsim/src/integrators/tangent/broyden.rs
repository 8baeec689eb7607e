//! Broyden's rank-one update (Broyden 1965; Hung and El-Tawil 2009, eq 15).

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::{dot, norm, Skip, TangentUpdateRule, Workspace};
use nalgebra::DMatrix;

/// `K̂_{n+1} = K + (y − K s) sᵀ/(sᵀs)`: the least change (Frobenius norm) that satisfies the
/// secant condition; not symmetric in general.
#[derive(Debug, Clone, Copy, Default)]
pub struct Broyden;

impl TangentUpdateRule for Broyden {
    fn name(&self) -> &'static str {
        "broyden"
    }
    fn update(
        &self,
        k: &mut DMatrix<f64>,
        s: &[f64],
        y: &[f64],
        ws: &mut Workspace,
    ) -> Result<(), Skip> {
        let ss = dot(s, s);
        if ss == 0.0 || !ss.is_finite() || norm(y).is_nan() {
            return Err(Skip::Degenerate);
        }
        ws.products(k, s);
        let n = s.len();
        for i in 0..n {
            ws.w[i] = y[i] - ws.ks[i];
        }
        for i in 0..n {
            for j in 0..n {
                k[(i, j)] += ws.w[i] * s[j] / ss;
            }
        }
        Ok(())
    }
}
