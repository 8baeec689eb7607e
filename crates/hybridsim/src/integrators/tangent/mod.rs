//! Online estimation of the tangent stiffness of a tested structure from its measured
//! increments, for the full-operator method ([`super::Fom`]; Hung and El-Tawil 2009, eqs 13–17).
//!
//! After each step the predictor displacement increment `s = Δd̂ = d̂_{n+1} − d̂_n` and the
//! measured restoring-force increment `y = Δr = r_{n+1} − r_n` update the estimate
//! `K̂_n → K̂_{n+1}` by a quasi-Newton formula, one per file behind [`TangentUpdateRule`]:
//!
//! | rule | update |
//! |---|---|
//! | [`Bfgs`] | `K + y yᵀ/(yᵀs) − (K s)(K s)ᵀ/(sᵀK s)` |
//! | [`Dfp`] | `(I − y sᵀ/(yᵀs)) K (I − s yᵀ/(yᵀs)) + y yᵀ/(yᵀs)` |
//! | [`Broyden`] | `K + (y − K s) sᵀ/(sᵀs)` (not symmetric) |
//! | [`BroydenFamily`] | `(1 − ψ) K_BFGS + ψ K_DFP`, ψ = 0.5 by default |
//! | [`Sr1`] | `K + w wᵀ/(wᵀs)`, `w = y − K s` |
//!
//! Every one satisfies the secant condition `K̂_{n+1} s = y`; on one DOF all reduce to the
//! secant `Δr/Δd̂`. A formula whose denominator is about zero relative to the sizes of its
//! factors (`|yᵀs| ≤ ε ‖y‖ ‖s‖`, …, ε = [`DENOMINATOR_TOLERANCE`]) leaves `K̂` unchanged, as
//! does a BFGS/DFP/family update with `yᵀs ≤ 0` (the curvature condition that keeps them
//! positive definite; Nocedal and Wright 2006).
//!
//! [`TangentEstimator`] adds the two practical rules of Hung and El-Tawil (2009): (1) reset to
//! the initial estimate right after the displacement changes direction (a component of `s`
//! changes sign against the last used increment), and (2) skip increments smaller than a
//! threshold, recommended at 2–3 times the actuator's displacement resolution.

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

mod bfgs;
mod broyden;
mod broyden_family;
mod dfp;
mod sr1;

pub use bfgs::Bfgs;
pub use broyden::Broyden;
pub use broyden_family::BroydenFamily;
pub use dfp::Dfp;
pub use sr1::{Sr1, SR1_SKIP};

use crate::model::fom::TangentUpdate;
use nalgebra::{DMatrix, DVector};

/// Relative size below which a denominator counts as zero.
pub const DENOMINATOR_TOLERANCE: f64 = 1e-10;

/// Preallocated vectors of an update (so that updating allocates nothing).
#[derive(Debug, Clone)]
pub struct Workspace {
    /// `K s`.
    pub ks: DVector<f64>,
    /// `Kᵀ s`.
    pub kts: DVector<f64>,
    /// `y − K s` and other scratch.
    pub w: DVector<f64>,
}

impl Workspace {
    /// For `n` DOFs.
    pub fn new(n: usize) -> Self {
        Self {
            ks: DVector::zeros(n),
            kts: DVector::zeros(n),
            w: DVector::zeros(n),
        }
    }

    /// Fill `ks = K s` and `kts = Kᵀ s`.
    pub fn products(&mut self, k: &DMatrix<f64>, s: &[f64]) {
        let n = s.len();
        for i in 0..n {
            let (mut a, mut b) = (0.0, 0.0);
            for j in 0..n {
                a += k[(i, j)] * s[j];
                b += k[(j, i)] * s[j];
            }
            self.ks[i] = a;
            self.kts[i] = b;
        }
    }
}

/// Why an update left the estimate unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A denominator of the formula is about zero.
    Degenerate,
    /// `yᵀs ≤ 0`: the increments show no positive curvature (BFGS, DFP, family).
    Curvature,
}

/// One quasi-Newton formula `K̂_n → K̂_{n+1}` from `s = Δd̂` and `y = Δr`.
pub trait TangentUpdateRule: Send + std::fmt::Debug {
    /// Name as in model files.
    fn name(&self) -> &'static str;
    /// Update `k` in place, or leave it and say why. Must not allocate.
    fn update(
        &self,
        k: &mut DMatrix<f64>,
        s: &[f64],
        y: &[f64],
        ws: &mut Workspace,
    ) -> Result<(), Skip>;
}

/// The rule of a model file's `update`, `None` for `none` (a fixed estimate).
pub fn rule(update: TangentUpdate) -> Option<Box<dyn TangentUpdateRule>> {
    match update {
        TangentUpdate::Fixed => None,
        TangentUpdate::Bfgs => Some(Box::new(Bfgs)),
        TangentUpdate::Dfp => Some(Box::new(Dfp)),
        TangentUpdate::Broyden => Some(Box::new(Broyden)),
        TangentUpdate::BroydenFamily { psi } => Some(Box::new(BroydenFamily::new(psi))),
        TangentUpdate::Sr1 => Some(Box::new(Sr1)),
    }
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub(crate) fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `yᵀs`, refused when about zero or (with `positive`) not positive.
pub(crate) fn curvature(s: &[f64], y: &[f64], positive: bool) -> Result<f64, Skip> {
    let ys = dot(y, s);
    if positive && ys <= 0.0 {
        return Err(Skip::Curvature);
    }
    if ys.abs() <= DENOMINATOR_TOLERANCE * norm(y) * norm(s) || ys == 0.0 {
        return Err(Skip::Degenerate);
    }
    Ok(ys)
}

/// What one observation did to the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// Updated by the rule.
    Updated,
    /// Reset to the initial estimate at a displacement reversal (rule 1).
    Reset,
    /// The increment was below the threshold (rule 2).
    Small,
    /// The formula refused the increment.
    Skipped(Skip),
    /// No rule: the estimate is fixed.
    Fixed,
}

/// Counts of what the estimator did over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EstimatorCounts {
    /// Updates applied.
    pub updated: u64,
    /// Resets at reversals.
    pub reset: u64,
    /// Increments below the threshold.
    pub small: u64,
    /// Increments a formula refused.
    pub skipped: u64,
}

/// The estimated tangent stiffness `K̂` of a structure, updated from measured increments by a
/// [`TangentUpdateRule`] under the two practical rules (module docs).
#[derive(Debug)]
pub struct TangentEstimator {
    rule: Option<Box<dyn TangentUpdateRule>>,
    k: DMatrix<f64>,
    k0: DMatrix<f64>,
    last: DVector<f64>,
    have_last: bool,
    threshold: f64,
    reset_at_reversal: bool,
    ws: Workspace,
    counts: EstimatorCounts,
}

impl TangentEstimator {
    /// Start from the initial estimate `k0`; `rule` `None` keeps it fixed.
    pub fn new(
        k0: DMatrix<f64>,
        rule: Option<Box<dyn TangentUpdateRule>>,
        threshold: f64,
        reset_at_reversal: bool,
    ) -> Self {
        let n = k0.nrows();
        Self {
            rule,
            k: k0.clone(),
            k0,
            last: DVector::zeros(n),
            have_last: false,
            threshold: threshold.max(0.0),
            reset_at_reversal,
            ws: Workspace::new(n),
            counts: EstimatorCounts::default(),
        }
    }

    /// The current estimate `K̂`.
    pub fn stiffness(&self) -> &DMatrix<f64> {
        &self.k
    }

    /// The initial estimate.
    pub fn initial(&self) -> &DMatrix<f64> {
        &self.k0
    }

    /// The threshold of rule 2.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The rule's name (`none` for a fixed estimate).
    pub fn name(&self) -> &'static str {
        self.rule.as_ref().map_or("none", |r| r.name())
    }

    /// What the estimator did so far.
    pub fn counts(&self) -> EstimatorCounts {
        self.counts
    }

    /// Replace the estimate (imported states).
    pub fn set_stiffness(&mut self, k: &[f64]) {
        self.k.as_mut_slice().copy_from_slice(k);
    }

    /// Observe the increments `s = Δd̂`, `y = Δr` of one step. Allocation-free.
    pub fn observe(&mut self, s: &[f64], y: &[f64]) -> Observation {
        let Some(rule) = &self.rule else {
            return Observation::Fixed;
        };
        let size = s.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        if size < self.threshold || size == 0.0 {
            self.counts.small += 1;
            return Observation::Small;
        }
        let reversed = self.have_last
            && s.iter()
                .zip(self.last.iter())
                .any(|(a, b)| a * b < 0.0 && a.abs() >= self.threshold);
        self.last.as_mut_slice().copy_from_slice(s);
        self.have_last = true;
        if reversed && self.reset_at_reversal {
            self.k.copy_from(&self.k0);
            self.counts.reset += 1;
            return Observation::Reset;
        }
        match rule.update(&mut self.k, s, y, &mut self.ws) {
            Ok(()) => {
                self.counts.updated += 1;
                Observation::Updated
            }
            Err(why) => {
                self.counts.skipped += 1;
                Observation::Skipped(why)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize, seed: u64) -> DMatrix<f64> {
        let mut x = seed;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let a = DMatrix::from_fn(n, n, |_, _| next());
        &a * a.transpose() + DMatrix::identity(n, n) * n as f64
    }

    #[test]
    fn every_rule_satisfies_the_secant_condition() {
        let n = 4;
        let k_true = spd(n, 7);
        let s = [0.3, -0.1, 0.2, 0.05];
        let y = &k_true * DVector::from_column_slice(&s);
        for update in [
            TangentUpdate::Bfgs,
            TangentUpdate::Dfp,
            TangentUpdate::Broyden,
            TangentUpdate::BroydenFamily { psi: 0.5 },
            TangentUpdate::BroydenFamily { psi: 0.2 },
            TangentUpdate::Sr1,
        ] {
            let r = rule(update).expect("a rule");
            let mut k = spd(n, 11);
            let mut ws = Workspace::new(n);
            r.update(&mut k, &s, y.as_slice(), &mut ws).expect("update");
            let ks = &k * DVector::from_column_slice(&s);
            let err = (ks - &y).amax() / y.amax();
            assert!(err < 1e-12, "{}: secant error {err}", r.name());
        }
    }

    #[test]
    fn on_one_dof_every_rule_is_the_secant() {
        for update in [
            TangentUpdate::Bfgs,
            TangentUpdate::Dfp,
            TangentUpdate::Broyden,
            TangentUpdate::BroydenFamily { psi: 0.5 },
            TangentUpdate::Sr1,
        ] {
            let r = rule(update).expect("a rule");
            let mut k = DMatrix::from_element(1, 1, 5.0);
            let mut ws = Workspace::new(1);
            r.update(&mut k, &[0.2], &[0.7], &mut ws).expect("update");
            assert!(
                (k[(0, 0)] - 3.5).abs() < 1e-12,
                "{}: {}",
                r.name(),
                k[(0, 0)]
            );
        }
    }

    #[test]
    fn degenerate_increments_leave_the_estimate() {
        let mut ws = Workspace::new(2);
        let k0 = DMatrix::from_row_slice(2, 2, &[2.0, 0.0, 0.0, 1.0]);
        // y ⟂ s: no curvature.
        for update in [TangentUpdate::Bfgs, TangentUpdate::Dfp, TangentUpdate::Sr1] {
            let r = rule(update).unwrap();
            let mut k = k0.clone();
            // Sr1: w = y − K s = (0,1) − (2,0) = (−2, 1), wᵀs = −2 ≠ 0, so pick s with wᵀs = 0.
            let (s, y) = if update == TangentUpdate::Sr1 {
                ([1.0, 0.0], [2.0, 5.0])
            } else {
                ([1.0, 0.0], [0.0, 1.0])
            };
            assert!(r.update(&mut k, &s, &y, &mut ws).is_err(), "{}", r.name());
            assert_eq!(k, k0);
        }
        let r = rule(TangentUpdate::Broyden).unwrap();
        let mut k = k0.clone();
        assert!(r.update(&mut k, &[0.0, 0.0], &[1.0, 1.0], &mut ws).is_err());
    }

    #[test]
    fn practical_rules_reset_and_skip() {
        let k0 = DMatrix::from_element(1, 1, 10.0);
        let mut e = TangentEstimator::new(k0, rule(TangentUpdate::Bfgs), 1e-3, true);
        assert_eq!(e.observe(&[1e-4], &[1e-4]), Observation::Small);
        assert_eq!(e.observe(&[0.01], &[0.02]), Observation::Updated);
        assert!((e.stiffness()[(0, 0)] - 2.0).abs() < 1e-12);
        assert_eq!(e.observe(&[-0.01], &[-0.05]), Observation::Reset);
        assert_eq!(e.stiffness()[(0, 0)], 10.0);
        assert_eq!(e.observe(&[-0.01], &[-0.04]), Observation::Updated);
        assert!((e.stiffness()[(0, 0)] - 4.0).abs() < 1e-12);
        let c = e.counts();
        assert_eq!((c.updated, c.reset, c.small, c.skipped), (2, 1, 1, 0));
    }
}
