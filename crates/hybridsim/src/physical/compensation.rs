//! Actuator compensation, applied to the desired actuator displacement before the safety check:
//!
//! - delay compensation by polynomial extrapolation: the command at tick `k` is the order-`p`
//!   Lagrange polynomial through the desired displacements of ticks `k, k−1, …, k−p`, evaluated
//!   `τ̂/Δt^C` ticks ahead (the classical polynomial-extrapolation compensator of real-time
//!   hybrid testing; §5.2 of Bursi et al. 2011 uses it against a ≈ 20 ms delay);
//! - loading-system compliance compensation, Abbiati et al. (2020), eq 15:
//!   `d_cmd = d_des + r_fbk/k`, with `k = k⁺` for `r_fbk ≥ 0` and `k⁻` otherwise
//!   (ALGORITHMS.md A18; units explicit, E29).

use crate::model::lab::{ComplianceCompensation, DelayCompensation};

/// Polynomial-extrapolation delay compensator of one actuator.
#[derive(Debug, Clone)]
pub struct DelayCompensator {
    weights: [f64; 4],
    order: usize,
    history: [f64; 4],
    filled: usize,
}

impl DelayCompensator {
    /// Weights of the extrapolation `τ̂/Δt^C` ticks ahead.
    pub fn new(c: &DelayCompensation, dt_c: f64) -> Self {
        let m = c.estimate / dt_c;
        let p = c.order.min(3);
        let mut weights = [0.0; 4];
        for (i, w) in weights.iter_mut().enumerate().take(p + 1) {
            let xi = -(i as f64);
            let mut l = 1.0;
            for j in 0..=p {
                if j != i {
                    let xj = -(j as f64);
                    l *= (m - xj) / (xi - xj);
                }
            }
            *w = l;
        }
        Self {
            weights,
            order: p,
            history: [0.0; 4],
            filled: 0,
        }
    }

    /// Fill the history with the rest position.
    pub fn reset(&mut self, x0: f64) {
        self.history = [x0; 4];
        self.filled = 0;
    }

    /// Push the desired displacement of this tick and return the extrapolated command. Until
    /// `order + 1` desired values have been seen the command is the desired value itself: an
    /// extrapolation through the rest history would amplify the first increment by the large
    /// Lagrange weights (start transient).
    pub fn apply(&mut self, d_des: f64) -> f64 {
        self.history.rotate_right(1);
        self.history[0] = d_des;
        if self.filled <= self.order {
            self.filled += 1;
            return d_des;
        }
        let mut out = 0.0;
        for i in 0..=self.order {
            out += self.weights[i] * self.history[i];
        }
        out
    }

    /// The extrapolation weights (newest first).
    pub fn weights(&self) -> &[f64] {
        &self.weights[..=self.order]
    }
}

/// Compliance compensation (Abbiati et al. 2020, eq 15).
pub fn compliance(c: &ComplianceCompensation, d_des: f64, r_fbk: f64) -> f64 {
    let k = if r_fbk >= 0.0 {
        c.k_positive
    } else {
        c.k_negative
    };
    d_des + r_fbk / k
}
