//! End-to-end tests of the `hybridsim` command.

mod common;
use common::*;

#[test]
fn help_lists_examples() {
    let out = hybridsim().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("hybridsim run examples/quickstart.toml"),
        "{text}"
    );
    assert!(text.contains("check"));
}

#[test]
fn quickstart_runs_and_writes_a_results_folder() {
    let out_dir = scratch("quickstart");
    let out = hybridsim()
        .args(["run", "examples/quickstart.toml", "--quiet", "-o"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (header, rows) = read_csv(&out_dir.join("results.csv"));
    assert_eq!(header[0], "time[s]");
    assert!(header.iter().any(|h| h == "u.frame.3.x[m]"));
    assert!(header.iter().any(|h| h == "lambda.1.x[kN]"));
    assert!(header.iter().any(|h| h == "measured.first_storey.1.x[kN]"));
    assert_eq!(rows.len(), 2001);
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "completed");
    assert_eq!(json["steps_completed"], 4000);
    assert_eq!(json["random_seeds"][0]["seed"], 2026);
    assert_eq!(json["model"]["sha256"].as_str().unwrap().len(), 64);
    // The same inputs give the same bits.
    let again = scratch("quickstart-again");
    let out = hybridsim()
        .args(["run", "examples/quickstart.toml", "--quiet", "-o"])
        .arg(&again)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(out_dir.join("results.csv")).unwrap(),
        std::fs::read(again.join("results.csv")).unwrap()
    );
}

#[test]
fn real_record_earthquake_end_to_end() {
    let Some(records) = ground_motions() else {
        return;
    };
    let dir = scratch("elcentro");
    // Point the example at the record folder found (it may differ from the default path).
    let text = std::fs::read_to_string(root().join("examples/earthquake_elcentro.toml")).unwrap();
    let record = records.join("ElCentro1940_NS_PEER_IELC180.AT2");
    let text = text.replace(
        "../../shared/data/ground-motions/ElCentro1940_NS_PEER_IELC180.AT2",
        &record.display().to_string(),
    );
    let model = dir.join("elcentro.toml");
    std::fs::write(&model, text).unwrap();
    let out = hybridsim().arg("check").arg(&model).output().unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(summary.contains("PGA 0.3000 g"), "{summary}");
    assert!(summary.contains("period"));
    let out = hybridsim()
        .args(["run", "--quiet"])
        .arg(&model)
        .arg("-o")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (header, rows) = read_csv(&dir.join("out/results.csv"));
    assert_eq!(rows.len(), 8001);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let deck = col("u.isolator.2.x[m]");
    let gap = col("gap_u.1.x[m]");
    let peak = rows.iter().map(|r| r[deck].abs()).fold(0.0, f64::max);
    let max_gap = rows.iter().map(|r| r[gap].abs()).fold(0.0, f64::max);
    println!("El Centro at 0.30 g: peak deck displacement {peak:.4} m, max interface gap {max_gap:.2e} m");
    // An isolated deck (T ≈ 3.8 s) moves centimetres to decimetres, never metres.
    assert!(peak > 0.01 && peak < 1.0, "{peak}");
    // Velocity-level coupling lets the two displacement copies drift apart only slightly.
    assert!(max_gap < 1e-3 * peak, "{max_gap}");
}

#[test]
fn a_run_that_fails_part_way_keeps_the_completed_steps() {
    // An estimated specimen stiffness of half the true one makes PG-α unstable
    // (spectral radius ≈ 1.024 at Ω = 1, ss = 1, ρ∞ = 1): the response grows until it is no
    // longer finite, and the run must stop cleanly with every completed step on disk.
    let dir = scratch("diverge");
    let text = std::fs::read_to_string(root().join("examples/split_mass_v1.toml"))
        .unwrap()
        .replace("stiffness = [[4.0e5]]", "stiffness = [[2.0e5]]")
        .replace("time_step = 1.0e-3", "time_step = 0.08")
        .replace("subcycles = 10", "subcycles = 1")
        .replace("duration = 2.0", "duration = 8000.0")
        .replace("rho_inf = 0.9", "rho_inf = 1.0");
    let model = dir.join("diverging.toml");
    std::fs::write(&model, text).unwrap();
    let out = hybridsim()
        .args(["run", "--quiet"])
        .arg(&model)
        .arg("-o")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the run failed after"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "failed");
    assert!(json["error"].as_str().unwrap().contains("non-finite"));
    let steps = json["steps_completed"].as_u64().unwrap();
    assert!(steps > 10 && steps < 100_000, "{steps}");
    let (_, rows) = read_csv(&dir.join("out/results.csv"));
    // Row 0 is the initial state; one row per completed step after it.
    assert_eq!(rows.len() as u64, steps + 1);
    // The completed steps are intact (energies may overflow to infinity just before the end).
    assert!(rows.iter().all(|r| r.iter().all(|x| !x.is_nan())));
    let last_time = rows.last().unwrap()[0];
    assert!((last_time - steps as f64 * 0.08).abs() < 1e-6 * last_time);
}

#[test]
fn bad_model_files_give_clear_errors() {
    let dir = scratch("bad");
    let model = dir.join("bad.toml");
    std::fs::write(
        &model,
        "[[node]]\nid = 1\ndofs = [\"x\"]\n[[element]]\ntype = \"spring\"\nnodes = [7]\ndof = \"x\"\nk = 1.0\n",
    )
    .unwrap();
    let out = hybridsim().arg("check").arg(&model).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("bad.toml: element[0].nodes: unknown node 7"),
        "{stderr}"
    );
    assert!(stderr.contains("analysis"), "{stderr}");
    let out = hybridsim()
        .args(["run", "no/such/model.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such model file"));
}
