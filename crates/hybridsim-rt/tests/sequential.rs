//! The paced single-step runner (`hybridsim_rt::run_sequential`, the real-time runner of every
//! lab-driving scheme but PG-α), on the explicit RTHS loop: bit-identical to the core's one run
//! loop on one thread (as `hybridsim run`), no allocation in the step thread, and every fault
//! — a port fault, a NaN force, a panic, a stalled step, an abort, a failed writer — ends in
//! the trip policy (hold or paced ramp-down) with every completed step kept and a run.json
//! that says what happened.

use hybridsim::integrators::{explicit_rths_partitions, ExplicitRths, StepSettings};
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::physical::{EventKind, PortError};
use hybridsim::runner::{self, EndState, RunSettings, RunSink, Sequential};
use hybridsim::Model;
use hybridsim_rt::{run, run_sequential, RunOptions, RunStatus};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::counting::{mark, LOOP_ALLOCATIONS};

/// The explicit RTHS frame (1024 Hz, 5 ms actuator delay) with `extra` appended and `every`
/// set.
fn frame(extra: &str, every: u64) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/rths_explicit_frame.toml")).unwrap()
        + &format!("\n[output]\nevery = {every}\n")
        + extra;
    Model::from_toml(&text, "rths_explicit_frame.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hybridsim-seq-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What goes wrong at command `at` of the specimen.
#[derive(Clone, Copy, Debug)]
enum Injection {
    PortFault,
    NanForce,
    Panic,
    /// The operator's abort flag is raised at that tick.
    Abort,
}

/// The explicit loop of `model`, with `injection` at command `at` of its port.
fn integrator(
    model: &Model,
    injection: Option<(Injection, u64)>,
    abort: Arc<AtomicBool>,
) -> Box<ExplicitRths> {
    let (numerical, mut physical) = explicit_rths_partitions(model, None).unwrap();
    if let Some((what, at)) = injection {
        for p in physical.iter_mut() {
            if let Some(port) = p.physical.as_mut() {
                let mut ticks = 0u64;
                let abort = abort.clone();
                port.intercept(Box::new(move |inner, tick, u, v, f| {
                    ticks += 1;
                    if ticks == at {
                        match what {
                            Injection::PortFault => {
                                return Err(PortError::Fault("injected port fault".into()))
                            }
                            Injection::Panic => panic!("injected panic in the step"),
                            Injection::Abort => abort.store(true, Ordering::SeqCst),
                            Injection::NanForce => {}
                        }
                    }
                    let r = inner.command(tick, u, v, f);
                    if ticks == at {
                        if let Injection::NanForce = what {
                            f.iter_mut().for_each(|x| *x = f64::NAN);
                        }
                    }
                    r
                }));
            }
        }
    }
    let settings = StepSettings::from_analysis(&model.analysis);
    Box::new(ExplicitRths::new(numerical, physical, &settings, model.analysis.force_delay).unwrap())
}

#[derive(Default)]
struct Rows(Vec<Vec<f64>>, u64);

impl RunSink for Rows {
    fn row(&mut self, row: &[f64]) -> bool {
        self.0.push(row.to_vec());
        true
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) -> bool {
        self.1 += 1;
        true
    }
}

/// The core's one run loop on the calling thread (what `hybridsim run` does).
fn reference(
    model: &Model,
    injection: Option<(Injection, u64)>,
    n_steps: u64,
) -> (EndState, u64, Vec<Vec<f64>>, u64) {
    let abort = Arc::new(AtomicBool::new(false));
    let mut integ = integrator(model, injection, abort.clone());
    let mut recorder = Recorder::new(model, integ.as_ref());
    let mut row = vec![0.0; recorder.n_columns()];
    let mut rows = Rows::default();
    let lab = model.lab.as_ref().unwrap();
    let settings = RunSettings {
        n_steps,
        every: model.output.every,
        divergence: Some(lab.safety.divergence),
        max_overruns: None,
    };
    let end = runner::run(
        &mut Sequential(integ.as_mut()),
        &mut recorder,
        &mut rows,
        &settings,
        &abort,
        &mut row,
    );
    (end.state, end.steps, rows.0, rows.1)
}

fn bits(rows: &[Vec<f64>]) -> Vec<Vec<u64>> {
    rows.iter()
        .map(|r| r.iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn fast_pacing_is_bit_identical_to_the_core_loop_on_one_thread() {
    for every in [1, 7] {
        let model = frame("", every);
        let n = model.analysis.n_steps();
        let (state, steps, rows, lab_rows) = reference(&model, None, n);
        assert_eq!(state, EndState::Completed);
        let out = run(
            &model,
            &RunOptions {
                pacing: Some(Pacing::Fast),
                keep_rows: true,
                ..Default::default()
            },
        )
        .unwrap();
        println!(
            "every {every}: {} steps, {} rows, {} lab rows; {}",
            out.steps,
            out.rows.len(),
            out.lab_rows,
            out.tasks[0].line()
        );
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(out.steps, steps);
        assert_eq!(out.rows_written, rows.len() as u64);
        assert_eq!(out.lab_rows, lab_rows);
        assert!(bits(&out.rows) == bits(&rows), "every {every}: rows differ");
        assert_eq!(out.run_json["integrator"], "explicit-rths");
        assert_eq!(out.run_json["status"], "completed");
        assert_eq!(out.run_json["spin_budget_us"], 50.0);
    }
}

#[test]
fn the_step_thread_does_not_allocate_also_through_a_watchdog_stop() {
    let model = frame("", 1);
    assert!(model.analysis.n_steps() >= 5000);
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            loop_marker: Some(mark),
            ..Default::default()
        },
    )
    .unwrap();
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    println!("{} steps: {n} allocations in the step thread", out.steps);
    assert_eq!(out.status, RunStatus::Completed);
    assert!(out.steps >= 5000);
    assert_eq!(n, 0);

    // A stalled step that comes back: the watchdog's stop, the trip and the paced ramp-down
    // on the step thread allocate nothing either.
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            loop_marker: Some(mark),
            max_steps: Some(400),
            watchdog: Some(Duration::from_millis(200)),
            inject: Some("physical:stall=0.3:200".parse().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    println!("watchdog stop after {} steps: {n} allocations", out.steps);
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::Watchdog);
    assert_eq!(out.steps, 200);
    assert_eq!(n, 0);
}

/// Faults inside the step end the paced runner exactly as the core loop on one thread: the
/// same event, the same completed steps, the same rows, bit for bit.
#[test]
fn faults_in_the_step_end_the_paced_runner_as_the_core_loop() {
    let at = 300;
    for (what, kind) in [
        (Injection::PortFault, EventKind::TransferFault),
        (Injection::NanForce, EventKind::Divergence),
        (Injection::Abort, EventKind::OperatorAbort),
    ] {
        let model = frame("", 3);
        let n_steps = 1000;
        let (state, steps, rows, _) = reference(&model, Some((what, at)), n_steps);
        let abort = Arc::new(AtomicBool::new(false));
        let dir = scratch(&format!("{what:?}"));
        let out = run_sequential(
            &model,
            integrator(&model, Some((what, at)), abort.clone()),
            &RunOptions {
                pacing: Some(Pacing::Fast),
                keep_rows: true,
                max_steps: Some(n_steps),
                folder: Some(dir.clone()),
                abort,
                ..Default::default()
            },
        )
        .unwrap();
        println!(
            "{what:?}: core loop {} after {steps} steps ({:?}); paced {:?} after {} steps",
            state.status(),
            state.event().map(|e| e.kind),
            out.status,
            out.steps
        );
        let event = state
            .event()
            .unwrap_or_else(|| panic!("{what:?}: {state:?}"));
        assert_eq!(event.kind, kind, "{what:?}");
        let RunStatus::Stopped(ev) = &out.status else {
            panic!("{what:?}: not stopped: {:?}", out.status);
        };
        assert_eq!(ev.kind, kind, "{what:?}");
        assert_eq!(out.steps, steps, "{what:?}");
        assert!(steps < n_steps);
        assert!(bits(&out.rows) == bits(&rows), "{what:?}: rows differ");
        assert!(!out.safety[0].armed, "{what:?}");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(j["status"], "stopped", "{what:?}");
        assert_eq!(j["safety_event"]["kind"], kind.name(), "{what:?}");
        assert_eq!(j["steps_completed"], steps, "{what:?}");
        let on_disk = std::fs::read_to_string(dir.join("results.csv"))
            .unwrap()
            .lines()
            .count() as u64
            - 1;
        assert_eq!(on_disk, rows.len() as u64, "{what:?}");
        assert_eq!(j["rows_written"], on_disk, "{what:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A panic inside a step is caught on the step thread: the laboratory trips (`task_panic`)
/// and ramps down, run.json names the task and the message, every completed step is kept.
#[test]
fn a_panic_in_the_step_trips_the_lab_and_is_reported() {
    let model = frame("", 1);
    let dir = scratch("panic");
    let out = run_sequential(
        &model,
        integrator(
            &model,
            Some((Injection::Panic, 250)),
            Arc::new(AtomicBool::new(false)),
        ),
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            max_steps: Some(1000),
            folder: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::TaskPanic);
    // Command 250 is the one of step 249 (the port's first command is step 0's).
    assert_eq!(out.steps, 249);
    assert_eq!(out.rows.len(), 250);
    assert_eq!(out.panics[0].0, "step");
    assert!(
        out.panics[0].1.contains("injected panic"),
        "{:?}",
        out.panics
    );
    let j = &out.run_json;
    assert_eq!(j["task_panics"][0]["task"], "step");
    assert_eq!(j["safety"][0]["ramp_down"], "completed", "{j}");
    assert!(j["lab_not_ramped"].is_null());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record tap that panics at its row of time `at` (on the step thread, inside the run loop
/// but outside the step, as a panic of the recorder or the sink would).
struct PanickingTap {
    at: f64,
}

impl runner::RecordTap for PanickingTap {
    fn row(&mut self, row: &[f64]) {
        if row[0] >= self.at {
            panic!("a record tap that panics");
        }
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) {}
}

/// A panic in the run loop outside the step (here a record tap's, at the row of step 100) is
/// caught on the step thread too: the laboratory trips (`task_panic`) and ramps down, run.json
/// names the step task and the message. Before, the step thread died with the laboratory,
/// neither tripped nor ramped.
#[test]
fn a_panic_in_the_loop_outside_the_step_trips_and_ramps_the_lab_down() {
    let model = frame("", 1);
    let dir = scratch("loop-panic");
    let tap: Box<dyn runner::RecordTap> = Box::new(PanickingTap {
        at: 100.0 * model.analysis.time_step - 1e-12,
    });
    let out = run_sequential(
        &model,
        integrator(&model, None, Arc::new(AtomicBool::new(false))),
        &RunOptions {
            pacing: Some(Pacing::Fast),
            max_steps: Some(1000),
            folder: Some(dir.clone()),
            tap: Some(Arc::new(std::sync::Mutex::new(Some(tap)))),
            ..Default::default()
        },
    )
    .unwrap();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::TaskPanic);
    assert_eq!(out.steps, 100);
    assert_eq!(out.panics[0].0, "step");
    assert!(
        out.panics[0].1.contains("a record tap that panics"),
        "{:?}",
        out.panics
    );
    let j = &out.run_json;
    assert_eq!(j["status"], "stopped");
    assert_eq!(j["safety"][0]["ramp_down"], "completed", "{j}");
    assert!(j["lab_not_ramped"].is_null());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A step that hangs: when it comes back within the second grace, the watchdog's stop takes
/// the trip path (a paced ramp-down); when it never does, the run ends anyway, the thread is
/// left behind, every row the writer had is on disk and run.json says that the laboratory
/// could not be held.
#[test]
fn a_stalled_step_ends_in_a_ramp_down_or_a_run_json_that_says_so() {
    let model = frame("", 1);
    let dir = scratch("stall-back");
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            max_steps: Some(1000),
            folder: Some(dir.clone()),
            watchdog: Some(Duration::from_millis(200)),
            inject: Some("physical:stall=0.3:300".parse().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::Watchdog);
    assert_eq!(out.steps, 300);
    assert_eq!(out.stalled_task, Some("step"));
    assert_eq!(out.run_json["safety"][0]["ramp_down"], "completed");
    assert_eq!(out.rows_written, 301);
    let _ = std::fs::remove_dir_all(&dir);

    let dir = scratch("stall-gone");
    let t0 = std::time::Instant::now();
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            max_steps: Some(1000),
            folder: Some(dir.clone()),
            watchdog: Some(Duration::from_millis(200)),
            inject: Some("numerical:stall=3600:300".parse().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    println!("left behind after {:?}: {:?}", t0.elapsed(), out.status);
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert!(
        matches!(out.status, RunStatus::Failed(_)),
        "{:?}",
        out.status
    );
    assert_eq!(out.steps, 300);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(j["status"], "failed");
    assert_eq!(j["stalled_task"], "step");
    assert!(j["lab_not_ramped"].as_str().unwrap().contains("watchdog"));
    let on_disk = std::fs::read_to_string(dir.join("results.csv"))
        .unwrap()
        .lines()
        .count() as u64
        - 1;
    assert_eq!(on_disk, 301, "every completed step on disk");
    assert_eq!(j["rows_written"], on_disk);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A writer that fails (a full disk) stops the test through the safety layer: a paced
/// ramp-down, the rows up to the failure on disk and counted in run.json.
#[test]
fn a_failed_writer_stops_the_test_with_the_rows_on_disk_counted() {
    let model = frame("", 1);
    let dir = scratch("writer");
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            folder: Some(dir.clone()),
            writer_fails_after: Some(500),
            // A ring of 16 rows: the stepper can be at most 16 rows ahead of the writer, so
            // the failure at row 500 is met mid-run whatever the scheduling (with a ring that
            // holds every row, a descheduled writer reached row 500 after the last step).
            results_ring: Some(16),
            ..Default::default()
        },
    )
    .unwrap();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::WriterOverflow);
    assert!(
        out.steps >= 499 && out.steps <= 500 + 16 + 1,
        "{} steps",
        out.steps
    );
    assert!(out.steps < model.analysis.n_steps());
    let on_disk = std::fs::read_to_string(dir.join("results.csv"))
        .unwrap()
        .lines()
        .count() as u64
        - 1;
    assert_eq!(on_disk, 500);
    assert_eq!(out.rows_written, 500);
    assert_eq!(out.run_json["safety"][0]["ramp_down"], "completed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Schemes that cannot drive a laboratory are still refused, naming the scheme and the field.
#[test]
fn a_scheme_that_cannot_drive_the_lab_is_refused_clearly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml"))
        .unwrap()
        .replace("integrator = \"pg-alpha\"", "integrator = \"mg-alpha\"")
        .replace("subcycles = 5 ", "subcycles = 1 ");
    assert!(text.contains("integrator = \"mg-alpha\""));
    let model = Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap();
    let e = run(&model, &RunOptions::default())
        .err()
        .unwrap()
        .to_string();
    println!("{e}");
    assert!(
        e.contains("analysis.integrator") && e.contains("mg-alpha"),
        "{e}"
    );
}
