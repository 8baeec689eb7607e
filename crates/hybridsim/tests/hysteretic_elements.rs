//! Hysteretic elements (Bouc-Wen, Mostaghel, T-CSB, LRB) and their displacement-driven form:
//! closed forms under imposed cyclic displacement, tangents, dissipated energy, parameter
//! checks, and the elements inside the integrators (ALGORITHMS.md A13–A16, E1–E6, E30–E32).
mod common;
use common::*;
use hybridsim::elements::driver::initial_matrices;
use hybridsim::elements::{
    zero_state_tangent, BoucWen, DofRef, Element, ElementClone, ElementDriver, FrictionTable,
    LeadLaw, LeadRubberBearing, Mostaghel, TripleSlidingBearing,
};
use nalgebra::DMatrix;
use num_dual::Dual64;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::f64::consts::PI;

fn ground() -> Vec<DofRef> {
    vec![DofRef::new(1, "x")]
}

fn two_nodes() -> Vec<DofRef> {
    vec![DofRef::new(1, "x"), DofRef::new(2, "x")]
}

/// One sample of an imposed history: deformation, force, states, work, dissipated energy.
#[derive(Debug, Clone)]
struct Sample {
    d: f64,
    r: f64,
    s: Vec<f64>,
    work: f64,
    diss: f64,
}

/// Impose `d(t)`, `ḋ(t)` at `n` driving steps of `dt` on a node-to-ground element (or on node
/// 1 of a two-node element with node 2 fixed); returns the samples including t = 0.
fn drive(
    driver: &mut ElementDriver,
    dt: f64,
    n: usize,
    d: impl Fn(f64) -> f64,
    v: impl Fn(f64) -> f64,
) -> Vec<Sample> {
    let nd = driver.n_dofs();
    let mut out = vec![sample(driver)];
    let mut u = vec![0.0; nd];
    let mut w = vec![0.0; nd];
    for k in 1..=n {
        let t = k as f64 * dt;
        u[0] = d(t);
        w[0] = v(t);
        driver.set_trial(dt, &u, &w).unwrap();
        driver.commit();
        out.push(sample(driver));
    }
    out
}

fn sample(driver: &ElementDriver) -> Sample {
    Sample {
        d: driver.deformation().unwrap(),
        r: driver.force()[0],
        s: driver.states().to_vec(),
        work: driver.work(),
        diss: driver.dissipated_energy(),
    }
}

fn sine(
    driver: &mut ElementDriver,
    amp: f64,
    freq: f64,
    cycles: usize,
    steps_per_cycle: usize,
) -> Vec<Sample> {
    let w = 2.0 * PI * freq;
    let dt = 1.0 / (freq * steps_per_cycle as f64);
    drive(
        driver,
        dt,
        cycles * steps_per_cycle,
        |t| amp * (w * t).sin(),
        |t| amp * w * (w * t).cos(),
    )
}

/// One more cycle of `amp sin(2π f t)` after `done` cycles (time continues).
fn sine_from(
    driver: &mut ElementDriver,
    amp: f64,
    freq: f64,
    done: usize,
    steps_per_cycle: usize,
) -> Vec<Sample> {
    let w = 2.0 * PI * freq;
    let dt = 1.0 / (freq * steps_per_cycle as f64);
    let t0 = done as f64 / freq;
    drive(
        driver,
        dt,
        steps_per_cycle,
        |t| amp * (w * (t + t0)).sin(),
        |t| amp * w * (w * (t + t0)).cos(),
    )
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}

// ---------------------------------------------------------------- Mostaghel closed forms

const K: f64 = 1.66e8;
const ALPHA: f64 = 0.0035;
const DELTA: f64 = 0.001;

#[test]
fn mostaghel_bilinear_closed_forms_converge_with_the_driving_step() {
    // Abbiati et al. (2020) D-CSB parameters; amplitude 10 δ at 0.5 Hz. Steps per cycle not
    // divisible by 4 (90 and 362 ≡ 2 mod 4), so the sampled peaks miss the true one by half a step:
    // the loop-energy error is O(Δt²) and must shrink.
    let amp = 10.0 * DELTA;
    let exact_energy = 4.0 * (1.0 - ALPHA) * K * DELTA * (amp - DELTA);
    let mut errors = Vec::new();
    for n in [90usize, 362] {
        let e = Mostaghel::new(ground(), K, ALPHA, DELTA).unwrap();
        let mut dr = ElementDriver::new(Box::new(e), &[0.0, 0.0]).unwrap();
        let h = sine(&mut dr, amp, 0.5, 2, n);
        let ak = ALPHA * K;
        // Elastic slope k on first loading (d < δ), post-yield slope αk, yield force kδ.
        let mut checked = [0, 0, 0];
        for w in h.windows(2).take(n / 4) {
            let (a, b) = (&w[0], &w[1]);
            if b.d < DELTA {
                assert!(rel((b.r - a.r) / (b.d - a.d), K) < 1e-9, "elastic slope");
                checked[0] += 1;
            } else if a.d > DELTA {
                assert!(
                    rel((b.r - a.r) / (b.d - a.d), ak) < 1e-6,
                    "post-yield slope"
                );
                checked[1] += 1;
            }
            if b.d > DELTA {
                // On the virgin loading branch r = kδ + αk(d − δ): the yield force is kδ.
                let fy = b.r - ak * (b.d - DELTA);
                assert!(
                    rel(fy, K * DELTA) < 1e-9,
                    "yield force {fy} vs {}",
                    K * DELTA
                );
                checked[2] += 1;
            }
        }
        assert!(checked.iter().all(|c| *c > 0), "{checked:?}");
        // Unloading after the peak is elastic again with slope k.
        let ipk = (0..h.len())
            .max_by(|&i, &j| h[i].d.total_cmp(&h[j].d))
            .unwrap();
        let (a, b) = (&h[ipk], &h[ipk + 1]);
        assert!(a.d - b.d < 2.0 * DELTA);
        assert!(rel((b.r - a.r) / (b.d - a.d), K) < 1e-9, "unloading slope");
        // Peak force: the bilinear envelope αk d + (1−α)kδ at the sampled peak (exact) and
        // αkU + (1−α)kδ at the true one (O(Δt²)).
        let rmax = h.iter().map(|s| s.r).fold(f64::MIN, f64::max);
        assert!(rel(rmax, ak * a.d + (1.0 - ALPHA) * K * DELTA) < 1e-9);
        let env = ak * amp + (1.0 - ALPHA) * K * DELTA;
        // Energy of the second (steady) cycle, closed in displacement and state.
        let e1 = &h[n];
        let e2 = &h[2 * n];
        assert!(
            (e1.s[0] - e2.s[0]).abs() < 1e-6 * K * DELTA,
            "loop closes in state"
        );
        let energy = e2.diss - e1.diss;
        let work = e2.work - e1.work;
        let err = rel(energy, exact_energy);
        println!(
            "Mostaghel, {n} driving steps per cycle: r_max {rmax:.6e} N (envelope {env:.6e}, rel {:.3e}), \
             loop energy {energy:.6e} J (closed form {exact_energy:.6e}, rel error {err:.3e}; driver work {work:.6e} J)",
            rel(rmax, env)
        );
        assert!(
            rel(work, energy) < 1e-3,
            "state energy and driver work agree"
        );
        errors.push((err, rel(rmax, env)));
    }
    // The tolerance shrinks with the driving step: O(Δt²), a factor ≈ 16 for 4× more steps.
    let (c, f) = (errors[0], errors[1]);
    assert!(c.0 < 2e-3 && f.0 < 2e-4, "{errors:?}");
    assert!(
        f.0 < c.0 / 8.0,
        "energy error must shrink like Δt²: {errors:?}"
    );
    assert!(
        f.1 < c.1 / 8.0,
        "peak force error must shrink like Δt²: {errors:?}"
    );
}

#[test]
fn mostaghel_two_node_form_and_slider_work_is_monotone() {
    // Two-node form: node 2 moves, node 1 fixed: deformation u1 − u2 = −u2.
    let e = Mostaghel::new(two_nodes(), K, ALPHA, DELTA).unwrap();
    let mut dr = ElementDriver::new(Box::new(e), &[0.0, 0.0]).unwrap();
    let n = 200;
    let dt = 0.01;
    let mut last = 0.0;
    for k in 1..=n {
        let t = k as f64 * dt;
        let u2 = 5.0 * DELTA * (PI * t).sin();
        dr.set_trial(dt, &[0.0, u2], &[0.0, 5.0 * DELTA * PI * (PI * t).cos()])
            .unwrap();
        dr.commit();
        let f = dr.force();
        assert_eq!(f[0], -f[1]);
        assert_eq!(dr.deformation().unwrap(), -u2);
        // Dissipated energy = slider work: never decreases.
        let diss = dr.dissipated_energy();
        assert!(diss >= last - 1e-9 * K * DELTA * DELTA, "{diss} < {last}");
        last = diss;
    }
    assert!(last > 0.0);
}

// ---------------------------------------------------------------- Bouc-Wen

#[test]
fn bouc_wen_force_stays_below_and_approaches_the_ultimate_force() {
    // Abbiati et al. (2020) pier parameters (β = 3.5, γ = 60 1/m, n = 1; E30) with A = 1e7 N/m.
    let a = 1.0e7;
    let e = BoucWen::new(ground(), a, 3.5, 60.0, 1.0).unwrap();
    let ru = e.ultimate_force();
    assert!(rel(ru, a / 63.5) < 1e-12);
    let mut dr = ElementDriver::new(Box::new(e), &[0.0, 0.0]).unwrap();
    // Monotonic loading: r = r_u (1 − e^{−(β+γ) d}) (closed form for n = 1, r ḋ > 0).
    let n = 400;
    let dmax = 0.2;
    let h = drive(&mut dr, 0.01, n, |t| dmax * t / 4.0, |_| dmax / 4.0);
    let mut worst = 0.0f64;
    for s in &h {
        let exact = ru * (1.0 - (-63.5 * s.d).exp());
        worst = worst.max((s.r - exact).abs() / ru);
        assert!(s.r <= ru * (1.0 + 1e-12));
    }
    let last = h.last().unwrap().r;
    println!(
        "Bouc-Wen monotonic: max |r − closed form| / r_u = {worst:.3e}; r(0.2 m) / r_u = {:.8}",
        last / ru
    );
    assert!(worst < 1e-4);
    assert!(last > 0.9999 * ru);
    // Cycles of growing amplitude (ramped): |r| < r_u throughout, approaching it at the peaks.
    let e = BoucWen::new(ground(), a, 3.5, 60.0, 1.0).unwrap();
    let mut dr = ElementDriver::new(Box::new(e), &[0.0, 0.0]).unwrap();
    let h = drive(
        &mut dr,
        0.002,
        4000,
        |t| 0.02 * t * (PI * t).sin(),
        |t| 0.02 * (PI * t).sin() + 0.02 * t * PI * (PI * t).cos(),
    );
    let rmax = h.iter().map(|s| s.r.abs()).fold(0.0, f64::max);
    println!("Bouc-Wen ramped cycles: max |r| / r_u = {:.6}", rmax / ru);
    assert!(rmax < ru && rmax > 0.99 * ru);
}

// ---------------------------------------------------------------- T-CSB

#[test]
fn triple_sliding_bearing_shows_its_three_stiffness_regimes() {
    let e = TripleSlidingBearing::abbiati_2019(ground());
    let (k0, d0, k1, d1, k2) = (e.k0, e.delta0, e.k1, e.delta1, e.k2);
    let mut dr = ElementDriver::new(Box::new(e), &[0.0, 0.0, 0.0]).unwrap();
    let u = 0.15;
    // Load monotonically to U (in 1500 steps of 0.1 mm) and back by 2 mm.
    let mut h = drive(&mut dr, 0.001, 1500, |t| u * t / 1.5, |_| u / 1.5);
    let back = drive(&mut dr, 0.001, 20, |t| u - 0.002 * t / 0.02, |_| -0.1);
    h.extend(back.into_iter().skip(1));
    let slope = |i: usize| (h[i + 1].r - h[i].r) / (h[i + 1].d - h[i].d);
    let regime = |d: f64| {
        let i = h.iter().position(|s| s.d >= d).unwrap();
        slope(i)
    };
    let (s_a, s_b, s_c) = (regime(0.0), regime(0.03), regime(0.1));
    println!(
        "T-CSB slopes: {s_a:.6e} (k0+k1+k2 = {:.6e}), {s_b:.6e} (k1+k2 = {:.6e}), {s_c:.6e} (k2 = {k2:.6e})",
        k0 + k1 + k2,
        k1 + k2
    );
    assert!(rel(s_a, k0 + k1 + k2) < 1e-9);
    assert!(rel(s_b, k1 + k2) < 1e-9);
    assert!(rel(s_c, k2) < 1e-9);
    // Peak force k0 δ0 + k1 δ1 + k2 U (A15: 255.6 kN) and elastic unloading k0 + k1 + k2.
    let peak = h[1500].r;
    assert!(rel(peak, k0 * d0 + k1 * d1 + k2 * u) < 1e-9, "{peak}");
    assert!(rel(slope(1500), k0 + k1 + k2) < 1e-9);
}

#[test]
fn triple_sliding_bearing_velocity_dependent_friction_scales_the_slip_force() {
    let mut e = TripleSlidingBearing::abbiati_2019(ground());
    e.friction = Some(FrictionTable::abbiati_2019_table_5());
    let (k0, d0, k1, k2) = (e.k0, e.delta0, e.k1, e.k2);
    for (v, ratio) in [(0.1, 1.0), (0.0005, 4.5 / 7.5), (0.0375, 7.0 / 7.5)] {
        let mut dr = ElementDriver::new(Box::new(e.clone()), &[0.0; 3]).unwrap();
        let target = 0.02;
        let t_end = target / v;
        let n = 200;
        let h = drive(&mut dr, t_end / n as f64, n, |t| v * t, |_| v);
        let last = h.last().unwrap();
        let expected = k0 * d0 * ratio + (k1 + k2) * target;
        println!(
            "T-CSB with Table 5 at {v} m/s: r(20 mm) = {:.6e} N, expected {expected:.6e}",
            last.r
        );
        assert!(rel(last.r, expected) < 1e-9);
    }
}

// ---------------------------------------------------------------- LRB

#[test]
fn lead_rubber_peak_grows_and_force_is_continuous_at_reversals_on_the_envelope() {
    let (rl, kr, nr, al, p0) = (1.02e5, 1.35e6, 2.0, 5.0, 1e-3);
    let mut jumps = Vec::new();
    for n in [2000usize, 8000] {
        let e = LeadRubberBearing::new(ground(), [rl, kr, nr, al, p0]).unwrap();
        let mut dr = ElementDriver::new(Box::new(e), &[0.0; 3]).unwrap();
        // Ramped cycles at 1 Hz: every peak exceeds the previous one (reversals with |u| = p).
        let amp = |t: f64| 0.02 + 0.05 * t;
        let dt = 4.0 / n as f64;
        let h = drive(
            &mut dr,
            dt,
            n,
            |t| amp(t) * (2.0 * PI * t).sin(),
            |t| 0.05 * (2.0 * PI * t).sin() + amp(t) * 2.0 * PI * (2.0 * PI * t).cos(),
        );
        let mut peak = 0.0f64;
        let mut max_jump = 0.0f64;
        for (i, s) in h.iter().enumerate() {
            peak = peak.max(s.d.abs());
            // p is the running peak of |d| (E4), never decreasing.
            assert!(
                (s.s[0] - peak).abs() < 1e-15,
                "p = {} vs max|d| = {peak}",
                s.s[0]
            );
            if i > 0 {
                assert!(s.s[0] >= h[i - 1].s[0]);
            }
            // Force on the envelope |d| = p: k_rubber p + r_lead (g(2) = 1).
            if i > 0 && i + 1 < h.len() && s.d.abs() == peak && s.d.abs() > 2.0 * p0 {
                let next = &h[i + 1];
                if next.d.abs() < s.d.abs() {
                    // A reversal at |d| = p: r2 continuous (E6), only the rubber changes.
                    let jump = (next.r - s.r).abs();
                    let rubber_change = 1.5 * kr * (next.d - s.d).abs()
                        + rl * 14.0 / s.d.abs() * (next.d - s.d).abs();
                    assert!(
                        jump <= 1.01 * rubber_change + 1e-9,
                        "jump {jump} at {}",
                        s.d
                    );
                    max_jump = max_jump.max(jump);
                    let env = kr * s.d.abs() + rl;
                    assert!(rel(s.r.abs(), env) < 1e-2, "{} vs {env}", s.r);
                }
            }
        }
        println!(
            "LRB, {n} driving steps: largest force change across a reversal on the envelope {max_jump:.4e} N (r_lead = {rl:.3e})"
        );
        jumps.push(max_jump);
    }
    assert!(jumps[1] < jumps[0] / 2.0, "{jumps:?}");
    // Reversal inside |d| < p (E6): the printed law jumps by r_lead (g(1 + d/p) + g(1 − d/p));
    // the set-valued lead unloads along k_lead = (2a + 4) r_lead / p inside its band and
    // reaches the unloading branch −r_lead g(1 − d/p) once the band is crossed.
    let e = LeadRubberBearing::new(ground(), [rl, kr, nr, al, p0]).unwrap();
    let mut dr = ElementDriver::new(Box::new(e.clone()), &[0.0; 3]).unwrap();
    dr.set_trial(1.0, &[0.1], &[0.1]).unwrap();
    dr.commit();
    dr.set_trial(1.0, &[0.05], &[-0.05]).unwrap();
    dr.commit();
    let on_band = dr.force()[0];
    let rubber = e.rubber(0.05, 0.1);
    println!(
        "LRB after a reversal from p = 0.1 to p/2: lead force {:.9e} N, −r_lead g(0.5) = {:.9e} N",
        on_band - rubber,
        -rl * e.g(0.5)
    );
    // The driver integrates the states with substeps of p0/2: second order in them.
    assert!(rel(on_band - rubber, -rl * e.g(0.5)) < 1e-3);
    dr.set_trial(1.0, &[0.0501], &[1e-4]).unwrap();
    let k_lead = (2.0 * al + 4.0) * rl / 0.1;
    let elastic = dr.force()[0] - e.rubber(0.0501, 0.1) - (on_band - rubber);
    println!(
        "LRB reversal inside |d| < p at d = p/2: lead force change {elastic:.6e} N over 0.1 mm, k_lead Δd = {:.6e} N",
        k_lead * 1e-4
    );
    assert!(rel(elastic, k_lead * 1e-4) < 1e-3);
    let printed_jump = rl * (e.g(1.5) + e.g(0.5));
    let crossing = 0.05 + 1.01 * printed_jump / k_lead;
    dr.set_trial(1.0, &[crossing], &[1.0]).unwrap();
    let lead = dr.force()[0] - e.rubber(crossing, 0.1);
    assert!(rel(lead, rl * e.g(1.0 + crossing / 0.1)) < 1e-3, "{lead}");
}

/// `lead = "rigid"`: eq 42 as printed (states `p`, `e`): at a reversal inside `|d| < p` the
/// lead force jumps by `r_lead (g(1 + d/p) + g(1 − d/p))` with the sign of the velocity.
#[test]
fn rigid_lead_rubber_jumps_at_a_reversal_inside_the_peak() {
    let (rl, kr, nr, al, p0) = (1.02e5, 1.35e6, 2.0, 5.0, 1e-3);
    let e = LeadRubberBearing::new(ground(), [rl, kr, nr, al, p0])
        .unwrap()
        .with_lead(LeadLaw::Rigid, None)
        .unwrap();
    assert_eq!(e.state_names(), ["p", "e"]);
    let mut dr = ElementDriver::new(Box::new(e.clone()), &[0.0, 0.0]).unwrap();
    dr.set_trial(1.0, &[0.1], &[0.1]).unwrap();
    dr.commit();
    dr.set_trial(1.0, &[0.05], &[0.05]).unwrap();
    let up = dr.force()[0];
    dr.set_trial(1.0, &[0.05], &[-0.05]).unwrap();
    let down = dr.force()[0];
    let expected = rl * (e.g(1.5) + e.g(0.5));
    println!("rigid LRB reversal inside |d| < p at d = p/2: jump {:.6e} N, r_lead (g(1.5) + g(0.5)) = {expected:.6e} N", up - down);
    assert!(rel(up - down, expected) < 1e-12, "{up} {down}");
}

// ---------------------------------------------------------------- energy property test

#[test]
fn dissipated_energy_over_closed_loops_is_not_negative() {
    let seed = 20261126u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    println!("seed {seed}");
    let mut count = 0;
    let mut max_cycles = 0;
    for case in 0..48 {
        let kind = case % 4;
        let (el, scale): (Box<dyn Element>, f64) = match kind {
            0 => (
                Box::new(Mostaghel::new(ground(), K, ALPHA, DELTA).unwrap()),
                DELTA,
            ),
            1 => (
                Box::new(BoucWen::new(ground(), 1e7, 3.5, 60.0, 1.0).unwrap()),
                1.0 / 63.5,
            ),
            2 => (Box::new(TripleSlidingBearing::abbiati_2019(ground())), 0.07),
            _ => (
                Box::new(
                    LeadRubberBearing::new(ground(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3]).unwrap(),
                ),
                0.05,
            ),
        };
        let amp = scale * rng.random_range(0.2..5.0);
        let freq = rng.random_range(0.1..3.0);
        let steps = rng.random_range(40..300usize);
        let ns = el.n_states();
        let mut dr = ElementDriver::new(el, &vec![0.0; ns]).unwrap();
        // Repeat cycles until the loop closes in state (one cycle for the slider models and
        // the LRB, a few for Bouc-Wen, whose centre settles asymptotically).
        let mut cycles = 0;
        let mut prev = sample(&dr);
        let mut h;
        let (a, b) = loop {
            h = sine_from(&mut dr, amp, freq, cycles, steps);
            cycles += 1;
            let last = h.last().unwrap().clone();
            let closure = prev
                .s
                .iter()
                .zip(&last.s)
                .take(ns - 1)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            let ref_force = h.iter().map(|s| s.r.abs()).fold(0.0, f64::max).max(1.0);
            if cycles > 1 && closure <= 1e-6 * ref_force {
                break (prev, last);
            }
            assert!(cycles < 200, "case {case}: loop does not close ({closure})");
            prev = last;
        };
        let ref_force = h.iter().map(|s| s.r.abs()).fold(0.0, f64::max).max(1.0);
        max_cycles = max_cycles.max(cycles);
        let loop_work = b.work - a.work;
        let loop_diss = b.diss - a.diss;
        assert!(
            loop_work >= -1e-9 * ref_force * amp && loop_diss >= -1e-9 * ref_force * amp,
            "case {case} (kind {kind}, amp {amp}, f {freq}, {steps} steps): work {loop_work}, dissipated {loop_diss}"
        );
        count += 1;
    }
    println!("{count} random loops; at most {max_cycles} cycles until closed in state");
    assert_eq!(count, 48);
}

// ---------------------------------------------------------------- tangents

/// Dual-number tangent `∂[r; ṡ]/∂[u; v; s]` at an arbitrary point.
fn ad_tangent(e: &dyn Element, u: &[f64], v: &[f64], s: &[f64]) -> DMatrix<f64> {
    let n = u.len();
    let ns = s.len();
    let mut t = DMatrix::zeros(n + ns, 2 * n + ns);
    for col in 0..2 * n + ns {
        let seed = |i: usize, off: usize, x: &[f64]| -> Vec<Dual64> {
            x.iter()
                .enumerate()
                .map(|(k, x)| Dual64::new(*x, if k + off == i { 1.0 } else { 0.0 }))
                .collect()
        };
        let du = seed(col, 0, u);
        let dv = seed(col, n, v);
        let ds = seed(col, 2 * n, s);
        let mut r = vec![Dual64::from(0.0); n];
        let mut sd = vec![Dual64::from(0.0); ns];
        e.restoring_dual(&du, &dv, &ds, &mut r, &mut sd);
        for i in 0..n {
            t[(i, col)] = r[i].eps;
        }
        for i in 0..ns {
            t[(n + i, col)] = sd[i].eps;
        }
    }
    t
}

/// Central finite differences of the same.
fn fd_tangent(e: &dyn Element, u: &[f64], v: &[f64], s: &[f64], h: &[f64; 3]) -> DMatrix<f64> {
    let n = u.len();
    let ns = s.len();
    let mut t = DMatrix::zeros(n + ns, 2 * n + ns);
    let eval = |u: &[f64], v: &[f64], s: &[f64]| {
        let mut r = vec![0.0; n];
        let mut sd = vec![0.0; ns];
        e.restoring(u, v, s, &mut r, &mut sd);
        [r, sd].concat()
    };
    for col in 0..2 * n + ns {
        let (mut up, mut vp, mut sp) = (u.to_vec(), v.to_vec(), s.to_vec());
        let (mut um, mut vm, mut sm) = (u.to_vec(), v.to_vec(), s.to_vec());
        let step = if col < n {
            up[col] += h[0];
            um[col] -= h[0];
            h[0]
        } else if col < 2 * n {
            vp[col - n] += h[1];
            vm[col - n] -= h[1];
            h[1]
        } else {
            sp[col - 2 * n] += h[2];
            sm[col - 2 * n] -= h[2];
            h[2]
        };
        let (a, b) = (eval(&up, &vp, &sp), eval(&um, &vm, &sm));
        for i in 0..n + ns {
            t[(i, col)] = (a[i] - b[i]) / (2.0 * step);
        }
    }
    t
}

fn assert_close(a: &DMatrix<f64>, b: &DMatrix<f64>, tol: f64, what: &str) {
    let scale = a.amax().max(b.amax()).max(1.0);
    let diff = (a - b).amax();
    assert!(
        diff <= tol * scale,
        "{what}: differ by {diff:.3e} (scale {scale:.3e})\n{a}\n{b}"
    );
}

fn elements_both_forms() -> Vec<Box<dyn Element>> {
    let mut out: Vec<Box<dyn Element>> = Vec::new();
    for dofs in [ground(), two_nodes()] {
        out.push(Box::new(
            Mostaghel::new(dofs.clone(), K, ALPHA, DELTA).unwrap(),
        ));
        out.push(Box::new(
            BoucWen::new(dofs.clone(), 1e7, 3.5, 60.0, 1.0).unwrap(),
        ));
        out.push(Box::new(TripleSlidingBearing::abbiati_2019(dofs.clone())));
        out.push(Box::new(
            LeadRubberBearing::new(dofs, [1.02e5, 1.35e6, 2.0, 5.0, 1e-3]).unwrap(),
        ));
    }
    out
}

#[test]
fn explicit_initial_tangents_equal_dual_numbers_at_v_0_plus() {
    let eps = 1e-12;
    for e in elements_both_forms() {
        let n = e.dofs().len();
        let ns = e.n_states();
        let mut v = vec![0.0; n];
        v[0] = eps;
        let ad = ad_tangent(e.as_ref(), &vec![0.0; n], &v, &vec![0.0; ns]);
        let explicit = zero_state_tangent(e.as_ref());
        assert_close(
            &explicit,
            &ad,
            1e-9,
            &format!("{} ({n} nodes) at v = 0⁺", e.kind()),
        );
        // With v = 0⁻ the slider models stick as well.
        v[0] = -eps;
        let ad_minus = ad_tangent(e.as_ref(), &vec![0.0; n], &v, &vec![0.0; ns]);
        if e.kind() != "lead_rubber" {
            assert_close(
                &explicit,
                &ad_minus,
                1e-9,
                &format!("{} at v = 0⁻", e.kind()),
            );
        }
    }
}

#[test]
fn at_v_exactly_0_dual_numbers_give_the_post_slip_stiffness_of_slider_models() {
    // ALGORITHMS.md E3: the bracket N̄(0)M̄(·) + M(0)N(·) is 0, so AD returns αk (Mostaghel)
    // and k2 (T-CSB); the explicit initial tangent restores k and k0 + k1 + k2.
    let m = Mostaghel::new(ground(), K, ALPHA, DELTA).unwrap();
    let ad = ad_tangent(&m, &[0.0], &[0.0], &[0.0, 0.0]);
    assert!(rel(ad[(1, 1)], ALPHA * K) < 1e-12, "{}", ad[(1, 1)]);
    let ad_minus_zero = ad_tangent(&m, &[0.0], &[-0.0], &[0.0, 0.0]);
    assert!(rel(ad_minus_zero[(1, 1)], ALPHA * K) < 1e-12);
    assert!(rel(initial_matrices(&m).0[(0, 0)], K) < 1e-12);
    println!(
        "Mostaghel ∂ṙ/∂v at v = 0: AD {:.4e} N/m (αk), explicit {:.4e} N/m (k)",
        ad[(1, 1)],
        zero_state_tangent(&m)[(1, 1)]
    );
    let t = TripleSlidingBearing::abbiati_2019(ground());
    let ad = ad_tangent(&t, &[0.0], &[0.0], &[0.0; 3]);
    let condensed = ad[(0, 0)] + ad[(0, 2)] * ad[(1, 1)] + ad[(0, 3)] * ad[(2, 1)];
    assert!(rel(condensed, t.k2) < 1e-12);
    assert!(rel(initial_matrices(&t).0[(0, 0)], t.k0 + t.k1 + t.k2) < 1e-12);
    let b = BoucWen::new(two_nodes(), 1e7, 3.5, 60.0, 1.0).unwrap();
    let k0 = initial_matrices(&b).0;
    assert!(rel(k0[(0, 0)], 1e7) < 1e-12 && rel(k0[(0, 1)], -1e7) < 1e-12);
}

/// An element, a point `(u, v, s)` and finite-difference steps for `u`, `v`, `s`.
type TangentCase = (Box<dyn Element>, Vec<f64>, Vec<f64>, Vec<f64>, [f64; 3]);

#[test]
fn dual_number_tangents_equal_finite_differences_away_from_switching() {
    // Interior points: sliders sticking (|s| < δ), v ≠ 0, |d| < p for the LRB.
    let cases: Vec<TangentCase> = vec![
        (
            Box::new(Mostaghel::new(two_nodes(), K, ALPHA, DELTA).unwrap()),
            vec![0.003, 0.0025],
            vec![0.1, -0.2],
            vec![0.5 * K * DELTA, 10.0],
            [1e-7, 1e-4, 1.0],
        ),
        (
            Box::new(BoucWen::new(two_nodes(), 1e7, 3.5, 60.0, 2.0).unwrap()),
            vec![0.01, 0.0],
            vec![0.3, 0.1],
            vec![2e3, 1.0],
            [1e-7, 1e-4, 1e-2],
        ),
        (
            Box::new(TripleSlidingBearing::abbiati_2019(ground())),
            vec![0.02],
            vec![-0.1],
            vec![1e4, 2e4, 5.0],
            [1e-7, 1e-4, 1e-2],
        ),
        (
            Box::new(LeadRubberBearing::new(ground(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3]).unwrap()),
            vec![0.03],
            vec![0.2],
            vec![0.05, 1.0e4, 3.0],
            [1e-7, 1e-4, 1e-7],
        ),
        (
            Box::new(
                LeadRubberBearing::new(ground(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3])
                    .unwrap()
                    .with_lead(LeadLaw::Rigid, None)
                    .unwrap(),
            ),
            vec![0.03],
            vec![0.2],
            vec![0.05, 3.0],
            [1e-7, 1e-4, 1e-7],
        ),
    ];
    for (e, u, v, s, h) in cases {
        let ad = ad_tangent(e.as_ref(), &u, &v, &s);
        let fd = fd_tangent(e.as_ref(), &u, &v, &s, &h);
        assert_close(&ad, &fd, 1e-6, e.kind());
    }
}

#[test]
fn driver_tangent_equals_finite_differences_of_the_driven_force() {
    let elements: Vec<(Box<dyn Element>, Vec<f64>)> = vec![
        (
            Box::new(Mostaghel::new(ground(), K, ALPHA, DELTA).unwrap()),
            vec![0.0; 2],
        ),
        (
            Box::new(Mostaghel::new(two_nodes(), K, ALPHA, DELTA).unwrap()),
            vec![0.0; 2],
        ),
        (
            Box::new(BoucWen::new(ground(), 1e7, 3.5, 60.0, 1.0).unwrap()),
            vec![0.0; 2],
        ),
        (
            Box::new(TripleSlidingBearing::abbiati_2019(ground())),
            vec![0.0; 3],
        ),
        (
            Box::new(LeadRubberBearing::new(ground(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3]).unwrap()),
            vec![0.0; 3],
        ),
        (
            Box::new(
                LeadRubberBearing::new(ground(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3])
                    .unwrap()
                    .with_lead(LeadLaw::Rigid, None)
                    .unwrap(),
            ),
            vec![0.0; 2],
        ),
    ];
    // Committed states and trials chosen away from switching surfaces: an elastic trial
    // after a reversal and a slipping trial on the envelope.
    for (e, s0) in elements {
        let kind = e.kind();
        let n = e.dofs().len();
        let mut dr = ElementDriver::new(e, &s0).unwrap();
        let mut u = vec![0.0; n];
        u[0] = 0.0123;
        dr.set_trial(0.1, &u, &vec![0.1; n]).unwrap();
        dr.commit();
        for (target, v) in [(0.0122, -0.01), (0.0124, 0.01), (0.0300, 0.1)] {
            let mut ut = u.clone();
            ut[0] = target;
            let vt = vec![v; n];
            dr.set_trial(0.1, &ut, &vt).unwrap();
            let kt = dr.tangent().clone();
            let h = 1e-9;
            let mut fd = DMatrix::zeros(n, n);
            for j in 0..n {
                let (mut up, mut um) = (ut.clone(), ut.clone());
                up[j] += h;
                um[j] -= h;
                dr.set_trial(0.1, &up, &vt).unwrap();
                let fp = dr.force().to_vec();
                dr.set_trial(0.1, &um, &vt).unwrap();
                let fm = dr.force().to_vec();
                for i in 0..n {
                    fd[(i, j)] = (fp[i] - fm[i]) / (2.0 * h);
                }
            }
            println!(
                "{kind} ({n} nodes) trial {target}: K_t = {:.6e}, FD = {:.6e}",
                kt[(0, 0)],
                fd[(0, 0)]
            );
            assert_close(
                &kt,
                &fd,
                1e-4,
                &format!("{kind} driver tangent at {target}"),
            );
        }
    }
    // Mostaghel: k while sticking after the reversal, αk while slipping.
    let mut dr = ElementDriver::new(
        Box::new(Mostaghel::new(ground(), K, ALPHA, DELTA).unwrap()),
        &[0.0, 0.0],
    )
    .unwrap();
    dr.set_trial(0.1, &[0.01], &[0.1]).unwrap();
    assert!(rel(dr.tangent()[(0, 0)], ALPHA * K) < 1e-9);
    dr.commit();
    dr.set_trial(0.1, &[0.0095], &[-0.1]).unwrap();
    assert!(rel(dr.tangent()[(0, 0)], K) < 1e-9);
}

// ---------------------------------------------------------------- driver API

#[test]
fn driver_commit_revert_parameters_and_errors() {
    let e = Mostaghel::new(ground(), K, ALPHA, DELTA).unwrap();
    let mut dr = ElementDriver::new(Box::new(e), &[0.0, 0.0]).unwrap();
    dr.set_trial(0.01, &[0.0005], &[0.05]).unwrap();
    assert!(rel(dr.force()[0], K * 0.0005) < 1e-12);
    dr.revert();
    assert_eq!(dr.force()[0], 0.0);
    dr.set_trial(0.01, &[0.0005], &[0.05]).unwrap();
    dr.commit();
    assert_eq!(dr.committed_force()[0], dr.force()[0]);
    // Run-time parameter update: δ doubled acts from the next trial on.
    dr.set_parameter("delta", 2.0 * DELTA).unwrap();
    dr.set_trial(0.01, &[0.0015], &[0.05]).unwrap();
    assert!(rel(dr.force()[0], K * 0.0015) < 1e-12);
    assert!(dr
        .set_parameter("delta", -1.0)
        .unwrap_err()
        .contains("must be > 0"));
    assert!(dr
        .set_parameter("alpha", 1.0)
        .unwrap_err()
        .contains("[0, 1)"));
    assert!(dr
        .set_parameter("mu", 1.0)
        .unwrap_err()
        .contains("no run-time parameter `mu`"));
    assert_eq!(
        dr.parameters(),
        vec![("k", K), ("alpha", ALPHA), ("delta", 2.0 * DELTA)]
    );
    // Bad input: clear errors, no panic, trial reset.
    assert!(dr
        .set_trial(0.01, &[0.1, 0.2], &[0.0])
        .unwrap_err()
        .to_string()
        .contains("displacement has 2 entries"));
    assert!(dr.set_trial(-1.0, &[0.1], &[0.0]).is_err());
    assert!(dr
        .set_trial(0.01, &[f64::NAN], &[0.0])
        .unwrap_err()
        .to_string()
        .contains("not finite"));
    assert!(ElementDriver::new(
        Box::new(TripleSlidingBearing::abbiati_2019(ground())),
        &[0.0]
    )
    .is_err());
    // K0 / C / M in the element DOFs.
    let dr = ElementDriver::new(
        Box::new(TripleSlidingBearing::abbiati_2019(two_nodes())),
        &[0.0; 3],
    )
    .unwrap();
    let k0 = dr.initial_stiffness();
    let kk = 6.67e7 + 1.15e6 + 5e5;
    assert!(rel(k0[(0, 0)], kk) < 1e-12 && rel(k0[(1, 0)], -kk) < 1e-12);
    assert_eq!(dr.damping().amax(), 0.0);
    assert_eq!(dr.mass().amax(), 0.0);
    // Simple elements: parameters and clone_box.
    let s = hybridsim::elements::Spring::new(ground(), 5.0);
    let mut b = s.clone_box();
    b.set_parameter("k", 7.0).unwrap();
    assert_eq!(b.parameters(), vec![("k", 7.0)]);
    assert_eq!(s.parameters(), vec![("k", 5.0)]);
    assert!(b.set_parameter("k", f64::INFINITY).is_err());
}

// ---------------------------------------------------------------- model files

const BASE: &str = r#"
[[node]]
id = 1
dofs = ["x"]
[[element]]
type = "mass"
node = 1
mass = 1000.0
"#;

fn model_error(element: &str) -> String {
    let text =
        format!("{BASE}[[element]]\n{element}\n[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.01\nduration = 0.1\n");
    match hybridsim::Model::from_toml(&text, "bad.toml", &hybridsim::model::NoFiles) {
        Ok(_) => panic!("accepted:\n{element}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn parameter_errors_name_the_file_field_and_reason() {
    let cases = [
        (
            "type = \"lead_rubber\"\nnodes = [1]\ndof = \"x\"\nr_lead = 1.02e5\nk_rubber = 1.35e6\nn_rubber = 2.0\na_lead = 5.0\np0 = 0.0",
            "bad.toml: element[1].p0: must be > 0, found 0",
        ),
        (
            "type = \"lead_rubber\"\nnodes = [1]\ndof = \"x\"\nr_lead = 1.02e5\nk_rubber = 1.35e6\nn_rubber = 2.0\na_lead = 5.0",
            "element[1].p0",
        ),
        (
            "type = \"mostaghel\"\nnodes = [1]\ndof = \"x\"\nk = -1.0\nalpha = 0.1\ndelta = 0.001",
            "bad.toml: element[1].k: must be > 0, found -1",
        ),
        (
            "type = \"mostaghel\"\nnodes = [1]\ndof = \"x\"\nk = 1.0\nalpha = nan\ndelta = 0.001",
            "element[1].alpha: must be finite",
        ),
        (
            "type = \"bouc_wen\"\nnodes = [1]\ndof = \"x\"\nA = 1e7\nbeta = 3.5\ngamma = -10.0",
            "element[1].gamma: `beta` + `gamma` must be > 0",
        ),
        (
            "type = \"bouc_wen\"\nnodes = [1]\ndof = \"x\"\nA = inf\nbeta = 3.5\ngamma = 60.0",
            "element[1].A: must be finite",
        ),
        (
            "type = \"sliding_bearing\"\nnodes = [1]\ndof = \"x\"\nk0 = 6.67e7\ndelta0 = 1.5e-3\nk1 = 1.15e6\ndelta1 = 0.07\nk2 = 5e5\nfriction = { velocity = [0.1, 0.05], mu0 = [1.0, 2.0], mu1 = [1.0, 2.0], reference_velocity = 0.1 }",
            "element[1].friction.velocity: must be finite, non-negative and strictly increasing",
        ),
        (
            "type = \"sliding_bearing\"\nnodes = [1]\ndof = \"x\"\nk0 = 6.67e7\ndelta0 = 1.5e-3\nk1 = 1.15e6\nk2 = 5e5",
            "element[1].delta1",
        ),
        (
            "type = \"mostaghel\"\nnodes = [1, 9]\ndof = \"x\"\nk = 1.0\nalpha = 0.1\ndelta = 0.001",
            "element[1].nodes: unknown node 9",
        ),
    ];
    for (element, expected) in cases {
        let msg = model_error(element);
        assert!(msg.contains(expected), "expected `{expected}` in\n{msg}");
    }
}

// ---------------------------------------------------------------- inside the integrators

fn bouc_wen_sdof(
    integrator: &str,
    dt: f64,
    corrections: usize,
    [beta, gamma, n]: [f64; 3],
) -> String {
    format!(
        r#"
title = "SDOF on a Bouc-Wen spring, released with an initial velocity"
[[node]]
id = 1
dofs = ["x"]
initial_velocity = {{ x = 0.6 }}
[substructure.frame]
[substructure.pier]
physical = true
estimate = {{ dofs = [[1, "x"]], stiffness = [[1.0e6]] }}
[[element]]
type = "mass"
node = 1
mass = 1000.0
split = {{ frame = 0.5, pier = 0.5 }}
[[element]]
type = "bouc_wen"
name = "pier"
nodes = [1]
dof = "x"
A = 1.0e6
beta = {beta:?}
gamma = {gamma:?}
n = {n:?}
substructure = "pier"
[[element]]
type = "dashpot"
nodes = [1]
dof = "x"
c = 2000.0
substructure = "frame"
[analysis]
integrator = "{integrator}"
rho_inf = 0.9
time_step = {dt:?}
subcycles = 1
corrections = {corrections}
duration = 1.0
"#
    )
}

/// n = 1: β + γ = 50 1/m, r_u = 2e4 N (yield deformation 2 cm); n = 2: the same r_u.
const BW1: [f64; 3] = [15.0, 35.0, 1.0];
const BW2: [f64; 3] = [1.0e-3, 1.5e-3, 2.0];

fn final_displacement(text: &str) -> (f64, f64) {
    let sim = run(model(text));
    let u = displacement_copies(sim.integrator.as_ref(), 1, "x");
    let st = sim.integrator.state(0);
    (u[0], st[0])
}

#[test]
fn bouc_wen_sdof_mg_alpha_and_pg_alpha_agree_as_dt_shrinks() {
    let mut diffs = Vec::new();
    for dt in [0.004, 0.002, 0.001, 0.0005] {
        let (mg, _) = final_displacement(&bouc_wen_sdof("mg-alpha", dt, 1, BW1));
        let (pg, _) = final_displacement(&bouc_wen_sdof("pg-alpha", dt, 1, BW1));
        println!(
            "Bouc-Wen SDOF dt = {dt}: u(1 s) MG-α {mg:.8e} m, PG-α {pg:.8e} m, |diff| {:.3e}",
            (mg - pg).abs()
        );
        diffs.push((mg - pg).abs());
    }
    let s = slopes(&diffs);
    println!("MG-α vs PG-α difference slopes: {s:.3?}");
    assert!(diffs[3] < diffs[0] / 3.0, "{diffs:?}");
    assert!(diffs.windows(2).all(|w| w[1] < w[0]), "{diffs:?}");
}

#[test]
fn two_corrections_raise_the_order_on_a_smooth_hysteretic_case() {
    // n = 2 makes |r|ⁿ = r² smooth; β ≠ 0 keeps the hysteresis (kinks only at ḋ = 0).
    let reference = final_displacement(&bouc_wen_sdof("mg-alpha", 0.0000625, 2, BW2)).0;
    let dts = [0.004, 0.002, 0.001, 0.0005];
    let mut report = Vec::new();
    let mut last_slopes = Vec::new();
    for corr in [1usize, 2] {
        let errors: Vec<f64> = dts
            .iter()
            .map(|dt| {
                (final_displacement(&bouc_wen_sdof("mg-alpha", *dt, corr, BW2)).0 - reference).abs()
            })
            .collect();
        let s = slopes(&errors);
        let shown: Vec<String> = errors.iter().map(|e| format!("{e:.3e}")).collect();
        report.push(format!(
            "corrections = {corr}: errors {shown:?}, slopes {s:.3?}"
        ));
        last_slopes.push(*s.last().unwrap());
    }
    for r in &report {
        println!("Bouc-Wen SDOF (n = 2), MG-α: {r}");
    }
    assert!(last_slopes[1] > last_slopes[0] + 0.3, "{report:?}");
    assert!(last_slopes[1] > 1.6, "{report:?}");
}

/// Issue 17: stiffness-proportional Rayleigh damping reaches a hysteretic element that asks for
/// it (`rayleigh = true`) through its initial stiffness (OpenSees's βK_init): a Mostaghel spring
/// that never yields (δ = 1 m at millimetre amplitudes; set in motion by an initial velocity, as
/// its force is a state) is damped like the linear spring of the same stiffness, and it was
/// undamped before (β K used constant stiffnesses only).
#[test]
fn rayleigh_damping_reaches_a_hysteretic_element_through_its_initial_stiffness() {
    let text = |kind: &str| {
        format!(
            r#"
[[node]]
id = 1
dofs = ["x"]
initial_velocity = {{ x = 0.01 }}
[[element]]
type = "mass"
node = 1
mass = 1.0
rayleigh = false
[[element]]
{kind}
nodes = [1]
dof = "x"
rayleigh = true
[damping]
beta = 0.01
[analysis]
integrator = "mg-alpha"
rho_inf = 1.0
time_step = 0.005
duration = 3.0
"#
        )
    };
    let last = |text: &str| {
        let sim = run(model(text));
        displacement_copies(sim.integrator.as_ref(), 1, "x")[0]
    };
    // k = 100: ω = 10 rad/s, ζ = βω/2 = 0.05; over 3 s the amplitude falls to e^{-1.5} ≈ 0.22.
    let linear = last(&text("type = \"spring\"\nk = 100.0"));
    let hysteretic = last(&text(
        "type = \"mostaghel\"\nk = 100.0\nalpha = 0.1\ndelta = 1.0",
    ));
    // Amplitude v0/ω = 1 mm, undamped; damped, e^{-1.5} of it.
    let undamped_bound = 0.001 * (-1.5f64).exp() * 1.5;
    println!("u(3 s): spring {linear:.9e}, mostaghel {hysteretic:.9e}");
    assert!(
        (hysteretic - linear).abs() < 1e-9,
        "{hysteretic} vs {linear}"
    );
    assert!(linear.abs() < undamped_bound, "{linear}");
}
