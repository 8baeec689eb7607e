//! Imposed motions (time-varying Dirichlet conditions): the `[[imposed_motion]]` table.
//!
//! A prescribed displacement, velocity or acceleration history on chosen node DOFs, e.g. the
//! motion of each support of a multi-support seismic excitation (Hovmand et al. 2022, §1 and
//! eq 3c). The history is one of
//!
//! - `sine = { amplitude, frequency, phase }`: a harmonic history of `quantity`;
//! - `points = [[t, x], …]` or `file = "two-column file"`: samples of `quantity` in model
//!   units;
//! - `record = "file.AT2"`: an accelerogram (PEER `.AT2` in g, or two columns with
//!   `record_units = "g" | "model"`), scaled by `pga` (g) or `scale`.
//!
//! Sampled histories are turned into one piecewise cubic displacement `d(t)` whose derivatives
//! are the velocity and acceleration: accelerations are integrated exactly (piecewise linear
//! `a`), velocities are interpolated linearly (piecewise quadratic `d`), displacements by a
//! natural cubic spline. Before the first and after the last sample the motion continues at
//! constant velocity (zero acceleration). [`ImposedMotion::displacement`],
//! [`ImposedMotion::velocity`] and [`ImposedMotion::acceleration`] evaluate the three without
//! allocating (for the LLM integrator, the `cyclic` command and the virtual-lab drive).
//!
//! One history type, [`MotionHistory`], and one evaluator, [`MotionHistory::kinematics`], serve
//! every consumer: the model file's entries (found by `name` with [`find`]), the `cyclic`
//! command's `--history sine|ramp|file` shorthands ([`MotionHistory::sine`],
//! [`MotionHistory::ramped_sine`], [`MotionHistory::from_samples`]) and a specimen drive, which
//! checks its actuator limits against [`MotionHistory::peaks`] before commanding anything.
//!
//! Imposed motions are in absolute coordinates; the scheme that enforces them (the LLM
//! integrator, [`crate::integrators::Llm`]) prescribes the *rate* `h(t)` (ALGORITHMS.md E33),
//! so the displacement of a support follows the trapezoidal integral of its velocity; the drift
//! from `d(t)` is recorded.

use crate::elements::DofRef;

/// What a history prescribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MotionQuantity {
    /// Displacement (rotation on rotational DOFs).
    Displacement,
    /// Velocity.
    Velocity,
    /// Acceleration.
    Acceleration,
}

impl MotionQuantity {
    /// Parse `displacement`, `velocity` or `acceleration`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "displacement" => Some(Self::Displacement),
            "velocity" => Some(Self::Velocity),
            "acceleration" => Some(Self::Acceleration),
            _ => None,
        }
    }
}

/// A piecewise cubic displacement: on `[t_i, t_{i+1}]`, `d = c0 + c1 τ + c2 τ² + c3 τ³` with
/// `τ = t − t_i`; linear (constant velocity) outside the samples.
#[derive(Debug, Clone, PartialEq)]
pub struct PiecewiseCubic {
    t: Vec<f64>,
    c: Vec<[f64; 4]>,
}

impl PiecewiseCubic {
    /// Whether the displacement is zero at every time (every coefficient zero).
    pub fn is_zero(&self) -> bool {
        self.c.iter().all(|c| c.iter().all(|x| *x == 0.0))
    }

    /// Exact double integral of piecewise-linear accelerations `a` at times `t`, starting at
    /// rest at the origin at `t[0]`.
    pub fn from_accelerations(t: &[f64], a: &[f64]) -> Self {
        let mut c = Vec::with_capacity(t.len().saturating_sub(1));
        let (mut d, mut v) = (0.0, 0.0);
        for i in 0..t.len().saturating_sub(1) {
            let h = t[i + 1] - t[i];
            let j = (a[i + 1] - a[i]) / h;
            c.push([d, v, a[i] / 2.0, j / 6.0]);
            d += v * h + a[i] * h * h / 2.0 + j * h * h * h / 6.0;
            v += a[i] * h + j * h * h / 2.0;
        }
        Self { t: t.to_vec(), c }
    }

    /// Integral of piecewise-linear velocities `v`, starting at the origin at `t[0]`.
    pub fn from_velocities(t: &[f64], v: &[f64]) -> Self {
        let mut c = Vec::with_capacity(t.len().saturating_sub(1));
        let mut d = 0.0;
        for i in 0..t.len().saturating_sub(1) {
            let h = t[i + 1] - t[i];
            let s = (v[i + 1] - v[i]) / h;
            c.push([d, v[i], s / 2.0, 0.0]);
            d += v[i] * h + s * h * h / 2.0;
        }
        Self { t: t.to_vec(), c }
    }

    /// Natural cubic spline through displacements `d` (zero curvature at both ends).
    pub fn from_displacements(t: &[f64], d: &[f64]) -> Self {
        let n = t.len();
        let mut m = vec![0.0; n]; // second derivatives
        if n > 2 {
            // Tridiagonal system for m[1..n-1] (Thomas algorithm).
            let k = n - 2;
            let mut diag = vec![0.0; k];
            let mut upper = vec![0.0; k];
            let mut rhs = vec![0.0; k];
            for j in 0..k {
                let i = j + 1;
                let h0 = t[i] - t[i - 1];
                let h1 = t[i + 1] - t[i];
                diag[j] = 2.0 * (h0 + h1);
                upper[j] = h1;
                rhs[j] = 6.0 * ((d[i + 1] - d[i]) / h1 - (d[i] - d[i - 1]) / h0);
            }
            for j in 1..k {
                let lower = t[j + 1] - t[j];
                let w = lower / diag[j - 1];
                diag[j] -= w * upper[j - 1];
                rhs[j] -= w * rhs[j - 1];
            }
            for j in (0..k).rev() {
                let next = if j + 1 < k { m[j + 2] } else { 0.0 };
                m[j + 1] = (rhs[j] - upper[j] * next) / diag[j];
            }
        }
        let c = (0..n.saturating_sub(1))
            .map(|i| {
                let h = t[i + 1] - t[i];
                [
                    d[i],
                    (d[i + 1] - d[i]) / h - h * (2.0 * m[i] + m[i + 1]) / 6.0,
                    m[i] / 2.0,
                    (m[i + 1] - m[i]) / (6.0 * h),
                ]
            })
            .collect();
        Self { t: t.to_vec(), c }
    }

    /// Sample times.
    pub fn times(&self) -> &[f64] {
        &self.t
    }

    /// `(d, v, a)` at `t`. Allocation-free.
    pub fn evaluate(&self, t: f64) -> [f64; 3] {
        let n = self.t.len();
        if self.c.is_empty() {
            return [0.0; 3];
        }
        let poly = |k: usize, tau: f64| {
            let c = &self.c[k];
            [
                c[0] + tau * (c[1] + tau * (c[2] + tau * c[3])),
                c[1] + tau * (2.0 * c[2] + 3.0 * tau * c[3]),
                2.0 * c[2] + 6.0 * tau * c[3],
            ]
        };
        if t <= self.t[0] {
            let [d, v, _] = poly(0, 0.0);
            return [d + v * (t - self.t[0]), v, 0.0];
        }
        if t >= self.t[n - 1] {
            let h = self.t[n - 1] - self.t[n - 2];
            let [d, v, _] = poly(n - 2, h);
            return [d + v * (t - self.t[n - 1]), v, 0.0];
        }
        let k = self
            .t
            .partition_point(|x| *x <= t)
            .saturating_sub(1)
            .min(n - 2);
        poly(k, t - self.t[k])
    }
}

/// A prescribed motion history.
#[derive(Debug, Clone, PartialEq)]
pub enum MotionHistory {
    /// `quantity = amplitude · sin(ω t + φ)`; the other two quantities follow by exact
    /// differentiation/integration from rest at the origin at `t = 0` (for a velocity or
    /// acceleration sine).
    Sine {
        /// Prescribed quantity.
        quantity: MotionQuantity,
        /// Amplitude in model units of the quantity.
        amplitude: f64,
        /// Circular frequency ω (rad per time unit).
        omega: f64,
        /// Phase φ (rad).
        phase: f64,
    },
    /// Cycles of linearly growing displacement amplitude, `d = A (t/T) sin(ω t)` for
    /// `0 ≤ t ≤ T` (the ramped cycles of device characterization,
    /// Abbiati et al. 2019, Figs 19, 22), then `A sin(ω t)`; zero before `t = 0`.
    RampedSine {
        /// Final displacement amplitude `A`.
        amplitude: f64,
        /// Circular frequency ω.
        omega: f64,
        /// Ramp duration `T` (> 0).
        duration: f64,
    },
    /// Samples turned into a piecewise cubic displacement.
    Sampled(PiecewiseCubic),
}

impl MotionHistory {
    /// Whether the prescribed motion is zero at every time (a support held at rest), so that
    /// the model with the DOF fixed has the same response.
    pub fn is_zero(&self) -> bool {
        match self {
            Self::Sine { amplitude, .. } | Self::RampedSine { amplitude, .. } => *amplitude == 0.0,
            Self::Sampled(p) => p.is_zero(),
        }
    }

    /// Displacement sine `A sin(2π f t)` (`amplitude` in length units, `frequency` in 1/time).
    pub fn sine(amplitude: f64, frequency: f64) -> Self {
        Self::Sine {
            quantity: MotionQuantity::Displacement,
            amplitude,
            omega: std::f64::consts::TAU * frequency,
            phase: 0.0,
        }
    }

    /// Ramped displacement cycles `A (t/T) sin(2π f t)` over `T = duration`.
    pub fn ramped_sine(amplitude: f64, frequency: f64, duration: f64) -> Self {
        Self::RampedSine {
            amplitude,
            omega: std::f64::consts::TAU * frequency,
            duration,
        }
    }

    /// Samples `(times, values)` of `quantity`, validated (at least two samples, strictly
    /// increasing finite times, finite values): an error names the offending sample.
    pub fn from_samples(
        quantity: MotionQuantity,
        times: &[f64],
        values: &[f64],
    ) -> Result<Self, String> {
        if times.len() != values.len() {
            return Err(format!("{} times but {} values", times.len(), values.len()));
        }
        if times.len() < 2 {
            return Err("needs at least two samples".into());
        }
        if let Some(k) = times.iter().position(|x| !x.is_finite()) {
            return Err(format!("sample {}: time is not finite", k + 1));
        }
        if let Some(k) = values.iter().position(|x| !x.is_finite()) {
            return Err(format!("sample {}: value is not finite", k + 1));
        }
        if let Some(k) = times.windows(2).position(|w| w[1] <= w[0]) {
            return Err(format!(
                "sample times must increase strictly (sample {}: {} after {})",
                k + 2,
                times[k + 1],
                times[k]
            ));
        }
        Ok(Self::Sampled(match quantity {
            MotionQuantity::Displacement => PiecewiseCubic::from_displacements(times, values),
            MotionQuantity::Velocity => PiecewiseCubic::from_velocities(times, values),
            MotionQuantity::Acceleration => PiecewiseCubic::from_accelerations(times, values),
        }))
    }

    /// `(d, v, a)` at `t`. Allocation-free and lock-free (safe in a real-time step).
    pub fn kinematics(&self, t: f64) -> [f64; 3] {
        match self {
            MotionHistory::Sine {
                quantity,
                amplitude: a,
                omega: w,
                phase: p,
            } => {
                let (s, c) = (w * t + p).sin_cos();
                let (s0, c0) = p.sin_cos();
                match quantity {
                    MotionQuantity::Displacement => [a * s, a * w * c, -a * w * w * s],
                    MotionQuantity::Velocity => [-(a / w) * (c - c0), a * s, a * w * c],
                    MotionQuantity::Acceleration => [
                        -(a / (w * w)) * (s - s0) + (a / w) * c0 * t,
                        -(a / w) * (c - c0),
                        a * s,
                    ],
                }
            }
            MotionHistory::RampedSine {
                amplitude: a,
                omega: w,
                duration: big_t,
            } => {
                if t <= 0.0 {
                    return [0.0; 3];
                }
                let (s, c) = (w * t).sin_cos();
                if t >= *big_t {
                    return [a * s, a * w * c, -a * w * w * s];
                }
                let r = a / big_t; // dA/dt
                let amp = r * t;
                [
                    amp * s,
                    r * s + amp * w * c,
                    2.0 * r * w * c - amp * w * w * s,
                ]
            }
            MotionHistory::Sampled(pc) => pc.evaluate(t),
        }
    }

    /// The sampled time range, if the history is sampled (outside it the motion continues at
    /// constant velocity).
    pub fn span(&self) -> Option<(f64, f64)> {
        match self {
            MotionHistory::Sampled(pc) => {
                let t = pc.times();
                Some((t[0], t[t.len() - 1]))
            }
            _ => None,
        }
    }

    /// A natural end time: the last sample, the end of the ramp, or `None` for a sine.
    pub fn end_time(&self) -> Option<f64> {
        match self {
            MotionHistory::Sampled(_) => self.span().map(|s| s.1),
            MotionHistory::RampedSine { duration, .. } => Some(*duration),
            MotionHistory::Sine { .. } => None,
        }
    }

    /// Peak magnitudes `[max |d|, max |v|, max |a|]` over `[t0, t1]`, sampled every `dt` and at
    /// every sample time inside the range (sampled histories are cubic between samples, so this
    /// bounds them to `O(dt²)`). For checking actuator stroke, velocity and acceleration limits
    /// *before* a drive starts. Allocates nothing; not meant for the real-time loop.
    pub fn peaks(&self, t0: f64, t1: f64, dt: f64) -> [f64; 3] {
        let mut p = [0.0f64; 3];
        let mut take = |t: f64| {
            let k = self.kinematics(t);
            for i in 0..3 {
                p[i] = p[i].max(k[i].abs());
            }
        };
        if !(t1 >= t0 && dt > 0.0 && dt.is_finite()) {
            take(t0);
            return p;
        }
        let n = ((t1 - t0) / dt).ceil().min(1e8) as usize;
        for k in 0..=n {
            take((t0 + k as f64 * dt).min(t1));
        }
        if let MotionHistory::Sampled(pc) = self {
            for &t in pc.times() {
                if t >= t0 && t <= t1 {
                    take(t);
                }
            }
        }
        p
    }
}

/// An imposed motion of one DOF.
#[derive(Debug, Clone, PartialEq)]
pub struct ImposedMotion {
    /// Name of its `[[imposed_motion]]` entry (`name`, or `imposed_motion[i]` by default);
    /// shared by the DOFs of one entry.
    pub name: String,
    /// The driven DOF.
    pub dof: DofRef,
    /// Its history.
    pub history: MotionHistory,
    /// Description (for summaries and `run.json`).
    pub description: String,
    /// Index of the `[[imposed_motion]]` entry (for messages).
    pub entry: usize,
}

impl ImposedMotion {
    /// A motion of `dof` outside a model file (e.g. a specimen drive or `cyclic`'s shorthands).
    pub fn new(name: impl Into<String>, dof: DofRef, history: MotionHistory) -> Self {
        let name = name.into();
        Self {
            description: name.clone(),
            name,
            dof,
            history,
            entry: 0,
        }
    }

    /// `(d, v, a)` at `t` ([`MotionHistory::kinematics`]). Allocation-free.
    pub fn kinematics(&self, t: f64) -> [f64; 3] {
        self.history.kinematics(t)
    }

    /// Prescribed displacement at `t`.
    pub fn displacement(&self, t: f64) -> f64 {
        self.kinematics(t)[0]
    }

    /// Prescribed velocity at `t`.
    pub fn velocity(&self, t: f64) -> f64 {
        self.kinematics(t)[1]
    }

    /// Prescribed acceleration at `t`.
    pub fn acceleration(&self, t: f64) -> f64 {
        self.kinematics(t)[2]
    }
}

/// The motions of the `[[imposed_motion]]` entry called `name` (one per driven DOF); `name`
/// may also be the default `imposed_motion[i]` or the bare entry index `i`.
pub fn find<'a>(motions: &'a [ImposedMotion], name: &str) -> Vec<&'a ImposedMotion> {
    let index: Option<usize> = name.parse().ok();
    motions
        .iter()
        .filter(|m| m.name == name || index == Some(m.entry))
        .collect()
}

/// An explicit distribution of a nodal `mass` element among the element partitions of the LLM
/// mode (Hovmand et al. 2022, eq 10): keys are element names or substructure names (a
/// substructure's share goes evenly to its elements that have the DOF).
#[derive(Debug, Clone, PartialEq)]
pub struct MassShare {
    /// Name of the mass element.
    pub mass: String,
    /// Field path of its `split` (for messages).
    pub field: String,
    /// `(element or substructure name, fraction)`.
    pub shares: Vec<(String, f64)>,
}
