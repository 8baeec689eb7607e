//! The vRTHS benchmark criteria J1–J9 (`hybridsim::analysis::tracking`) on synthetic signals
//! with known answers: a pure delay of k samples gives J1 = k·Δt, a scaled signal gives the
//! known normalized RMS and peak errors, and unusable series give errors, never panics.

use hybridsim::analysis::tracking::{
    cross_correlation_delay, normalized_peak_error, normalized_rms_error, response_criteria,
    response_criterion_numbers, tracking_criteria, CriteriaError,
};

/// A broadband test signal (three incommensurate sines under a ramp-up), `n` samples of `dt`.
fn signal(n: usize, dt: f64) -> Vec<f64> {
    (0..n)
        .map(|k| {
            let t = k as f64 * dt;
            let ramp = (t / 0.5).min(1.0);
            ramp * ((2.0 * std::f64::consts::PI * 1.3 * t).sin()
                + 0.4 * (2.0 * std::f64::consts::PI * 3.7 * t + 0.3).sin()
                + 0.2 * (2.0 * std::f64::consts::PI * 7.1 * t).cos())
        })
        .collect()
}

/// `x` delayed by `k` samples (the first `k` samples hold the initial value).
fn delayed(x: &[f64], k: usize) -> Vec<f64> {
    (0..x.len()).map(|i| x[i.saturating_sub(k)]).collect()
}

#[test]
fn a_pure_delay_of_k_samples_gives_j1_k_dt() {
    let dt = 1.0 / 1024.0;
    let d = signal(4096, dt);
    for k in [0usize, 1, 7, 19, 40] {
        let m = delayed(&d, k);
        let j1 = cross_correlation_delay(&d, &m, dt, 100).unwrap();
        assert_eq!(j1, k as f64 * dt, "delay of {k} samples");
    }
}

#[test]
fn a_measurement_that_leads_gives_a_negative_j1() {
    let dt = 0.001;
    let m = signal(3000, dt);
    let d = delayed(&m, 5);
    let j1 = cross_correlation_delay(&d, &m, dt, 50).unwrap();
    assert_eq!(j1, -5.0 * dt);
}

#[test]
fn a_delay_beyond_the_search_window_is_not_reported_inside_it_as_exact() {
    // The true lag (30) lies outside |ℓ| ≤ 10: J1 stays within the window.
    let dt = 0.001;
    let d = signal(3000, dt);
    let m = delayed(&d, 30);
    let j1 = cross_correlation_delay(&d, &m, dt, 10).unwrap();
    assert!(j1.abs() <= 10.0 * dt + 1e-15, "{j1}");
}

#[test]
fn a_scaled_measurement_gives_the_known_rms_and_peak_errors() {
    // m = (1 + a) d: e = a d, so J2 = J3 = |a| whatever d is.
    let dt = 0.002;
    let d = signal(2500, dt);
    for a in [0.05, -0.2, 0.5] {
        let m: Vec<f64> = d.iter().map(|x| (1.0 + a) * x).collect();
        let c = tracking_criteria(&d, &m, dt, 100).unwrap();
        assert_eq!(c.j1_delay, 0.0);
        assert!(
            (c.j2_nrms - a.abs()).abs() < 1e-12,
            "J2 {} for a = {a}",
            c.j2_nrms
        );
        assert!(
            (c.j3_peak - a.abs()).abs() < 1e-12,
            "J3 {} for a = {a}",
            c.j3_peak
        );
    }
}

#[test]
fn an_offset_counts_in_the_peak_error_but_not_in_the_rms_error() {
    // d = sin over whole periods, m = d + c + a·sin(2·ω t): J2 = σ(e)/σ(d) = a (the offset c is
    // removed with the means, as the benchmark's standard deviations do); max|e| = c + a on a
    // sample where the second sine peaks, max|d| = 1, so J3 = c + a.
    let n = 4000;
    let w = 2.0 * std::f64::consts::PI / 100.0;
    let d: Vec<f64> = (0..n).map(|k| (w * k as f64).sin()).collect();
    let (c, a) = (0.01, 0.02);
    let m: Vec<f64> = (0..n)
        .map(|k| d[k] + c + a * (2.0 * w * k as f64 + std::f64::consts::FRAC_PI_2).sin())
        .collect();
    let j2 = normalized_rms_error(&m, &d).unwrap();
    let j3 = normalized_peak_error(&m, &d).unwrap();
    assert!((j2 - a).abs() < 1e-12, "{j2}");
    assert!((j3 - (c + a)).abs() < 1e-12, "{j3}");
}

#[test]
fn j1_ignores_an_offset_of_the_measurement() {
    // The correlation coefficient removes the means: a constant offset does not move J1.
    let dt = 0.001;
    let d = signal(3000, dt);
    let m: Vec<f64> = delayed(&d, 9).iter().map(|x| x + 5.0).collect();
    assert_eq!(cross_correlation_delay(&d, &m, dt, 50).unwrap(), 9.0 * dt);
}

#[test]
fn the_delay_of_a_sine_maps_to_its_rms_tracking_error() {
    // m(t) = sin(ω(t − τ)) over whole periods: e = m − d has RMS 2|sin(ωτ/2)|/√2 and d has
    // RMS 1/√2, so J2 = 2 |sin(ωτ/2)|; J1 = τ.
    let dt = 1.0 / 2048.0;
    let f = 4.0;
    let w = 2.0 * std::f64::consts::PI * f;
    let n = 2048 * 4;
    let k = 12usize;
    let tau = k as f64 * dt;
    let d: Vec<f64> = (0..n).map(|i| (w * i as f64 * dt).sin()).collect();
    let m: Vec<f64> = (0..n).map(|i| (w * (i as f64 * dt - tau)).sin()).collect();
    let c = tracking_criteria(&d, &m, dt, 64).unwrap();
    assert_eq!(c.j1_delay, tau);
    let expect = 2.0 * (w * tau / 2.0).sin().abs();
    assert!(
        (c.j2_nrms - expect).abs() < 1e-9,
        "{} vs {expect}",
        c.j2_nrms
    );
}

#[test]
fn response_criteria_number_like_the_benchmark_for_three_storeys() {
    // The benchmark's evaluation script: J4/J5 RMS/peak of storey 1, J6/J7 RMS of storeys 2/3,
    // J8/J9 peak of storeys 2/3.
    assert_eq!(response_criterion_numbers(3, 0), (4, 5));
    assert_eq!(response_criterion_numbers(3, 1), (6, 8));
    assert_eq!(response_criterion_numbers(3, 2), (7, 9));
    assert_eq!(response_criterion_numbers(1, 0), (4, 5));
    assert_eq!(response_criterion_numbers(2, 1), (6, 7));
    let r = signal(1000, 0.01);
    let x: Vec<f64> = r.iter().map(|v| 0.9 * v).collect();
    let c = response_criteria(&x, &r).unwrap();
    assert!(
        (c.nrms - 0.1).abs() < 1e-12 && (c.peak - 0.1).abs() < 1e-12,
        "{c:?}"
    );
    let same = response_criteria(&r, &r).unwrap();
    assert_eq!((same.nrms, same.peak), (0.0, 0.0));
}

#[test]
fn unusable_series_are_errors() {
    let d = signal(100, 0.01);
    assert_eq!(
        normalized_rms_error(&d[..99], &d),
        Err(CriteriaError::LengthMismatch(99, 100))
    );
    assert_eq!(
        normalized_peak_error(&d, &vec![0.0; 100]),
        Err(CriteriaError::ZeroReference)
    );
    assert_eq!(
        normalized_rms_error(&[], &[]),
        Err(CriteriaError::TooShort(0, 1))
    );
    let mut bad = d.clone();
    bad[17] = f64::NAN;
    assert_eq!(
        tracking_criteria(&d, &bad, 0.01, 10),
        Err(CriteriaError::NotFinite(17))
    );
    assert!(matches!(
        cross_correlation_delay(&d, &d, 0.0, 10),
        Err(CriteriaError::BadTimeStep(_))
    ));
    assert_eq!(
        cross_correlation_delay(&[0.0; 10], &[0.0; 10], 0.01, 3),
        Err(CriteriaError::ZeroReference)
    );
    // Messages say what is wrong.
    assert!(CriteriaError::ZeroReference.to_string().contains("zero"));
}
