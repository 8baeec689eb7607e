//! Evaluation criteria of a real-time hybrid test: the tracking of the transfer system and the
//! accuracy of the response against a reference run, after the virtual RTHS (vRTHS) benchmark
//! control problem of Silva et al. (2020).
//!
//! The benchmark scores a test with nine numbers:
//!
//! - **J1**, the time delay between desired (target) displacement `d` and measured displacement
//!   `m`: the lag `ℓ·Δt` whose normalized cross-correlation
//!   `ρ(ℓ) = Σ_k m_k d_{k−ℓ} / √(Σ_k m_k² · Σ_k d_{k−ℓ}²)` (sums over the overlap of the two
//!   series) is largest, searched over `|ℓ| ≤ ℓ_max`, whole samples (see
//!   [`cross_correlation_delay`]). Positive: the measurement lags the target;
//! - **J2**, the normalized RMS tracking error `√(Σ (m_k − d_k)²) / √(Σ d_k²)`
//!   ([`normalized_rms_error`]);
//! - **J3**, the normalized peak tracking error `max_k |m_k − d_k| / max_k |d_k|`
//!   ([`normalized_peak_error`]);
//! - **J4–J6**, the normalized RMS errors `√(Σ (x_k − r_k)²) / √(Σ r_k²)` of the response `x` of
//!   the test against the response `r` of a reference run, one per storey of the benchmark's
//!   three-storey frame, and **J7–J9** the normalized peak errors
//!   `max_k |x_k − r_k| / max_k |r_k|` of the same responses.
//!
//! The response channels of J4–J9 are read here as the benchmark's three storey displacements
//! (J4–J6 RMS, J7–J9 peak, storeys 1–3). The paper could not be consulted while this was
//! written (no copy was at hand), so this reading rests on the benchmark's general description
//! of the criteria; a model with `n` response channels gets `J4 … J(3+n)` (RMS errors, one per
//! channel in the order given) and `J(4+n) … J(3+2n)` (peak errors, same order), which is the
//! benchmark's numbering for `n = 3`. The reference run is the same model with an ideal
//! transfer system (or any run the user trusts), sampled at the same time steps.
//!
//! RMS ratios use sums, not means: the sample counts of numerator and denominator cancel.
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

/// Normalized RMS error `√(Σ (x_k − r_k)²) / √(Σ r_k²)` of `actual` against `reference`
/// (J2 with `actual` the measured and `reference` the desired displacement; J4–J6 on responses).
pub fn normalized_rms_error(actual: &[f64], reference: &[f64]) -> Result<f64, CriteriaError> {
    check_pair(actual, reference, 1)?;
    let (mut e2, mut r2) = (0.0, 0.0);
    for (a, r) in actual.iter().zip(reference) {
        e2 += (a - r) * (a - r);
        r2 += r * r;
    }
    if r2 == 0.0 {
        return Err(CriteriaError::ZeroReference);
    }
    Ok((e2 / r2).sqrt())
}

/// Normalized peak error `max_k |x_k − r_k| / max_k |r_k|` of `actual` against `reference`
/// (J3 with `actual` the measured and `reference` the desired displacement; J7–J9 on
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
/// lag `ℓ` (whole samples, `|ℓ| ≤ max_lag`, bounded by the series length minus two) maximizing
/// the normalized cross-correlation over the overlap
/// `ρ(ℓ) = Σ m_k d_{k−ℓ} / √(Σ m_k² Σ d_{k−ℓ}²)`, times `dt`. Normalizing over the overlap keeps
/// lags that drop the large samples from winning by a smaller sum. Ties go to the smallest
/// `|ℓ|`. Negative: the measurement leads the target (over-compensation).
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
        let (mut smd, mut smm, mut sdd) = (0.0, 0.0, 0.0);
        let lo = lag.max(0) as usize;
        let hi = (n as isize + lag.min(0)) as usize;
        for k in lo..hi {
            let dk = desired[(k as isize - lag) as usize];
            smd += measured[k] * dk;
            smm += measured[k] * measured[k];
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
    /// `√(Σ (x − r)²) / √(Σ r²)`.
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

/// The benchmark numbering of the response criteria of `n` channels: channel `i` (0-based) has
/// its RMS error as `J(4+i)` and its peak error as `J(4+n+i)`.
pub fn response_criterion_numbers(n: usize, i: usize) -> (usize, usize) {
    (4 + i, 4 + n + i)
}
