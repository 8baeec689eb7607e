//! Compensation in the loop: polynomial extrapolation with node spacing and start-up policy
//! (continuity across coarse steps, the quick start within its velocity limit at orders 1–3,
//! the largest command jump reported), model-based inverse compensation of the true plant
//! (delay ≈ 0, amplitude ≈ 1 by `analysis::tracking`) and the adaptive time series compensator
//! (its estimates converge to the true delay and amplitude, and J1 drops below one tick).
mod common;
use common::*;
use hybridsim::analysis::tracking::tracking_criteria;
use hybridsim::model::lab::{DelayCompensation, NodeSpacing, StartupPolicy};
use hybridsim::physical::compensation::DelayCompensator;
use hybridsim::physical::SafetySummary;
use hybridsim::Simulation;

fn comp(
    order: usize,
    estimate: f64,
    node_spacing: NodeSpacing,
    startup: StartupPolicy,
) -> DelayCompensation {
    DelayCompensation {
        order,
        estimate,
        node_spacing,
        startup,
    }
}

/// Order-`p` Lagrange extrapolation of `nodes` (newest first, unit spacing) `m` ahead.
fn extrapolate(nodes: &[f64], p: usize, m: f64) -> f64 {
    let mut out = 0.0;
    for (i, node) in nodes.iter().enumerate().take(p + 1) {
        let mut l = 1.0;
        for j in 0..=p {
            if j != i {
                l *= (m + j as f64) / (j as f64 - i as f64);
            }
        }
        out += l * node;
    }
    out
}

/// With the nodes one coarse step apart and substep targets interpolating the coarse-step
/// targets linearly, the command is the coarse sequence extrapolated and interpolated within
/// the step: `(1 − θ) E_n + θ E_{n+1}` — continuous, no sawtooth.
#[test]
fn coarse_step_nodes_extrapolate_the_coarse_sequence_and_interpolate_within_the_step() {
    let (ss, dt, tau) = (5usize, 1e-3, 0.004);
    let coarse: Vec<f64> = (0..60)
        .map(|n| (0.37 * n as f64).sin() + 0.02 * (n * n) as f64)
        .collect();
    for p in 1..=3 {
        let mut c = DelayCompensator::with_subcycles(
            &comp(
                p,
                tau,
                NodeSpacing::CoarseSteps(1),
                StartupPolicy::Passthrough,
            ),
            dt,
            ss,
        );
        assert_eq!(c.spacing(), ss);
        c.reset(coarse[0]);
        let m = tau / (ss as f64 * dt);
        let mut previous = coarse[0];
        for n in 0..coarse.len() - 1 {
            for j in 1..=ss {
                let theta = j as f64 / ss as f64;
                let d = (1.0 - theta) * coarse[n] + theta * coarse[n + 1];
                let u = c.apply(d);
                if n > p + 1 {
                    let hist = |k: usize| -> Vec<f64> { (0..=p).map(|i| coarse[k - i]).collect() };
                    let e_n = extrapolate(&hist(n), p, m);
                    let e_n1 = extrapolate(&hist(n + 1), p, m);
                    let expected = (1.0 - theta) * e_n + theta * e_n1;
                    assert!(
                        (u - expected).abs() < 1e-12,
                        "p {p}, step {n}, phase {j}: {u} vs {expected}"
                    );
                    // Per-tick increments are (E_{n+1} − E_n)/ss: no jump at the coarse step.
                    assert!(((u - previous) - (e_n1 - e_n) / ss as f64).abs() < 1e-12);
                }
                previous = u;
            }
        }
    }
}

#[test]
fn start_up_policies() {
    let dt = 1e-3;
    let x0 = 0.5;
    let targets = [0.6, 0.8, 1.1, 1.5, 2.0];
    // hold_order, spacing 1, order 3, two ticks ahead: order 0, 1, 2, then 3.
    let mut c = DelayCompensator::new(
        &comp(3, 2.0 * dt, NodeSpacing::Ticks(1), StartupPolicy::HoldOrder),
        dt,
    );
    c.reset(x0);
    let mut seen: Vec<f64> = Vec::new();
    for (k, &d) in targets.iter().enumerate() {
        seen.insert(0, d);
        let q = k.min(3);
        let expected = extrapolate(&seen, q, 2.0);
        let u = c.apply(d);
        assert!((u - expected).abs() < 1e-12, "tick {k}: {u} vs {expected}");
    }
    // rest_history: the full order from the first tick, through the rest position.
    let mut c = DelayCompensator::new(
        &comp(
            2,
            2.0 * dt,
            NodeSpacing::Ticks(1),
            StartupPolicy::RestHistory,
        ),
        dt,
    );
    c.reset(x0);
    let u = c.apply(0.6);
    assert!((u - extrapolate(&[0.6, x0, x0], 2, 2.0)).abs() < 1e-12);
    // passthrough (the default): the target itself for the first order·spacing + 1 ticks.
    let mut c = DelayCompensator::new(
        &comp(
            2,
            2.0 * dt,
            NodeSpacing::Ticks(2),
            StartupPolicy::Passthrough,
        ),
        dt,
    );
    c.reset(x0);
    for (k, &d) in targets.iter().enumerate() {
        let u = c.apply(d);
        if k <= 4 {
            assert_eq!(u, d);
        }
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

/// The quick start for `duration` s with its actuator edited by `edit`.
fn quickstart(duration: f64, edit: impl FnOnce(&mut toml::Table)) -> hybridsim::Model {
    example_with("quickstart.toml", |t| {
        set(t, "analysis", "duration", duration);
        edit(actuator(t));
    })
}

/// Run to the end (or the first stop); the lab rows, the safety summary and whether it
/// completed.
fn run_lab(model: hybridsim::Model) -> (Vec<Vec<f64>>, SafetySummary, Result<(), String>) {
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let mut rows = Vec::new();
    let mut outcome = Ok(());
    for _ in 0..sim.n_steps() {
        let r = sim.step();
        sim.integrator
            .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |r| rows.push(r.to_vec())));
        if let Err(e) = r {
            outcome = Err(e.to_string());
            break;
        }
    }
    let mut summary = None;
    sim.integrator
        .for_each_lab(&mut |_, lab| summary = Some(lab.safety_summary()));
    (rows, summary.unwrap(), outcome)
}

/// Every compensator keeps the quick start within its velocity limit (2 m/s, 2 mm per 1 ms
/// tick) at orders 1–3; the largest command jump per tick is reported in the safety summary
/// and equals the one in the lab record.
#[test]
fn every_compensator_keeps_the_quick_start_within_its_velocity_limit() {
    let velocity_limit = 2.0;
    let dt = 1e-3;
    let mut report = Vec::new();
    let mut cases: Vec<(String, String)> = Vec::new();
    for order in 1..=3 {
        // One coarse step for orders 1–2, two for order 3 (see `compensation::polynomial`).
        let spacings: &[&str] = if order < 3 {
            &["'coarse_step'", "5"]
        } else {
            &["{ coarse_steps = 2 }", "10"]
        };
        for spacing in spacings {
            for startup in ["hold_order", "rest_history", "passthrough"] {
                cases.push((
                    format!("polynomial order {order}, spacing {spacing}, {startup}"),
                    format!(
                        "{{ delay = {{ order = {order}, estimate = 0.004, node_spacing = {spacing}, \
                         startup = '{startup}' }} }}"
                    ),
                ));
            }
        }
    }
    cases.push((
        "inverse first order".into(),
        "{ inverse = { model = 'first_order', tau = 0.004, filter_time_constant = 0.001 } }".into(),
    ));
    cases.push((
        "adaptive time series".into(),
        "{ adaptive = { window = 500, update_every = 10 } }".into(),
    ));
    let mut failures = Vec::new();
    for (name, text) in &cases {
        let model = quickstart(6.0, |a| insert(a, "compensation", text));
        let (rows, summary, outcome) = run_lab(model);
        let desired_jump = rows
            .windows(2)
            .map(|w| (w[1][2] - w[0][2]).abs())
            .fold(0.0, f64::max);
        eprintln!(
            "{name}: {outcome:?} jump {:e} desired jump {desired_jump:e}",
            summary.largest_command_jump[0]
        );
        if outcome.is_err() {
            failures.push(name.clone());
            continue;
        }
        assert!(summary.event.is_none(), "{name}: {:?}", summary.event);
        let jump = summary.largest_command_jump[0];
        let from_rows = rows
            .windows(2)
            .map(|w| (w[1][3] - w[0][3]).abs())
            .fold(0.0, f64::max);
        assert!(
            (jump - from_rows).abs() <= 1e-15 + 1e-12 * jump,
            "{name}: {jump} vs {from_rows}"
        );
        assert!(jump / dt < velocity_limit, "{name}: {} m/s", jump / dt);
        report.push(format!("{name}: largest command jump {jump:.3e} m/tick"));
    }
    assert!(failures.is_empty(), "{failures:?}");
    // Tick-spaced nodes (the earlier behaviour) amplify the coarse-step kinks: orders 2 and 3
    // with one-tick spacing trip the limits that coarse-step spacing keeps; order 3 with one
    // coarse step lets an alternation at the coarse rate grow (reported, not asserted).
    let mut tick_spaced = Vec::new();
    for (order, spacing) in [(2, "1"), (3, "1"), (3, "'coarse_step'")] {
        let model = quickstart(6.0, |a| {
            insert(
                a,
                "compensation",
                &format!(
                    "{{ delay = {{ order = {order}, estimate = 0.004, node_spacing = {spacing} }} }}"
                ),
            )
        });
        let (_, summary, outcome) = run_lab(model);
        report.push(format!(
            "polynomial order {order}, spacing {spacing}: {:?}, largest jump {:.3e}",
            summary.event.map(|e| e.kind),
            summary.largest_command_jump[0]
        ));
        if spacing == "1" {
            tick_spaced
                .push(outcome.is_err() || summary.largest_command_jump[0] / dt > velocity_limit);
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        tick_spaced.iter().any(|&tripped| tripped),
        "{tick_spaced:?}"
    );
}

/// The inverse of the true first-order plant: the achieved displacement tracks the target with
/// no delay (J1 = 0) and unit amplitude; without it J1 is several ticks.
#[test]
fn inverse_of_the_true_plant_removes_its_lag() {
    let dt = 1e-3;
    let tau = 0.01;
    let criteria = |compensate: bool| {
        let model = quickstart(6.0, |a| {
            insert(
                a,
                "dynamics",
                &format!("{{ kind = 'first_order', tau = {tau} }}"),
            );
            if compensate {
                insert(
                    a,
                    "compensation",
                    &format!(
                        "{{ inverse = {{ model = 'first_order', tau = {tau}, \
                         filter_time_constant = 0.0002 }} }}"
                    ),
                );
            } else {
                a.remove("compensation");
            }
        });
        let (rows, summary, outcome) = run_lab(model);
        assert!(outcome.is_ok() && summary.event.is_none(), "{outcome:?}");
        let rows: Vec<&Vec<f64>> = rows.iter().filter(|r| !r[7].is_nan()).collect();
        let desired: Vec<f64> = rows.iter().map(|r| r[2]).collect();
        let achieved: Vec<f64> = rows.iter().map(|r| r[7]).collect();
        let rms = |x: &[f64]| (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt();
        (
            tracking_criteria(&desired, &achieved, dt, 100).unwrap(),
            rms(&achieved) / rms(&desired),
        )
    };
    let (plain, _) = criteria(false);
    let (inverse, amplitude) = criteria(true);
    eprintln!("without: {plain:?}\nwith inverse: {inverse:?}, amplitude ratio {amplitude}");
    assert!(plain.j1_delay >= 5.0 * dt, "{plain:?}");
    assert_eq!(inverse.j1_delay, 0.0, "{inverse:?}");
    assert!((amplitude - 1.0).abs() < 0.01, "{amplitude}");
    assert!(
        inverse.j2_nrms < 0.1 * plain.j2_nrms,
        "{inverse:?} vs {plain:?}"
    );
}

/// ATS on an actuator with a pure delay of 4 ticks and a gain of 0.8: the estimated delay
/// converges to 4 ms within a quarter tick and the amplitude factor to 1/0.8 within 2 %; J1 of
/// the second half of the test is 0 (4 ticks without compensation).
#[test]
fn adaptive_time_series_estimates_delay_and_amplitude_and_removes_the_delay() {
    let dt = 1e-3;
    let (delay, gain) = (0.004, 0.8);
    let run = |adaptive: bool| {
        let model = quickstart(10.0, |a| {
            insert(
                a,
                "dynamics",
                &format!(
                    "[{{ kind = 'delay', delay = {delay} }}, \
                     {{ kind = 'transfer_function', num = [{gain}], den = [1e-6, 1.0] }}]"
                ),
            );
            if adaptive {
                insert(
                    a,
                    "compensation",
                    "{ adaptive = { window = 1000, update_every = 10, min_velocity = 1e-4 } }",
                );
            } else {
                a.remove("compensation");
            }
        });
        run_lab(model)
    };
    let criteria = |rows: &[Vec<f64>]| {
        let half = &rows[rows.len() / 2..];
        let desired: Vec<f64> = half.iter().map(|r| r[2]).collect();
        let achieved: Vec<f64> = half.iter().map(|r| r[7]).collect();
        tracking_criteria(&desired, &achieved, dt, 100).unwrap()
    };
    let (rows, summary, outcome) = run(false);
    assert!(outcome.is_ok(), "{outcome:?}");
    let plain = criteria(&rows);
    let (rows, summary_ats, outcome) = run(true);
    assert!(
        outcome.is_ok() && summary_ats.event.is_none(),
        "{outcome:?}"
    );
    let ats = criteria(&rows);
    let stat = |k: &str| {
        summary_ats
            .compensation_statistics
            .iter()
            .find(|(n, _)| n == &format!("storey1.{k}"))
            .map(|(_, v)| *v)
            .unwrap()
    };
    eprintln!(
        "without: {plain:?}\nATS: {ats:?}\nestimated delay {} s, amplitude factor {}, a2 {}, \
         {} updates",
        stat("ats_delay"),
        stat("ats_amplitude_factor"),
        stat("ats_a2"),
        stat("ats_updates")
    );
    assert!(summary.compensation_statistics.is_empty());
    assert!((plain.j1_delay - delay).abs() < 0.5 * dt, "{plain:?}");
    assert!((stat("ats_delay") - delay).abs() < 0.25 * dt);
    assert!((stat("ats_amplitude_factor") * gain - 1.0).abs() < 0.02);
    assert_eq!(ats.j1_delay, 0.0, "{ats:?}");
    assert!(ats.j2_nrms < 0.2 * plain.j2_nrms, "{ats:?} vs {plain:?}");
}
