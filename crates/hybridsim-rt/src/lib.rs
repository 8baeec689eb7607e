//! # hybridsim-rt — the multi-rate, multi-core real-time runner
//!
//! Section 2.2 of Abbiati et al. (2020) runs the NS free solution, the PS free solution and online
//! estimation as parallel tasks on separate cores, synchronized by the link solution at the end of
//! every coarse step. This runner does the same with the PG-α phases of [`hybridsim`]:
//!
//! - the **PS task** runs the ss physical substeps of a coarse step, one per controller tick
//!   Δt^C (each one commands the transfer system through the safety layer);
//! - the **NS task** runs the numerical free step in parallel, within Δt^S = ss·Δt^C;
//!   both own their partitions for the step: the link task moves each partition into a
//!   [`hybridsim::integrators::FreeTask`] box ([`PgAlpha::detach`]) and sends the boxes
//!   through the job rings; the workers send them back with their report (no shared state,
//!   no raw pointers);
//! - the **link task** (the coordinating thread) runs the core's one run loop
//!   ([`hybridsim::runner::run`]): it attaches the partitions again, solves the interface,
//!   updates the physical partitions, takes the physical part of the results row and the
//!   controller-rate lab records, checks divergence of Λ and the deadline overruns, then sends
//!   the physical job of the next step at once (the pipelined hand-off,
//!   docs/realtime-pipeline.md), then updates the numerical partition, captures the rest of
//!   the row, sends the numerical job of the next step and makes the row from the capture
//!   when that job is back; it pushes the records into preallocated lock-free rings ([`rtrb`]) and, on any fault,
//!   recalls a physical job sent early and trips the labs;
//! - an **estimation slot** receives a snapshot (interface displacements and measured
//!   specimen forces) per step and feeds a [`hybridsim::updating::Estimator`] (the secant
//!   stiffness is reported, not applied);
//! - with `[updating]`, an **updating task** runs the online model updating's filter on a
//!   thread of its own, fed by a snapshot queue, its estimates applied one coarse step later
//!   on the link thread, as in `hybridsim run` ([`updating_task`]);
//! - a **writer** thread turns the rings into `results.csv` and `lab.csv`.
//!
//! The link task is also the **supervisor** of the workers. Every wait for a worker's report
//! has a watchdog deadline (pacing `realtime`: the end of the step's wall-clock window plus a
//! grace, default max(10·Δt^S, 100 ms); `fast`: a bound, default 10 s; [`RunOptions::watchdog`]).
//! When it passes, the step fails with [`Fault::Stalled`]: the physical worker is asked (an
//! atomic trip request, checked before every substep) to trip its laboratories itself and
//! send them back; if they come back within a second grace, the normal trip path (hold or
//! paced ramp-down) runs on the link thread, otherwise the run ends anyway, the stalled
//! thread is left behind (never joined) and run.json says that hybridsim could not hold the
//! laboratory. A panic in a step is caught on the worker, which trips its laboratories and
//! sends them back ([`Fault::TaskPanic`], message in run.json). The writer's first error (a
//! full disk) or panic abandons its rings, so the next record fails and the test stops at
//! once; its files are cut back to the last flushed whole row and run.json counts exactly
//! what is on disk. run.json says `running` from the start and the writer rewrites it with a
//! heartbeat about once a second. Every wait at the end of a run is bounded. After a stop,
//! [`StepExecutor::wait_tick`] paces the ramp-down on the test's controller-tick schedule
//! ([`clock::TickPacer`]).
//!
//! Everything is sized before the loop; inside it nothing allocates, locks, prints or touches a
//! file. A full ring is a safety event (hybrid-test data loss is unacceptable). Pacing
//! `realtime` sleeps to absolute deadlines (`clock_nanosleep`, `TIMER_ABSTIME`), pins threads
//! and asks for SCHED_FIFO when permitted (and reports when not); pacing `fast` runs the same
//! code as fast as possible. The threaded run is bit-identical to [`hybridsim::Simulation`]
//! stepping the same model (same arithmetic on the same data, in the same order).
//!
//! Every other scheme that drives a laboratory (`explicit-rths`, and what
//! [`hybridsim::integrators::build_with`] adds) runs on the paced single-step runner
//! ([`sequential`], [`run_sequential`]; [`run`] dispatches on `analysis.integrator`): one step
//! at a time on a real-time thread under a supervising watchdog, with the same rings, writer,
//! run.json and trip policy; its network transfer systems send every command on its own
//! controller tick ([`paced_transfer`]). Every paced wait of both runners sleeps with an
//! absolute `clock_nanosleep` to `[runner] spin_budget` before its deadline and spins only
//! that stretch ([`clock::sleep_until_with`]), so that SCHED_FIFO threads at 4096 Hz stay
//! clear of the kernel's real-time throttling.

#![warn(missing_docs)]

pub mod clock;
pub mod paced_transfer;
pub mod sequential;
pub mod stats;
pub mod updating_task;

pub use sequential::run_sequential;

use clock::{now_ns, sleep_until_with, Backoff, ThreadSetup, TickPacer};
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{FreeTask, PgAlpha, TimeIntegrator};
use hybridsim::model::lab::Pacing;
use hybridsim::model::IntegratorKind;
use hybridsim::output::Recorder;
use hybridsim::physical::{EventKind, SafetyEvent, SafetySummary};
use hybridsim::runner::{panic_text, EndState, Fault, RunSink, StepExecutor};
use hybridsim::updating::{Estimator, Observation, SecantStiffness};
use hybridsim::{Model, StepError};
use hybridsim_io::lab::{LabLog, TrackingIndicators};
use rtrb::RingBuffer;
use serde_json::{json, Value};
use stats::TaskStats;
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most physical partitions the runner drives.
pub const MAX_PHYSICAL: usize = 7;
/// Most memory the runner preallocates for its results and lab rings (bytes); one constant
/// shared with the configuration, which refuses a larger `[runner] results_ring` at `check`.
pub use hybridsim::model::lab::MAX_RING_BYTES;
/// Interface multipliers carried to the estimation slot.
pub const MAX_SNAPSHOT: usize = 8;
/// Watchdog bound of a coarse step with pacing `fast` (no wall-clock window).
pub const FAST_WATCHDOG: Duration = Duration::from_secs(10);
/// Least watchdog grace after a coarse step's wall-clock window with pacing `realtime`: long
/// enough that a scheduling hiccup of a loaded machine (which the deadline-overrun count
/// already handles) is not taken for a stalled task; a real controller holds on its own when
/// commands stop for this long.
pub const MIN_REALTIME_GRACE: Duration = Duration::from_millis(100);
/// How long after the set-up of a run the test clock starts: time for the threads to be
/// spawned, pinned and given SCHED_FIFO (with memory locked, their first pages fault in), so
/// that the first controller ticks are not late.
pub const START_MARGIN: Duration = Duration::from_millis(50);
/// Most events of one task's timeline (`--trace`, [`RunOptions::trace`]): 2²⁰ events of
/// 48 bytes, 48 MiB; later events are counted, not kept.
pub const MAX_TRACE_EVENTS: usize = 1 << 20;
/// Default interval of the run.json heartbeat during a run.
pub const JOURNAL_INTERVAL: Duration = Duration::from_secs(1);

/// A task (thread) of the runner, as named in run.json and by the fault-injection hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// The numerical free step.
    Numerical,
    /// The physical substeps (the worker that commands the transfer systems).
    Physical,
    /// The estimation slot.
    Estimation,
    /// The writer of `results.csv`, `lab.csv` and the run.json heartbeat.
    Writer,
    /// The online updating task (`[updating]`, [`updating_task`]).
    Updating,
}

impl Task {
    /// The task's name (`numerical`, `physical`, `estimation`, `writer`).
    pub fn name(self) -> &'static str {
        match self {
            Task::Numerical => "numerical",
            Task::Physical => "physical",
            Task::Estimation => "estimation",
            Task::Writer => "writer",
            Task::Updating => "updating",
        }
    }
}

/// What an injected task fault does (see [`TaskFault`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TaskFaultKind {
    /// The task panics.
    Panic,
    /// The task blocks for this long (a transfer system that does not answer, a numerical
    /// step that does not return, a writer stuck on a hung disk).
    Stall(Duration),
    /// The updating task returns a non-finite estimate (`updating` only).
    NonFinite,
    /// The updating task's refactorization build for the estimate of that step panics
    /// (`updating` with `refactorize = "on_update"` only).
    BuildPanic,
}

/// **Test hook**: make one task of the runner panic or stall, once, so that the supervisor's
/// handling of it can be tested on the virtual lab. Never set it for a real test.
///
/// `at` counts what the task handles: the coarse step of its job for `numerical` and
/// `physical` (before the step's first substep), the step of the snapshot for `estimation`,
/// and results rows already written for `writer`. Parsed from `TASK:KIND:AT`, KIND being
/// `panic`, `stall` (an hour) or `stall=SECONDS`, e.g. `physical:stall=2.5:30`. The
/// `updating` task counts the step of its snapshot too (steps taken after the step) and has
/// two more kinds, `nan`: its estimate of that step is not finite, and `refactor-panic`: its
/// refactorization build for that estimate panics (`refactorize = "on_update"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskFault {
    /// The task.
    pub task: Task,
    /// What happens.
    pub kind: TaskFaultKind,
    /// When (see above).
    pub at: u64,
}

impl TaskFault {
    /// Whether this fault hits `task` at `at`.
    fn hits(f: &Option<TaskFault>, task: Task, at: u64) -> Option<TaskFaultKind> {
        f.filter(|f| f.task == task && f.at == at).map(|f| f.kind)
    }

    /// Do it (on the task's thread).
    fn fire(kind: TaskFaultKind, task: Task) {
        match kind {
            TaskFaultKind::Panic => panic!("injected panic in the {} task", task.name()),
            TaskFaultKind::Stall(d) => std::thread::sleep(d),
            // Done by the updating task on its estimate, and by its refactorizer.
            TaskFaultKind::NonFinite | TaskFaultKind::BuildPanic => {}
        }
    }
}

impl std::str::FromStr for TaskFault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let form = "expected TASK:KIND:AT with TASK numerical, physical, estimation, writer or \
                    updating, KIND panic, stall or stall=SECONDS (or nan, refactor-panic for updating), AT a \
                    step (a row count for writer)";
        let parts: Vec<&str> = s.split(':').collect();
        let [task, kind, at] = parts[..] else {
            return Err(format!("`{s}`: {form}"));
        };
        let task = match task.trim() {
            "numerical" => Task::Numerical,
            "physical" => Task::Physical,
            "estimation" => Task::Estimation,
            "writer" => Task::Writer,
            "updating" => Task::Updating,
            other => return Err(format!("`{s}`: unknown task `{other}`; {form}")),
        };
        let kind = match kind.trim() {
            "panic" => TaskFaultKind::Panic,
            "stall" => TaskFaultKind::Stall(Duration::from_secs(3600)),
            "nan" if task == Task::Updating => TaskFaultKind::NonFinite,
            "refactor-panic" if task == Task::Updating => TaskFaultKind::BuildPanic,
            k => match k.strip_prefix("stall=").map(|x| x.trim().parse::<f64>()) {
                Some(Ok(sec)) if sec.is_finite() && (0.0..=86_400.0).contains(&sec) => {
                    TaskFaultKind::Stall(Duration::from_secs_f64(sec))
                }
                Some(_) => {
                    return Err(format!(
                        "`{s}`: stall=SECONDS needs a number of seconds in [0, 86400]"
                    ))
                }
                None => return Err(format!("`{s}`: unknown kind `{k}`; {form}")),
            },
        };
        let at = at
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("`{s}`: AT `{at}`: {e}; {form}"))?;
        Ok(TaskFault { task, kind, at })
    }
}

/// Options of a run.
#[derive(Clone)]
pub struct RunOptions {
    /// Pacing (overrides `[runner] pacing`).
    pub pacing: Option<Pacing>,
    /// Results folder (`results.csv`, `lab.csv`, `run.json`, plots); `None`: nothing on disk.
    pub folder: Option<PathBuf>,
    /// Model text to copy into the folder.
    pub model_text: Option<String>,
    /// Model hash for run.json.
    pub model_sha256: Option<String>,
    /// SHA-256 of each ground-motion record file, `(path as written, hash)`, for run.json.
    pub record_sha256: Vec<(String, String)>,
    /// Operator abort (Ctrl-C): checked every coarse step; takes the safety path.
    pub abort: Arc<AtomicBool>,
    /// Keep every results row in memory (tests).
    pub keep_rows: bool,
    /// Results ring capacity in rows (overrides `[runner] results_ring`).
    pub results_ring: Option<usize>,
    /// Artificial writer delay per row (tests of the overflow path).
    pub writer_delay: Option<Duration>,
    /// Called with `true` when a loop thread enters its loop and `false` when it leaves (the
    /// counting-allocator test marks the loop threads with it).
    pub loop_marker: Option<fn(bool)>,
    /// Stop after this many coarse steps (default: the analysis duration).
    pub max_steps: Option<u64>,
    /// How long the loop may wait for ring space before a full ring is a safety event
    /// (default: 2 s with pacing `fast`, which has no wall-clock deadline; 0 with `realtime`).
    pub overflow_wait: Option<Duration>,
    /// Wait for real-time scheduling even with a virtual lab (refuse to start without it).
    pub require_realtime: bool,
    /// The watchdog of the workers: with pacing `realtime`, the grace after a coarse step's
    /// wall-clock window (default: max(10·Δt^S, 100 ms)); with pacing `fast`, the bound of a
    /// coarse step (default: [`FAST_WATCHDOG`]). A worker that has not answered by then stops
    /// the test ([`Fault::Stalled`]). It also bounds how long the end of a run waits for the
    /// writer (at least 1 s without progress) and the estimation slot.
    pub watchdog: Option<Duration>,
    /// Interval of the run.json heartbeat written by the writer thread (default:
    /// [`JOURNAL_INTERVAL`]).
    pub journal_interval: Option<Duration>,
    /// **Test hook**: make a task panic or stall (see [`TaskFault`]).
    pub inject: Option<TaskFault>,
    /// **Test hook**: the writer fails (as on a full disk) when it is about to write results
    /// row `n + 1`, after `n` rows.
    pub writer_fails_after: Option<u64>,
    /// With realtime pacing on a virtual lab, run without real-time scheduling (deadlines
    /// may be missed; run.json says `soft_realtime`); refused otherwise.
    pub allow_soft_realtime: bool,
    /// Builds the network transfer systems (`lab.transfer = "udp"`, …): the front end's
    /// sockets. Without one such a laboratory refuses to start.
    pub connector: Option<Arc<dyn hybridsim::physical::transfer::TransferConnector>>,
    /// A live copy of the records (the browser console), taken out once at the start; it
    /// runs on the loop thread after the rings' sink and must not block or allocate.
    pub tap: Option<hybridsim::runner::TapSlot>,
    /// Keep a timeline of every task activation (the physical ticks, the numerical steps,
    /// the link's hand-offs) in preallocated buffers and write it to `trace.csv` after the
    /// run (docs/realtime-pipeline.md). Nothing is printed or allocated in the loop.
    pub trace: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            pacing: None,
            folder: None,
            model_text: None,
            model_sha256: None,
            record_sha256: Vec::new(),
            abort: Arc::new(AtomicBool::new(false)),
            keep_rows: false,
            results_ring: None,
            writer_delay: None,
            loop_marker: None,
            max_steps: None,
            overflow_wait: None,
            require_realtime: false,
            watchdog: None,
            journal_interval: None,
            inject: None,
            writer_fails_after: None,
            allow_soft_realtime: false,
            connector: None,
            tap: None,
            trace: false,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    /// Every step done.
    Completed,
    /// Stopped cleanly by a safety event.
    Stopped(SafetyEvent),
    /// Stopped by a failure that is not a safety event.
    Failed(String),
}

/// What a run produced.
pub struct RunOutcome {
    /// Status.
    pub status: RunStatus,
    /// Completed coarse steps.
    pub steps: u64,
    /// Result columns (headers).
    pub columns: Vec<String>,
    /// Rows, when kept.
    pub rows: Vec<Vec<f64>>,
    /// Rows written to results.csv (or handled by the writer).
    pub rows_written: u64,
    /// Lab rows handled by the writer.
    pub lab_rows: u64,
    /// Task statistics.
    pub tasks: Vec<TaskStats>,
    /// Thread set-up obtained.
    pub setup: Vec<ThreadSetup>,
    /// Whether mlockall succeeded.
    pub memory_locked: bool,
    /// Safety state of each physical partition.
    pub safety: Vec<SafetySummary>,
    /// Tracking indicators per actuator.
    pub indicators: Vec<TrackingIndicators>,
    /// Estimation-slot report.
    pub estimation: Value,
    /// The task whose watchdog fired, if any (`physical`, `numerical`, `writer`,
    /// `estimation`).
    pub stalled_task: Option<&'static str>,
    /// Tasks that panicked, with the panic message.
    pub panics: Vec<(&'static str, String)>,
    /// Wall time of the loop (s).
    pub wall: f64,
    /// The run.json written (also when no folder).
    pub run_json: Value,
}

impl RunOutcome {
    /// Terminal summary.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for t in &self.tasks {
            s.push_str(&t.line());
            s.push('\n');
        }
        for st in &self.setup {
            s.push_str(&format!(
                "thread {}: cpu {:?} pinned {} SCHED_FIFO {}{} {}\n",
                st.task,
                st.cpu,
                st.pinned,
                st.fifo,
                st.priority
                    .map(|p| format!(" (priority {p})"))
                    .unwrap_or_default(),
                st.note
            ));
        }
        for i in &self.indicators {
            s.push_str(&format!(
                "actuator {}: delay {:.4} s, NRMS tracking error {:.3e}, peak error {:.3e}, energy error {:.3e} (input {:.3e}, throughput {:.3e}, normalized {:.3e})\n",
                i.actuator, i.delay, i.nrms_error, i.peak_error, i.energy_error, i.energy_input, i.energy_throughput, i.normalized_energy_error
            ));
        }
        s
    }
}

/// What the writer thread returns: the rows and lab rows on disk (also after an error: the
/// files are cut back to the last flushed whole row), the kept rows, the lab logs and the
/// error that stopped it.
struct WriterEnd {
    rows: u64,
    lab_rows: u64,
    kept: Vec<Vec<f64>>,
    logs: Vec<LabLog>,
    error: Option<String>,
    /// The message of a panic the writer caught (its files are cut back as after an error).
    panic: Option<String>,
}

/// What the writer shares with the other threads: progress, counts on disk and the
/// serialization of run.json writes (the heartbeat of the writer, the final document of the
/// link thread).
#[derive(Default)]
struct Journal {
    /// Rows handled (liveness of the writer).
    progress: AtomicU64,
    /// Results rows on disk (flushed).
    rows_on_disk: AtomicU64,
    /// Lab rows on disk (flushed).
    lab_rows_on_disk: AtomicU64,
    /// Time of the last results row on disk (f64 bits).
    last_time_on_disk: AtomicU64,
    /// The run ended without the writer (it stalled): it must write nothing more.
    stop_writing: AtomicBool,
    /// `true` once the final run.json is written (no heartbeat after it).
    closed: Mutex<bool>,
    /// The loop thread was left behind holding the rings: finish what is in them and end
    /// (the paced single-step runner, [`sequential`]).
    finish: AtomicBool,
}

/// Up to this many free tasks travel in one job (the physical partitions, or the numerical
/// one).
type Tasks = [Option<Box<FreeTask>>; MAX_PHYSICAL];

/// One coarse step's work for a worker: the partitions it owns for the step, moved in (boxed
/// once before the loop; only the box pointers travel), and moved back in its [`Done`].
struct Job {
    tasks: Tasks,
    step: u64,
    stop: bool,
}

impl Job {
    /// The (empty) job of coarse step `step`.
    fn step(step: u64) -> Self {
        Self {
            tasks: Default::default(),
            step,
            stop: false,
        }
    }

    /// The job that ends a worker.
    fn stop() -> Self {
        Self {
            stop: true,
            ..Self::step(0)
        }
    }
}

/// A worker's report of one coarse step: the tasks it owned, its first error (moved, not
/// formatted: nothing allocates on a trip), its run of consecutive deadline misses, the
/// controller ticks it commanded and a panic it caught (its labs are then tripped, as after
/// a trip request of the watchdog).
struct Done {
    tasks: Tasks,
    error: Option<StepError>,
    miss_run: u64,
    ticks: u64,
    panic: Option<Box<dyn Any + Send>>,
}

impl Done {
    fn new(tasks: Tasks) -> Self {
        Self {
            tasks,
            error: None,
            miss_run: 0,
            ticks: 0,
            panic: None,
        }
    }
}

/// Trip the laboratories of the tasks a worker holds (a trip request of the watchdog, a
/// panic caught in a step). Allocation-free.
fn trip_tasks(tasks: &mut Tasks, kind: EventKind) {
    for task in tasks.iter_mut().flatten() {
        let t = task.step_time();
        if let Some(lab) = task.lab_mut() {
            lab.trip(kind, t);
        }
    }
}

#[derive(Clone, Copy)]
struct Snapshot {
    step: u64,
    time: f64,
    n: usize,
    /// Interface displacements (physical copy).
    u: [f64; MAX_SNAPSHOT],
    /// Measured specimen forces on those DOFs.
    force: [f64; MAX_SNAPSHOT],
}

/// Pop the next message; `None` once the other side is gone (its thread ended or panicked)
/// and nothing is left, so that no thread ever waits for a dead one. Workers wait for their
/// next job with it (an idle worker is not stalled); the link thread waits for reports with
/// a deadline ([`Threaded::collect`]).
fn wait_pop<T>(c: &mut rtrb::Consumer<T>) -> Option<T> {
    let mut b = Backoff::default();
    loop {
        if let Ok(x) = c.pop() {
            return Some(x);
        }
        if c.is_abandoned() {
            return c.pop().ok();
        }
        b.snooze();
    }
}

/// A worker's report as the link thread sees it.
enum Report {
    /// Not yet.
    Waiting,
    /// Arrived.
    Done(Done),
    /// The worker's thread ended without a report (it panicked outside a step).
    Dead,
}

impl Report {
    /// Poll once; true when settled.
    fn poll(&mut self, c: &mut rtrb::Consumer<Done>) -> bool {
        if let Report::Waiting = self {
            if let Ok(d) = c.pop() {
                *self = Report::Done(d);
            } else if c.is_abandoned() {
                *self = match c.pop() {
                    Ok(d) => Report::Done(d),
                    Err(_) => Report::Dead,
                };
            }
        }
        !matches!(self, Report::Waiting)
    }
}

/// The step error handed to the core loop when the executor's own fault
/// ([`StepExecutor::take_fault`]) says what happened (no allocation: empty strings).
fn supervisor_error() -> StepError {
    StepError::Physical {
        substructure: String::new(),
        reason: String::new(),
    }
}

/// The text of a panic payload.
/// The step executor of the threaded runner: the PG-α phases of a coarse step on the
/// numerical and physical workers, then the interface solve and link update on the calling
/// (link) thread. It is the supervisor of the workers: every wait for a report has a
/// watchdog deadline, a worker's panic is a [`Fault::TaskPanic`], a stalled worker a
/// [`Fault::Stalled`].
struct Threaded<'a> {
    pg: &'a mut PgAlpha,
    /// One task box per partition, allocated before the loop.
    boxes: Vec<Option<Box<FreeTask>>>,
    ns_jobs: rtrb::Producer<Job>,
    ns_done: rtrb::Consumer<Done>,
    ps_jobs: rtrb::Producer<Job>,
    ps_done: rtrb::Consumer<Done>,
    estimation: rtrb::Producer<Option<Snapshot>>,
    snapshots_dropped: u64,
    link_stats: TaskStats,
    realtime: bool,
    miss_run: u64,
    /// Set by the watchdog: the physical worker trips its labs before its next substep and
    /// returns its tasks.
    trip_request: Arc<AtomicBool>,
    /// Test start on the monotonic clock and the controller tick (ns).
    start_ns: u64,
    dtc_ns: u64,
    ss: u64,
    /// Watchdog grace (realtime: after the step's window; fast: the step's bound) and the
    /// second grace for the tasks to come back after a trip request (ns).
    grace_ns: u64,
    return_ns: u64,
    /// The fault behind the last failed step (taken by the core loop).
    fault: Option<Fault>,
    /// Workers that never answered (their threads are not joined).
    stalled: [bool; 2],
    /// The first panic caught in a worker, with its payload.
    panic: Option<(&'static str, Box<dyn Any + Send>)>,
    /// Pacing of the controller ticks after a stop (the paced ramp-down).
    pacer: TickPacer,
    /// Since when the estimation slot's ring has been full (ns), if it is.
    estimation_full_since: Option<u64>,
    /// Send the physical job of the next step at the hand-off ([`StepExecutor::release`]),
    /// before the numerical link update and the results row (docs/realtime-pipeline.md);
    /// off with online updating, whose estimates change the numerical partition and `H`
    /// between steps with every partition attached.
    pipelined: bool,
    /// The physical job of step `released_step` is out (sent by [`StepExecutor::release`]).
    released: bool,
    released_step: u64,
    /// Set by [`StepExecutor::recall`]: the physical worker returns its job before its next
    /// substep, without commanding it.
    recall_request: Arc<AtomicBool>,
    /// The instants of this step's link work for the trace: interface solve start, physical
    /// link update end, physical job released (0: not released) (ns).
    link_marks: [u64; 3],
    /// The numerical job of the coming step was sent early
    /// ([`StepExecutor::dispatch_numerical`]), before the row.
    ns_sent: bool,
    /// Its report, when [`StepExecutor::await_numerical`] took it (the partition attached);
    /// [`StepExecutor::step`] starts from it.
    ns_early: Option<Report>,
    /// When that report was taken (ns; for the trace).
    ns_seen: u64,
}

/// Index of the numerical and physical workers in [`Threaded::stalled`].
const NS: usize = 0;
const PS: usize = 1;
const WORKERS: [&str; 2] = ["numerical", "physical"];

impl Threaded<'_> {
    /// Poll both reports until settled or `deadline_ns`; true when both are settled. `seen`
    /// gets the instant each report was first seen settled (ns; 0 while waiting).
    fn collect(
        &mut self,
        reports: &mut [Report; 2],
        deadline_ns: u64,
        seen: &mut [u64; 2],
    ) -> bool {
        let mut b = Backoff::default();
        loop {
            let ns = reports[NS].poll(&mut self.ns_done);
            let ps = reports[PS].poll(&mut self.ps_done);
            if (ns && seen[NS] == 0) || (ps && seen[PS] == 0) {
                let now = now_ns();
                for (w, settled) in [(NS, ns), (PS, ps)] {
                    if settled && seen[w] == 0 {
                        seen[w] = now;
                    }
                }
            }
            if ns && ps {
                return true;
            }
            if now_ns() > deadline_ns {
                return false;
            }
            b.snooze();
        }
    }
}

impl StepExecutor for Threaded<'_> {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.pg
    }

    fn step(&mut self) -> Result<(), StepError> {
        let entered = now_ns();
        let n = self.pg.steps_taken();
        // Move every partition into its task box and the boxes to the workers.
        let mut ns_job = Job::step(n);
        let mut ps_job = Job::step(n);
        let (mut n_ns, mut n_ps) = (0, 0);
        // A numerical job sent early has its partition out, or back from it already.
        let kept = self.ns_sent.then(|| self.pg.numerical());
        for (k, slot) in self.boxes.iter_mut().enumerate() {
            if kept == Some(k) {
                continue;
            }
            let Some(mut task) = slot.take() else {
                continue;
            };
            self.pg.detach(k, &mut task);
            if task.is_numerical() {
                ns_job.tasks[n_ns] = Some(task);
                n_ns += 1;
            } else {
                ps_job.tasks[n_ps] = Some(task);
                n_ps += 1;
            }
        }
        let sent = now_ns();
        if !self.ns_sent {
            let _ = self.ns_jobs.push(ns_job);
        }
        self.ns_sent = false;
        if !self.released {
            let _ = self.ps_jobs.push(ps_job);
        }
        self.released = false;
        // The watchdog deadline: the end of the step's wall-clock window (or a full window
        // from now, when the link thread itself is late) plus the grace; with pacing `fast`
        // the grace alone.
        let deadline = if self.realtime {
            let window = self.ss * self.dtc_ns;
            (self.start_ns + (n + 1) * window).max(sent + window) + self.grace_ns
        } else {
            sent + self.grace_ns
        };
        // Both reports, even when one worker died: the other one's partitions (the lab among
        // them, when the numerical worker died) come back and can still be tripped.
        let mut reports = [
            self.ns_early.take().unwrap_or(Report::Waiting),
            Report::Waiting,
        ];
        let mut stalled: Option<(&'static str, f64)> = None;
        let mut seen = [0; 2];
        if !matches!(reports[NS], Report::Waiting) {
            seen[NS] = self.ns_seen;
        }
        let collected = self.collect(&mut reports, deadline, &mut seen);
        self.link_stats
            .trace(n, 0, [entered, sent, seen[NS], seen[PS]]);
        if !collected {
            let waited = (now_ns() - sent) as f64 * 1e-9;
            let task = if matches!(reports[PS], Report::Waiting) {
                "physical"
            } else {
                "numerical"
            };
            stalled = Some((task, waited));
            // The labs sit in the boxes the stalled worker holds: ask it to trip them and
            // send them back, and wait a bounded second grace for them.
            self.trip_request.store(true, Ordering::SeqCst);
            let until = now_ns() + self.return_ns;
            self.collect(&mut reports, until, &mut seen);
            for (w, r) in reports.iter().enumerate() {
                if matches!(r, Report::Waiting) {
                    self.stalled[w] = true;
                }
            }
        }
        // Take the partitions back before anything else looks at the integrator.
        for r in reports.iter_mut() {
            if let Report::Done(done) = r {
                for task in done.tasks.iter_mut() {
                    if let Some(mut task) = task.take() {
                        self.pg.attach(&mut task);
                        let k = task.index();
                        self.boxes[k] = Some(task);
                    }
                }
            }
        }
        let [ns_report, ps_report] = reports;
        if let Report::Done(d) = &ps_report {
            self.pacer.resume_at(n * self.ss + d.ticks);
        }
        if let Some((task, waited)) = stalled {
            self.fault = Some(Fault::Stalled { task, waited });
            return Err(supervisor_error());
        }
        let (ns_done, ps_done) = match (ns_report, ps_report) {
            (Report::Done(a), Report::Done(b)) => (a, b),
            (ns, _) => {
                let task = if matches!(ns, Report::Dead) {
                    "numerical"
                } else {
                    "physical"
                };
                self.fault = Some(Fault::TaskPanic { task });
                return Err(supervisor_error());
            }
        };
        self.miss_run = ps_done.miss_run.max(ns_done.miss_run);
        for (w, payload) in [(PS, ps_done.panic), (NS, ns_done.panic)] {
            if let Some(payload) = payload {
                if self.panic.is_none() {
                    self.panic = Some((WORKERS[w], payload));
                }
                self.fault = Some(Fault::TaskPanic { task: WORKERS[w] });
                return Err(supervisor_error());
            }
        }
        if let Some(error) = ps_done.error.or(ns_done.error) {
            return Err(error);
        }
        let t0 = now_ns();
        self.pg.interface_solve();
        if self.pipelined {
            // The numerical partition's update follows in `finish_step`, after the release.
            let linked = self.pg.link_update_physical();
            self.link_marks = [t0, now_ns(), 0];
            return linked;
        }
        let linked = self.pg.link_update();
        let t1 = now_ns();
        self.link_stats.record(t1 - t0, None, false);
        self.link_stats.trace(n, 1, [t0, t1, 0, 0]);
        linked
    }

    fn pipelined(&self) -> bool {
        self.pipelined
    }

    /// The physical partitions, linked at `t_{n+1}`, leave for their free substeps of step
    /// `n + 1` while this thread updates the numerical partition and makes the row.
    fn release(&mut self) {
        if !self.pipelined || self.released {
            return;
        }
        let n = self.pg.steps_taken();
        let numerical = self.pg.numerical();
        let mut job = Job::step(n);
        let mut i = 0;
        for (k, slot) in self.boxes.iter_mut().enumerate() {
            if k == numerical {
                continue;
            }
            if let Some(mut task) = slot.take() {
                self.pg.detach(k, &mut task);
                job.tasks[i] = Some(task);
                i += 1;
            }
        }
        match self.ps_jobs.push(job) {
            Ok(()) => {
                self.released = true;
                self.released_step = n;
                self.link_marks[2] = now_ns();
            }
            Err(rtrb::PushError::Full(mut job)) => {
                // Cannot happen (the worker holds no job now); the step sends it instead.
                for task in job.tasks.iter_mut() {
                    if let Some(mut task) = task.take() {
                        self.pg.attach(&mut task);
                        let k = task.index();
                        self.boxes[k] = Some(task);
                    }
                }
            }
        }
    }

    /// The numerical partition's link update (after the release, if any).
    fn finish_step(&mut self) -> Result<(), StepError> {
        if !self.pipelined {
            return Ok(());
        }
        let t2 = now_ns();
        let linked = self.pg.link_update_numerical();
        let t3 = now_ns();
        let [t0, t1, released] = self.link_marks;
        self.link_stats.record((t1 - t0) + (t3 - t2), None, false);
        // The step these marks belong to: the clock was advanced by the physical update.
        let n = self.pg.steps_taken().saturating_sub(1);
        self.link_stats.trace(n, 1, [t0, t1, released, t3]);
        linked
    }

    /// Take back the physical job sent early: the worker stops before its next substep and
    /// returns its partitions untouched by the trip (the link thread trips them); a worker
    /// that does not return them within the second grace is asked to trip them itself, and
    /// is then given the same grace again, as after a stall.
    fn recall(&mut self) {
        if !self.released {
            return;
        }
        self.released = false;
        self.recall_request.store(true, Ordering::SeqCst);
        let mut report = Report::Waiting;
        let mut b = Backoff::default();
        let until = now_ns() + self.return_ns;
        while !report.poll(&mut self.ps_done) && now_ns() < until {
            b.snooze();
        }
        if matches!(report, Report::Waiting) {
            self.trip_request.store(true, Ordering::SeqCst);
            let until = now_ns() + self.return_ns;
            while !report.poll(&mut self.ps_done) && now_ns() < until {
                b.snooze();
            }
        }
        match report {
            Report::Done(mut done) => {
                for task in done.tasks.iter_mut() {
                    if let Some(mut task) = task.take() {
                        self.pg.attach(&mut task);
                        let k = task.index();
                        self.boxes[k] = Some(task);
                    }
                }
                self.pacer
                    .resume_at(self.released_step * self.ss + done.ticks);
                if let Some(payload) = done.panic.take() {
                    if self.panic.is_none() {
                        self.panic = Some((WORKERS[PS], payload));
                    }
                }
            }
            Report::Waiting => self.stalled[PS] = true,
            Report::Dead => {}
        }
        self.recall_request.store(false, Ordering::SeqCst);
    }

    /// The numerical partition leaves for step `n + 1` right after its link update, before
    /// the row of step `n` is made (the row is finished from a capture once it is back).
    fn dispatch_numerical(&mut self) -> bool {
        if !self.pipelined || !self.released || self.ns_sent {
            return false;
        }
        let n = self.pg.steps_taken();
        let k = self.pg.numerical();
        let Some(mut task) = self.boxes[k].take() else {
            return false;
        };
        self.pg.detach(k, &mut task);
        let mut job = Job::step(n);
        job.tasks[0] = Some(task);
        match self.ns_jobs.push(job) {
            Ok(()) => {
                self.ns_sent = true;
                true
            }
            Err(rtrb::PushError::Full(mut job)) => {
                // Cannot happen (the worker holds no job now); the step sends it instead.
                if let Some(mut task) = job.tasks[0].take() {
                    self.pg.attach(&mut task);
                    self.boxes[k] = Some(task);
                }
                false
            }
        }
    }

    /// Wait for the numerical job sent early, bounded by the step's watchdog deadline, and
    /// attach its partition; its report (misses, error, panic) is judged by the step as before.
    fn await_numerical(&mut self) -> bool {
        if !self.ns_sent || self.ns_early.is_some() {
            return self.boxes[self.pg.numerical()].is_some();
        }
        let n = self.pg.steps_taken();
        let window = self.ss * self.dtc_ns;
        let deadline = if self.realtime {
            (self.start_ns + (n + 1) * window).max(now_ns() + window) + self.grace_ns
        } else {
            now_ns() + self.grace_ns
        };
        let mut report = Report::Waiting;
        let mut b = Backoff::default();
        while !report.poll(&mut self.ns_done) && now_ns() <= deadline {
            b.snooze();
        }
        let mut stalled = None;
        if matches!(report, Report::Waiting) {
            // As after a stall in the step: ask the worker to send its partition back and
            // wait a bounded second grace for it (the row it owes is then still made).
            stalled = Some((now_ns().saturating_sub(deadline - self.grace_ns)) as f64 * 1e-9);
            self.trip_request.store(true, Ordering::SeqCst);
            let until = now_ns() + self.return_ns;
            while !report.poll(&mut self.ns_done) && now_ns() < until {
                b.snooze();
            }
        }
        match &mut report {
            Report::Done(done) => {
                for task in done.tasks.iter_mut() {
                    if let Some(mut task) = task.take() {
                        self.pg.attach(&mut task);
                        let k = task.index();
                        self.boxes[k] = Some(task);
                    }
                }
                self.ns_early = Some(report);
                self.ns_seen = now_ns();
                match stalled {
                    None => true,
                    Some(waited) => {
                        self.fault = Some(Fault::Stalled {
                            task: "numerical",
                            waited,
                        });
                        false
                    }
                }
            }
            Report::Dead => {
                self.ns_early = Some(report);
                self.fault = Some(Fault::TaskPanic { task: "numerical" });
                false
            }
            Report::Waiting => {
                self.ns_early = Some(Report::Waiting);
                self.stalled[NS] = true;
                self.fault = Some(Fault::Stalled {
                    task: "numerical",
                    waited: stalled.unwrap_or(0.0),
                });
                false
            }
        }
    }

    /// Every partition's box is here exactly when its partition is attached (a detached
    /// partition travels in its box).
    fn partitions_attached(&self) -> bool {
        self.boxes.iter().all(Option::is_some)
    }

    fn overruns(&self) -> u64 {
        if self.realtime {
            self.miss_run
        } else {
            0
        }
    }

    /// The estimation snapshot (dropped, and counted, if the slot lags).
    fn after_step(&mut self) {
        let mut snap = Snapshot {
            step: self.pg.steps_taken(),
            time: self.pg.time(),
            n: 0,
            u: [0.0; MAX_SNAPSHOT],
            force: [0.0; MAX_SNAPSHOT],
        };
        if let Some(iface) = self.pg.interface() {
            let m = iface.dofs.len().min(MAX_SNAPSHOT);
            snap.n = m;
            for (k, d) in iface.dofs.iter().take(m).enumerate() {
                // The physical copy is the `plus` one (ALGORITHMS.md E13).
                let part = &self.pg.partitions()[d.plus];
                if let Some(i) = part.state.dofs.iter().position(|x| *x == d.dof) {
                    snap.u[k] = self.pg.state(d.plus)[i];
                    snap.force[k] = part.physical.as_ref().map_or(f64::NAN, |p| p.measured()[i]);
                }
            }
        }
        // A dead estimation slot (it panicked) or one that has not taken a snapshot for the
        // watchdog grace (stalled) stops the test like any other task: its snapshots are
        // dropped and counted meanwhile.
        if self.estimation.is_abandoned() {
            self.fault
                .get_or_insert(Fault::TaskPanic { task: "estimation" });
            return;
        }
        if self.estimation.push(Some(snap)).is_ok() {
            self.estimation_full_since = None;
        } else {
            self.snapshots_dropped += 1;
            let now = now_ns();
            let since = *self.estimation_full_since.get_or_insert(now);
            if now - since > self.grace_ns {
                self.fault.get_or_insert(Fault::Stalled {
                    task: "estimation",
                    waited: (now - since) as f64 * 1e-9,
                });
            }
        }
    }

    /// With pacing `realtime`, sleep to the next controller tick of the test's absolute
    /// schedule (never to a tick already past: no burst after a late stop); with `fast`,
    /// return at once.
    fn wait_tick(&mut self) {
        if self.realtime {
            self.pacer.wait();
        }
    }

    fn take_fault(&mut self) -> Option<Fault> {
        self.fault.take()
    }
}

/// Pushes a row; when the ring is full, waits up to `wait_ns`. A ring whose writer is gone
/// (it failed or panicked) takes nothing: recording has failed.
fn push_row(tx: &mut rtrb::Producer<f64>, row: &[f64], wait_ns: u64) -> bool {
    if tx.is_abandoned() {
        return false;
    }
    if tx.push_entire_slice(row).is_ok() {
        return true;
    }
    if wait_ns == 0 {
        return false;
    }
    let until = now_ns().saturating_add(wait_ns);
    let mut b = Backoff::default();
    while tx.push_entire_slice(row).is_err() {
        if now_ns() > until || tx.is_abandoned() {
            return false;
        }
        b.snooze();
    }
    true
}

/// After the stop: pushes a row, waiting as long as the writer makes progress, but no longer
/// than `bound_ns` without any; a writer found stuck is not waited for again.
fn push_row_stopped(
    tx: &mut rtrb::Producer<f64>,
    row: &[f64],
    journal: &Journal,
    bound_ns: u64,
    stuck: &mut bool,
) -> bool {
    if *stuck || tx.is_abandoned() {
        return !tx.is_abandoned() && tx.push_entire_slice(row).is_ok();
    }
    let mut seen = journal.progress.load(Ordering::Relaxed);
    let mut since = now_ns();
    let mut b = Backoff::default();
    loop {
        if tx.push_entire_slice(row).is_ok() {
            return true;
        }
        if tx.is_abandoned() {
            return false;
        }
        let p = journal.progress.load(Ordering::Relaxed);
        let now = now_ns();
        if p != seen {
            seen = p;
            since = now;
        } else if now - since > bound_ns {
            *stuck = true;
            return false;
        }
        b.snooze();
    }
}

/// The sink of the threaded runner: lock-free rings to the writer thread. A row that finds
/// the ring full is kept and written after the stop, so the last completed step still
/// reaches the disk. A writer that failed or died is noticed at the next record (its rings
/// are abandoned): the sink refuses, which stops the test.
struct RingSink {
    results: rtrb::Producer<f64>,
    labs: Vec<rtrb::Producer<f64>>,
    physical: Vec<usize>,
    wait_ns: u64,
    pending: Vec<f64>,
    has_pending: bool,
    /// After the stop: how long to wait for a writer that makes no progress.
    drain_ns: u64,
    stopped: bool,
    /// The writer made no progress for `drain_ns` after the stop.
    writer_stuck: bool,
    journal: Arc<Journal>,
}

impl RingSink {
    fn push(&mut self, ring: Option<usize>, row: &[f64]) -> bool {
        let tx = match ring {
            Some(i) => &mut self.labs[i],
            None => &mut self.results,
        };
        if self.stopped {
            push_row_stopped(
                tx,
                row,
                &self.journal,
                self.drain_ns,
                &mut self.writer_stuck,
            )
        } else {
            push_row(tx, row, self.wait_ns)
        }
    }
}

impl RunSink for RingSink {
    fn row(&mut self, row: &[f64]) -> bool {
        if self.push(None, row) {
            return true;
        }
        if !self.stopped {
            self.pending.copy_from_slice(row);
            self.has_pending = true;
        }
        false
    }

    fn lab_record(&mut self, partition: usize, record: &[f64]) -> bool {
        match self.physical.iter().position(|p| *p == partition) {
            Some(i) => self.push(Some(i), record),
            None => true,
        }
    }

    fn stopped(&mut self) {
        self.stopped = true;
        if self.has_pending {
            let mut row = std::mem::take(&mut self.pending);
            self.push(None, &row);
            std::mem::swap(&mut row, &mut self.pending);
            self.has_pending = false;
        }
    }
}

/// Errors that keep a run from starting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The model cannot run on this runner.
    #[error("{0}")]
    Model(String),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> StartError + '_ {
    move |source| StartError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Run `model` (with a `[lab]`): PG-α on the threaded runner, every other lab-driving
/// scheme of [`hybridsim::integrators::build_with`] on the paced single-step runner
/// ([`sequential::run`]).
pub fn run(model: &Model, opts: &RunOptions) -> Result<RunOutcome, StartError> {
    if model.analysis.integrator != IntegratorKind::PgAlpha {
        return sequential::run(model, opts);
    }
    let mut parts = build_partitions(model, Grouping::Partitioned)
        .map_err(|e| StartError::Model(e.to_string()))?;
    hybridsim::integrators::connect_labs(&mut parts, opts.connector.as_deref())
        .map_err(StartError::Model)?;
    // With wall-clock pacing the bumpless start (inside the consistent start of PG-α, before
    // the test clock) goes out one command per controller tick too; and a start that would be
    // refused for lack of real-time scheduling is refused before it commands anything.
    if let Some(lab) = &model.lab {
        if opts.pacing.unwrap_or(lab.runner.pacing) == Pacing::Realtime {
            spin_refusal(model, lab)?;
            let probe = clock::setup_current_thread(
                "link",
                lab.runner.cpus.first().copied(),
                lab.runner.priority,
                true,
            );
            let hardware = lab.lab.transfer != hybridsim::model::lab::TransferKind::Virtual;
            if !probe.fifo && (hardware || opts.require_realtime || !opts.allow_soft_realtime) {
                return Err(no_realtime_scheduling(hardware, opts, &probe.note));
            }
            let dtc_ns = ((lab.lab.time_scale.dt_c * 1e9).round() as u64).max(1);
            for part in parts.iter_mut() {
                if let Some(lab) = part.lab_mut() {
                    lab.set_tick_clock(Box::new(
                        clock::TickPacer::new(now_ns(), dtc_ns).with_spin(lab_spin_ns(model)),
                    ));
                }
            }
        }
    }
    let pg = PgAlpha::new(
        parts,
        &hybridsim::integrators::StepSettings::from_analysis(&model.analysis),
    )
    .map_err(|e| StartError::Model(format!("{}: analysis: {e}", model.source)))?;
    run_integrator(model, pg, opts)
}

/// Whether a realtime-paced run can hold its controller tick with its spin budget: refused
/// (at `runner.spin_budget`) when the budget is not shorter than the tick (every wait would
/// spin from start to end and run into the kernel's real-time throttling); a warning when
/// the budget plus the wake-up latency measured here (the worst of 20 sleeps of a tick)
/// leaves no sleep. Returns the `pacing` object of run.json and the warning, if any. With
/// pacing `fast` nothing is measured.
fn pacing_check(
    model: &Model,
    lab: &hybridsim::model::lab::LabConfig,
    realtime: bool,
) -> Result<(Value, Option<String>), StartError> {
    let dtc_ns = ((lab.lab.time_scale.dt_c * 1e9).round() as u64).max(1);
    let spin_ns = lab.runner.spin_budget_ns();
    let mut doc = json!({
        "spin_budget_us": spin_ns as f64 / 1e3,
        "controller_tick_us": dtc_ns as f64 / 1e3,
        "sleep": "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to the deadline minus the spin budget, then spin",
    });
    if !realtime {
        return Ok((doc, None));
    }
    spin_refusal(model, lab)?;
    let latency = clock::measure_wakeup_latency(20, dtc_ns);
    doc["wakeup_latency_us"] = json!(latency as f64 / 1e3);
    let warning = (spin_ns + latency >= dtc_ns).then(|| {
        format!(
            "runner.spin_budget: {} µs plus the measured wake-up latency of {:.1} µs leave no \
             sleep in a controller tick of {} µs: the rate may not be held (deadline misses) \
             and a SCHED_FIFO thread may be throttled",
            spin_ns as f64 / 1e3,
            latency as f64 / 1e3,
            dtc_ns as f64 / 1e3
        )
    });
    doc["holdable"] = json!(warning.is_none());
    Ok((doc, warning))
}

/// The refusal of a realtime-paced run whose spin budget is not shorter than its controller
/// tick (see [`pacing_check`]); called before anything is commanded.
fn spin_refusal(model: &Model, lab: &hybridsim::model::lab::LabConfig) -> Result<(), StartError> {
    let dtc_ns = ((lab.lab.time_scale.dt_c * 1e9).round() as u64).max(1);
    let spin_ns = lab.runner.spin_budget_ns();
    if spin_ns >= dtc_ns {
        return Err(StartError::Model(format!(
            "{}: runner.spin_budget: {} µs is not shorter than the controller tick Δt^C = {} \
             µs: every wait would spin from start to end and run into the kernel's real-time \
             throttling; lower spin_budget (the default is {} µs)",
            model.source,
            spin_ns as f64 / 1e3,
            dtc_ns as f64 / 1e3,
            hybridsim::model::lab::DEFAULT_SPIN_BUDGET_US
        )));
    }
    Ok(())
}

/// The `[runner] spin_budget` of `model` (ns; the default without a `[lab]`).
fn lab_spin_ns(model: &Model) -> u64 {
    model
        .lab
        .as_ref()
        .map_or(clock::DEFAULT_SPIN_NS, |l| l.runner.spin_budget_ns())
}

/// The lock-free rings of a run's records, checked (in u128) against
/// [`MAX_RING_BYTES`] before anything is allocated: the results ring of `ring_rows` rows of
/// `ncol` columns, and per laboratory a ring of its controller-rate records for the ticks of
/// those rows (`ss` per step, a row every `every` steps; at least 64 steps' and 1024 rows'
/// worth). Returns `(results producer, results consumer, lab producers, lab consumers with
/// their widths)`.
#[allow(clippy::type_complexity)]
pub(crate) fn record_rings(
    model: &Model,
    lab_cols: &[Vec<String>],
    ncol: usize,
    ss: u64,
    every: u64,
    ring_rows: usize,
) -> Result<
    (
        rtrb::Producer<f64>,
        rtrb::Consumer<f64>,
        Vec<rtrb::Producer<f64>>,
        Vec<(rtrb::Consumer<f64>, usize)>,
    ),
    StartError,
> {
    let lab_ring_rows = (64 * ss as u128)
        .max(ring_rows as u128 * ss as u128 / every.max(1) as u128)
        .max(1024);
    let ring_bytes = 8
        * (ring_rows as u128 * ncol as u128
            + lab_cols
                .iter()
                .map(|c| c.len().max(1) as u128 * lab_ring_rows)
                .sum::<u128>());
    if ring_bytes > MAX_RING_BYTES {
        return Err(StartError::Model(format!(
            "{}: runner.results_ring: {ring_rows} rows of {ncol} columns, with the lab records of \
             {ss} ticks per step, need {} MiB of rings, more than the {} MiB the runner \
             preallocates at most; lower results_ring (or output.every)",
            model.source,
            ring_bytes >> 20,
            MAX_RING_BYTES >> 20
        )));
    }
    let (res_tx, res_rx) = RingBuffer::<f64>::new(ring_rows * ncol);
    let mut lab_tx = Vec::new();
    let mut lab_rx = Vec::new();
    for cols in lab_cols {
        let width = cols.len().max(1);
        let (tx, rx) = RingBuffer::<f64>::new(width * lab_ring_rows as usize);
        lab_tx.push(tx);
        lab_rx.push((rx, width));
    }
    Ok((res_tx, res_rx, lab_tx, lab_rx))
}

/// The refusal of a realtime-paced start without real-time scheduling.
fn no_realtime_scheduling(hardware: bool, opts: &RunOptions, note: &str) -> StartError {
    StartError::Model(format!(
        "realtime pacing with {} refuses to start without real-time scheduling: {note}",
        if hardware {
            "a non-virtual transfer system"
        } else if opts.require_realtime {
            "--require-realtime"
        } else {
            "a virtual lab (--allow-soft-realtime runs it on ordinary scheduling)"
        },
    ))
}

/// Run an already built PG-α integrator of `model` on the threaded runner (the partitions may
/// carry physical substructures of the caller's, e.g. a real controller behind a port, or a
/// fault injected by a test).
pub fn run_integrator(
    model: &Model,
    mut pg: PgAlpha,
    opts: &RunOptions,
) -> Result<RunOutcome, StartError> {
    let lab = model.lab.as_ref().ok_or_else(|| {
        StartError::Model(format!("{}: the model has no [lab] table", model.source))
    })?;
    if model.analysis.integrator != IntegratorKind::PgAlpha {
        return Err(StartError::Model(format!(
            "{}: analysis.integrator: the real-time runner needs `pg-alpha`, found `{}`",
            model.source,
            model.analysis.integrator.name()
        )));
    }
    let ts = lab.lab.time_scale;
    let pacing = opts.pacing.unwrap_or(lab.runner.pacing);
    let realtime = pacing == Pacing::Realtime;
    let a = &model.analysis;
    let physical: Vec<usize> = pg.physical().collect();
    if physical.len() > MAX_PHYSICAL {
        return Err(StartError::Model(format!(
            "at most {MAX_PHYSICAL} physical substructures are supported"
        )));
    }
    let any_hardware = pg
        .partitions()
        .iter()
        .filter_map(|p| p.lab())
        .any(|lab| !lab.is_virtual());
    let mut recorder = Recorder::new(model, &pg);
    // The pipelined hand-off (docs/realtime-pipeline.md): the physical job of step n + 1
    // leaves after the interface solve and the physical partitions' link update, before the
    // numerical update and the row; not with online updating (see `Threaded::pipelined`).
    let pipelined = model.updating.is_none();
    if pipelined {
        let early: Vec<bool> = (0..pg.partitions().len())
            .map(|k| k != pg.numerical())
            .collect();
        recorder.split_at_handoff(&early);
    }
    let columns: Vec<String> = recorder.headers(&pg);
    let ncol = columns.len();
    let ss = pg.subcycles() as u64;
    let n_steps = opts.max_steps.unwrap_or(a.n_steps()).min(a.n_steps());
    let every = model.output.every;
    let ring_rows = opts
        .results_ring
        .unwrap_or_else(|| lab.runner.results_ring_rows(ncol));
    // Online model updating ([updating], issue 14): observed and applied on the link thread
    // after every step, the filter on a task of its own (updating_task), estimates applied
    // one step later, as in `hybridsim run`.
    let mut updating = hybridsim::online_updating::OnlineUpdating::new(model, &mut pg, n_steps)
        .map_err(|e| StartError::Model(e.to_string()))?;
    if updating.is_none() && opts.inject.is_some_and(|f| f.task == Task::Updating) {
        return Err(StartError::Model(format!(
            "--inject-fault: {} has no [updating], so the runner has no updating task",
            model.source
        )));
    }
    if opts
        .inject
        .is_some_and(|f| f.kind == TaskFaultKind::BuildPanic)
        && updating
            .as_ref()
            .is_some_and(|u| u.refactorization().is_none())
    {
        return Err(StartError::Model(format!(
            "--inject-fault: {} has refactorize = \"never\", so the updating task builds no \
             operators",
            model.source
        )));
    }

    // Rings: every size is checked (in u128) before anything is allocated.
    let lab_cols: Vec<Vec<String>> = physical
        .iter()
        .map(|&k| {
            pg.partitions()[k]
                .lab()
                .map(|lab| lab.lab_columns())
                .unwrap_or_default()
        })
        .collect();
    let (res_tx, res_rx, lab_tx, lab_rx) =
        record_rings(model, &lab_cols, ncol, ss, every, ring_rows)?;
    let (ns_jobs_tx, mut ns_jobs_rx) = RingBuffer::<Job>::new(2);
    let (mut ns_done_tx, ns_done_rx) = RingBuffer::<Done>::new(2);
    let (ps_jobs_tx, mut ps_jobs_rx) = RingBuffer::<Job>::new(2);
    let (mut ps_done_tx, ps_done_rx) = RingBuffer::<Done>::new(2);
    let (est_tx, mut est_rx) = RingBuffer::<Option<Snapshot>>::new(64);

    // Folder.
    if let Some(f) = &opts.folder {
        std::fs::create_dir_all(f).map_err(io(f))?;
        if let Some(text) = &opts.model_text {
            let p = f.join("model.toml");
            std::fs::write(&p, text).map_err(io(&p))?;
        }
        hybridsim_io::inputs::write_ground_motions(f, model).map_err(io(f))?;
    }
    let results_file = DiskFile::create_as(
        opts.folder
            .as_ref()
            .map(|f| f.join(model.output.format.results_file_name())),
        &columns.join(","),
        model.output.format,
    )?;
    let mut lab_files = Vec::new();
    for (i, &k) in physical.iter().enumerate() {
        let path = opts.folder.as_ref().map(|f| {
            f.join(if i == 0 {
                "lab.csv".to_string()
            } else {
                format!("lab.{}.csv", pg.partitions()[k].state.name)
            })
        });
        lab_files.push(DiskFile::create(path, &lab_cols[i].join(","))?);
    }

    // Scheduling.
    let cpus = lab.runner.cpus.clone();
    let cpu_for = |i: usize| -> Option<usize> {
        if cpus.is_empty() {
            None
        } else {
            Some(cpus[i % cpus.len()])
        }
    };
    let memory_locked = if realtime {
        clock::lock_memory()
    } else {
        false
    };
    let priority = lab.runner.priority;
    // One SCHED_FIFO priority for the three tasks. Rate-monotonic priorities (physical above
    // link above numerical) were measured worse on an N = 1000 chain at 4096 Hz: the link and
    // physical threads' waiting rounds then starve the numerical task, which the link waits
    // for (physical wake-up lateness p50 61 ms against 0.1 µs; BENCHMARKS.md, issue 20).
    let coord_setup = clock::setup_current_thread("link", cpu_for(0), priority, realtime);
    let soft_realtime = realtime && !coord_setup.fifo;
    if soft_realtime && (any_hardware || opts.require_realtime || !opts.allow_soft_realtime) {
        if memory_locked {
            clock::unlock_memory();
        }
        return Err(no_realtime_scheduling(
            any_hardware,
            opts,
            &coord_setup.note,
        ));
    }
    let dtc_ns = (ts.dt_c * 1e9).round() as u64;
    let spin_ns = lab.runner.spin_budget_ns();
    let marker = opts.loop_marker;
    let inject = opts.inject;

    // The supervisor's bounds.
    let grace = opts.watchdog.unwrap_or(if realtime {
        Duration::from_nanos(10 * ss * dtc_ns).max(MIN_REALTIME_GRACE)
    } else {
        FAST_WATCHDOG
    });
    let return_grace = grace.clamp(Duration::from_millis(50), Duration::from_secs(2));
    let end_bound = grace.max(Duration::from_secs(1));
    let trip_request = Arc::new(AtomicBool::new(false));
    let journal = Arc::new(Journal::default());

    // The journal: run.json says `running` from the start (rewritten by the writer with a
    // heartbeat, and at the end with the final document).
    let mut base = base_json(model, lab, &pg, opts, realtime, grace);
    base["soft_realtime"] = json!(soft_realtime);
    base["spin_budget_us"] = json!(spin_ns as f64 / 1e3);
    // Start-up (issue 20): from reading the model file to here, the integrator built, before
    // the first step.
    base["startup"] = startup_json(&pg);
    match pacing_check(model, lab, realtime) {
        Ok((doc, warning)) => {
            base["pacing_check"] = doc;
            base["pacing_warning"] = json!(warning);
        }
        Err(e) => {
            if memory_locked {
                clock::unlock_memory();
            }
            return Err(e);
        }
    }
    if let Some(f) = &opts.folder {
        let p = f.join("run.json");
        let mut doc = base.clone();
        doc["status"] = json!("running");
        heartbeat_fields(&mut doc, &journal, model.analysis.time_step);
        if let Err(e) = hybridsim_io::write_json_atomic(&p, &doc) {
            if memory_locked {
                clock::unlock_memory();
            }
            return Err(io(&p)(e));
        }
    }
    let start_ns = now_ns() + START_MARGIN.as_nanos() as u64;

    // The timelines (`--trace`): every activation of the run's steps, allocated here.
    let (ns_trace, ps_trace, link_trace) = if opts.trace {
        let steps = (n_steps as usize).saturating_add(2).min(MAX_TRACE_EVENTS);
        (
            steps,
            steps.saturating_mul(ss as usize).min(MAX_TRACE_EVENTS),
            steps.saturating_mul(2).min(MAX_TRACE_EVENTS),
        )
    } else {
        (0, 0, 0)
    };

    // Workers.
    let ns_cpu = cpu_for(1);
    let ns = std::thread::Builder::new()
        .name("hs-ns".into())
        .spawn(move || {
            let setup = clock::setup_current_thread("numerical", ns_cpu, priority, realtime);
            let mut st = TaskStats::new("numerical").with_trace(ns_trace);
            let usage = TaskStats::usage_start();
            if let Some(m) = marker {
                m(true);
            }
            loop {
                let Some(mut job) = wait_pop(&mut ns_jobs_rx) else {
                    break;
                };
                if job.stop {
                    break;
                }
                let t0 = now_ns();
                let mut error = None;
                let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    if let Some(kind) = TaskFault::hits(&inject, Task::Numerical, job.step) {
                        TaskFault::fire(kind, Task::Numerical);
                    }
                    for task in job.tasks.iter_mut().flatten() {
                        if let Err(e) = task.numerical_step() {
                            error.get_or_insert(e);
                        }
                    }
                }));
                let t1 = now_ns();
                let missed = realtime && t1 > start_ns + (job.step + 1) * ss * dtc_ns;
                let run = st.record(t1 - t0, None, missed);
                let step = job.step;
                let _ = ns_done_tx.push(Done {
                    error,
                    miss_run: run,
                    panic: caught.err(),
                    ..Done::new(job.tasks)
                });
                st.trace(step, 0, [t0, t1, now_ns(), 0]);
            }
            if let Some(m) = marker {
                m(false);
            }
            st.usage_end(usage);
            (st, setup)
        })
        .expect("spawn");
    // `[link, numerical]`: the physical task shares the link's CPU (the hand-off and the
    // substeps never run at the same time); `[link, numerical, physical]` gives it its own.
    let ps_cpu = if cpus.len() >= 3 {
        Some(cpus[2])
    } else {
        cpu_for(0)
    };
    let ps_trip = trip_request.clone();
    let recall_request = Arc::new(AtomicBool::new(false));
    let ps_recall = recall_request.clone();
    let ps = std::thread::Builder::new()
        .name("hs-ps".into())
        .spawn(move || {
            let setup = clock::setup_current_thread("physical", ps_cpu, priority, realtime);
            let mut st = TaskStats::new("physical").with_trace(ps_trace);
            let usage = TaskStats::usage_start();
            if let Some(m) = marker {
                m(true);
            }
            loop {
                let Some(mut job) = wait_pop(&mut ps_jobs_rx) else {
                    break;
                };
                if job.stop {
                    break;
                }
                let received = now_ns();
                let mut error = None;
                let mut run = 0;
                let mut ticks = 0;
                let mut tripped = false;
                let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    if let Some(kind) = TaskFault::hits(&inject, Task::Physical, job.step) {
                        TaskFault::fire(kind, Task::Physical);
                    }
                    for j in 1..=ss {
                        // The watchdog gave up waiting for this step: hold the labs here,
                        // since they cannot be reached from the link thread.
                        if ps_trip.load(Ordering::SeqCst) {
                            trip_tasks(&mut job.tasks, EventKind::Watchdog);
                            tripped = true;
                            break;
                        }
                        // Recalled (a stop while this job was sent early): back to the
                        // link thread before the next command, which trips the labs there.
                        if ps_recall.load(Ordering::SeqCst) {
                            break;
                        }
                        let i = job.step * ss + (j - 1);
                        let deadline = start_ns + i * dtc_ns;
                        let late = if realtime {
                            sleep_until_with(deadline, spin_ns);
                            if ps_recall.load(Ordering::SeqCst) {
                                break;
                            }
                            Some(now_ns().saturating_sub(deadline))
                        } else {
                            None
                        };
                        let t0 = now_ns();
                        for task in job.tasks.iter_mut().flatten() {
                            if let Err(e) = task.physical_substep(j as usize) {
                                error.get_or_insert(e);
                            }
                        }
                        ticks += 1;
                        let t1 = now_ns();
                        let missed = realtime && t1 > deadline + dtc_ns;
                        run = run.max(st.record(t1 - t0, late, missed));
                        st.trace(job.step, j as u32, [deadline, received, t0, t1]);
                        if error.is_some() {
                            break;
                        }
                    }
                }));
                let panic = caught.err();
                if panic.is_some() {
                    // A panic in a step (a transfer system's code, the integrator): hold the
                    // labs and send them back, so the link thread can still ramp them down.
                    trip_tasks(&mut job.tasks, EventKind::TaskPanic);
                } else if !tripped && ps_trip.load(Ordering::SeqCst) {
                    // The request came during the last substep.
                    trip_tasks(&mut job.tasks, EventKind::Watchdog);
                }
                let _ = ps_done_tx.push(Done {
                    error,
                    miss_run: run,
                    ticks,
                    panic,
                    ..Done::new(job.tasks)
                });
            }
            if let Some(m) = marker {
                m(false);
            }
            st.usage_end(usage);
            (st, setup)
        })
        .expect("spawn");
    let est = std::thread::Builder::new()
        .name("hs-estimation".into())
        .spawn(move || {
            let mut st = TaskStats::new("estimation");
            let mut estimator = SecantStiffness::new(MAX_SNAPSHOT);
            if let Some(m) = marker {
                m(true);
            }
            while let Some(Some(s)) = wait_pop(&mut est_rx) {
                if let Some(kind) = TaskFault::hits(&inject, Task::Estimation, s.step) {
                    TaskFault::fire(kind, Task::Estimation);
                }
                let t0 = now_ns();
                if s.n > 0 {
                    estimator.observe(&Observation {
                        step: s.step,
                        time: s.time,
                        displacement: &s.u[..s.n],
                        force: &s.force[..s.n],
                    });
                }
                st.record(now_ns() - t0, None, false);
            }
            if let Some(m) = marker {
                m(false);
            }
            let k = estimator.estimate(0);
            (
                st,
                json!({
                    "estimator": estimator.describe(),
                    "snapshots": estimator.observations(),
                    "secant_stiffness": k.filter(|k| k.is_finite()),
                    "stalled": false,
                }),
            )
        })
        .expect("spawn");
    // The updating task: the filter moves to its thread until the end of the run.
    let mut updating_handle = None;
    let mut updating_queues = None;
    let mut link_refactor = None;
    if let Some(filter) = updating.as_mut().and_then(|u| u.take_filter()) {
        let (snap_tx, snap_rx) = RingBuffer::new(updating_task::UPDATING_QUEUE);
        let (estimate_tx, estimate_rx) = RingBuffer::new(updating_task::UPDATING_QUEUE);
        // refactorize = "on_update": the builds run on the task too (off this thread).
        let task_refactor =
            updating
                .as_mut()
                .and_then(|u| u.take_refactorizer())
                .map(|mut refactorizer| {
                    if let Some(f) = inject.filter(|f| f.kind == TaskFaultKind::BuildPanic) {
                        refactorizer.inject_panic_at(f.at);
                    }
                    let (builds_tx, builds_rx) = RingBuffer::new(updating_task::UPDATING_QUEUE);
                    let (returned_tx, returned_rx) = RingBuffer::new(updating_task::UPDATING_QUEUE);
                    link_refactor = Some(updating_task::LinkRefactor {
                        builds: builds_rx,
                        returned: returned_tx,
                        behind: false,
                        pending: None,
                    });
                    updating_task::TaskRefactor {
                        refactorizer,
                        builds: builds_tx,
                        returned: returned_rx,
                    }
                });
        updating_handle = Some(updating_task::spawn(
            filter,
            snap_rx,
            estimate_tx,
            task_refactor,
            inject,
            marker,
            realtime.then(|| updating_task::idle_sleep_ns(ss * dtc_ns)),
        ));
        updating_queues = Some((snap_tx, estimate_rx));
    }
    let writer = spawn_writer(WriterSetup {
        results_file,
        lab_files,
        res_rx,
        lab_rx,
        ncol,
        lab_cols: lab_cols.clone(),
        keep: opts.keep_rows,
        delay: opts.writer_delay,
        fails_after: opts.writer_fails_after,
        inject,
        journal: journal.clone(),
        run_json: opts
            .folder
            .as_ref()
            .map(|f| (f.join("run.json"), base.clone())),
        interval: opts.journal_interval.unwrap_or(JOURNAL_INTERVAL),
        dt: model.analysis.time_step,
    });

    // The loop: the core's one run loop and trip policy, with the phases on the workers.
    let wait_ns = opts
        .overflow_wait
        .unwrap_or(if realtime {
            Duration::ZERO
        } else {
            Duration::from_secs(2)
        })
        .as_nanos() as u64;
    let boxes = (0..pg.partitions().len())
        .map(|_| Some(Box::new(FreeTask::new(&pg))))
        .collect();
    let mut exec = Threaded {
        pg: &mut pg,
        boxes,
        ns_jobs: ns_jobs_tx,
        ns_done: ns_done_rx,
        ps_jobs: ps_jobs_tx,
        ps_done: ps_done_rx,
        estimation: est_tx,
        snapshots_dropped: 0,
        link_stats: TaskStats::new("link").with_trace(link_trace),
        realtime,
        miss_run: 0,
        trip_request,
        start_ns,
        dtc_ns,
        ss,
        grace_ns: grace.as_nanos() as u64,
        return_ns: return_grace.as_nanos() as u64,
        fault: None,
        stalled: [false; 2],
        panic: None,
        pacer: TickPacer::new(start_ns, dtc_ns).with_spin(spin_ns),
        estimation_full_since: None,
        pipelined,
        released: false,
        released_step: 0,
        recall_request,
        link_marks: [0; 3],
        ns_sent: false,
        ns_early: None,
        ns_seen: 0,
    };
    let mut sink = RingSink {
        results: res_tx,
        labs: lab_tx,
        physical: physical.clone(),
        wait_ns,
        pending: vec![0.0; ncol],
        has_pending: false,
        drain_ns: end_bound.as_nanos() as u64,
        stopped: false,
        writer_stuck: false,
        journal: journal.clone(),
    };
    let settings = hybridsim::runner::RunSettings {
        n_steps,
        every,
        divergence: Some(lab.safety.divergence),
        max_overruns: realtime.then_some(lab.safety.max_overruns),
    };
    let mut row = vec![0.0; ncol];
    let mut tap = hybridsim::runner::take_tap(&opts.tap);
    if let Some(tap) = tap.as_mut() {
        let labs: Vec<(usize, String, Vec<String>)> = physical
            .iter()
            .zip(&lab_cols)
            .map(|(&k, c)| (k, exec.pg.partitions()[k].state.name.clone(), c.clone()))
            .collect();
        tap.start(&columns, &labs);
    }
    let mut tapped;
    let sink_ref: &mut dyn RunSink = match tap.as_deref_mut() {
        Some(tap) => {
            tapped = hybridsim::runner::Tapped {
                sink: &mut sink,
                tap,
            };
            &mut tapped
        }
        None => &mut sink,
    };
    if let Some(m) = marker {
        m(true);
    }
    let link_usage = TaskStats::usage_start();
    let wall0 = now_ns();
    let grace_ns = exec.grace_ns;
    let mut with_task = None;
    let exec_ref: &mut dyn StepExecutor = match (updating.as_mut(), updating_queues) {
        (Some(updating), Some((snapshots, estimates))) => {
            with_task.insert(updating_task::WithUpdatingTask {
                inner: &mut exec,
                updating,
                snapshots,
                estimates,
                realtime,
                wait_ns: grace_ns,
                misses: 0,
                miss_run: 0,
                worst_miss_run: 0,
                late: 0,
                behind: false,
                refactor: link_refactor,
            })
        }
        _ => &mut exec,
    };
    // A panic on this thread inside the loop (the recorder, the sink, a tap) must not leave a
    // laboratory driven: the jobs sent early come back, the laboratories trip (`task_panic`)
    // and ramp down or hold, as after any fault, and run.json names the link task.
    let (end, link_panic) = hybridsim::runner::run_guarded(
        &mut *exec_ref,
        &mut recorder,
        &mut *sink_ref,
        &settings,
        &opts.abort,
        &mut row,
        "link",
    );
    let wall = (now_ns() - wall0) as f64 * 1e-9;
    if let Some(m) = marker {
        m(false);
    }
    let updating_front = with_task.map(|w| (w.snapshots, w.misses, w.worst_miss_run, w.late));
    let steps = end.steps;
    let mut status = match &end.state {
        EndState::Completed => RunStatus::Completed,
        EndState::Stopped { event, .. } => RunStatus::Stopped(*event),
        EndState::Failed(fault) => RunStatus::Failed(fault.to_string()),
    };
    let Threaded {
        ns_jobs: mut ns_jobs_tx,
        ps_jobs: mut ps_jobs_tx,
        estimation: mut est_tx,
        snapshots_dropped: est_dropped,
        mut link_stats,
        stalled: workers_stalled,
        panic: caught_panic,
        ..
    } = exec;
    link_stats.usage_end(link_usage);

    // Stop the workers; every wait below is bounded, and a thread that does not end in time
    // is left behind (detached), never waited for.
    let _ = ns_jobs_tx.push(Job::stop());
    let _ = ps_jobs_tx.push(Job::stop());
    let until = now_ns() + end_bound.as_nanos() as u64;
    let mut b = Backoff::default();
    while est_tx.push(None).is_err() && !est_tx.is_abandoned() && now_ns() < until {
        b.snooze();
    }
    let mut panics: Vec<(&'static str, String)> = Vec::new();
    if let Some(msg) = link_panic {
        panics.push(("link", msg));
    }
    if let Some((task, payload)) = &caught_panic {
        panics.push((task, panic_text(payload.as_ref())));
    }
    let mut stalled_tasks: Vec<&'static str> = Vec::new();
    let left = |task: &'static str, why: &str| ThreadSetup {
        task: task.into(),
        cpu: None,
        pinned: false,
        fifo: false,
        priority: None,
        note: why.into(),
    };
    let mut worker = |h: std::thread::JoinHandle<(TaskStats, ThreadSetup)>,
                      task: &'static str,
                      stalled: bool| {
        let bound = if stalled { Duration::ZERO } else { end_bound };
        match join_within(h, bound, None) {
            Joined::Done(r) => r,
            Joined::Panicked(msg) => {
                if !panics.iter().any(|(t, _)| *t == task) {
                    panics.push((task, msg));
                }
                (TaskStats::new(task), left(task, "the thread panicked"))
            }
            Joined::Stalled => {
                stalled_tasks.push(task);
                (
                    TaskStats::new(task),
                    left(task, "the thread stalled and was left behind (not joined)"),
                )
            }
        }
    };
    let (ns_stats, ns_setup) = worker(ns, "numerical", workers_stalled[NS]);
    let (ps_stats, ps_setup) = worker(ps, "physical", workers_stalled[PS]);
    let (est_stats, mut estimation) = match join_within(est, end_bound, None) {
        Joined::Done(r) => r,
        Joined::Panicked(msg) => {
            let e = json!({"error": format!("the estimation thread panicked: {msg}"), "stalled": false});
            panics.push(("estimation", msg));
            (TaskStats::new("estimation"), e)
        }
        Joined::Stalled => {
            stalled_tasks.push("estimation");
            (TaskStats::new("estimation"), json!({"stalled": true}))
        }
    };
    estimation["snapshots_dropped"] = json!(est_dropped);
    // The updating task: asked to end, joined within the bound (a stalled one is left
    // behind; its filter, and the record, with it); its faults never fail the test.
    let mut updating_stats = None;
    let mut updating_task_json = Value::Null;
    if let (Some(h), Some((mut snap_tx, misses, worst, late)), Some(u)) =
        (updating_handle, updating_front, updating.as_mut())
    {
        let until = now_ns() + end_bound.as_nanos() as u64;
        let mut b = Backoff::default();
        while snap_tx.push(None).is_err() && !snap_tx.is_abandoned() && now_ns() < until {
            b.snooze();
        }
        let (mut st, panic, stalled) = match join_within(h, end_bound, None) {
            Joined::Done(end) => {
                u.restore_filter(end.filter);
                (end.stats, end.panic, false)
            }
            Joined::Panicked(msg) => (TaskStats::new("updating"), Some(msg), false),
            Joined::Stalled => (TaskStats::new("updating"), None, true),
        };
        st.misses = misses;
        st.worst_run = worst;
        let summary = u.summary();
        updating_task_json = json!({
            "latency_steps": 1,
            "queue": updating_task::UPDATING_QUEUE,
            "misses": misses,
            "longest_miss_run": worst,
            "late_estimates_dropped": late,
            "fault": summary.task_fault.map(|(why, t)| json!({"reason": why, "time": t})),
            "panic": panic,
            "stalled": stalled,
        });
        updating_stats = Some(st);
    }
    drop(sink);
    let written = match join_within(writer, end_bound, Some(&journal.progress)) {
        Joined::Done(mut w) => {
            if let Some(msg) = w.panic.take() {
                panics.push(("writer", msg));
            }
            w
        }
        Joined::Panicked(msg) => {
            panics.push(("writer", msg.clone()));
            WriterEnd::lost(&journal, format!("the writer thread panicked: {msg}"))
        }
        Joined::Stalled => {
            journal.stop_writing.store(true, Ordering::SeqCst);
            stalled_tasks.push("writer");
            WriterEnd::lost(
                &journal,
                "the writer thread stalled and was left behind; the counts are those flushed \
                 to disk"
                    .to_string(),
            )
        }
    };
    if memory_locked {
        clock::unlock_memory();
    }
    let WriterEnd {
        rows: rows_written,
        lab_rows,
        kept: rows,
        logs,
        error: writer_error,
        ..
    } = written;
    if let RunStatus::Completed = status {
        // The estimation slot is not critical: its panic is reported, the test went on.
        if let Some((task, msg)) = panics.iter().find(|(t, _)| *t != "estimation") {
            status = RunStatus::Failed(format!("the {task} thread panicked: {msg}"));
        } else if let Some(e) = &writer_error {
            status = RunStatus::Failed(e.clone());
        } else if stalled_tasks.contains(&"writer") {
            status = RunStatus::Failed("the writer thread stalled".into());
        }
    }
    let stalled_task: Option<&'static str> = match end.state.fault() {
        Some(Fault::Stalled { task, .. }) => Some(*task),
        _ => stalled_tasks
            .iter()
            .copied()
            .find(|t| *t != "estimation")
            .or(stalled_tasks.first().copied()),
    };
    let safety: Vec<SafetySummary> = pg
        .partitions()
        .iter()
        .filter_map(|p| Some(p.lab()?.safety_summary()))
        .collect();
    let mut indicators = Vec::new();
    for log in &logs {
        indicators.extend(log.indicators(ts.dt_c, 0.25));
    }
    if let Some(f) = &opts.folder {
        if let Some(log) = logs.first() {
            if log.len() > 1 {
                let _ =
                    log.plot_synchronization(&f.join("synchronization.png"), &model.units.length);
            }
        }
    }
    let mut tasks = vec![ps_stats, ns_stats, link_stats, est_stats];
    tasks.extend(updating_stats);
    let setup = vec![coord_setup, ps_setup, ns_setup];
    let trace_json = match (&opts.folder, opts.trace) {
        (Some(f), true) => {
            let p = f.join("trace.csv");
            match write_trace(&p, &tasks, start_ns) {
                Ok(()) => json!({
                    "file": "trace.csv",
                    "dropped": tasks.iter().map(|t| json!({"task": t.name, "events": t.trace.len(), "dropped": t.trace_dropped})).collect::<Vec<_>>(),
                }),
                Err(e) => json!({"error": format!("{}: {e}", p.display())}),
            }
        }
        _ => Value::Null,
    };
    let (status_name, event_json, error) = match &status {
        RunStatus::Completed => ("completed", Value::Null, writer_error.clone()),
        RunStatus::Stopped(ev) => (
            "stopped",
            hybridsim_io::lab::event_json(ev),
            writer_error.clone(),
        ),
        RunStatus::Failed(e) => ("failed", Value::Null, Some(e.clone())),
    };
    let mut run_json = base;
    let fields = json!({
        "status": status_name,
        "safety_event": event_json,
        "fault": end.state.fault().map(|f| f.to_string()),
        "error": error,
        "stalled_task": stalled_task,
        "task_panics": panics.iter().map(|(t, m)| json!({"task": t, "message": m})).collect::<Vec<_>>(),
        "lab_not_ramped": workers_stalled[PS].then_some(
            "the physical task never returned the laboratories: hybridsim could neither hold \
             nor ramp them down; the controller's own watchdog must hold the actuators"),
        "steps_completed": steps,
        "time_reached": pg.time(),
        "rows_written": rows_written,
        "lab_rows_written": lab_rows,
        "safety": safety.iter().map(|s| hybridsim_io::lab::safety_json(None, s)).collect::<Vec<_>>(),
        "tasks": tasks.iter().map(|t| t.to_json()).collect::<Vec<_>>(),
        "scheduling": {
            "memory_locked": memory_locked,
            "threads": setup.iter().map(|s| json!({"task": s.task, "cpu": s.cpu, "pinned": s.pinned, "sched_fifo": s.fifo, "priority": s.priority, "note": s.note})).collect::<Vec<_>>(),
        },
        "indicators": indicators.iter().map(|i| i.to_json()).collect::<Vec<_>>(),
        "estimation": estimation,
        "wall_seconds": wall,
        "trace": trace_json,
    });
    if let (Value::Object(doc), Value::Object(fields)) = (&mut run_json, fields) {
        doc.extend(fields);
    }
    if let Some(u) = &updating {
        run_json["updating_task"] = updating_task_json;
        run_json["updating"] = hybridsim_io::updating::updating_json(&u.summary());
        if let Some(f) = &opts.folder {
            if let Err(e) = hybridsim_io::updating::write_updating_csv(f, u) {
                run_json["updating"]["error"] = json!(e);
            }
        }
    }
    heartbeat_fields(&mut run_json, &journal, model.analysis.time_step);
    if let Some(f) = &opts.folder {
        let p = f.join("run.json");
        // The last word: no heartbeat after it (a writer left behind is told to stop).
        journal.stop_writing.store(true, Ordering::SeqCst);
        let guard = lock_within(&journal.closed, Duration::from_secs(2));
        if let Some(mut closed) = guard {
            *closed = true;
            hybridsim_io::write_json_atomic(&p, &run_json).map_err(io(&p))?;
        } else {
            hybridsim_io::write_json_atomic(&p, &run_json).map_err(io(&p))?;
        }
    }
    Ok(RunOutcome {
        status,
        steps,
        columns,
        rows,
        rows_written,
        lab_rows,
        tasks,
        setup,
        memory_locked,
        safety,
        indicators,
        estimation,
        stalled_task,
        panics,
        wall,
        run_json,
    })
}

/// Write the tasks' timelines ([`RunOptions::trace`]) to `path`: one line per event, the
/// instants in µs from the test's tick 0 (docs/realtime-pipeline.md says what `t0`–`t3` are
/// for each task). After the run, off the loop.
fn write_trace(path: &std::path::Path, tasks: &[TaskStats], start_ns: u64) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "task,step,substep,cpu,t0_us,t1_us,t2_us,t3_us")?;
    let us = |t: u64| {
        if t == 0 {
            f64::NAN
        } else {
            (t as f64 - start_ns as f64) * 1e-3
        }
    };
    for task in tasks {
        for e in &task.trace {
            writeln!(
                w,
                "{},{},{},{},{:.3},{:.3},{:.3},{:.3}",
                task.name,
                e.step,
                e.substep,
                e.cpu,
                us(e.t[0]),
                us(e.t[1]),
                us(e.t[2]),
                us(e.t[3])
            )?;
        }
    }
    w.flush()
}

/// A CSV file of the writer (or, without a folder, a row counter) that knows what is on disk:
/// a [`hybridsim_io::RowFile`], which writes whole rows only and, when the disk refuses part
/// of a write, cuts the file back to the last whole row and counts exactly the rows on it.
/// Each row is tagged with its first value (the time, in results rows).
struct DiskFile {
    file: Option<hybridsim_io::RowFile>,
    path: Option<PathBuf>,
    /// Rows handed to the file (or counted, without a folder).
    rows: u64,
    /// Rows counted without a folder, and the time of the last of them.
    counted_rows: u64,
    counted_first: f64,
}

impl DiskFile {
    /// Create `path` with its header (on disk at once), or a counter without a path, as CSV.
    fn create(path: Option<PathBuf>, header: &str) -> Result<Self, StartError> {
        Self::create_as(path, header, hybridsim::model::OutputFormat::Csv)
    }

    /// [`DiskFile::create`] in `format` (`[output] format`).
    fn create_as(
        path: Option<PathBuf>,
        header: &str,
        format: hybridsim::model::OutputFormat,
    ) -> Result<Self, StartError> {
        let format = match format {
            hybridsim::model::OutputFormat::Csv => hybridsim_io::RowFormat::Csv,
            hybridsim::model::OutputFormat::Binary => hybridsim_io::RowFormat::Binary,
        };
        let file = match &path {
            Some(p) => Some(
                hybridsim_io::RowFile::create_as(&hybridsim_io::file_factory(), p, header, format)
                    .map_err(io(p))?,
            ),
            None => None,
        };
        Ok(Self {
            file,
            path,
            rows: 0,
            counted_rows: 0,
            counted_first: f64::NAN,
        })
    }

    fn fail(&self, e: impl std::fmt::Display) -> String {
        match &self.path {
            Some(p) => format!("{}: {e}", p.display()),
            None => e.to_string(),
        }
    }

    fn write(&mut self, row: &[f64]) -> Result<(), String> {
        let first = row.first().copied().unwrap_or(f64::NAN);
        match &mut self.file {
            Some(f) => {
                if let Err(e) = f.write_row(row, first.to_bits()) {
                    return Err(self.fail(e));
                }
            }
            None if self.path.is_some() => return Err(self.fail("already closed")),
            None => {
                self.counted_rows += 1;
                self.counted_first = first;
            }
        }
        self.rows += 1;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        match &mut self.file {
            Some(f) => f.flush().map_err(|e| self.fail(e)),
            None if self.path.is_some() => Err(self.fail("already closed")),
            None => Ok(()),
        }
    }

    /// Flush and sync (the end of a run).
    fn finish(&mut self) -> Result<(), String> {
        match &mut self.file {
            Some(f) => f.finish().map_err(|e| self.fail(e)),
            None => Ok(()),
        }
    }

    /// After an error: the file already holds whole rows only; flush what still can be,
    /// then close it.
    fn cut_back(&mut self) {
        if let Some(f) = &mut self.file {
            let _ = f.flush();
        }
        self.close();
    }

    /// Close the file, keeping its counts.
    fn close(&mut self) {
        if let Some(f) = self.file.take() {
            self.counted_rows = f.rows_on_disk();
            self.counted_first = f.last_tag_on_disk().map_or(f64::NAN, f64::from_bits);
        }
        self.rows = self.flushed_rows();
    }

    /// Whole rows on disk.
    fn flushed_rows(&self) -> u64 {
        self.file
            .as_ref()
            .map_or(self.counted_rows, |f| f.rows_on_disk())
    }

    /// First value of the last row on disk.
    fn flushed_first(&self) -> f64 {
        match &self.file {
            Some(f) => f.last_tag_on_disk().map_or(f64::NAN, f64::from_bits),
            None => self.counted_first,
        }
    }
}

/// Everything the writer thread owns.
struct WriterSetup {
    results_file: DiskFile,
    lab_files: Vec<DiskFile>,
    res_rx: rtrb::Consumer<f64>,
    lab_rx: Vec<(rtrb::Consumer<f64>, usize)>,
    ncol: usize,
    lab_cols: Vec<Vec<String>>,
    keep: bool,
    delay: Option<Duration>,
    fails_after: Option<u64>,
    inject: Option<TaskFault>,
    journal: Arc<Journal>,
    /// run.json and the document the heartbeat starts from.
    run_json: Option<(PathBuf, Value)>,
    interval: Duration,
    dt: f64,
}

impl WriterEnd {
    /// The outcome of a writer that never returned: the counts it last flushed.
    fn lost(journal: &Journal, error: String) -> Self {
        Self {
            rows: journal.rows_on_disk.load(Ordering::SeqCst),
            lab_rows: journal.lab_rows_on_disk.load(Ordering::SeqCst),
            kept: Vec::new(),
            logs: Vec::new(),
            error: Some(error),
            panic: None,
        }
    }
}

/// Publish what is on disk.
fn publish(journal: &Journal, results: &DiskFile, labs: &[DiskFile]) {
    journal
        .rows_on_disk
        .store(results.flushed_rows(), Ordering::SeqCst);
    journal.lab_rows_on_disk.store(
        labs.iter().map(|f| f.flushed_rows()).sum(),
        Ordering::SeqCst,
    );
    journal
        .last_time_on_disk
        .store(results.flushed_first().to_bits(), Ordering::SeqCst);
}

/// The writer thread: the rings to `results.csv` and `lab.csv`, a flush every 200 ms, the
/// run.json heartbeat every `interval`. Its first error ends it (its rings are abandoned,
/// which stops the test at the next record) with the files cut back to whole, flushed rows
/// and their true counts.
fn spawn_writer(w: WriterSetup) -> std::thread::JoinHandle<WriterEnd> {
    std::thread::Builder::new()
        .name("hs-writer".into())
        .spawn(move || {
            let WriterSetup {
                mut results_file,
                mut lab_files,
                mut res_rx,
                mut lab_rx,
                ncol,
                lab_cols,
                keep,
                delay,
                fails_after,
                inject,
                journal,
                run_json,
                interval,
                dt,
            } = w;
            let mut row = vec![0.0; ncol];
            let mut lab_row: Vec<Vec<f64>> = lab_rx.iter().map(|(_, w)| vec![0.0; *w]).collect();
            let mut logs: Vec<LabLog> = lab_cols.into_iter().map(LabLog::new).collect();
            let mut kept = Vec::new();
            let left_behind = || "the run ended without the writer (it stalled)".to_string();
            let mut body = || -> Result<(), String> {
                let mut last_flush = std::time::Instant::now();
                let mut last_beat = std::time::Instant::now();
                loop {
                    let mut progressed = false;
                    while res_rx.slots() >= ncol {
                        res_rx
                            .pop_entire_slice(&mut row)
                            .map_err(|e| e.to_string())?;
                        if let Some(kind) =
                            TaskFault::hits(&inject, Task::Writer, results_file.rows)
                        {
                            TaskFault::fire(kind, Task::Writer);
                        }
                        if journal.stop_writing.load(Ordering::SeqCst) {
                            return Err(left_behind());
                        }
                        if fails_after == Some(results_file.rows) {
                            return Err(results_file.fail(format_args!(
                                "injected write failure after {} rows (test hook \
                                 writer_fails_after)",
                                results_file.rows
                            )));
                        }
                        if let Some(d) = delay {
                            std::thread::sleep(d);
                        }
                        results_file.write(&row)?;
                        if keep {
                            kept.push(row.clone());
                        }
                        journal.progress.fetch_add(1, Ordering::Relaxed);
                        progressed = true;
                    }
                    for (i, (rx, w)) in lab_rx.iter_mut().enumerate() {
                        while rx.slots() >= *w {
                            if journal.stop_writing.load(Ordering::SeqCst) {
                                return Err(left_behind());
                            }
                            rx.pop_entire_slice(&mut lab_row[i])
                                .map_err(|e| e.to_string())?;
                            lab_files[i].write(&lab_row[i])?;
                            logs[i].push(&lab_row[i]);
                            journal.progress.fetch_add(1, Ordering::Relaxed);
                            progressed = true;
                        }
                    }
                    let beat = run_json.is_some() && last_beat.elapsed() >= interval;
                    if beat || last_flush.elapsed() > Duration::from_millis(200) {
                        results_file.flush()?;
                        for f in lab_files.iter_mut() {
                            f.flush()?;
                        }
                        publish(&journal, &results_file, &lab_files);
                        last_flush = std::time::Instant::now();
                    }
                    if let (true, Some((path, base))) = (beat, &run_json) {
                        if let Ok(closed) = journal.closed.try_lock() {
                            if !*closed && !journal.stop_writing.load(Ordering::SeqCst) {
                                let mut doc = base.clone();
                                doc["status"] = json!("running");
                                heartbeat_fields(&mut doc, &journal, dt);
                                hybridsim_io::write_json_atomic(path, &doc)
                                    .map_err(|e| format!("{}: {e}", path.display()))?;
                            }
                        }
                        last_beat = std::time::Instant::now();
                    }
                    if !progressed {
                        let gone =
                            |abandoned: bool| abandoned || journal.finish.load(Ordering::SeqCst);
                        let done = gone(res_rx.is_abandoned())
                            && res_rx.slots() < ncol
                            && lab_rx
                                .iter()
                                .all(|(rx, w)| gone(rx.is_abandoned()) && rx.slots() < *w);
                        if done {
                            break;
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                results_file.finish()?;
                for f in lab_files.iter_mut() {
                    f.finish()?;
                }
                Ok(())
            };
            let (error, panic) = match std::panic::catch_unwind(AssertUnwindSafe(&mut body)) {
                Ok(r) => (r.err(), None),
                Err(payload) => {
                    let msg = panic_text(payload.as_ref());
                    (
                        Some(format!("the writer thread panicked: {msg}")),
                        Some(msg),
                    )
                }
            };
            // Give up the rings first: the loop sees at its next record that recording
            // has failed and stops the test.
            drop(res_rx);
            drop(lab_rx);
            if error.is_some() {
                results_file.cut_back();
                for f in lab_files.iter_mut() {
                    f.cut_back();
                }
            }
            publish(&journal, &results_file, &lab_files);
            WriterEnd {
                rows: results_file.flushed_rows(),
                lab_rows: lab_files.iter().map(|f| f.flushed_rows()).sum(),
                kept,
                logs,
                error,
                panic,
            }
        })
        .expect("spawn")
}

/// How a bounded join ended.
enum Joined<T> {
    Done(T),
    Panicked(String),
    /// Not finished within the bound (the thread is left behind, detached).
    Stalled,
}

/// Join `h` if it finishes within `bound` (counted from the last change of `progress`, when
/// given); otherwise leave it behind.
fn join_within<T>(
    h: std::thread::JoinHandle<T>,
    bound: Duration,
    progress: Option<&AtomicU64>,
) -> Joined<T> {
    let bound_ns = bound.as_nanos() as u64;
    let mut since = now_ns();
    let mut seen = progress.map(|p| p.load(Ordering::Relaxed));
    while !h.is_finished() {
        let now = now_ns();
        if let Some(p) = progress {
            let v = p.load(Ordering::Relaxed);
            if Some(v) != seen {
                seen = Some(v);
                since = now;
            }
        }
        if now.saturating_sub(since) >= bound_ns {
            return Joined::Stalled;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    match h.join() {
        Ok(r) => Joined::Done(r),
        Err(payload) => Joined::Panicked(panic_text(payload.as_ref())),
    }
}

/// Lock `m` within `bound` (a poisoned lock is taken as it is).
fn lock_within(m: &Mutex<bool>, bound: Duration) -> Option<std::sync::MutexGuard<'_, bool>> {
    let until = std::time::Instant::now() + bound;
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
        if std::time::Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The `startup` object of run.json measured now (the integrator built, before the first
/// step): seconds since the model file was read, peak resident memory, bytes per DOF.
pub(crate) fn startup_json(engine: &dyn TimeIntegrator) -> Value {
    let dofs = engine.total_dofs();
    let from = hybridsim_io::startup::start().unwrap_or_else(std::time::Instant::now);
    hybridsim_io::startup::Startup::measure(from, dofs).to_json()
}

/// The parts of run.json known before the run starts.
fn base_json(
    model: &Model,
    lab: &hybridsim::model::lab::LabConfig,
    pg: &dyn TimeIntegrator,
    opts: &RunOptions,
    realtime: bool,
    grace: Duration,
) -> Value {
    let seeds: Vec<Value> = pg
        .partitions()
        .iter()
        .filter_map(|p| p.lab())
        .flat_map(|lab| lab.seeds())
        .map(|(k, s)| json!({"source": k, "seed": s}))
        .chain(model.ground_motions.iter().filter_map(|g| {
            g.seed
                .map(|s| json!({"source": format!("ground_motion.{}", g.direction), "seed": s}))
        }))
        .collect();
    let mut lab_fields = hybridsim_io::lab::lab_settings_json(&lab.lab);
    lab_fields.insert(
        "providers".into(),
        json!(pg
            .partitions()
            .iter()
            .filter_map(|p| p
                .physical
                .as_ref()
                .map(|port| port.substructure().describe()))
            .collect::<Vec<_>>()),
    );
    json!({
        "hybridsim_version": env!("CARGO_PKG_VERSION"),
        "runner": "hybridsim-rt",
        "model": {
            "path": model.source,
            "sha256": opts.model_sha256,
            "title": model.title,
            "units": { "length": model.units.length, "force": model.units.force, "time": model.units.time },
        },
        "pacing": if realtime { "realtime" } else { "fast" },
        "time_scale": hybridsim_io::lab::time_scale_json(&lab.lab),
        "lab": lab_fields,
    "random_seeds": seeds,
        "ground_motions": hybridsim_io::inputs::ground_motion_json(model, &opts.record_sha256),
        "warnings": hybridsim_io::inputs::warnings_json(model),
        "status": "running",
        "watchdog": {
            "seconds": grace.as_secs_f64(),
            "meaning": if realtime {
                "grace after the wall-clock window of each coarse step"
            } else {
                "bound of each coarse step"
            },
        },
        "divergence_criterion": {
            "displacement": lab.safety.divergence.displacement,
            "force": lab.safety.divergence.force,
            "growth": lab.safety.divergence.growth,
            "window": lab.safety.divergence.window,
            "windows": lab.safety.divergence.windows,
            "floor": lab.safety.divergence.floor,
        },
        "files": { "results": model.output.format.results_file_name(), "lab": "lab.csv", "model": "model.toml", "synchronization_plot": "synchronization.png" },
    })
}

/// The heartbeat of run.json: the wall-clock time (unix seconds and UTC ISO-8601) and what is
/// on disk (flushed).
fn heartbeat_fields(doc: &mut Value, journal: &Journal, dt: f64) {
    let now = hybridsim_io::unix_now();
    let rows = journal.rows_on_disk.load(Ordering::SeqCst);
    let t = f64::from_bits(journal.last_time_on_disk.load(Ordering::SeqCst));
    doc["heartbeat"] = json!(hybridsim_io::utc_timestamp(now));
    doc["heartbeat_unix"] = json!(now);
    doc["rows_on_disk"] = json!(rows);
    doc["lab_rows_on_disk"] = json!(journal.lab_rows_on_disk.load(Ordering::SeqCst));
    doc["last_step_on_disk"] = if rows > 0 && t.is_finite() && dt > 0.0 {
        json!((t / dt).round() as u64)
    } else {
        Value::Null
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_faults_parse_with_the_field_named_on_error() {
        let f: TaskFault = "physical:stall=2.5:30".parse().unwrap();
        assert_eq!(f.task, Task::Physical);
        assert_eq!(f.kind, TaskFaultKind::Stall(Duration::from_millis(2500)));
        assert_eq!(f.at, 30);
        let f: TaskFault = "writer:panic:0".parse().unwrap();
        assert_eq!(
            (f.task, f.kind, f.at),
            (Task::Writer, TaskFaultKind::Panic, 0)
        );
        for bad in [
            "physical:panic",
            "link:panic:3",
            "physical:explode:3",
            "physical:stall=-1:3",
            "physical:stall=nan:3",
            "numerical:panic:x",
        ] {
            let e = bad.parse::<TaskFault>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
