//! Adaptive time series (ATS) compensation, Chae, Kazemibidokhti & Ricles (2013), "Adaptive
//! time series compensator for delay compensation of servo-hydraulic actuator systems for
//! real-time hybrid simulation", Earthquake Eng. Struct. Dyn. 42:1697–1715.
//!
//! The command is a linear combination of the target and its derivatives,
//!
//! `u_k = a0 x_k + a1 ẋ_k + a2 ẍ_k`,
//!
//! and `(a0, a1, a2)` are identified online from what the actuator did: over a sliding window
//! of the last `q` ticks the command sent `u_i` is regressed, by least squares, on the measured
//! displacement `x^m_i` and its derivatives — the inverse of the actuator seen through the
//! data. For an actuator with amplitude factor `g` and delay `τ`, `x^m(t) = g u(t − τ)`, so
//! `u(t) = x^m(t + τ)/g ≈ (x^m + τ ẋ^m + τ²/2 ẍ^m)/g`: `a0 = 1/g` is the amplitude factor of the
//! compensation and `τ = a1/a0` the delay estimate (Chae et al. 2013). Each coefficient
//! is then clamped to its bounds (the paper bounds the coefficients; clamping the unconstrained
//! solution is this implementation's simplification).
//!
//! Derivatives are backward differences over `h` ticks (`difference_spacing`), of the measured
//! displacement in the regression and of the target in the command, so that the identified
//! filter is applied exactly as it was fitted: with `w = (1 − z^{−h})/(h Δt)`,
//! `z^D = 1 + D Δt w + D(D+h)/2 Δt² w² + …`, and for a pure delay of `D` ticks the fit gives
//! `a1/a0 = D Δt` in the low-frequency limit. One tick is the natural spacing for smooth
//! targets; a target that changes slope at every coarse step (the substeps of a partitioned
//! integrator) has second differences that spike there, which the least squares then weighs
//! most — differences over one coarse step (`h = ss`) see a smooth sequence.
//!
//! Numerics: the regressors are scaled to unit norm and the normal equations regularized
//! slightly towards the current coefficients (ridge `μ = 10⁻⁶` on the correlation matrix), so
//! that a direction the window does not excite (a single sinusoid makes `x` and `ẍ` collinear)
//! keeps its value instead of jumping; no update is made while the target's RMS velocity over
//! the window is below `min_velocity` (at rest there is nothing to identify). Measurement noise
//! biases the fit (the second difference amplifies it by `4/Δt²`): filter a noisy channel first
//! (`signals.measurement`).
//!
//! Every buffer is allocated at construction; a tick allocates nothing.

use crate::model::lab::AdaptiveCompensation;

/// ATS compensator of one actuator.
#[derive(Debug, Clone)]
pub struct AdaptiveTimeSeries {
    settings: AdaptiveCompensation,
    dt: f64,
    coef: [f64; 3],
    /// Rings (length `window + 2`) of the measured displacement, the command sent and the
    /// target velocity.
    measured: Vec<f64>,
    command: Vec<f64>,
    target_velocity: Vec<f64>,
    head: usize,
    count: usize,
    since_update: usize,
    /// Ring (length `2h + 1`) of the last targets.
    target: Vec<f64>,
    target_head: usize,
    /// Difference spacing h (ticks).
    h: usize,
    updates: u64,
}

impl AdaptiveTimeSeries {
    /// Built at the controller tick `dt_c`.
    pub fn new(s: &AdaptiveCompensation, dt_c: f64) -> Self {
        let h = s.difference_spacing.max(1);
        let n = s.window.max(3) + 2 * h;
        Self {
            target: vec![0.0; 2 * h + 1],
            target_head: 0,
            h,
            settings: *s,
            dt: dt_c,
            coef: s.initial,
            measured: vec![0.0; n],
            command: vec![0.0; n],
            target_velocity: vec![0.0; n],
            head: 0,
            count: 0,
            since_update: 0,
            updates: 0,
        }
    }

    /// The value `back` entries before the newest of `ring` (newest at `head`).
    fn back(ring: &[f64], head: usize, back: usize) -> f64 {
        let n = ring.len();
        ring[(head + n - back % n) % n]
    }

    /// Backward first and second differences over `h` ticks of the newest entry of `ring`,
    /// `offset` entries back.
    fn differences(&self, ring: &[f64], head: usize, offset: usize) -> [f64; 3] {
        let h = self.h;
        let hd = h as f64 * self.dt;
        let x0 = Self::back(ring, head, offset);
        let x1 = Self::back(ring, head, offset + h);
        let x2 = Self::back(ring, head, offset + 2 * h);
        [x0, (x0 - x1) / hd, (x0 - 2.0 * x1 + x2) / (hd * hd)]
    }

    /// At rest at `x0`: the initial coefficients, an empty window.
    pub fn reset(&mut self, x0: f64) {
        self.coef = self.settings.initial;
        self.target.iter_mut().for_each(|t| *t = x0);
        self.target_head = 0;
        self.head = 0;
        self.count = 0;
        self.since_update = 0;
        self.updates = 0;
    }

    /// The command for the target `x` of this tick.
    pub fn apply(&mut self, x: f64) -> f64 {
        self.target_head = (self.target_head + 1) % self.target.len();
        self.target[self.target_head] = x;
        let [x0, v, a] = self.differences(&self.target, self.target_head, 0);
        self.coef[0] * x0 + self.coef[1] * v + self.coef[2] * a
    }

    /// Record the command `u` sent this tick and the displacement `x_m` measured after it;
    /// every `update_every` ticks (once the window is full) identify the coefficients.
    pub fn observe(&mut self, u: f64, x_m: f64) {
        let n = self.measured.len();
        self.head = (self.head + 1) % n;
        self.measured[self.head] = x_m;
        self.command[self.head] = u;
        self.target_velocity[self.head] = self.differences(&self.target, self.target_head, 0)[1];
        self.count = self.count.saturating_add(1);
        self.since_update += 1;
        if self.since_update >= self.settings.update_every.max(1) && self.count >= n {
            self.since_update = 0;
            self.identify();
        }
    }

    fn identify(&mut self) {
        let n = self.measured.len();
        let q = n - 2 * self.h;
        let at = |ring: &[f64], back: usize| Self::back(ring, self.head, back);
        let mut nn = [[0.0f64; 3]; 3];
        let mut b = [0.0f64; 3];
        let mut vv = 0.0;
        for i in 0..q {
            let phi = self.differences(&self.measured, self.head, i);
            let u = at(&self.command, i);
            for r in 0..3 {
                b[r] += phi[r] * u;
                for c in 0..3 {
                    nn[r][c] += phi[r] * phi[c];
                }
            }
            let v = at(&self.target_velocity, i);
            vv += v * v;
        }
        if (vv / q as f64).sqrt() < self.settings.min_velocity {
            return;
        }
        let scale = [nn[0][0].sqrt(), nn[1][1].sqrt(), nn[2][2].sqrt()];
        if scale.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return;
        }
        // Correlation matrix and the ridge towards the current coefficients.
        const MU: f64 = 1e-6;
        let mut m = [[0.0f64; 3]; 3];
        let mut rhs = [0.0f64; 3];
        for r in 0..3 {
            for c in 0..3 {
                m[r][c] = nn[r][c] / (scale[r] * scale[c]);
            }
            m[r][r] += MU;
            rhs[r] = b[r] / scale[r] + MU * self.coef[r] * scale[r];
        }
        let Some(sol) = solve3(m, rhs) else { return };
        let mut next = [0.0; 3];
        for r in 0..3 {
            next[r] = (sol[r] / scale[r]).clamp(self.settings.lower[r], self.settings.upper[r]);
        }
        if next.iter().all(|x| x.is_finite()) {
            self.coef = next;
            self.updates += 1;
        }
    }

    /// The current coefficients `(a0, a1, a2)`.
    pub fn coefficients(&self) -> [f64; 3] {
        self.coef
    }

    /// The estimated delay `a1/a0` (s, wall clock).
    pub fn delay(&self) -> f64 {
        self.coef[1] / self.coef[0]
    }

    /// The amplitude factor `a0` (command per unit measured displacement).
    pub fn amplitude_factor(&self) -> f64 {
        self.coef[0]
    }

    /// Identifications made since the reset.
    pub fn updates(&self) -> u64 {
        self.updates
    }
}

/// Solve the 3 × 3 system `m x = rhs` by Gaussian elimination with partial pivoting; `None`
/// when singular.
#[allow(clippy::needless_range_loop)] // rows and columns of a 3 × 3 matrix
fn solve3(mut m: [[f64; 3]; 3], mut rhs: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let piv = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[piv][col].is_nan() || m[piv][col].abs() <= 1e-300 {
            return None;
        }
        m.swap(col, piv);
        rhs.swap(col, piv);
        for r in col + 1..3 {
            let f = m[r][col] / m[col][col];
            for c in col..3 {
                m[r][c] -= f * m[col][c];
            }
            rhs[r] -= f * rhs[col];
        }
    }
    let mut x = [0.0; 3];
    for r in (0..3).rev() {
        let mut s = rhs[r];
        for c in r + 1..3 {
            s -= m[r][c] * x[c];
        }
        x[r] = s / m[r][r];
    }
    Some(x)
}
