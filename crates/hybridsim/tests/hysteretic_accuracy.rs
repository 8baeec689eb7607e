//! Second-order accuracy of hysteretic numerical substructures at the default settings
//! (issue 17): a Bouc-Wen SDOF and a six-storey bilinear (`mostaghel`, equal to OpenSees
//! `Steel01`) shear building, damped and undamped, under El Centro 1940 NS at Δt = 1 ms, against
//! an independent fine-step reference and OpenSees at the same step, both computed by
//! `scripts/accuracy/hysteretic_reference.py` (numpy; openseespy). The order is measured by
//! step halving (2, 1, 0.5, 0.25 ms).
//!
//! The references are written to `$HYBRIDSIM_ACCURACY_REFERENCE` when set (and reused), else
//! to a folder under the target directory. Without Python/numpy or the record the test skips
//! with a notice, except on CI (`CI` set), where it fails.

mod common;

use hybridsim::model::Model;
use std::path::{Path, PathBuf};
use std::process::Command;

const CASES: [&str; 3] = ["bouc_wen_sdof", "shear6_damped", "shear6_undamped"];
const DTS_US: [u64; 4] = [2000, 1000, 500, 250];

fn skip_or_fail(why: &str) -> Option<PathBuf> {
    if std::env::var_os("CI").is_some() {
        panic!("{why} (required on CI)");
    }
    eprintln!("skipped: {why}");
    None
}

/// The reference folder, computed once.
fn references() -> Option<PathBuf> {
    let dir = match std::env::var_os("HYBRIDSIM_ACCURACY_REFERENCE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_TARGET_TMPDIR")).join("hysteretic_accuracy"),
    };
    if dir.join("manifest.json").is_file() {
        return Some(dir);
    }
    let script = common::root().join("scripts/accuracy/hysteretic_reference.py");
    let status = Command::new("python3")
        .arg(&script)
        .arg("--out")
        .arg(&dir)
        .status();
    match status {
        Ok(s) if s.success() => Some(dir),
        Ok(s) => skip_or_fail(&format!("{} failed ({s})", script.display())),
        Err(e) => skip_or_fail(&format!("python3 not runnable: {e}")),
    }
}

fn read_csv(path: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .map(|l| l.split(',').skip(1).map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// Displacements of nodes 1..=n every `every` steps (row 0: the start).
fn run(dir: &Path, case: &str, dt_us: u64, edit: impl Fn(String) -> String) -> Vec<Vec<f64>> {
    let name = format!("{case}_dt{dt_us}.toml");
    let text = edit(std::fs::read_to_string(dir.join(&name)).unwrap());
    let model = Model::from_toml(&text, &name, &common::Folder(dir.to_path_buf()))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = hybridsim::Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let n_nodes = sim.integrator.partitions()[0].state.n_dofs();
    let every = (1000 / dt_us.min(1000)) as usize;
    let grab = |sim: &hybridsim::Simulation| -> Vec<f64> {
        (1..=n_nodes as i64)
            .map(|k| common::displacement_copies(sim.integrator.as_ref(), k, "x")[0])
            .collect()
    };
    let mut out = vec![grab(&sim)];
    let steps = sim.n_steps() as usize;
    for k in 1..=steps {
        sim.step().unwrap();
        if k % every == 0 || dt_us > 1000 {
            out.push(grab(&sim));
        }
    }
    out
}

/// Largest difference over the common samples (every `stride` rows of `b`) relative to the
/// peak of `b`, over all DOFs: `max |a − b| / max |b|`.
fn history_error(a: &[Vec<f64>], b: &[Vec<f64>], stride: usize) -> f64 {
    let mut num: f64 = 0.0;
    let mut den: f64 = 0.0;
    for (ra, rb) in a.iter().zip(b.iter().step_by(stride)) {
        for (x, y) in ra.iter().zip(rb) {
            num = num.max((x - y).abs());
            den = den.max(y.abs());
        }
    }
    num / den
}

/// Relative error of the peak displacement, the worst DOF: `max_i |peak a_i − peak b_i| / peak b_i`.
fn peak_error(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    let n = b[0].len();
    (0..n)
        .map(|i| {
            let pa = a.iter().map(|r| r[i].abs()).fold(0.0, f64::max);
            let pb = b.iter().map(|r| r[i].abs()).fold(0.0, f64::max);
            (pa - pb).abs() / pb
        })
        .fold(0.0, f64::max)
}

#[test]
fn hysteretic_substructures_are_second_order_at_default_settings() {
    let Some(dir) = references() else { return };
    let mut failures = Vec::new();
    for case in CASES {
        let reference = read_csv(&dir.join(format!("{case}_reference.csv")));
        let runs: Vec<Vec<Vec<f64>>> = DTS_US
            .iter()
            .map(|&dt| run(&dir, case, dt, |t| t))
            .collect();
        let at_1ms = &runs[1];
        let old = run(&dir, case, 1000, |t| {
            t.replace(
                "[analysis]",
                "[analysis]\nnonlinear_solver = \"corrections\"",
            )
        });
        let peak = peak_error(at_1ms, &reference);
        let hist = history_error(at_1ms, &reference, 1);
        let old_peak = peak_error(&old, &reference);
        // Self-convergence by halving: differences of successive runs on the 2 ms grid.
        let diffs: Vec<f64> = (0..3)
            .map(|i| {
                let coarse: Vec<Vec<f64>> = runs[i]
                    .iter()
                    .step_by(if i == 0 { 1 } else { 2 })
                    .cloned()
                    .collect();
                let fine: Vec<Vec<f64>> = runs[i + 1].iter().step_by(2).cloned().collect();
                history_error(&coarse, &fine, 1)
            })
            .collect();
        let slopes = common::slopes(&diffs);
        println!(
            "{case}: peak error {peak:.2e} (fixed single correction {old_peak:.2e}), history error {hist:.2e}, halving differences {diffs:?}, slopes {slopes:.3?}"
        );
        let bilinear = case.starts_with("shear6");
        // Bouc-Wen: within 1e-4 of the reference at 1 ms. The bilinear building: the converged
        // return-mapping step is the trapezoidal rule with exact yield/unloading events (equal
        // to OpenSees below), whose own period error at 1 ms over 10 s is 6e-4 (damped) and
        // 2.2e-3 (undamped) of the peak: at least ten times below the fixed single correction.
        let bound = if bilinear { 3e-3 } else { 1e-4 };
        if peak.is_nan() || peak > bound || peak > 0.1 * old_peak {
            failures.push(format!(
                "{case}: peak error {peak:.2e} (bound {bound:.0e}, old {old_peak:.2e})"
            ));
        }
        if bilinear {
            for s in &slopes {
                if (s - 2.0).abs() > 0.1 {
                    failures.push(format!("{case}: order {s:.3} not 2.0 ± 0.1"));
                }
            }
        } else {
            // Bouc-Wen (n = 1, a kink of the law at every velocity reversal): the slopes scatter
            // (2.83, 1.64); their mean over the three halvings must be second order.
            let mean = slopes.iter().sum::<f64>() / slopes.len() as f64;
            if mean.is_nan() || mean < 1.9 {
                failures.push(format!("{case}: mean order {mean:.3} < 1.9"));
            }
        }
        let os = dir.join(format!("{case}_opensees.csv"));
        if os.is_file() {
            let opensees = read_csv(&os);
            let e = peak_error(at_1ms, &opensees);
            println!("{case}: peak difference to OpenSees at 1 ms {e:.2e}");
            // Bilinear: the same algorithm as OpenSees's Newmark + Steel01, to round-off.
            let bound = if case.starts_with("shear6") {
                1e-9
            } else {
                1e-2
            };
            if e.is_nan() || e > bound {
                failures.push(format!(
                    "{case}: OpenSees peak difference {e:.2e} > {bound:.0e}"
                ));
            }
        } else {
            skip_or_fail(&format!("no OpenSees history {}", os.display()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
