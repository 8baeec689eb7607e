//! Unscented Kalman filter over an augmented state (Abbiati et al. 2020, §2.1, eqs 5–14;
//! ALGORITHMS.md A12 with errata E25–E27).
//!
//! The state `X = [Y; θ]` (length `L`) joins the identification model's state `Y` and the
//! parameters `θ`, which follow a random walk: `X_{n+1} = f(X_n) + v_n`, `v ~ N(0, V)`. The
//! measurement is a Boolean selection of state components, `Z_{n+1} = H X_{n+1} + w`,
//! `w ~ N(0, W)` (the predicted interface force is one of the model's states).
//!
//! One [`UnscentedKalmanFilter::step`] per coarse step:
//! 1. sigma points `χ_0 = X̂_n`, `χ_l = X̂_n + c_l`, `χ_{L+l} = X̂_n − c_l` (`l = 1..L`), with `c_l`
//!    the columns of the lower Cholesky factor of `(L + λ) P̂_n` (eq 9; the paper numbers the
//!    central point last, the weights do not depend on the order);
//! 2. each point propagated by the transition `f` (eq 10);
//! 3. prediction `X̂⁻ = Σ ω^m_l χ_l`, `P̂⁻ = Σ ω^c_l (χ_l − X̂⁻)(χ_l − X̂⁻)ᵀ + V` (eq 11);
//! 4. gain `K = P̂⁻Hᵀ (H P̂⁻ Hᵀ + W)⁻¹` (eq 13);
//! 5. correction `X̂_{n+1} = X̂⁻ + K (Z_{n+1} − H X̂⁻)` (eq 14a with the predicted mean, E25) and
//!    the covariance in Joseph form `P̂ = (I − KH) P̂⁻ (I − KH)ᵀ + K W Kᵀ`, symmetrised — equal to
//!    the paper's `P̂⁻ − K H P̂⁻` in exact arithmetic, but symmetric positive semi-definite by
//!    construction in floating point.
//!
//! Weights: the scaled unscented transform (Julier 2002; Wan and van der Merwe 2000),
//! `λ = α²(L + κ) − L`, `ω^m_0 = λ/(L + λ)`, `ω^c_0 = ω^m_0 + 1 − α² + β`, all others
//! `1/(2(L + λ))`. The paper's choice `L + κ = 3` (eq 12) is [`SigmaPoints::Paper`]
//! (`α = 1`, `β = 0`, `κ = 3 − L`); its central weight is negative for `L > 3` (E27), which is
//! why the scaled form is offered too.
//!
//! Hard real time: the `2L + 1` sigma points and every work matrix are allocated once in
//! [`UnscentedKalmanFilter::new`]; a step does not allocate. A Cholesky factorisation that
//! fails (a covariance that lost positive definiteness), a non-finite propagated point or a
//! transition that reports failure *trips* the filter: the step is abandoned, the last good
//! estimate and covariance are kept and every later step is a no-op
//! ([`UnscentedKalmanFilter::trip`] says why). Updating is then off; nothing panics.

use nalgebra::{DMatrix, DVector};

/// How the sigma points are spread and weighted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SigmaPoints {
    /// Abbiati et al. 2020, eq 12: `L + κ = 3` (`α = 1`, `β = 0`, `κ = 3 − L`).
    Paper,
    /// The scaled unscented transform with spread `α`, prior-knowledge `β` (2 for Gaussian
    /// priors) and secondary scaling `κ`.
    Scaled {
        /// Spread of the points around the mean (`0 < α ≤ 1`, typically small).
        alpha: f64,
        /// Prior knowledge of the distribution (2 is optimal for a Gaussian).
        beta: f64,
        /// Secondary scaling (0 or `3 − L`).
        kappa: f64,
    },
}

impl SigmaPoints {
    /// `(α, β, κ)` for a state of length `l`.
    pub fn alpha_beta_kappa(self, l: usize) -> (f64, f64, f64) {
        match self {
            SigmaPoints::Paper => (1.0, 0.0, 3.0 - l as f64),
            SigmaPoints::Scaled { alpha, beta, kappa } => (alpha, beta, kappa),
        }
    }
}

/// Why a filter stopped updating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trip {
    /// `(L + λ) P̂` is not positive definite: no sigma points.
    CovarianceNotPositiveDefinite,
    /// `H P̂⁻ Hᵀ + W` is not positive definite: no gain.
    InnovationNotPositiveDefinite,
    /// The transition reported a failure for a sigma point (e.g. a parameter its model rejects).
    TransitionFailed,
    /// A propagated sigma point, the measurement or the new estimate is not finite.
    NotFinite,
}

impl Trip {
    /// A short description for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Trip::CovarianceNotPositiveDefinite => "state covariance not positive definite",
            Trip::InnovationNotPositiveDefinite => "innovation covariance not positive definite",
            Trip::TransitionFailed => "the identification model rejected a sigma point",
            Trip::NotFinite => "non-finite sigma point, measurement or estimate",
        }
    }
}

/// An unscented Kalman filter with a Boolean measurement matrix and preallocated work space.
#[derive(Debug, Clone)]
pub struct UnscentedKalmanFilter {
    x: DVector<f64>,
    p: DMatrix<f64>,
    process_noise: DMatrix<f64>,
    measurement_noise: DMatrix<f64>,
    measured: Vec<usize>,
    spread: f64,
    wm: Vec<f64>,
    wc: Vec<f64>,
    // Work space (allocated once).
    root: DMatrix<f64>,
    sigma: DMatrix<f64>,
    x_pred: DVector<f64>,
    p_pred: DMatrix<f64>,
    s: DMatrix<f64>,
    gain: DMatrix<f64>,
    innovation: DVector<f64>,
    a: DMatrix<f64>,
    ap: DMatrix<f64>,
    trip: Option<Trip>,
    steps: u64,
}

/// In-place lower Cholesky factor of the symmetric matrix `m` (its lower triangle is read; the
/// upper triangle is zeroed). `false` if `m` is not positive definite.
fn cholesky_in_place(m: &mut DMatrix<f64>) -> bool {
    let n = m.nrows();
    for j in 0..n {
        let mut d = m[(j, j)];
        for k in 0..j {
            d -= m[(j, k)] * m[(j, k)];
        }
        if !(d.is_finite() && d > 0.0) {
            return false;
        }
        let d = d.sqrt();
        m[(j, j)] = d;
        for i in j + 1..n {
            let mut s = m[(i, j)];
            for k in 0..j {
                s -= m[(i, k)] * m[(j, k)];
            }
            m[(i, j)] = s / d;
        }
        for i in 0..j {
            m[(i, j)] = 0.0;
        }
    }
    true
}

fn check_covariance(m: &DMatrix<f64>, n: usize, what: &str) -> Result<(), String> {
    if m.nrows() != n || m.ncols() != n {
        return Err(format!(
            "{what} must be {n}×{n}, found {}×{}",
            m.nrows(),
            m.ncols()
        ));
    }
    if m.iter().any(|x| !x.is_finite()) {
        return Err(format!("{what} has a non-finite entry"));
    }
    for i in 0..n {
        for j in 0..i {
            if m[(i, j)] != m[(j, i)] {
                return Err(format!("{what} is not symmetric at ({i}, {j})"));
            }
        }
    }
    Ok(())
}

impl UnscentedKalmanFilter {
    /// A filter with initial estimate `x0` and covariance `p0` (eq 8), process noise `V`,
    /// measurement noise `W` (`measured.len()` square) and `H` selecting the state components
    /// `measured`. Errors name the offending argument.
    pub fn new(
        x0: &[f64],
        p0: DMatrix<f64>,
        process_noise: DMatrix<f64>,
        measurement_noise: DMatrix<f64>,
        measured: &[usize],
        points: SigmaPoints,
    ) -> Result<Self, String> {
        let l = x0.len();
        if l == 0 {
            return Err("the state is empty".into());
        }
        if x0.iter().any(|x| !x.is_finite()) {
            return Err("the initial estimate has a non-finite entry".into());
        }
        let m = measured.len();
        if m == 0 {
            return Err("nothing is measured".into());
        }
        if let Some(&i) = measured.iter().find(|&&i| i >= l) {
            return Err(format!(
                "measured component {i} is outside the state (length {l})"
            ));
        }
        check_covariance(&p0, l, "the initial covariance")?;
        check_covariance(&process_noise, l, "the process noise")?;
        check_covariance(&measurement_noise, m, "the measurement noise")?;
        let mut test = p0.clone();
        if !cholesky_in_place(&mut test) {
            return Err("the initial covariance is not positive definite".into());
        }
        let mut test = measurement_noise.clone();
        if !cholesky_in_place(&mut test) {
            return Err("the measurement noise is not positive definite".into());
        }
        let (alpha, beta, kappa) = points.alpha_beta_kappa(l);
        if ![alpha, beta, kappa].iter().all(|x| x.is_finite()) || alpha <= 0.0 {
            return Err(format!(
                "sigma-point scaling needs alpha > 0 and finite beta, kappa, found alpha = {alpha}, beta = {beta}, kappa = {kappa}"
            ));
        }
        let lambda = alpha * alpha * (l as f64 + kappa) - l as f64;
        let spread = l as f64 + lambda;
        if spread.is_nan() || spread <= 0.0 {
            return Err(format!(
                "sigma-point scaling gives L + lambda = {spread} (must be > 0; alpha = {alpha}, kappa = {kappa}, L = {l})"
            ));
        }
        let np = 2 * l + 1;
        let c = 0.5 / spread;
        let mut wm = vec![c; np];
        let mut wc = vec![c; np];
        wm[0] = lambda / spread;
        wc[0] = lambda / spread + (1.0 - alpha * alpha + beta);
        Ok(Self {
            x: DVector::from_column_slice(x0),
            p: p0,
            process_noise,
            measurement_noise,
            measured: measured.to_vec(),
            spread,
            wm,
            wc,
            root: DMatrix::zeros(l, l),
            sigma: DMatrix::zeros(l, np),
            x_pred: DVector::zeros(l),
            p_pred: DMatrix::zeros(l, l),
            s: DMatrix::zeros(m, m),
            gain: DMatrix::zeros(l, m),
            innovation: DVector::zeros(m),
            a: DMatrix::zeros(l, l),
            ap: DMatrix::zeros(l, l),
            trip: None,
            steps: 0,
        })
    }

    /// State length `L`.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Always false (a filter has a state).
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Number of sigma points, `2L + 1`.
    pub fn sigma_point_count(&self) -> usize {
        self.sigma.ncols()
    }

    /// Mean weights `ω^m` (central point first).
    pub fn mean_weights(&self) -> &[f64] {
        &self.wm
    }

    /// Covariance weights `ω^c` (central point first).
    pub fn covariance_weights(&self) -> &[f64] {
        &self.wc
    }

    /// The current estimate `X̂_n`.
    pub fn estimate(&self) -> &DVector<f64> {
        &self.x
    }

    /// The current covariance `P̂_n`.
    pub fn covariance(&self) -> &DMatrix<f64> {
        &self.p
    }

    /// Standard deviation of component `i`, `√P̂_ii`.
    pub fn standard_deviation(&self, i: usize) -> f64 {
        self.p[(i, i)].max(0.0).sqrt()
    }

    /// Why the filter stopped, if it did.
    pub fn trip(&self) -> Option<Trip> {
        self.trip
    }

    /// Whether the filter still updates.
    pub fn is_active(&self) -> bool {
        self.trip.is_none()
    }

    /// Completed steps.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Keep component `i` of the estimate within `[lo, hi]` (parameter bounds); the
    /// covariance is left as it is.
    pub fn clamp(&mut self, i: usize, lo: f64, hi: f64) {
        self.x[i] = self.x[i].clamp(lo, hi);
    }

    fn fail(&mut self, why: Trip) -> Option<Trip> {
        self.trip = Some(why);
        self.trip
    }

    /// One filter step (eqs 9–14): propagate the sigma points with `transition`, which maps a
    /// state `X_n` in place to `f(X_n)` and returns `false` if it cannot; then correct with the
    /// measurement `z` (`H X` plus noise, in the order of `measured`). Returns the trip if the
    /// filter is (or becomes) tripped; a tripped filter keeps its last good estimate.
    pub fn step<F>(&mut self, mut transition: F, z: &[f64]) -> Option<Trip>
    where
        F: FnMut(&mut [f64]) -> bool,
    {
        if self.trip.is_some() {
            return self.trip;
        }
        let l = self.x.len();
        let m = self.measured.len();
        if z.len() != m || z.iter().any(|x| !x.is_finite()) {
            return self.fail(Trip::NotFinite);
        }
        // Eq 9: sigma points from the lower Cholesky factor of (L + λ) P̂_n.
        for j in 0..l {
            for i in j..l {
                self.root[(i, j)] = self.spread * self.p[(i, j)];
            }
        }
        if !cholesky_in_place(&mut self.root) {
            return self.fail(Trip::CovarianceNotPositiveDefinite);
        }
        for i in 0..l {
            let xi = self.x[i];
            self.sigma[(i, 0)] = xi;
            for k in 0..l {
                let c = self.root[(i, k)];
                self.sigma[(i, k + 1)] = xi + c;
                self.sigma[(i, l + k + 1)] = xi - c;
            }
        }
        // Eq 10: propagate each point (columns are contiguous).
        let np = self.sigma.ncols();
        {
            let data = self.sigma.as_mut_slice();
            for col in 0..np {
                let point = &mut data[col * l..(col + 1) * l];
                if !transition(point) {
                    return self.fail(Trip::TransitionFailed);
                }
                if point.iter().any(|x| !x.is_finite()) {
                    return self.fail(Trip::NotFinite);
                }
            }
        }
        // Eq 11: predicted mean and covariance.
        for i in 0..l {
            let mut s = 0.0;
            for col in 0..np {
                s += self.wm[col] * self.sigma[(i, col)];
            }
            self.x_pred[i] = s;
        }
        for i in 0..l {
            for j in 0..=i {
                let mut s = 0.0;
                for col in 0..np {
                    s += self.wc[col]
                        * (self.sigma[(i, col)] - self.x_pred[i])
                        * (self.sigma[(j, col)] - self.x_pred[j]);
                }
                let v = s + self.process_noise[(i, j)];
                self.p_pred[(i, j)] = v;
                self.p_pred[(j, i)] = v;
            }
        }
        // Eq 13: K = P̂⁻Hᵀ S⁻¹ with S = H P̂⁻ Hᵀ + W, through the Cholesky factor of S.
        for a in 0..m {
            for b in 0..m {
                self.s[(a, b)] = self.p_pred[(self.measured[a], self.measured[b])]
                    + self.measurement_noise[(a, b)];
            }
        }
        if !cholesky_in_place(&mut self.s) {
            return self.fail(Trip::InnovationNotPositiveDefinite);
        }
        // Row r of K solves S kᵀ = (P̂⁻Hᵀ)ᵀ row r: forward then backward substitution.
        for r in 0..l {
            for a in 0..m {
                let mut t = self.p_pred[(r, self.measured[a])];
                for b in 0..a {
                    t -= self.s[(a, b)] * self.gain[(r, b)];
                }
                self.gain[(r, a)] = t / self.s[(a, a)];
            }
            for a in (0..m).rev() {
                let mut t = self.gain[(r, a)];
                for b in a + 1..m {
                    t -= self.s[(b, a)] * self.gain[(r, b)];
                }
                self.gain[(r, a)] = t / self.s[(a, a)];
            }
        }
        // Eq 14a (E25): correct the predicted mean.
        for (a, za) in z.iter().enumerate() {
            self.innovation[a] = za - self.x_pred[self.measured[a]];
        }
        for i in 0..l {
            let mut s = self.x_pred[i];
            for a in 0..m {
                s += self.gain[(i, a)] * self.innovation[a];
            }
            self.x_pred[i] = s;
        }
        // Eq 14b in Joseph form: A = I − KH; P̂ = A P̂⁻ Aᵀ + K W Kᵀ.
        self.a.fill(0.0);
        for i in 0..l {
            self.a[(i, i)] = 1.0;
        }
        for a in 0..m {
            let col = self.measured[a];
            for i in 0..l {
                self.a[(i, col)] -= self.gain[(i, a)];
            }
        }
        self.ap.gemm(1.0, &self.a, &self.p_pred, 0.0);
        for i in 0..l {
            for j in 0..=i {
                let mut s = 0.0;
                for k in 0..l {
                    s += self.ap[(i, k)] * self.a[(j, k)];
                }
                for a in 0..m {
                    let mut t = 0.0;
                    for b in 0..m {
                        t += self.measurement_noise[(a, b)] * self.gain[(j, b)];
                    }
                    s += self.gain[(i, a)] * t;
                }
                self.root[(i, j)] = s;
                self.root[(j, i)] = s;
            }
        }
        if self.x_pred.iter().any(|x| !x.is_finite()) || self.root.iter().any(|x| !x.is_finite()) {
            return self.fail(Trip::NotFinite);
        }
        self.x.copy_from(&self.x_pred);
        self.p.copy_from(&self.root);
        self.steps += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linear random walk measured directly: the UKF is the Kalman filter, whose scalar
    /// recursion is written out by hand.
    #[test]
    fn scalar_random_walk_equals_the_kalman_filter() {
        let (q, r) = (0.01, 0.25);
        let mut f = UnscentedKalmanFilter::new(
            &[1.0],
            DMatrix::from_element(1, 1, 4.0),
            DMatrix::from_element(1, 1, q),
            DMatrix::from_element(1, 1, r),
            &[0],
            SigmaPoints::Paper,
        )
        .unwrap();
        let (mut x, mut p) = (1.0, 4.0);
        for (n, z) in [2.0, 1.5, 1.8, 2.2, 1.9].into_iter().enumerate() {
            assert_eq!(f.step(|_| true, &[z]), None);
            let pm = p + q;
            let k = pm / (pm + r);
            x += k * (z - x);
            p = (1.0 - k) * pm;
            assert!((f.estimate()[0] - x).abs() < 1e-14, "step {n}");
            assert!((f.covariance()[(0, 0)] - p).abs() < 1e-14, "step {n}");
        }
    }

    /// A transition that fails trips the filter, keeps the estimate and makes later steps no-ops.
    #[test]
    fn failures_trip_the_filter_not_the_caller() {
        let mut f = UnscentedKalmanFilter::new(
            &[1.0, 2.0],
            DMatrix::identity(2, 2),
            DMatrix::zeros(2, 2),
            DMatrix::identity(1, 1),
            &[0],
            SigmaPoints::Paper,
        )
        .unwrap();
        assert_eq!(f.step(|_| false, &[0.0]), Some(Trip::TransitionFailed));
        assert_eq!(f.estimate().as_slice(), &[1.0, 2.0]);
        assert!(!f.is_active());
        assert_eq!(f.step(|_| true, &[0.0]), Some(Trip::TransitionFailed));
        assert_eq!(f.steps(), 0);

        let mut g = UnscentedKalmanFilter::new(
            &[1.0],
            DMatrix::identity(1, 1),
            DMatrix::zeros(1, 1),
            DMatrix::identity(1, 1),
            &[0],
            SigmaPoints::Paper,
        )
        .unwrap();
        g.p[(0, 0)] = -1.0;
        assert_eq!(
            g.step(|_| true, &[0.0]),
            Some(Trip::CovarianceNotPositiveDefinite)
        );
        assert!(UnscentedKalmanFilter::new(
            &[1.0],
            DMatrix::from_element(1, 1, -1.0),
            DMatrix::zeros(1, 1),
            DMatrix::identity(1, 1),
            &[0],
            SigmaPoints::Paper,
        )
        .is_err());
    }

    /// The weights of the scaled transform sum to one and reduce to the paper's for
    /// `α = 1, β = 0, κ = 3 − L`.
    #[test]
    fn weights() {
        let f = UnscentedKalmanFilter::new(
            &[0.0; 4],
            DMatrix::identity(4, 4),
            DMatrix::zeros(4, 4),
            DMatrix::identity(1, 1),
            &[0],
            SigmaPoints::Paper,
        )
        .unwrap();
        assert_eq!(f.sigma_point_count(), 9);
        assert!((f.mean_weights()[0] + 1.0 / 3.0).abs() < 1e-15);
        assert!((f.mean_weights()[1] - 1.0 / 6.0).abs() < 1e-15);
        assert!((f.mean_weights().iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert_eq!(f.mean_weights(), f.covariance_weights());
    }
}
