//! Second-order accuracy of hysteretic numerical substructures at the default settings
//! (issue 17): a Bouc-Wen SDOF and a six-storey bilinear (`mostaghel`, equal to OpenSees
//! `Steel01`) shear building, damped and undamped, under El Centro 1940 NS at Δt = 1 ms, against
//! an independent fine-step reference and OpenSees at the same step, both computed by
//! `scripts/accuracy/hysteretic_reference.py` (numpy, scipy; openseespy). The order is
//! measured by step halving (2, 1, 0.5, 0.25 ms), and for Bouc-Wen also against the
//! reference (an adaptive DOP853 solution). The second test answers whether the bilinear
//! building's 1e-4 target is reachable at 1 ms with the trapezoidal rule (it is not: the same
//! building with elastic storeys errs by more, against its exact solution).
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
/// The elastic twins of the six-storey building, against their exact solution.
const ELASTIC_CASES: [&str; 2] = ["shear6_elastic_damped", "shear6_elastic_undamped"];

fn skip_or_fail(why: &str) -> Option<PathBuf> {
    if std::env::var_os("CI").is_some() {
        panic!("{why} (required on CI)");
    }
    eprintln!("skipped: {why}");
    None
}

/// The reference folder, computed once for the whole test binary: its tests run in parallel,
/// and a test that found the folder incomplete while another's run of the script was still
/// writing it would read a half-written reference (seen on a CI run whose target folder had no
/// references yet: an error of 0.35 of the peak at every step size).
fn references() -> Option<PathBuf> {
    static REFERENCES: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    REFERENCES.get_or_init(compute_references).clone()
}

/// The reference folder: reused when complete, else written by the script.
fn compute_references() -> Option<PathBuf> {
    let dir = match std::env::var_os("HYBRIDSIM_ACCURACY_REFERENCE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_TARGET_TMPDIR")).join("hysteretic_accuracy"),
    };
    let complete = dir.join("manifest.json").is_file()
        && CASES
            .iter()
            .chain(&ELASTIC_CASES)
            .all(|c| dir.join(format!("{c}_reference.csv")).is_file());
    if complete {
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
            // Bouc-Wen: the law is integrated along each step's straight deformation path, so
            // the kink at velocity reversals lies at the ends of steps; the order by step
            // halving against the adaptive (DOP853) reference is 2.0 ± 0.1 at every halving.
            let errors: Vec<f64> = DTS_US
                .iter()
                .zip(&runs)
                .map(|(&dt, r)| history_error(r, &on_grid(&reference, dt), 1))
                .collect();
            let against = common::slopes(&errors);
            println!("{case}: history errors vs reference at 2, 1, 0.5, 0.25 ms {errors:?}, slopes {against:.3?}");
            for s in slopes.iter().chain(&against) {
                if (s - 2.0).abs() > 0.1 {
                    failures.push(format!("{case}: order {s:.3} not 2.0 ± 0.1"));
                }
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

/// The reference rows on the grid of a run at `dt_us` (every 1 ms, or every 2 ms at 2 ms).
fn on_grid(reference: &[Vec<f64>], dt_us: u64) -> Vec<Vec<f64>> {
    let stride = if dt_us > 1000 { 2 } else { 1 };
    reference.iter().step_by(stride).cloned().collect()
}

/// Peak of each DOF's absolute value.
fn peaks(a: &[Vec<f64>]) -> Vec<f64> {
    (0..a[0].len())
        .map(|i| a.iter().map(|r| r[i].abs()).fold(0.0, f64::max))
        .collect()
}

/// Item 1 of issue 17: is the 1e-4 peak-error target reachable at Δt = 1 ms for the bilinear
/// building? The trapezoidal rule (MG-α with ρ∞ = 1, equal to OpenSees's Newmark average
/// acceleration) on the same building with elastic storeys, against its exact solution (matrix
/// exponential, exact to round-off), already errs by more than 1e-4 of the peak at 1 ms, and is
/// cleanly second order. On the bilinear building the error against the fine-step reference
/// equals the estimate from hybridsim's own 1 ms and 0.5 ms runs (Richardson, `4/3` of their
/// difference), so the reference is not what is wrong: the remaining error is the rule's own,
/// a few times the elastic building's. The target 1e-4 needs Δt ≈ 0.4 ms (damped) or 0.2 ms
/// (undamped) with this rule.
#[test]
fn the_trapezoidal_rule_alone_exceeds_1e_4_on_the_six_storey_building_at_1ms() {
    let Some(dir) = references() else { return };
    let mut failures = Vec::new();
    let mut elastic_at_1ms = Vec::new();
    for case in ELASTIC_CASES {
        let exact = read_csv(&dir.join(format!("{case}_reference.csv")));
        let errors: Vec<f64> = DTS_US
            .iter()
            .map(|&dt| peak_error(&run(&dir, case, dt, |t| t), &on_grid(&exact, dt)))
            .collect();
        let slopes = common::slopes(&errors);
        println!(
            "{case}: peak errors vs exact at 2, 1, 0.5, 0.25 ms {errors:?}, slopes {slopes:.3?}"
        );
        if errors[1].is_nan() || errors[1] <= 1e-4 {
            failures.push(format!(
                "{case}: the trapezoidal error at 1 ms {:.2e} is not above 1e-4",
                errors[1]
            ));
        }
        for s in &slopes {
            if (s - 2.0).abs() > 0.1 {
                failures.push(format!(
                    "{case}: order {s:.3} against the exact solution not 2.0 ± 0.1"
                ));
            }
        }
        elastic_at_1ms.push(errors[1]);
    }
    for (case, elastic) in ["shear6_damped", "shear6_undamped"]
        .iter()
        .zip(&elastic_at_1ms)
    {
        let reference = read_csv(&dir.join(format!("{case}_reference.csv")));
        let at_1ms = run(&dir, case, 1000, |t| t);
        let at_half: Vec<Vec<f64>> = run(&dir, case, 500, |t| t);
        let error = peak_error(&at_1ms, &reference);
        // Richardson from hybridsim alone: per DOF, (4/3)(peak at 1 ms − peak at 0.5 ms) / peak.
        let (p1, ph, pr) = (peaks(&at_1ms), peaks(&at_half), peaks(&reference));
        let estimate = (0..pr.len())
            .map(|i| (4.0 / 3.0 * (p1[i] - ph[i])).abs() / pr[i])
            .fold(0.0, f64::max);
        let ratio = error / elastic;
        println!(
            "{case}: peak error vs reference {error:.3e}, self-convergence estimate {estimate:.3e}, ratio to the elastic building's {ratio:.2}"
        );
        if error.is_nan() || estimate.is_nan() || (error - estimate).abs() > 0.1 * error {
            failures.push(format!(
                "{case}: error vs reference {error:.2e} differs from the self-convergence estimate {estimate:.2e} by more than 10 %"
            ));
        }
        if !(1.0..=10.0).contains(&ratio) {
            failures.push(format!(
                "{case}: ratio {ratio:.2} to the elastic building's error outside [1, 10]"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
