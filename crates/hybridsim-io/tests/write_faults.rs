//! Faults on the recording side of `run` (issue 10): a full disk on `results.csv` or on
//! `lab.csv` stops the test through the safety layer with every whole row written before on
//! disk, no partial row, and a run.json whose status, error and counts match the files; a
//! panic in the run loop trips the laboratory and ends the same way.

use hybridsim_io::{run_to_folder_with, RunOptions, RunStatus, Storage, WriterFactory};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hybridsim-io-write-faults-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A file that takes `budget` bytes, then refuses with ENOSPC (after a partial write, as a
/// file system does when the last blocks run out).
struct FullDisk {
    file: std::fs::File,
    budget: u64,
    written: u64,
}

impl Write for FullDisk {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let room = self.budget.saturating_sub(self.written);
        if room == 0 {
            return Err(io::Error::from_raw_os_error(ENOSPC));
        }
        let n = self.file.write(&b[..(room as usize).min(b.len())])?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Storage for FullDisk {
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.written = len;
        Storage::truncate(&mut self.file, len)
    }
}

/// `ENOSPC` on Linux: no space left on device.
const ENOSPC: i32 = 28;

/// Plain files, except `name`, which fills up after `budget` bytes.
fn full_disk_on(name: &'static str, budget: u64) -> WriterFactory {
    Arc::new(move |path: &Path| {
        let file = std::fs::File::create(path)?;
        if path.file_name().is_some_and(|f| f == name) {
            Ok(Box::new(FullDisk {
                file,
                budget,
                written: 0,
            }) as Box<dyn Storage>)
        } else {
            Ok(Box::new(file) as Box<dyn Storage>)
        }
    })
}

/// Whole rows of a CSV file (a partial last line fails).
fn whole_rows(path: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.ends_with('\n'),
        "{}: ends in a partial row",
        path.display()
    );
    let mut lines = text.lines();
    let width = lines.next().unwrap().split(',').count();
    lines
        .map(|l| {
            let r: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(r.len(), width, "{}: a partial row", path.display());
            r
        })
        .collect()
}

fn run_json(folder: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(folder.join("run.json")).unwrap()).unwrap()
}

fn quickstart() -> hybridsim_io::LoadedModel {
    hybridsim_io::load_model(&root().join("examples/quickstart.toml"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The common checks of a stop caused by the recording side.
fn check_stop(folder: &Path, report: &hybridsim_io::RunReport, kind: &str, text: &str) {
    let j = run_json(folder);
    println!(
        "{}: status {}, steps {}, rows {} (last step {}), lab rows {}, error {}",
        folder.display(),
        j["status"],
        j["steps_completed"],
        j["rows_on_disk"],
        j["last_step_on_disk"],
        j["lab_rows_on_disk"],
        j["error"]
    );
    assert!(
        matches!(report.status, RunStatus::Stopped { .. }),
        "{:?}",
        report.status
    );
    assert_eq!(j["status"], "stopped");
    assert_eq!(j["safety_event"]["kind"], kind);
    assert_eq!(j["safety"][0]["state"], "tripped");
    let error = j["error"].as_str().unwrap();
    assert!(error.contains(text), "{error}");
    let steps = j["steps_completed"].as_u64().unwrap();
    assert!(steps > 0 && steps < 4000, "{steps}");
    // The files hold whole rows only, exactly as many as run.json says.
    let rows = whole_rows(&folder.join("results.csv"));
    assert_eq!(rows.len() as u64, j["rows_on_disk"].as_u64().unwrap());
    assert_eq!(rows.len() as u64, j["rows_written"].as_u64().unwrap());
    assert_eq!(rows.len() as u64, report.rows);
    let lab = whole_rows(&folder.join("lab.csv"));
    assert_eq!(lab.len() as u64, j["lab_rows_on_disk"][0].as_u64().unwrap());
    assert_eq!(
        lab.len() as u64,
        j["lab"]["lab_rows_written"][0].as_u64().unwrap()
    );
    // The last step on disk is the last row's (every = 2: row k is step 2k).
    let last = j["last_step_on_disk"].as_u64().unwrap();
    // (every = 2: rows at steps 0, 2, 4, …, plus the row of the last completed step when
    // the stop fell between two of them.)
    assert_eq!(rows.len() as u64, 1 + last.div_ceil(2));
    assert!((rows.last().unwrap()[0] - last as f64 * 0.005).abs() < 1e-9);
}

/// A full disk on results.csv stops the test with whole rows only, as many as run.json says;
/// the same when each row's first columns are spelled on the stepping thread (issue 20,
/// `RunOptions::spelled_on_step`: 1, 3 or every column; `None` is the adaptive share).
#[test]
fn a_full_disk_on_results_csv_stops_the_test_with_whole_rows_and_a_truthful_run_json() {
    for first in [None, Some(1), Some(3), Some(usize::MAX)] {
        let folder = scratch(&format!("results-spelled-{first:?}"));
        let opts = RunOptions {
            writer: Some(full_disk_on("results.csv", 300_000)),
            spelled_on_step: first,
            ..RunOptions::default()
        };
        let report = run_to_folder_with(
            &quickstart(),
            &folder,
            &AtomicU64::new(0),
            &AtomicBool::new(false),
            &opts,
        )
        .unwrap();
        check_stop(&folder, &report, "writer_overflow", "os error 28");
        assert!(report.error.as_deref().unwrap().contains("results.csv"));
        let len = std::fs::metadata(folder.join("results.csv")).unwrap().len();
        assert!(len <= 300_000 && len > 200_000, "{len}");
    }
}

#[test]
fn a_full_disk_on_lab_csv_stops_the_test_with_whole_rows_and_a_truthful_run_json() {
    let folder = scratch("lab");
    let opts = RunOptions {
        writer: Some(full_disk_on("lab.csv", 500_000)),
        ..RunOptions::default()
    };
    let report = run_to_folder_with(
        &quickstart(),
        &folder,
        &AtomicU64::new(0),
        &AtomicBool::new(false),
        &opts,
    )
    .unwrap();
    check_stop(&folder, &report, "writer_overflow", "lab.csv");
    let len = std::fs::metadata(folder.join("lab.csv")).unwrap().len();
    assert!(len <= 500_000 && len > 400_000, "{len}");
}

#[test]
fn a_panic_in_the_run_loop_trips_the_lab_and_ends_with_a_truthful_run_json() {
    let folder = scratch("panic");
    let opts = RunOptions {
        panic_after_steps: Some(1001),
        ..RunOptions::default()
    };
    let report = run_to_folder_with(
        &quickstart(),
        &folder,
        &AtomicU64::new(0),
        &AtomicBool::new(false),
        &opts,
    )
    .unwrap();
    let j = run_json(&folder);
    assert!(
        matches!(report.status, RunStatus::Stopped { .. }),
        "{:?}",
        report.status
    );
    assert_eq!(j["status"], "stopped");
    assert_eq!(j["safety_event"]["kind"], "task_panic");
    assert_eq!(j["safety"][0]["state"], "tripped");
    assert_eq!(j["steps_completed"], 1001);
    let error = j["error"].as_str().unwrap();
    assert!(error.contains("injected panic after step 1001"), "{error}");
    let rows = whole_rows(&folder.join("results.csv"));
    assert_eq!(rows.len() as u64, j["rows_on_disk"].as_u64().unwrap());
    // Rows of steps 0, 2, …, 1000 (the panic came before step 1001's row).
    assert_eq!(rows.len(), 501);
    let lab = whole_rows(&folder.join("lab.csv"));
    assert_eq!(lab.len() as u64, j["lab_rows_on_disk"][0].as_u64().unwrap());
    // The rest row, one per tick of the 1001 steps (5 each), and the trip's own record(s).
    assert!(lab.len() > 5 * 1001, "{}", lab.len());
    // Column 6: `safety.storey1[-]` (time, wall time, desired, compensated, measured, force).
    let header = std::fs::read_to_string(folder.join("lab.csv")).unwrap();
    assert!(header.starts_with(
        "time[s],wall_time[s],desired.storey1[m],compensated.storey1[m],measured.storey1[m],force.storey1[kN],safety.storey1[-],"
    ));
    assert_eq!(lab.last().unwrap()[6], 1.0, "tripped in lab.csv");
}

/// The same panic with `on_trip = "ramp_down"`: after the trip the laboratory ramps down to
/// rest, one command per controller tick within the ramp rate (before, it was tripped and
/// left where it was, as with `hold`).
#[test]
fn a_panic_in_the_run_loop_ramps_the_lab_down_when_so_configured() {
    let folder = scratch("panic_ramp");
    let mut loaded = quickstart();
    let rate = 0.05;
    loaded.model.lab.as_mut().unwrap().safety.on_trip =
        hybridsim::model::lab::TripAction::RampDown { rate };
    let opts = RunOptions {
        panic_after_steps: Some(1001),
        ..RunOptions::default()
    };
    let report = run_to_folder_with(
        &loaded,
        &folder,
        &AtomicU64::new(0),
        &AtomicBool::new(false),
        &opts,
    )
    .unwrap();
    assert!(
        matches!(report.status, RunStatus::Stopped { .. }),
        "{:?}",
        report.status
    );
    let j = run_json(&folder);
    assert_eq!(j["safety_event"]["kind"], "task_panic");
    assert_eq!(j["safety"][0]["ramp_down"], "completed", "{j}");
    let lab = whole_rows(&folder.join("lab.csv"));
    assert_eq!(lab.len() as u64, j["lab_rows_on_disk"][0].as_u64().unwrap());
    // Column 3: `compensated.storey1[m]`, column 6: `safety.storey1[-]`.
    let first = lab.iter().position(|r| r[6] != 0.0).expect("a tripped row");
    let dt_c = 0.001; // the quick start's controller tick
    for w in lab[first + 1..].windows(2) {
        assert!((w[1][3] - w[0][3]).abs() <= rate * dt_c * (1.0 + 1e-9) + 1e-15);
    }
    assert!(lab.last().unwrap()[3].abs() < 1e-9, "not at rest");
    assert!(lab.len() > first + 1, "no ramp command after the trip");
}

#[test]
fn a_panicking_transfer_system_trips_the_lab_and_ends_with_a_truthful_run_json() {
    let folder = scratch("lab_panic");
    let mut loaded = quickstart();
    let lab = loaded.model.lab.as_mut().unwrap();
    lab.lab.faults.push(hybridsim::model::lab::InjectedFault {
        actuator: "storey1".into(),
        at: 1.0,
        kind: hybridsim::model::lab::InjectedFaultKind::Panic,
    });
    let report = run_to_folder_with(
        &loaded,
        &folder,
        &AtomicU64::new(0),
        &AtomicBool::new(false),
        &RunOptions::default(),
    )
    .unwrap();
    let j = run_json(&folder);
    assert!(
        matches!(report.status, RunStatus::Stopped { .. }),
        "{:?}",
        report.status
    );
    assert_eq!(j["status"], "stopped");
    // The safety layer catches a panic inside the transfer system: a transfer fault (a panic
    // elsewhere in the step is a `task_panic`, tested above).
    assert_eq!(j["safety_event"]["kind"], "transfer_fault");
    let steps = j["steps_completed"].as_u64().unwrap();
    assert!((190..=200).contains(&steps), "{steps}");
    let rows = whole_rows(&folder.join("results.csv"));
    assert_eq!(rows.len() as u64, j["rows_on_disk"].as_u64().unwrap());
}
