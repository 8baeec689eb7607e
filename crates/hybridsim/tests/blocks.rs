//! Block models of the transfer system against analytic responses: the matrix exponential, the
//! zero-order hold (exact at the samples for a step), the first-order hold (exact for a ramp),
//! Tustin's frequency warping and prewarping, chains against products, the nonlinear blocks'
//! edge cases, the servo-valve + actuator + control–structure interaction plant (Dyke et al.
//! 1995) against its closed-form transfer function, and a chain's step without allocation.
mod common;
use hybridsim::model::lab::{BlockSpec, Discretization, ServoValveCsi as CsiParams};
use hybridsim::physical::blocks::{
    expm, AnyBlock, Block, Delay, Quantizer, RateLimit, Saturation, Series, ServoValveCsi,
    StateSpace,
};
use nalgebra::{Complex, DMatrix};
use std::f64::consts::PI;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

const TUSTIN: Discretization = Discretization::Tustin { prewarp_hz: None };

/// First- and second-order references: τ = 20 ms; ω_n = 2π·12 Hz, ζ = 0.3.
const TAU: f64 = 0.02;
const WN: f64 = 2.0 * PI * 12.0;
const ZETA: f64 = 0.3;

fn first_order(how: Discretization, dt: f64) -> StateSpace {
    StateSpace::transfer_function(&[1.0], &[TAU, 1.0], dt, how).unwrap()
}

fn second_order(how: Discretization, dt: f64) -> StateSpace {
    StateSpace::transfer_function(&[WN * WN], &[1.0, 2.0 * ZETA * WN, WN * WN], dt, how).unwrap()
}

/// Unit-step responses.
fn step_1(t: f64) -> f64 {
    1.0 - (-t / TAU).exp()
}
fn step_2(t: f64) -> f64 {
    let (s, wd) = (ZETA * WN, WN * (1.0 - ZETA * ZETA).sqrt());
    1.0 - (-s * t).exp() * ((wd * t).cos() + s / wd * (wd * t).sin())
}
/// Unit-ramp responses.
fn ramp_1(t: f64) -> f64 {
    t - TAU * (1.0 - (-t / TAU).exp())
}
fn ramp_2(t: f64) -> f64 {
    let (s, wd) = (ZETA * WN, WN * (1.0 - ZETA * ZETA).sqrt());
    t - 2.0 * ZETA / WN
        + (-s * t).exp()
            * (2.0 * ZETA / WN * (wd * t).cos() + (2.0 * ZETA * ZETA - 1.0) / wd * (wd * t).sin())
}

/// Largest |y_k − r(k Δt)| over `n` ticks of input `u(k Δt)`.
fn max_error(b: &mut dyn Block, u: &dyn Fn(f64) -> f64, r: &dyn Fn(f64) -> f64, dt: f64) -> f64 {
    (0..400)
        .map(|k| {
            let t = k as f64 * dt;
            (b.step(u(t)) - r(t)).abs()
        })
        .fold(0.0, f64::max)
}

/// Complex polynomial value p(jω) (highest power first).
fn poly_jw(p: &[f64], w: f64) -> Complex<f64> {
    p.iter().fold(Complex::new(0.0, 0.0), |acc, c| {
        acc * Complex::new(0.0, w) + c
    })
}

fn poly_mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// Roots of a real polynomial (highest power first) as the eigenvalues of its companion matrix.
fn roots(p: &[f64]) -> Vec<Complex<f64>> {
    let n = p.len() - 1;
    let mut m = DMatrix::zeros(n, n);
    for j in 0..n {
        m[(0, j)] = -p[j + 1] / p[0];
    }
    for i in 1..n {
        m[(i, i - 1)] = 1.0;
    }
    m.complex_eigenvalues().iter().copied().collect()
}

/// Steady-state response of `outputs(step(sin ω t_k))` as complex gains (least squares on
/// `sin`, `cos` over the last `fit` of `total` ticks).
fn sine_response(
    step: &mut dyn FnMut(f64) -> Vec<f64>,
    w: f64,
    dt: f64,
    total: usize,
    fit: usize,
) -> Vec<Complex<f64>> {
    let mut ys: Vec<Vec<f64>> = Vec::new();
    for k in 0..total {
        let y = step((w * k as f64 * dt).sin());
        if k >= total - fit {
            ys.push(y);
        }
    }
    let p = ys[0].len();
    (0..p)
        .map(|i| {
            // y ≈ a sin + b cos; normal equations.
            let (mut ss, mut sc, mut cc, mut ys_, mut yc) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (j, y) in ys.iter().enumerate() {
                let th = w * (total - fit + j) as f64 * dt;
                let (s, c) = th.sin_cos();
                ss += s * s;
                sc += s * c;
                cc += c * c;
                ys_ += y[i] * s;
                yc += y[i] * c;
            }
            let det = ss * cc - sc * sc;
            let a = (ys_ * cc - yc * sc) / det;
            let b = (yc * ss - ys_ * sc) / det;
            // a sin θ + b cos θ = Im((a + j b) e^{jθ}).
            Complex::new(a, b)
        })
        .collect()
}

#[test]
fn the_matrix_exponential_matches_closed_forms() {
    // A rotation: exp([[0, ω], [−ω, 0]] t) = [[cos ωt, sin ωt], [−sin ωt, cos ωt]].
    for wt in [1e-6, 0.3, 2.0, 25.0] {
        let e = expm(&DMatrix::from_row_slice(2, 2, &[0.0, wt, -wt, 0.0])).unwrap();
        let r = DMatrix::from_row_slice(2, 2, &[wt.cos(), wt.sin(), -wt.sin(), wt.cos()]);
        assert!((e - r).amax() < 1e-12, "rotation by {wt}");
    }
    // A Jordan block: exp([[λ, 1], [0, λ]] t) = e^{λt} [[1, t], [0, 1]].
    let (l, t) = (-3.0, 0.7);
    let e = expm(&DMatrix::from_row_slice(2, 2, &[l * t, t, 0.0, l * t])).unwrap();
    let r = DMatrix::from_row_slice(2, 2, &[1.0, t, 0.0, 1.0]) * (l * t).exp();
    assert!((e - r).amax() < 1e-14);
    // A non-finite matrix is refused, not exponentiated.
    assert!(expm(&DMatrix::from_row_slice(1, 1, &[f64::NAN])).is_err());
}

#[test]
fn zoh_is_exact_at_the_samples_for_a_step() {
    let dt = 1.0 / 1024.0;
    let step = |_: f64| 1.0;
    let e1 = max_error(
        &mut first_order(Discretization::Zoh, dt),
        &step,
        &step_1,
        dt,
    );
    let e2 = max_error(
        &mut second_order(Discretization::Zoh, dt),
        &step,
        &step_2,
        dt,
    );
    assert!(e1 < 1e-13 && e2 < 1e-13, "ZOH step errors {e1:e}, {e2:e}");
    // Tustin is not exact for a step: the test can tell them apart.
    let t2 = max_error(&mut second_order(TUSTIN, dt), &step, &step_2, dt);
    assert!(t2 > 1e-4, "Tustin step error {t2:e}");
    // The same system written as a state space gives the same samples.
    let spec = BlockSpec::StateSpace {
        a: vec![vec![0.0, 1.0], vec![-WN * WN, -2.0 * ZETA * WN]],
        b: vec![0.0, WN * WN],
        c: vec![1.0, 0.0],
        d: 0.0,
        discretization: Discretization::Zoh,
    };
    let mut ss = AnyBlock::new(&spec, dt).unwrap();
    let e = max_error(&mut ss, &step, &step_2, dt);
    assert!(e < 1e-13, "state-space ZOH step error {e:e}");
}

#[test]
fn foh_is_exact_for_a_ramp() {
    let dt = 1.0 / 512.0;
    let ramp = |t: f64| t;
    let e1 = max_error(
        &mut first_order(Discretization::Foh, dt),
        &ramp,
        &ramp_1,
        dt,
    );
    let e2 = max_error(
        &mut second_order(Discretization::Foh, dt),
        &ramp,
        &ramp_2,
        dt,
    );
    assert!(e1 < 1e-14 && e2 < 1e-14, "FOH ramp errors {e1:e}, {e2:e}");
    // The zero-order hold sees a staircase instead of the ramp: about half a tick late.
    let z1 = max_error(
        &mut first_order(Discretization::Zoh, dt),
        &ramp,
        &ramp_1,
        dt,
    );
    assert!(z1 > 0.4 * dt && z1 < 0.6 * dt, "ZOH ramp error {z1:e}");
    // And a FOH step is not exact (the hold ramps between 0 and 1 over the first tick).
    let step = |_: f64| 1.0;
    let f = max_error(
        &mut first_order(Discretization::Foh, dt),
        &step,
        &step_1,
        dt,
    );
    assert!(f > 1e-3, "FOH step error {f:e}");
}

#[test]
fn zoh_and_foh_frequency_responses_match_their_z_transforms() {
    // For 1/(τ s + 1), a = e^{−Δt/τ}: the ZOH equivalent is (1 − a)/(z − a); the FOH
    // equivalent, (z − 1)²/(Δt z) · Z{G(s)/s²}, is 1 − τ(z − 1)/Δt + τ(z − 1)²/(Δt (z − a)).
    let dt = 1.0 / 200.0;
    let a = (-dt / TAU).exp();
    for f in [1.0, 9.0, 40.0] {
        let w = 2.0 * PI * f;
        let z = Complex::new(0.0, w * dt).exp();
        let zoh = (1.0 - a) / (z - a);
        let foh = 1.0 - (z - 1.0) * TAU / dt + (z - 1.0) * (z - 1.0) * TAU / (dt * (z - a));
        let mut b = first_order(Discretization::Zoh, dt);
        let h = sine_response(&mut |u| vec![b.step(u)], w, dt, 3000, 2000)[0];
        assert!((h - zoh).norm() < 1e-10, "ZOH at {f} Hz: {h} vs {zoh}");
        let mut b = first_order(Discretization::Foh, dt);
        let h = sine_response(&mut |u| vec![b.step(u)], w, dt, 3000, 2000)[0];
        assert!((h - foh).norm() < 1e-10, "FOH at {f} Hz: {h} vs {foh}");
        // The two holds differ (ZOH lags by about half a tick more).
        assert!((zoh - foh).norm() > 1e-4, "{zoh} vs {foh}");
    }
}

#[test]
fn tustin_warps_frequency_as_the_bilinear_map_predicts() {
    let dt = 1.0 / 256.0;
    let den = [1.0, 2.0 * ZETA * WN, WN * WN];
    let g = |w: f64| WN * WN / poly_jw(&den, w);
    // A tone at 40 % of Nyquist: the bilinear map puts it at ω_a = (2/Δt) tan(ωΔt/2).
    let w = 0.4 * PI / dt;
    let wa = 2.0 / dt * (w * dt / 2.0).tan();
    let mut b = second_order(TUSTIN, dt);
    let h = sine_response(&mut |u| vec![b.step(u)], w, dt, 6000, 3000)[0];
    assert!(
        (h - g(wa)).norm() < 1e-9 * g(wa).norm(),
        "{h} vs G(jω_a) {}",
        g(wa)
    );
    assert!(
        (h - g(w)).norm() > 1e-2 * g(w).norm(),
        "no warping seen: {h} vs {}",
        g(w)
    );
    // Prewarped at 12 Hz (the resonance): exact there.
    let f0 = 12.0;
    let w0 = 2.0 * PI * f0;
    let mut b = second_order(
        Discretization::Tustin {
            prewarp_hz: Some(f0),
        },
        dt,
    );
    let h = sine_response(&mut |u| vec![b.step(u)], w0, dt, 6000, 3000)[0];
    assert!((h - g(w0)).norm() < 1e-9 * g(w0).norm(), "{h} vs {}", g(w0));
    // Without prewarping the resonance is off.
    let mut b = second_order(TUSTIN, dt);
    let h = sine_response(&mut |u| vec![b.step(u)], w0, dt, 6000, 3000)[0];
    assert!((h - g(w0)).norm() > 1e-3 * g(w0).norm());
    // A prewarp frequency at or above Nyquist is refused.
    assert!(StateSpace::transfer_function(
        &[1.0],
        &[TAU, 1.0],
        dt,
        Discretization::Tustin {
            prewarp_hz: Some(128.0)
        }
    )
    .is_err());
}

#[test]
fn a_chain_equals_the_product() {
    let dt = 1.0 / 1000.0;
    // Tustin maps products to products: Tustin(G1) then Tustin(G2) = Tustin(G1 G2).
    let (n1, d1) = ([1.0], [TAU, 1.0]);
    let (n2, d2) = ([WN * WN], [1.0, 2.0 * ZETA * WN, WN * WN]);
    let spec = |num: &[f64], den: &[f64], how| BlockSpec::TransferFunction {
        num: num.to_vec(),
        den: den.to_vec(),
        discretization: how,
    };
    let mut chain = Series::new(&[spec(&n1, &d1, TUSTIN), spec(&n2, &d2, TUSTIN)], dt).unwrap();
    let mut product =
        StateSpace::transfer_function(&poly_mul(&n1, &n2), &poly_mul(&d1, &d2), dt, TUSTIN)
            .unwrap();
    let u = |k: usize| (0.013 * k as f64).sin() + if k > 50 { 0.5 } else { 0.0 };
    let mut err = 0.0f64;
    for k in 0..2000 {
        err = err.max((chain.step(u(k)) - product.step(u(k))).abs());
    }
    assert!(err < 1e-12, "Tustin chain vs product: {err:e}");
    // ZOH does not map products to products, but a chain's frequency response is the product
    // of its blocks' responses.
    let w = 2.0 * PI * 7.0;
    let mut chain = Series::new(
        &[
            spec(&n1, &d1, Discretization::Zoh),
            spec(&n2, &d2, Discretization::Zoh),
        ],
        dt,
    )
    .unwrap();
    let hc = sine_response(&mut |u| vec![chain.step(u)], w, dt, 8000, 4000)[0];
    let mut b1 = first_order(Discretization::Zoh, dt);
    let h1 = sine_response(&mut |u| vec![b1.step(u)], w, dt, 8000, 4000)[0];
    let mut b2 = second_order(Discretization::Zoh, dt);
    let h2 = sine_response(&mut |u| vec![b2.step(u)], w, dt, 8000, 4000)[0];
    assert!((hc - h1 * h2).norm() < 1e-9, "{hc} vs {}", h1 * h2);
    // A delay of three ticks in a chain shifts the output by three ticks.
    let mut plain = Series::new(&[spec(&n1, &d1, TUSTIN)], dt).unwrap();
    let mut delayed = Series::new(
        &[spec(&n1, &d1, TUSTIN), BlockSpec::Delay { delay: 3.0 * dt }],
        dt,
    )
    .unwrap();
    let out: Vec<f64> = (0..300).map(|k| plain.step(u(k))).collect();
    for k in 0..300 {
        let y = delayed.step(u(k));
        let want = if k >= 3 { out[k - 3] } else { 0.0 };
        assert!((y - want).abs() < 1e-15, "tick {k}: {y} vs {want}");
    }
}

#[test]
fn a_fractional_delay_interpolates_between_ticks() {
    let dt = 1e-3;
    let mut d = Delay::new(2.25e-3, dt).unwrap();
    assert!((d.ticks() - 2.25).abs() < 1e-12);
    // A ramp of slope 1 per tick comes out 2.25 ticks late.
    for k in 0..20 {
        let y = d.step(k as f64);
        if k >= 3 {
            assert!((y - (k as f64 - 2.25)).abs() < 1e-12, "tick {k}: {y}");
        }
    }
    assert!(Delay::new(-1e-3, dt).is_err());
    assert!(Delay::new(f64::NAN, dt).is_err());
    assert!(Delay::new(1e4, dt).is_err(), "10⁷ ticks must be refused");
}

#[test]
fn quantizer_edges() {
    let mut q = Quantizer::new(0.1, 1.0).unwrap();
    // Mid-tread: zero is a level, values within half a step of zero read zero.
    assert_eq!(q.step(0.0), 0.0);
    assert_eq!(q.step(0.0499), 0.0);
    assert_eq!(q.step(-0.0499), 0.0);
    // Exactly half a step rounds away from zero, symmetrically.
    let half = q.step(0.05);
    assert!((half - 0.1).abs() < 1e-15 && (q.step(-0.05) + half).abs() < 1e-15);
    assert!((q.step(0.349) - 0.3).abs() < 1e-15);
    // Saturating at ± range.
    assert!((q.step(7.0) - 1.0).abs() < 1e-15);
    assert!((q.step(-7.0) + 1.0).abs() < 1e-15);
    assert!((q.step(f64::INFINITY) - 1.0).abs() < 1e-15);
    // A range that is not a whole number of steps saturates at the last level inside it.
    let mut q = Quantizer::new(0.3, 1.0).unwrap();
    assert!((q.step(1.0) - 0.9).abs() < 1e-15);
    assert!((q.step(-5.0) + 0.9).abs() < 1e-15);
    // Bad parameters are refused.
    assert!(Quantizer::new(0.0, 1.0).is_err());
    assert!(Quantizer::new(2.0, 1.0).is_err());
    assert!(Quantizer::new(0.1, f64::INFINITY).is_err());
    assert!(Quantizer::new(1e-300, 1.0).is_err(), "too many levels");
}

#[test]
fn saturation_edges() {
    let mut s = Saturation::new(-0.5, 2.0).unwrap();
    assert_eq!(s.step(1.0), 1.0);
    assert_eq!(s.step(2.0), 2.0);
    assert_eq!(s.step(2.0000001), 2.0);
    assert_eq!(s.step(-3.0), -0.5);
    assert_eq!(s.step(f64::NEG_INFINITY), -0.5);
    let mut one_sided = Saturation::new(f64::NEG_INFINITY, 0.0).unwrap();
    assert_eq!(one_sided.step(-1e300), -1e300);
    assert_eq!(one_sided.step(1.0), 0.0);
    assert!(Saturation::new(1.0, 1.0).is_err());
    assert!(Saturation::new(f64::NAN, 1.0).is_err());
}

#[test]
fn rate_limit_edges() {
    let dt = 0.01;
    let mut r = RateLimit::new(2.0, dt).unwrap(); // 0.02 per tick
    r.reset(0.0);
    // A step of 0.1 is reached in exactly five ticks, without overshoot.
    let ys: Vec<f64> = (0..8).map(|_| r.step(0.1)).collect();
    for (k, y) in ys.iter().enumerate() {
        let want = (0.02 * (k + 1) as f64).min(0.1);
        assert!((y - want).abs() < 1e-15, "tick {k}: {y} vs {want}");
    }
    // Slow inputs pass unchanged, downwards too.
    assert!((r.step(0.095) - 0.095).abs() < 1e-15);
    assert!((r.step(0.0) - 0.075).abs() < 1e-15);
    // A NaN input leaves the output where it was.
    assert!((r.step(f64::NAN) - 0.075).abs() < 1e-15);
    // Reset moves it without a limited transition.
    r.reset(-3.0);
    assert!((r.step(-3.0) + 3.0).abs() < 1e-15);
    assert!(RateLimit::new(0.0, dt).is_err());
    assert!(RateLimit::new(f64::INFINITY, dt).is_err());
}

#[test]
fn reset_puts_a_chain_at_rest() {
    let dt = 1.0 / 1024.0;
    let specs = [
        BlockSpec::TransferFunction {
            num: vec![2.0],
            den: vec![TAU, 1.0],
            discretization: Discretization::Foh,
        },
        BlockSpec::RateLimit { rate: 1.0 },
        BlockSpec::Delay { delay: 0.0035 },
        BlockSpec::FirstOrder {
            tau: 0.01,
            discretization: TUSTIN,
        },
    ];
    let mut chain = Series::new(&specs, dt).unwrap();
    let u = chain.reset(0.03);
    // The first block has DC gain 2: the input that holds the chain at 0.03 is 0.015.
    assert!((u - 0.015).abs() < 1e-15, "{u}");
    for k in 0..200 {
        let y = chain.step(u);
        assert!((y - 0.03).abs() < 1e-14, "tick {k}: {y}");
    }
}

/// Plant parameters: a 100 Hz servo-valve, a hydraulic actuator on a 1 kN/mm specimen.
fn csi(proportional_gain: Option<f64>) -> CsiParams {
    CsiParams {
        valve_gain: 2.0e-3,
        valve_frequency: 100.0,
        valve_damping: 0.7,
        a1: 4.0e9,
        a2: 3.0e7,
        a3: 200.0,
        mass: 150.0,
        damping: 2.0e3,
        stiffness: 1.0e6,
        proportional_gain,
    }
}

/// The closed form, derived here from the equations of motion (Dyke et al. 1995):
/// `x/u = k_v ω_v² a1 / ((s² + 2ζω_v s + ω_v²)((s + a3)(m s² + c s + k) + a2 s))` and
/// `f/u = (m s² + c s + k) x/u`.
fn csi_closed_form(p: &CsiParams) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let w = 2.0 * PI * p.valve_frequency;
    let specimen = [p.mass, p.damping, p.stiffness];
    let mut chamber = poly_mul(&[1.0, p.a3], &specimen);
    chamber[2] += p.a2;
    let den = poly_mul(&[1.0, 2.0 * p.valve_damping * w, w * w], &chamber);
    let num_x = vec![p.valve_gain * w * w * p.a1];
    let num_f = poly_mul(&num_x, &specimen);
    (num_x, num_f, den)
}

#[test]
fn the_servo_valve_csi_plant_matches_its_closed_form() {
    let dt = 1.0 / 4096.0;
    let p = csi(None);
    let (num_x, num_f, den) = csi_closed_form(&p);
    // DC gain: x/u(0) = k_v a1 / (a3 k); a step settles there, and the force at k x.
    let dc = p.valve_gain * p.a1 / (p.a3 * p.stiffness);
    let mut b = ServoValveCsi::new(&p, dt, Discretization::Zoh).unwrap();
    assert!((b.plant().dc_gain(0) - dc).abs() < 1e-9 * dc);
    let mut y = 0.0;
    for _ in 0..(4096 * 3) {
        y = b.step(1.0);
    }
    assert!(
        (y - dc).abs() < 1e-6 * dc,
        "settled at {y}, closed form {dc}"
    );
    assert!((b.force() - p.stiffness * dc).abs() < 1e-6 * p.stiffness * dc);
    // Poles: the ZOH plant's discrete poles are e^{p Δt} of the closed form's.
    let phi_eig: Vec<Complex<f64>> = b
        .plant()
        .phi()
        .complex_eigenvalues()
        .iter()
        .copied()
        .collect();
    let poles = roots(&den);
    assert_eq!(poles.len(), 5);
    for s in &poles {
        assert!(s.re < 0.0, "closed-form pole {s} unstable");
        let z = (s * dt).exp();
        let nearest = phi_eig
            .iter()
            .map(|e| (e - z).norm())
            .fold(f64::INFINITY, f64::min);
        assert!(
            nearest < 1e-8,
            "pole {s}: no e^(pΔt) = {z} among {phi_eig:?}"
        );
    }
    // Gain and phase delay at 5 Hz, with Tustin prewarped there (exact at that frequency).
    let f0 = 5.0;
    let w0 = 2.0 * PI * f0;
    let mut b = ServoValveCsi::new(
        &p,
        dt,
        Discretization::Tustin {
            prewarp_hz: Some(f0),
        },
    )
    .unwrap();
    let h = sine_response(
        &mut |u| {
            b.step(u);
            vec![b.displacement(), b.force()]
        },
        w0,
        dt,
        4096 * 4,
        4096 * 2,
    );
    let gx = poly_jw(&num_x, w0) / poly_jw(&den, w0);
    let gf = poly_jw(&num_f, w0) / poly_jw(&den, w0);
    assert!(
        (h[0] - gx).norm() < 1e-7 * gx.norm(),
        "x/u: {} vs {gx}",
        h[0]
    );
    assert!(
        (h[1] - gf).norm() < 1e-7 * gf.norm(),
        "f/u: {} vs {gf}",
        h[1]
    );
    let delay = -h[0].arg() / w0;
    let delay_closed = -gx.arg() / w0;
    assert!(
        (delay - delay_closed).abs() < 1e-6 * delay_closed,
        "phase delay {delay} s vs {delay_closed} s"
    );
    assert!(delay > 0.0);
    // With the proportional loop the input is the displacement command; its DC gain is
    // k_p G(0) / (1 + k_p G(0)).
    let kp = 50.0;
    let b = ServoValveCsi::new(&csi(Some(kp)), dt, Discretization::Zoh).unwrap();
    let want = kp * dc / (1.0 + kp * dc);
    assert!(
        (b.plant().dc_gain(0) - want).abs() < 1e-9,
        "{}",
        b.plant().dc_gain(0)
    );
}

#[test]
fn a_chain_steps_without_allocating() {
    let dt = 1.0 / 4096.0;
    let specs = [
        BlockSpec::Quantizer {
            resolution: 1e-6,
            range: 0.1,
        },
        BlockSpec::ServoValveCsi {
            params: csi(Some(50.0)),
            discretization: Discretization::Zoh,
        },
        BlockSpec::TransferFunction {
            num: vec![WN * WN],
            den: vec![1.0, 2.0 * ZETA * WN, WN * WN],
            discretization: Discretization::Foh,
        },
        BlockSpec::Delay { delay: 0.0021 },
        BlockSpec::RateLimit { rate: 0.5 },
        BlockSpec::Saturation {
            min: -0.05,
            max: 0.05,
        },
    ];
    let mut chain = Series::new(&specs, dt).unwrap();
    chain.reset(0.0);
    let mut y = 0.0;
    let allocations = common::counting::count(|| {
        for k in 0..4096 {
            y += chain.step(0.01 * (k as f64 * 0.01).sin());
        }
        y += chain.reset(0.001);
    });
    assert_eq!(allocations, 0, "a chain step allocated");
    assert!(y.is_finite());
}

/// A static gain `num = [K], den = [1]` (no state) is a valid block under every discretization
/// (it panicked computing its empty steady state): the output is K times the input.
#[test]
fn a_static_gain_transfer_function_is_a_stateless_block() {
    for how in [
        Discretization::Zoh,
        Discretization::Foh,
        Discretization::Tustin { prewarp_hz: None },
    ] {
        let mut b = StateSpace::transfer_function(&[1.0261], &[1.0], 1e-3, how).unwrap();
        for u in [0.0, 1.0, -2.5, 3.0] {
            assert!((b.step(u) - 1.0261 * u).abs() < 1e-15, "{how:?}");
        }
    }
}
