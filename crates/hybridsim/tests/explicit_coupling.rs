//! The explicit RTHS coupling (`integrator = "explicit-rths"`): equal to a hand-written
//! reference loop on a linear frame to round-off, for force_delay 0 and 1; one command per
//! controller tick through the lab; clear errors for models that cannot use it.
mod common;
use common::counting::count;
use common::*;
use hybridsim::Simulation;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;
use nalgebra::{DMatrix, DVector};

const EXAMPLE: &str = "rths_explicit_frame.toml";

// The example's frame.
const M: [f64; 3] = [2.0e3, 2.0e3, 1.5e3];
const K1: f64 = 1.0e6; // specimen
const K2: f64 = 1.6e6;
const K3: f64 = 1.2e6;
const ALPHA: f64 = 0.3;
const BETA: f64 = 2.0e-4;
const LOAD: f64 = 2.0e3;
const FREQ: f64 = 2.0;
const U3_0: f64 = 4.0e-3;
const DT: f64 = 1.0 / 1024.0;

fn actuator(t: &mut toml::Table) -> &mut toml::Table {
    t["lab"]["actuator"].as_array_mut().unwrap()[0]
        .as_table_mut()
        .unwrap()
}

/// The example with an ideal actuator, given Rayleigh coefficients, an initial displacement
/// of floor 3, ρ∞ and force_delay.
fn linear_example(rho_inf: f64, force_delay: i64, duration: f64) -> hybridsim::Model {
    example_with(EXAMPLE, |t| {
        actuator(t).remove("dynamics");
        let d = t["damping"].as_table_mut().unwrap();
        d.clear();
        d.insert("alpha".into(), ALPHA.into());
        d.insert("beta".into(), BETA.into());
        let nodes = t["node"].as_array_mut().unwrap();
        nodes[2].as_table_mut().unwrap().insert(
            "initial_displacement".into(),
            toml::Value::Table(format!("x = {U3_0}").parse().unwrap()),
        );
        set(t, "analysis", "rho_inf", rho_inf);
        set(t, "analysis", "force_delay", force_delay);
        set(t, "analysis", "duration", duration);
    })
}

/// The hand-written loop: the numerical frame (M, C = αM + βK, K without the specimen) in the
/// first-order form `M̄ Ẏ + J Y = F − Sᵀ f̂`, stepped by the generalized-α equations of
/// Abbiati et al. 2019 (eqs 11–13), the specimen force `k1 u1` measured at every tick and
/// applied `d` ticks later. Returns u over the steps.
fn reference(rho_inf: f64, d: usize, steps: usize) -> Vec<[f64; 3]> {
    let n = 3;
    let mut k = DMatrix::<f64>::zeros(n, n);
    k[(0, 0)] = K2;
    k[(0, 1)] = -K2;
    k[(1, 0)] = -K2;
    k[(1, 1)] = K2 + K3;
    k[(1, 2)] = -K3;
    k[(2, 1)] = -K3;
    k[(2, 2)] = K3;
    let m = DMatrix::from_diagonal(&DVector::from_row_slice(&M));
    let c = &m * ALPHA + &k * BETA;
    let mut big_m = DMatrix::<f64>::identity(2 * n, 2 * n);
    big_m.view_mut((n, n), (n, n)).copy_from(&m);
    let mut j = DMatrix::<f64>::zeros(2 * n, 2 * n);
    j.view_mut((0, n), (n, n))
        .copy_from(&(-DMatrix::<f64>::identity(n, n)));
    j.view_mut((n, 0), (n, n)).copy_from(&k);
    j.view_mut((n, n), (n, n)).copy_from(&c);
    let am = (3.0 - rho_inf) / (2.0 * (1.0 + rho_inf));
    let af = 1.0 / (1.0 + rho_inf);
    let g = 0.5 + am - af;
    let cc = g * DT * af / am;
    let d_lu = (&big_m + &j * cc).lu();
    let load = |t: f64| {
        let mut f = DVector::<f64>::zeros(2 * n);
        f[n + 2] = LOAD * (2.0 * std::f64::consts::PI * FREQ * t).sin();
        f
    };
    let mut y = DVector::<f64>::zeros(2 * n);
    y[2] = U3_0;
    let specimen = |y: &DVector<f64>| K1 * y[0];
    // Forces of the last d + 1 ticks, oldest first; before tick 0 the force at rest.
    let mut ring: std::collections::VecDeque<f64> =
        std::iter::repeat_n(specimen(&y), d + 1).collect();
    let mut rhs = load(0.0) - &j * &y;
    rhs[n] -= specimen(&y);
    let mut ydot = big_m.clone().lu().solve(&rhs).unwrap();
    let mut v = ydot.clone();
    let mut out = Vec::new();
    for step in 0..steps {
        let t1 = (step + 1) as f64 * DT;
        let f_hat = ring.pop_front().unwrap();
        let y_t = &y + &ydot * (g * DT * (1.0 - af) / am) + &v * (DT * (am - g) / am);
        let v_t = &ydot * ((1.0 - af) / am) - &v * ((1.0 - am) / am);
        let mut rhs = load(t1) - &j * &y_t;
        rhs[n] -= f_hat;
        ydot = d_lu.solve(&rhs).unwrap();
        y = &y_t + &ydot * cc;
        v = &v_t + &ydot * (af / am);
        // The command of tick n + 1 and its measured force.
        ring.push_back(specimen(&y));
        out.push([y[0], y[1], y[2]]);
    }
    out
}

fn run_explicit(model: hybridsim::Model) -> (Vec<[f64; 3]>, Simulation) {
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sim.integrator.name(), "explicit-rths");
    let mut out = Vec::new();
    for _ in 0..sim.n_steps() {
        sim.step().unwrap_or_else(|e| panic!("{e}"));
        let s = sim.integrator.state(0);
        out.push([s[0], s[1], s[2]]);
    }
    (out, sim)
}

fn max_relative_difference(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b
        .iter()
        .flat_map(|r| r.iter())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0f64, f64::max);
    diff / scale
}

#[test]
fn explicit_loop_equals_the_hand_written_reference_loop_to_round_off() {
    for (rho_inf, d) in [(1.0, 0), (1.0, 1), (0.8, 0), (0.8, 1), (1.0, 3)] {
        let model = linear_example(rho_inf, d, 2.0);
        let (got, sim) = run_explicit(model);
        let want = reference(rho_inf, d as usize, got.len());
        let e = max_relative_difference(&got, &want);
        let peak = want.iter().fold(0.0f64, |m, r| m.max(r[0].abs()));
        println!(
            "ρ∞ = {rho_inf}, force_delay = {d}: max relative difference {e:e} (peak u1 {peak:e})"
        );
        assert!(peak > 1e-4, "the test must move the specimen");
        assert!(
            e <= 1e-12,
            "ρ∞ = {rho_inf}, d = {d}: relative difference {e:e}"
        );
        // Exactly one command per controller tick reached the lab.
        let port = sim.integrator.partitions()[1].physical.as_ref().unwrap();
        assert_eq!(port.commands(), sim.n_steps());
    }
}

#[test]
fn the_force_delay_changes_the_response() {
    // d = 0 and d = 1 must differ (the reference above could otherwise pass by accident).
    let (a, _) = run_explicit(linear_example(1.0, 0, 1.0));
    let (b, _) = run_explicit(linear_example(1.0, 1, 1.0));
    let e = max_relative_difference(&a, &b);
    assert!(
        e > 1e-4,
        "force_delay 0 and 1 gave the same response ({e:e})"
    );
}

#[test]
fn the_example_runs_on_the_virtual_lab_with_one_command_per_tick() {
    let model = example_with(EXAMPLE, |_| {});
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let n = sim.n_steps();
    let mut peak = 0.0f64;
    let mut records = 0u64;
    for _ in 0..n {
        sim.step().unwrap_or_else(|e| panic!("{e}"));
        peak = peak.max(sim.integrator.state(0)[0].abs());
        // The runner drains the lab after every step.
        sim.integrator
            .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |_| records += 1));
    }
    assert!(
        peak > 1e-4 && peak < 0.04,
        "peak first-floor displacement {peak}"
    );
    let mut armed = true;
    sim.integrator.for_each_lab(&mut |_, lab| {
        let s = lab.safety_summary();
        armed &= s.armed && s.lab_records_dropped == 0;
    });
    assert!(armed, "the safety layer tripped on the stable example");
    // The bumpless start may add rows; every tick of the test has one.
    assert!(records >= n, "{records} lab records for {n} ticks");
    let port = sim.integrator.partitions()[1].physical.as_ref().unwrap();
    assert_eq!(port.commands(), n);
}

fn refused(edit: impl FnOnce(&mut toml::Table), field: &str) -> String {
    let path = root().join("examples").join(EXAMPLE);
    let mut table: toml::Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
    edit(&mut table);
    let text = toml::to_string(&table).unwrap();
    let err = match hybridsim::Model::from_toml(&text, EXAMPLE, &Folder(root().join("examples"))) {
        Err(e) => e.to_string(),
        Ok(m) => match Simulation::new(m) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted a model that should be refused at `{field}`"),
        },
    };
    assert!(err.contains(field), "`{err}` does not name `{field}`");
    assert!(err.contains(EXAMPLE), "`{err}` does not name the file");
    err
}

#[test]
fn models_that_cannot_use_the_scheme_are_refused_naming_the_field() {
    let e = refused(
        |t| {
            t.remove("lab");
            t.remove("safety");
            t.remove("runner");
        },
        "analysis.integrator",
    );
    assert!(e.contains("[lab]"), "{e}");
    let e = refused(
        |t| {
            let lab = t["lab"].as_table_mut().unwrap();
            lab.insert("regime".into(), "pseudodynamic".into());
            lab.insert("time_scale".into(), 2.0.into());
        },
        "lab.time_scale",
    );
    assert!(e.contains("λ = 1"), "{e}");
    refused(
        |t| set(t, "analysis", "force_delay", -1),
        "analysis.force_delay",
    );
    refused(|t| set(t, "analysis", "subcycles", 2), "analysis.subcycles");
    refused(
        |t| set(t, "analysis", "integrator", "pg-alpha"),
        "analysis.force_delay",
    );
    let e = refused(
        |t| {
            t["substructure"]["column"]
                .as_table_mut()
                .unwrap()
                .insert("physical".into(), false.into());
            t["substructure"]["column"]
                .as_table_mut()
                .unwrap()
                .remove("estimate");
            t.remove("lab");
            t.remove("safety");
            t.remove("runner");
        },
        "analysis.integrator",
    );
    assert!(e.contains("physical"), "{e}");
}

#[test]
fn a_tick_of_the_explicit_loop_does_not_allocate() {
    // The example on the virtual lab (5 ms delayed actuator, safety armed), force_delay 1 and
    // 3, with recording and the runner's drain of the lab records.
    for d in [1i64, 3] {
        let model = example_with(EXAMPLE, |t| set(t, "analysis", "force_delay", d));
        let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
        let mut row = vec![0.0; sim.columns().len()];
        sim.step().unwrap();
        sim.record(&mut row);
        let n = count(|| {
            for _ in 0..500 {
                sim.step().unwrap();
                sim.record(&mut row);
                sim.integrator
                    .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |_| {}));
            }
        });
        assert_eq!(n, 0, "force_delay {d}: {n} allocations in 500 ticks");
    }
}
