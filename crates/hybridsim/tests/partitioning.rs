//! Multi-DOF interfaces, several physical substructures, refactorizable interface operator.
mod common;
use common::*;
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::elements::DofRef;
use hybridsim::integrators::{MgAlpha, PgAlpha, TimeIntegrator};
use hybridsim::model::Estimate;
use nalgebra::DMatrix;

/// Chain of three nodes. Numerical: springs ground–1, 1–2, 2–3 and shares of every mass.
/// Physical `a`: spring 1–2 (two interface DOFs). Physical `b`: spring 3–ground.
const CHAIN: &str = r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = { x = 0.002 }
[[node]]
id = 2
dofs = ["x"]
[[node]]
id = 3
dofs = ["x"]
initial_velocity = { x = 0.05 }
[substructure.ns]
[substructure.a]
physical = true
estimate = { dofs = [[1, "x"], [2, "x"]], stiffness = [[2.0e5, -2.0e5], [-2.0e5, 2.0e5]] }
[substructure.b]
physical = true
estimate = { dofs = [[3, "x"]], stiffness = [[1.0e5]] }
[[element]]
type = "mass"
node = 1
mass = 1000.0
split = { ns = 0.7, a = 0.3 }
[[element]]
type = "mass"
node = 2
mass = 800.0
split = { ns = 0.5, a = 0.5 }
[[element]]
type = "mass"
node = 3
mass = 500.0
split = { ns = 0.8, b = 0.2 }
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 3.0e5
substructure = "ns"
[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 1.0e5
substructure = "ns"
[[element]]
type = "spring"
nodes = [2, 3]
dof = "x"
k = 1.5e5
substructure = "ns"
[[element]]
type = "dashpot"
nodes = [2, 3]
dof = "x"
c = 500.0
substructure = "ns"
[[element]]
type = "spring"
name = "specimen_a"
nodes = [1, 2]
dof = "x"
k = 2.0e5
substructure = "a"
[[element]]
type = "spring"
name = "specimen_b"
nodes = [3]
dof = "x"
k = 1.0e5
substructure = "b"
[analysis]
integrator = "pg-alpha"
rho_inf = 0.8
time_step = 1e-3
subcycles = 1
duration = 0.5
"#;

fn pg(ss: usize, dt: f64, rho: f64) -> PgAlpha {
    let m = model(CHAIN);
    let parts = build_partitions(&m, Grouping::Partitioned).unwrap();
    PgAlpha::new(
        parts,
        &hybridsim::integrators::StepSettings::new(dt)
            .rho_inf(rho)
            .subcycles(ss),
    )
    .unwrap()
}

fn mg(dt: f64, rho: f64) -> MgAlpha {
    let m = model(CHAIN);
    let part = build_partitions(&m, Grouping::Monolithic)
        .unwrap()
        .remove(0);
    MgAlpha::new(
        part,
        &hybridsim::integrators::StepSettings::new(dt).rho_inf(rho),
    )
    .unwrap()
}

/// Max difference over every displacement copy against the monolithic state.
fn difference(p: &PgAlpha, m: &MgAlpha) -> f64 {
    let mut d: f64 = 0.0;
    for (i, node) in [1, 2, 3].iter().enumerate() {
        for u in displacement_copies(p, *node, "x") {
            d = d.max((u - m.state(0)[i]).abs());
        }
    }
    d
}

#[test]
fn three_substructures_and_a_two_dof_interface() {
    let p = pg(1, 1e-3, 0.8);
    let iface = p.interface().unwrap();
    assert_eq!(iface.len(), 3);
    let names: Vec<String> = iface.dofs.iter().map(|d| d.dof.to_string()).collect();
    assert_eq!(names, ["node 1 dof x", "node 2 dof x", "node 3 dof x"]);
    assert_eq!(p.partitions().len(), 3);
    // Without subcycling the partitioned scheme equals the monolithic one to round-off.
    let (mut p, mut m) = (p, mg(1e-3, 0.8));
    let mut worst: f64 = 0.0;
    for _ in 0..500 {
        p.step().unwrap();
        m.step().unwrap();
        worst = worst.max(difference(&p, &m));
    }
    println!("3 substructures, ss = 1: max |PG-α − MG-α| = {worst:.3e}");
    assert!(worst < 1e-15 * 1e3 * 2.0);
}

#[test]
fn subcycled_multi_interface_is_second_order() {
    // Fine monolithic reference.
    let t_end = 0.02;
    let mut reference = mg(1e-6, 1.0);
    while reference.time() < t_end - 1e-12 {
        reference.step().unwrap();
    }
    for ss in [2, 4] {
        let errors: Vec<f64> = [1e-3, 5e-4, 2.5e-4, 1.25e-4]
            .iter()
            .map(|dt| {
                let mut p = pg(ss, *dt, 0.9);
                let n = (t_end / dt).round() as usize;
                for _ in 0..n {
                    p.step().unwrap();
                }
                difference(&p, &reference)
            })
            .collect();
        let s = slopes(&errors);
        println!("ss = {ss}: errors {errors:?} slopes {s:.3?}");
        assert!((s.last().unwrap() - 2.0).abs() < 0.1);
    }
}

#[test]
fn the_estimate_can_be_replaced_and_restored() {
    let mut base = pg(3, 1e-3, 0.9);
    let mut changed = pg(3, 1e-3, 0.9);
    let b = changed
        .partitions()
        .iter()
        .position(|p| p.state.name == "b")
        .unwrap();
    let numerical = changed.numerical();
    let est = |k: f64| Estimate {
        dofs: vec![DofRef::new(3, "x")],
        stiffness: DMatrix::from_element(1, 1, k),
        damping: DMatrix::zeros(1, 1),
    };
    let h0 = changed.interface().unwrap().h.clone();
    changed.set_estimate(b, est(0.5e5)).unwrap();
    assert!((&changed.interface().unwrap().h - &h0).amax() > 0.0);
    changed.set_estimate(b, est(1.0e5)).unwrap();
    assert!((&changed.interface().unwrap().h - &h0).amax() < 1e-18);
    for _ in 0..200 {
        base.step().unwrap();
        changed.step().unwrap();
    }
    let mut a = vec![0.0; base.state_len()];
    let mut c = vec![0.0; changed.state_len()];
    base.export_state(&mut a);
    changed.export_state(&mut c);
    let diff = a
        .iter()
        .zip(&c)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(diff < 1e-9, "{diff}");
    assert!(changed.set_estimate(numerical, est(1.0)).is_err());
}

#[test]
fn a_load_on_an_interface_dof_acts_once() {
    // A constant load on the interface node of the split-mass model: PG-α (ss = 1) must
    // follow MG-α of the assembled model, not a model with the load applied on both copies.
    let with_load = |integrator: &str| {
        example_with("split_mass_v1.toml", |t| {
            set(t, "analysis", "integrator", integrator);
            set(t, "analysis", "subcycles", 1i64);
            set(t, "analysis", "rho_inf", 0.0);
            set(t, "analysis", "time_step", 0.05);
            set(t, "analysis", "duration", 400.0);
            let load: toml::Value =
                toml::from_str::<toml::Table>("node = 1\ndof = 'x'\nconstant = 1000.0")
                    .unwrap()
                    .into();
            t.insert("load".into(), toml::Value::Array(vec![load]));
            let node = &mut t["node"].as_array_mut().unwrap()[1];
            node.as_table_mut().unwrap().remove("initial_displacement");
        })
    };
    let pg = run(with_load("pg-alpha"));
    let mg = run(with_load("mg-alpha"));
    let u_pg = displacement_copies(pg.integrator.as_ref(), 1, "x");
    let u_mg = mg.integrator.state(0)[0];
    // Static solution (k2 connects to a free mass): the dynamic response oscillates about
    // it between 0 and twice it.
    let exact = 1000.0 / 4.0e5;
    println!("u1: PG-α {u_pg:?}, MG-α {u_mg}, static {exact}");
    for u in u_pg {
        assert!((u - u_mg).abs() < 1e-9 * exact, "{u} vs {u_mg}");
    }
    assert!(u_mg > 0.0 && u_mg < 2.0 * exact * 1.01);
}
