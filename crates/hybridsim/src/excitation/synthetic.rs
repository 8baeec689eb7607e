//! Synthetic ground acceleration: filtered, enveloped, seeded white noise.
//!
//! References:
//! * K. Kanai (1957), "Semi-empirical formula for the seismic
//!   characteristics of the ground", Bull. Earthquake Res. Inst., Univ.
//!   Tokyo 35, 309–325.
//! * H. Tajimi (1960), "A statistical method of determining the maximum
//!   response of a building structure during an earthquake", Proc. 2nd
//!   World Conf. Earthquake Eng., Tokyo, vol. 2, 781–798.
//! * R. W. Clough and J. Penzien (1975), *Dynamics of Structures*,
//!   McGraw-Hill, ch. 25 (second, high-pass filter).
//! * P. C. Jennings, G. W. Housner and N. C. Tsai (1968), "Simulated
//!   earthquake motions", EERL report, Caltech (trapezoidal envelope with
//!   quadratic rise and exponential decay).

use nalgebra::Matrix5;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::{ExcitationError, TimeSeries};

/// Largest number of samples [`KanaiTajimi::generate`] will produce
/// (guards against accidental `duration / dt` of billions).
const MAX_SAMPLES: f64 = 100_000_000.0;

/// Generator of synthetic, non-stationary ground-acceleration records
/// with a Kanai–Tajimi spectrum and a Clough–Penzien high-pass filter.
///
/// **Filters.** Unit Gaussian white noise `w(t)` (piecewise constant over
/// each step `dt`, variance `1/dt` so that its two-sided spectral density
/// is `1/(2π)` independently of `dt`) drives the ground filter
/// (Kanai 1957; Tajimi 1960)
///
/// ```text
/// ÿ_g + 2 ζ_g ω_g ẏ_g + ω_g² y_g = w(t),      a_KT = 2 ζ_g ω_g ẏ_g + ω_g² y_g,
/// ```
///
/// i.e. `H_KT(s) = (ω_g² + 2ζ_g ω_g s) / (s² + 2ζ_g ω_g s + ω_g²)`, whose
/// output `a_KT` is passed through the second, high-pass filter of
/// Clough & Penzien (1975)
///
/// ```text
/// ÿ_f + 2 ζ_f ω_f ẏ_f + ω_f² y_f = a_KT,      a(t) = ÿ_f = a_KT − 2 ζ_f ω_f ẏ_f − ω_f² y_f,
/// ```
///
/// i.e. `H_CP(s) = s² / (s² + 2ζ_f ω_f s + ω_f²)`. The stationary
/// acceleration therefore has the spectral density
/// `S_a(ω) = S_0 |H_KT(iω)|² |H_CP(iω)|²`, which vanishes like `ω⁴` at
/// `ω → 0`: the ground velocity and displacement spectra stay finite at
/// zero frequency, so the displacement does not drift as it does for the
/// plain Kanai–Tajimi model.
///
/// The four filter states `x = [y_g, ẏ_g, y_f, ẏ_f]` obey `ẋ = A x + B w`;
/// this linear ODE is discretized **exactly** for the piecewise-constant
/// noise (zero-order hold: `x_{k+1} = e^{A dt} x_k + ∫_0^dt e^{Aτ} dτ B w_k`,
/// computed once with a scaling-and-squaring Taylor matrix exponential),
/// so the recursion is unconditionally stable for any `dt`.
///
/// **Envelope** (Jennings, Housner & Tsai 1968): the stationary output is
/// multiplied by
///
/// ```text
/// e(t) = (t / rise)²                          0 ≤ t < rise
///      = 1                                    rise ≤ t ≤ rise + strong
///      = exp(−decay (t − rise − strong))      t > rise + strong
/// ```
///
/// and the record is finally scaled so that its peak `|a|` equals `pga`
/// exactly ([`TimeSeries::scaled_to_peak`]).
///
/// Samples are at `t = i·dt`, `i = 0 … ⌊duration/dt⌋` (first at t = 0,
/// where the envelope and the filter states are zero). The same parameters
/// and `seed` always give a bit-identical record (ChaCha8 stream,
/// `rand_chacha`).
///
/// `dt` should resolve the ground frequency: `dt ≤ π / (10 ω_g)` or so
/// (0.02 s for the default `ω_g`); the default 0.005 s is ample.
#[derive(Clone, Debug)]
pub struct KanaiTajimi {
    /// Target peak ground acceleration, in whatever acceleration unit the
    /// caller wants (g, m/s², ...); the record's peak `|a|` equals it.
    pub pga: f64,
    /// Kanai–Tajimi ground frequency `ω_g` in rad/s (default 15.6, firm
    /// soil, Kanai 1957 / Tajimi 1960).
    pub omega_g: f64,
    /// Kanai–Tajimi ground damping ratio `ζ_g` (default 0.6).
    pub zeta_g: f64,
    /// Clough–Penzien high-pass frequency `ω_f` in rad/s (default 1.5).
    pub omega_f: f64,
    /// Clough–Penzien high-pass damping ratio `ζ_f` (default 0.6).
    pub zeta_f: f64,
    /// Record length in s.
    pub duration: f64,
    /// Sampling interval in s (default 0.005).
    pub dt: f64,
    /// Duration of the quadratic build-up of the envelope, in s
    /// (default `0.1 · duration`; 0 for no build-up).
    pub rise: f64,
    /// Duration of the strong-motion plateau of the envelope, in s
    /// (default `0.4 · duration`).
    pub strong: f64,
    /// Exponential decay rate of the envelope after the plateau, in 1/s
    /// (default `3 / (0.5 · duration)`, i.e. the envelope has fallen to
    /// `e⁻³ ≈ 5 %` at the end of the record).
    pub decay: f64,
    /// Seed of the ChaCha8 random-number stream.
    pub seed: u64,
}

impl KanaiTajimi {
    /// A generator with the default parameters: `ω_g = 15.6 rad/s`,
    /// `ζ_g = 0.6` (Kanai–Tajimi, firm ground), `ω_f = 1.5 rad/s`,
    /// `ζ_f = 0.6` (Clough–Penzien), `dt = 0.005 s`, envelope rise
    /// `0.1·duration`, plateau `0.4·duration` and decay `6/duration` per s
    /// (5 % left at the end).
    ///
    /// Parameters are checked by [`KanaiTajimi::generate`] (and
    /// [`KanaiTajimi::validate`]), not here.
    pub fn new(pga: f64, duration: f64, seed: u64) -> Self {
        Self {
            pga,
            omega_g: 15.6,
            zeta_g: 0.6,
            omega_f: 1.5,
            zeta_f: 0.6,
            duration,
            dt: 0.005,
            rise: 0.1 * duration,
            strong: 0.4 * duration,
            decay: 3.0 / (0.5 * duration),
            seed,
        }
    }

    /// Checks every parameter: `pga`, `duration`, `dt`, `omega_g`,
    /// `zeta_g`, `omega_f`, `zeta_f` positive and finite, `dt < duration`
    /// (and at most 10⁸ samples), `rise`, `strong`, `decay` non-negative
    /// and finite.
    ///
    /// # Errors
    /// [`ExcitationError::InvalidParameter`] naming the first bad field.
    pub fn validate(&self) -> Result<(), ExcitationError> {
        fn positive(name: &'static str, value: f64) -> Result<(), ExcitationError> {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(ExcitationError::InvalidParameter {
                    name,
                    value,
                    requirement: "must be a positive, finite number",
                })
            }
        }
        fn non_negative(name: &'static str, value: f64) -> Result<(), ExcitationError> {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(ExcitationError::InvalidParameter {
                    name,
                    value,
                    requirement: "must be a finite number, zero or positive",
                })
            }
        }
        positive("pga", self.pga)?;
        positive("duration", self.duration)?;
        positive("dt", self.dt)?;
        if self.dt >= self.duration {
            return Err(ExcitationError::InvalidParameter {
                name: "dt",
                value: self.dt,
                requirement: "must be smaller than the duration",
            });
        }
        if self.duration / self.dt > MAX_SAMPLES {
            return Err(ExcitationError::InvalidParameter {
                name: "dt",
                value: self.dt,
                requirement: "is so small compared with the duration that the record would have more than 100 million samples",
            });
        }
        positive("omega_g", self.omega_g)?;
        positive("zeta_g", self.zeta_g)?;
        positive("omega_f", self.omega_f)?;
        positive("zeta_f", self.zeta_f)?;
        non_negative("rise", self.rise)?;
        non_negative("strong", self.strong)?;
        non_negative("decay", self.decay)?;
        Ok(())
    }

    /// The envelope `e(t)` (see the type documentation): quadratic rise
    /// from 0 to 1 over `[0, rise]`, 1 until `rise + strong`, then
    /// `exp(−decay·(t − rise − strong))`; 0 for `t < 0`.
    pub fn envelope(&self, t: f64) -> f64 {
        if t.is_nan() || t < 0.0 {
            0.0
        } else if t < self.rise {
            let r = t / self.rise;
            r * r
        } else if t <= self.rise + self.strong {
            1.0
        } else {
            (-self.decay * (t - self.rise - self.strong)).exp()
        }
    }

    /// Generates the record: uniform [`TimeSeries`] with first sample at
    /// t = 0, `⌊duration/dt⌋ + 1` samples, peak `|a|` exactly `pga`.
    ///
    /// # Errors
    /// [`ExcitationError::InvalidParameter`] for bad parameters (see
    /// [`KanaiTajimi::validate`]), [`ExcitationError::AllZero`] if the
    /// envelope makes every sample zero (e.g. an enormous `decay` with
    /// `rise = strong = 0`).
    pub fn generate(&self) -> Result<TimeSeries, ExcitationError> {
        self.validate()?;
        let (phi, gamma) = self.discrete_filter()?;
        let c = self.output_row();

        // Number of intervals; the small allowance keeps `duration = k·dt`
        // from losing its last sample to round-off.
        let steps = (self.duration / self.dt * (1.0 + 1e-12)).floor() as usize;
        let n = steps + 1;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let noise_scale = 1.0 / self.dt.sqrt();

        let mut x = [0.0_f64; 4];
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            let a: f64 = c.iter().zip(&x).map(|(ci, xi)| ci * xi).sum();
            values.push(a * self.envelope(i as f64 * self.dt));
            if i + 1 < n {
                let w: f64 = StandardNormal.sample(&mut rng);
                let w = w * noise_scale;
                let mut next = [0.0_f64; 4];
                for (r, nr) in next.iter_mut().enumerate() {
                    *nr = phi[r].iter().zip(&x).map(|(p, xj)| p * xj).sum::<f64>() + gamma[r] * w;
                }
                x = next;
            }
        }
        let mut series = TimeSeries::uniform(self.dt, values)?;
        series.scaled_to_peak(self.pga)?;
        Ok(series)
    }

    /// State matrix `A` of `ẋ = A x + B w`, `x = [y_g, ẏ_g, y_f, ẏ_f]`,
    /// `B = [0, 1, 0, 0]ᵀ`.
    fn state_matrix(&self) -> [[f64; 4]; 4] {
        let (wg, zg, wf, zf) = (self.omega_g, self.zeta_g, self.omega_f, self.zeta_f);
        [
            [0.0, 1.0, 0.0, 0.0],
            [-wg * wg, -2.0 * zg * wg, 0.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            [wg * wg, 2.0 * zg * wg, -wf * wf, -2.0 * zf * wf],
        ]
    }

    /// Output row `C` with `a = C x` (the ground acceleration; no direct
    /// feed-through of the noise).
    fn output_row(&self) -> [f64; 4] {
        let (wg, zg, wf, zf) = (self.omega_g, self.zeta_g, self.omega_f, self.zeta_f);
        [wg * wg, 2.0 * zg * wg, -wf * wf, -2.0 * zf * wf]
    }

    /// Exact zero-order-hold discretization: `Φ = e^{A dt}` and
    /// `Γ = ∫_0^dt e^{Aτ} dτ B`, read off the exponential of the augmented
    /// 5×5 matrix `[[A dt, B dt], [0, 0]]` (Van Loan 1978).
    fn discrete_filter(&self) -> Result<([[f64; 4]; 4], [f64; 4]), ExcitationError> {
        let a = self.state_matrix();
        let mut m = Matrix5::<f64>::zeros();
        for r in 0..4 {
            for col in 0..4 {
                m[(r, col)] = a[r][col] * self.dt;
            }
        }
        m[(1, 4)] = self.dt;
        let e = expm(&m).ok_or(ExcitationError::InvalidParameter {
            name: "dt",
            value: self.dt,
            requirement: "is too large for the filter frequencies (the filter matrices overflow)",
        })?;
        let mut phi = [[0.0_f64; 4]; 4];
        let mut gamma = [0.0_f64; 4];
        for r in 0..4 {
            for col in 0..4 {
                phi[r][col] = e[(r, col)];
            }
            gamma[r] = e[(r, 4)];
        }
        Ok((phi, gamma))
    }
}

/// Largest 1-norm handed to nalgebra's [`Matrix::exp`](nalgebra::Matrix::exp), which forms
/// powers of its argument up to the 10th before it chooses its scaling: above ~10³⁰ they
/// overflow, and an infinite norm estimate would make it square ~2⁶⁴ times.
const EXP_MAX_NORM: f64 = 1024.0;

/// Matrix exponential by nalgebra's scaling-and-squaring Padé approximation (Al-Mohy & Higham
/// 2009, as in SciPy's `expm`), first scaled by `2^-s` so that the 1-norm is at most
/// [`EXP_MAX_NORM`] and squared `s` times after (`s = 0` for every realistic filter). `None` if
/// the input or result is not finite.
fn expm(m: &Matrix5<f64>) -> Option<Matrix5<f64>> {
    let norm = m.abs().row_sum().max();
    if !norm.is_finite() {
        return None;
    }
    let s = if norm > EXP_MAX_NORM {
        (norm / EXP_MAX_NORM).log2().ceil() as i32
    } else {
        0
    };
    let mut e = (m * 2.0_f64.powi(-s)).exp();
    for _ in 0..s {
        e = e * e;
    }
    e.iter().all(|v| v.is_finite()).then_some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let kt = KanaiTajimi::new(0.4, 20.0, 7);
        assert_eq!(kt.omega_g, 15.6);
        assert_eq!(kt.zeta_g, 0.6);
        assert_eq!(kt.omega_f, 1.5);
        assert_eq!(kt.zeta_f, 0.6);
        assert_eq!(kt.dt, 0.005);
        assert_eq!(kt.rise, 2.0);
        assert_eq!(kt.strong, 8.0);
        assert!(((-kt.decay * 10.0).exp() - (-3.0_f64).exp()).abs() < 1e-15);
        kt.validate().unwrap();
    }

    #[test]
    fn envelope_shape() {
        let kt = KanaiTajimi::new(1.0, 20.0, 0);
        assert_eq!(kt.envelope(-1.0), 0.0);
        assert_eq!(kt.envelope(0.0), 0.0);
        assert_eq!(kt.envelope(1.0), 0.25);
        assert_eq!(kt.envelope(2.0), 1.0);
        assert_eq!(kt.envelope(10.0), 1.0);
        assert!((kt.envelope(20.0) - (-3.0_f64).exp()).abs() < 1e-15);
        let mut no_rise = kt.clone();
        no_rise.rise = 0.0;
        assert_eq!(no_rise.envelope(0.0), 1.0);
    }

    #[test]
    fn generate_basic_properties() {
        let kt = KanaiTajimi::new(0.35, 10.0, 42);
        let a = kt.generate().unwrap();
        assert_eq!(a.len(), 2001);
        assert_eq!(a.dt(), Some(0.005));
        assert_eq!(a.start_time(), 0.0);
        assert!((a.end_time() - 10.0).abs() < 1e-12);
        assert_eq!(a.peak_abs(), 0.35);
        assert_eq!(a.values()[0], 0.0);
        assert!(a.values().iter().all(|v| v.is_finite() && v.abs() <= 0.35));
        // The peak falls where the envelope is large.
        let tpk = a.times()[a.peak_index()];
        assert!(kt.envelope(tpk) > 0.3, "peak at t = {tpk}");
    }

    #[test]
    fn same_seed_bit_identical_different_seed_differs() {
        let a = KanaiTajimi::new(3.0, 8.0, 123).generate().unwrap();
        let b = KanaiTajimi::new(3.0, 8.0, 123).generate().unwrap();
        assert_eq!(a.len(), b.len());
        assert!(a
            .values()
            .iter()
            .zip(b.values())
            .all(|(x, y)| x.to_bits() == y.to_bits()));
        let c = KanaiTajimi::new(3.0, 8.0, 124).generate().unwrap();
        let differing = a
            .values()
            .iter()
            .zip(c.values())
            .filter(|(x, y)| x != y)
            .count();
        assert!(differing > a.len() / 2, "only {differing} samples differ");
    }

    /// Regression guard on the exact stream: if the RNG, the normal
    /// sampler or the filter discretization change, synthetic motions
    /// referenced by seed in saved models would silently change.
    #[test]
    fn output_is_stable_across_builds() {
        let a = KanaiTajimi::new(1.0, 2.0, 2024).generate().unwrap();
        let v = a.values();
        assert_eq!(a.len(), 401);
        assert_eq!(a.peak_index(), 180);
        assert_eq!(v[180], -1.0);
        // Relative tolerance allows for last-bit differences of libm's
        // `exp`/`sqrt` between platforms, nothing more.
        let pinned = [
            (1, -5.113_033_389_891_059_6e-5),
            (57, -3.277_139_567_503_058e-1),
            (300, -1.115_979_524_497_865_6e-2),
        ];
        for (i, expected) in pinned {
            assert!(
                ((v[i] - expected) / expected).abs() < 1e-9,
                "sample {i}: {} vs pinned {expected}",
                v[i]
            );
        }
    }

    #[test]
    fn validation_errors() {
        let ok = KanaiTajimi::new(1.0, 10.0, 1);
        let cases: Vec<(&str, KanaiTajimi)> = vec![
            (
                "pga",
                KanaiTajimi {
                    pga: 0.0,
                    ..ok.clone()
                },
            ),
            (
                "pga",
                KanaiTajimi {
                    pga: f64::NAN,
                    ..ok.clone()
                },
            ),
            (
                "duration",
                KanaiTajimi {
                    duration: -1.0,
                    ..ok.clone()
                },
            ),
            (
                "dt",
                KanaiTajimi {
                    dt: 0.0,
                    ..ok.clone()
                },
            ),
            (
                "dt",
                KanaiTajimi {
                    dt: 10.0,
                    ..ok.clone()
                },
            ),
            (
                "dt",
                KanaiTajimi {
                    dt: 1e-9,
                    ..ok.clone()
                },
            ),
            (
                "omega_g",
                KanaiTajimi {
                    omega_g: 0.0,
                    ..ok.clone()
                },
            ),
            (
                "zeta_g",
                KanaiTajimi {
                    zeta_g: 0.0,
                    ..ok.clone()
                },
            ),
            (
                "omega_f",
                KanaiTajimi {
                    omega_f: f64::INFINITY,
                    ..ok.clone()
                },
            ),
            (
                "zeta_f",
                KanaiTajimi {
                    zeta_f: -0.1,
                    ..ok.clone()
                },
            ),
            (
                "rise",
                KanaiTajimi {
                    rise: -1.0,
                    ..ok.clone()
                },
            ),
            (
                "strong",
                KanaiTajimi {
                    strong: f64::NAN,
                    ..ok.clone()
                },
            ),
            (
                "decay",
                KanaiTajimi {
                    decay: -0.5,
                    ..ok.clone()
                },
            ),
        ];
        for (field, kt) in cases {
            match kt.generate() {
                Err(ExcitationError::InvalidParameter { name, .. }) => assert_eq!(name, field),
                other => panic!("{field}: expected InvalidParameter, got {other:?}"),
            }
        }
        let err = KanaiTajimi {
            zeta_g: 0.0,
            ..ok.clone()
        }
        .generate()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid zeta_g = 0: it must be a positive, finite number"
        );
        // Envelope that kills everything.
        let dead = KanaiTajimi {
            rise: 0.0,
            strong: 0.0,
            decay: 1e6,
            ..ok
        };
        assert_eq!(dead.generate().unwrap_err(), ExcitationError::AllZero);
    }

    #[test]
    fn matrix_exponential_matches_oscillator_solution() {
        // Free vibration of an underdamped oscillator over one step:
        // compare e^{A h} with the closed-form solution.
        let (w, z, h) = (15.6_f64, 0.6_f64, 0.005_f64);
        let mut m = Matrix5::<f64>::zeros();
        m[(0, 1)] = h;
        m[(1, 0)] = -w * w * h;
        m[(1, 1)] = -2.0 * z * w * h;
        m[(1, 4)] = h;
        let e = expm(&m).unwrap();
        let wd = w * (1.0 - z * z).sqrt();
        let ex = (-z * w * h).exp();
        let (s, c) = (wd * h).sin_cos();
        // x(h) for x(0) = 1, v(0) = 0.
        let x11 = ex * (c + z * w / wd * s);
        let v11 = -ex * w * w / wd * s;
        // x(h) for x(0) = 0, v(0) = 1.
        let x12 = ex * s / wd;
        let v12 = ex * (c - z * w / wd * s);
        assert!((e[(0, 0)] - x11).abs() < 1e-13);
        assert!((e[(1, 0)] - v11).abs() < 1e-11);
        assert!((e[(0, 1)] - x12).abs() < 1e-13);
        assert!((e[(1, 1)] - v12).abs() < 1e-13);
        // Step response to a unit force: static part (1 - x11)/w².
        assert!((e[(0, 4)] - (1.0 - x11) / (w * w)).abs() < 1e-13);
        assert!((e[(1, 4)] - x12).abs() < 1e-13);
        // Large argument still finite and accurate (stable decay).
        let big = m * 400.0;
        let e = expm(&big).unwrap();
        assert!(e[(0, 0)].abs() < 1e-6 && e[(1, 1)].abs() < 1e-6);
        assert!((e[(0, 4)] - 1.0 / (w * w)).abs() < 1e-9);
    }

    #[test]
    fn extreme_filter_frequencies_end_in_a_record_or_an_error() {
        // 1-norms of 10^97 and 10^197 (nalgebra's `exp` alone would overflow its matrix
        // powers and not return) and an infinite one.
        for omega_g in [1e50, 1e100, 1e200] {
            let kt = KanaiTajimi {
                omega_g,
                ..KanaiTajimi::new(1.0, 2.0, 1)
            };
            match kt.generate() {
                Ok(r) => assert!(r.values().iter().all(|v| v.is_finite())),
                Err(ExcitationError::InvalidParameter { name, .. }) => assert_eq!(name, "dt"),
                Err(e) => panic!("omega_g = {omega_g}: {e}"),
            }
        }
    }

    /// Integrates acceleration to velocity and displacement (trapezoidal).
    fn integrate(a: &[f64], dt: f64) -> (Vec<f64>, Vec<f64>) {
        let mut v = vec![0.0; a.len()];
        let mut d = vec![0.0; a.len()];
        for i in 1..a.len() {
            v[i] = v[i - 1] + 0.5 * dt * (a[i - 1] + a[i]);
            d[i] = d[i - 1] + 0.5 * dt * (v[i - 1] + v[i]);
        }
        (v, d)
    }

    #[test]
    fn high_pass_limits_displacement_drift() {
        // With the Clough–Penzien filter the ground displacement stays
        // bounded; without it (ω_f → 0, i.e. almost pure Kanai–Tajimi)
        // the displacement wanders off. Compare on the same noise.
        let mut with_cp_total = 0.0;
        let mut without_cp_total = 0.0;
        for seed in 0..8 {
            let kt = KanaiTajimi::new(1.0, 20.0, seed);
            let a = kt.generate().unwrap();
            let (v, d) = integrate(a.values(), kt.dt);
            let peak_d = d.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
            let end_v = v.last().unwrap().abs();
            let peak_v = v.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
            assert!(
                end_v < 0.5 * peak_v,
                "seed {seed}: residual velocity {end_v} vs peak {peak_v}"
            );
            with_cp_total += peak_d;

            let plain = KanaiTajimi {
                omega_f: 1e-3,
                ..kt
            };
            let b = plain.generate().unwrap();
            let (_, d) = integrate(b.values(), plain.dt);
            without_cp_total += d.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        }
        assert!(
            with_cp_total < 0.5 * without_cp_total,
            "with CP {with_cp_total}, without {without_cp_total}"
        );
    }

    /// Squared magnitude of the combined Kanai–Tajimi × Clough–Penzien
    /// transfer function at circular frequency `w`.
    fn filter_gain2(kt: &KanaiTajimi, w: f64) -> f64 {
        let (wg, zg, wf, zf) = (kt.omega_g, kt.zeta_g, kt.omega_f, kt.zeta_f);
        let kt2 = (wg.powi(4) + 4.0 * zg * zg * wg * wg * w * w)
            / ((wg * wg - w * w).powi(2) + 4.0 * zg * zg * wg * wg * w * w);
        let cp2 = w.powi(4) / ((wf * wf - w * w).powi(2) + 4.0 * zf * zf * wf * wf * w * w);
        kt2 * cp2
    }

    #[test]
    fn spectrum_follows_kanai_tajimi_clough_penzien() {
        // Periodogram of the stationary (plateau) part, averaged over
        // frequency bands and seeds, divided by the theoretical |H|²: the
        // ratio must be the same (the white-noise level) in every band,
        // within sampling scatter. A missing or wrong filter changes the
        // low band (high-pass) or the high band (KT roll-off) by far more.
        let bands = [(1.0, 2.0), (12.0, 19.0), (50.0, 70.0)];
        let mut ratios = [0.0_f64; 3];
        for seed in 0..4 {
            let kt = KanaiTajimi::new(1.0, 100.0, 1000 + seed);
            let a = kt.generate().unwrap();
            let start = (kt.rise / kt.dt).ceil() as usize + 400; // let the filters settle
            let end = ((kt.rise + kt.strong) / kt.dt) as usize;
            let seg = &a.values()[start..end];
            let t_len = seg.len() as f64 * kt.dt;
            for (b, &(lo, hi)) in bands.iter().enumerate() {
                let k_lo = (lo * t_len / std::f64::consts::TAU).ceil() as usize;
                let k_hi = (hi * t_len / std::f64::consts::TAU).floor() as usize;
                let (mut power, mut theory) = (0.0, 0.0);
                for k in k_lo..=k_hi {
                    let w = std::f64::consts::TAU * k as f64 / t_len;
                    let (mut re, mut im) = (0.0, 0.0);
                    for (n, x) in seg.iter().enumerate() {
                        let (s, c) = (w * n as f64 * kt.dt).sin_cos();
                        re += x * c;
                        im += x * s;
                    }
                    power += re * re + im * im;
                    theory += filter_gain2(&kt, w);
                }
                ratios[b] += power / theory;
            }
        }
        let mid = ratios[1];
        for (b, r) in ratios.iter().enumerate() {
            let rel = r / mid;
            assert!(rel > 0.5 && rel < 2.0, "band {:?}: {rel}", bands[b]);
        }
    }

    #[test]
    fn last_sample_at_duration() {
        let kt = KanaiTajimi {
            dt: 0.01,
            ..KanaiTajimi::new(1.0, 3.0, 5)
        };
        let a = kt.generate().unwrap();
        assert_eq!(a.len(), 301);
        let kt = KanaiTajimi {
            dt: 0.007,
            ..KanaiTajimi::new(1.0, 1.0, 5)
        };
        let a = kt.generate().unwrap();
        assert_eq!(a.len(), 143); // floor(1/0.007) = 142 intervals
    }
}
