//! The one run loop and trip policy (`hybridsim::runner`): a fault injected in each phase of
//! a step (numerical free phase, physical substep, interface solve, recording) trips the
//! laboratory and ends the run in `Stopped` with every completed step recorded.

use hybridsim::integrators::TimeIntegrator;
use hybridsim::output::Recorder;
use hybridsim::physical::{EventKind, PortError};
use hybridsim::runner::{self, EndState, Fault, RunSettings, RunSink, Sequential, StepExecutor};
use hybridsim::Model;
use hybridsim::StepError;
use std::sync::atomic::AtomicBool;

fn quickstart() -> Model {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/quickstart.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    Model::from_toml(&text, "quickstart.toml", &hybridsim::model::NoFiles)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Keeps every row and lab record; refuses rows from `fail_at_row` on.
#[derive(Default)]
struct Memory {
    rows: Vec<Vec<f64>>,
    lab: Vec<Vec<f64>>,
    fail_at_row: Option<usize>,
    stopped: bool,
}

impl RunSink for Memory {
    fn row(&mut self, row: &[f64]) -> bool {
        if self.fail_at_row.is_some_and(|k| self.rows.len() >= k) && !self.stopped {
            return false;
        }
        self.rows.push(row.to_vec());
        true
    }
    fn lab_record(&mut self, _partition: usize, record: &[f64]) -> bool {
        self.lab.push(record.to_vec());
        true
    }
    fn stopped(&mut self) {
        self.stopped = true;
    }
}

/// Where to inject the fault.
#[derive(Clone, Copy, Debug)]
enum Phase {
    NumericalFree,
    PhysicalSubstep,
    InterfaceSolve,
    Recording,
}

/// Fails the numerical free phase or the interface solve of step `at` (as the integrator
/// reports them: a failed substructure, non-finite multipliers).
struct Injecting<'a> {
    inner: Sequential<'a>,
    phase: Phase,
    at: u64,
}

impl StepExecutor for Injecting<'_> {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.inner.integrator()
    }
    fn step(&mut self) -> Result<(), StepError> {
        let n = self.inner.integrator().steps_taken() + 1;
        if n == self.at {
            match self.phase {
                Phase::NumericalFree => {
                    return Err(StepError::Physical {
                        substructure: "frame".into(),
                        reason: "injected fault in the numerical free phase".into(),
                    })
                }
                Phase::InterfaceSolve => {
                    self.inner.step()?;
                    return Err(StepError::NonFinite {
                        what: "interface multipliers",
                        time: self.inner.integrator().time(),
                        step: n,
                    });
                }
                _ => {}
            }
        }
        self.inner.step()
    }
}

fn run_with_fault(phase: Phase) -> (EndState, u64, Memory, Box<dyn TimeIntegrator>) {
    let model = quickstart();
    let mut integ = hybridsim::integrators::build(&model).unwrap();
    let mut recorder = Recorder::new(&model, integ.as_ref());
    let ncol = recorder.columns().len();
    let at = 37u64;
    if let Phase::PhysicalSubstep = phase {
        // Rebuild with the failing specimen behind the port (tick 5·36 + 3 is in step 37).
        let a = &model.analysis;
        let mut parts = hybridsim::assembly::build_partitions(
            &model,
            hybridsim::assembly::Grouping::Partitioned,
        )
        .unwrap();
        for p in parts.iter_mut() {
            if let Some(port) = p.physical.as_mut() {
                let fail_at = (at - 1) * a.subcycles as u64 + 3;
                let mut ticks = 0u64;
                port.intercept(Box::new(move |inner, tick, u, v, f| {
                    ticks += 1;
                    if ticks == fail_at {
                        return Err(PortError::Fault(
                            "injected fault in a physical substep".into(),
                        ));
                    }
                    inner.command(tick, u, v, f)
                }));
            }
        }
        integ = Box::new(
            hybridsim::integrators::PgAlpha::new(
                parts,
                &hybridsim::integrators::StepSettings::from_analysis(a),
            )
            .unwrap(),
        );
        recorder = Recorder::new(&model, integ.as_ref());
    }
    let mut sink = Memory {
        fail_at_row: matches!(phase, Phase::Recording).then_some(20),
        ..Default::default()
    };
    let settings = RunSettings {
        n_steps: 200,
        every: 1,
        divergence: model.lab.as_ref().map(|l| l.safety.divergence),
        max_overruns: None,
    };
    let mut row = vec![0.0; ncol];
    let abort = AtomicBool::new(false);
    let end = {
        let mut exec = Injecting {
            inner: Sequential(integ.as_mut()),
            phase,
            at,
        };
        runner::run(
            &mut exec,
            &mut recorder,
            &mut sink,
            &settings,
            &abort,
            &mut row,
        )
    };
    (end.state, end.steps, sink, integ)
}

#[test]
fn a_fault_in_each_phase_trips_the_lab_and_stops_the_run() {
    for (phase, kind, steps) in [
        (Phase::NumericalFree, EventKind::TransferFault, 36),
        (Phase::PhysicalSubstep, EventKind::TransferFault, 36),
        (Phase::InterfaceSolve, EventKind::Divergence, 36),
        (Phase::Recording, EventKind::WriterOverflow, 20),
    ] {
        let (state, done, sink, integ) = run_with_fault(phase);
        println!(
            "{phase:?}: {} after {done} steps, {} rows, {} lab records: {:?}",
            state.status(),
            sink.rows.len(),
            sink.lab.len(),
            state.fault().map(|f| f.to_string())
        );
        let EndState::Stopped { event, fault } = &state else {
            panic!("{phase:?}: not stopped through the safety layer: {state:?}");
        };
        assert_eq!(event.kind, kind, "{phase:?}");
        assert_eq!(done, steps, "{phase:?}");
        assert_eq!(state.status(), "stopped");
        match phase {
            Phase::Recording => assert_eq!(*fault, Fault::Recording),
            _ => assert!(matches!(fault, Fault::Step(_)), "{fault:?}"),
        }
        // The lab is tripped, and every completed step is recorded: the initial row and one
        // per completed step (this sink loses the refused row of step 20; the real-time
        // ring sink keeps it and writes it after the stop).
        let lab = integ.partitions().iter().find_map(|p| p.lab()).unwrap();
        let summary = lab.safety_summary();
        assert!(!summary.armed, "{phase:?}");
        assert!(summary.max_sent[0] <= summary.limits[0].displacement);
        match phase {
            Phase::Recording => assert_eq!(sink.rows.len(), 20),
            _ => assert_eq!(sink.rows.len() as u64, 1 + done),
        }
        // The last lab record carries the tripped state (1 in the safety column, the fifth of
        // the actuator's seven, after time and wall time).
        assert_eq!(sink.lab.last().unwrap()[6], 1.0, "{phase:?}");
    }
}

#[test]
fn an_abort_trips_the_lab_and_a_numerical_run_fails_without_one() {
    // With a lab: abort before the first step.
    let model = quickstart();
    let mut integ = hybridsim::integrators::build(&model).unwrap();
    let mut recorder = Recorder::new(&model, integ.as_ref());
    let mut row = vec![0.0; recorder.columns().len()];
    let mut sink = Memory::default();
    let settings = RunSettings {
        n_steps: 10,
        every: 1,
        divergence: None,
        max_overruns: None,
    };
    let abort = AtomicBool::new(true);
    let end = runner::run(
        &mut Sequential(integ.as_mut()),
        &mut recorder,
        &mut sink,
        &settings,
        &abort,
        &mut row,
    );
    assert_eq!(end.state.event().unwrap().kind, EventKind::OperatorAbort);
    assert_eq!(end.steps, 0);
    // Without a lab there is nothing to trip: the run has failed ("aborted").
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/split_mass_v1.toml"
    ))
    .unwrap();
    let model = Model::from_toml(&text, "v1.toml", &hybridsim::model::NoFiles).unwrap();
    let mut integ = hybridsim::integrators::build(&model).unwrap();
    let mut recorder = Recorder::new(&model, integ.as_ref());
    let mut row = vec![0.0; recorder.columns().len()];
    let end = runner::run(
        &mut Sequential(integ.as_mut()),
        &mut recorder,
        &mut Memory::default(),
        &settings,
        &abort,
        &mut row,
    );
    assert_eq!(end.state, EndState::Failed(Fault::Abort));
    assert_eq!(end.state.status(), "aborted");
}

#[test]
fn a_stop_keeps_the_last_completed_step_of_a_numerical_run_whatever_every_is() {
    // Aborted after 7 steps with a row every 4: the rows of steps 0, 4 and 7.
    struct AbortAfter<'a> {
        inner: Sequential<'a>,
        abort: &'a AtomicBool,
        steps: u64,
    }
    impl StepExecutor for AbortAfter<'_> {
        fn integrator(&mut self) -> &mut dyn TimeIntegrator {
            self.inner.integrator()
        }
        fn step(&mut self) -> Result<(), StepError> {
            self.steps += 1;
            if self.steps == 7 {
                self.abort.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            self.inner.step()
        }
    }
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/split_mass_v1.toml"
    ))
    .unwrap();
    let model = Model::from_toml(&text, "v1.toml", &hybridsim::model::NoFiles).unwrap();
    let mut integ = hybridsim::integrators::build(&model).unwrap();
    let mut recorder = Recorder::new(&model, integ.as_ref());
    let mut row = vec![0.0; recorder.columns().len()];
    let mut sink = Memory::default();
    let abort = AtomicBool::new(false);
    let end = runner::run(
        &mut AbortAfter {
            inner: Sequential(integ.as_mut()),
            abort: &abort,
            steps: 0,
        },
        &mut recorder,
        &mut sink,
        &RunSettings {
            n_steps: 100,
            every: 4,
            divergence: None,
            max_overruns: None,
        },
        &abort,
        &mut row,
    );
    assert_eq!(end.state, EndState::Failed(Fault::Abort));
    assert_eq!(end.steps, 7);
    let dt = model.analysis.time_step;
    let times: Vec<f64> = sink.rows.iter().map(|r| r[0]).collect();
    assert_eq!(times.len(), 3, "{times:?}");
    for (t, step) in times.iter().zip([0.0, 4.0, 7.0]) {
        assert!((t - step * dt).abs() < 1e-9, "{times:?}");
    }
}
