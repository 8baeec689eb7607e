//! Controller blocks (PID, lead/lag) against their closed-form step and frequency responses, and
//! the servo loop of the virtual lab against its analytic discrete closed-loop response and a
//! hand-written reference loop.
mod common;
use common::*;
use hybridsim::model::lab::{BlockSpec, ControllerSettings, Discretization};
use hybridsim::physical::actuator::{Actuator, ServoLoop};
use hybridsim::physical::blocks::{lead_lag, zero_pole_from_phase, Block, Pid};
use hybridsim::Simulation;
use std::f64::consts::PI;

const TUSTIN: Discretization = Discretization::Tustin { prewarp_hz: None };

/// Steady-state gain and phase of `block` at `f` Hz: a cosine input, the transient left to
/// decay, then `y ≈ A cos + B sin + C` fitted by least squares over whole periods (`C` absorbs
/// the constant an integrator keeps from the start).
fn measured_response(block: &mut dyn Block, f: f64, dt: f64) -> (f64, f64) {
    let w = 2.0 * PI * f;
    let period = (1.0 / (f * dt)).round() as usize;
    let settle = (20 * period).max(5000);
    let n = settle + 10 * period;
    let mut rows = Vec::new();
    for k in 0..n {
        let t = k as f64 * dt;
        let y = block.step((w * t).cos());
        if k >= settle {
            rows.push(([(w * t).cos(), (w * t).sin(), 1.0], y));
        }
    }
    let mut m = nalgebra::Matrix3::<f64>::zeros();
    let mut b = nalgebra::Vector3::<f64>::zeros();
    for (phi, y) in &rows {
        let p = nalgebra::Vector3::from_row_slice(phi);
        m += p * p.transpose();
        b += p * *y;
    }
    let x = m.lu().solve(&b).unwrap();
    // y = A cos(wt) + B sin(wt) = R cos(wt + φ), R = √(A²+B²), φ = atan2(−B, A).
    ((x[0] * x[0] + x[1] * x[1]).sqrt(), (-x[1]).atan2(x[0]))
}

/// A complex number as (re, im) helpers.
fn cdiv(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let d = b.0 * b.0 + b.1 * b.1;
    ((a.0 * b.0 + a.1 * b.1) / d, (a.1 * b.0 - a.0 * b.1) / d)
}

/// The Tustin image of `C(s)` at ω is `C(j ω_w)`, `ω_w = (2/Δt) tan(ω Δt/2)` (frequency warping).
fn warped(f: f64, dt: f64) -> f64 {
    (2.0 / dt) * (PI * f * dt).tan()
}

/// `k_p + k_i/(jω) + k_d jω/(T_f jω + 1)`.
fn pid_response(kp: f64, ki: f64, kd: f64, tf: f64, w: f64) -> (f64, f64) {
    let i = cdiv((ki, 0.0), (0.0, w));
    let d = cdiv((0.0, kd * w), (1.0, tf * w));
    (kp + i.0 + d.0, i.1 + d.1)
}

fn polar(c: (f64, f64)) -> (f64, f64) {
    ((c.0 * c.0 + c.1 * c.1).sqrt(), c.1.atan2(c.0))
}

#[test]
fn pid_step_response_matches_its_closed_forms() {
    let (kp, ki, kd, tf, dt) = (2.0, 5.0, 0.01, 0.002, 1e-3);
    // Tustin: I_k = k_i Δt (k + ½); derivative y_k = a^k b, a = (2T_f − Δt)/(2T_f + Δt),
    // b = 2 k_d/(2T_f + Δt).
    let mut pid = Pid::new(kp, ki, kd, tf, f64::NEG_INFINITY, f64::INFINITY, dt, TUSTIN).unwrap();
    assert_eq!(pid.reset(0.0), 0.0);
    let a = (2.0 * tf - dt) / (2.0 * tf + dt);
    let b = 2.0 * kd / (2.0 * tf + dt);
    for k in 0..200 {
        let u = pid.step(1.0);
        let expected = kp + ki * dt * (k as f64 + 0.5) + b * a.powi(k);
        assert!(
            (u - expected).abs() < 1e-12 * expected.abs().max(1.0),
            "tick {k}: {u} vs {expected}"
        );
    }
    // ZOH: the samples of the continuous step response of the derivative,
    // (k_d/T_f) e^{−t/T_f}, and the forward-Euler integral k_i Δt k.
    let mut pid = Pid::new(
        kp,
        ki,
        kd,
        tf,
        f64::NEG_INFINITY,
        f64::INFINITY,
        dt,
        Discretization::Zoh,
    )
    .unwrap();
    pid.reset(0.0);
    for k in 0..200 {
        let u = pid.step(1.0);
        let t = k as f64 * dt;
        let expected = kp + ki * t + kd / tf * (-t / tf).exp();
        assert!((u - expected).abs() < 1e-10, "tick {k}: {u} vs {expected}");
    }
}

#[test]
fn pid_frequency_response_is_the_tustin_image_of_the_continuous_one() {
    let (kp, ki, kd, tf, dt) = (1.5, 20.0, 0.004, 0.001, 1e-3);
    for f in [0.5, 5.0, 50.0, 200.0] {
        let mut pid =
            Pid::new(kp, ki, kd, tf, f64::NEG_INFINITY, f64::INFINITY, dt, TUSTIN).unwrap();
        pid.reset(0.0);
        let (g, ph) = measured_response(&mut pid, f, dt);
        let (g0, ph0) = polar(pid_response(kp, ki, kd, tf, warped(f, dt)));
        assert!((g / g0 - 1.0).abs() < 1e-8, "{f} Hz: gain {g} vs {g0}");
        assert!((ph - ph0).abs() < 1e-8, "{f} Hz: phase {ph} vs {ph0}");
        // Far below Nyquist the discrete controller is the continuous one.
        if f <= 5.0 {
            let (gc, phc) = polar(pid_response(kp, ki, kd, tf, 2.0 * PI * f));
            assert!((g / gc - 1.0).abs() < 1e-3 && (ph - phc).abs() < 1e-3);
        }
    }
}

#[test]
fn pid_output_limit_with_anti_windup_recovers_at_once() {
    let dt = 1e-3;
    let mut pid = Pid::new(1.0, 10.0, 0.0, 0.0, -2.0, 2.0, dt, TUSTIN).unwrap();
    pid.reset(0.0);
    // A large error for 1 s: the output saturates at 2, the integral stops where the
    // unsaturated output first exceeds the limit (not at ki·1 s = 10·5 = 50).
    for _ in 0..1000 {
        assert!(pid.step(5.0) <= 2.0);
    }
    assert!(
        pid.integral() < 2.0,
        "integral wound up to {}",
        pid.integral()
    );
    // The error reverses: without windup the output leaves the limit on the first tick.
    let u = pid.step(-1.0);
    assert!(u < 2.0 - 0.9, "{u}");
    // Without a limit the same controller winds up.
    let mut free = Pid::new(
        1.0,
        10.0,
        0.0,
        0.0,
        f64::NEG_INFINITY,
        f64::INFINITY,
        dt,
        TUSTIN,
    )
    .unwrap();
    free.reset(0.0);
    for _ in 0..1000 {
        free.step(5.0);
    }
    assert!((free.integral() - 50.0).abs() < 0.1);
}

#[test]
fn lead_lag_step_and_frequency_responses_match_closed_forms() {
    let dt = 1e-3;
    let (gain, zero, pole) = (2.0, 10.0, 60.0);
    // ZOH samples the continuous step response K z/p + K (1 − z/p) e^{−p t} exactly.
    let mut b = lead_lag(gain, zero, pole, dt, Discretization::Zoh).unwrap();
    b.reset(0.0);
    for k in 0..300 {
        let t = k as f64 * dt;
        let y = b.step(1.0);
        let expected = gain * zero / pole + gain * (1.0 - zero / pole) * (-pole * t).exp();
        assert!((y - expected).abs() < 1e-12, "tick {k}: {y} vs {expected}");
    }
    // Tustin: the response at f is C(j ω_w).
    for f in [1.0, 10.0, 100.0] {
        let mut b = lead_lag(gain, zero, pole, dt, TUSTIN).unwrap();
        b.reset(0.0);
        let (g, ph) = measured_response(&mut b, f, dt);
        let w = warped(f, dt);
        let (g0, ph0) = polar(cdiv((gain * zero, gain * w), (pole, w)));
        assert!((g / g0 - 1.0).abs() < 1e-9, "{f} Hz: {g} vs {g0}");
        assert!((ph - ph0).abs() < 1e-9, "{f} Hz: {ph} vs {ph0}");
    }
    // Given by frequency and phase: the largest phase lead lies at f_m and equals φ_m.
    let (fm, phi) = (8.0, 40.0);
    let (z, p) = zero_pole_from_phase(fm, phi);
    let wm = 2.0 * PI * fm;
    let phase = |w: f64| (w / z).atan() - (w / p).atan();
    assert!((phase(wm).to_degrees() - phi).abs() < 1e-10);
    assert!(phase(wm * 1.01) < phase(wm) && phase(wm * 0.99) < phase(wm));
    // A negative phase gives the mirror lag.
    let (zl, pl) = zero_pole_from_phase(fm, -phi);
    assert!((zl - p).abs() < 1e-9 && (pl - z).abs() < 1e-9);
    // An unstable pole is refused.
    assert!(lead_lag(1.0, 1.0, -1.0, dt, TUSTIN).is_err());
}

/// P control of a first-order plant, loop closed over one sample:
/// `x_k = x_{k−1} + a (K_p (d − x_{k−1}) − x_{k−1})`, `a = 1 − e^{−Δt/τ}`, so a unit step gives
/// `x_k = g (1 − r^{k+1})`, `g = K_p/(1 + K_p)`, `r = 1 − a (1 + K_p)`.
#[test]
fn p_controlled_first_order_plant_follows_the_analytic_discrete_closed_loop() {
    let (kp, tau, dt) = (4.0, 0.02, 1e-3);
    let c = ControllerSettings {
        feedback: vec![BlockSpec::Pid {
            kp,
            ki: 0.0,
            kd: 0.0,
            derivative_time_constant: 0.0,
            min: f64::NEG_INFINITY,
            max: f64::INFINITY,
            discretization: TUSTIN,
        }],
        feedforward: Vec::new(),
    };
    let mut servo = ServoLoop::try_new(&c, &[], dt).unwrap();
    let mut plant = Actuator::new(
        &hybridsim::model::lab::ActuatorDynamics::FirstOrder { tau },
        dt,
        0.0,
    );
    let u0 = plant.reset(0.0, 0.0);
    servo.reset(0.0, u0);
    let a = 1.0 - (-dt / tau).exp();
    let g = kp / (1.0 + kp);
    let r = 1.0 - a * (1.0 + kp);
    let mut measured = 0.0;
    for k in 0..400 {
        let u = servo.step(1.0, measured);
        let x = plant.tick(u, dt, 0.0);
        measured = x;
        let expected = g * (1.0 - r.powi(k + 1));
        assert!((x - expected).abs() < 1e-13, "tick {k}: {x} vs {expected}");
    }
}

fn actuator(t: &mut toml::Table) -> &mut toml::Table {
    t["lab"]["actuator"].as_array_mut().unwrap()[0]
        .as_table_mut()
        .unwrap()
}

fn insert(t: &mut toml::Table, key: &str, text: &str) {
    let v: toml::Table = format!("{key} = {text}").parse().unwrap();
    t.insert(key.into(), v[key].clone());
}

/// Every lab row of a run (the ring drained after each step); panics on a stop.
pub fn lab_rows(model: hybridsim::Model) -> Vec<Vec<f64>> {
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let mut rows = Vec::new();
    for _ in 0..sim.n_steps() {
        sim.step().unwrap_or_else(|e| panic!("{e}"));
        sim.integrator
            .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |r| rows.push(r.to_vec())));
    }
    rows
}

/// The quick start with a first-order actuator under PI control: the run completes and the
/// achieved displacement equals a hand-written reference loop fed the recorded commands and
/// measurements, to round-off.
#[test]
fn pi_servo_loop_in_the_virtual_lab_equals_a_hand_written_reference_loop() {
    let (kp, ki, tau, dt) = (3.0, 40.0, 0.01, 1e-3);
    let model = example_with("quickstart.toml", |t| {
        let a = actuator(t);
        insert(
            a,
            "dynamics",
            &format!("{{ kind = 'first_order', tau = {tau} }}"),
        );
        a.remove("compensation");
        insert(
            a,
            "controller",
            &format!("{{ feedback = [{{ kind = 'pid', kp = {kp}, ki = {ki} }}] }}"),
        );
    });
    assert_eq!(model.lab.as_ref().unwrap().lab.time_scale.dt_c, dt);
    let rows = lab_rows(model);
    // Columns: time, wall, desired, compensated, measured, force, safety, achieved_true, …
    let a = 1.0 - (-dt / tau).exp();
    let start = rows.iter().position(|r| !r[7].is_nan()).unwrap();
    // The model starts at rest at zero: the bumpless start's ticks command zero and measure
    // zero, so the loop is still at rest when the test starts.
    assert!(rows[..start].iter().all(|r| r[3] == 0.0 && r[4] == 0.0));
    let (mut x, mut integral, mut e_prev, mut m_prev) = (0.0, 0.0, 0.0, 0.0);
    let mut peak: f64 = 0.0;
    for r in &rows[start..] {
        let d = r[3];
        let e = d - m_prev;
        integral += ki * dt / 2.0 * (e + e_prev);
        e_prev = e;
        let u = kp * e + integral;
        x += a * (u - x);
        assert!(
            (x - r[7]).abs() < 1e-12 * (1.0 + x.abs()),
            "{} vs {}",
            x,
            r[7]
        );
        m_prev = r[4];
        peak = peak.max(d.abs());
    }
    assert!(peak > 1e-3, "the test moved: {peak}");
}
