//! The supervisor of the threaded runner (issue 10): a panic or a stall of any task, a
//! writer that fails or stalls, all end the run by themselves, in bounded time, through the
//! safety layer when the laboratory can be reached, with a run.json that says what happened
//! and counts that match the files. Every test bounds its own run (a hang fails the test).

use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::physical::EventKind;
use hybridsim::Model;
use hybridsim_rt::{run, RunOptions, RunOutcome, RunStatus, TaskFault};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The quick start (Δt^C = 1 ms, 5 ticks per 5 ms step, a results row every 2 steps), with
/// `edit` applied to its text.
/// The quick start, edited; deadline overruns never stop it (the realtime-paced tests here are
/// about the supervisor, and a loaded test machine misses deadlines).
fn quickstart(edit: impl FnOnce(String) -> String) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml"))
        .unwrap()
        .replace("[safety]\n", "[safety]\nmax_overruns = 1000000\n");
    assert!(text.contains("max_overruns = 1000000"));
    let text = edit(text);
    Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn folder(name: &str) -> PathBuf {
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hybridsim-rt-sup-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Run on another thread and fail (instead of hanging the suite) if it does not return
/// within `limit`; returns the outcome and the wall time.
fn bounded(model: &Model, opts: RunOptions, limit: Duration) -> (RunOutcome, Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    let m = model.clone();
    let t0 = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(run(&m, &opts).map_err(|e| e.to_string()));
    });
    let out = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the run did not end within {limit:?}"))
        .unwrap_or_else(|e| panic!("{e}"));
    (out, t0.elapsed())
}

fn run_json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// Data rows of a CSV file, each checked to be a whole row of numbers.
fn whole_rows(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{}: cut mid-row",
        path.display()
    );
    count_rows(path, &text)
}

/// Data rows of a CSV file that the writer may be appending to right now: the lines up to
/// the last newline (a row still being written is not on disk yet), each checked to be a
/// whole row of numbers.
fn whole_rows_so_far(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    let end = text.rfind('\n').map_or(0, |i| i + 1);
    count_rows(path, &text[..end])
}

fn count_rows(path: &Path, text: &str) -> u64 {
    let mut lines = text.lines();
    let width = lines.next().expect("header").split(',').count();
    let mut n = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), width, "{}: `{line}`", path.display());
        for c in cells {
            c.parse::<f64>()
                .unwrap_or_else(|e| panic!("{}: `{c}`: {e}", path.display()));
        }
        n += 1;
    }
    n
}

/// run.json says what the folder holds.
fn counts_match_files(dir: &Path, json: &Value) {
    let rows = whole_rows(&dir.join("results.csv"));
    let lab = whole_rows(&dir.join("lab.csv"));
    assert_eq!(json["rows_written"].as_u64(), Some(rows), "results.csv");
    assert_eq!(json["lab_rows_written"].as_u64(), Some(lab), "lab.csv");
    assert_eq!(json["rows_on_disk"].as_u64(), Some(rows), "results.csv");
    assert_eq!(json["lab_rows_on_disk"].as_u64(), Some(lab), "lab.csv");
}

fn fast(dir: &Path, max_steps: u64) -> RunOptions {
    RunOptions {
        pacing: Some(Pacing::Fast),
        folder: Some(dir.to_path_buf()),
        max_steps: Some(max_steps),
        ..Default::default()
    }
}

/// A panic in the physical or the numerical worker (in the middle of a step) is a
/// `TaskPanic`: the worker catches it, trips its laboratories and sends them back, the run
/// stops through the safety layer, run.json names the task and keeps the panic message.
#[test]
fn a_panic_in_a_worker_stops_the_run_as_a_task_panic_with_its_message_in_run_json() {
    let model = quickstart(|t| t);
    for task in ["physical", "numerical"] {
        let dir = folder(&format!("panic-{task}"));
        let opts = RunOptions {
            inject: Some(format!("{task}:panic:20").parse().unwrap()),
            ..fast(&dir, 200)
        };
        let (out, took) = bounded(&model, opts, Duration::from_secs(60));
        println!(
            "{task}: {:?} after {} steps in {took:?}",
            out.status, out.steps
        );
        let RunStatus::Stopped(ev) = &out.status else {
            panic!("{task}: {:?}", out.status)
        };
        assert_eq!(ev.kind, EventKind::TaskPanic, "{task}");
        assert_eq!(out.steps, 20, "{task}");
        assert!(!out.safety[0].armed, "{task}");
        let json = run_json(&dir);
        assert_eq!(json["status"], "stopped", "{task}");
        assert_eq!(json["safety_event"]["kind"], "task_panic", "{task}");
        assert_eq!(json["task_panics"][0]["task"], task);
        let msg = json["task_panics"][0]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("injected panic in the {task} task")),
            "{msg}"
        );
        assert!(
            json["fault"].as_str().unwrap().contains("panicked"),
            "{json}"
        );
        counts_match_files(&dir, &json);
        assert_eq!(json["rows_written"], 1 + 20 / 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A panic of the writer stops the test at once (recording failed) and is named in run.json;
/// a panic of the estimation slot never stops the test.
#[test]
fn a_writer_panic_and_an_estimation_panic_stop_the_test() {
    let model = quickstart(|t| t);
    let dir = folder("panic-writer");
    let opts = RunOptions {
        inject: Some("writer:panic:10".parse().unwrap()),
        results_ring: Some(16),
        ..fast(&dir, 4000)
    };
    let (out, _) = bounded(&model, opts, Duration::from_secs(60));
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::WriterOverflow);
    assert!(out.steps < 4000, "{}", out.steps);
    let json = run_json(&dir);
    assert_eq!(json["task_panics"][0]["task"], "writer", "{json}");
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);

    // Any task's panic stops the test, the estimation slot's too (issue 10): it is noticed
    // at the first snapshot after its ring is abandoned (once the panic has unwound, which
    // takes a while when a backtrace is printed: a long fast-paced run, so that the loop is
    // still going by then).
    let dir = folder("panic-estimation");
    let long = quickstart(|t| t.replace("\nduration = 20.0\n", "\nduration = 200.0\n"));
    let opts = RunOptions {
        inject: Some("estimation:panic:5".parse().unwrap()),
        ..fast(&dir, 40_000)
    };
    let (out, _) = bounded(&long, opts, Duration::from_secs(60));
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::TaskPanic);
    assert!(out.steps < 40_000, "{}", out.steps);
    let json = run_json(&dir);
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["task_panics"][0]["task"], "estimation", "{json}");
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A physical worker that stalls (a transfer system that blocks) is caught by the watchdog.
/// When it comes back within the second grace, it trips its laboratory itself and the run
/// stops through the safety layer (`watchdog`); when it never comes back, the run ends anyway
/// in bounded time and run.json says the laboratory could not be held by hybridsim.
#[test]
fn a_stalled_physical_worker_is_stopped_by_the_watchdog_in_bounded_time() {
    let model = quickstart(|t| t);
    // Comes back: watchdog 200 ms, second grace 200 ms, stall 300 ms.
    let dir = folder("stall-physical-back");
    let opts = RunOptions {
        inject: Some("physical:stall=0.3:20".parse().unwrap()),
        watchdog: Some(Duration::from_millis(200)),
        ..fast(&dir, 200)
    };
    let (out, took) = bounded(&model, opts, Duration::from_secs(30));
    println!(
        "back: {:?} after {} steps in {took:?}",
        out.status, out.steps
    );
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::Watchdog);
    assert_eq!(out.steps, 20);
    assert_eq!(out.stalled_task, Some("physical"));
    assert!(!out.safety[0].armed);
    let json = run_json(&dir);
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["stalled_task"], "physical");
    assert_eq!(json["lab_not_ramped"], Value::Null);
    assert!(
        json["fault"].as_str().unwrap().contains("watchdog"),
        "{json}"
    );
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);

    // Never comes back (in the time of the test), with both pacings; also after a step
    // without a row (the job of step 22, after step 21 of a row every 2 steps: the row of
    // step 21 needs the partition the worker keeps, and is not made).
    for (pacing, at) in [
        (Pacing::Fast, 20),
        (Pacing::Realtime, 20),
        (Pacing::Fast, 21),
    ] {
        let dir = folder(&format!("stall-physical-lost-{pacing:?}-{at}"));
        let opts = RunOptions {
            pacing: Some(pacing),
            inject: Some(format!("physical:stall=60:{at}").parse().unwrap()),
            watchdog: Some(Duration::from_millis(200)),
            ..fast(&dir, 200)
        };
        let (out, took) = bounded(&model, opts, Duration::from_secs(30));
        println!(
            "{pacing:?}, lost: {:?} after {} steps in {took:?}",
            out.status, out.steps
        );
        assert!(took < Duration::from_secs(20), "{took:?}");
        let RunStatus::Failed(msg) = &out.status else {
            panic!("{:?}", out.status)
        };
        assert!(msg.contains("physical task did not answer"), "{msg}");
        assert!(out.steps <= at, "{}", out.steps);
        assert_eq!(out.stalled_task, Some("physical"));
        let json = run_json(&dir);
        assert_eq!(json["status"], "failed");
        assert_eq!(json["stalled_task"], "physical");
        assert_eq!(json["task_panics"], serde_json::json!([]), "{json}");
        let note = json["lab_not_ramped"].as_str().expect("lab_not_ramped");
        assert!(note.contains("controller's own watchdog"), "{note}");
        counts_match_files(&dir, &json);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A numerical step that never returns: the physical worker sends its laboratory back, so
/// the watchdog stop goes through the safety layer on the link thread. Also after a step
/// without a row (every = 2, the job of step 22 stalls after step 21): the worker keeps the
/// numerical partition, so the row of step 21 cannot be made and is not (before, the
/// recorder read that partition's structure from the empty box left in its place and the
/// link thread panicked after the trip, before the ramp-down).
#[test]
fn a_stalled_numerical_worker_is_stopped_by_the_watchdog_through_the_safety_layer() {
    let model = quickstart(|t| t);
    for at in [20, 21] {
        let dir = folder(&format!("stall-numerical-{at}"));
        let opts = RunOptions {
            inject: Some(format!("numerical:stall=60:{at}").parse().unwrap()),
            watchdog: Some(Duration::from_millis(200)),
            ..fast(&dir, 200)
        };
        let (out, took) = bounded(&model, opts, Duration::from_secs(30));
        println!(
            "at {at}: {:?} after {} steps in {took:?}",
            out.status, out.steps
        );
        let RunStatus::Stopped(ev) = &out.status else {
            panic!("{:?}", out.status)
        };
        assert_eq!(ev.kind, EventKind::Watchdog);
        assert_eq!(out.steps, at);
        assert_eq!(out.stalled_task, Some("numerical"));
        assert!(!out.safety[0].armed);
        // Steps 0, 2, … up to the last one whose numerical job came back: the row of step
        // 20 waits for the job of step 21 (sent before it was made), that of step 21 (no row
        // of its own: made at the stop) for the job of step 22.
        assert_eq!(out.rows_written, 1 + (at - 1) / 2);
        let json = run_json(&dir);
        assert_eq!(json["stalled_task"], "numerical");
        assert_eq!(json["task_panics"], serde_json::json!([]), "{json}");
        assert_eq!(json["lab_not_ramped"], Value::Null);
        counts_match_files(&dir, &json);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A writer that stops draining (a hung disk) fills the ring: the test stops, the end of the
/// run does not wait for the writer beyond its bound, and run.json counts what was flushed.
/// An estimation slot that stalls (its ring full for the watchdog grace) stops it too.
#[test]
fn a_stalled_writer_or_estimation_slot_stops_the_test() {
    let model = quickstart(|t| t);
    let dir = folder("stall-writer");
    let opts = RunOptions {
        inject: Some("writer:stall=60:10".parse().unwrap()),
        watchdog: Some(Duration::from_millis(200)),
        results_ring: Some(16),
        overflow_wait: Some(Duration::from_millis(100)),
        ..fast(&dir, 4000)
    };
    let (out, took) = bounded(&model, opts, Duration::from_secs(30));
    println!(
        "writer: {:?} after {} steps in {took:?}",
        out.status, out.steps
    );
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::WriterOverflow);
    assert_eq!(out.stalled_task, Some("writer"));
    let json = run_json(&dir);
    assert_eq!(json["stalled_task"], "writer");
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);

    let dir = folder("stall-estimation");
    // 200 s of quick start (40 000 steps): far longer than the 64 snapshots of the ring and
    // the 200 ms of watchdog, however fast the machine.
    let long = quickstart(|t| t.replace("\nduration = 20.0\n", "\nduration = 200.0\n"));
    let opts = RunOptions {
        inject: Some("estimation:stall=60:5".parse().unwrap()),
        watchdog: Some(Duration::from_millis(200)),
        ..fast(&dir, 40_000)
    };
    let (out, took) = bounded(&long, opts, Duration::from_secs(30));
    println!(
        "estimation: {:?} after {} steps in {took:?}: {}",
        out.status, out.steps, out.estimation
    );
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::Watchdog);
    assert!(out.steps < 40_000);
    assert!(out.estimation["snapshots_dropped"].as_u64().unwrap() > 0);
    let json = run_json(&dir);
    assert_eq!(json["status"], "stopped");
    assert!(
        json["fault"].as_str().unwrap().contains("estimation"),
        "{}",
        json["fault"]
    );
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A write error (a full disk) stops the test at once, with either pacing: the rows written
/// before are whole and flushed, and run.json counts exactly what is on disk (it used to say
/// 0 and the realtime run drove on unrecorded, then hung).
#[test]
fn a_writer_failure_stops_the_test_at_once_with_true_counts() {
    let model = quickstart(|t| t);
    for pacing in [Pacing::Fast, Pacing::Realtime] {
        let dir = folder(&format!("writer-fails-{pacing:?}"));
        let opts = RunOptions {
            pacing: Some(pacing),
            writer_fails_after: Some(25),
            // Real time with the default rings (8192 rows): the loop must notice the dead
            // writer at once, not when the rings are full (it used to drive on unrecorded).
            results_ring: (pacing == Pacing::Fast).then_some(16),
            ..fast(&dir, if pacing == Pacing::Fast { 4000 } else { 400 })
        };
        let (out, took) = bounded(&model, opts, Duration::from_secs(60));
        println!(
            "{pacing:?}: {:?} after {} steps in {took:?}; {} rows, {} lab rows",
            out.status, out.steps, out.rows_written, out.lab_rows
        );
        let RunStatus::Stopped(ev) = &out.status else {
            panic!("{:?}", out.status)
        };
        assert_eq!(ev.kind, EventKind::WriterOverflow);
        assert_eq!(out.rows_written, 25);
        // Rows reach the writer every 2 steps; at once: within a few steps (fast: within
        // the small ring).
        assert!(out.steps <= 2 * (25 + 16 + 2), "{}", out.steps);
        let json = run_json(&dir);
        assert_eq!(json["status"], "stopped");
        let error = json["error"].as_str().expect("error");
        assert!(
            error.contains("results.csv") && error.contains("injected"),
            "{error}"
        );
        counts_match_files(&dir, &json);
        assert!(json["lab_rows_written"].as_u64().unwrap() > 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// run.json says `running` during the run, with a heartbeat and what is on disk; a killed
/// process would leave that. At the end it holds the final document.
#[test]
fn run_json_carries_a_heartbeat_while_running() {
    // Fast pacing over a long record (the heartbeat is the point, not the pacing: a
    // realtime-paced test may be stopped by deadline overruns on a loaded machine first).
    let model = quickstart(|t| t.replace("\nduration = 20.0\n", "\nduration = 2000.0\n"));
    let dir = folder("heartbeat");
    let opts = RunOptions {
        pacing: Some(Pacing::Fast),
        folder: Some(dir.clone()),
        max_steps: Some(400_000),
        journal_interval: Some(Duration::from_millis(100)),
        watchdog: Some(Duration::from_millis(500)),
        ..Default::default()
    };
    let abort = opts.abort.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let m = model.clone();
    std::thread::spawn(move || {
        let _ = tx.send(run(&m, &opts).map_err(|e| e.to_string()));
    });
    let t0 = Instant::now();
    let mut seen: Option<(Value, u64)> = None;
    while t0.elapsed() < Duration::from_secs(20) && seen.is_none() {
        std::thread::sleep(Duration::from_millis(20));
        let Ok(text) = std::fs::read_to_string(dir.join("run.json")) else {
            continue;
        };
        let json: Value = serde_json::from_str(&text).expect("run.json is always whole");
        if json["status"] == "running" && json["rows_on_disk"].as_u64().unwrap_or(0) > 2 {
            let on_disk = whole_rows_so_far(&dir.join("results.csv"));
            seen = Some((json, on_disk));
        }
    }
    abort.store(true, Ordering::SeqCst);
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the run did not end")
        .unwrap();
    let (json, on_disk) = seen.expect("no heartbeat with rows on disk while running");
    println!(
        "running: heartbeat {} ({}), {} rows on disk, last step {}; results.csv had {on_disk}",
        json["heartbeat_unix"], json["heartbeat"], json["rows_on_disk"], json["last_step_on_disk"]
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let beat = json["heartbeat_unix"].as_f64().unwrap();
    assert!(beat <= now && beat > now - 60.0, "{beat} vs {now}");
    assert!(json["heartbeat"].as_str().unwrap().ends_with('Z'));
    let rows = json["rows_on_disk"].as_u64().unwrap();
    assert!(rows <= on_disk, "{rows} claimed, {on_disk} on disk");
    let last = json["last_step_on_disk"].as_u64().unwrap();
    assert_eq!(last, 2 * (rows - 1), "a row every 2 steps");
    assert!(json["lab_rows_on_disk"].as_u64().unwrap() > 0);
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::OperatorAbort);
    let json = run_json(&dir);
    assert_eq!(json["status"], "stopped");
    assert!(json["heartbeat_unix"].as_f64().unwrap() >= beat);
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The paced ramp-down in real time: the ramp after an abort sends one command per
/// controller tick, so N ramp ticks take at least about N·Δt^C of wall time (only a loose
/// lower bound is asserted: a slow machine makes it longer, never shorter).
#[test]
fn the_ramp_down_after_a_realtime_abort_is_paced_by_the_controller_clock() {
    let model = quickstart(|t| {
        t.replace(
            "on_trip = \"hold\"",
            "on_trip = \"ramp_down\"\nramp_rate = 0.0001",
        )
    });
    let dir = folder("ramp");
    let opts = RunOptions {
        pacing: Some(Pacing::Realtime),
        folder: Some(dir.clone()),
        max_steps: Some(2000),
        watchdog: Some(Duration::from_millis(500)),
        ..Default::default()
    };
    let abort = opts.abort.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let m = model.clone();
    std::thread::spawn(move || {
        let _ = tx.send(run(&m, &opts).map_err(|e| e.to_string()));
    });
    std::thread::sleep(Duration::from_millis(400));
    let stop = Instant::now();
    abort.store(true, Ordering::SeqCst);
    let out = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the run did not end")
        .unwrap();
    let after = stop.elapsed();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::OperatorAbort);
    let json = run_json(&dir);
    let ramp = json["safety"][0]["ramp_commands"].as_u64().unwrap();
    assert_eq!(json["safety"][0]["ramp_down"], "completed", "{json}");
    println!(
        "{} steps, {} lab rows: {ramp} ramp commands, returned {after:?} after the abort",
        out.steps, out.lab_rows
    );
    assert!(ramp > 0, "no ramp after the abort");
    // A slow ramp (0.1 mm/s, 0.1 µm per tick) from where the abort left the actuator; one
    // command per 1 ms controller tick: the ramp cannot have gone out faster (a loose
    // lower bound that a slow machine cannot break).
    assert!(
        after.as_secs_f64() >= 0.5 * ramp.saturating_sub(1) as f64 * 1e-3,
        "{ramp} ramp ticks in {after:?}: not paced"
    );
    let json = run_json(&dir);
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The injection hook spells what it parses (the CLI's hidden `--inject-fault`).
#[test]
fn task_fault_hook_parses_the_cli_form() {
    let f: TaskFault = "numerical:stall:7".parse().unwrap();
    assert_eq!(f.at, 7);
    assert!("numerical:stall:".parse::<TaskFault>().is_err());
}

/// A physical worker that comes back after the run gave up on it (its stall outlasted the
/// watchdog and the second grace) finds the trip request: it holds its laboratory and sends
/// no further command (it used to run the rest of its step, commanding an actuator that
/// nobody supervised any more).
#[test]
fn a_physical_worker_that_comes_back_late_sends_no_further_command() {
    use hybridsim::assembly::{build_partitions, Grouping};
    use hybridsim::integrators::{PgAlpha, StepSettings};
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    let model = quickstart(|t| t);
    let commands = Arc::new(AtomicU64::new(0));
    let mut parts = build_partitions(&model, Grouping::Partitioned).unwrap();
    for p in parts.iter_mut() {
        if let Some(port) = p.physical.as_mut() {
            let n = commands.clone();
            port.intercept(Box::new(move |inner, tick, u, v, f| {
                n.fetch_add(1, Ordering::SeqCst);
                inner.command(tick, u, v, f)
            }));
        }
    }
    let pg = PgAlpha::new(parts, &StepSettings::from_analysis(&model.analysis)).unwrap();
    let opts = RunOptions {
        pacing: Some(Pacing::Fast),
        max_steps: Some(200),
        watchdog: Some(Duration::from_millis(100)),
        inject: Some("physical:stall=0.6:20".parse().unwrap()),
        ..Default::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(hybridsim_rt::run_integrator(&model, pg, &opts).map(|o| o.status));
    });
    let status = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the run did not end")
        .unwrap();
    let at_end = commands.load(Ordering::SeqCst);
    assert!(matches!(status, RunStatus::Failed(_)), "{status:?}");
    // 20 steps of 5 ticks; the worker wakes up 0.6 s after the stall began.
    assert_eq!(at_end, 100);
    std::thread::sleep(Duration::from_millis(1200));
    let later = commands.load(Ordering::SeqCst);
    println!("{at_end} commands when the run ended, {later} after the worker came back");
    assert_eq!(
        later, at_end,
        "commands after the watchdog gave up on the worker"
    );
}

/// A record tap that panics at the row of time `at` (on the link thread, inside the run loop,
/// as a panic of the recorder or the sink would).
struct PanickingTap {
    at: f64,
}

impl hybridsim::runner::RecordTap for PanickingTap {
    fn row(&mut self, row: &[f64]) {
        if row[0] >= self.at {
            panic!("a record tap that panics");
        }
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) {}
}

/// A panic on the link thread inside the run loop (here a record tap's, at the row of step
/// 10, made while the physical job of step 11 is out) does not leave the laboratory driven:
/// the job is recalled, the laboratory trips (`task_panic`) and ramps down to rest, and
/// run.json names the link task with the panic's message. Before, the panic unwound out of
/// the runner with the laboratory neither tripped nor ramped.
#[test]
fn a_panic_on_the_link_thread_trips_and_ramps_the_laboratory_down() {
    let model = quickstart(|t| {
        t.replace(
            "on_trip = \"hold\"",
            "on_trip = \"ramp_down\"\nramp_rate = 0.005",
        )
    });
    let dir = folder("link-panic");
    let tap: Box<dyn hybridsim::runner::RecordTap> = Box::new(PanickingTap {
        at: 10.0 * model.analysis.time_step - 1e-12,
    });
    let opts = RunOptions {
        tap: Some(std::sync::Arc::new(std::sync::Mutex::new(Some(tap)))),
        ..fast(&dir, 200)
    };
    let (out, took) = bounded(&model, opts, Duration::from_secs(30));
    println!("{:?} after {} steps in {took:?}", out.status, out.steps);
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind, EventKind::TaskPanic);
    assert!(!out.safety[0].armed);
    let json = run_json(&dir);
    assert_eq!(json["status"], "stopped", "{json}");
    assert_eq!(json["task_panics"][0]["task"], "link", "{json}");
    assert!(
        json["task_panics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("a record tap that panics"),
        "{json}"
    );
    assert_eq!(json["safety"][0]["ramp_down"], "completed", "{json}");
    assert_eq!(json["lab_not_ramped"], Value::Null);
    counts_match_files(&dir, &json);
    let _ = std::fs::remove_dir_all(&dir);
}
