//! Model-file features: units, Rayleigh damping, seismic loads, superelements.
mod common;
use common::*;
use hybridsim::assembly::{linearize, rayleigh_coefficients};
use hybridsim::modal;
use hybridsim::model::SourceResolver;

const FRAME: &str = r#"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
[[node]]
id = 3
dofs = ["x"]
[[element]]
type = "mass"
node = 1
mass = 60.0
[[element]]
type = "mass"
node = 2
mass = 50.0
[[element]]
type = "mass"
node = 3
mass = 40.0
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 4.0e4
[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 3.5e4
[[element]]
type = "spring"
nodes = [2, 3]
dof = "x"
k = 2.5e4
[analysis]
integrator = "mg-alpha"
time_step = 0.005
duration = 1.0
"#;

#[test]
fn rayleigh_damping_hits_the_target_ratios() {
    let text = format!("{FRAME}\n[damping]\nmodes = [1, 3]\nratios = [0.02, 0.05]\n");
    let m = model(&text);
    let (alpha, beta) = rayleigh_coefficients(&m).unwrap().unwrap();
    let lin = linearize(&m);
    let modes = modal::modes(&lin.m, &lin.k).unwrap();
    let c = &lin.c + &lin.m_rayleigh * alpha + &lin.k_rayleigh * beta;
    let zeta = modal::damping_ratios(&modes, &c);
    println!("alpha = {alpha}, beta = {beta}, zeta = {zeta:?}");
    assert!((zeta[0] - 0.02).abs() < 1e-12);
    assert!((zeta[2] - 0.05).abs() < 1e-12);
    // The classical formula holds when every element participates.
    let (w1, w3) = (modes.omega[0], modes.omega[2]);
    assert!((alpha / (2.0 * w1) + beta * w1 / 2.0 - 0.02).abs() < 1e-12);
    assert!((alpha / (2.0 * w3) + beta * w3 / 2.0 - 0.05).abs() < 1e-12);
}

#[test]
fn rayleigh_damping_never_reaches_a_specimen() {
    let sim = hybridsim::Simulation::new(example_with("quickstart.toml", |_| {})).unwrap();
    for p in sim.integrator.partitions() {
        if p.state.physical {
            for slot in &p.state.slots {
                assert!(
                    !matches!(slot.element.kind(), "spring" | "dashpot"),
                    "specimen element {} computed in `{}`",
                    slot.name(),
                    p.state.name
                );
            }
            // Only the numerical mass share can carry (mass-proportional) Rayleigh damping.
            let c = p
                .state
                .slots
                .iter()
                .find(|s| s.name().starts_with("rayleigh@"));
            if let Some(c) = c {
                let cm = c.element.linear_damping().unwrap();
                let alpha = rayleigh_coefficients(&sim.model).unwrap().unwrap().0;
                assert!((cm[(0, 0)] - alpha * 30.0).abs() < 1e-9);
            }
        }
    }
}

#[test]
fn constant_ground_acceleration_gives_the_static_relative_displacement() {
    // SDOF k = 100, m = 1, critically over-damped, under a_g = 0.5 g: u → −m a_g / k.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-static");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("step.txt"), "# time accel\n0 0.5\n100 0.5\n").unwrap();
    let text = r#"
[units]
length = "mm"
force = "N"
time = "s"
[[node]]
id = 1
dofs = ["x"]
[[element]]
type = "mass"
node = 1
mass = 1.0
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 100.0
[[element]]
type = "dashpot"
nodes = [1]
dof = "x"
c = 40.0
[[ground_motion]]
direction = "x"
record = "step.txt"
record_units = "g"
[analysis]
integrator = "mg-alpha"
time_step = 0.01
duration = 20.0
"#;
    let m = hybridsim::Model::from_toml(text, "static.toml", &Folder(dir.clone())).unwrap();
    // In mm and s, g = 9806.65 mm/s² (mass unit N·s²/mm = 1000 kg).
    assert!((m.units.gravity() - 9806.65).abs() < 1e-9);
    let sim = run(m);
    let u = sim.integrator.state(0)[0];
    let expected = -0.5 * 9806.65 / 100.0;
    println!("static relative displacement {u} mm (expected {expected})");
    assert!((u - expected).abs() < 1e-6 * expected.abs());
    // At rest relative to the ground, the absolute acceleration is the ground's.
    let mut sim = sim;
    let mut row = vec![0.0; sim.columns().len()];
    sim.record(&mut row);
    let col = sim
        .columns()
        .iter()
        .position(|c| c.name == "a_abs.structure.1.x")
        .unwrap();
    assert_eq!(sim.columns()[col].unit, "mm/s^2");
    assert!((row[col] - 0.5 * 9806.65).abs() < 1e-3, "{}", row[col]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_linear_superelement_equals_the_same_springs_and_masses() {
    let superelement = r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = { x = 0.01 }
[[node]]
id = 2
dofs = ["x"]
[[element]]
type = "linear"
dofs = [[1, "x"], [2, "x"]]
m = [[2.0, 0.0], [0.0, 1.0]]
k = [[300.0, -100.0], [-100.0, 100.0]]
c = [[0.3, -0.1], [-0.1, 0.1]]
[analysis]
integrator = "mg-alpha"
rho_inf = 0.7
time_step = 0.01
duration = 3.0
"#;
    let discrete = r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = { x = 0.01 }
[[node]]
id = 2
dofs = ["x"]
[[element]]
type = "mass"
node = 1
mass = 2.0
[[element]]
type = "mass"
node = 2
mass = 1.0
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 200.0
[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 100.0
[[element]]
type = "dashpot"
nodes = [1]
dof = "x"
c = 0.2
[[element]]
type = "dashpot"
nodes = [1, 2]
dof = "x"
c = 0.1
[analysis]
integrator = "mg-alpha"
rho_inf = 0.7
time_step = 0.01
duration = 3.0
"#;
    let a = run(model(superelement));
    let b = run(model(discrete));
    let (ya, yb) = (a.integrator.state(0), b.integrator.state(0));
    let diff = ya
        .iter()
        .zip(yb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(diff < 1e-15, "{diff}");
}

#[test]
fn a_seeded_synthetic_record_is_reproducible_and_recorded() {
    let a = example_with("quickstart.toml", |_| {});
    let b = example_with("quickstart.toml", |_| {});
    let c = example_with("quickstart.toml", |t| {
        let gm = t["ground_motion"].as_array_mut().unwrap()[0]
            .as_table_mut()
            .unwrap();
        gm["synthetic"]
            .as_table_mut()
            .unwrap()
            .insert("seed".into(), 7i64.into());
    });
    assert_eq!(a.ground_motions[0].seed, Some(2026));
    let run_bits = |m| {
        let s = run(m);
        s.integrator
            .state(0)
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<u64>>()
    };
    let (ra, rb, rc) = (run_bits(a), run_bits(b), run_bits(c));
    assert_eq!(ra, rb);
    assert_ne!(ra, rc);
}

/// Issue 18: plausible-but-probably-wrong values load with a warning that names the field: a
/// PGA of 3 g (meant 0.3), a run longer than its record, a time step coarser than the record's
/// samples. A plain model has none.
#[test]
fn implausible_ground_motions_draw_warnings_at_their_fields() {
    let text = |pga: f64, dt: f64, duration: f64| {
        format!(
            r#"
[[node]]
id = 1
dofs = ["x"]
[[element]]
type = "mass"
node = 1
mass = 1.0
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 100.0
[[ground_motion]]
direction = "x"
record = "elcentro.txt"
record_units = "g"
pga = {pga}
[analysis]
integrator = "mg-alpha"
time_step = {dt}
duration = {duration}
"#
        )
    };
    struct Record;
    impl SourceResolver for Record {
        fn read_to_string(&self, _: &str) -> Result<String, String> {
            // 10 s at 0.01 s, peak 0.2 g.
            Ok((0..=1000)
                .map(|k| format!("{} {}\n", k as f64 * 0.01, 0.2 * (k as f64 * 0.3).sin()))
                .collect())
        }
    }
    let load = |t: String| hybridsim::Model::from_toml(&t, "gm.toml", &Record).unwrap();
    let fine = load(text(0.3, 0.005, 10.0));
    assert!(fine.warnings.is_empty(), "{:?}", fine.warnings);
    let src = fine.ground_motions[0].record.as_ref().unwrap();
    assert_eq!(src.path, "elcentro.txt");
    assert_eq!(src.dt, Some(0.01));
    let m = load(text(3.0, 0.02, 12.0));
    let fields: Vec<&str> = m.warnings.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "ground_motion[0].pga",
            "analysis.duration",
            "ground_motion[0].record"
        ],
        "{:?}",
        m.warnings
    );
    assert!(m.warnings[0].reason.contains("3.000 g") && m.warnings[0].reason.contains("0.3"));
    assert!(m.warnings[1].reason.contains("free vibration"));
    assert!(m.warnings[2].reason.contains("coarser"));
    assert_eq!(m.warnings[0].file, "gm.toml");
}
