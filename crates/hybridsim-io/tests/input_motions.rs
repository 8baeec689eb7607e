//! Issue 18: a results folder keeps the inputs that drove the run: the ground motion as
//! applied (after scaling, in model units) in `ground_motion.<direction>.csv`, the record file's
//! SHA-256 and scale in run.json, and the model's plausibility warnings.

use hybridsim_io::{load_model, run_to_folder};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, AtomicU64};

#[test]
fn the_results_folder_holds_the_applied_ground_motion_and_the_record_hash() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-io-inputs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A two-column record in g: 2 s at 0.01 s, peak 0.5 g.
    let record: String = (0..=200)
        .map(|k| format!("{} {}\n", k as f64 * 0.01, 0.5 * (k as f64 * 0.2).sin()))
        .collect();
    std::fs::write(dir.join("motion.txt"), &record).unwrap();
    std::fs::write(
        dir.join("model.toml"),
        r#"
[units]
length = "m"
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
[[ground_motion]]
direction = "x"
record = "motion.txt"
record_units = "g"
scale = 2.0
[analysis]
integrator = "mg-alpha"
time_step = 0.01
duration = 3.0
"#,
    )
    .unwrap();
    let loaded = load_model(&dir.join("model.toml")).unwrap();
    // 3 s of run on a 2 s record: one warning, recorded in run.json.
    assert_eq!(
        loaded.model.warnings.len(),
        1,
        "{:?}",
        loaded.model.warnings
    );
    let out = dir.join("out");
    run_to_folder(&loaded, &out, &AtomicU64::new(0), &AtomicBool::new(false)).unwrap();
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let gm = &run["ground_motions"][0];
    let hash: String = Sha256::digest(record.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(gm["record"]["sha256"], hash.as_str(), "{gm}");
    assert_eq!(gm["record"]["path"], "motion.txt");
    assert!(
        (gm["record"]["scale"].as_f64().unwrap() - 2.0).abs() < 1e-12,
        "{gm}"
    );
    // Peak of the sampled sine (0.2 rad apart: within 1e-4 of its crest), × 2.
    assert!((gm["pga_g"].as_f64().unwrap() - 1.0).abs() < 1e-4, "{gm}");
    assert_eq!(gm["file"], "ground_motion.x.csv");
    assert_eq!(run["warnings"].as_array().unwrap().len(), 1);
    assert!(run["warnings"][0]
        .as_str()
        .unwrap()
        .contains("analysis.duration"));
    // The applied history: the record × 2 × g, at the record's samples.
    let csv = std::fs::read_to_string(out.join("ground_motion.x.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), "time[s],a_g.x[m/s^2]");
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let mut it = l.split(',').map(|x| x.parse::<f64>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 201);
    for (k, (t, a)) in rows.iter().enumerate() {
        let want = 2.0 * 9.80665 * 0.5 * (k as f64 * 0.2).sin();
        assert!((t - k as f64 * 0.01).abs() < 1e-12);
        assert!((a - want).abs() < 1e-9 * 9.81, "row {k}: {a} vs {want}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
