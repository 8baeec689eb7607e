//! Delay compensation by polynomial extrapolation: the command at tick `k` is the order-`p`
//! Lagrange polynomial through the desired displacements at ticks `k, k−s, …, k−p s` (node
//! spacing `s`), evaluated `τ̂/(s Δt^C)` node intervals ahead.
//!
//! With `s = 1` (the default) the Lagrange weights for a delay of many ticks are large (order 3,
//! four ticks ahead: 35, −84, 70, −20), and the kink of the target at every coarse step — where
//! the integrator's substep targets change slope — comes out of the compensator amplified as a
//! sawtooth at the coarse-step rate. With the nodes one coarse step apart (`s = ss`,
//! `node_spacing = "coarse_step"`), the nodes are the targets at the same phase of the last
//! `p + 1` coarse steps: when the substep targets interpolate the coarse-step targets `D_n`
//! linearly, the command at phase `θ` of step `n + 1` is `(1 − θ) E_n + θ E_{n+1}`, `E_n` the
//! extrapolation of the coarse-step sequence `D_n, D_{n−1}, …`: the coarse sequence
//! extrapolated and interpolated within the step, continuous across coarse steps, with
//! per-tick increments `(E_{n+1} − E_n)/ss`.
//!
//! Start-up (before `p s + 1` targets have been seen): the target itself (`passthrough`, the
//! default and the earlier behaviour), the highest order the targets seen support
//! (`hold_order`), or the full order with the history at the rest position (`rest_history`).

use crate::model::lab::{DelayCompensation, NodeSpacing, StartupPolicy};

/// Lagrange weights of the order-`p` extrapolation through nodes `0, −1, …, −p` evaluated at
/// `m` (newest first).
fn lagrange_weights(p: usize, m: f64) -> [f64; 4] {
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
    weights
}

/// Polynomial-extrapolation delay compensator of one actuator.
#[derive(Debug, Clone)]
pub struct DelayCompensator {
    /// Weights per order `0..=order` (row `q`: the order-`q` extrapolation).
    weights: [[f64; 4]; 4],
    order: usize,
    spacing: usize,
    startup: StartupPolicy,
    /// Ring of the last `order · spacing + 1` targets.
    history: Vec<f64>,
    head: usize,
    /// Targets pushed since the reset.
    seen: usize,
}

impl DelayCompensator {
    /// Weights of the extrapolation `τ̂/Δt^C` ticks ahead; a `coarse_step` spacing is taken as
    /// one tick (use [`DelayCompensator::with_subcycles`]).
    pub fn new(c: &DelayCompensation, dt_c: f64) -> Self {
        Self::with_subcycles(c, dt_c, 1)
    }

    /// As [`DelayCompensator::new`], with `ss` ticks per coarse step.
    pub fn with_subcycles(c: &DelayCompensation, dt_c: f64, ss: usize) -> Self {
        let spacing = match c.node_spacing {
            NodeSpacing::Ticks(s) => s.max(1),
            NodeSpacing::CoarseSteps(n) => n.max(1) * ss.max(1),
        };
        let m = c.estimate / (spacing as f64 * dt_c);
        let p = c.order.min(3);
        let mut weights = [[0.0; 4]; 4];
        for (q, w) in weights.iter_mut().enumerate().take(p + 1) {
            *w = lagrange_weights(q, m);
        }
        Self {
            weights,
            order: p,
            spacing,
            startup: c.startup,
            history: vec![0.0; p * spacing + 1],
            head: 0,
            seen: 0,
        }
    }

    /// Fill the history with the rest position.
    pub fn reset(&mut self, x0: f64) {
        self.history.iter_mut().for_each(|h| *h = x0);
        self.head = 0;
        self.seen = 0;
    }

    /// The target `i` node intervals back.
    fn node(&self, i: usize) -> f64 {
        let n = self.history.len();
        self.history[(self.head + n - (i * self.spacing) % n) % n]
    }

    /// Push the desired displacement of this tick and return the extrapolated command.
    pub fn apply(&mut self, d_des: f64) -> f64 {
        let n = self.history.len();
        self.head = (self.head + 1) % n;
        self.history[self.head] = d_des;
        let seen = self.seen;
        self.seen = self.seen.saturating_add(1);
        let q = match self.startup {
            StartupPolicy::Passthrough => {
                // The target until `p s + 1` targets have been seen: an extrapolation through
                // the rest history would amplify the first increment (start transient).
                if seen <= self.order * self.spacing {
                    return d_des;
                }
                self.order
            }
            StartupPolicy::HoldOrder => self.order.min(seen / self.spacing),
            StartupPolicy::RestHistory => self.order,
        };
        let w = &self.weights[q];
        let mut out = 0.0;
        for (i, wi) in w.iter().enumerate().take(q + 1) {
            out += wi * self.node(i);
        }
        out
    }

    /// The extrapolation weights of the full order (newest node first).
    pub fn weights(&self) -> &[f64] {
        &self.weights[self.order][..=self.order]
    }

    /// Node spacing in ticks.
    pub fn spacing(&self) -> usize {
        self.spacing
    }
}
