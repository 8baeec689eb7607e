//! One run loop and one trip policy for every runner.
//!
//! `hybridsim run` (one thread) and `hybridsim realtime` (the phases of a step on several
//! threads) differ only in how a coarse step is executed and where the records go. Both call
//! [`run`], which owns the order of things within a step and what happens on a fault:
//!
//! 1. check the operator's abort flag (Ctrl-C, a signal);
//! 2. execute the step ([`StepExecutor::step`]);
//! 3. the hand-off: the executor's own work after a step ([`StepExecutor::after_step`]),
//!    the controller-rate lab records of every laboratory into the [`RunSink`], the results
//!    row's columns of the physical partitions (every `every` steps and after the last one;
//!    otherwise a capture of what a row would read), and the checks whose inputs are known:
//!    the multipliers stay within the divergence bound, the deadline overruns stay below
//!    their limit, no helper task of the executor died or stalled
//!    ([`StepExecutor::take_fault`]);
//! 4. with no fault found and another step to come, let a pipelined executor send the
//!    physical partitions' next job ([`StepExecutor::release`]), then finish the step
//!    ([`StepExecutor::finish_step`]: the numerical partition's link update);
//! 5. the rest of the row, into the sink (recording kept up); after a release, a pipelined
//!    executor may send the numerical partition's next job first
//!    ([`StepExecutor::dispatch_numerical`]): the rest of the row is then captured before the
//!    job leaves and made from the capture once it is back ([`StepExecutor::await_numerical`],
//!    at the start of the next iteration, or after the loop on a stop);
//! 6. on any fault, take back a job sent early ([`StepExecutor::recall`]), then [`trip`]:
//!    every laboratory's safety layer trips with the fault's
//!    [`EventKind`]; the records of the stop and the row of the last completed step, whatever
//!    `every` is (in a run without a laboratory, unless the next step failed midway), are
//!    kept; then [`ramp_down`] sends the paced ramp (one command per controller tick, each
//!    one checked and logged) or the laboratories hold, and the run ends in one
//!    [`EndState`].
//!
//! The loop itself allocates nothing, locks nothing and touches no file: sinks and executors
//! decide how records travel (bounded queues, lock-free rings).

use crate::integrators::StepError;
use crate::integrators::TimeIntegrator;
use crate::model::lab::DivergenceSettings;
use crate::output::Recorder;
use crate::physical::safety::DivergenceMonitor;
use crate::physical::{EventKind, SafetyEvent};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What stopped a run before its end.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// A step failed (a safety event at a port, a non-finite state, a failed substructure).
    Step(StepError),
    /// Recording could not keep up or failed (writer stopped, ring full, disk full).
    Recording,
    /// The operator or a signal asked the run to stop.
    Abort,
    /// Consecutive deadline overruns reached their limit.
    Overruns {
        /// Consecutive misses.
        count: u64,
        /// The limit (`[safety] max_overruns`).
        limit: u64,
    },
    /// A task of the runner did not answer within its watchdog deadline.
    Stalled {
        /// The task (`physical`, `numerical`, `writer`, …).
        task: &'static str,
        /// How long the runner waited (s).
        waited: f64,
    },
    /// A task of the runner panicked.
    TaskPanic {
        /// The task.
        task: &'static str,
    },
    /// A multiplier left the divergence bound (`[safety.divergence] force`).
    Divergence {
        /// The offending |Λ| (or a non-finite value).
        value: f64,
        /// The bound.
        bound: f64,
    },
}

impl Fault {
    /// The safety event kind this fault trips the laboratories with.
    pub fn event_kind(&self) -> EventKind {
        match self {
            Fault::Step(StepError::Safety(event)) => event.kind,
            Fault::Step(StepError::NonFinite { .. }) => EventKind::Divergence,
            Fault::Step(StepError::Physical { .. }) => EventKind::TransferFault,
            Fault::Recording => EventKind::WriterOverflow,
            Fault::Abort => EventKind::OperatorAbort,
            Fault::Overruns { .. } => EventKind::DeadlineOverruns,
            Fault::Stalled { .. } => EventKind::Watchdog,
            Fault::TaskPanic { .. } => EventKind::TaskPanic,
            Fault::Divergence { .. } => EventKind::Divergence,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Step(e) => write!(f, "{e}"),
            Fault::Recording => write!(
                f,
                "recording failed or could not keep up: the test was stopped rather than run \
                 unrecorded"
            ),
            Fault::Abort => write!(
                f,
                "stopped on request (the operator, SIGINT, SIGTERM or SIGHUP)"
            ),
            Fault::Overruns { count, limit } => write!(
                f,
                "{count} consecutive deadline overruns (limit {limit} in [safety] max_overruns)"
            ),
            Fault::Stalled { task, waited } => write!(
                f,
                "the {task} task did not answer within {waited:.3} s (watchdog); the test was \
                 stopped"
            ),
            Fault::TaskPanic { task } => {
                write!(f, "the {task} task panicked; the test was stopped")
            }
            Fault::Divergence { value, bound } => write!(
                f,
                "divergence: |Λ| = {value:e} beyond the bound {bound:e} of [safety.divergence] \
                 force; no further command was sent"
            ),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum EndState {
    /// Every step done.
    Completed,
    /// Stopped through the safety layer of the laboratories: the event that stopped the test
    /// and the fault behind it.
    Stopped {
        /// The latched event.
        event: SafetyEvent,
        /// What caused it.
        fault: Fault,
    },
    /// Stopped by a fault with no laboratory to trip (a numerical run).
    Failed(Fault),
}

impl EndState {
    /// The status word of run.json: `completed`, `stopped`, `aborted` or `failed`.
    pub fn status(&self) -> &'static str {
        match self {
            EndState::Completed => "completed",
            EndState::Stopped { .. } => "stopped",
            EndState::Failed(Fault::Abort) => "aborted",
            EndState::Failed(_) => "failed",
        }
    }

    /// The safety event, when the run stopped through the safety layer.
    pub fn event(&self) -> Option<&SafetyEvent> {
        match self {
            EndState::Stopped { event, .. } => Some(event),
            _ => None,
        }
    }

    /// The fault that ended the run early, if any.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            EndState::Completed => None,
            EndState::Stopped { fault, .. } | EndState::Failed(fault) => Some(fault),
        }
    }
}

/// The trip policy: trip every laboratory of `integ` with the fault's event kind at the
/// current time, and say how the run ends. A fault that is itself a safety event keeps that
/// event; otherwise the first latched event of the laboratories is reported. Without a
/// laboratory the run has failed. Allocation-free.
pub fn trip(integ: &mut dyn TimeIntegrator, fault: Fault) -> EndState {
    let kind = fault.event_kind();
    let t = integ.time();
    let mut first: Option<SafetyEvent> = None;
    integ.for_each_lab(&mut |_, lab| {
        lab.trip(kind, t);
        if first.is_none() {
            first = lab.event();
        }
    });
    let event = match &fault {
        Fault::Step(StepError::Safety(event)) => Some(*event),
        _ => first,
    };
    match event {
        Some(event) => EndState::Stopped { event, fault },
        None => EndState::Failed(fault),
    }
}

/// How a coarse step is executed: on the calling thread ([`Sequential`]) or with its phases
/// on worker threads (the real-time runner).
pub trait StepExecutor {
    /// The integrator being stepped (between steps).
    fn integrator(&mut self) -> &mut dyn TimeIntegrator;
    /// One coarse step. Must not allocate.
    fn step(&mut self) -> Result<(), StepError>;
    /// Consecutive deadline overruns so far (0 without wall-clock pacing).
    fn overruns(&self) -> u64 {
        0
    }
    /// Called after every completed step (e.g. to hand a snapshot to an estimator).
    fn after_step(&mut self) {}
    /// Wait for the next controller tick after a stop (the paced ramp-down sends one command
    /// per tick): a wall-clock-paced executor sleeps to the tick's deadline; the default, for
    /// executors without a wall clock, returns at once (the tick's place on the test clock is
    /// still `tick · Δt^C` in `lab.csv`).
    fn wait_tick(&mut self) {}
    /// The runner's own fault behind the last failed [`StepExecutor::step`] (a stalled or
    /// panicked task of a threaded executor), taken once; `None`: the step's error is the
    /// fault ([`Fault::Step`]). Also asked after every completed step, for faults found
    /// outside the step (a dead or stalled helper task such as an estimation slot).
    /// Allocation-free.
    fn take_fault(&mut self) -> Option<Fault> {
        None
    }
    /// Whether the executor hands the physical partitions' job of the next step off early
    /// (docs/realtime-pipeline.md): its [`StepExecutor::step`] then ends after the interface
    /// solve and the physical partitions' link update, [`StepExecutor::release`] may send
    /// their next job, and [`StepExecutor::finish_step`] does the rest of the step. [`run`]
    /// then takes the rows of such a run in two parts ([`Recorder::split_at_handoff`], set up
    /// by the runner) and captures every step that has no row, since after a release the
    /// physical partitions can no longer be read as they were at the step's end.
    fn pipelined(&self) -> bool {
        false
    }
    /// Send the physical partitions' job of the next step now, while the rest of this step
    /// (the numerical partition's link update, the results row) is done (pipelined executors;
    /// [`run`] calls it only when another step follows and no fault is known). Must not
    /// allocate.
    fn release(&mut self) {}
    /// The rest of the step after [`StepExecutor::release`] (the numerical partition's link
    /// update); the step is complete when it returns `Ok`. Must not allocate.
    fn finish_step(&mut self) -> Result<(), StepError> {
        Ok(())
    }
    /// Take back a job sent by [`StepExecutor::release`] before its laboratories are tripped:
    /// the worker stops before its next substep and returns them (bounded by the watchdog; a
    /// worker that does not return them is asked to trip them itself, as after a stall).
    /// [`run`] calls it before every trip; without a job out it does nothing. Must not
    /// allocate.
    fn recall(&mut self) {}
    /// Send the numerical partition's job of the next step now, after
    /// [`StepExecutor::finish_step`] of a step whose physical job was released, before the
    /// row is made ([`run`] then makes the row from a capture once
    /// [`StepExecutor::await_numerical`] has the partition back); true when sent. Must not
    /// allocate.
    fn dispatch_numerical(&mut self) -> bool {
        false
    }
    /// Wait (bounded by the executor's watchdog) for the numerical job sent by
    /// [`StepExecutor::dispatch_numerical`] and take its partition back; true when the
    /// numerical partition is on the calling thread (at once without a job out), false when
    /// it did not come back (the executor's fault, [`StepExecutor::take_fault`], says why).
    /// Must not allocate.
    fn await_numerical(&mut self) -> bool {
        true
    }
    /// Whether every partition of the integrator is on the calling thread: none out with a
    /// job, none kept by a worker that never answered. A row reads the partitions' structure
    /// (DOFs, ground-motion map, elements) from the integrator even when its values come from
    /// a capture, so [`run`] makes the stop's row only when this holds. Must not allocate.
    fn partitions_attached(&self) -> bool {
        true
    }
}

/// The step executor of `hybridsim run`: [`TimeIntegrator::step`] on the calling thread.
pub struct Sequential<'a>(pub &'a mut dyn TimeIntegrator);

impl StepExecutor for Sequential<'_> {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.0
    }
    fn step(&mut self) -> Result<(), StepError> {
        self.0.step()
    }
}

/// Where the records of a run go. Every method must be allocation-free once the run is
/// under way and must not block for long: `false` means the record could not be kept,
/// which stops the test.
pub trait RunSink {
    /// One results row.
    fn row(&mut self, row: &[f64]) -> bool;
    /// One controller-rate record of the laboratory of partition `partition`.
    fn lab_record(&mut self, partition: usize, record: &[f64]) -> bool;
    /// The lab records of one step are all in (e.g. send the batch).
    fn end_of_step(&mut self) -> bool {
        true
    }
    /// Completed steps so far (progress display).
    fn progress(&mut self, _steps: u64) {}
    /// The run has stopped and the laboratories are safe: keep whatever is still pending,
    /// waiting as long as needed.
    fn stopped(&mut self) {}
}

/// What [`run`] needs besides the executor and the sink.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Coarse steps to run.
    pub n_steps: u64,
    /// A results row every `every` steps (and after the last one).
    pub every: u64,
    /// The divergence criterion on the multipliers (runs with a laboratory).
    pub divergence: Option<DivergenceSettings>,
    /// Consecutive deadline overruns that stop the test (paced runs).
    pub max_overruns: Option<u64>,
}

/// The outcome of [`run`].
#[derive(Debug, Clone)]
pub struct RunEnd {
    /// How the run ended.
    pub state: EndState,
    /// Completed coarse steps.
    pub steps: u64,
    /// Time spent inside [`StepExecutor::step`].
    pub step_time: Duration,
}

fn drain_labs(exec: &mut dyn StepExecutor, sink: &mut dyn RunSink) -> bool {
    let mut ok = true;
    exec.integrator().for_each_lab(&mut |k, lab| {
        lab.drain_lab(&mut |r: &[f64]| ok &= sink.lab_record(k, r));
    });
    ok & sink.end_of_step()
}

/// The paced ramp-down after a stop: one [`LabControl::ramp_tick`] per controller tick for
/// every laboratory (the executor paces the ticks, [`StepExecutor::wait_tick`]), the records of
/// each tick drained to the sink, until every ramp has reached the rest position or been held
/// by a second event. Laboratories that hold (`on_trip = "hold"`) send nothing. The number of
/// ticks is finite: each command moves every actuator a fixed step closer to rest.
///
/// [`LabControl::ramp_tick`]: crate::physical::LabControl::ramp_tick
pub fn ramp_down(exec: &mut dyn StepExecutor, sink: &mut dyn RunSink) {
    loop {
        let mut more = false;
        exec.integrator()
            .for_each_lab(&mut |_, lab| more |= lab.ramp_tick());
        drain_labs(exec, sink);
        if !more {
            break;
        }
        exec.wait_tick();
    }
}

/// Run to the end or to the first fault (see the module documentation for the order of
/// things). `row` is the recorder's row buffer. Allocation-free in the loop.
pub fn run(
    exec: &mut dyn StepExecutor,
    recorder: &mut Recorder,
    sink: &mut dyn RunSink,
    settings: &RunSettings,
    abort: &AtomicBool,
    row: &mut [f64],
) -> RunEnd {
    let divergence = settings.divergence.map(DivergenceMonitor::new);
    let every = settings.every.max(1);
    let mut steps = 0u64;
    let mut step_time = Duration::ZERO;
    recorder.record(exec.integrator(), row);
    let mut fault = None;
    if !(sink.row(row) & drain_labs(exec, sink)) {
        fault = Some(Fault::Recording);
    }
    let mut until_row = every;
    // A stop between two recorded rows (`every > 1`) must still leave the last completed step
    // on disk. With a laboratory what its row reads is captured after every step
    // (`Recorder::capture`: a step that fails midway leaves the state between two steps, so the
    // row cannot be taken afterwards) and made into a row only at such a stop; without one it
    // is taken at the stop when the state is still that of the last completed step (any fault
    // but a failed step), sparing `run` the cost of a row per step (BENCHMARKS.md, "Issue 10").
    let mut has_lab = false;
    exec.integrator().for_each_lab(&mut |_, _| has_lab = true);
    if has_lab || exec.pipelined() {
        // The loop captures: its buffers are sized now, not in a step.
        recorder.prepare_capture(exec.integrator());
    }
    // A pipelined executor sends the physical job of the next step before this step's row is
    // made: the row's columns of the physical partitions are taken before that (the hand-off),
    // the rest after, and a step without a row is captured in any case.
    let pipelined = exec.pipelined();
    // `unsent`: the last completed step's row is not in the sink; `recorded`: it is in `row`
    // or in the recorder's capture.
    let mut unsent = false;
    let mut recorded = true;
    let mut step_failed = false;
    // The row of the last completed step is in `row` (its physical columns) and in the
    // recorder's capture (the rest), to be finished once the numerical job sent early is back.
    let mut row_pending = false;
    while fault.is_none() && steps < settings.n_steps {
        if row_pending {
            // The numerical partition's job of this step left before the last row was made;
            // the row is finished from the capture when that job is back, while the physical
            // job may still run.
            if !exec.await_numerical() {
                step_failed = true;
                fault = Some(exec.take_fault().unwrap_or(Fault::Stalled {
                    task: "numerical",
                    waited: 0.0,
                }));
                break;
            }
            row_pending = false;
            recorder.record_rest_captured(exec.integrator(), row);
            if !sink.row(row) {
                fault = Some(Fault::Recording);
                break;
            }
        }
        if abort.load(Ordering::Relaxed) {
            fault = Some(Fault::Abort);
            break;
        }
        let started = Instant::now();
        let result = exec.step();
        step_time += started.elapsed();
        if let Err(error) = result {
            step_failed = true;
            fault = Some(exec.take_fault().unwrap_or(Fault::Step(error)));
            break;
        }
        // The hand-off: everything that reads the physical partitions, and every check whose
        // inputs are known, before their next job may leave.
        exec.after_step();
        let labs_kept = drain_labs(exec, sink);
        let next = steps + 1;
        let due = until_row == 1 || next == settings.n_steps;
        let capture = !due && (has_lab || pipelined);
        if due {
            recorder.record_early(exec.integrator(), row);
        } else if capture {
            recorder.capture_early(exec.integrator());
        }
        let mut found = None;
        if let Some(monitor) = &divergence {
            if let Some(value) = monitor.observe_force(exec.integrator().multipliers()) {
                found = Some(Fault::Divergence {
                    value,
                    bound: monitor.settings().force,
                });
            }
        }
        if let (None, Some(limit)) = (&found, settings.max_overruns) {
            let count = exec.overruns();
            if count >= limit {
                found = Some(Fault::Overruns { count, limit });
            }
        }
        if found.is_none() {
            // A fault the executor found outside the step (a dead or stalled helper task).
            found = exec.take_fault();
        }
        let released = labs_kept
            && found.is_none()
            && next < settings.n_steps
            && !abort.load(Ordering::Relaxed);
        if released {
            exec.release();
        }
        let started = Instant::now();
        let finished = exec.finish_step();
        step_time += started.elapsed();
        if let Err(error) = finished {
            step_failed = true;
            fault = Some(exec.take_fault().unwrap_or(Fault::Step(error)));
            break;
        }
        steps = next;
        sink.progress(steps);
        until_row -= 1;
        recorded = due || capture;
        // With the physical job out, the numerical job of the next step leaves too before the
        // row is made: the row's rest is captured first (copies) and made from the capture
        // when that job is back (at the top of the next iteration, or after the loop).
        let mut sent_early = false;
        if due {
            if released {
                recorder.capture_rest_for_row(exec.integrator());
                sent_early = exec.dispatch_numerical();
            }
            if !sent_early {
                recorder.record_rest(exec.integrator(), row);
            }
        } else if capture {
            recorder.capture_rest(exec.integrator());
            if released {
                exec.dispatch_numerical();
            }
        }
        unsent = !due;
        let mut kept = labs_kept;
        if due {
            if sent_early {
                row_pending = true;
            } else {
                kept &= sink.row(row);
            }
            until_row = every;
        }
        if !kept {
            fault = Some(Fault::Recording);
            break;
        }
        if found.is_some() {
            fault = found;
            break;
        }
    }
    // Every job sent early comes back before anything is tripped or recorded: the physical
    // one first (recalled before its next command), then the numerical one (bounded by the
    // watchdog), whether or not a row waits for it: a step without a row sends it too, after
    // its capture, and the stop's row made from that capture reads the partition's structure.
    exec.recall();
    let numerical_back = exec.await_numerical();
    // A row whose numerical job was still out (a stop met at the top of the next iteration
    // before it came back) is finished now that it is.
    if row_pending && numerical_back {
        recorder.record_rest_captured(exec.integrator(), row);
        sink.row(row);
    }
    let state = match fault {
        None => EndState::Completed,
        Some(fault) => trip(exec.integrator(), fault),
    };
    // The records of the stop (a refused command, the trip) and anything still pending, now
    // that the laboratories are safe (the sink may wait as long as needed); the row of the
    // last completed step if it was between two recorded rows (not when a worker that never
    // answered keeps a partition: the row cannot be made without it).
    sink.stopped();
    if unsent && (recorded || !step_failed) && exec.partitions_attached() {
        if recorded {
            recorder.record_captured(exec.integrator(), row);
        } else {
            recorder.record(exec.integrator(), row);
        }
        sink.row(row);
    }
    drain_labs(exec, sink);
    if state != EndState::Completed {
        ramp_down(exec, sink);
    }
    RunEnd {
        state,
        steps,
        step_time,
    }
}

/// [`run`] with a panic on the calling thread caught (in the recorder, the sink, a tap, or a
/// step that does not catch its own): a laboratory must not be left driven. The jobs sent
/// early come back ([`StepExecutor::recall`], [`StepExecutor::await_numerical`]), every
/// laboratory trips with [`Fault::TaskPanic`] naming `task`, the sink keeps what is pending
/// ([`RunSink::stopped`]) and the laboratories ramp down or hold ([`ramp_down`]), as after
/// any fault. Returns how the run ended and, after a panic, its message; the end's `steps`
/// are then the integrator's completed steps.
pub fn run_guarded(
    exec: &mut dyn StepExecutor,
    recorder: &mut Recorder,
    sink: &mut dyn RunSink,
    settings: &RunSettings,
    abort: &AtomicBool,
    row: &mut [f64],
    task: &'static str,
) -> (RunEnd, Option<String>) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(&mut *exec, recorder, &mut *sink, settings, abort, row)
    }));
    match outcome {
        Ok(end) => (end, None),
        Err(payload) => {
            exec.recall();
            exec.await_numerical();
            let state = trip(exec.integrator(), Fault::TaskPanic { task });
            sink.stopped();
            ramp_down(exec, sink);
            let end = RunEnd {
                state,
                steps: exec.integrator().steps_taken(),
                step_time: Duration::ZERO,
            };
            (end, Some(panic_text(payload.as_ref())))
        }
    }
}

/// The message of a caught panic (its `&str` or `String` payload).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// A live copy of a run's records for a display (the browser console of `hybridsim run|realtime
/// --console`): every record the run loop hands its [`RunSink`] is also handed to the tap,
/// which must neither block nor allocate (it runs on the run loop's thread, the real-time
/// thread of the threaded runner). A tap that cannot keep a record drops it: a display loses
/// frames, never steps. Without a tap a runner does exactly what it did before.
pub trait RecordTap: Send {
    /// Before the first record, off the loop: the results headers (`name[unit]`) and, for
    /// every partition with a laboratory, `(partition, name, lab.csv headers)`.
    fn start(&mut self, _columns: &[String], _labs: &[(usize, String, Vec<String>)]) {}
    /// One results row (after the sink took it).
    fn row(&mut self, row: &[f64]);
    /// One controller-rate record of the laboratory of partition `partition`.
    fn lab_record(&mut self, partition: usize, record: &[f64]);
    /// Completed steps so far (called once per completed step).
    fn step(&mut self, _steps: u64) {}
}

/// How a front end hands a [`RecordTap`] to a runner through its (cloneable) options: the
/// runner takes the tap out once, before the run.
pub type TapSlot = std::sync::Arc<std::sync::Mutex<Option<Box<dyn RecordTap>>>>;

/// Take the tap out of a slot (once, before a run; `None` without one).
pub fn take_tap(slot: &Option<TapSlot>) -> Option<Box<dyn RecordTap>> {
    slot.as_ref()
        .and_then(|s| s.lock().map(|mut g| g.take()).unwrap_or(None))
}

/// A [`RunSink`] that hands every record to its sink and then to a [`RecordTap`]; what the
/// sink answers is what the run loop sees, so the tap cannot change a run.
pub struct Tapped<'a> {
    /// Where the records are kept.
    pub sink: &'a mut dyn RunSink,
    /// The live copy.
    pub tap: &'a mut dyn RecordTap,
}

impl RunSink for Tapped<'_> {
    fn row(&mut self, row: &[f64]) -> bool {
        let kept = self.sink.row(row);
        self.tap.row(row);
        kept
    }
    fn lab_record(&mut self, partition: usize, record: &[f64]) -> bool {
        let kept = self.sink.lab_record(partition, record);
        self.tap.lab_record(partition, record);
        kept
    }
    fn end_of_step(&mut self) -> bool {
        self.sink.end_of_step()
    }
    fn progress(&mut self, steps: u64) {
        self.sink.progress(steps);
        self.tap.step(steps);
    }
    fn stopped(&mut self) {
        self.sink.stopped()
    }
}
