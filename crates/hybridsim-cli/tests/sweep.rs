//! End-to-end tests of `hybridsim sweep` (issue 19): one folder per variant, each equal to a
//! single `hybridsim run` of its model.toml bit for bit, a summary table, and clear errors.

mod common;
use common::*;

#[test]
fn sweep_variants_equal_single_runs_and_the_summary_lists_them() {
    let out = scratch("sweep");
    let st = hybridsim()
        .args([
            "sweep",
            "examples/quickstart.toml",
            "--set",
            "analysis.duration=0.2",
            "--set",
            "lab.seed=[3, 4]",
            "--set",
            "ground_motion.0.synthetic.pga=[\"high\"]",
            "--jobs",
            "2",
            "--quiet",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    // Every variant is validated before any runs: a string PGA is refused, naming it.
    assert!(!st.status.success());
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(
        err.contains("variant 0") && err.contains("ground_motion"),
        "{err}"
    );
    let st = hybridsim()
        .args([
            "sweep",
            "examples/quickstart.toml",
            "--set",
            "analysis.duration=0.2",
            "--set",
            "lab.seed=[3, 4]",
            "--set",
            "ground_motion.0.synthetic.pga=[0.1, 0.2]",
            "--jobs",
            "2",
            "--quiet",
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
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 5, "{summary}");
    assert!(lines[0].starts_with(
        "variant,folder,analysis.duration,lab.seed,ground_motion.0.synthetic.pga,status,steps"
    ));
    assert!(
        lines[2].starts_with("1,variant-0001,0.2,3,0.2,completed,40,"),
        "{}",
        lines[2]
    );
    for i in 0..4 {
        let folder = out.join(format!("variant-{i:04}"));
        let single = scratch(&format!("sweep-single-{i}"));
        let st = hybridsim()
            .arg("run")
            .arg(folder.join("model.toml"))
            .args(["--quiet", "-o"])
            .arg(&single)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        for file in ["results.csv", "lab.csv"] {
            assert_eq!(
                std::fs::read(folder.join(file)).unwrap(),
                std::fs::read(single.join(file)).unwrap(),
                "variant {i}: {file}"
            );
        }
        let _ = std::fs::remove_dir_all(&single);
    }
    // A second sweep into the same folder needs --overwrite.
    let st = hybridsim()
        .args([
            "sweep",
            "examples/quickstart.toml",
            "--set",
            "lab.seed=1",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(String::from_utf8_lossy(&st.stderr).contains("--overwrite"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_bad_key_names_the_file_and_the_field() {
    let out = scratch("sweep-bad");
    let st = hybridsim()
        .args([
            "sweep",
            "examples/quickstart.toml",
            "--set",
            "analysis.time_step=[-1.0]",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!st.status.success());
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(
        err.contains("quickstart.toml") && err.contains("analysis.time_step"),
        "{err}"
    );
    let st = hybridsim()
        .args([
            "sweep",
            "examples/quickstart.toml",
            "--set",
            "lab.seed",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(String::from_utf8_lossy(&st.stderr).contains("KEY=VALUES"));
    let _ = std::fs::remove_dir_all(&out);
}
