//! The symmetric rank-one update (Hung and El-Tawil 2009, eq 17).

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::{dot, norm, Skip, TangentUpdateRule, Workspace};
use nalgebra::DMatrix;

/// Relative size of `wᵀs` below which SR1 skips (Nocedal and Wright 2006, §6.2, r = 10⁻⁸).
pub const SR1_SKIP: f64 = 1e-8;

/// `K̂_{n+1} = K + w wᵀ/(wᵀs)`, `w = y − K s`: symmetric, not necessarily positive definite;
/// skipped when `|wᵀs| < r ‖s‖ ‖w‖` (r = [`SR1_SKIP`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sr1;

impl TangentUpdateRule for Sr1 {
    fn name(&self) -> &'static str {
        "sr1"
    }
    fn update(
        &self,
        k: &mut DMatrix<f64>,
        s: &[f64],
        y: &[f64],
        ws: &mut Workspace,
    ) -> Result<(), Skip> {
        ws.products(k, s);
        let n = s.len();
        for i in 0..n {
            ws.w[i] = y[i] - ws.ks[i];
        }
        let w = ws.w.as_slice();
        let ws_ = dot(w, s);
        if norm(w) == 0.0 {
            // K already satisfies the secant condition: nothing to change.
            return Ok(());
        }
        if ws_.abs() < SR1_SKIP * norm(s) * norm(w) || !ws_.is_finite() {
            return Err(Skip::Degenerate);
        }
        for i in 0..n {
            for j in 0..n {
                k[(i, j)] += w[i] * w[j] / ws_;
            }
        }
        Ok(())
    }
}
