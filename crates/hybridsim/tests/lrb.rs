//! Lead-rubber bearing (Benzoni–Casarotti law of Abbiati et al. 2019, eqs 42–44), issue 17.
//! The default lead law (`lead = "band"`, the lead force elastic inside the band of the two
//! printed branches): second order in the driving step on a smooth history, the physical LRB
//! of `examples/isolated_deck_lrb.toml` absorbing the energy of a fine step at the example's
//! own step, no force jumps along the run's loop beyond what the law gives for the
//! displacement increment, no step of the converged solve of `examples/bridge_iso_lrb.toml` at
//! its iteration bound. The printed law (`lead = "rigid"`) gives the numbers it gave before
//! the band law, bit for bit; bad `lead` / `lead_stiffness` values are refused at their field.
mod common;
use common::*;
use hybridsim::elements::{DofRef, Element, ElementDriver, LeadLaw, LeadRubberBearing};
use hybridsim::error::ModelError;
use hybridsim::Model;
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
    deck_run_with(factor, every, None)
}

/// [`deck_run`] with the LRB's `lead` key set to `lead` (`None`: the default).
fn deck_run_with(
    factor: u32,
    every: Option<i64>,
    lead: Option<&str>,
) -> (Vec<String>, Vec<Vec<f64>>) {
    let model = example_with("isolated_deck_lrb.toml", |t| {
        if let Some(lead) = lead {
            set_lead(t, "lead", lead.into());
        }
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

/// Set `key = value` on every `lead_rubber` element of a model table.
fn set_lead(t: &mut toml::Table, key: &str, value: toml::Value) {
    for e in t["element"].as_array_mut().unwrap() {
        let e = e.as_table_mut().unwrap();
        if e["type"].as_str() == Some("lead_rubber") {
            e.insert(key.into(), value.clone());
        }
    }
}

/// `lead = "rigid"` is eq 42 as printed, the law of every run before the band law: the last
/// row of `isolated_deck_lrb` equals, bit for bit, what `hybridsim run
/// examples/isolated_deck_lrb.toml` wrote at `main` `b2f282f` (results.csv prints the shortest
/// representation that reads back to the same bits), with the states `p`, `e` only. Its
/// absorbed energy is first order in the step: +28 % against Δt/16 (the band law: within 2 %).
#[test]
fn rigid_lead_reproduces_the_printed_law_bit_for_bit() {
    let (names, rows) = deck_run_with(1, None, Some("rigid"));
    assert!(!names.iter().any(|n| n == "state.lrb.q"), "{names:?}");
    let last = |name: &str| *column(&names, &rows, name).last().unwrap();
    let before = [
        ("u.bearing.1.x", 0.005115824404253807),
        ("state.lrb.p", 0.03871814013127424),
        ("state.lrb.e", 38690.41913115537),
        ("force.lrb.1.x", -97957.78527056647),
        ("u.deck.1.x", 0.0045881434507427),
        ("lambda.1.x", -15324.855486660264),
        ("energy.bearing", 38690.419222063436),
    ];
    for (name, value) in before {
        assert_eq!(
            last(name).to_bits(),
            f64::to_bits(value),
            "{name}: {} against {value} before the band law",
            last(name)
        );
    }
    let (names_fine, rows_fine) = deck_run_with(16, None, Some("rigid"));
    let e = last("state.lrb.e");
    let e_fine = *column(&names_fine, &rows_fine, "state.lrb.e")
        .last()
        .unwrap();
    println!(
        "isolated_deck_lrb, lead = \"rigid\": absorbed energy {e:.6e} N·m at Δt, {e_fine:.6e} N·m at Δt/16 ({:+.2} %)",
        100.0 * (e - e_fine) / e_fine
    );
    assert!((e - e_fine) / e_fine > 0.2, "{e} vs {e_fine}");
}

/// The converged solve of the numerical LRB pairs of `examples/bridge_iso_lrb.toml` (10 s of
/// El Centro at Δt = 1/1024 s): with the band law no step stops at the iteration bound; with
/// the printed law (first 2 s) the sign of the lead force alternates between iterations and
/// steps do.
#[test]
fn converged_solve_of_the_lrb_bridge_never_stops_at_the_iteration_bound() {
    let solve = |lead: Option<&str>, duration: Option<f64>| {
        let model = example_with("bridge_iso_lrb.toml", |t| {
            if let Some(lead) = lead {
                set_lead(t, "lead", lead.into());
            }
            if let Some(d) = duration {
                t["analysis"]
                    .as_table_mut()
                    .unwrap()
                    .insert("duration".into(), d.into());
            }
        });
        let mut sim = hybridsim::Simulation::new(model).unwrap();
        for _ in 0..sim.n_steps() {
            sim.step().unwrap();
        }
        sim.integrator.nonlinear_solve().unwrap()
    };
    let band = solve(None, None);
    let rigid = solve(Some("rigid"), Some(2.0));
    for (law, r) in [("band", &band), ("rigid (2 s)", &rigid)] {
        println!(
            "bridge_iso_lrb, lead = {law}: {} of {} steps at the bound of {} iterations, {:.2} iterations per step",
            r.unconverged_steps,
            r.solves,
            r.max_iterations,
            r.iterations as f64 / r.solves as f64
        );
    }
    assert_eq!(band.solves, 10240);
    assert_eq!(band.unconverged_steps, 0, "{band:?}");
    assert!(rigid.unconverged_steps > 100, "{rigid:?}");
}

/// `lead_stiffness` replaces the lead's stiffness inside its band: after a reversal inside the
/// running peak the lead force changes by `lead_stiffness Δd`. A stiffness below the steepest
/// slope of the band's bounds, `(2 a_lead + 4) r_lead / p0` (1.428e9 N/m here), is refused.
#[test]
fn lead_stiffness_is_the_slope_inside_the_band() {
    let bound = (2.0 * A_LEAD + 4.0) * R_LEAD / P0;
    assert_eq!(bearing().steepest_bound_slope(), bound);
    for below in [2.0e7, 0.999 * bound] {
        let err = bearing()
            .with_lead(LeadLaw::Band, Some(below))
            .expect_err("below the bound");
        assert!(
            err.contains("(2 a_lead + 4) r_lead / p0") && err.contains(&format!("{bound:e}")),
            "{err}"
        );
    }
    let k = 2.0e9;
    let e = bearing().with_lead(LeadLaw::Band, Some(k)).unwrap();
    assert_eq!(e.state_names(), ["p", "q", "e"]);
    let mut dr = ElementDriver::new(Box::new(e.clone()), &[0.0; 3]).unwrap();
    // Out to p = 0.1 and back to d = 0, where the lead force is on the unloading branch
    // −r_lead g(1); then 10 µm outward again, inside the band.
    for d in [0.1, 0.0] {
        dr.set_trial(0.0, &[d], &[0.0]).unwrap();
        dr.commit();
    }
    let q0 = dr.states()[1];
    // 10 µm outward again, inside the band (k · 1 mm would be far past the bound).
    dr.set_trial(0.0, &[1e-5], &[0.0]).unwrap();
    dr.commit();
    let q1 = dr.states()[1];
    println!("lead_stiffness {k:e}: q {q0:.6e} -> {q1:.6e} N over +10 µm");
    assert!((q0 / R_LEAD + 1.0).abs() < 1e-3, "{q0}");
    assert!(((q1 - q0) / (1e-5 * k) - 1.0).abs() < 1e-9, "{q0} {q1}");
    // Both laws refuse what they cannot use.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(bearing().with_lead(LeadLaw::Band, Some(bad)).is_err());
    }
    assert!(bearing().with_lead(LeadLaw::Rigid, Some(k)).is_err());
}

/// `isolated_deck_lrb` with the LRB's `lead` / `lead_stiffness` set to `value`.
fn read_deck(key: &str, value: &str) -> Result<Model, ModelError> {
    let path = root().join("examples/isolated_deck_lrb.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replace("p0 = 1.0e-3\n", &format!("p0 = 1.0e-3\n{key} = {value}\n"));
    Model::from_toml(
        &text,
        "isolated_deck_lrb.toml",
        &Folder(root().join("examples")),
    )
}

#[test]
fn bad_lead_keys_are_refused_at_their_field() {
    let cases = [
        (
            "lead",
            "\"soft\"",
            "element[1].lead",
            "must be \"band\" or \"rigid\"",
        ),
        (
            "lead",
            "1",
            "element[1].lead",
            "must be \"band\" or \"rigid\"",
        ),
        (
            "lead_stiffness",
            "0.0",
            "element[1].lead_stiffness",
            "must be > 0",
        ),
        (
            "lead_stiffness",
            "-2.0e7",
            "element[1].lead_stiffness",
            "must be > 0",
        ),
        (
            "lead_stiffness",
            "nan",
            "element[1].lead_stiffness",
            "must be finite",
        ),
        (
            "lead_stiffness",
            "inf",
            "element[1].lead_stiffness",
            "must be finite",
        ),
        (
            "lead_stiffness",
            "\"stiff\"",
            "element[1].lead_stiffness",
            "must be a number",
        ),
        ("k_lead", "1.0e7", "element[1].k_lead", "unknown field"),
        (
            "lead_stiffness",
            "2.0e7",
            "element[1].lead_stiffness",
            "must be at least the steepest slope of the lead band's bounds, \
             (2 a_lead + 4) r_lead / p0 = 1.428e9 (found 2e7)",
        ),
    ];
    for (key, value, field, reason) in cases {
        let err = read_deck(key, value).expect_err(&format!("{key} = {value} accepted"));
        println!("{key} = {value}: {err}");
        assert_eq!(err.issues.len(), 1, "{err}");
        let issue = &err.issues[0];
        assert_eq!(issue.file, "isolated_deck_lrb.toml");
        assert!(issue.field.ends_with(field), "{issue}");
        assert!(issue.reason.contains(reason), "{issue}");
    }
    // An unknown key's message names the hand-read keys too.
    let err = read_deck("k_lead", "1.0e7").unwrap_err();
    assert!(
        err.issues[0]
            .reason
            .contains("p0 [L], lead, lead_stiffness)"),
        "{err}"
    );
    // The rigid law has no lead stiffness.
    let text = std::fs::read_to_string(root().join("examples/isolated_deck_lrb.toml")).unwrap();
    let text = text.replace(
        "p0 = 1.0e-3\n",
        "p0 = 1.0e-3\nlead = \"rigid\"\nlead_stiffness = 2.0e7\n",
    );
    let err = Model::from_toml(&text, "x.toml", &Folder(root().join("examples"))).unwrap_err();
    assert_eq!(err.issues.len(), 1, "{err}");
    assert!(err.issues[0].field.ends_with("element[1].lead_stiffness"));
    assert!(err.issues[0].reason.contains("rigid"), "{err}");
    // Good values are read, and `hybridsim check`'s summary names the law.
    for (key, value, summary) in [
        ("lead", "\"band\"", "lead = \"band\""),
        ("lead", "\"rigid\"", "lead = \"rigid\""),
        ("lead_stiffness", "2.0e9", "lead_stiffness = 2e9"),
    ] {
        let model = read_deck(key, value).unwrap_or_else(|e| panic!("{e}"));
        let sim = hybridsim::Simulation::new(model).unwrap();
        let text = sim.summary();
        let line = text
            .lines()
            .find(|l| l.starts_with("element `lrb` (lead_rubber): lead = "))
            .unwrap_or_else(|| panic!("no lead law in the summary:\n{text}"));
        assert!(line.contains(summary), "{line}");
    }
}
