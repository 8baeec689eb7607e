//! Online model updating as its own task of the threaded runner (issue 14,
//! `hybridsim_rt::updating_task`): the filter on its own thread gives the bits of the inline
//! filter of `hybridsim::Simulation`, allocates nothing in its loop, and a fault in it (an
//! injected panic, a non-finite estimate, a stall) turns updating off or costs recorded
//! misses, never the test.
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::{Model, Simulation};
use hybridsim_rt::{run, RunOptions, RunOutcome, RunStatus};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

mod common;
use common::counting::{mark, LOOP_ALLOCATIONS, LOOP_FREES};

/// The two-pier bridge of the updating example (tested pier A identified, pier B updated),
/// every step recorded.
fn bridge() -> Model {
    bridge_with(false)
}

/// The same with `[updating] refactorize = "on_update"` when `refactorize`.
fn bridge_with(refactorize: bool) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text =
        std::fs::read_to_string(root.join("examples/updating_two_pier_bridge.toml")).unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    if refactorize {
        t["updating"]
            .as_table_mut()
            .unwrap()
            .insert("refactorize".into(), "on_update".into());
    }
    t.insert(
        "output".into(),
        toml::Value::Table("every = 1".parse::<toml::Table>().unwrap()),
    );
    Model::from_toml(
        &toml::to_string(&t).unwrap(),
        "updating_two_pier_bridge.toml",
        &NoFiles,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Every row of the inline run (`Simulation` applies `[updating]` with the filter inline).
fn inline_rows(model: &Model, steps: u64) -> Vec<Vec<f64>> {
    inline_rows_with(model, steps, |_| {})
}

/// The same, after `prepare` on the simulation (e.g. an injected fault).
fn inline_rows_with(
    model: &Model,
    steps: u64,
    prepare: impl FnOnce(&mut Simulation),
) -> Vec<Vec<f64>> {
    let mut sim = Simulation::new(model.clone()).unwrap();
    prepare(&mut sim);
    let mut row = vec![0.0; sim.columns().len()];
    sim.record(&mut row);
    let mut rows = vec![row.clone()];
    for _ in 0..steps {
        sim.step().unwrap();
        sim.record(&mut row);
        rows.push(row.clone());
    }
    rows
}

fn threaded(model: &Model, opts: RunOptions) -> RunOutcome {
    run(
        model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            ..opts
        },
    )
    .unwrap()
}

fn updating_task_stats(out: &RunOutcome) -> &serde_json::Value {
    out.run_json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "updating")
        .expect("an updating task in run.json")
}

/// The threaded run with the filter on its own task writes the bits of the inline filter,
/// row for row; run.json reports the task like the others (its activations, execution time,
/// CPU time and no misses) and its `updating` section equals the inline one's.
#[test]
fn the_updating_task_gives_the_bits_of_the_inline_filter() {
    let model = bridge();
    let out = threaded(&model, RunOptions::default());
    assert_eq!(out.status, RunStatus::Completed);
    let n = out.steps;
    assert_eq!(n, model.analysis.n_steps());
    let rows = inline_rows(&model, n);
    assert_eq!(out.rows.len(), rows.len());
    for (k, (a, b)) in out.rows.iter().zip(&rows).enumerate() {
        assert!(
            a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "row {k} differs"
        );
    }
    let task = updating_task_stats(&out);
    println!("{task}");
    assert_eq!(task["execution"]["count"], n);
    assert_eq!(task["deadline_misses"], 0);
    assert!(task["cpu_seconds"].as_f64().is_some());
    let u = &out.run_json["updating"];
    assert_eq!(u["updates"], n);
    assert_eq!(u["applied"], n - 1);
    assert_eq!(u["state"], "active");
    assert!(u["task_fault"].is_null());
    assert_eq!(out.run_json["updating_task"]["misses"], 0);

    // The inline summary is the same.
    let mut sim = Simulation::new(model.clone()).unwrap();
    for _ in 0..n {
        sim.step().unwrap();
    }
    let inline = hybridsim_io::updating::updating_json(&sim.updating().unwrap().summary());
    assert_eq!(*u, inline);
}

/// A panic in the updating task at step 600, and a non-finite estimate at step 900: updating
/// is turned off there (run.json says why and when), the receivers keep the last estimate
/// they received, and the test completes. Up to the step whose estimate failed, the rows
/// are the clean run's bits; after it they are not (the receiver stopped changing).
#[test]
fn a_fault_in_the_updating_task_turns_updating_off_not_the_test() {
    let model = bridge();
    let clean = threaded(&model, RunOptions::default());
    for (inject, at, reason) in [
        ("updating:panic:600", 600u64, "panicked"),
        ("updating:nan:900", 900, "non-finite"),
    ] {
        let out = threaded(
            &model,
            RunOptions {
                inject: Some(inject.parse().unwrap()),
                ..Default::default()
            },
        );
        println!("{inject}: {}", out.run_json["updating_task"]);
        assert_eq!(out.status, RunStatus::Completed, "{inject}");
        assert_eq!(out.steps, model.analysis.n_steps());
        let u = &out.run_json["updating"];
        assert_eq!(u["state"], "tripped", "{inject}");
        let fault = &u["task_fault"];
        assert!(
            fault["reason"].as_str().unwrap().contains(reason),
            "{inject}: {fault}"
        );
        // The estimate of step `at` (after `at` steps) was due at the end of step `at + 1`.
        let t = fault["time"].as_f64().unwrap();
        let dt = model.analysis.time_step;
        assert!((t - (at + 1) as f64 * dt).abs() < 1e-9, "{inject}: {t}");
        // Every estimate before it was applied, none after.
        assert_eq!(u["applied"], at - 1, "{inject}");
        if reason == "panicked" {
            let msg = out.run_json["updating_task"]["panic"].as_str().unwrap();
            assert!(msg.contains("injected panic"), "{msg}");
        }
        assert!(out.panics.is_empty(), "{:?}", out.panics);
        // Same bits up to row `at` (the row of step `at + 1` already records pier B's force
        // with the estimate applied at its end) …
        for k in 0..=at as usize {
            assert_eq!(out.rows[k], clean.rows[k], "{inject}: row {k}");
        }
        // … and a different response afterwards (pier B kept its last estimate).
        assert_ne!(out.rows.last(), clean.rows.last(), "{inject}");
    }
}

/// A stalled updating task (1.5 s at step 200) in a fast run with a 200 ms wait: the estimates
/// that are not back in time are recorded misses (the receivers keep the previous values),
/// late ones are dropped, the filter goes on with every snapshot, and the test completes.
#[test]
fn a_late_estimate_is_a_recorded_miss_and_the_previous_one_is_kept() {
    let model = bridge();
    let out = threaded(
        &model,
        RunOptions {
            inject: Some("updating:stall=1.5:200".parse().unwrap()),
            watchdog: Some(Duration::from_millis(200)),
            ..Default::default()
        },
    );
    let task = &out.run_json["updating_task"];
    println!("{task}");
    assert_eq!(out.status, RunStatus::Completed);
    let misses = task["misses"].as_u64().unwrap();
    assert!(misses >= 1, "{task}");
    assert_eq!(updating_task_stats(&out)["deadline_misses"], misses);
    let u = &out.run_json["updating"];
    println!("{u}");
    assert_eq!(u["misses"], misses);
    let applied = u["applied"].as_u64().unwrap();
    match u["state"].as_str() {
        // The stall ended before the run did: the filter went on with every snapshot.
        Some("active") => {
            assert_eq!(u["updates"], out.steps);
            assert_eq!(applied, out.steps - 1 - misses);
        }
        // A fast run on a quiet machine can finish its remaining steps inside the 1.5 s
        // stall: updating is then turned off as stalled, never the test.
        Some("tripped") => {
            assert_eq!(task["stalled"], true, "{task}");
            assert!(applied + misses < out.steps, "{u}");
        }
        other => panic!("updating state {other:?}: {u}"),
    }
}

/// The threaded loop with the updating task allocates nothing in any loop thread over the
/// 2000 steps of the example: the updating task's loop included, and with `refactorize =
/// "on_update"` the link thread's swaps included (the builds allocate on the updating task,
/// outside its marked part; the old operators are freed there too).
#[test]
fn the_updating_task_does_not_allocate() {
    for refactorize in [false, true] {
        let model = bridge_with(refactorize);
        LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
        LOOP_FREES.store(0, Ordering::SeqCst);
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
        let frees = LOOP_FREES.load(Ordering::SeqCst);
        println!(
            "{} steps with the updating task (refactorize {refactorize}): {n} allocations, \
             {frees} frees; {}",
            out.steps, out.run_json["updating"]["refactorize"]
        );
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(updating_task_stats(&out)["execution"]["count"], out.steps);
        if refactorize {
            let swaps = out.run_json["updating"]["refactorize"]["swaps"]
                .as_u64()
                .unwrap();
            assert!(swaps > 1000, "{swaps}");
        }
        assert_eq!(n, 0);
        assert_eq!(frees, 0);
    }
}

/// With `refactorize = "on_update"` the updating task builds the receiving partition's new
/// operators (D^N, ℚ^N, H) off the link thread and the link thread swaps them in with the
/// estimate, one step after its update: the threaded run writes the bits of `Simulation`,
/// which builds them inline at the same step, and refactorization changes the response.
#[test]
fn refactorization_on_the_updating_task_gives_the_bits_of_the_inline_build() {
    let model = bridge_with(true);
    let out = threaded(&model, RunOptions::default());
    assert_eq!(out.status, RunStatus::Completed);
    let n = out.steps;
    let rows = inline_rows(&model, n);
    assert_eq!(out.rows.len(), rows.len());
    for (k, (a, b)) in out.rows.iter().zip(&rows).enumerate() {
        assert!(
            a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "row {k} differs"
        );
    }
    let u = &out.run_json["updating"];
    let r = &u["refactorize"];
    println!("{r}");
    assert_eq!(r["mode"], "on_update");
    assert_eq!(r["misses"], 0);
    assert_eq!(r["late_dropped"], 0);
    assert!(r["off"].is_null());
    let swaps = r["swaps"].as_u64().unwrap();
    assert_eq!(
        swaps + r["unchanged"].as_u64().unwrap(),
        u["applied"].as_u64().unwrap()
    );
    assert!(swaps > n / 2, "{r}");
    // The inline run counts the same.
    let mut sim = Simulation::new(model.clone()).unwrap();
    for _ in 0..n {
        sim.step().unwrap();
    }
    let inline = sim.updating().unwrap().summary();
    let ir = inline.refactorization.expect("on_update");
    assert_eq!(
        (ir.swaps, ir.unchanged, ir.misses),
        (swaps, r["unchanged"].as_u64().unwrap(), 0)
    );
    // Refactorization changes the run (pier B's operators follow its estimates).
    let never = inline_rows(&bridge_with(false), n);
    assert_ne!(never.last(), rows.last());
}

/// A panic in the refactorization build on the updating task (injected at the update of step
/// 600) turns refactorization off, not updating and not the test: the estimates are still
/// applied, the operators built before stay, run.json says why and when, and the rows are the
/// bits of `Simulation` with the same panic injected into its inline build.
#[test]
fn a_panic_in_the_refactorization_build_turns_it_off_not_the_test() {
    let model = bridge_with(true);
    let out = threaded(
        &model,
        RunOptions {
            inject: Some("updating:refactor-panic:600".parse().unwrap()),
            ..Default::default()
        },
    );
    assert_eq!(out.status, RunStatus::Completed);
    assert!(out.panics.is_empty(), "{:?}", out.panics);
    let u = &out.run_json["updating"];
    let r = &u["refactorize"];
    println!("{r}");
    assert_eq!(u["state"], "active");
    assert_eq!(u["applied"], out.steps - 1);
    let off = &r["off"];
    assert!(
        off["reason"].as_str().unwrap().contains("injected panic"),
        "{off}"
    );
    let t = off["time"].as_f64().unwrap();
    assert!((t - 601.0 * model.analysis.time_step).abs() < 1e-9, "{t}");
    assert_eq!(r["builds"], 600);
    let rows = inline_rows_with(&model, out.steps, |sim| {
        sim.updating_mut()
            .unwrap()
            .refactorizer_mut()
            .unwrap()
            .inject_panic_at(600)
    });
    for (k, (a, b)) in out.rows.iter().zip(&rows).enumerate() {
        assert!(
            a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "row {k} differs"
        );
    }
    // A model that builds no operators refuses the hook.
    let err = run(
        &bridge(),
        &RunOptions {
            pacing: Some(Pacing::Fast),
            inject: Some("updating:refactor-panic:3".parse().unwrap()),
            ..Default::default()
        },
    )
    .err()
    .expect("refused");
    assert!(err.to_string().contains("refactorize"), "{err}");
}

/// Injecting into the updating task of a model without `[updating]` is refused.
#[test]
fn an_updating_fault_needs_an_updating_task() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml")).unwrap();
    let model = Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap();
    let err = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            inject: Some("updating:panic:3".parse().unwrap()),
            ..Default::default()
        },
    )
    .err()
    .expect("refused");
    assert!(err.to_string().contains("no [updating]"), "{err}");
    assert!("numerical:nan:3"
        .parse::<hybridsim_rt::TaskFault>()
        .is_err());
}

/// **Measurement, not a check** (`cargo test -p hybridsim-rt --test updating_task -- --ignored
/// --nocapture`; reported in BENCHMARKS.md): the updating task's execution time per update
/// and its share of the 5 ms coarse step of the example, paced at real time (soft real time
/// allowed), 2000 steps.
#[test]
#[ignore]
fn updating_task_share_of_the_coarse_step_at_real_time() {
    // HYBRIDSIM_REFACTORIZE=1: with `refactorize = "on_update"` (the builds on the task too).
    let refactorize = std::env::var_os("HYBRIDSIM_REFACTORIZE").is_some();
    let model = bridge_with(refactorize);
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Realtime),
            allow_soft_realtime: true,
            ..Default::default()
        },
    )
    .unwrap();
    let task = updating_task_stats(&out);
    let dt = model.analysis.time_step;
    let mean_us = task["execution"]["mean_us"].as_f64().unwrap();
    let p99_us = task["execution"]["p99_us"].as_f64().unwrap();
    println!(
        "status {:?}, {} steps, wall {:.2} s",
        out.status, out.steps, out.wall
    );
    for t in out.run_json["tasks"].as_array().unwrap() {
        println!("{t}");
    }
    println!(
        "updating task: mean {mean_us:.1} µs, p99 {p99_us:.1} µs per update = {:.2} % (mean) / \
         {:.2} % (p99) of the {:.1} ms coarse step; thread CPU {:.3} s over {:.2} s; misses {}",
        100.0 * mean_us * 1e-6 / dt,
        100.0 * p99_us * 1e-6 / dt,
        dt * 1e3,
        task["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
        task["loop_seconds"].as_f64().unwrap_or(f64::NAN),
        out.run_json["updating_task"]["misses"],
    );
    let r = &out.run_json["updating"]["refactorize"];
    if let Some(mean) = r["build_seconds_mean"].as_f64() {
        let longest = r["build_seconds_longest"].as_f64().unwrap();
        println!(
            "refactorization on the task: {r}; build mean {:.1} µs = {:.2} % of the coarse step, \
             longest {:.1} µs = {:.2} %",
            mean * 1e6,
            100.0 * mean / dt,
            longest * 1e6,
            100.0 * longest / dt
        );
    }
}
