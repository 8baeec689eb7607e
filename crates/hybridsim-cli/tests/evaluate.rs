//! `hybridsim evaluate`: the vRTHS benchmark criteria J1–J9 of a results folder against a
//! reference folder, end to end on the quick start (ideal transfer system as the reference,
//! the 4 ms actuator delay with and without compensation as the tests), on hand-made folders
//! with known answers, and the errors for folders that do not match.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// The quick start with its `[[lab.actuator]]` dynamics, noise and compensation lines replaced
/// (`None`: removed), run into `dir`.
fn run_quickstart(dir: &Path, dynamics: Option<&str>, noise: bool, compensation: bool) {
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with("dynamics =") {
            if let Some(d) = dynamics {
                out.push_str(&format!("dynamics = {d}\n"));
            }
            continue;
        }
        if (l.starts_with("noise =") && !noise)
            || (l.starts_with("compensation =") && !compensation)
        {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    std::fs::create_dir_all(dir).unwrap();
    let model = dir.join("model-in.toml");
    std::fs::write(&model, out).unwrap();
    let o = hybridsim()
        .arg("run")
        .arg(&model)
        .args(["--quiet", "-o"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn evaluate(results: &Path, reference: &Path, extra: &[&str]) -> std::process::Output {
    hybridsim()
        .arg("evaluate")
        .arg(results)
        .arg("--reference")
        .arg(reference)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn evaluate_scores_the_quick_start_with_and_without_delay_compensation() {
    let base = scratch("quickstart");
    let ideal = base.join("ideal");
    let plain = base.join("plain");
    let comp = base.join("comp");
    run_quickstart(&ideal, None, false, false);
    run_quickstart(
        &plain,
        Some(r#"{ kind = "delay", delay = 0.004 }"#),
        true,
        false,
    );
    run_quickstart(
        &comp,
        Some(r#"{ kind = "delay", delay = 0.004 }"#),
        true,
        true,
    );

    let mut crit = Vec::new();
    for dir in [&plain, &comp] {
        let o = evaluate(&dir.join("out"), &ideal.join("out"), &[]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        println!("{stdout}");
        assert!(
            stdout.contains("J1 delay") && stdout.contains("J4"),
            "{stdout}"
        );
        let j = json(&dir.join("out/evaluation.json"));
        crit.push(j["criteria"].clone());
        assert_eq!(j["tracking"][0]["actuator"], "storey1");
        assert!(!j["response"].as_array().unwrap().is_empty());
    }
    let (plain, comp) = (&crit[0], &crit[1]);
    // The 4 ms delay at a 1 kHz controller: four ticks behind, and compensated close to none.
    assert_eq!(plain["J1"].as_f64().unwrap(), 0.004, "{plain}");
    assert!(comp["J1"].as_f64().unwrap().abs() <= 0.001, "{comp}");
    for j in ["J2", "J3", "J4"] {
        let (p, c) = (plain[j].as_f64().unwrap(), comp[j].as_f64().unwrap());
        assert!(
            p > 0.0 && c < p,
            "{j}: compensated {c} not below uncompensated {p}"
        );
    }

    // The reference against itself: zero response errors; its tracking is ideal too.
    let ideal_out = ideal.join("out");
    let o = evaluate(&ideal_out, &ideal_out, &["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &j["criteria"];
    assert_eq!(c["J1"], 0.0);
    assert_eq!(c["J2"], 0.0);
    for r in j["response"].as_array().unwrap() {
        assert_eq!(r["nrms_error"], 0.0, "{r}");
        assert_eq!(r["peak_error"], 0.0, "{r}");
    }
}

/// A hand-made results folder: lab.csv with one actuator whose measurement is the desired
/// signal delayed by `lag` ticks and scaled by `gain`, and results.csv with three storeys
/// `u.frame.{1,2,3}.x` equal to `scale[i]` times a reference signal.
fn folder(
    dir: &Path,
    lag: usize,
    gain: f64,
    scale: [f64; 3],
    times: impl Fn(usize) -> f64,
) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let dt = 0.001;
    let n: usize = 3000;
    let s = |k: usize| {
        let t = k as f64 * dt;
        (2.0 * std::f64::consts::PI * 2.0 * t).sin()
            + 0.3 * (2.0 * std::f64::consts::PI * 5.3 * t).sin()
    };
    let mut lab = String::from("time[s],wall_time[s],desired.a1[m],measured.a1[m]\n");
    for k in 0..n {
        let m = gain * s(k.saturating_sub(lag));
        lab.push_str(&format!(
            "{},{},{},{}\n",
            k as f64 * dt,
            k as f64 * dt,
            s(k),
            m
        ));
    }
    std::fs::write(dir.join("lab.csv"), lab).unwrap();
    let mut res =
        String::from("time[s],u.frame.1.x[m],u.frame.2.x[m],u.frame.3.x[m],u.frame.0.x[m]\n");
    for k in 0..n / 10 {
        let r = s(10 * k);
        res.push_str(&format!(
            "{},{},{},{},0.0\n",
            times(k),
            scale[0] * r * 1.0,
            scale[1] * r * 2.0,
            scale[2] * r * 3.0
        ));
    }
    std::fs::write(dir.join("results.csv"), res).unwrap();
    dir.to_path_buf()
}

#[test]
fn evaluate_gives_the_known_criteria_of_hand_made_folders() {
    let base = scratch("handmade");
    let t = |k: usize| k as f64 * 0.01;
    let reference = folder(&base.join("ref"), 0, 1.0, [1.0, 1.0, 1.0], t);
    let test = folder(&base.join("test"), 7, 0.9, [1.1, 0.8, 1.0], t);
    let o = evaluate(&test, &reference, &["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = json(&test.join("evaluation.json"));
    let c = &j["criteria"];
    assert!((c["J1"].as_f64().unwrap() - 0.007).abs() < 1e-12, "{c}");
    // Response: u.frame.0.x is zero in the reference and skipped; the three storeys are
    // numbered as the benchmark does: storey 1 J4 (RMS) and J5 (peak), storeys 2 and 3 J6, J7
    // (RMS) and J8, J9 (peak); each is |scale − 1|.
    assert_eq!(j["skipped_zero_reference"][0], "u.frame.0.x");
    for (k, want) in [(4, 0.1), (5, 0.1), (6, 0.2), (7, 0.0), (8, 0.2), (9, 0.0)] {
        let got = c[format!("J{k}")].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "J{k} = {got}, expected {want}");
    }
    // --response picks and orders the channels: the first gives J4 (RMS) and J5 (peak), the
    // second J6 (RMS) and J7 (peak).
    let o = evaluate(
        &test,
        &reference,
        &["--response", "u.frame.2.x", "--response", "u.frame.1.x"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = json(&test.join("evaluation.json"))["criteria"].clone();
    for (k, want) in [(4, 0.2), (5, 0.2), (6, 0.1), (7, 0.1)] {
        let got = c[format!("J{k}")].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "J{k} = {got}, expected {want}");
    }
    assert!(c.get("J8").is_none(), "{c}");
}

#[test]
fn evaluate_names_the_file_and_column_of_folders_that_do_not_match() {
    let base = scratch("mismatch");
    let t = |k: usize| k as f64 * 0.01;
    let reference = folder(&base.join("ref"), 0, 1.0, [1.0; 3], t);
    let shifted = folder(&base.join("shifted"), 0, 1.0, [1.0; 3], |k| {
        if k == 42 {
            0.4205
        } else {
            k as f64 * 0.01
        }
    });
    let fail = |o: std::process::Output| -> String {
        assert!(!o.status.success(), "expected a failure");
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!e.contains("panicked"), "{e}");
        e
    };
    // Different time steps.
    let e = fail(evaluate(&shifted, &reference, &[]));
    assert!(
        e.contains("shifted/results.csv") && e.contains("column `time`") && e.contains("row 43"),
        "{e}"
    );
    // Different lengths.
    let short = folder(&base.join("short"), 0, 1.0, [1.0; 3], t);
    let text = std::fs::read_to_string(short.join("results.csv")).unwrap();
    let keep: Vec<&str> = text.lines().take(100).collect();
    std::fs::write(short.join("results.csv"), keep.join("\n") + "\n").unwrap();
    let e = fail(evaluate(&short, &reference, &[]));
    assert!(
        e.contains("short/results.csv") && e.contains("99 rows"),
        "{e}"
    );
    // An unknown response column.
    let e = fail(evaluate(
        &reference,
        &reference,
        &["--response", "u.nope.1.x"],
    ));
    assert!(
        e.contains("ref/results.csv") && e.contains("u.nope.1.x"),
        "{e}"
    );
    // A folder without lab.csv (a run without [lab]).
    let nolab = folder(&base.join("nolab"), 0, 1.0, [1.0; 3], t);
    std::fs::remove_file(nolab.join("lab.csv")).unwrap();
    let e = fail(evaluate(&nolab, &reference, &[]));
    assert!(
        e.contains("nolab/lab.csv") && e.contains("no such file"),
        "{e}"
    );
    // A measured column missing from lab.csv.
    let nomeas = folder(&base.join("nomeas"), 0, 1.0, [1.0; 3], t);
    let text = std::fs::read_to_string(nomeas.join("lab.csv")).unwrap();
    std::fs::write(
        nomeas.join("lab.csv"),
        text.replacen("measured.a1", "other.a1", 1),
    )
    .unwrap();
    let e = fail(evaluate(&nomeas, &reference, &[]));
    assert!(
        e.contains("nomeas/lab.csv") && e.contains("measured.a1"),
        "{e}"
    );
    // A reference folder that does not exist.
    let e = fail(evaluate(&reference, &base.join("missing"), &[]));
    assert!(e.contains("missing/results.csv"), "{e}");
}
