//! Lead-rubber bearing (Benzoni–Casarotti law of Abbiati et al. 2019, eqs 42–44) with the
//! set-valued lead force (issue 17): second order in the driving step on a smooth history, the
//! physical LRB of `examples/isolated_deck_lrb.toml` absorbing the energy of a fine step at the
//! example's own step, and no force jumps along the run's loop beyond what the law gives for
//! the displacement increment.
mod common;
use common::*;
use hybridsim::elements::{DofRef, Element, ElementDriver, LeadRubberBearing};
use std::f64::consts::PI;

const R_LEAD: f64 = 1.02e5;
const K_RUBBER: f64 = 1.35e6;
const A_LEAD: f64 = 5.0;
const P0: f64 = 1.0e-3;

fn bearing() -> LeadRubberBearing {
    LeadRubberBearing::new(
        vec![DofRef::new(1, "x")],
        [R_LEAD, K_RUBBER, 2.0, A_LEAD, P0],
    )
    .unwrap()
}

/// A smooth history with a growing envelope and reversals inside `|d| < p`.
fn history(t: f64) -> f64 {
    (0.01 + 0.01 * t) * (2.0 * PI * t).sin() + 0.004 * (2.0 * PI * 3.3 * t).sin()
}

/// Force at `samples` equally spaced times of `[0, T]` and the absorbed energy at `T`, driving
/// the bearing with `n` steps.
fn drive(n: usize, samples: usize) -> (Vec<f64>, f64) {
    let t_end = 3.0;
    let dt = t_end / n as f64;
    let mut dr = ElementDriver::new(Box::new(bearing()), &[0.0; 3]).unwrap();
    let every = n / samples;
    let mut forces = Vec::new();
    for k in 1..=n {
        let t = k as f64 * dt;
        dr.set_trial(dt, &[history(t)], &[0.0]).unwrap();
        dr.commit();
        if k % every == 0 {
            forces.push(dr.force()[0]);
        }
    }
    (forces, dr.states()[2])
}

#[test]
fn lrb_is_second_order_in_the_driving_step_on_a_smooth_history() {
    let samples = 60;
    let (reference, e_ref) = drive(60 * 2048, samples);
    let mut force_errors = Vec::new();
    let mut energy_errors = Vec::new();
    for n in [60 * 8, 60 * 16, 60 * 32, 60 * 64] {
        let (f, e) = drive(n, samples);
        let err = f
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        force_errors.push(err / R_LEAD);
        energy_errors.push((e - e_ref).abs() / e_ref);
        println!(
            "LRB on a smooth history, {n} steps: max force error {:.3e} r_lead, absorbed energy {e:.6e} (reference {e_ref:.6e}), error {:.3e}",
            err / R_LEAD,
            (e - e_ref).abs() / e_ref
        );
    }
    let sf = slopes(&force_errors);
    let se = slopes(&energy_errors);
    println!("orders: force {sf:?}, energy {se:?}");
    // Second order: the error falls by 4 per halving (a slope of 2; 1.7 allows the
    // pre-asymptotic first halving and the reference's own error).
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    assert!(mean(&sf) > 1.7, "force orders {sf:?}");
    // The absorbed energy is integrated along each driving step with substeps of p0/2,
    // whatever the step: its error does not depend on the driving step.
    assert!(
        energy_errors.iter().all(|e| *e < 5e-4),
        "{energy_errors:?} ({se:?})"
    );
}

/// The example's run with `time_step / factor` (and the output interval scaled to keep the
/// rows), columns and every row.
fn deck_run(factor: u32, every: Option<i64>) -> (Vec<String>, Vec<Vec<f64>>) {
    let model = example_with("isolated_deck_lrb.toml", |t| {
        let a = t["analysis"].as_table_mut().unwrap();
        let dt = a["time_step"].as_float().unwrap();
        a.insert("time_step".into(), (dt / factor as f64).into());
        let o = t["output"].as_table_mut().unwrap();
        let e = every.unwrap_or(o["every"].as_integer().unwrap() * factor as i64);
        o.insert("every".into(), e.into());
    });
    let mut sim = hybridsim::Simulation::new(model).unwrap();
    let names: Vec<String> = sim.columns().iter().map(|c| c.name.clone()).collect();
    let mut row = vec![0.0; names.len()];
    let mut rows = Vec::new();
    sim.record(&mut row);
    rows.push(row.clone());
    for _ in 0..sim.n_steps() {
        sim.step().unwrap();
        sim.record(&mut row);
        rows.push(row.clone());
    }
    (names, rows)
}

fn column(names: &[String], rows: &[Vec<f64>], name: &str) -> Vec<f64> {
    let i = names
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no column {name} in {names:?}"));
    rows.iter().map(|r| r[i]).collect()
}

#[test]
fn physical_lrb_absorbs_the_fine_step_energy_at_the_example_step() {
    let (names, rows) = deck_run(1, None);
    let (names_fine, rows_fine) = deck_run(16, None);
    let e = *column(&names, &rows, "state.lrb.e").last().unwrap();
    let e_fine = *column(&names_fine, &rows_fine, "state.lrb.e")
        .last()
        .unwrap();
    let p = column(&names, &rows, "state.lrb.p");
    let p_fine = column(&names_fine, &rows_fine, "state.lrb.p");
    let rel = (e - e_fine).abs() / e_fine;
    println!(
        "isolated_deck_lrb: absorbed energy {e:.6e} N·m at Δt, {e_fine:.6e} N·m at Δt/16 ({:.2} %); peak p {:.5} m / {:.5} m",
        100.0 * rel,
        p.last().unwrap(),
        p_fine.last().unwrap()
    );
    assert!(rel < 0.02, "absorbed energy {e} vs {e_fine} at Δt/16");
}

/// The steepest slope of the law at peak `p`: rubber `(k/2)(1 + 2|d|/p) ≤ 1.5 k`, lead
/// `(2a + 4) r_lead / max(p, p0)` (no bound of the lead's band is steeper).
fn k_max(p: f64) -> f64 {
    1.5 * K_RUBBER + (2.0 * A_LEAD + 4.0) * R_LEAD / p.max(P0)
}

/// The largest `|ΔF| − k_max(p)|Δd|` between consecutive rows and the rows where it exceeds
/// `tolerance`.
fn excess(d: &[f64], f: &[f64], p: &[f64], k: f64, tolerance: f64) -> (f64, usize) {
    let mut worst = f64::NEG_INFINITY;
    let mut count = 0;
    for i in 1..d.len() {
        let x = (f[i] - f[i - 1]).abs() - k * k_max(p[i - 1]) * (d[i] - d[i - 1]).abs();
        worst = worst.max(x);
        if x > tolerance {
            count += 1;
        }
    }
    (worst, count)
}

fn largest_jump(f: &[f64]) -> f64 {
    f.windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max)
}

/// The force of the element driven alone along the deformations `d` (as `hybridsim cyclic`
/// drives it), with its peak `p`.
fn replay(element: LeadRubberBearing, d: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let two = element.dofs().len() == 2;
    let mut dr = ElementDriver::new(Box::new(element), &[0.0; 3]).unwrap();
    let (mut f, mut p) = (Vec::new(), Vec::new());
    for x in d {
        let u = [*x, 0.0];
        let u = if two { &u[..] } else { &u[..1] };
        dr.set_trial(0.0, u, &[0.0, 0.0][..u.len()]).unwrap();
        dr.commit();
        f.push(dr.force()[0]);
        p.push(dr.states()[0]);
    }
    (f, p)
}

#[test]
fn no_force_jumps_along_the_physical_lrb_loop_beyond_the_law() {
    let (names, rows) = deck_run(1, Some(1));
    let f = column(&names, &rows, "force.lrb.1.x");
    let p = column(&names, &rows, "state.lrb.p");
    let q = column(&names, &rows, "state.lrb.q");
    // A row holds the specimen after the last command of its step; its deformation is not
    // the corrected state of the row but the command, recovered from the rubber's force
    // F − q = (k/2)(d + d|d|/p) (n_rubber = 2).
    let d: Vec<f64> = f
        .iter()
        .zip(&q)
        .zip(&p)
        .map(|((f, q), p)| {
            let pe = p.max(P0);
            let y = 2.0 * (f - q) / K_RUBBER;
            y.signum() * pe * (-1.0 + (1.0 + 4.0 * y.abs() / pe).sqrt()) / 2.0
        })
        .collect();
    // Between rows the specimen took five commands, which may reverse inside the step: a
    // quarter of r_lead covers that; a jump of the printed law is r_lead (g(1 + d/p) +
    // g(1 − d/p)), up to 2 r_lead.
    let tolerance = 0.25 * R_LEAD;
    let (worst, count) = excess(&d, &f, &p, 1.0, tolerance);
    let (fr, pr) = replay(bearing(), &d);
    let (worst_law, count_law) = excess(&d, &fr, &pr, 1.0, 1e-6 * R_LEAD);
    println!(
        "isolated_deck_lrb, {} rows: largest |ΔF| {:.4e} N (run), {:.4e} N (the law along the run's deformations); worst |ΔF| − k_max|Δd| {worst:.4e} N (run), {worst_law:.4e} N (law); rows beyond: {count} (run, {tolerance:.3e} N), {count_law} (law, 1e-6 r_lead)",
        d.len(),
        largest_jump(&f),
        largest_jump(&fr),
    );
    assert_eq!(count_law, 0, "the law itself jumps ({worst_law} N)");
    assert_eq!(
        count, 0,
        "{count} rows jump beyond the law (worst {worst} N)"
    );
}

#[test]
fn no_force_jumps_along_the_numerical_lrb_loops_of_the_bridge() {
    // The numerical LRB pairs of examples/bridge_iso_lrb.toml under the converged solve: each
    // step is one straight deformation path, so the force changes by at most k_max |Δd|.
    let model = example_with("bridge_iso_lrb.toml", |t| {
        t["analysis"]
            .as_table_mut()
            .unwrap()
            .insert("duration".into(), 5.0.into());
        t["output"]
            .as_table_mut()
            .unwrap()
            .insert("every".into(), 1.into());
    });
    let mut sim = hybridsim::Simulation::new(model).unwrap();
    let names: Vec<String> = sim.columns().iter().map(|c| c.name.clone()).collect();
    let mut row = vec![0.0; names.len()];
    let mut rows = Vec::new();
    sim.record(&mut row);
    rows.push(row.clone());
    for _ in 0..sim.n_steps() {
        sim.step().unwrap();
        sim.record(&mut row);
        rows.push(row.clone());
    }
    for (name, node) in [("lrb_a", 1), ("lrb_p2", 11), ("lrb_b", 16)] {
        let f = column(&names, &rows, &format!("force.{name}.{node}.y"));
        let d = column(&names, &rows, &format!("deformation.{name}"));
        let p = column(&names, &rows, &format!("state.{name}.p"));
        // Each pair is twice one bearing.
        let (worst, count) = excess(&d, &f, &p, 2.0, 1e-6 * R_LEAD);
        let pair = LeadRubberBearing::new(
            vec![DofRef::new(1, "y")],
            [2.0 * R_LEAD, 2.0 * K_RUBBER, 2.0, A_LEAD, P0],
        )
        .unwrap();
        let (fr, _) = replay(pair, &d);
        let gap = f
            .iter()
            .zip(&fr)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!(
            "bridge_iso_lrb {name}, {} rows: largest |ΔF| {:.4e} N, worst |ΔF| − k_max|Δd| {worst:.4e} N, rows beyond 1e-6 r_lead: {count}; largest |F − F_law| along the same deformations {gap:.4e} N",
            d.len(),
            largest_jump(&f),
        );
        assert_eq!(count, 0, "{name}: {count} rows jump (worst {worst} N)");
    }
}
