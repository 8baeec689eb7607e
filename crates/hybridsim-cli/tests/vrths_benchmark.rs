//! The vRTHS benchmark example (issue 12: "an example model reproduces a published RTHS benchmark
//! loop end to end"): `examples/vrths_benchmark.toml` run by `hybridsim run`, scored by
//! `hybridsim evaluate` against `examples/vrths_benchmark_reference.toml`, equals an independent
//! sampled-data simulation of the same loop (`scripts/vrths/reference_loop.py`, numpy/scipy, the
//! trapezoidal stepper of explicit-rths at ρ∞ = 1, the servo loop on the previous sample's
//! measurement) in every criterion J1–J9: noise and quantization off, the same plant, the
//! paper's sample controller (PI behind a phase lead), force delay and record.
//!
//! Needs the shared El Centro record and python3 with numpy and scipy; without them the test
//! skips with a notice on a developer machine and fails in CI (`CI` set).

mod common;
use common::*;
use std::process::Command;

fn python_ready() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy, scipy"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn skip_or_fail(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{why} (CI is set: this test must run)");
    }
    eprintln!("SKIPPED: {why}");
}

#[test]
fn the_vrths_benchmark_example_equals_an_independent_simulation_of_its_loop() {
    let Some(record) = ground_motion_folder().map(|d| d.join("ElCentro1940_NS_PEER_IELC180.AT2"))
    else {
        return skip_or_fail(
            "no El Centro record beside the repository (HYBRIDSIM_GROUND_MOTIONS)",
        );
    };
    if !python_ready() {
        return skip_or_fail("python3 with numpy and scipy is needed");
    }
    let dir = scratch("vrths");
    let rel = "../../shared/data/ground-motions/ElCentro1940_NS_PEER_IELC180.AT2";
    let abs = record.display().to_string();
    // The example without sensor noise and quantization (the reference script has neither).
    let text = std::fs::read_to_string(root().join("examples/vrths_benchmark.toml"))
        .unwrap()
        .replace(rel, &abs)
        .replace(
            "noise = { displacement_rms = 1.6e-5, force_rms = 2.18 }",
            "noise = { displacement_rms = 0.0, force_rms = 0.0 }",
        )
        .replace("displacement_resolution = 2.9e-7,", "displacement_resolution = 0.0,")
        .replace(
            ",\n                       { kind = \"quantizer\", resolution = 2.9e-7, range = 0.038 }",
            "",
        );
    assert!(
        !text.contains("kind = \"quantizer\"") && text.contains("force_rms = 0.0"),
        "the edits did not apply:\n{text}"
    );
    let model = dir.join("vrths.toml");
    std::fs::write(&model, text).unwrap();
    let reference = dir.join("reference.toml");
    std::fs::write(
        &reference,
        std::fs::read_to_string(root().join("examples/vrths_benchmark_reference.toml"))
            .unwrap()
            .replace(rel, &abs),
    )
    .unwrap();
    for (m, out) in [(&model, "test"), (&reference, "reference")] {
        let o = hybridsim()
            .arg("run")
            .arg(m)
            .args(["--quiet", "-o"])
            .arg(dir.join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = hybridsim()
        .arg("evaluate")
        .arg(dir.join("test"))
        .arg("--reference")
        .arg(dir.join("reference"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = json(&dir.join("test/evaluation.json"))["criteria"].clone();
    let o = Command::new("python3")
        .arg(root().join("scripts/vrths/reference_loop.py"))
        .arg(&record)
        .args([
            "--duration",
            "30",
            "--stepper",
            "trapezoidal",
            "--controller",
            "sample",
        ])
        .args(["--feedback", "previous", "--json"])
        .arg(dir.join("reference.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs = json(&dir.join("reference.json"))["criteria"].clone();
    println!("hybridsim: {ours}\nreference: {theirs}");
    // J1: the same whole number of samples.
    let j1 = |v: &serde_json::Value| v["J1"].as_f64().unwrap();
    assert!(
        (j1(&ours) - j1(&theirs)).abs() < 1e-9,
        "J1 {ours} vs {theirs}"
    );
    // J2, J3 and the response criteria; J4/J5 of hybridsim come from the tested storey's
    // displacement in results.csv (the numerical target), the script's `J4_numerical`.
    for (k, r) in [
        ("J2", "J2"),
        ("J3", "J3"),
        ("J4", "J4_numerical"),
        ("J5", "J5_numerical"),
        ("J6", "J6"),
        ("J7", "J7"),
        ("J8", "J8"),
        ("J9", "J9"),
    ] {
        let (a, b) = (ours[k].as_f64().unwrap(), theirs[r].as_f64().unwrap());
        assert!(
            (a - b).abs() < 5e-3 * b,
            "{k}: hybridsim {a:.6} vs reference {b:.6}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
