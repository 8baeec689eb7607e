//! The pipelined hand-off of the threaded PG-α runner (docs/realtime-pipeline.md): the
//! physical job of coarse step n + 1 leaves the link thread after the interface solve and the
//! physical partitions' link update, before the numerical partition's update and the results
//! row of step n, so a slow row does not hold the physical substeps up; a stop while that job
//! is out takes it back (recall) before the laboratories are tripped.
//!
//! Both tests are deterministic: a record tap (which runs on the link thread right after the
//! row went to the sink) waits, bounded, for the physical task to command a substep of the
//! next step. Before the hand-off was pipelined that substep could not start until the row
//! was made, and the wait timed out.

use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{PgAlpha, StepSettings};
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::physical::EventKind;
use hybridsim::runner::{self, RecordTap, RunSettings, RunSink, Sequential};
use hybridsim::Model;
use hybridsim_rt::{run_integrator, RunOptions, RunStatus};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The quick-start frame (ss = 5, a row every 2 steps), with `from → to` replaced in its text.
fn quickstart(from: &str, to: &str) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml"))
        .unwrap()
        .replace(from, to);
    Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// The integrator of `model` with a hook on the specimen's port that counts its commands
/// (on the physical worker's thread) and, at command `hold_at`, waits until `abort` is raised
/// and then 100 ms more.
fn counted(
    model: &Model,
    commands: Arc<AtomicU64>,
    hold_at: Option<(u64, Arc<AtomicBool>)>,
) -> PgAlpha {
    let mut parts = build_partitions(model, Grouping::Partitioned).unwrap();
    for p in parts.iter_mut() {
        if let Some(port) = p.physical.as_mut() {
            let commands = commands.clone();
            let hold_at = hold_at.clone();
            port.intercept(Box::new(move |inner, tick, u, v, f| {
                let c = commands.fetch_add(1, Ordering::SeqCst) + 1;
                if let Some((at, abort)) = &hold_at {
                    if c == *at {
                        let until = Instant::now() + Duration::from_secs(10);
                        while !abort.load(Ordering::SeqCst) && Instant::now() < until {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                inner.command(tick, u, v, f)
            }));
        }
    }
    PgAlpha::new(parts, &StepSettings::from_analysis(&model.analysis)).unwrap()
}

/// What the tap saw.
#[derive(Default)]
struct Seen {
    /// Rows whose wait for the next step's substep was met.
    met: u64,
    /// The first row (its step) whose wait timed out.
    timed_out: Option<u64>,
}

/// A slow row: at the row of step `s` (0 < s < n_steps) it waits, up to 5 s, until the
/// physical task has commanded substep `substep` of step `s + 1` (command `s·ss + substep`);
/// at the row of `abort_at` it then raises `abort`. After one timeout it no longer waits.
struct SlowRow {
    commands: Arc<AtomicU64>,
    ss: u64,
    dt: f64,
    n_steps: u64,
    substep: u64,
    abort_at: Option<(u64, Arc<AtomicBool>)>,
    seen: Arc<Mutex<Seen>>,
}

impl RecordTap for SlowRow {
    fn row(&mut self, row: &[f64]) {
        let step = (row[0] / self.dt).round() as u64;
        let mut seen = self.seen.lock().unwrap();
        if step == 0 || step >= self.n_steps || seen.timed_out.is_some() {
            return;
        }
        let want = step * self.ss + self.substep;
        let until = Instant::now() + Duration::from_secs(5);
        while self.commands.load(Ordering::SeqCst) < want {
            if Instant::now() > until {
                seen.timed_out = Some(step);
                return;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        seen.met += 1;
        if let Some((at, abort)) = &self.abort_at {
            if *at == step {
                abort.store(true, Ordering::SeqCst);
            }
        }
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) {}
}

#[derive(Default)]
struct Rows(Vec<Vec<f64>>);

impl RunSink for Rows {
    fn row(&mut self, row: &[f64]) -> bool {
        self.0.push(row.to_vec());
        true
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) -> bool {
        true
    }
}

/// The rows of `hybridsim run`'s loop on one thread.
fn sequential_rows(model: &Model, n_steps: u64) -> Vec<Vec<f64>> {
    let mut pg = counted(model, Arc::default(), None);
    let mut recorder = Recorder::new(model, &pg);
    let mut row = vec![0.0; recorder.n_columns()];
    let mut rows = Rows::default();
    let settings = RunSettings {
        n_steps,
        every: model.output.every,
        divergence: Some(model.lab.as_ref().unwrap().safety.divergence),
        max_overruns: None,
    };
    let end = runner::run(
        &mut Sequential(&mut pg),
        &mut recorder,
        &mut rows,
        &settings,
        &AtomicBool::new(false),
        &mut row,
    );
    assert_eq!(end.steps, n_steps);
    rows.0
}

fn bits(rows: &[Vec<f64>]) -> Vec<Vec<u64>> {
    rows.iter()
        .map(|r| r.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// The physical substeps of step n + 1 run while the row of step n is still being made (the
/// tap holds the link thread inside the row until the first substep of the next step has
/// been commanded), and the rows are still those of the sequential loop, bit for bit, with a
/// row every step and the energy columns, and with a row every other step (the steps between
/// captured in two parts).
#[test]
fn the_physical_job_of_the_next_step_leaves_before_the_row_is_made() {
    let n_steps = 60;
    for (name, model) in [
        (
            "every 1, energies",
            quickstart("every = 2", "every = 1\nenergy = true"),
        ),
        ("every 2", quickstart("", "")),
    ] {
        let commands = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let tap: Box<dyn RecordTap> = Box::new(SlowRow {
            commands: commands.clone(),
            ss: model.analysis.subcycles as u64,
            dt: model.analysis.time_step,
            n_steps,
            substep: 1,
            abort_at: None,
            seen: seen.clone(),
        });
        let out = run_integrator(
            &model,
            counted(&model, commands.clone(), None),
            &RunOptions {
                pacing: Some(Pacing::Fast),
                keep_rows: true,
                max_steps: Some(n_steps),
                tap: Some(Arc::new(Mutex::new(Some(tap)))),
                ..Default::default()
            },
        )
        .unwrap();
        let seen = seen.lock().unwrap();
        println!(
            "{name}: {:?} after {} steps; rows whose next substep ran during the row: {}, \
             first timed out: {:?}",
            out.status, out.steps, seen.met, seen.timed_out
        );
        assert_eq!(out.status, RunStatus::Completed, "{name}");
        assert_eq!(
            seen.timed_out, None,
            "{name}: the physical substep of the next step waited for the row"
        );
        assert_eq!(seen.met, (n_steps - 1) / model.output.every, "{name}");
        assert_eq!(
            bits(&out.rows),
            bits(&sequential_rows(&model, n_steps)),
            "{name}"
        );
    }
}

/// A stop that arrives while the physical job of the next step is out: the operator's abort
/// is raised from the row of step 20 while the physical task is inside substep 2 of step 21.
/// The job is recalled before its substep 3 (no further command), the laboratory holds
/// (`on_trip = "hold"`), the 20 completed steps are on disk and run.json says what happened.
#[test]
fn a_stop_while_the_next_physical_job_is_out_recalls_it_then_holds() {
    let model = quickstart("", "");
    let ss = model.analysis.subcycles as u64;
    let k = 20;
    let abort = Arc::new(AtomicBool::new(false));
    let commands = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let tap: Box<dyn RecordTap> = Box::new(SlowRow {
        commands: commands.clone(),
        ss,
        dt: model.analysis.time_step,
        n_steps: 200,
        substep: 2,
        abort_at: Some((k, abort.clone())),
        seen: seen.clone(),
    });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-rt-handoff-recall");
    let _ = std::fs::remove_dir_all(&dir);
    let started = Instant::now();
    let out = run_integrator(
        &model,
        counted(&model, commands.clone(), Some((k * ss + 2, abort.clone()))),
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            max_steps: Some(200),
            folder: Some(dir.clone()),
            abort: abort.clone(),
            tap: Some(Arc::new(Mutex::new(Some(tap)))),
            ..Default::default()
        },
    )
    .unwrap();
    let seen = seen.lock().unwrap();
    println!(
        "{:?} after {} steps, {} commands, {:.2} s; tap: {} met, timed out {:?}",
        out.status,
        out.steps,
        commands.load(Ordering::SeqCst),
        started.elapsed().as_secs_f64(),
        seen.met,
        seen.timed_out
    );
    assert_eq!(
        seen.timed_out,
        None,
        "substep 2 of step {} did not run during the row of step {k}",
        k + 1
    );
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::OperatorAbort);
    assert_eq!(out.steps, k);
    // Substeps 1 and 2 of step k + 1 were commanded, then the job came back: nothing more
    // (the lab holds).
    assert_eq!(commands.load(Ordering::SeqCst), k * ss + 2);
    assert!(!out.safety[0].armed);
    // Every completed step's row on disk: steps 0, 2, …, k.
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len() as u64, 1 + k / 2);
    let last_time: f64 = rows
        .last()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((last_time - k as f64 * model.analysis.time_step).abs() < 1e-12);
    assert_eq!(out.rows_written, 1 + k / 2);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["safety_event"]["kind"], "operator_abort");
    assert_eq!(json["steps_completed"], k);
    assert_eq!(json["rows_written"], 1 + k / 2);
    assert!(json["lab_not_ramped"].is_null());
    assert_eq!(json["safety"][0]["armed"], false);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Raises `abort` when the run loop reports step `at` completed (on the link thread, after the
/// step's physical job of the next step was released and before its numerical job leaves).
struct AbortAtStep {
    at: u64,
    abort: Arc<AtomicBool>,
}

impl RecordTap for AbortAtStep {
    fn row(&mut self, _: &[f64]) {}
    fn lab_record(&mut self, _: usize, _: &[f64]) {}
    fn step(&mut self, steps: u64) {
        if steps == self.at {
            self.abort.store(true, Ordering::SeqCst);
        }
    }
}

/// A stop that arrives after the release of a step without a row (every = 2, step 21): the
/// step's capture is taken, the numerical job of step 22 leaves with the physical one, and the
/// stop is seen at the top of the next iteration. The row of step 21 is made from the capture
/// once both jobs are back (before, it was made with the numerical partition still out on its
/// worker, and the recorder read that partition's structure from the empty box left in its
/// place: an index out of bounds on its ground-motion map, the link thread panicked after the
/// trip and before the ramp-down). The 21 completed steps are on disk, the last row is the
/// sequential loop's row of step 21, bit for bit, and the laboratory holds.
#[test]
fn a_stop_after_the_release_of_a_step_without_a_row_keeps_its_row() {
    let model = quickstart("", "");
    assert_eq!(model.output.every, 2);
    let k = 21;
    let abort = Arc::new(AtomicBool::new(false));
    let tap: Box<dyn RecordTap> = Box::new(AbortAtStep {
        at: k,
        abort: abort.clone(),
    });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-rt-handoff-odd-stop");
    let _ = std::fs::remove_dir_all(&dir);
    let out = run_integrator(
        &model,
        counted(&model, Arc::default(), None),
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            max_steps: Some(200),
            folder: Some(dir.clone()),
            abort: abort.clone(),
            tap: Some(Arc::new(Mutex::new(Some(tap)))),
            ..Default::default()
        },
    )
    .unwrap();
    println!("{:?} after {} steps", out.status, out.steps);
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::OperatorAbort);
    assert_eq!(out.steps, k);
    assert!(!out.safety[0].armed);
    // Steps 0, 2, …, 20 and the last completed one, 21: those of a sequential run of 21 steps.
    assert_eq!(out.rows_written, 1 + k.div_ceil(2));
    assert_eq!(bits(&out.rows), bits(&sequential_rows(&model, k)));
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().skip(1).count() as u64, 1 + k.div_ceil(2));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["safety_event"]["kind"], "operator_abort");
    assert_eq!(json["steps_completed"], k);
    assert_eq!(json["rows_written"], 1 + k.div_ceil(2));
    assert!(
        json["task_panics"].as_array().is_none_or(|a| a.is_empty()),
        "{json}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
