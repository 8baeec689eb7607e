//! Evaluation criteria of a real-time hybrid test: the tracking of the transfer system and the
//! accuracy of the response against a reference run, after the virtual RTHS (vRTHS) benchmark
//! control problem of Silva et al. (2020).
//!
//! The benchmark scores a test with nine numbers. The definitions below follow the evaluation
//! script distributed with the benchmark's simulation package (the one participants must not
//! modify), which fixes what the paper's prose leaves open:
//!
//! - **J1**, the time delay between desired (target) displacement `d` and measured displacement
//!   `m`: the lag `ℓ·Δt` whose correlation coefficient (Pearson, means removed over the overlap)
//!   between `m_k` and `d_{k−ℓ}` is largest ([`cross_correlation_delay`]). The benchmark searches
//!   `0 ≤ ℓ < 50` samples at 4096 Hz; here `|ℓ| ≤ ℓ_max`, so that an over-compensated test (the
//!   measurement leads) reports a negative delay instead of zero;
//! - **J2**, the normalized RMS tracking error `σ(m − d) / σ(d)`, with `σ` the standard deviation
//!   (means removed: a constant offset does not count here, J3 sees it)
//!   ([`normalized_rms_error`]);
//! - **J3**, the normalized peak tracking error `max_k |m_k − d_k| / max_k |d_k|`
//!   ([`normalized_peak_error`]);
//! - **J4, J5**: the normalized RMS and peak errors of the tested storey's displacement (the
//!   first storey of the benchmark's three-storey frame) against the reference structure's;
//! - **J6, J7**: the normalized RMS errors of storeys 2 and 3; **J8, J9**: their normalized peak
//!   errors.
//!
//! So with `n` response channels, the first being the tested storey, channel 0 gives J4 (RMS) and
//! J5 (peak), and channel `i ≥ 1` gives `J(5+i)` (RMS) and `J(4+n+i)` (peak)
//! ([`response_criterion_numbers`]); for `n = 3` that is the benchmark's numbering. The reference
//! run is the same model with an ideal transfer system (or any run the user trusts), sampled at
//! the same time steps. Results are ratios (multiply by 100 for the benchmark's percentages) and
//! J1 is in seconds (the benchmark prints milliseconds).
//!
//! Every function works on plain slices, allocates nothing but its result and is meant for
//! offline evaluation (after a test), never for a real-time loop.

/// Why a criterion cannot be computed from the given series.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CriteriaError {
    /// The two series have different lengths.
    #[error("the series have different lengths ({0} and {1} samples)")]
    LengthMismatch(usize, usize),
    /// Fewer samples than the criterion needs.
    #[error("too few samples ({0}; at least {1} needed)")]
    TooShort(usize, usize),
    /// A sample is NaN or infinite.
    #[error("sample {0} is not finite")]
    NotFinite(usize),
    /// The reference (or desired) series is identically zero: a normalized error is undefined.
    #[error("the reference series is zero everywhere (a normalized error is undefined)")]
    ZeroReference,
    /// The time step is not positive and finite.
    #[error("the time step {0} is not positive and finite")]
    BadTimeStep(String),
}

fn check_pair(actual: &[f64], reference: &[f64], min: usize) -> Result<(), CriteriaError> {
    if actual.len() != reference.len() {
        return Err(CriteriaError::LengthMismatch(actual.len(), reference.len()));
    }
    if actual.len() < min {
        return Err(CriteriaError::TooShort(actual.len(), min));
    }
    for (k, (a, r)) in actual.iter().zip(reference).enumerate() {
        if !a.is_finite() || !r.is_finite() {
            return Err(CriteriaError::NotFinite(k));
        }
    }
    Ok(())
}

/// Normalized RMS error `σ(x − r) / σ(r)` of `actual` against `reference`, `σ` the standard
/// deviation (means removed; the `1/(N−1)` factors cancel): J2 with `actual` the measured and
/// `reference` the desired displacement; J4, J6, J7 on responses.
pub fn normalized_rms_error(actual: &[f64], reference: &[f64]) -> Result<f64, CriteriaError> {
    check_pair(actual, reference, 1)?;
    let n = actual.len() as f64;
    let (mut me, mut mr) = (0.0, 0.0);
    for (a, r) in actual.iter().zip(reference) {
        me += a - r;
        mr += r;
    }
    me /= n;
    mr /= n;
    let (mut e2, mut r2) = (0.0, 0.0);
    for (a, r) in actual.iter().zip(reference) {
        let e = a - r - me;
        e2 += e * e;
        r2 += (r - mr) * (r - mr);
    }
    if r2 == 0.0 {
        return Err(CriteriaError::ZeroReference);
    }
    Ok((e2 / r2).sqrt())
}

/// Normalized peak error `max_k |x_k − r_k| / max_k |r_k|` of `actual` against `reference`
/// (J3 with `actual` the measured and `reference` the desired displacement; J5, J8, J9 on
/// responses).
pub fn normalized_peak_error(actual: &[f64], reference: &[f64]) -> Result<f64, CriteriaError> {
    check_pair(actual, reference, 1)?;
    let (mut emax, mut rmax) = (0.0f64, 0.0f64);
    for (a, r) in actual.iter().zip(reference) {
        emax = emax.max((a - r).abs());
        rmax = rmax.max(r.abs());
    }
    if rmax == 0.0 {
        return Err(CriteriaError::ZeroReference);
    }
    Ok(emax / rmax)
}

/// J1: the delay of `measured` behind `desired`, sampled every `dt`, by cross-correlation: the
/// lag `ℓ` (whole samples, `|ℓ| ≤ max_lag`, bounded by the series length minus two) whose
/// correlation coefficient between `m_k` and `d_{k−ℓ}` over their overlap (means of the overlap
/// removed, as MATLAB's `corr` in the benchmark's evaluation script) is largest, times `dt`. Ties
/// go to the smallest `|ℓ|`. Negative: the measurement leads the target (over-compensation).
pub fn cross_correlation_delay(
    desired: &[f64],
    measured: &[f64],
    dt: f64,
    max_lag: usize,
) -> Result<f64, CriteriaError> {
    if !(dt.is_finite() && dt > 0.0) {
        return Err(CriteriaError::BadTimeStep(format!("{dt}")));
    }
    check_pair(measured, desired, 3)?;
    let n = desired.len();
    let top = max_lag.min(n - 2) as isize;
    let rho = |lag: isize| -> f64 {
        let lo = lag.max(0) as usize;
        let hi = (n as isize + lag.min(0)) as usize;
        let len = (hi - lo) as f64;
        let (mut mm, mut md) = (0.0, 0.0);
        for k in lo..hi {
            mm += measured[k];
            md += desired[(k as isize - lag) as usize];
        }
        mm /= len;
        md /= len;
        let (mut smd, mut smm, mut sdd) = (0.0, 0.0, 0.0);
        for k in lo..hi {
            let dk = desired[(k as isize - lag) as usize] - md;
            let mk = measured[k] - mm;
            smd += mk * dk;
            smm += mk * mk;
            sdd += dk * dk;
        }
        let den = (smm * sdd).sqrt();
        if den > 0.0 {
            smd / den
        } else {
            f64::NEG_INFINITY
        }
    };
    let mut best = (0isize, rho(0));
    for l in 1..=top {
        for lag in [l, -l] {
            let r = rho(lag);
            if r > best.1 {
                best = (lag, r);
            }
        }
    }
    if best.1 == f64::NEG_INFINITY {
        return Err(CriteriaError::ZeroReference);
    }
    Ok(best.0 as f64 * dt)
}

/// J1–J3 of one actuator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrackingCriteria {
    /// J1: delay of the measured behind the desired displacement (s), by cross-correlation.
    pub j1_delay: f64,
    /// J2: normalized RMS tracking error.
    pub j2_nrms: f64,
    /// J3: normalized peak tracking error.
    pub j3_peak: f64,
}

/// J1–J3 from the desired and measured displacement of one actuator sampled every `dt`
/// (`max_lag` bounds the J1 search, in samples).
pub fn tracking_criteria(
    desired: &[f64],
    measured: &[f64],
    dt: f64,
    max_lag: usize,
) -> Result<TrackingCriteria, CriteriaError> {
    Ok(TrackingCriteria {
        j1_delay: cross_correlation_delay(desired, measured, dt, max_lag)?,
        j2_nrms: normalized_rms_error(measured, desired)?,
        j3_peak: normalized_peak_error(measured, desired)?,
    })
}

/// Normalized RMS and peak errors of one response channel against the reference run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResponseCriteria {
    /// `σ(x − r) / σ(r)`.
    pub nrms: f64,
    /// `max |x − r| / max |r|`.
    pub peak: f64,
}

/// The response criteria (J4–J9 for three channels) of `response` against `reference`.
pub fn response_criteria(
    response: &[f64],
    reference: &[f64],
) -> Result<ResponseCriteria, CriteriaError> {
    Ok(ResponseCriteria {
        nrms: normalized_rms_error(response, reference)?,
        peak: normalized_peak_error(response, reference)?,
    })
}

/// The benchmark numbering of the response criteria of `n` channels, the first being the tested
/// storey: channel 0 has J4 (RMS) and J5 (peak); channel `i ≥ 1` has `J(5+i)` (RMS) and
/// `J(4+n+i)` (peak). For the benchmark's three storeys: (4, 5), (6, 8), (7, 9).
pub fn response_criterion_numbers(n: usize, i: usize) -> (usize, usize) {
    if i == 0 {
        (4, 5)
    } else {
        (5 + i, 4 + n + i)
    }
}
