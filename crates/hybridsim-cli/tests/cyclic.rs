//! End-to-end tests of `hybridsim cyclic`: imposed deformation histories on one element of a
//! model file, results folder contents, closed forms, and clear errors.

mod common;
use common::*;

use std::path::{Path, PathBuf};

#[test]
fn cyclic_sine_on_the_dcsb_matches_the_bilinear_loop() {
    let out = scratch("dcsb");
    let st = hybridsim()
        .args([
            "cyclic",
            "examples/mostaghel_dcsb.toml",
            "--element",
            "dcsb",
            "--amplitude",
            "0.05",
            "--frequency",
            "0.5",
            "--cycles",
            "2",
            "--dt",
            "0.0025",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&st.stdout);
    assert!(
        st.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(stdout.contains("completed 1600 driving steps"), "{stdout}");
    let (h, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(
        h,
        [
            "time[s]",
            "deformation.dcsb[m]",
            "velocity.dcsb[m/s]",
            "force.dcsb.1.x[kN]",
            "state.dcsb.r[kN]",
            "state.dcsb.e[kN*m]",
            "state.dcsb.absorbed_energy[kN*m]",
            "state.dcsb.dissipated[kN*m]"
        ]
    );
    assert_eq!(rows.len(), 1601);
    // The number format of every results file (hybridsim_io::csv): zero is `0.0` at rest.
    let text = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let first = text.lines().nth(1).unwrap();
    assert!(first.starts_with("0.0,0.0,"), "{first}");
    // Abbiati et al. (2020) D-CSB: k = 166000 kN/m, alpha = 0.0035, delta = 1 mm. The peak (sampled
    // exactly: 800 steps per cycle) is on the bilinear envelope.
    let (k, a, d, u) = (166000.0, 0.0035, 0.001, 0.05);
    let f = col(&h, "force.dcsb.1.x[kN]");
    let peak = rows.iter().map(|r| r[f]).fold(f64::MIN, f64::max);
    let envelope = a * k * u + (1.0 - a) * k * d;
    assert!(
        (peak - envelope).abs() < 1e-9 * envelope,
        "{peak} vs {envelope}"
    );
    // Energy of the second cycle: 4 (1 − α) k δ (U − δ).
    let e = col(&h, "state.dcsb.dissipated[kN*m]");
    let loop_energy = rows[1600][e] - rows[800][e];
    let exact = 4.0 * (1.0 - a) * k * d * (u - d);
    println!("cyclic D-CSB: loop energy {loop_energy:.6} kN·m, closed form {exact:.6} kN·m");
    assert!((loop_energy - exact).abs() < 1e-3 * exact);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["command"], "cyclic");
    assert_eq!(run["status"], "completed");
    assert_eq!(run["element"]["kind"], "mostaghel");
    assert_eq!(run["element"]["parameters"]["delta"], 0.001);
    assert_eq!(run["steps"], 1600);
    // The copy is the model file (read again at the end: its text is released once parsed).
    assert_eq!(
        std::fs::read(out.join("model.toml")).unwrap(),
        std::fs::read(common::root().join("examples/mostaghel_dcsb.toml")).unwrap()
    );
}

#[test]
fn cyclic_ramp_and_file_histories() {
    // Ramped cycles on the LRB: p grows to the final amplitude.
    let out = scratch("lrb");
    let st = hybridsim()
        .args([
            "cyclic",
            "examples/isolated_deck_lrb.toml",
            "--element",
            "lrb",
            "--history",
            "ramp",
            "--amplitude",
            "0.2",
            "--cycles",
            "4",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let (h, rows) = read_csv(&out.join("results.csv"));
    let p = col(&h, "state.lrb.p[m]");
    let d = col(&h, "deformation.lrb[m]");
    let mut peak = 0.0f64;
    for r in &rows {
        peak = peak.max(r[d].abs());
        assert!((r[p] - peak).abs() < 1e-12);
    }
    assert!(peak > 0.18);
    // A two-column file (with a header line and comments), resampled at --dt.
    let dir = scratch("file");
    let file = dir.join("history.txt");
    let mut text = String::from("# time deformation\ntime, deformation\n");
    for k in 0..=100 {
        let t = k as f64 * 0.01;
        text.push_str(&format!(
            "{t} {}\n",
            0.002 * (2.0 * std::f64::consts::PI * t).sin()
        ));
    }
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let st = hybridsim()
        .args([
            "cyclic",
            "examples/bouc_wen_pier.toml",
            "--element",
            "pier",
            "--history",
            "file",
            "--dt",
            "0.005",
            "--file",
        ])
        .arg(&file)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let (h, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(rows.len(), 201);
    // Small amplitude (2 mm ≪ 15.7 mm yield): nearly elastic, r ≈ A d at the first samples.
    let f = col(&h, "force.pier.1.x[N]");
    let d = col(&h, "deformation.pier[m]");
    let k = rows[1][f] / rows[1][d];
    assert!((k - 5.0e7).abs() < 0.01 * 5.0e7, "{k}");
}

#[test]
fn cyclic_reports_bad_input_clearly() {
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "examples/bouc_wen_pier.toml",
                "--element",
                "nope",
                "--amplitude",
                "0.01",
            ],
            "no element named `nope` (elements: pier, support)",
        ),
        (
            &["examples/bouc_wen_pier.toml", "--element", "pier"],
            "--amplitude is required",
        ),
        (
            &[
                "examples/bouc_wen_pier.toml",
                "--element",
                "pier",
                "--amplitude=-1",
            ],
            "--amplitude must be finite and > 0, found -1",
        ),
        (
            &[
                "examples/bouc_wen_pier.toml",
                "--element",
                "pier",
                "--history",
                "file",
            ],
            "--history file needs --file PATH",
        ),
        (
            &[
                "examples/bouc_wen_pier.toml",
                "--element",
                "pier",
                "--history",
                "file",
                "--file",
                "no/such/file.txt",
            ],
            "cannot read the history file no/such/file.txt",
        ),
    ];
    for (args, expected) in cases {
        let st = hybridsim().arg("cyclic").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: expected `{expected}` in {err}"
        );
    }
    // A bad line in a history file names the file and line.
    let dir = scratch("badfile");
    let file = dir.join("h.txt");
    std::fs::write(&file, "0 0\n0.1 0.001\n0.1 0.002\n").unwrap();
    let st = hybridsim()
        .args([
            "cyclic",
            "examples/bouc_wen_pier.toml",
            "--element",
            "pier",
            "--history",
            "file",
            "--file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(err.contains("line 3: time 0.1 does not increase"), "{err}");
}

/// A model with the D-CSB of `mostaghel_dcsb.toml` and two named `[[imposed_motion]]` entries.
fn dcsb_with_motions(dir: &Path) -> PathBuf {
    let text = r#"
title = "D-CSB driven by imposed motions"
[units]
length = "m"
force = "kN"
time = "s"
[[node]]
id = 1
dofs = ["x"]
[[element]]
type = "mass"
name = "deck"
node = 1
mass = 211.5
[[element]]
type = "mostaghel"
name = "dcsb"
nodes = [1]
dof = "x"
k = 166000.0
alpha = 0.0035
delta = 0.001
[[imposed_motion]]
name = "drive"
node = 1
dof = "x"
quantity = "displacement"
sine = { amplitude = 0.05, frequency = 0.5 }
[[imposed_motion]]
name = "table"
node = 1
dof = "x"
quantity = "displacement"
points = [[0.0, 0.0], [1.0, 0.02], [2.0, -0.02], [3.0, 0.0]]
[analysis]
integrator = "llm"
time_step = 0.01
duration = 1.0
"#;
    // The two entries drive the same DOF: keep one per file.
    let sine = text.replace(
        "[[imposed_motion]]\nname = \"table\"\nnode = 1\ndof = \"x\"\nquantity = \"displacement\"\npoints = [[0.0, 0.0], [1.0, 0.02], [2.0, -0.02], [3.0, 0.0]]\n",
        "",
    );
    std::fs::write(dir.join("sine.toml"), &sine).unwrap();
    let table = text.replace(
        "[[imposed_motion]]\nname = \"drive\"\nnode = 1\ndof = \"x\"\nquantity = \"displacement\"\nsine = { amplitude = 0.05, frequency = 0.5 }\n",
        "",
    );
    std::fs::write(dir.join("table.toml"), &table).unwrap();
    dir.join("sine.toml")
}

/// `--motion NAME` drives the element with a `[[imposed_motion]]` entry of the model file,
/// through the same history evaluator as the `--history` shorthands: a displacement sine entry
/// gives results bit-identical to `--amplitude 0.05 --frequency 0.5`.
#[test]
fn cyclic_motion_uses_the_model_files_imposed_motion() {
    let dir = scratch("motion");
    let model = dcsb_with_motions(&dir);
    let run = |extra: &[&str], out: &Path| {
        let st = hybridsim()
            .arg("cyclic")
            .arg(&model)
            .args(["--element", "dcsb", "--cycles", "2", "--dt", "0.0025"])
            .args(extra)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        read_csv(&out.join("results.csv"))
    };
    let (h1, by_motion) = run(&["--motion", "drive"], &dir.join("motion"));
    let (h2, by_flags) = run(
        &["--amplitude", "0.05", "--frequency", "0.5"],
        &dir.join("flags"),
    );
    assert_eq!(h1, h2);
    assert_eq!(by_motion.len(), 1601);
    assert_eq!(by_motion, by_flags);
    // Peak force on the bilinear envelope, as with the shorthand.
    let (k, a, d, u) = (166000.0, 0.0035, 0.001, 0.05);
    let f = col(&h1, "force.dcsb.1.x[kN]");
    let peak = by_motion.iter().map(|r| r[f]).fold(f64::MIN, f64::max);
    assert!((peak - (a * k * u + (1.0 - a) * k * d)).abs() < 1e-9 * peak);
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("motion/run.json")).unwrap())
            .unwrap();
    assert_eq!(run_json["imposed"]["history"]["motion"], "drive");
    assert_eq!(run_json["imposed"]["history"]["driven"][0]["dof"], "1.x");
    // A sampled entry: its natural spline through every sample, driven at --dt to its end.
    let out = dir.join("table-out");
    let st = hybridsim()
        .arg("cyclic")
        .arg(dir.join("table.toml"))
        .args([
            "--element",
            "dcsb",
            "--motion",
            "table",
            "--dt",
            "0.01",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let (h, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(rows.len(), 301);
    let (t, dd) = (col(&h, "time[s]"), col(&h, "deformation.dcsb[m]"));
    for (time, x) in [(1.0, 0.02), (2.0, -0.02), (3.0, 0.0)] {
        let r = rows.iter().find(|r| (r[t] - time).abs() < 1e-9).unwrap();
        assert!((r[dd] - x).abs() < 1e-12, "t = {time}: {}", r[dd]);
    }
    // Unknown names and conflicting flags are clear errors.
    let st = hybridsim()
        .arg("cyclic")
        .arg(&model)
        .args(["--element", "dcsb", "--motion", "nope"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no [[imposed_motion]] named `nope` (entries: drive)"),
        "{err}"
    );
    let st = hybridsim()
        .arg("cyclic")
        .arg(&model)
        .args([
            "--element",
            "dcsb",
            "--motion",
            "drive",
            "--amplitude",
            "0.1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(!st.status.success());
    assert!(err.contains("cannot be used with"), "{err}");
}

/// `run.json` of `hybridsim cyclic` records the element's choice of law (issue 17): the
/// lead-rubber bearing's `band` law with its lead stiffness at `p = p0` (and the constant
/// `lead_stiffness` when the model gives one), or `rigid`; no law for an element without a
/// choice.
#[test]
fn cyclic_run_json_records_the_lead_law() {
    let dir = scratch("lead_law");
    let text = std::fs::read_to_string(root().join("examples/isolated_deck_lrb.toml")).unwrap();
    let cyclic = |name: &str, model: &str, element: &str| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, model).unwrap();
        let out = dir.join(name);
        let st = hybridsim()
            .arg("cyclic")
            .arg(&path)
            .args([
                "--element",
                element,
                "--history",
                "ramp",
                "--amplitude",
                "0.05",
                "--cycles",
                "1",
                "-o",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        json(&out.join("run.json"))["element"]["law"].clone()
    };
    let band = cyclic("band", &text, "lrb");
    assert_eq!(band["name"], "band", "{band:#}");
    let k = band["k_lead_at_p0"].as_f64().unwrap();
    assert!((k / 1.428e9 - 1.0).abs() < 1e-9, "{band:#}");
    assert!(band["lead_stiffness"].is_null(), "{band:#}");
    assert!(
        band["summary"]
            .as_str()
            .unwrap()
            .contains("lead = \"band\""),
        "{band:#}"
    );
    let given = cyclic(
        "given",
        &text.replace("p0 = 1.0e-3\n", "p0 = 1.0e-3\nlead_stiffness = 2.0e9\n"),
        "lrb",
    );
    assert_eq!(given["name"], "band", "{given:#}");
    assert_eq!(given["lead_stiffness"].as_f64(), Some(2.0e9), "{given:#}");
    assert_eq!(given["k_lead_at_p0"].as_f64(), Some(2.0e9), "{given:#}");
    let rigid = cyclic(
        "rigid",
        &text.replace("p0 = 1.0e-3\n", "p0 = 1.0e-3\nlead = \"rigid\"\n"),
        "lrb",
    );
    assert_eq!(rigid["name"], "rigid", "{rigid:#}");
    assert!(rigid.get("k_lead_at_p0").is_none(), "{rigid:#}");
    let pier = std::fs::read_to_string(root().join("examples/bouc_wen_pier.toml")).unwrap();
    assert!(cyclic("pier", &pier, "pier").is_null());
    std::fs::remove_dir_all(&dir).unwrap();
}
