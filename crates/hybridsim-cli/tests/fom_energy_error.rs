//! `hybridsim analyze energy-error RUN --reference REF`: the cumulative energy error of
//! Hung and El-Tawil (2009, eq 18) of an FOM and an OSM run of `examples/fom_01_six_storey.toml`
//! (a synthetic record at 1 g, 2 s, the first storey on the virtual lab) against the monolithic
//! trapezoidal rule at Δt/10, checked against the sum computed here from the two results.csv.

mod common;

use common::{col, hybridsim, json, read_csv, scratch};
use std::path::Path;

/// The example with a synthetic record, 2 s, and `edit` applied to the text.
fn model(edit: impl Fn(String) -> String) -> String {
    let text =
        std::fs::read_to_string(common::root().join("examples/fom_01_six_storey.toml")).unwrap();
    let start = text.find("[[ground_motion]]").unwrap();
    let end = text.find("[analysis]").unwrap();
    let synthetic = "[[ground_motion]]\ndirection = \"x\"\n\
                     synthetic = { seed = 15, duration = 2.0, pga = 1.0 }\n\n";
    let t = format!("{}{synthetic}{}", &text[..start], &text[end..]);
    edit(t.replacen("duration = 20.0", "duration = 2.0", 1))
}

/// The monolithic reference: mg-alpha (ρ∞ = 1, the trapezoidal rule) at `dt`, no lab.
fn reference(dt: &str) -> String {
    model(|t| {
        let t = t[..t.find("[lab]").unwrap()].to_string();
        t.replacen("integrator = \"fom\"", "integrator = \"mg-alpha\"", 1)
            .replacen("time_step = 0.005", &format!("time_step = {dt}"), 1)
            .replacen("[analysis.estimator]\nupdate = \"bfgs\"\n", "", 1)
    })
}

fn run(dir: &Path, name: &str, text: &str) {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let o = hybridsim()
        .arg("run")
        .arg(&file)
        .arg("-o")
        .arg(dir.join(name))
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `analyze energy-error RUN --reference REF ARGS…`, the folders in `dir`.
fn analyze(run: &str, reference: &str, args: &[&str], dir: &Path) -> std::process::Output {
    hybridsim()
        .args(["analyze", "energy-error"])
        .arg(dir.join(run))
        .arg("--reference")
        .arg(dir.join(reference))
        .args(args)
        .output()
        .unwrap()
}

/// `Σ_{j≥1} |r_ref (d − d_ref)|` from the CSVs: RUN's `u.assembled.1.x` against REF's
/// `u.assembled.1.x` at the same times (every 10th row), r_ref the sum of `forces`.
fn e_c_here(dir: &Path, run: &str, forces: &[&str]) -> f64 {
    let (h, rows) = read_csv(&dir.join(run).join("results.csv"));
    let (hr, ref_rows) = read_csv(&dir.join("ref/results.csv"));
    let (d, dr) = (
        col(&h, "u.assembled.1.x[m]"),
        col(&hr, "u.assembled.1.x[m]"),
    );
    let f: Vec<usize> = forces.iter().map(|n| col(&hr, n)).collect();
    assert_eq!(ref_rows.len(), 10 * (rows.len() - 1) + 1);
    rows.iter()
        .enumerate()
        .skip(1)
        .map(|(j, row)| {
            let r = &ref_rows[10 * j];
            assert!((r[0] - row[0]).abs() < 1e-12, "times {} {}", r[0], row[0]);
            let force: f64 = f.iter().map(|&c| r[c]).sum();
            (force * (row[d] - r[dr])).abs()
        })
        .sum()
}

#[test]
fn energy_error_of_fom_and_osm_against_a_fine_reference() {
    let dir = scratch("fom_energy_error");
    run(&dir, "ref", &reference("0.0005"));
    run(&dir, "fom", &model(|t| t));
    run(
        &dir,
        "osm",
        &model(|t| {
            t.replacen("integrator = \"fom\"", "integrator = \"osm\"", 1)
                .replacen("[analysis.estimator]\nupdate = \"bfgs\"\n", "", 1)
        }),
    );
    // Default: node 1.x (the physical storey's DOF), the nodal restoring force of the
    // reference (both storeys' element forces at node 1), written into the run's folder.
    let mut e = std::collections::BTreeMap::new();
    for name in ["fom", "osm"] {
        let o = analyze(name, "ref", &[], &dir);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let s = json(&dir.join(name).join("run.json"))["analysis"]["energy_error"].clone();
        let cli = s["E_c"].as_f64().unwrap();
        let here = e_c_here(
            &dir,
            name,
            &["force.storey1.1.x[N]", "force.storey2.1.x[N]"],
        );
        eprintln!("{name}: E_c = {cli:.6e} N·m (here {here:.6e}); {stdout}");
        assert!(
            (cli - here).abs() <= 1e-12 * here,
            "{name}: {cli} vs {here}"
        );
        assert!(here > 0.0);
        assert_eq!(s["steps"], 400);
        assert_eq!(s["displacement"], "u.assembled.1.x");
        assert_eq!(s["unit"], "N*m");
        assert!(stdout.contains("E_c = "), "{stdout}");
        // energy_error.csv: the last cumulative value is the summary's.
        let (h, rows) = read_csv(&dir.join(name).join("energy_error.csv"));
        assert_eq!(rows.len(), 400);
        let last = rows.last().unwrap()[col(&h, "E_c[N*m]")];
        assert!((last - cli).abs() <= 1e-12 * cli, "{last} {cli}");
        e.insert(name, cli);
    }
    eprintln!("E_c(FOM)/E_c(OSM) = {:.4}", e["fom"] / e["osm"]);
    assert!(e["fom"] < e["osm"], "{e:?}");
    // The storey-1 force alone, written elsewhere: run.json untouched.
    let before = std::fs::read(dir.join("fom/run.json")).unwrap();
    let out = dir.join("out").display().to_string();
    let o = analyze(
        "fom",
        "ref",
        &["--node", "1", "--force", "force.storey1.1.x", "-o", &out],
        &dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cli = json(&dir.join("out/energy_error.json"))["E_c"]
        .as_f64()
        .unwrap();
    let here = e_c_here(&dir, "fom", &["force.storey1.1.x[N]"]);
    assert!((cli - here).abs() <= 1e-12 * here, "{cli} vs {here}");
    assert_eq!(std::fs::read(dir.join("fom/run.json")).unwrap(), before);
}

/// A reference not recorded at the run's times, a missing column and a folder that is not a
/// run are refused with the file and the reason.
#[test]
fn energy_error_refuses_mismatched_inputs() {
    let dir = scratch("fom_energy_error_bad");
    run(
        &dir,
        "fom",
        &model(|t| t.replacen("duration = 2.0", "duration = 0.1", 1)),
    );
    run(
        &dir,
        "ref",
        &reference("0.003").replacen("duration = 2.0", "duration = 0.1", 1),
    );
    let o = analyze("fom", "ref", &[], &dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("ref/results.csv") && err.contains("no row at t = 0.005"),
        "{err}"
    );
    let o = analyze("fom", "fom", &["--force", "force.nothing"], &dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--force") && err.contains("force.nothing"),
        "{err}"
    );
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let o = analyze("empty", "fom", &[], &dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("not a results folder"),
        "{err}"
    );
}
