//! `results.csv` holds every recorded value exactly: each field parses back to the same f64,
//! bit for bit, as the value the simulation records in memory for the same step (the writer's
//! shortest round-trip float formatting, issue 6).

use hybridsim::Simulation;
use std::sync::atomic::{AtomicBool, AtomicU64};

const MODEL: &str = r#"
title = "csv round trip: split mass with a sine load"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
initial_displacement = { x = 0.01 }
[substructure.numerical]
[substructure.specimen]
physical = true
estimate = { dofs = [[1, "x"]], stiffness = [[4.0e5]] }
[[element]]
type = "mass"
node = 1
mass = 4.0e3
substructure = "specimen"
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 4.0e5
substructure = "specimen"
[[element]]
type = "mass"
node = 1
mass = 4.0e3
substructure = "numerical"
[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 5.0e5
substructure = "numerical"
[[element]]
type = "mass"
node = 2
mass = 9.0e3
substructure = "numerical"
[[load]]
node = 2
dof = "x"
sine = { amplitude = 1.0e3, frequency = 3.0 }
[analysis]
integrator = "pg-alpha"
rho_inf = 0.9
time_step = 1.0e-3
subcycles = 3
duration = 0.5
"#;

#[test]
fn every_csv_field_round_trips_to_the_recorded_bits() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim_csv_roundtrip");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.toml");
    std::fs::write(&path, MODEL).unwrap();
    let loaded = hybridsim_io::load_model(&path).unwrap_or_else(|e| panic!("{e}"));
    let out = dir.join("out");
    let report =
        hybridsim_io::run_to_folder(&loaded, &out, &AtomicU64::new(0), &AtomicBool::new(false))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.status, hybridsim_io::RunStatus::Completed);

    // The same run in memory.
    let mut sim = Simulation::new(loaded.model.clone()).unwrap_or_else(|e| panic!("{e}"));
    let ncol = sim.columns().len();
    let mut expected = Vec::new();
    let mut row = vec![0.0; ncol];
    sim.record(&mut row);
    expected.push(row.clone());
    for _ in 0..sim.n_steps() {
        sim.step().unwrap();
        sim.record(&mut row);
        expected.push(row.clone());
    }

    let text = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap().split(',').count(), ncol);
    let mut n = 0;
    let mut nonzero = 0;
    for (line, want) in lines.zip(&expected) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), ncol, "row {n}: {line}");
        for (f, w) in fields.iter().zip(want) {
            let x: f64 = f.parse().unwrap_or_else(|e| panic!("row {n}: `{f}`: {e}"));
            assert_eq!(x.to_bits(), w.to_bits(), "row {n}: `{f}` is not {w:e}");
            nonzero += usize::from(x != 0.0);
        }
        n += 1;
    }
    assert_eq!(n, expected.len(), "rows in results.csv");
    assert!(nonzero > n, "the rows hold data");
    let _ = std::fs::remove_dir_all(&dir);
}
