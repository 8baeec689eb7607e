//! Faults of the laboratory rehearsed on the virtual lab (`[[lab.fault]]`): a stuck actuator,
//! a frozen sensor, a dropout, a NaN force and an overload — alone, and an overload during the
//! ramp-down. Every case must end in a safety stop through the one run loop, with no command
//! beyond a limit, a paced ramp in the lab records (one command per controller tick, each step
//! within the ramp rate, down to the rest position unless a second event holds it), and every
//! completed step recorded.

use hybridsim::model::lab::{InjectedFault, InjectedFaultKind, TripAction};
use hybridsim::output::Recorder;
use hybridsim::physical::{EventKind, RampState};
use hybridsim::runner::{self, EndState, RunSettings, RunSink, Sequential};
use hybridsim::Model;
use std::sync::atomic::AtomicBool;

const RAMP_RATE: f64 = 0.02; // m/s
const AT: f64 = 6.0; // s on the lab clock

fn quickstart(faults: &[(f64, InjectedFaultKind)]) -> Model {
    quickstart_ramping_at(faults, RAMP_RATE)
}

fn quickstart_ramping_at(faults: &[(f64, InjectedFaultKind)], rate: f64) -> Model {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/quickstart.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = Model::from_toml(&text, "quickstart.toml", &hybridsim::model::NoFiles)
        .unwrap_or_else(|e| panic!("{e}"));
    let lab = m.lab.as_mut().unwrap();
    lab.safety.on_trip = TripAction::RampDown { rate };
    let l = lab.safety.limits.get_mut("storey1").unwrap();
    l.following_error = 0.002;
    l.following_time = 0.02;
    lab.lab.faults = faults
        .iter()
        .map(|(at, kind)| InjectedFault {
            actuator: "storey1".into(),
            at: *at,
            kind: *kind,
        })
        .collect();
    m
}

#[derive(Default)]
struct Memory {
    rows: Vec<Vec<f64>>,
    lab: Vec<Vec<f64>>,
}

impl RunSink for Memory {
    fn row(&mut self, row: &[f64]) -> bool {
        self.rows.push(row.to_vec());
        true
    }
    fn lab_record(&mut self, _partition: usize, record: &[f64]) -> bool {
        self.lab.push(record.to_vec());
        true
    }
}

struct Outcome {
    state: EndState,
    steps: u64,
    sink: Memory,
    summary: hybridsim::physical::SafetySummary,
    dt_c: f64,
    ramp_rate: f64,
}

fn run(model: &Model) -> Outcome {
    let mut integ = hybridsim::integrators::build(model).unwrap();
    let mut recorder = Recorder::new(model, integ.as_ref());
    let mut row = vec![0.0; recorder.n_columns()];
    let mut sink = Memory::default();
    let end = runner::run(
        &mut Sequential(integ.as_mut()),
        &mut recorder,
        &mut sink,
        &RunSettings {
            n_steps: model.analysis.n_steps(),
            every: 1,
            divergence: model.lab.as_ref().map(|l| l.safety.divergence),
            max_overruns: None,
        },
        &AtomicBool::new(false),
        &mut row,
    );
    let mut summary = None;
    integ.for_each_lab(&mut |_, lab| summary = Some(lab.safety_summary()));
    Outcome {
        state: end.state,
        steps: end.steps,
        sink,
        summary: summary.unwrap(),
        dt_c: model.lab.as_ref().unwrap().lab.time_scale.dt_c,
        ramp_rate: match model.lab.as_ref().unwrap().safety.on_trip {
            TripAction::RampDown { rate } => rate,
            TripAction::Hold => 0.0,
        },
    }
}

/// The common checks: a safety stop, every completed step recorded, no command beyond the
/// stroke, and a paced ramp after the trip row: one row per tick, steps within the ramp rate,
/// down to the rest position (when `completes`).
fn check(o: &Outcome, completes: bool) -> EndState {
    let EndState::Stopped { event, .. } = &o.state else {
        panic!("not a safety stop: {:?}", o.state);
    };
    assert_eq!(
        o.sink.rows.len() as u64,
        1 + o.steps,
        "every completed step"
    );
    let limit = o.summary.limits[0].displacement;
    assert!(o.summary.max_sent[0] <= limit);
    // lab.csv columns: time, wall_time, desired, compensated, measured, force, safety.
    let lab = &o.sink.lab;
    let first_tripped = lab.iter().position(|r| r[6] != 0.0).expect("a tripped row");
    let ramp = &lab[first_tripped..];
    for w in ramp.windows(2) {
        assert!(
            (w[1][1] - w[0][1] - o.dt_c).abs() < 1e-9,
            "one ramp command per controller tick: {} then {}",
            w[0][1],
            w[1][1]
        );
        // The simulation time stands still during the ramp.
        assert_eq!(w[1][0], w[0][0]);
    }
    // The trip row shows the refused command (or the one whose measurement failed); the
    // ramp starts from the last accepted command, the one of the row before it when it was
    // refused, and every step is within the ramp rate.
    let mut sent: Vec<f64> = ramp[1..].iter().map(|r| r[3]).collect();
    sent.insert(0, lab[first_tripped - 1][3]);
    let step = o.ramp_rate * o.dt_c * (1.0 + 1e-9) + 1e-15;
    for w in sent[1..].windows(2) {
        assert!((w[1] - w[0]).abs() <= step, "{w:?}");
    }
    let first = sent.get(1).copied().unwrap_or(sent[0]);
    assert!(
        (first - sent[0]).abs() <= step || (first - ramp[0][3]).abs() <= step,
        "first ramp command {first} from {} / {}",
        sent[0],
        ramp[0][3]
    );
    assert!(sent.iter().all(|d| d.abs() <= limit));
    if completes {
        assert_eq!(o.summary.ramp, RampState::Completed, "{:?}", o.summary);
        let rest = ramp.last().unwrap()[3];
        assert!(rest.abs() < 1e-9, "ramped down to {rest}");
        assert!(o.summary.ramp_commands as usize + 1 >= ramp.len() - 1);
    }
    println!(
        "{event}; {} steps; ramp {} ({} commands over {:.3} s of lab clock)",
        o.steps,
        o.summary.ramp.name(),
        o.summary.ramp_commands,
        ramp.last().unwrap()[1] - ramp[0][1]
    );
    o.state.clone()
}

fn kind_of(state: &EndState) -> EventKind {
    state.event().unwrap().kind
}

#[test]
fn a_stuck_actuator_stops_on_following_error_and_ramps_down() {
    let o = run(&quickstart(&[(AT, InjectedFaultKind::StuckActuator)]));
    let s = check(&o, true);
    assert_eq!(kind_of(&s), EventKind::FollowingError);
    assert!(s.event().unwrap().time >= AT - 0.2);
}

#[test]
fn a_frozen_sensor_stops_the_test() {
    let o = run(&quickstart(&[(AT, InjectedFaultKind::FrozenSensor)]));
    let s = check(&o, true);
    assert!(
        matches!(
            kind_of(&s),
            EventKind::FrozenSensor | EventKind::FollowingError
        ),
        "{:?}",
        kind_of(&s)
    );
}

#[test]
fn a_dropout_stops_the_test() {
    let o = run(&quickstart(&[(AT, InjectedFaultKind::Dropout)]));
    let s = check(&o, false);
    assert_eq!(kind_of(&s), EventKind::SensorDropout);
    // The ramp cannot be measured either: its first command has no answer ... and the
    // layer tolerates dropout_ticks missing samples, then holds.
    assert_eq!(o.summary.ramp, RampState::Held);
    assert_eq!(
        o.summary.second_event.unwrap().kind,
        EventKind::SensorDropout
    );
}

#[test]
fn a_nan_force_stops_the_test() {
    let o = run(&quickstart(&[(AT, InjectedFaultKind::NanForce)]));
    let s = check(&o, false);
    assert_eq!(kind_of(&s), EventKind::NonFiniteMeasurement);
    // The load cell still reads NaN during the ramp: a second event holds.
    assert_eq!(o.summary.ramp, RampState::Held);
}

#[test]
fn an_overload_stops_the_test_and_holds_while_it_lasts() {
    let o = run(&quickstart(&[(
        AT,
        InjectedFaultKind::Overload { force: 6000.0 },
    )]));
    let s = check(&o, false);
    assert_eq!(kind_of(&s), EventKind::ForceLimit);
    // The overload persists: the first ramp command's measurement is a second event.
    assert_eq!(o.summary.ramp, RampState::Held);
}

#[test]
fn an_overload_during_the_ramp_latches_a_second_event_and_holds() {
    // A slow ramp (5 mm/s), so that the overload 60 ms after the stuck actuator (which trips
    // within 30 ms) lands in the middle of it.
    let o = run(&quickstart_ramping_at(
        &[
            (AT, InjectedFaultKind::StuckActuator),
            (AT + 0.06, InjectedFaultKind::Overload { force: 6000.0 }),
        ],
        0.005,
    ));
    let s = check(&o, false);
    assert_eq!(kind_of(&s), EventKind::FollowingError);
    let second = o.summary.second_event.expect("a second event");
    assert_eq!(second.kind, EventKind::ForceLimit);
    assert_eq!(o.summary.ramp, RampState::Held);
    // Holding: the ramp stopped short of the rest position.
    let last = o.sink.lab.last().unwrap();
    assert_eq!(last[6], 2.0, "the second event is in lab.csv");
}

#[test]
fn a_panicking_transfer_system_is_a_transfer_fault_not_an_unwind() {
    // The injected panic keeps panicking: the trip is a transfer fault, and the first ramp
    // command panics too, which is a second event that holds — nothing unwinds.
    let o = run(&quickstart(&[(AT, InjectedFaultKind::Panic)]));
    let s = check(&o, false);
    assert_eq!(kind_of(&s), EventKind::TransferFault);
    assert_eq!(o.summary.ramp, RampState::Held);
    assert_eq!(
        o.summary.second_event.unwrap().kind,
        EventKind::TransferFault
    );
}

#[test]
fn a_stalled_transfer_system_delays_but_does_not_fault_the_sequential_run() {
    // Without a wall clock (`run`), a stall of the link is only lost time; the real-time
    // runner's watchdog is what turns it into a stop (hybridsim-rt tests).
    let o = run(&quickstart(&[(
        AT,
        InjectedFaultKind::Stall { seconds: 0.05 },
    )]));
    assert_eq!(o.state, EndState::Completed);
}

#[test]
fn a_runner_clock_paces_every_tick_of_the_bumpless_start() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    struct Counting(Arc<AtomicU64>);
    impl hybridsim::physical::TickClock for Counting {
        fn wait_tick(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let m = quickstart(&[]);
    let mut parts =
        hybridsim::assembly::build_partitions(&m, hybridsim::assembly::Grouping::Partitioned)
            .unwrap();
    let waits = Arc::new(AtomicU64::new(0));
    for p in parts.iter_mut() {
        if let Some(lab) = p.lab_mut() {
            lab.set_tick_clock(Box::new(Counting(waits.clone())));
        }
    }
    let _pg = hybridsim::integrators::PgAlpha::new(
        parts,
        &hybridsim::integrators::StepSettings::from_analysis(&m.analysis),
    )
    .unwrap();
    // The hold, one approach command (the lab rests at the model's position) and the
    // settling: every tick waited for.
    let ticks = 2 * hybridsim::physical::safety::APPROACH_HOLD_TICKS + 1;
    assert_eq!(waits.load(Ordering::SeqCst), ticks);
}
