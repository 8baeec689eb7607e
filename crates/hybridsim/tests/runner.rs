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
    let ncol = recorder.n_columns();
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
    let mut row = vec![0.0; recorder.n_columns()];
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
    let mut row = vec![0.0; recorder.n_columns()];
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
    let mut row = vec![0.0; recorder.n_columns()];
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

/// `run_with_fault` with the fault at step `at` and a row every `every` steps.
fn rows_with_fault(phase: Phase, at: u64, every: u64) -> (EndState, u64, Vec<Vec<f64>>) {
    let model = quickstart();
    let a = &model.analysis;
    let mut parts =
        hybridsim::assembly::build_partitions(&model, hybridsim::assembly::Grouping::Partitioned)
            .unwrap();
    if let Phase::PhysicalSubstep = phase {
        // Tick 3 of the 5 of step `at`: the port and the specimen are inside the failed step.
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
    }
    let mut integ: Box<dyn TimeIntegrator> = Box::new(
        hybridsim::integrators::PgAlpha::new(
            parts,
            &hybridsim::integrators::StepSettings::from_analysis(a),
        )
        .unwrap(),
    );
    let mut recorder = Recorder::new(&model, integ.as_ref());
    let mut row = vec![0.0; recorder.n_columns()];
    let mut sink = Memory::default();
    let settings = RunSettings {
        n_steps: 200,
        every,
        divergence: model.lab.as_ref().map(|l| l.safety.divergence),
        max_overruns: None,
    };
    let abort = AtomicBool::new(false);
    let end = runner::run(
        &mut Injecting {
            inner: Sequential(integ.as_mut()),
            phase,
            at,
        },
        &mut recorder,
        &mut sink,
        &settings,
        &abort,
        &mut row,
    );
    (end.state, end.steps, sink.rows)
}

#[test]
fn a_lab_step_that_fails_between_two_rows_leaves_the_row_of_the_last_completed_step_bit_for_bit() {
    // The step fails at 39 with a row every 4: rows 0, 4, …, 36 and that of step 38, made from
    // the recorder's capture after step 38, equal to the rows of a run recording every step.
    // The interface-solve fault advances the integrator through the whole step before failing,
    // the physical-substep fault leaves the port at tick 3 of 5: a row taken at the stop would
    // differ in both.
    for phase in [
        Phase::NumericalFree,
        Phase::PhysicalSubstep,
        Phase::InterfaceSolve,
    ] {
        let (state1, steps1, every1) = rows_with_fault(phase, 39, 1);
        let (state4, steps4, every4) = rows_with_fault(phase, 39, 4);
        assert_eq!(state1.status(), "stopped", "{phase:?}");
        // (Debug text: the event's NaN value and limit compare unequal as numbers.)
        assert_eq!(format!("{state4:?}"), format!("{state1:?}"), "{phase:?}");
        assert_eq!((steps1, steps4), (38, 38), "{phase:?}");
        assert_eq!(every1.len(), 39, "{phase:?}");
        let expected: Vec<&Vec<f64>> = (0..=9)
            .map(|k| &every1[4 * k])
            .chain([&every1[38]])
            .collect();
        assert_eq!(every4.len(), expected.len(), "{phase:?}");
        for (got, want) in every4.iter().zip(expected) {
            let bits = |r: &[f64]| r.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(got),
                bits(want),
                "{phase:?}: the row at t = {}",
                want[0]
            );
        }
    }
}

#[test]
fn a_captured_row_equals_the_row_recorded_at_the_capture_for_every_example() {
    // `Recorder::record_captured` after `Recorder::capture` gives `Recorder::record`'s row of
    // the moment of the capture, bit for bit, a few steps later (the integrator has moved on),
    // for every example that builds without files or a network, as written and with the
    // element and energy channels on.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut checked = 0;
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let Ok(model) = Model::from_toml(&text, &name, &hybridsim::model::NoFiles) else {
            println!("{name}: needs files, skipped");
            continue;
        };
        if model.lab.as_ref().is_some_and(|l| l.lab.link.is_some()) {
            println!("{name}: over a network, skipped");
            continue;
        }
        for channels_on in [false, true] {
            let mut model = model.clone();
            if channels_on {
                model.output.elements = true;
                model.output.energy = true;
            }
            let Ok(mut integ) = hybridsim::integrators::build(&model) else {
                println!("{name}: does not build here, skipped");
                break;
            };
            let mut recorder = Recorder::new(&model, integ.as_ref());
            let n = recorder.n_columns();
            let (mut live, mut later) = (vec![0.0; n], vec![0.0; n]);
            for step in 0..12 {
                recorder.capture(integ.as_mut());
                recorder.record(integ.as_mut(), &mut live);
                for _ in 0..step % 3 {
                    if integ.step().is_err() {
                        break;
                    }
                }
                recorder.record_captured(integ.as_ref(), &mut later);
                for (c, (a, b)) in live.iter().zip(&later).enumerate() {
                    assert_eq!(
                        a.to_bits(),
                        b.to_bits(),
                        "{name} (channels on: {channels_on}), step {step}: column {}",
                        recorder.columns(integ.as_ref())[c].header()
                    );
                }
                if integ.step().is_err() {
                    break;
                }
            }
            checked += 1;
        }
    }
    println!("{checked} example set-ups checked");
    assert!(checked >= 40, "only {checked} example set-ups checked");
}
