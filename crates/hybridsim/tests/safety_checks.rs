//! Issue 10, the safety layer under faults: a paced ramp-down (one checked command per
//! controller tick; a second event during it holds), following-error, frozen-sensor, dropout
//! and sensor-range checks, and the bumpless start from the measured position.
use hybridsim::model::lab::{ActuatorLimits, TripAction};
use hybridsim::physical::safety::{
    EventKind, SafetyLayer, SafetyState, SensorSettings, APPROACH_HOLD_TICKS,
};
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferSystem};
use hybridsim::physical::{RampState, TransferError};

const DT: f64 = 1e-3;

/// How the scripted actuator behaves from tick `from` on.
#[derive(Clone, Copy, PartialEq)]
enum Misbehaviour {
    None,
    /// The piston stays where it is.
    Stuck,
    /// The displacement reading stays at its last value.
    FrozenPosition,
    /// No sample arrives.
    Dropout,
    /// The load cell reads this much.
    Force(f64),
    /// `send` fails.
    SendError,
}

/// A one-actuator transfer system: the piston follows the command exactly (unless told
/// otherwise), rests at `rest`, and reads position with deterministic ±`noise` dither.
struct Scripted {
    rest: f64,
    noise: f64,
    position: f64,
    reading: f64,
    force: f64,
    sent: Vec<(u64, f64)>,
    from: u64,
    what: Misbehaviour,
}

impl Scripted {
    fn new(rest: f64, noise: f64) -> Self {
        Self {
            rest,
            noise,
            position: rest,
            reading: rest,
            force: 1.0,
            sent: Vec::new(),
            from: u64::MAX,
            what: Misbehaviour::None,
        }
    }
    fn from(mut self, tick: u64, what: Misbehaviour) -> Self {
        self.from = tick;
        self.what = what;
        self
    }
    fn active(&self, tick: u64) -> Misbehaviour {
        if tick >= self.from {
            self.what
        } else {
            Misbehaviour::None
        }
    }
    fn dither(&self, tick: u64) -> f64 {
        if tick.is_multiple_of(2) {
            self.noise
        } else {
            -self.noise
        }
    }
}

impl TransferSystem for Scripted {
    fn describe(&self) -> String {
        "scripted".into()
    }
    fn is_virtual(&self) -> bool {
        true
    }
    fn n_actuators(&self) -> usize {
        1
    }
    fn measure_at_rest(&mut self, f: &mut [f64], x: &mut [f64]) -> Result<(), TransferError> {
        self.position = self.rest;
        self.reading = self.rest + self.noise;
        f[0] = self.force;
        x[0] = self.reading;
        Ok(())
    }
    fn send(&mut self, tick: u64, _: f64, cmd: &[ActuatorCommand]) -> Result<(), TransferError> {
        if self.active(tick) == Misbehaviour::SendError {
            return Err(TransferError::new("link lost"));
        }
        self.sent.push((tick, cmd[0].d));
        if self.active(tick) != Misbehaviour::Stuck {
            self.position = cmd[0].d;
        }
        Ok(())
    }
    fn hold_sample(
        &mut self,
        tick: u64,
        _: f64,
        f: &mut [f64],
        x: &mut [f64],
    ) -> Result<Sample, TransferError> {
        self.receive(tick, f, x)
    }
    fn receive(
        &mut self,
        tick: u64,
        f: &mut [f64],
        x: &mut [f64],
    ) -> Result<Sample, TransferError> {
        match self.active(tick) {
            Misbehaviour::Dropout => return Ok(Sample::Missing),
            Misbehaviour::FrozenPosition => {}
            _ => self.reading = self.position + self.dither(tick),
        }
        f[0] = match self.active(tick) {
            Misbehaviour::Force(force) => force,
            _ => self.force,
        };
        x[0] = self.reading;
        Ok(Sample::Fresh)
    }
}

fn limits() -> ActuatorLimits {
    ActuatorLimits {
        displacement: 0.05,
        velocity: 1.0,
        force: 100.0,
        increment: 0.001,
        following_error: 0.002,
        following_time: 0.01,
        frozen_time: 0.05,
        dropout_ticks: 3,
    }
}

fn layer(t: Scripted, on_trip: TripAction) -> SafetyLayer<Scripted> {
    let mut l = SafetyLayer::new(t, vec![limits()], on_trip, DT);
    l.measure_at_rest(&mut [0.0], &mut [0.0]).unwrap();
    l
}

fn cmd(d: f64) -> [ActuatorCommand; 1] {
    [ActuatorCommand { d, v: 0.0, a: 0.0 }]
}

/// Command a slow ramp of `rate` per tick from the rest position until the first event.
fn drive(l: &mut SafetyLayer<Scripted>, rate: f64, ticks: u64) -> Option<(u64, EventKind)> {
    let (mut f, mut x) = ([0.0], [0.0]);
    let start = l.last_accepted()[0];
    for tick in 1..=ticks {
        let d = start + rate * tick as f64;
        if let Err(e) = l.exchange(
            tick,
            tick as f64 * DT,
            tick as f64 * DT,
            &cmd(d),
            &mut f,
            &mut x,
        ) {
            return Some((tick, e.kind));
        }
    }
    None
}

#[test]
fn the_ramp_down_is_paced_one_checked_command_per_tick() {
    let mut l = layer(Scripted::new(0.0, 0.0), TripAction::RampDown { rate: 0.1 });
    assert_eq!(drive(&mut l, 0.0008, 25), None);
    let at = l.last_accepted()[0];
    let sent_before = l.inner().sent.len();
    let event = hybridsim::physical::SafetyEvent {
        kind: EventKind::OperatorAbort,
        tick: 25,
        time: 0.025,
        actuator: None,
        value: f64::NAN,
        limit: f64::NAN,
    };
    l.trip(event);
    // Tripping sends nothing by itself: the ramp goes out one command per tick.
    assert_eq!(l.inner().sent.len(), sent_before);
    assert_eq!(l.ramp_state(), RampState::Ramping);
    let (mut c, mut f, mut x) = (cmd(0.0), [0.0], [0.0]);
    let mut tick = 26;
    while l.ramp_tick(tick, 0.025, tick as f64 * DT, &mut c, &mut f, &mut x) {
        assert_eq!(l.inner().sent.len() as u64, sent_before as u64 + tick - 25);
        tick += 1;
        assert!(tick < 10_000);
    }
    assert_eq!(l.ramp_state(), RampState::Completed);
    assert_eq!(l.inner().sent.last().unwrap().1, 0.0);
    // At 0.1 m/s from 20 mm: 0.2 s, i.e. about 200 ticks of 1 ms, each within the limits.
    let ramp: Vec<_> = l.inner().sent[sent_before..].to_vec();
    let expected = (at / (0.1 * DT)).ceil() as usize;
    assert!(
        (ramp.len() as i64 - expected as i64).abs() <= 1,
        "{} ramp commands for {expected} ticks",
        ramp.len()
    );
    for w in ramp.windows(2) {
        assert_eq!(w[1].0, w[0].0 + 1, "one command per tick");
        assert!((w[1].1 - w[0].1).abs() <= 0.1 * DT * (1.0 + 1e-9));
    }
    assert_eq!(l.ramp_commands(), ramp.len() as u64);
    assert!(l.second_event().is_none());
    // Nothing more after the ramp.
    assert!(!l.ramp_tick(tick + 1, 0.025, 0.0, &mut c, &mut f, &mut x));
    assert_eq!(l.inner().sent.len(), sent_before + ramp.len());
}

fn tripped_then_ramped(t: Scripted) -> SafetyLayer<Scripted> {
    let mut l = layer(t, TripAction::RampDown { rate: 0.05 });
    assert_eq!(drive(&mut l, 0.0008, 25), None);
    l.trip(hybridsim::physical::SafetyEvent {
        kind: EventKind::OperatorAbort,
        tick: 25,
        time: 0.025,
        actuator: None,
        value: f64::NAN,
        limit: f64::NAN,
    });
    let (mut c, mut f, mut x) = (cmd(0.0), [0.0], [0.0]);
    let mut tick = 26;
    while l.ramp_tick(tick, 0.025, tick as f64 * DT, &mut c, &mut f, &mut x) {
        tick += 1;
        assert!(tick < 10_000);
    }
    l
}

#[test]
fn an_overload_during_the_ramp_latches_a_second_event_and_holds() {
    let l = tripped_then_ramped(Scripted::new(0.0, 0.0).from(40, Misbehaviour::Force(250.0)));
    let second = l.second_event().expect("second event");
    assert_eq!(second.kind, EventKind::ForceLimit);
    assert_eq!(second.tick, 40);
    assert_eq!(l.ramp_state(), RampState::Held);
    assert_eq!(l.event().unwrap().kind, EventKind::OperatorAbort);
    // Holding: the last command sent was the one of tick 40, not the rest position.
    let last = *l.inner().sent.last().unwrap();
    assert_eq!(last.0, 40);
    assert!(last.1 > 0.0);
}

#[test]
fn a_send_error_during_the_ramp_latches_a_second_event_and_holds() {
    let l = tripped_then_ramped(Scripted::new(0.0, 0.0).from(30, Misbehaviour::SendError));
    let second = l.second_event().expect("second event");
    assert_eq!(second.kind, EventKind::TransferFault);
    assert_eq!(l.ramp_state(), RampState::Held);
    assert_eq!(l.inner().sent.last().unwrap().0, 29);
}

#[test]
fn a_stuck_actuator_trips_on_following_error() {
    let mut l = layer(
        Scripted::new(0.0, 0.0).from(5, Misbehaviour::Stuck),
        TripAction::Hold,
    );
    let (tick, kind) = drive(&mut l, 0.0005, 200).expect("a stuck actuator must trip");
    assert_eq!(kind, EventKind::FollowingError);
    // The error passes 2 mm at tick ≈ 5 + 4, then must last 10 ms (10 ticks).
    assert!((15..=25).contains(&tick), "tripped at tick {tick}");
}

#[test]
fn a_frozen_reading_with_a_command_that_moves_little_is_frozen_not_following() {
    let mut lim = limits();
    lim.following_error = 0.004;
    let t = Scripted::new(0.0, 0.0).from(3, Misbehaviour::FrozenPosition);
    let mut l = SafetyLayer::new(t, vec![lim], TripAction::Hold, DT);
    l.measure_at_rest(&mut [0.0], &mut [0.0]).unwrap();
    let (mut f, mut x) = ([0.0], [0.0]);
    let mut event = None;
    for tick in 1..400u64 {
        // Up and down by 3 mm peak to peak (span > 2 mm = half the following error), never
        // 4 mm away from the frozen reading (≈ 0).
        let d = 0.0015 * ((tick as f64) * 0.3).sin();
        if let Err(e) = l.exchange(tick, 0.0, 0.0, &cmd(d), &mut f, &mut x) {
            event = Some((tick, e));
            break;
        }
    }
    let (tick, e) = event.expect("a frozen reading must trip");
    assert_eq!(e.kind, EventKind::FrozenSensor, "{e}");
    // frozen_time 50 ms at 1 ms ticks.
    assert!((50..=60).contains(&tick), "tripped at tick {tick}");
    assert_eq!(l.state(), SafetyState::Tripped);
}

#[test]
fn a_moving_actuator_with_a_steady_command_is_not_frozen() {
    // A constant command and a constant reading are no fault (a hold).
    let mut l = layer(Scripted::new(0.0, 0.0), TripAction::Hold);
    let (mut f, mut x) = ([0.0], [0.0]);
    for tick in 1..500u64 {
        l.exchange(tick, 0.0, 0.0, &cmd(0.0), &mut f, &mut x)
            .unwrap();
    }
}

#[test]
fn short_dropouts_hold_the_last_sample_and_long_ones_trip() {
    // Three missing samples are tolerated (dropout_ticks = 3) ...
    let t = Scripted::new(0.0, 0.0);
    let mut l = layer(t, TripAction::Hold);
    let (mut f, mut x) = ([0.0], [0.0]);
    l.exchange(1, 0.0, 0.0, &cmd(0.0005), &mut f, &mut x)
        .unwrap();
    assert_eq!(x[0], 0.0005);
    let mut l2 = layer(
        Scripted::new(0.0, 0.0).from(2, Misbehaviour::Dropout),
        TripAction::Hold,
    );
    l2.exchange(1, 0.0, 0.0, &cmd(0.0005), &mut f, &mut x)
        .unwrap();
    for tick in 2..=4 {
        let fresh = l2
            .exchange(tick, 0.0, 0.0, &cmd(0.0005), &mut f, &mut x)
            .unwrap();
        assert!(!fresh);
        assert_eq!(x[0], 0.0005, "the last good sample is held");
    }
    // ... the fourth in a row trips.
    let e = l2
        .exchange(5, 0.0, 0.0, &cmd(0.0005), &mut f, &mut x)
        .unwrap_err();
    assert_eq!(e.kind, EventKind::SensorDropout);
}

#[test]
fn a_saturated_load_cell_trips_even_below_the_force_limit() {
    let t = Scripted::new(0.0, 0.0).from(3, Misbehaviour::Force(80.0));
    let mut l = SafetyLayer::new(t, vec![limits()], TripAction::Hold, DT).with_sensors(vec![
        SensorSettings {
            force_range: 80.0,
            ..SensorSettings::default()
        },
    ]);
    l.measure_at_rest(&mut [0.0], &mut [0.0]).unwrap();
    let (tick, kind) = drive(&mut l, 0.0001, 10).expect("must trip");
    assert_eq!((tick, kind), (3, EventKind::SensorRange));
}

#[test]
fn bumpless_start_from_an_offset_rest_position() {
    // The actuator rests 2.5 mm off the model's initial position, with ±0.2 mm noise on the
    // displacement reading; the increment limit is 1 mm: a first command at the model's
    // position would trip (the finding), the approach must not.
    let t = Scripted::new(0.0025, 0.0002);
    let mut l = SafetyLayer::new(t, vec![limits()], TripAction::Hold, DT);
    let (mut f, mut x) = ([0.0], [0.0]);
    let mut log = Vec::new();
    let mut paced = 0u64;
    let ticks = l
        .approach(
            &[0.0],
            &mut f,
            &mut x,
            &mut |tick, c, _, _| log.push((tick, c[0].d)),
            &mut || paced += 1,
        )
        .expect("the approach must not trip");
    // The runner's clock is asked once per tick (hold, approach and settling alike).
    assert_eq!(paced, ticks);
    // Tick 0 (the measurement at rest), then one per tick.
    assert_eq!(ticks as usize + 1, log.len());
    let sent = &l.inner().sent;
    // The hold sends nothing.
    assert_eq!(sent.len(), ticks as usize - APPROACH_HOLD_TICKS as usize);
    assert!(sent[0].0 > APPROACH_HOLD_TICKS);
    // First command: one approach step from the mean of the readings, which is within a
    // quarter of the noise of the true rest position (no step of a single noisy sample).
    let step = 0.5 * 1.0 * DT * (1.0 - 1e-9);
    assert!(
        (sent[0].1 - (0.0025 - step)).abs() <= 0.0002 / 4.0,
        "{}",
        sent[0].1
    );
    // Ends exactly at the model's position, held there while settling.
    assert_eq!(l.last_accepted()[0], 0.0);
    for (_, d) in &sent[sent.len() - APPROACH_HOLD_TICKS as usize..] {
        assert_eq!(*d, 0.0);
    }
    // Never faster than half the velocity limit: 2.5 mm at 0.5 mm/tick is 5 ticks.
    for w in sent.windows(2) {
        assert!((w[1].1 - w[0].1).abs() <= 0.5 * 1.0 * DT + 1e-12);
    }
    // The rest position (the ramp-down's target) is the mean of the readings: the dither
    // averages out, no bias from one noisy sample.
    assert!(
        (l.rest_position()[0] - 0.0025).abs() < 0.0002 / 4.0,
        "{}",
        l.rest_position()[0]
    );
    // The force and position at rest are the means over the settling ticks.
    assert!(x[0].abs() < 0.0002 / 4.0 + 1e-12, "{}", x[0]);
    assert_eq!(f[0], 1.0);
    // The test's first command continues from the model's position.
    let (mut f2, mut x2) = ([0.0], [0.0]);
    l.exchange(ticks + 1, 0.0, 0.0, &cmd(0.0003), &mut f2, &mut x2)
        .unwrap();
}

#[test]
fn an_approach_beyond_the_limits_trips_without_sending_it() {
    let t = Scripted::new(0.0, 0.0);
    let mut l = SafetyLayer::new(t, vec![limits()], TripAction::Hold, DT);
    let (mut f, mut x) = ([0.0], [0.0]);
    let e = l
        .approach(&[0.08], &mut f, &mut x, &mut |_, _, _, _| {}, &mut || {})
        .unwrap_err();
    assert!(e.to_string().contains("displacement_limit"), "{e}");
    assert!(l.inner().sent.iter().all(|(_, d)| d.abs() <= 0.05));
}
