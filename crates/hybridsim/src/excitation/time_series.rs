//! Sampled time series with allocation-free linear interpolation, and simple
//! analytic time functions.

use super::ExcitationError;

/// Relative tolerance (fraction of the step) within which sample times
/// count as evenly spaced in [`TimeSeries::from_points`].
const UNIFORM_TOLERANCE: f64 = 1e-6;

/// A sampled signal: samples `(t_i, x_i)` with strictly increasing, finite
/// times and finite values (at least one sample).
///
/// Between samples the signal is interpolated linearly (the
/// piecewise-linear excitation assumed by the exact "interpolation of
/// excitation" integrators, Chopra, *Dynamics of Structures*, §5.2); before
/// the first sample and after the last one it is zero (the ground is at
/// rest outside a recorded accelerogram such as a PEER record).
///
/// Uniformly sampled series ([`TimeSeries::uniform`], or evenly spaced
/// points given to [`TimeSeries::from_points`]) are evaluated in O(1) by
/// index arithmetic; others by binary search. Evaluation never allocates.
#[derive(Clone, Debug)]
pub struct TimeSeries {
    times: Vec<f64>,
    values: Vec<f64>,
    /// `Some(h)` when `times[i] == times[0] + i*h` to within
    /// `UNIFORM_TOLERANCE * h`.
    dt: Option<f64>,
    /// Interval found by the last [`TimeSeries::value`] call.
    hint: IndexHint,
}

/// The interval index of the last lookup, as a hint for the next one (an integrator asks for
/// the same or the next interval step after step). A relaxed atomic so that a series stays
/// `Sync`; a stale or foreign hint only costs the full lookup, never a different value.
#[derive(Debug, Default)]
struct IndexHint(std::sync::atomic::AtomicUsize);

impl IndexHint {
    #[inline]
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[inline]
    fn set(&self, i: usize) {
        self.0.store(i, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Clone for IndexHint {
    fn clone(&self) -> Self {
        Self(std::sync::atomic::AtomicUsize::new(self.get()))
    }
}

impl TimeSeries {
    /// Builds a uniformly sampled series: sample `i` is at `t = i * dt`
    /// (the first sample at `t = 0`), as in PEER `.AT2` records.
    ///
    /// # Errors
    /// [`ExcitationError::InvalidTimeStep`] if `dt` is not positive and
    /// finite, [`ExcitationError::Empty`] if `values` is empty,
    /// [`ExcitationError::NonFiniteValue`] (with the index) for a NaN or
    /// infinite value, [`ExcitationError::NonFiniteTime`] if `i * dt`
    /// overflows.
    pub fn uniform(dt: f64, values: Vec<f64>) -> Result<Self, ExcitationError> {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(ExcitationError::InvalidTimeStep { dt });
        }
        if values.is_empty() {
            return Err(ExcitationError::Empty);
        }
        check_values(&values)?;
        let times: Vec<f64> = (0..values.len()).map(|i| i as f64 * dt).collect();
        let last = values.len() - 1;
        if !times[last].is_finite() {
            return Err(ExcitationError::NonFiniteTime {
                index: last,
                time: times[last],
            });
        }
        Ok(Self {
            times,
            values,
            dt: Some(dt),
            hint: IndexHint::default(),
        })
    }

    /// Builds a series from explicit sample times and values.
    ///
    /// If the times are evenly spaced (to within 10⁻⁶ of the step), the
    /// series is treated as uniform: [`TimeSeries::dt`] returns the mean
    /// step and [`TimeSeries::value`] uses O(1) index arithmetic. The times
    /// given are kept as they are, so values at those exact times are
    /// reproduced exactly either way.
    ///
    /// # Errors
    /// [`ExcitationError::LengthMismatch`], [`ExcitationError::Empty`],
    /// [`ExcitationError::NonFiniteTime`], [`ExcitationError::NonFiniteValue`]
    /// and [`ExcitationError::TimesNotIncreasing`] (with the index).
    pub fn from_points(times: Vec<f64>, values: Vec<f64>) -> Result<Self, ExcitationError> {
        if times.len() != values.len() {
            return Err(ExcitationError::LengthMismatch {
                times: times.len(),
                values: values.len(),
            });
        }
        if times.is_empty() {
            return Err(ExcitationError::Empty);
        }
        for (index, &time) in times.iter().enumerate() {
            if !time.is_finite() {
                return Err(ExcitationError::NonFiniteTime { index, time });
            }
            if index > 0 && time <= times[index - 1] {
                return Err(ExcitationError::TimesNotIncreasing {
                    index,
                    previous: times[index - 1],
                    time,
                });
            }
        }
        check_values(&values)?;
        let dt = detect_uniform_step(&times);
        Ok(Self {
            times,
            values,
            dt,
            hint: IndexHint::default(),
        })
    }

    /// Value at time `t` (any real number): linear interpolation between
    /// the neighbouring samples, the exact sample value at a sample time,
    /// and `0.0` before the first sample, after the last sample and for a
    /// NaN `t`.
    ///
    /// Allocation-free; O(1) for uniform series, O(log n) otherwise, and a
    /// check of the last interval used (or the next one) before either, as
    /// an integrator marches through the record. Meant to be called at
    /// arbitrary (sub)step times by an integrator.
    #[inline]
    pub fn value(&self, t: f64) -> f64 {
        let n = self.times.len();
        let first = self.times[0];
        let last = self.times[n - 1];
        // The negated comparison also sends NaN to zero.
        if !(t >= first && t <= last) {
            return 0.0;
        }
        // The interval is unique (times[i] <= t < times[i + 1], or i = n - 1
        // at t = last), so the hint never changes the value.
        let h = self.hint.get();
        let i = if h + 1 < n && self.times[h] <= t && t < self.times[h + 1] {
            h
        } else if h + 2 < n && self.times[h + 1] <= t && t < self.times[h + 2] {
            h + 1
        } else {
            self.locate(t)
        };
        if i != h {
            self.hint.set(i);
        }
        let t0 = self.times[i];
        let x0 = self.values[i];
        if t == t0 || i + 1 == n {
            return x0;
        }
        let t1 = self.times[i + 1];
        let x1 = self.values[i + 1];
        x0 + (t - t0) / (t1 - t0) * (x1 - x0)
    }

    /// The interval of `t ∈ [first, last]`: `i` with `times[i] <= t < times[i + 1]`, or
    /// `n − 1` at `t = last`.
    fn locate(&self, t: f64) -> usize {
        let n = self.times.len();
        let first = self.times[0];
        let mut i = match self.dt {
            Some(h) => {
                let guess = ((t - first) / h).floor();
                if guess >= (n - 1) as f64 {
                    n - 1
                } else if guess > 0.0 {
                    guess as usize
                } else {
                    0
                }
            }
            // First index with times[k] > t, minus one; >= 1 since times[0] <= t.
            None => self.times.partition_point(|&s| s <= t) - 1,
        };
        // Correct round-off in the index guess (at most one step for a
        // uniform series; a no-op after the binary search). Invariant
        // afterwards: times[i] <= t < times[i + 1] (or i = n - 1, t = last).
        while i > 0 && self.times[i] > t {
            i -= 1;
        }
        while i + 1 < n && self.times[i + 1] <= t {
            i += 1;
        }
        i
    }

    /// Largest absolute sample value (e.g. the PGA of an accelerogram).
    pub fn peak_abs(&self) -> f64 {
        self.values.iter().fold(0.0_f64, |m, &x| m.max(x.abs()))
    }

    /// Index of the sample with the largest absolute value (the first one
    /// if several are equal).
    pub fn peak_index(&self) -> usize {
        let mut best = 0;
        for (i, &x) in self.values.iter().enumerate() {
            if x.abs() > self.values[best].abs() {
                best = i;
            }
        }
        best
    }

    /// Multiplies every value by `factor` (e.g. [`super::STANDARD_GRAVITY`]
    /// to convert a record in g to m/s²).
    ///
    /// # Panics
    /// If `factor` is NaN or infinite (the series would no longer hold
    /// finite values).
    pub fn scale(&mut self, factor: f64) {
        assert!(
            factor.is_finite(),
            "TimeSeries::scale: the scale factor must be finite, got {factor}"
        );
        for x in &mut self.values {
            *x *= factor;
        }
    }

    /// Scales the series so that its peak absolute value equals
    /// `target_peak` exactly (the largest sample becomes `±target_peak`
    /// bit for bit; rounding can never push another sample above it).
    ///
    /// # Errors
    /// [`ExcitationError::InvalidTargetPeak`] if `target_peak` is not
    /// positive and finite, [`ExcitationError::AllZero`] if every sample is
    /// zero.
    pub fn scaled_to_peak(&mut self, target_peak: f64) -> Result<(), ExcitationError> {
        if !(target_peak.is_finite() && target_peak > 0.0) {
            return Err(ExcitationError::InvalidTargetPeak { value: target_peak });
        }
        let k = self.peak_index();
        let peak = self.values[k].abs();
        if peak == 0.0 {
            return Err(ExcitationError::AllZero);
        }
        let factor = target_peak / peak;
        if !factor.is_finite() {
            // Only possible for subnormal peaks; scale in two steps.
            let mid = 1.0 / peak;
            for x in &mut self.values {
                *x = (*x * mid) * target_peak;
            }
        } else {
            for x in &mut self.values {
                *x *= factor;
            }
        }
        for x in &mut self.values {
            *x = x.clamp(-target_peak, target_peak);
        }
        self.values[k] = target_peak.copysign(self.values[k]);
        Ok(())
    }

    /// Time of the first sample (0 for [`TimeSeries::uniform`]).
    pub fn start_time(&self) -> f64 {
        self.times[0]
    }

    /// Time of the last sample; the series is zero after it.
    pub fn end_time(&self) -> f64 {
        self.times[self.times.len() - 1]
    }

    /// Number of samples (at least 1).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Always `false`: a [`TimeSeries`] has at least one sample.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Sample times, strictly increasing.
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    /// Sample values, one per entry of [`TimeSeries::times`].
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Iterator over the samples `(t_i, x_i)`.
    pub fn samples(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.times.iter().copied().zip(self.values.iter().copied())
    }

    /// The sampling interval for a uniform series (`Some(dt)`), `None` for
    /// uneven sampling or a single sample given to
    /// [`TimeSeries::from_points`]. For [`TimeSeries::uniform`] this is the
    /// `dt` it was built with.
    pub fn dt(&self) -> Option<f64> {
        self.dt
    }
}

fn check_values(values: &[f64]) -> Result<(), ExcitationError> {
    match values.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(ExcitationError::NonFiniteValue {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// `Some(h)` if `times[i] = times[0] + i*h` to within `UNIFORM_TOLERANCE*h`.
/// `times` is finite, strictly increasing and non-empty.
fn detect_uniform_step(times: &[f64]) -> Option<f64> {
    let n = times.len();
    if n < 2 {
        return None;
    }
    let t0 = times[0];
    let h = (times[n - 1] - t0) / (n - 1) as f64;
    if !(h.is_finite() && h > 0.0) {
        return None;
    }
    let tol = UNIFORM_TOLERANCE * h;
    times
        .iter()
        .enumerate()
        .all(|(i, &t)| (t - (t0 + i as f64 * h)).abs() <= tol)
        .then_some(h)
}

/// A scalar function of time used as a load or ground-motion history.
///
/// Every variant is evaluated allocation-free by [`TimeFunction::value`].
#[derive(Clone, Debug)]
pub enum TimeFunction {
    /// A sampled record, linearly interpolated and zero outside its time
    /// span (see [`TimeSeries::value`]).
    Series(TimeSeries),
    /// A windowed sine (harmonic excitation, e.g. for a shake-table or
    /// actuator check):
    /// `amplitude * sin(2π · frequency_hz · (t − start) + phase)` for
    /// `start ≤ t ≤ end`, zero outside (no end if `end` is `None`).
    /// The phase is measured from `start`, so with `phase = 0` the signal
    /// starts from zero.
    Sine {
        /// Peak value, in the unit of the excitation.
        amplitude: f64,
        /// Frequency in Hz (cycles per second).
        frequency_hz: f64,
        /// Phase at `t = start`, in radians.
        phase: f64,
        /// Time the sine is switched on, in s.
        start: f64,
        /// Time the sine is switched off, in s (`None`: never).
        end: Option<f64>,
    },
    /// The same value at every time (e.g. a dead load or a static test).
    Constant(f64),
}

impl TimeFunction {
    /// Value of the function at time `t`.
    #[inline]
    pub fn value(&self, t: f64) -> f64 {
        match self {
            TimeFunction::Series(s) => s.value(t),
            TimeFunction::Sine {
                amplitude,
                frequency_hz,
                phase,
                start,
                end,
            } => {
                if t.is_nan() || t < *start {
                    return 0.0;
                }
                if let Some(e) = end {
                    if t > *e {
                        return 0.0;
                    }
                }
                amplitude * (std::f64::consts::TAU * frequency_hz * (t - start) + phase).sin()
            }
            TimeFunction::Constant(c) => *c,
        }
    }

    /// Time after which the function is identically zero: the last sample
    /// of a series, the `end` of a sine; `None` if it never stops.
    pub fn end_time(&self) -> Option<f64> {
        match self {
            TimeFunction::Series(s) => Some(s.end_time()),
            TimeFunction::Sine { end, .. } => *end,
            TimeFunction::Constant(_) => None,
        }
    }

    /// Checks that all parameters are finite (and, for a sine, that the
    /// frequency is not negative and `end ≥ start`). A [`TimeSeries`] is
    /// valid by construction.
    ///
    /// # Errors
    /// [`ExcitationError::InvalidParameter`] naming the bad field.
    pub fn validate(&self) -> Result<(), ExcitationError> {
        fn finite(name: &'static str, value: f64) -> Result<(), ExcitationError> {
            if value.is_finite() {
                Ok(())
            } else {
                Err(ExcitationError::InvalidParameter {
                    name,
                    value,
                    requirement: "must be a finite number",
                })
            }
        }
        match self {
            TimeFunction::Series(_) => Ok(()),
            TimeFunction::Sine {
                amplitude,
                frequency_hz,
                phase,
                start,
                end,
            } => {
                finite("amplitude", *amplitude)?;
                finite("frequency_hz", *frequency_hz)?;
                finite("phase", *phase)?;
                finite("start", *start)?;
                if *frequency_hz < 0.0 {
                    return Err(ExcitationError::InvalidParameter {
                        name: "frequency_hz",
                        value: *frequency_hz,
                        requirement: "must not be negative",
                    });
                }
                if let Some(e) = end {
                    finite("end", *e)?;
                    if *e < *start {
                        return Err(ExcitationError::InvalidParameter {
                            name: "end",
                            value: *e,
                            requirement: "must not be earlier than start",
                        });
                    }
                }
                Ok(())
            }
            TimeFunction::Constant(c) => finite("constant", *c),
        }
    }
}

impl From<TimeSeries> for TimeFunction {
    fn from(series: TimeSeries) -> Self {
        TimeFunction::Series(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp_series() -> TimeSeries {
        TimeSeries::uniform(0.5, vec![0.0, 1.0, -1.0, 3.0]).unwrap()
    }

    #[test]
    fn uniform_construction_and_accessors() {
        let ts = ramp_series();
        assert_eq!(ts.len(), 4);
        assert!(!ts.is_empty());
        assert_eq!(ts.times(), &[0.0, 0.5, 1.0, 1.5]);
        assert_eq!(ts.values(), &[0.0, 1.0, -1.0, 3.0]);
        assert_eq!(ts.dt(), Some(0.5));
        assert_eq!(ts.start_time(), 0.0);
        assert_eq!(ts.end_time(), 1.5);
        assert_eq!(ts.peak_abs(), 3.0);
        assert_eq!(ts.peak_index(), 3);
        assert_eq!(ts.samples().nth(2), Some((1.0, -1.0)));
    }

    #[test]
    fn uniform_errors() {
        assert_eq!(
            TimeSeries::uniform(0.0, vec![1.0]).unwrap_err(),
            ExcitationError::InvalidTimeStep { dt: 0.0 }
        );
        assert!(matches!(
            TimeSeries::uniform(-0.1, vec![1.0]),
            Err(ExcitationError::InvalidTimeStep { .. })
        ));
        assert!(matches!(
            TimeSeries::uniform(f64::NAN, vec![1.0]),
            Err(ExcitationError::InvalidTimeStep { .. })
        ));
        assert!(matches!(
            TimeSeries::uniform(f64::INFINITY, vec![1.0]),
            Err(ExcitationError::InvalidTimeStep { .. })
        ));
        assert_eq!(
            TimeSeries::uniform(0.1, vec![]).unwrap_err(),
            ExcitationError::Empty
        );
        let err = TimeSeries::uniform(0.1, vec![0.0, 1.0, f64::NAN]).unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::NonFiniteValue { index: 2, .. }
        ));
        assert!(err.to_string().contains("sample 2"), "{err}");
        assert!(matches!(
            TimeSeries::uniform(1e308, vec![0.0, 1.0, 2.0]),
            Err(ExcitationError::NonFiniteTime { index: 2, .. })
        ));
    }

    #[test]
    fn from_points_errors() {
        assert_eq!(
            TimeSeries::from_points(vec![0.0, 1.0], vec![1.0]).unwrap_err(),
            ExcitationError::LengthMismatch {
                times: 2,
                values: 1
            }
        );
        assert_eq!(
            TimeSeries::from_points(vec![], vec![]).unwrap_err(),
            ExcitationError::Empty
        );
        assert!(matches!(
            TimeSeries::from_points(vec![0.0, 1.0, 1.0], vec![0.0; 3]),
            Err(ExcitationError::TimesNotIncreasing { index: 2, .. })
        ));
        assert!(matches!(
            TimeSeries::from_points(vec![0.0, 2.0, 1.0], vec![0.0; 3]),
            Err(ExcitationError::TimesNotIncreasing { index: 2, .. })
        ));
        assert!(matches!(
            TimeSeries::from_points(vec![0.0, f64::NAN], vec![0.0; 2]),
            Err(ExcitationError::NonFiniteTime { index: 1, .. })
        ));
        assert!(matches!(
            TimeSeries::from_points(vec![0.0, 1.0], vec![0.0, f64::INFINITY]),
            Err(ExcitationError::NonFiniteValue { index: 1, .. })
        ));
    }

    #[test]
    fn interpolation_and_zero_outside() {
        let ts = ramp_series();
        assert_eq!(ts.value(-1e-12), 0.0);
        assert_eq!(ts.value(-10.0), 0.0);
        assert_eq!(ts.value(f64::NAN), 0.0);
        assert_eq!(ts.value(f64::NEG_INFINITY), 0.0);
        assert_eq!(ts.value(f64::INFINITY), 0.0);
        assert_eq!(ts.value(0.0), 0.0);
        assert_eq!(ts.value(0.25), 0.5);
        assert_eq!(ts.value(0.5), 1.0);
        assert_eq!(ts.value(0.75), 0.0);
        assert_eq!(ts.value(1.25), 1.0);
        assert_eq!(ts.value(1.5), 3.0);
        assert_eq!(ts.value(1.5 + 1e-12), 0.0);
        assert_eq!(ts.value(100.0), 0.0);
    }

    #[test]
    fn exact_at_sample_times_despite_roundoff() {
        // dt = 0.01 is not representable: i*0.01 / 0.01 is sometimes just
        // below i. The value at every sample time must still be exact.
        let n = 10_000;
        let values: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 - 500.0).collect();
        for &dt in &[0.01, 0.005, 0.02, 0.1, 1.0 / 3.0, 0.0123] {
            let ts = TimeSeries::uniform(dt, values.clone()).unwrap();
            for (i, &x) in values.iter().enumerate() {
                let t = i as f64 * dt;
                assert_eq!(ts.value(t), x, "dt={dt}, i={i}");
            }
            // Midpoints interpolate.
            for i in 0..n - 1 {
                let t = (i as f64 + 0.5) * dt;
                let expect = 0.5 * (values[i] + values[i + 1]);
                assert!(
                    (ts.value(t) - expect).abs() <= 1e-9 * (1.0 + expect.abs()),
                    "dt={dt}, i={i}"
                );
            }
        }
    }

    #[test]
    fn uniform_and_binary_search_agree() {
        // Same data, once uniform (O(1) path), once with a single uneven
        // time so the binary-search path is used; compare on a fine grid.
        let n = 500;
        let dt = 0.02;
        let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let uni = TimeSeries::uniform(dt, values.clone()).unwrap();
        let times: Vec<f64> = (0..n).map(|i| i as f64 * dt).collect();
        let via_points = TimeSeries::from_points(times.clone(), values.clone()).unwrap();
        assert_eq!(via_points.dt(), Some(uni.end_time() / (n - 1) as f64));
        let mut uneven_times = times.clone();
        uneven_times[1] = 0.5 * dt; // interior point at a different place
        let mut uneven_values = values.clone();
        uneven_values[1] = 0.5 * (values[0] + values[2]);
        let uneven = TimeSeries::from_points(uneven_times, uneven_values).unwrap();
        assert_eq!(uneven.dt(), None);
        let mut t = -0.013;
        while t < uni.end_time() + 0.05 {
            let a = uni.value(t);
            let b = via_points.value(t);
            assert!((a - b).abs() < 1e-12, "t={t}: {a} vs {b}");
            if t > 2.0 * dt {
                let c = uneven.value(t);
                assert!((a - c).abs() < 1e-12, "t={t}: {a} vs {c}");
            }
            t += 0.00137;
        }
    }

    #[test]
    fn from_points_with_offset_start() {
        let ts = TimeSeries::from_points(vec![1.0, 1.1, 1.2], vec![1.0, 2.0, 3.0]).unwrap();
        assert!(ts.dt().is_some());
        assert_eq!(ts.start_time(), 1.0);
        assert_eq!(ts.value(0.99), 0.0);
        assert_eq!(ts.value(1.0), 1.0);
        assert_eq!(ts.value(1.1), 2.0);
        assert!((ts.value(1.15) - 2.5).abs() < 1e-12);
        assert_eq!(ts.value(1.2), 3.0);
        assert_eq!(ts.value(1.2000001), 0.0);
        let single = TimeSeries::from_points(vec![2.0], vec![5.0]).unwrap();
        assert_eq!(single.dt(), None);
        assert_eq!(single.value(2.0), 5.0);
        assert_eq!(single.value(1.9), 0.0);
        assert_eq!(single.value(2.1), 0.0);
        let single_uniform = TimeSeries::uniform(0.1, vec![5.0]).unwrap();
        assert_eq!(single_uniform.value(0.0), 5.0);
        assert_eq!(single_uniform.value(0.05), 0.0);
    }

    #[test]
    fn scale_and_scaled_to_peak() {
        let mut ts = ramp_series();
        ts.scale(2.0);
        assert_eq!(ts.values(), &[0.0, 2.0, -2.0, 6.0]);
        ts.scaled_to_peak(0.3).unwrap();
        assert_eq!(ts.peak_abs(), 0.3);
        assert_eq!(ts.values()[3], 0.3);

        // Negative peak keeps its sign and hits the target bit-exactly for
        // awkward ratios.
        let vals: Vec<f64> = (0..1000)
            .map(|i| -((i as f64) * 0.731).sin() * 3.3)
            .collect();
        let mut ts = TimeSeries::uniform(0.01, vals).unwrap();
        for &target in &[0.1, 0.3129, 9.80665 * 0.4, 7.0 / 3.0] {
            ts.scaled_to_peak(target).unwrap();
            assert_eq!(ts.peak_abs(), target);
            assert!(ts.values().iter().all(|x| x.abs() <= target));
        }

        let mut zero = TimeSeries::uniform(0.01, vec![0.0; 10]).unwrap();
        assert_eq!(zero.scaled_to_peak(1.0), Err(ExcitationError::AllZero));
        assert!(matches!(
            ramp_series().scaled_to_peak(0.0),
            Err(ExcitationError::InvalidTargetPeak { .. })
        ));
        assert!(matches!(
            ramp_series().scaled_to_peak(f64::NAN),
            Err(ExcitationError::InvalidTargetPeak { .. })
        ));

        let mut tiny = TimeSeries::uniform(0.01, vec![0.0, 5e-324, -5e-324]).unwrap();
        tiny.scaled_to_peak(2.0).unwrap();
        assert_eq!(tiny.peak_abs(), 2.0);
    }

    #[test]
    #[should_panic(expected = "must be finite")]
    fn scale_rejects_nan() {
        ramp_series().scale(f64::NAN);
    }

    #[test]
    fn time_function_values() {
        let f = TimeFunction::Sine {
            amplitude: 2.0,
            frequency_hz: 1.0,
            phase: 0.0,
            start: 1.0,
            end: Some(3.0),
        };
        f.validate().unwrap();
        assert_eq!(f.value(0.999), 0.0);
        assert_eq!(f.value(1.0), 0.0);
        assert!((f.value(1.25) - 2.0).abs() < 1e-12);
        assert!((f.value(1.75) + 2.0).abs() < 1e-12);
        assert!(f.value(3.0).abs() < 1e-12);
        assert_eq!(f.value(3.0001), 0.0);
        assert_eq!(f.value(f64::NAN), 0.0);
        assert_eq!(f.end_time(), Some(3.0));

        let open = TimeFunction::Sine {
            amplitude: 1.0,
            frequency_hz: 0.5,
            phase: std::f64::consts::FRAC_PI_2,
            start: 0.0,
            end: None,
        };
        assert!((open.value(0.0) - 1.0).abs() < 1e-15);
        assert!((open.value(1000.0) - 1.0).abs() < 1e-9);
        assert_eq!(open.end_time(), None);

        let c = TimeFunction::Constant(4.5);
        assert_eq!(c.value(-3.0), 4.5);
        assert_eq!(c.value(1e9), 4.5);
        assert_eq!(c.end_time(), None);

        let s: TimeFunction = ramp_series().into();
        assert_eq!(s.value(0.25), 0.5);
        assert_eq!(s.value(2.0), 0.0);
        assert_eq!(s.end_time(), Some(1.5));
    }

    #[test]
    fn time_function_validate() {
        let bad = TimeFunction::Sine {
            amplitude: 1.0,
            frequency_hz: -1.0,
            phase: 0.0,
            start: 0.0,
            end: None,
        };
        assert!(matches!(
            bad.validate(),
            Err(ExcitationError::InvalidParameter {
                name: "frequency_hz",
                ..
            })
        ));
        let bad = TimeFunction::Sine {
            amplitude: 1.0,
            frequency_hz: 1.0,
            phase: 0.0,
            start: 2.0,
            end: Some(1.0),
        };
        let err = bad.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid end = 1: it must not be earlier than start"
        );
        assert!(TimeFunction::Constant(f64::NAN).validate().is_err());
    }

    /// The interval hint never changes a value: marching forward, jumping back and forth and
    /// hitting sample times give the same bits as a fresh series.
    #[test]
    fn hinted_lookup_equals_fresh_lookup() {
        let times: Vec<f64> = (0..200)
            .map(|i| 0.01 * i as f64 + 1e-3 * ((i * 7) % 5) as f64)
            .collect();
        let values: Vec<f64> = (0..200).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        for series in [
            TimeSeries::from_points(times.clone(), values.clone()).unwrap(),
            TimeSeries::uniform(0.01, values.clone()).unwrap(),
        ] {
            let mut queries: Vec<f64> = (0..5000).map(|k| k as f64 * 4.1e-4 - 0.01).collect();
            queries.extend([1.5, 0.2, 1.9, 0.0, 1.99, 2.5, 0.31, 0.3, f64::NAN, 0.305]);
            queries.extend(series.times().to_vec());
            for t in queries {
                let fresh = series.clone();
                fresh.hint.set(0);
                let expect = fresh.value(t);
                let got = series.value(t);
                assert_eq!(got.to_bits(), expect.to_bits(), "t = {t}");
            }
        }
    }
}
