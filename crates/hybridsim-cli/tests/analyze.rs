//! End-to-end tests of `hybridsim analyze spectral|convergence|energy`.

mod common;
use common::*;

fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().to_string())
        .collect()
}

#[test]
fn spectral_writes_csv_summary_and_plots() {
    let out = scratch("spectral");
    let o = hybridsim()
        .args([
            "analyze",
            "spectral",
            "examples/split_mass_v1.toml",
            "--points",
            "9",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("stable") && text.contains("drift modes 1"),
        "{text}"
    );
    for f in [
        "spectral.csv",
        "eigenvalues.csv",
        "summary.json",
        "spectral.png",
        "spectral.svg",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    let csv = std::fs::read_to_string(out.join("spectral.csv")).unwrap();
    let rho: Vec<f64> = column(&csv, "rho")
        .iter()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(rho.len(), 9);
    assert!(rho.iter().all(|r| *r <= 1.0 + 1e-10));
    let s = json(&out.join("summary.json"));
    assert_eq!(s["scheme"], "pg-alpha");
    assert_eq!(s["state_length"], 19);
    assert_eq!(s["drift_modes"], 1);
    assert_eq!(s["stable"], true);
    let eig = std::fs::read_to_string(out.join("eigenvalues.csv")).unwrap();
    assert_eq!(eig.lines().count(), 1 + 9 * 19);
    assert!(eig.contains(",drift"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn half_estimate_is_reported_unstable() {
    let out = scratch("half");
    let o = hybridsim()
        .args([
            "analyze",
            "spectral",
            "examples/split_mass_v1.toml",
            "--estimate-ratio",
            "0.5",
            "--rho-inf",
            "1",
            "--subcycles",
            "1",
            "--mode",
            "2",
            "--omega-min",
            "1",
            "--omega-max",
            "1",
            "--points",
            "1",
            "--format",
            "none",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("UNSTABLE"), "{text}");
    let s = json(&out.join("summary.json"));
    let rho = s["max_rho"].as_f64().unwrap();
    assert!((rho - 1.0243).abs() < 1e-4, "ρ = {rho}");
    assert_eq!(s["stable"], false);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn convergence_and_energy() {
    let out = scratch("convergence");
    let o = hybridsim()
        .args([
            "analyze",
            "convergence",
            "examples/split_mass_v1.toml",
            "--dt",
            "1e-3",
            "--levels",
            "4",
            "--until",
            "0.01",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json(&out.join("summary.json"));
    let slopes: Vec<f64> = s["slopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!((slopes.last().unwrap() - 2.0).abs() < 0.05, "{slopes:?}");
    assert!(out.join("convergence.png").is_file() && out.join("convergence.csv").is_file());
    let _ = std::fs::remove_dir_all(&out);

    let out = scratch("energy");
    let o = hybridsim()
        .args([
            "analyze",
            "energy",
            "examples/split_mass_v2.toml",
            "--rho-inf",
            "1",
            "--subcycles",
            "1",
            "--duration",
            "1",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json(&out.join("summary.json"));
    assert!(s["max_relative_drift"].as_f64().unwrap() < 1e-11);
    let csv = std::fs::read_to_string(out.join("energy.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 1001);
    assert!(out.join("energy.svg").is_file());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_inputs_get_clear_errors() {
    let out = scratch("bad");
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "analyze",
                "spectral",
                "examples/split_mass_v1.toml",
                "--estimate-ratio=-1",
            ],
            "estimate_ratio",
        ),
        (
            &[
                "analyze",
                "spectral",
                "examples/split_mass_v1.toml",
                "--rho-inf",
                "2",
            ],
            "--rho-inf",
        ),
        (
            &[
                "analyze",
                "spectral",
                "examples/split_mass_v1.toml",
                "--mode",
                "7",
            ],
            "mode 7 does not exist",
        ),
        (
            &[
                "analyze",
                "convergence",
                "examples/split_mass_v1.toml",
                "--until",
                "0.0105",
            ],
            "not a whole multiple",
        ),
    ];
    for (args, needle) in cases {
        let o = hybridsim().args(args).arg("-o").arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(
            err.contains(needle) && err.contains("split_mass_v1.toml"),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn delay_prints_the_critical_delay_and_writes_the_sweep() {
    let out = scratch("delay");
    let o = hybridsim()
        .args([
            "analyze",
            "delay",
            "examples/rths_explicit_frame.toml",
            "--max-delay",
            "0.0125",
            "--points-per-sample",
            "2",
            "--format",
            "none",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("critical actuator delay: 1.0485") && text.contains("10.737 samples"),
        "{text}"
    );
    let s = json(&out.join("summary.json"));
    assert_eq!(s["scheme"], "explicit-rths");
    assert_eq!(s["force_delay"], 1);
    let c = s["critical_delay_samples"].as_f64().unwrap();
    assert!((c - 10.737).abs() < 1e-3, "{c}");
    let csv = std::fs::read_to_string(out.join("delay.csv")).unwrap();
    let rho: Vec<f64> = column(&csv, "spectral_radius")
        .iter()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(rho.len(), 27);
    assert!(rho[0] < 1.0 && *rho.last().unwrap() > 1.0, "{rho:?}");
    // A model with another scheme is refused, naming the field.
    let o = hybridsim()
        .args([
            "analyze",
            "delay",
            "examples/quickstart.toml",
            "--format",
            "none",
            "-o",
        ])
        .arg(out.join("refused"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("lab.actuator[0]"), "{err}");
}
