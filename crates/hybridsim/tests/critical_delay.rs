//! The critical actuator delay of a real-time hybrid test: the closed-loop analysis
//! (`hybridsim analyze delay`) against runs on the virtual lab with a pure-delay actuator,
//! bisected over the delay (diverging = growing response or a safety stop).
mod common;
use common::*;
use hybridsim::analysis::critical_delay::{critical_delay, ExplicitLoop, LoopDelayOptions};
use hybridsim::Simulation;

const EXAMPLE: &str = "rths_explicit_frame.toml";
const DT: f64 = 1.0 / 1024.0;

fn actuator(t: &mut toml::Table) -> &mut toml::Table {
    t["lab"]["actuator"].as_array_mut().unwrap()[0]
        .as_table_mut()
        .unwrap()
}

/// The example in free vibration from a displaced top floor, with an actuator delay of
/// `tau` seconds and the scheme's `force_delay`.
fn frame(tau: f64, force_delay: i64, duration: f64) -> hybridsim::Model {
    example_with(EXAMPLE, |t| {
        actuator(t).insert(
            "dynamics".into(),
            toml::Value::Table(format!("kind = 'delay'\ndelay = {tau}").parse().unwrap()),
        );
        t.remove("load");
        let nodes = t["node"].as_array_mut().unwrap();
        nodes[2].as_table_mut().unwrap().insert(
            "initial_displacement".into(),
            toml::Value::Table("x = 2.0e-3".parse().unwrap()),
        );
        set(t, "analysis", "force_delay", force_delay);
        set(t, "analysis", "duration", duration);
    })
}

/// Run the virtual lab with an actuator delay `tau`: whether the response diverges (a safety
/// stop, or the peak of the last fifth of the run above the peak of the second fifth).
fn diverges(tau: f64, force_delay: i64, duration: f64) -> bool {
    let mut sim =
        Simulation::new(frame(tau, force_delay, duration)).unwrap_or_else(|e| panic!("{e}"));
    let n = sim.n_steps() as usize;
    let mut u = Vec::with_capacity(n);
    for _ in 0..n {
        if sim.step().is_err() {
            return true;
        }
        sim.integrator
            .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |_| {}));
        u.push(sim.integrator.state(0)[2].abs());
    }
    let peak = |a: usize, b: usize| u[a..b].iter().fold(0.0f64, |m, x| m.max(*x));
    peak(4 * n / 5, n) > peak(n / 5, 2 * n / 5)
}

/// Bisect the actuator delay between a bounded run at `lo` and a diverging one at `hi`.
fn bisect_runs(mut lo: f64, mut hi: f64, force_delay: i64, duration: f64) -> f64 {
    assert!(!diverges(lo, force_delay, duration), "bounded at {lo}");
    assert!(diverges(hi, force_delay, duration), "diverging at {hi}");
    while hi - lo > 0.125 * DT {
        let mid = 0.5 * (lo + hi);
        if diverges(mid, force_delay, duration) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn predicted_critical_delay_matches_the_runs_within_one_controller_sample() {
    for force_delay in [1, 0] {
        let model = frame(0.0, force_delay, 1.0);
        let report = critical_delay(&model, &LoopDelayOptions::default()).unwrap();
        let predicted = report.critical.expect("a critical delay within 40 samples");
        let lp = ExplicitLoop::new(&model).unwrap();
        println!(
            "force_delay {force_delay}: predicted critical delay {predicted:.6e} s = {:.3} samples; \
             ρ at −1/+1 sample: {:.8} / {:.8}",
            predicted / DT,
            lp.spectral_radius(predicted - DT),
            lp.spectral_radius(predicted + DT)
        );
        let found = bisect_runs(predicted - DT, predicted + DT, force_delay, 30.0);
        println!(
            "force_delay {force_delay}: runs diverge from {found:.6e} s = {:.3} samples",
            found / DT
        );
        assert!(
            (found - predicted).abs() <= DT,
            "runs {found} s against predicted {predicted} s"
        );
    }
}

#[test]
fn spectral_radius_is_below_one_without_delay_and_grows_with_it() {
    let model = frame(0.0, 1, 1.0);
    let lp = ExplicitLoop::new(&model).unwrap();
    let r0 = lp.spectral_radius(0.0);
    assert!(r0 < 1.0, "ρ(0) = {r0}");
    // Continuous in τ across a whole sample (the linear interpolation of the delay).
    let a = lp.spectral_radius(3.0 * DT - 1e-9 * DT);
    let b = lp.spectral_radius(3.0 * DT);
    assert!(
        (a - b).abs() < 1e-6,
        "ρ jumps at a whole sample: {a} vs {b}"
    );
    // A larger force delay lowers the critical actuator delay by about one sample.
    let c1 = critical_delay(&frame(0.0, 1, 1.0), &LoopDelayOptions::default())
        .unwrap()
        .critical
        .unwrap();
    let c0 = critical_delay(&frame(0.0, 0, 1.0), &LoopDelayOptions::default())
        .unwrap()
        .critical
        .unwrap();
    assert!(
        ((c0 - c1) / DT - 1.0).abs() < 0.25,
        "force_delay 0 → 1 moved the critical delay by {} samples",
        (c0 - c1) / DT
    );
}

/// PG-α (split-mass benchmark, 5 % damping, Δt^P = Δt^C = 1 ms, no compensation): the
/// analysis brackets the critical delay to whole substeps; runs with the delay one substep
/// below it stay bounded, runs one substep above it diverge.
#[test]
fn pg_alpha_critical_delay_in_whole_substeps_matches_the_runs() {
    let with_delay = |tau: f64, duration: f64| {
        example_with("split_mass_delayed_actuator.toml", |t| {
            let a = actuator(t);
            a.remove("compensation");
            a.insert(
                "dynamics".into(),
                toml::Value::Table(format!("kind = 'delay'\ndelay = {tau}").parse().unwrap()),
            );
            set(t, "analysis", "duration", duration);
        })
    };
    let dt_p = 1e-3;
    let report = critical_delay(
        &with_delay(0.0, 1.0),
        &LoopDelayOptions {
            max_delay: Some(40.0 * dt_p),
            ..LoopDelayOptions::default()
        },
    )
    .unwrap();
    assert!(!report.continuous);
    assert!(
        report.points[0].rho <= 1.0 + 1e-10,
        "ρ(0) = {}",
        report.points[0].rho
    );
    let k = report
        .critical_samples()
        .expect("unstable within 40 substeps")
        .round() as i64;
    println!("pg-alpha: critical delay {k} substeps");
    let diverges = |tau: f64| {
        let mut sim = Simulation::new(with_delay(tau, 20.0)).unwrap_or_else(|e| panic!("{e}"));
        let n = sim.n_steps() as usize;
        let mut u = Vec::with_capacity(n);
        for _ in 0..n {
            if sim.step().is_err() {
                return true;
            }
            sim.integrator
                .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |_| {}));
            u.push(
                sim.integrator
                    .state(0)
                    .iter()
                    .take(2)
                    .fold(0.0f64, |m, x| m.max(x.abs())),
            );
        }
        let peak = |a: usize, b: usize| u[a..b].iter().fold(0.0f64, |m, x| m.max(*x));
        peak(4 * n / 5, n) > peak(n / 5, 2 * n / 5)
    };
    assert!(
        !diverges((k - 1) as f64 * dt_p),
        "bounded at {} substeps",
        k - 1
    );
    assert!(
        diverges((k + 1) as f64 * dt_p),
        "diverging at {} substeps",
        k + 1
    );
}
