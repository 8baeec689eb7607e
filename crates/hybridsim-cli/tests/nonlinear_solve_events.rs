//! Issue 17: a step of the converged nonlinear solve that does not meet its tolerance within
//! `analysis.nonlinear_max_iterations` is an event of the run: `run.json` counts such steps,
//! names the first one and the worst residual (`nonlinear_solve`), and adds a warning naming
//! the keys. Forced here through `hybridsim run` with one iteration and a tolerance no step
//! can meet on a yielding bilinear SDOF; the default settings give no such event.

mod common;
use common::*;

/// A yielding bilinear (`mostaghel`) SDOF under a synthetic motion, all numerical; `extra` is
/// appended to `[analysis]`.
fn model(extra: &str) -> String {
    format!(
        r#"title = "bilinear SDOF, converged solve"

[units]
length = "m"
force = "kN"
time = "s"

[substructure.frame]

[[node]]
id = 1
dofs = ["x"]

[[element]]
type = "mass"
name = "m"
node = 1
mass = 100.0
substructure = "frame"

[[element]]
type = "mostaghel"
name = "s"
nodes = [1]
dof = "x"
k = 4000.0
alpha = 0.05
delta = 0.005
substructure = "frame"

[[ground_motion]]
direction = "x"
synthetic = {{ seed = 17, duration = 2.0, pga = 0.3 }}

[analysis]
integrator = "mg-alpha"
rho_inf = 1.0
time_step = 0.005
duration = 2.0
{extra}
"#
    )
}

fn run(dir: &std::path::Path, name: &str, extra: &str) -> serde_json::Value {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, model(extra)).unwrap();
    let out_dir = dir.join(name);
    let out = hybridsim()
        .args(["run", "--quiet"])
        .arg(&path)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out_dir.join("run.json"))
}

#[test]
fn unconverged_steps_are_an_event_in_run_json() {
    let dir = scratch("unconverged");
    let forced = run(
        &dir,
        "forced",
        "nonlinear_tolerance = 1e-15\nnonlinear_max_iterations = 1",
    );
    let default = run(&dir, "default", "");
    let steps = forced["steps_completed"].as_u64().unwrap();
    assert_eq!(steps, 400, "the run completes: {forced:#}");
    let n = &forced["nonlinear_solve"];
    let count = n["unconverged_steps"].as_u64().expect("a count");
    assert!(count > 0 && count <= steps, "{n:#}");
    assert_eq!(n["max_iterations"].as_u64(), Some(1), "{n:#}");
    assert_eq!(n["solves"].as_u64(), Some(steps), "{n:#}");
    let first = n["first_unconverged_step"].as_u64().expect("a first step");
    assert!((1..=steps).contains(&first), "{n:#}");
    let t = n["first_unconverged_time"].as_f64().unwrap();
    assert!((t - first as f64 * 0.005).abs() < 1e-9, "{n:#}");
    let worst = n["worst_residual"].as_f64().unwrap();
    assert!(worst > 1e-15 && worst.is_finite(), "{n:#}");
    let warnings: Vec<&str> = forced["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("analysis.nonlinear_max_iterations"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:#}", forced["warnings"]);
    assert!(
        warnings[0].contains(&format!("{count} step(s)"))
            && warnings[0].contains(&format!("step {first} ")),
        "{}",
        warnings[0]
    );
    // The default solve converges every step: no event, the same keys.
    let d = &default["nonlinear_solve"];
    assert_eq!(d["unconverged_steps"].as_u64(), Some(0), "{d:#}");
    assert!(d["first_unconverged_step"].is_null(), "{d:#}");
    assert_eq!(d["max_iterations"].as_u64(), Some(20), "{d:#}");
    assert!(d["iterations"].as_u64().unwrap() > steps, "{d:#}");
    assert!(
        !default["warnings"]
            .to_string()
            .contains("nonlinear_max_iterations"),
        "{:#}",
        default["warnings"]
    );
    // Newton's method: its factorizations and singular-matrix fallbacks are counted (none
    // here); the default solve has neither key filled.
    let newton = run(&dir, "newton", "nonlinear_solver = \"newton\"");
    let nn = &newton["nonlinear_solve"]["newton"];
    assert!(nn["factorizations"].as_u64().unwrap() > 0, "{nn:#}");
    assert_eq!(nn["singular_fallbacks"].as_u64(), Some(0), "{nn:#}");
    assert!(
        newton["nonlinear_solve"]["current_link"].is_null(),
        "{newton:#}"
    );
    assert!(
        d["newton"].is_null() && d["current_link"].is_null(),
        "{d:#}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
