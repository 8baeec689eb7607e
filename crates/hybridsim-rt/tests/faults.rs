//! A fault injected in a phase of a step ends the run the same way on one thread
//! (`hybridsim::runner::run` with the sequential executor, as `hybridsim run`) and on the
//! threaded runner: the same safety event, the same completed steps, the same rows.

use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{PgAlpha, StepSettings};
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::physical::{EventKind, PortError};
use hybridsim::runner::{self, EndState, RunSettings, RunSink, Sequential};
use hybridsim::Model;
use hybridsim_rt::{run_integrator, RunOptions, RunStatus};
use std::path::Path;
use std::sync::atomic::AtomicBool;

fn quickstart(extra: &str) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/quickstart.toml")).unwrap() + extra;
    Model::from_toml(&text, "quickstart.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// What goes wrong at tick `at` of the specimen.
#[derive(Clone, Copy, Debug)]
enum Injection {
    /// The port reports a fault (a lost controller, a dead amplifier).
    PortFault,
    /// A NaN force reaches the integrator past the lab's own checks (the state turns
    /// non-finite and the link update stops the test as a divergence).
    NanForce,
}

fn integrator(model: &Model, injection: Option<Injection>) -> PgAlpha {
    let mut parts = build_partitions(model, Grouping::Partitioned).unwrap();
    if let Some(what) = injection {
        for p in parts.iter_mut() {
            if let Some(port) = p.physical.as_mut() {
                let mut ticks = 0u64;
                port.intercept(Box::new(move |inner, tick, u, v, f| {
                    ticks += 1;
                    let r = inner.command(tick, u, v, f);
                    if ticks == 5 * 40 + 2 {
                        match what {
                            Injection::PortFault => {
                                return Err(PortError::Fault("injected port fault".into()))
                            }
                            Injection::NanForce => f.iter_mut().for_each(|x| *x = f64::NAN),
                        }
                    }
                    r
                }));
            }
        }
    }
    PgAlpha::new(parts, &StepSettings::from_analysis(&model.analysis)).unwrap()
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

fn sequential(model: &Model, mut pg: PgAlpha, n_steps: u64) -> (EndState, u64, Vec<Vec<f64>>) {
    let mut recorder = Recorder::new(model, &pg);
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
        &mut Sequential(&mut pg),
        &mut recorder,
        &mut rows,
        &settings,
        &AtomicBool::new(false),
        &mut row,
    );
    (end.state, end.steps, rows.0)
}

#[test]
fn a_fault_in_each_phase_ends_both_runners_the_same_way() {
    // The numerical free phase: a load on the top floor that overflows to infinity at
    // t = 0.2 s (the numerical state turns non-finite, caught at the link update).
    let overflow = "\n[[load]]\nnode = 3\ndof = \"x\"\npoints = [[0.0, 0.0], [0.2, 0.0], [0.2001, 1.0e308], [20.0, 1.0e308]]\n";
    let cases: [(&str, &str, Option<Injection>, EventKind); 3] = [
        (
            "physical substep: port fault",
            "",
            Some(Injection::PortFault),
            EventKind::TransferFault,
        ),
        (
            "physical substep: NaN force",
            "",
            Some(Injection::NanForce),
            EventKind::Divergence,
        ),
        (
            "numerical free phase: overflow",
            overflow,
            None,
            EventKind::Divergence,
        ),
    ];
    for (name, extra, injection, kind) in cases {
        let model = quickstart(extra);
        let n_steps = 200;
        let (state, steps, rows) = sequential(&model, integrator(&model, injection), n_steps);
        let out = run_integrator(
            &model,
            integrator(&model, injection),
            &RunOptions {
                pacing: Some(Pacing::Fast),
                keep_rows: true,
                max_steps: Some(n_steps),
                ..Default::default()
            },
        )
        .unwrap();
        println!(
            "{name}: sequential {} after {steps} steps ({:?}); threaded {:?} after {} steps",
            state.status(),
            state.event().map(|e| e.kind),
            out.status,
            out.steps
        );
        let event = state.event().unwrap_or_else(|| panic!("{name}: {state:?}"));
        assert_eq!(event.kind, kind, "{name}");
        let RunStatus::Stopped(ev) = &out.status else {
            panic!("{name}: threaded runner not stopped: {:?}", out.status);
        };
        assert_eq!(ev.kind, event.kind, "{name}");
        assert_eq!(out.steps, steps, "{name}");
        assert!(steps < n_steps, "{name}");
        assert_eq!(out.rows.len(), rows.len(), "{name}");
        for (a, b) in out.rows.iter().zip(&rows) {
            assert_eq!(
                a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                b.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{name}"
            );
        }
        assert!(!out.safety[0].armed, "{name}");
        assert_eq!(out.run_json["status"], "stopped", "{name}");
    }
}

/// A panic in the physical worker ends the threaded run (it used to hang): the worker
/// catches it, holds the laboratory (`task_panic`) and sends it back, the run stops through
/// the safety layer, says which task panicked and why, and keeps every completed step.
#[test]
fn a_panic_in_the_physical_worker_ends_the_run_instead_of_hanging() {
    let model = quickstart("");
    let mut parts = build_partitions(&model, Grouping::Partitioned).unwrap();
    for p in parts.iter_mut() {
        if let Some(port) = p.physical.as_mut() {
            // The port panics at tick 5·30 + 3, on the physical worker thread.
            let mut ticks = 0u64;
            port.intercept(Box::new(move |inner, tick, u, v, f| {
                ticks += 1;
                if ticks == 5 * 30 + 3 {
                    panic!("injected panic on the physical worker thread");
                }
                inner.command(tick, u, v, f)
            }));
        }
    }
    let pg = PgAlpha::new(parts, &StepSettings::from_analysis(&model.analysis)).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-rt-panic");
    let _ = std::fs::remove_dir_all(&dir);
    let (tx, rx) = std::sync::mpsc::channel();
    let m = model.clone();
    let folder = dir.clone();
    std::thread::spawn(move || {
        let out = run_integrator(
            &m,
            pg,
            &RunOptions {
                pacing: Some(Pacing::Fast),
                keep_rows: true,
                max_steps: Some(200),
                folder: Some(folder),
                ..Default::default()
            },
        );
        let _ = tx.send(out.map(|o| (o.status, o.steps, o.rows.len())));
    });
    // Bounded: a hang fails the test instead of stalling the suite.
    let (status, steps, rows) = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the threaded run hung after a worker panic")
        .unwrap();
    println!("{status:?} after {steps} steps, {rows} rows");
    let RunStatus::Stopped(ev) = &status else {
        panic!("{status:?}");
    };
    assert_eq!(ev.kind, hybridsim::physical::EventKind::TaskPanic);
    assert_eq!(steps, 30);
    assert_eq!(rows as u64, 1 + steps / 2);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["safety_event"]["kind"], "task_panic");
    assert_eq!(json["task_panics"][0]["task"], "physical");
    assert!(json["task_panics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("injected panic on the physical worker thread"));
    assert_eq!(json["safety"][0]["armed"], false);
    let _ = std::fs::remove_dir_all(&dir);
}
