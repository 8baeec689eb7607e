//! The physical substructure behind the virtual lab: ideal lab = numerical stand-in, λ scaling
//! of a viscous specimen, delay and its compensation, divergence of the undamped delayed test,
//! stiffness-estimate mismatch, noise propagation, scaled specimens and two-node devices.
mod common;
use common::*;
use hybridsim::Simulation;

const EXAMPLE: &str = "split_mass_delayed_actuator.toml";

fn actuator(t: &mut toml::Table) -> &mut toml::Table {
    t["lab"]["actuator"].as_array_mut().unwrap()[0]
        .as_table_mut()
        .unwrap()
}

fn ideal(t: &mut toml::Table) {
    let a = actuator(t);
    a.remove("dynamics");
    a.remove("compensation");
    a.remove("noise");
}

fn delayed(t: &mut toml::Table, delay: f64, compensate: bool) {
    let a = actuator(t);
    a.insert(
        "dynamics".into(),
        toml::Value::Table(
            format!("kind = 'delay'\ndelay = {delay}")
                .parse::<toml::Table>()
                .unwrap(),
        ),
    );
    if compensate {
        a.insert(
            "compensation".into(),
            toml::Value::Table(
                format!("delay = {{ order = 2, estimate = {delay} }}")
                    .parse::<toml::Table>()
                    .unwrap(),
            ),
        );
    } else {
        a.remove("compensation");
    }
}

fn without_lab(t: &mut toml::Table) {
    t.remove("lab");
    t.remove("safety");
    t.remove("runner");
}

/// Displacement history of node 2 (numerical copy) over the run.
fn history(model: hybridsim::Model) -> (Vec<f64>, Result<(), String>) {
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for _ in 0..sim.n_steps() {
        if let Err(e) = sim.step() {
            return (out, Err(e.to_string()));
        }
        out.push(displacement_copies(sim.integrator.as_ref(), 2, "x")[0]);
    }
    (out, Ok(()))
}

fn rms_diff(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    (a[..n]
        .iter()
        .zip(&b[..n])
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        / n as f64)
        .sqrt()
}

#[test]
fn ideal_lab_with_a_linear_spring_equals_the_numerical_run_bit_for_bit() {
    let lab = example_with(EXAMPLE, |t| {
        ideal(t);
        set(t, "analysis", "duration", 4.0);
    });
    let num = example_with(EXAMPLE, |t| {
        without_lab(t);
        set(t, "analysis", "duration", 4.0);
    });
    let (a, ra) = history(lab);
    let (b, rb) = history(num);
    ra.unwrap();
    rb.unwrap();
    assert_eq!(a.len(), 2000);
    let max = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f64, f64::max);
    println!(
        "ideal lab vs numerical stand-in: max |Δu2| = {max:e} over {} steps",
        a.len()
    );
    assert_eq!(a, b, "the ideal lab must reproduce the stand-in exactly");
}

#[test]
fn viscous_specimen_force_scales_with_one_over_lambda() {
    // A dashpot specimen driven at the same prototype motion: its measured force is c·v/λ.
    let text = |lambda: f64| {
        format!(
            r#"
[[node]]
id = 1
dofs = ["x"]
initial_velocity = {{ x = 0.1 }}
[substructure.num]
[substructure.lab]
physical = true
estimate = {{ dofs = [[1, "x"]], stiffness = [[1.0e4]], damping = [[100.0]] }}
[[element]]
type = "mass"
node = 1
mass = 10.0
split = {{ num = 0.5, lab = 0.5 }}
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 1.0e4
substructure = "num"
[[element]]
type = "dashpot"
nodes = [1]
dof = "x"
c = 100.0
substructure = "lab"
[analysis]
integrator = "pg-alpha"
time_step = 1.0e-3
subcycles = 1
duration = 0.001
[lab]
regime = "pseudodynamic"
time_scale = {lambda}
[[lab.actuator]]
name = "a"
dofs = [[1, "x"]]
capacity = {{ stroke = 1.5, velocity = 20.0, force = 2.0e6 }}
[safety.actuator.a]
displacement = 1.0
velocity = 10.0
force = 1.0e6
increment = 1.0
[safety.divergence]
displacement = 1.0
force = 1.0e6
"#
        )
    };
    let mut forces = Vec::new();
    for lambda in [1.0, 10.0, 100.0] {
        let mut m = model(&text(lambda));
        let parts =
            hybridsim::assembly::build_partitions(&m, hybridsim::assembly::Grouping::Partitioned)
                .unwrap();
        let _ = &mut m;
        let mut p = parts.into_iter().find(|p| p.state.physical).unwrap();
        let port = p.physical.as_mut().unwrap();
        port.measure_at_rest(0.0, &[0.0, 0.0]).unwrap();
        let f = port.command_open_loop(1e-3, &[1e-4, 0.1]).unwrap();
        forces.push(f[0]);
    }
    println!("dashpot force at v = 0.1 for λ = 1, 10, 100: {forces:?}");
    assert!((forces[0] - 10.0).abs() < 1e-12);
    assert!((forces[1] - 1.0).abs() < 1e-12);
    assert!((forces[2] - 0.1).abs() < 1e-12);
}

#[test]
fn delay_raises_the_error_and_compensation_lowers_it() {
    let dur = 10.0;
    let reference = history(example_with(EXAMPLE, |t| {
        ideal(t);
        set(t, "analysis", "duration", dur);
    }));
    let mut report = Vec::new();
    for delay in [0.010, 0.020] {
        let raw = history(example_with(EXAMPLE, |t| {
            delayed(t, delay, false);
            set(t, "analysis", "duration", dur);
        }));
        let comp = history(example_with(EXAMPLE, |t| {
            delayed(t, delay, true);
            set(t, "analysis", "duration", dur);
        }));
        raw.1.clone().unwrap();
        comp.1.clone().unwrap();
        let e_raw = rms_diff(&raw.0, &reference.0);
        let e_comp = rms_diff(&comp.0, &reference.0);
        let gain = e_raw / e_comp;
        println!(
            "delay {delay} s: RMS error of u2 vs the ideal lab {e_raw:.3e} m uncompensated, \
             {e_comp:.3e} m compensated (order 2): gain {gain:.1}"
        );
        report.push(gain);
        assert!(e_raw > 1e-5, "a {delay} s delay must change the response");
        assert!(
            gain > 5.0,
            "compensation must lower the error clearly, gain {gain}"
        );
    }
}

#[test]
fn undamped_delayed_test_diverges_and_is_caught_before_any_limit() {
    let m = example_with(EXAMPLE, |t| {
        t.remove("damping");
        delayed(t, 0.015, false);
        set(t, "analysis", "duration", 120.0);
    });
    let stroke = m.lab.as_ref().unwrap().safety.limits["act1"].displacement;
    let mut sim = Simulation::new(m).unwrap();
    let mut peak = 0.0f64;
    let mut err = None;
    for _ in 0..sim.n_steps() {
        if let Err(e) = sim.step() {
            err = Some(e.to_string());
            break;
        }
        let u = displacement_copies(sim.integrator.as_ref(), 1, "x");
        peak = peak.max(u[0].abs());
    }
    let err = err.expect("the undamped delayed test must be stopped");
    let summary = sim.integrator.partitions()[1]
        .lab()
        .unwrap()
        .safety_summary();
    println!(
        "undamped, 15 ms delay: stopped at t = {:.2} s: {err}; peak |u1| {peak:.4e} m, max command sent {:.4e} m, stroke {stroke} m",
        sim.integrator.time(),
        summary.max_sent[0]
    );
    assert!(err.contains("divergence"), "{err}");
    assert!(summary.max_sent[0] < stroke);
    assert!(peak < stroke);
}

#[test]
fn stiffness_estimate_mismatch_runs_and_its_effect_is_reported() {
    let reference = history(example_with(EXAMPLE, |t| {
        ideal(t);
        set(t, "analysis", "duration", 6.0);
    }));
    for factor in [0.5, 1.5] {
        let h = history(example_with(EXAMPLE, |t| {
            ideal(t);
            set(t, "analysis", "duration", 6.0);
            let est = t["substructure"]["specimen"]["estimate"]
                .as_table_mut()
                .unwrap();
            est.insert(
                "stiffness".into(),
                toml::Value::Array(vec![toml::Value::Array(vec![(4.0e5 * factor).into()])]),
            );
        }));
        h.1.clone().unwrap();
        let e = rms_diff(&h.0, &reference.0);
        let peak = reference.0.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        println!(
            "estimated stiffness ×{factor}: RMS change of u2 {e:.3e} m ({:.3e} of the peak)",
            e / peak
        );
        assert!(e.is_finite() && e / peak < 0.05);
    }
}

#[test]
fn noise_propagation_over_100_realizations() {
    // Hovmand et al. (2022), §3.2: 100 realizations of the hybrid response with a noisy load cell.
    let dur = 4.0;
    let reference = history(example_with(EXAMPLE, |t| {
        ideal(t);
        set(t, "analysis", "duration", dur);
    }))
    .0;
    let mut spread = vec![0.0f64; reference.len()];
    let mut max_dev = 0.0f64;
    let mut rms_all = 0.0;
    for r in 0..100u64 {
        let h = history(example_with(EXAMPLE, |t| {
            ideal(t);
            set(t, "analysis", "duration", dur);
            set(t, "lab", "seed", (1000 + r) as i64);
            actuator(t).insert(
                "noise".into(),
                toml::Value::Table("force_rms = 40.0".parse::<toml::Table>().unwrap()),
            );
        }));
        h.1.clone().unwrap();
        for (k, (x, y)) in h.0.iter().zip(&reference).enumerate() {
            spread[k] += (x - y) * (x - y);
            max_dev = max_dev.max((x - y).abs());
        }
        rms_all += rms_diff(&h.0, &reference);
    }
    let std_end = (spread.last().unwrap() / 100.0).sqrt();
    let std_max = spread
        .iter()
        .map(|s| (s / 100.0).sqrt())
        .fold(0.0f64, f64::max);
    let peak = reference.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    println!(
        "100 realizations, force noise 40 N RMS (1 % of the peak specimen force): std of u2 at the end {std_end:.3e} m, \
         largest std {std_max:.3e} m ({:.3e} of the peak {peak:.3e} m), largest deviation {max_dev:.3e} m, mean RMS deviation {:.3e} m",
        std_max / peak,
        rms_all / 100.0
    );
    assert!(std_max > 0.0);
    assert!(
        std_max / peak < 0.01,
        "noise should have little effect (Hovmand et al. 2022)"
    );
    // Same seed, same response.
    let a = history(example_with(EXAMPLE, |t| {
        set(t, "analysis", "duration", 1.0);
    }));
    let b = history(example_with(EXAMPLE, |t| {
        set(t, "analysis", "duration", 1.0);
    }));
    assert_eq!(a.0, b.0);
}

#[test]
fn scaled_specimen_and_two_node_device() {
    // A 1:2 specimen (displacement ×2, force ×4) and one device of a pair (force ×2) behind a
    // two-node actuator driven by the relative displacement: equal and opposite forces.
    let text = |scale: f64, mult: f64| {
        format!(
            r#"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
[substructure.num]
[substructure.lab]
physical = true
estimate = {{ dofs = [[1, "x"], [2, "x"]], stiffness = [[1.0e4, -1.0e4], [-1.0e4, 1.0e4]] }}
[[element]]
type = "mass"
node = 1
mass = 1.0
split = {{ num = 0.5, lab = 0.5 }}
[[element]]
type = "mass"
node = 2
mass = 1.0
split = {{ num = 0.5, lab = 0.5 }}
[[element]]
type = "spring"
nodes = [2]
dof = "x"
k = 1.0e4
substructure = "num"
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 1.0e4
substructure = "num"
[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 1.0e4
substructure = "lab"
[analysis]
integrator = "pg-alpha"
time_step = 1.0e-3
duration = 0.001
[lab]
time_scale = 10.0
geometric_scale = {scale}
device_multiplier = {mult}
[[lab.actuator]]
name = "device"
dofs = [[1, "x"], [2, "x"]]
coefficients = [-1.0, 1.0]
capacity = {{ stroke = 1.5, velocity = 20.0, force = 2.0e6 }}
[safety.actuator.device]
displacement = 1.0
velocity = 10.0
force = 1.0e6
increment = 1.0
[safety.divergence]
displacement = 1.0
force = 1.0e6
"#
        )
    };
    for (scale, mult) in [(1.0, 1.0), (2.0, 1.0), (1.0, 2.0)] {
        let m = model(&text(scale, mult));
        let parts =
            hybridsim::assembly::build_partitions(&m, hybridsim::assembly::Grouping::Partitioned)
                .unwrap();
        let mut p = parts.into_iter().find(|p| p.state.physical).unwrap();
        let port = p.physical.as_mut().unwrap();
        port.measure_at_rest(0.0, &[0.0, 0.0, 0.0, 0.0]).unwrap();
        let f: Vec<f64> = port
            .command_open_loop(1e-3, &[0.001, 0.003, 0.0, 0.0])
            .unwrap()
            .to_vec();
        let summary = port.lab().unwrap().safety_summary();
        println!(
            "scale {scale}, multiplier {mult}: DOF forces {f:?}, command sent {:e} (specimen units)",
            summary.max_sent[0]
        );
        // The model describes the prototype: the tested device carries 1/(scale²·multiplier)
        // of the force at 1/scale of the displacement; back in prototype units the force is
        // the spring's k(u1 − u2) at node 1, equal and opposite at node 2.
        let expected = 1.0e4 * (0.001 - 0.003);
        assert!((f[0] - expected).abs() < 1e-9, "{f:?}");
        assert_eq!(f[0], -f[1]);
        assert!((summary.max_sent[0] - 0.002 / scale).abs() < 1e-15);
        let mut lab_force = Vec::new();
        port.lab_mut()
            .unwrap()
            .drain_lab(&mut |r: &[f64]| lab_force.push(r[5]));
        let measured = *lab_force.last().unwrap();
        // Actuator force for d = u2 − u1 > 0 is k d / (scale² · multiplier).
        assert!(
            (measured - 1.0e4 * 0.002 / (scale * scale * mult)).abs() < 1e-9,
            "{measured}"
        );
    }
}

#[test]
fn energy_growth_bound_catches_the_undamped_delayed_test_before_any_limit() {
    // The peak-growth criterion switched off (it would need a million growing windows): only
    // the energy criterion (default: windowed, tests/divergence.rs) can stop the test before
    // |u| reaches its bound.
    let m = example_with(EXAMPLE, |t| {
        t.remove("damping");
        delayed(t, 0.015, false);
        set(t, "analysis", "duration", 120.0);
        let d = t["safety"]["divergence"].as_table_mut().unwrap();
        d.insert("windows".into(), toml::Value::Integer(1_000_000));
    });
    let lab = m.lab.as_ref().unwrap();
    let stroke = lab.safety.limits["act1"].displacement;
    let u_bound = lab.safety.divergence.displacement;
    let mut sim = Simulation::new(m).unwrap();
    let mut peak = 0.0f64;
    let mut err = None;
    for _ in 0..sim.n_steps() {
        if let Err(e) = sim.step() {
            err = Some(e.to_string());
            break;
        }
        let u = displacement_copies(sim.integrator.as_ref(), 1, "x");
        peak = peak.max(u[0].abs());
    }
    let err = err.expect("the undamped delayed test must be stopped");
    let s = sim.integrator.partitions()[1]
        .lab()
        .unwrap()
        .safety_summary();
    // Default bound of the windowed criterion ½ k̂ u_b² with k̂ = 4e5 N/m, u_b = 0.04 m.
    let expected_bound = 0.5 * 4.0e5 * u_bound * u_bound;
    println!(
        "undamped, 15 ms delay, energy criterion only: stopped at t = {:.2} s: {err}; windowed generated \
         energy {:.3} J (bound {:.3} J), peak |u1| {peak:.4e} m (|u| bound {u_bound} m, stroke \
         {stroke} m), max command sent {:.4e} m",
        sim.integrator.time(),
        s.energy_peak,
        s.energy_bound,
        s.max_sent[0]
    );
    assert!(err.contains("divergence_energy"), "{err}");
    assert!((s.energy_bound - expected_bound).abs() < 1e-9 * expected_bound);
    assert!(s.energy_peak > s.energy_bound);
    assert!(peak < u_bound, "caught before the |u| bound");
    assert!(s.max_sent[0] < stroke);
}

#[test]
fn passive_specimens_never_reach_the_energy_bound() {
    // Damped split mass with the compensated delay, and the ideal lab: the generated energy
    // stays far below the bound (a passive specimen absorbs energy).
    for (name, edit) in [
        ("compensated 15 ms delay", None),
        ("ideal lab", Some(ideal as fn(&mut toml::Table))),
    ] {
        let m = example_with(EXAMPLE, |t| {
            if let Some(f) = edit {
                f(t)
            }
        });
        let mut sim = Simulation::new(m).unwrap();
        for _ in 0..sim.n_steps() {
            sim.step().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let s = sim.integrator.partitions()[1]
            .lab()
            .unwrap()
            .safety_summary();
        println!(
            "{name}: generated energy {:.4e} J, bound {:.3} J",
            s.energy_generated, s.energy_bound
        );
        assert!(s.energy_generated < 0.05 * s.energy_bound, "{name}");
    }
}
