//! Experimental setups (`hybridsim::physical::setup`): the three-actuator planar setup against
//! closed-form actuator lengths under large rotations, round trips DOF → actuators → DOF and of
//! the forces through the Jacobian (virtual work), the small-displacement limit of the nonlinear
//! geometry, singular and unreachable configurations; pier and bearing tested on one node with
//! explicit actuator → substructure assignment, and a nonlinear three-actuator setup on the
//! virtual lab, each against the all-numerical model.
mod common;
use common::*;
use hybridsim::physical::setup::{
    inverted_v_brace_2d, one_actuator, three_actuators_2d, two_actuators_2d, Geometry, Setup,
};
use hybridsim::Simulation;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

const L: [f64; 3] = [1.5, 1.2, 0.9];
const B: f64 = 0.8;

/// Actuator lengths of the three-actuator setup written out by hand: the horizontal actuator
/// from the wall at (−L0, 0) to the beam centre (u, v); the vertical ones from the floor at
/// (∓B/2, −L1,2) to the beam points (u, v) ± (B/2)(cos θ, sin θ).
fn three_by_hand(u: f64, v: f64, th: f64) -> [f64; 3] {
    let b = B / 2.0;
    let (s, c) = th.sin_cos();
    let d0 = ((L[0] + u).powi(2) + v.powi(2)).sqrt() - L[0];
    let (x1, y1) = (u - b * c, v - b * s);
    let d1 = ((x1 + b).powi(2) + (y1 + L[1]).powi(2)).sqrt() - L[1];
    let (x2, y2) = (u + b * c, v + b * s);
    let d2 = ((x2 - b).powi(2) + (y2 + L[2]).powi(2)).sqrt() - L[2];
    [d0, d1, d2]
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn three_actuators_large_rotation_lengths_match_the_closed_form() {
    let setup = three_actuators_2d(L, B, Geometry::Nonlinear).unwrap();
    for q in [
        [0.05, -0.02, 0.1],
        [-0.2, 0.15, -0.35],
        [0.3, 0.3, 0.5],
        [0.0, 0.0, 0.0],
    ] {
        let mut d = [0.0; 3];
        setup.to_actuators(&q, &mut d);
        let want = three_by_hand(q[0], q[1], q[2]);
        assert!(
            max_abs_diff(&d, &want) < 1e-15,
            "q = {q:?}: {d:?} vs closed form {want:?}"
        );
    }
}

#[test]
fn three_actuators_commands_and_forces_round_trip_to_round_off() {
    let setup = three_actuators_2d(L, B, Geometry::Nonlinear).unwrap();
    for q in [[0.05, -0.02, 0.1], [-0.2, 0.15, -0.35], [0.01, 0.0, 0.0]] {
        // DOF → actuators → DOF, Newton from the reference configuration.
        let mut d = [0.0; 3];
        setup.to_actuators(&q, &mut d);
        let mut back = [0.0; 3];
        let iterations = setup.actuators_to_dofs(&d, &mut back).unwrap();
        assert!(iterations <= 10, "{iterations} Newton iterations");
        assert!(max_abs_diff(&back, &q) < 1e-14, "{back:?} vs {q:?}");
        // Forces: f = Jᵀ F, and back F = J⁻ᵀ f.
        let force = [1.3e4, -2.1e4, 7.0e3];
        let mut f = [0.0; 3];
        setup.forces_to_dofs(&q, &force, 1.0, &mut f);
        let mut force_back = [0.0; 3];
        setup
            .dof_forces_to_actuators(&q, &f, &mut force_back)
            .unwrap();
        assert!(
            max_abs_diff(&force_back, &force) < 1e-10,
            "{force_back:?} vs {force:?}"
        );
        // Virtual work: F · δd = f · δq for a virtual δq, δd by central differences of the
        // closed-form lengths (independent of the Jacobian's code).
        for dq in [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.3, -0.5, 0.7],
        ] {
            let h = 1e-6;
            let plus = three_by_hand(q[0] + h * dq[0], q[1] + h * dq[1], q[2] + h * dq[2]);
            let minus = three_by_hand(q[0] - h * dq[0], q[1] - h * dq[1], q[2] - h * dq[2]);
            let work_act: f64 = (0..3)
                .map(|k| force[k] * (plus[k] - minus[k]) / (2.0 * h))
                .sum();
            let work_dof: f64 = (0..3).map(|i| f[i] * dq[i]).sum();
            assert!(
                (work_act - work_dof).abs() < 1e-6 * work_dof.abs().max(1.0),
                "virtual work {work_act} vs {work_dof} along {dq:?}"
            );
        }
        // Velocities: ḋ = J q̇ and back.
        let qv = [0.1, -0.3, 0.2];
        let mut dv = [0.0; 3];
        setup.velocities_to_actuators(&q, &qv, &mut dv);
        let mut qv_back = [0.0; 3];
        setup.velocities_to_dofs(&q, &dv, &mut qv_back).unwrap();
        assert!(max_abs_diff(&qv_back, &qv) < 1e-14, "{qv_back:?} vs {qv:?}");
    }
}

#[test]
fn nonlinear_geometry_tends_to_the_linear_one_for_small_displacements() {
    let nl = three_actuators_2d(L, B, Geometry::Nonlinear).unwrap();
    let lin = three_actuators_2d(L, B, Geometry::Linear).unwrap();
    // The linear setup by hand: d0 = u, d1 = v − (B/2) θ, d2 = v + (B/2) θ.
    let dir = [0.4, -0.7, 0.9];
    let mut errors = Vec::new();
    for k in 0..6 {
        let eps = 1e-2 / f64::powi(2.0, k);
        let q = [eps * dir[0], eps * dir[1], eps * dir[2]];
        let (mut a, mut b) = ([0.0; 3], [0.0; 3]);
        nl.to_actuators(&q, &mut a);
        lin.to_actuators(&q, &mut b);
        let by_hand = [q[0], q[1] - B / 2.0 * q[2], q[1] + B / 2.0 * q[2]];
        assert!(max_abs_diff(&b, &by_hand) < 1e-18, "{b:?} vs {by_hand:?}");
        errors.push(max_abs_diff(&a, &b));
    }
    // The difference is second order: halving the displacement quarters it.
    for s in slopes(&errors) {
        assert!((s - 2.0).abs() < 0.05, "order {s} in {errors:?}");
    }
    // And the Jacobians agree at the reference configuration.
    let (mut ja, mut jb) = ([0.0; 9], [0.0; 9]);
    nl.jacobian(&[0.0; 3], &mut ja);
    lin.jacobian(&[0.0; 3], &mut jb);
    assert!(max_abs_diff(&ja, &jb) < 1e-16);
}

#[test]
fn the_other_kinds_match_their_closed_forms() {
    // One actuator at 30° to the DOF.
    let (l, a) = (1.0f64, 30f64.to_radians());
    let one = one_actuator(l, a, Geometry::Nonlinear).unwrap();
    let u = 0.07;
    let mut d = [0.0];
    one.to_actuators(&[u], &mut d);
    let want = ((l * a.cos() + u).powi(2) + (l * a.sin()).powi(2)).sqrt() - l;
    assert!((d[0] - want).abs() < 1e-15, "{} vs {want}", d[0]);
    let lin = one_actuator(l, a, Geometry::Linear).unwrap();
    lin.to_actuators(&[u], &mut d);
    assert!((d[0] - u * a.cos()).abs() < 1e-16);
    // Two actuators.
    let two = two_actuators_2d([1.1, 0.7], Geometry::Nonlinear).unwrap();
    let q = [0.05, -0.08];
    let mut d2 = [0.0; 2];
    two.to_actuators(&q, &mut d2);
    let want = [
        ((1.1 + q[0]).powi(2) + q[1].powi(2)).sqrt() - 1.1,
        (q[0].powi(2) + (0.7 + q[1]).powi(2)).sqrt() - 0.7,
    ];
    assert!(max_abs_diff(&d2, &want) < 1e-15, "{d2:?} vs {want:?}");
    // Inverted-V brace: the beam pins at (x_i, h) rotate about the brace tip.
    let h = 0.5;
    let brace = inverted_v_brace_2d(L, B, h, Geometry::Nonlinear).unwrap();
    let q = [0.03, -0.01, 0.2];
    let mut d3 = [0.0; 3];
    brace.to_actuators(&q, &mut d3);
    let (s, c) = q[2].sin_cos();
    let pin = |x: f64| (q[0] + c * x - s * h, q[1] + s * x + c * h);
    let (x0, y0) = pin(0.0);
    let (x1, y1) = pin(-B / 2.0);
    let (x2, y2) = pin(B / 2.0);
    let want = [
        ((x0 + L[0]).powi(2) + (y0 - h).powi(2)).sqrt() - L[0],
        ((x1 + B / 2.0).powi(2) + (y1 - h + L[1]).powi(2)).sqrt() - L[1],
        ((x2 - B / 2.0).powi(2) + (y2 - h + L[2]).powi(2)).sqrt() - L[2],
    ];
    assert!(max_abs_diff(&d3, &want) < 1e-15, "{d3:?} vs {want:?}");
    let lin = inverted_v_brace_2d(L, B, h, Geometry::Linear).unwrap();
    lin.to_actuators(&q, &mut d3);
    let want = [
        q[0] - h * q[2],
        q[1] - B / 2.0 * q[2],
        q[1] + B / 2.0 * q[2],
    ];
    assert!(max_abs_diff(&d3, &want) < 1e-16, "{d3:?} vs {want:?}");
}

#[test]
fn singular_and_unreachable_configurations_are_errors() {
    // An actuator at right angles to its DOF cannot move it.
    let e = one_actuator(1.0, 90f64.to_radians(), Geometry::Nonlinear).unwrap_err();
    assert!(e.contains("singular"), "{e}");
    assert!(three_actuators_2d([1.0, -1.0, 1.0], B, Geometry::Linear).is_err());
    assert!(three_actuators_2d(L, 0.0, Geometry::Linear).is_err());
    // At 60° the actuator can shorten by at most 1 − sin 60° ≈ 0.134: 0.5 is out of reach, and
    // the inversion says so instead of looping or panicking.
    let one = one_actuator(1.0, 60f64.to_radians(), Geometry::Nonlinear).unwrap();
    let mut u = [0.0];
    let e = one.actuators_to_dofs(&[-0.5], &mut u).unwrap_err();
    assert!(e.contains("one_actuator"), "{e}");
}

/// Displacement histories of (node, dof) over a run (the first partition's copy).
fn histories(model: hybridsim::Model, dofs: &[(i64, &str)]) -> Vec<Vec<f64>> {
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let mut out = vec![Vec::new(); dofs.len()];
    for _ in 0..sim.n_steps() {
        sim.step().unwrap_or_else(|e| panic!("{e}"));
        for (k, (node, dof)) in dofs.iter().enumerate() {
            out[k].push(displacement_copies(sim.integrator.as_ref(), *node, dof)[0]);
        }
    }
    out
}

fn without_lab(t: &mut toml::Table) {
    t.remove("lab");
    t.remove("safety");
    t.remove("runner");
}

/// Ideal, noise-free actuators.
fn ideal(t: &mut toml::Table) {
    for a in t["lab"]["actuator"].as_array_mut().unwrap() {
        let a = a.as_table_mut().unwrap();
        a.remove("dynamics");
        a.remove("noise");
        a.remove("compensation");
    }
}

#[test]
fn pier_and_bearing_on_one_node_run_on_the_virtual_lab() {
    const EXAMPLE: &str = "pier_bearing_one_node.toml";
    let dofs = [(1, "x"), (2, "x")];
    let reference = histories(example_with(EXAMPLE, without_lab), &dofs);
    // Ideal actuators: the lab reproduces the numerical model to round-off.
    let lab = histories(example_with(EXAMPLE, ideal), &dofs);
    let peak = reference[1].iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(peak > 5e-3, "the deck moves: {peak}");
    for k in 0..2 {
        let e = max_abs_diff(&lab[k], &reference[k]);
        assert!(e < 1e-12 * peak.max(1.0), "dof {k}: ideal lab off by {e}");
    }
    // The example as written (first-order lag, noise): it completes, close to the reference.
    let real = histories(example_with(EXAMPLE, |_| {}), &dofs);
    for k in 0..2 {
        let e = max_abs_diff(&real[k], &reference[k]);
        assert!(e < 0.1 * peak, "dof {k}: lab with lag and noise off by {e}");
    }
}

#[test]
fn an_actuator_on_a_shared_node_needs_its_substructure() {
    let path = root().join("examples/pier_bearing_one_node.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replacen("substructure = \"pier\"\ndofs", "dofs", 1);
    let e = hybridsim::Model::from_toml(&text, "m.toml", &hybridsim::model::NoFiles).unwrap_err();
    let issue = e
        .issues
        .iter()
        .find(|i| i.field == "lab.actuator[0].substructure")
        .unwrap_or_else(|| panic!("{e}"));
    assert!(
        issue.reason.contains("several physical substructures"),
        "{issue}"
    );
}

/// A loading beam (node 2: x, y, rz) on three springs, tested through a three-actuator setup.
fn beam_model(lab: &str) -> String {
    format!(
        r#"title = "loading beam on three springs"

[[node]]
id = 1
dofs = ["x"]

[[node]]
id = 2
dofs = ["x", "y", "rz"]
initial_displacement = {{ x = 0.02, y = -0.01, rz = 0.05 }}

[substructure.numerical]

[substructure.specimen]
physical = true
estimate = {{ dofs = [[2, "x"], [2, "y"], [2, "rz"]], stiffness = [[3.0e5, 0.0, 0.0], [0.0, 6.0e5, 0.0], [0.0, 0.0, 4.0e4]] }}

[[element]]
type = "spring"
name = "kx"
nodes = [2]
dof = "x"
k = 3.0e5
substructure = "specimen"

[[element]]
type = "spring"
name = "ky"
nodes = [2]
dof = "y"
k = 6.0e5
substructure = "specimen"

[[element]]
type = "spring"
name = "kr"
nodes = [2]
dof = "rz"
k = 4.0e4
substructure = "specimen"

[[element]]
type = "mass"
name = "beam"
node = 2
dofs = ["x", "y"]
mass = 1.0e3
substructure = "specimen"
role = "numerical"

[[element]]
type = "mass"
name = "beam_inertia"
node = 2
dofs = ["rz"]
mass = 50.0
substructure = "specimen"
role = "numerical"

[[element]]
type = "mass"
name = "beam_share"
node = 2
dofs = ["x"]
mass = 5.0e2
substructure = "numerical"

[[element]]
type = "spring"
name = "k12"
nodes = [1, 2]
dof = "x"
k = 1.0e5
substructure = "numerical"

[[element]]
type = "mass"
name = "m1"
node = 1
mass = 1.0e3
substructure = "numerical"

[[element]]
type = "spring"
name = "k1"
nodes = [1]
dof = "x"
k = 1.0e5
substructure = "numerical"

[analysis]
integrator = "pg-alpha"
rho_inf = 0.9
time_step = 2.0e-3
subcycles = 2
duration = 1.0
{lab}"#
    )
}

const BEAM_LAB: &str = r#"
[lab]
regime = "pseudodynamic"
time_scale = 2.0

[[lab.actuator]]
name = "h"
capacity = { stroke = 0.2, velocity = 1.0, force = 1.0e5 }

[[lab.actuator]]
name = "v1"
capacity = { stroke = 0.2, velocity = 1.0, force = 1.0e5 }

[[lab.actuator]]
name = "v2"
capacity = { stroke = 0.2, velocity = 1.0, force = 1.0e5 }

[[lab.setup]]
kind = "three_actuators_2d"
geometry = "nonlinear"
actuators = ["h", "v1", "v2"]
dofs = [[2, "x"], [2, "y"], [2, "rz"]]
lengths = [1.5, 1.2, 0.9]
beam_length = 0.8

[safety]
on_trip = "hold"

[safety.actuator.h]
displacement = 0.1
velocity = 0.5
force = 5.0e4
increment = 0.01

[safety.actuator.v1]
displacement = 0.1
velocity = 0.5
force = 5.0e4
increment = 0.01

[safety.actuator.v2]
displacement = 0.1
velocity = 0.5
force = 5.0e4
increment = 0.01

[safety.divergence]
displacement = 0.1
force = 1.0e5
"#;

#[test]
fn three_actuator_nonlinear_setup_on_the_virtual_lab_equals_the_numerical_model() {
    let dofs = [(2, "x"), (2, "y"), (2, "rz")];
    let reference = histories(model(&beam_model("")), &dofs);
    let lab = histories(model(&beam_model(BEAM_LAB)), &dofs);
    for k in 0..3 {
        let peak = reference[k].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(peak > 1e-3, "dof {k} moves: {peak}");
        let e = max_abs_diff(&lab[k], &reference[k]);
        // Newton's inversion and the Jacobian's transpose leave round-off only.
        assert!(e < 1e-10 * peak, "dof {k}: {e} (peak {peak})");
    }
    // The linear geometry is the same map at small rotations, not exactly.
    let linear = BEAM_LAB.replace("\"nonlinear\"", "\"linear\"");
    let lab = histories(model(&beam_model(&linear)), &dofs);
    for k in 0..3 {
        let e = max_abs_diff(&lab[k], &reference[k]);
        let peak = reference[k].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(e < 1e-10 * peak, "linear dof {k}: {e}");
    }
}

#[test]
fn the_virtual_lab_measures_forces_through_the_nonlinear_geometry() {
    // Every controller tick of the nonlinear beam test: the ideal actuators' achieved lengths d
    // give the beam's configuration q (inverted), and the measured actuator forces F balance the
    // springs' forces K q through the Jacobian of the closed-form lengths: Jᵀ F = K q.
    let k = [3.0e5, 6.0e5, 4.0e4];
    let setup = three_actuators_2d(L, B, Geometry::Nonlinear).unwrap();
    let mut sim = Simulation::new(model(&beam_model(BEAM_LAB))).unwrap();
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for _ in 0..sim.n_steps() {
        sim.step().unwrap();
        sim.integrator
            .for_each_lab(&mut |_, lab| lab.drain_lab(&mut |row| rows.push(row.to_vec())));
    }
    assert!(rows.len() > 400, "{} lab rows", rows.len());
    let mut q = [0.0; 3];
    let mut largest_nonlinearity = 0.0f64;
    for row in &rows {
        // Per actuator: desired, compensated, measured, force, safety, achieved_true, force_true.
        let d: Vec<f64> = (0..3).map(|a| row[2 + 7 * a + 2]).collect();
        let force: Vec<f64> = (0..3).map(|a| row[2 + 7 * a + 3]).collect();
        setup.actuators_to_dofs(&d, &mut q).unwrap();
        let h = 1e-7;
        for j in 0..3 {
            let mut plus = q;
            let mut minus = q;
            plus[j] += h;
            minus[j] -= h;
            let (dp, dm) = (
                three_by_hand(plus[0], plus[1], plus[2]),
                three_by_hand(minus[0], minus[1], minus[2]),
            );
            let jt_f: f64 = (0..3).map(|a| force[a] * (dp[a] - dm[a]) / (2.0 * h)).sum();
            let spring = k[j] * q[j];
            assert!(
                (jt_f - spring).abs() < 1e-5 * spring.abs().max(1.0),
                "dof {j}: Jᵀ F = {jt_f} vs K q = {spring} (q = {q:?})"
            );
        }
        let linear = [q[0], q[1] - B / 2.0 * q[2], q[1] + B / 2.0 * q[2]];
        largest_nonlinearity = largest_nonlinearity.max(max_abs_diff(&d, &linear));
    }
    // The commands were not the linear map's: the large-displacement terms acted.
    assert!(largest_nonlinearity > 1e-5, "{largest_nonlinearity}");
}

#[test]
fn scale_factors_per_dof_cancel_on_the_virtual_lab() {
    // A half-scale specimen (geometric scale 2, force scale 4 by default) with extra per-DOF
    // factors: the virtual lab evaluates the model's own specimen, so the scales cancel and the
    // test still reproduces the numerical model to round-off, while the commands are in
    // specimen units.
    let dofs = [(2, "x"), (2, "y"), (2, "rz")];
    let reference = histories(model(&beam_model("")), &dofs);
    let scaled = BEAM_LAB
        .replace(
            "time_scale = 2.0",
            "time_scale = 2.0\ngeometric_scale = 2.0",
        )
        .replace(
            "beam_length = 0.8",
            "beam_length = 0.8\ndisplacement_scale = [1.0, 2.0, 1.5]\nforce_scale = [1.0, 0.5, 3.0]",
        );
    let lab = histories(model(&beam_model(&scaled)), &dofs);
    for k in 0..3 {
        let peak = reference[k].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let e = max_abs_diff(&lab[k], &reference[k]);
        assert!(e < 1e-10 * peak, "dof {k}: {e} (peak {peak})");
    }
}

#[test]
fn a_nonlinear_setup_tick_does_not_allocate() {
    let mut sim = Simulation::new(model(&beam_model(BEAM_LAB))).unwrap();
    sim.step().unwrap();
    let allocations = common::counting::count(|| {
        for _ in 0..100 {
            sim.step().unwrap();
        }
    });
    assert_eq!(
        allocations, 0,
        "allocations in 100 steps (200 controller ticks)"
    );
}

#[test]
fn the_loading_beam_example_runs_close_to_the_numerical_model() {
    const EXAMPLE: &str = "loading_beam_three_actuators.toml";
    let dofs = [(2, "x"), (2, "y"), (2, "rz")];
    let reference = histories(example_with(EXAMPLE, without_lab), &dofs);
    let lab = histories(example_with(EXAMPLE, |_| {}), &dofs);
    for k in 0..3 {
        let peak = reference[k].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let e = max_abs_diff(&lab[k], &reference[k]);
        assert!(
            e < 0.1 * peak,
            "dof {k}: lab with lag and noise off by {e} (peak {peak})"
        );
    }
}
