//! The threaded runner: bit-identical to the single-threaded run (also with noise), clean
//! stops on writer overflow and abort with every completed step on disk, and no allocation in
//! the loop threads.
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::{Model, Simulation};
use hybridsim_rt::{run, RunOptions, RunStatus};
use std::path::Path;
use std::sync::atomic::Ordering;

mod common;
use common::counting::{mark, LOOP_ALLOCATIONS};

fn example(edit: impl FnOnce(&mut toml::Table)) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text =
        std::fs::read_to_string(root.join("examples/split_mass_delayed_actuator.toml")).unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    edit(&mut t);
    Model::from_toml(
        &toml::to_string(&t).unwrap(),
        "split_mass_delayed_actuator.toml",
        &NoFiles,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn single_threaded(model: &Model) -> Vec<Vec<f64>> {
    let mut sim = Simulation::new(model.clone()).unwrap();
    let ncol = sim.columns().len();
    let mut rows = Vec::new();
    let mut row = vec![0.0; ncol];
    sim.record(&mut row);
    rows.push(row.clone());
    let n = sim.n_steps();
    for k in 1..=n {
        sim.step().unwrap();
        if k % model.output.every == 0 || k == n {
            sim.record(&mut row);
            rows.push(row.clone());
        }
    }
    rows
}

fn set_duration(t: &mut toml::Table, d: f64) {
    t["analysis"]
        .as_table_mut()
        .unwrap()
        .insert("duration".into(), d.into());
}

#[test]
fn threaded_fast_runner_is_bit_identical_to_the_single_threaded_run() {
    for noise in [false, true] {
        let model = example(|t| {
            set_duration(t, 3.0);
            if noise {
                t["lab"]["actuator"].as_array_mut().unwrap()[0]
                    .as_table_mut()
                    .unwrap()
                    .insert(
                        "noise".into(),
                        toml::Value::Table(
                            "force_rms = 20.0\ndisplacement_rms = 1e-6"
                                .parse::<toml::Table>()
                                .unwrap(),
                        ),
                    );
            }
        });
        let reference = single_threaded(&model);
        let out = run(
            &model,
            &RunOptions {
                pacing: Some(Pacing::Fast),
                keep_rows: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(out.rows.len(), reference.len());
        let same = out
            .rows
            .iter()
            .zip(&reference)
            .all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
        println!(
            "noise {noise}: {} rows × {} columns, bit-identical: {same}; lab rows {}",
            out.rows.len(),
            out.columns.len(),
            out.lab_rows
        );
        assert!(
            same,
            "threaded and single-threaded runs differ (noise {noise})"
        );
        // The rest row, the bumpless start (16 hold, 1 approach, 16 settling ticks), then one
        // per tick.
        assert_eq!(out.lab_rows, 1 + 33 + 2 * 1500);
    }
}

#[test]
fn writer_overflow_and_abort_stop_cleanly_with_every_step_on_disk() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-rt-overflow");
    let _ = std::fs::remove_dir_all(&dir);
    let model = example(|t| set_duration(t, 4.0));
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            folder: Some(dir.clone()),
            results_ring: Some(16),
            writer_delay: Some(std::time::Duration::from_millis(2)),
            overflow_wait: Some(std::time::Duration::ZERO),
            ..Default::default()
        },
    )
    .unwrap();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("expected a safety stop, got {:?}", out.status)
    };
    println!(
        "overflow: {ev}; {} steps, {} rows written",
        out.steps, out.rows_written
    );
    assert_eq!(ev.kind.name(), "writer_overflow");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    // Header + initial row + one row per completed step.
    assert_eq!(csv.lines().count() as u64, 2 + out.steps);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["safety_event"]["kind"], "writer_overflow");
    let lab = std::fs::read_to_string(dir.join("lab.csv")).unwrap();
    assert!(lab.lines().count() as u64 > 2 * out.steps);

    // Abort: set before the start, the loop trips every actuator on the first check.
    let opts = RunOptions {
        pacing: Some(Pacing::Fast),
        folder: Some(dir.clone()),
        ..Default::default()
    };
    opts.abort.store(true, Ordering::SeqCst);
    let out = run(&model, &opts).unwrap();
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("expected a safety stop, got {:?}", out.status)
    };
    assert_eq!(ev.kind.name(), "operator_abort");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["safety_event"]["kind"], "operator_abort");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threaded_loop_does_not_allocate_over_ten_thousand_steps() {
    let model = example(|t| {
        set_duration(t, 24.0);
        t.insert(
            "output".into(),
            // A row every step, with energies: every step sends the numerical job of the
            // next one before its row is made, and makes the row from the capture (with the
            // energies' state functions) once that job is back.
            toml::Value::Table("every = 1\nenergy = true".parse::<toml::Table>().unwrap()),
        );
    });
    assert!(model.analysis.n_steps() >= 10_000);
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
    println!(
        "{} steps, {} physical ticks: {n} allocations in the loop threads",
        out.steps,
        2 * out.steps
    );
    assert_eq!(out.status, RunStatus::Completed);
    assert!(out.steps >= 10_000);
    assert_eq!(n, 0);

    // The supervisor's paths: a watchdog stop (a stalled numerical worker, the trip request,
    // the safety layer on the link thread) allocates nothing in the loop threads either.
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            loop_marker: Some(mark),
            max_steps: Some(400),
            watchdog: Some(std::time::Duration::from_millis(100)),
            inject: Some("numerical:stall=0.3:200".parse().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    // The stalled worker wakes up, finds its job list ended and leaves its loop.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    println!("watchdog stop after {} steps: {n} allocations", out.steps);
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind.name(), "watchdog");
    assert_eq!(out.steps, 200);
    assert_eq!(n, 0);

    // The pipelined hand-off's stop path: with a results ring that overflows, the fault is
    // met when a row is pushed, after the physical job of the next step has left (the
    // release); the job is recalled and the laboratory tripped on the link thread. A row
    // every other step: the steps between are captured in two parts. No allocation either.
    let every2 = example(|t| {
        set_duration(t, 4.0);
        t.insert(
            "output".into(),
            toml::Value::Table("every = 2".parse::<toml::Table>().unwrap()),
        );
    });
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(
        &every2,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            loop_marker: Some(mark),
            results_ring: Some(16),
            writer_delay: Some(std::time::Duration::from_millis(2)),
            overflow_wait: Some(std::time::Duration::ZERO),
            ..Default::default()
        },
    )
    .unwrap();
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    println!(
        "recall after a writer overflow at step {}: {n} allocations",
        out.steps
    );
    let RunStatus::Stopped(ev) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(ev.kind.name(), "writer_overflow");
    assert!(out.steps < every2.analysis.n_steps());
    assert_eq!(n, 0);
}

/// The estimation slot's secant stiffness has the specimen's sign and size: the quick start's
/// first-storey column is a 40 000 N/m spring with a 60 N·s/m dashpot behind a compensated
/// 4 ms actuator delay and a noisy load cell.
#[test]
fn estimation_slot_reports_the_positive_secant_stiffness_of_the_specimen() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml")).unwrap();
    let model = Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap();
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            max_steps: Some(2000),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let k = out.estimation["secant_stiffness"].as_f64().unwrap();
    println!(
        "secant stiffness {k:.1} N/m from {} snapshots",
        out.estimation["snapshots"]
    );
    // Measured 42 122 N/m over 10 s (the issue 9 report had −35 187 N/m from −Λ·u). The
    // force is measured at the achieved (lagging) position and paired with the corrected
    // displacement, so a few per cent of bias remain: the sign and size are what is checked.
    assert!((k - 4.0e4).abs() < 0.1 * 4.0e4, "{k}");
}

/// Ring sizes are checked before anything is allocated: a results ring that multiplies out
/// to gigabytes is refused with the field named (it used to abort on the allocation).
#[test]
fn oversized_rings_are_refused_before_allocating() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml")).unwrap();
    let model = Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap();
    let err = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            results_ring: Some(1 << 26),
            ..Default::default()
        },
    )
    .err()
    .expect("must be refused");
    let msg = err.to_string();
    println!("{msg}");
    assert!(msg.contains("runner.results_ring"), "{msg}");
    assert!(msg.contains("MiB"), "{msg}");
}

/// `RunOptions::trace` (`hybridsim realtime --trace`): every physical tick, numerical step and
/// link hand-off is kept in buffers allocated before the loop (nothing allocates in the loop
/// threads), written to `trace.csv` after the run in the schedule's order, and the results are
/// the same bits as without the trace.
#[test]
fn a_traced_run_keeps_every_activation_without_allocating_and_changes_no_result() {
    let model = example(|t| {
        set_duration(t, 4.0);
        t.insert(
            "output".into(),
            toml::Value::Table("every = 1".parse::<toml::Table>().unwrap()),
        );
    });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("traced_run");
    let _ = std::fs::remove_dir_all(&dir);
    let plain = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            ..Default::default()
        },
    )
    .unwrap();
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let traced = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            loop_marker: Some(mark),
            folder: Some(dir.clone()),
            trace: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(LOOP_ALLOCATIONS.load(Ordering::SeqCst), 0);
    assert_eq!(traced.status, RunStatus::Completed);
    assert_eq!(plain.rows.len(), traced.rows.len());
    for (a, b) in plain.rows.iter().zip(&traced.rows) {
        let a: Vec<u64> = a.iter().map(|x| x.to_bits()).collect();
        let b: Vec<u64> = b.iter().map(|x| x.to_bits()).collect();
        assert_eq!(a, b);
    }
    let steps = traced.steps;
    let ss = model.analysis.subcycles as u64;
    assert!(ss >= 2 && steps > 100, "ss {ss}, {steps} steps");
    let csv = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("task,step,substep,cpu,t0_us,t1_us,t2_us,t3_us")
    );
    let mut count = std::collections::BTreeMap::<&str, u64>::new();
    let mut ticks = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 8, "{line}");
        *count.entry(f[0]).or_default() += 1;
        if f[0] == "physical" {
            let (step, j): (u64, u64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
            ticks.push(step * ss + j - 1);
            let t: Vec<f64> = f[4..].iter().map(|x| x.parse().unwrap()).collect();
            // Job received before the tick started, the tick ended after it started.
            assert!(t[1] <= t[2] && t[2] <= t[3], "{line}");
        }
    }
    assert_eq!(count["physical"], steps * ss);
    assert_eq!(count["numerical"], steps);
    assert_eq!(count["link"], 2 * steps);
    // The link's second event of a step: solve start, physical link update end, the physical
    // job of the next step released, numerical link update end; no release after the last.
    let released: Vec<(u64, [f64; 4])> = csv
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("link,") && l.split(',').nth(2) == Some("1"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let t: Vec<f64> = f[4..].iter().map(|x| x.parse().unwrap()).collect();
            (f[1].parse().unwrap(), [t[0], t[1], t[2], t[3]])
        })
        .collect();
    assert_eq!(released.len() as u64, steps);
    for (step, t) in &released {
        if *step + 1 < steps {
            assert!(
                t[0] <= t[1] && t[1] <= t[2] && t[2] <= t[3],
                "step {step}: {t:?}"
            );
        } else {
            assert!(t[2].is_nan() && t[1] <= t[3], "last step {step}: {t:?}");
        }
    }
    assert!(ticks.iter().enumerate().all(|(i, &k)| k == i as u64));
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["trace"]["file"], "trace.csv");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `[runner] cpus`: with two entries the link and the physical task share the first CPU and
/// the numerical task has the second; a third entry gives the physical task a CPU of its own
/// (docs/realtime-pipeline.md). The requested CPU is what run.json reports, pinned or not.
#[test]
fn a_third_cpu_gives_the_physical_task_its_own() {
    for (cpus, expected) in [
        ("[0, 1]", [Some(0), Some(0), Some(1)]),
        ("[1, 1, 0]", [Some(1), Some(0), Some(1)]),
    ] {
        let model = example(|t| {
            set_duration(t, 0.2);
            t.insert(
                "runner".into(),
                toml::Value::Table(format!("cpus = {cpus}").parse::<toml::Table>().unwrap()),
            );
        });
        let out = run(
            &model,
            &RunOptions {
                pacing: Some(Pacing::Fast),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        let by_task = |task: &str| out.setup.iter().find(|s| s.task == task).unwrap().cpu;
        assert_eq!(
            [by_task("link"), by_task("physical"), by_task("numerical")],
            expected,
            "cpus = {cpus}"
        );
    }
}
