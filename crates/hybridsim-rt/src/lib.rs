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
//!   updates every partition, checks divergence of Λ and the deadline overruns, trips the labs
//!   on any fault, and pushes the results row and the controller-rate lab records into
//!   preallocated lock-free rings ([`rtrb`]);
//! - an **estimation slot** receives a snapshot (interface displacements and measured
//!   specimen forces) per step and feeds a [`hybridsim::updating::Estimator`] (the secant
//!   stiffness is reported, not applied; updates at a fixed step latency are the next wave);
//! - a **writer** thread turns the rings into `results.csv` and `lab.csv`.
//!
//! Everything is sized before the loop; inside it nothing allocates, locks, prints or touches a
//! file. A full ring is a safety event (hybrid-test data loss is unacceptable). Pacing
//! `realtime` sleeps to absolute deadlines (`clock_nanosleep`, `TIMER_ABSTIME`), pins threads
//! and asks for SCHED_FIFO when permitted (and reports when not); pacing `fast` runs the same
//! code as fast as possible. The threaded run is bit-identical to [`hybridsim::Simulation`]
//! stepping the same model (same arithmetic on the same data, in the same order).

#![warn(missing_docs)]

pub mod clock;
pub mod stats;

use clock::{now_ns, sleep_until, Backoff, ThreadSetup};
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{FreeTask, PgAlpha, TimeIntegrator};
use hybridsim::model::lab::Pacing;
use hybridsim::model::IntegratorKind;
use hybridsim::output::Recorder;
use hybridsim::physical::{SafetyEvent, SafetySummary};
use hybridsim::runner::{EndState, RunSink, StepExecutor};
use hybridsim::updating::{Estimator, Observation, SecantStiffness};
use hybridsim::{Model, StepError};
use hybridsim_io::lab::{CsvSink, LabLog, TrackingIndicators};
use rtrb::RingBuffer;
use serde_json::{json, Value};
use stats::TaskStats;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Most physical partitions the runner drives.
pub const MAX_PHYSICAL: usize = 7;
/// Most memory the runner preallocates for its results and lab rings (bytes); one constant
/// shared with the configuration, which refuses a larger `[runner] results_ring` at `check`.
pub use hybridsim::model::lab::MAX_RING_BYTES;
/// Interface multipliers carried to the estimation slot.
pub const MAX_SNAPSHOT: usize = 8;

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
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            pacing: None,
            folder: None,
            model_text: None,
            model_sha256: None,
            abort: Arc::new(AtomicBool::new(false)),
            keep_rows: false,
            results_ring: None,
            writer_delay: None,
            loop_marker: None,
            max_steps: None,
            overflow_wait: None,
            require_realtime: false,
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
                "thread {}: cpu {:?} pinned {} SCHED_FIFO {} {}\n",
                st.task, st.cpu, st.pinned, st.fifo, st.note
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

/// What the writer thread returns: rows, lab rows, kept rows and the lab logs.
type WriterResult = Result<(u64, u64, Vec<Vec<f64>>, Vec<LabLog>), String>;

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
/// formatted: nothing allocates on a trip) and its run of consecutive deadline misses.
struct Done {
    tasks: Tasks,
    error: Option<StepError>,
    miss_run: u64,
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
/// and nothing is left, so that no thread ever waits for a dead one.
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

/// The step error of a worker thread that died (panicked) during a step.
fn dead_worker(task: &'static str) -> StepError {
    StepError::Physical {
        substructure: task.into(),
        reason: "its worker thread panicked; the test was stopped".into(),
    }
}

/// The step executor of the threaded runner: the PG-α phases of a coarse step on the
/// numerical and physical workers, then the interface solve and link update on the calling
/// (link) thread.
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
}

impl StepExecutor for Threaded<'_> {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.pg
    }

    fn step(&mut self) -> Result<(), StepError> {
        let n = self.pg.steps_taken();
        // Move every partition into its task box and the boxes to the workers.
        let mut ns_job = Job::step(n);
        let mut ps_job = Job::step(n);
        let (mut n_ns, mut n_ps) = (0, 0);
        for (k, slot) in self.boxes.iter_mut().enumerate() {
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
        let _ = self.ns_jobs.push(ns_job);
        let _ = self.ps_jobs.push(ps_job);
        // Both reports, even when one worker died: the other one's partitions (the lab among
        // them, when the numerical worker died) come back and can still be tripped.
        let mut ns_done = wait_pop(&mut self.ns_done);
        let mut ps_done = wait_pop(&mut self.ps_done);
        // Take the partitions back before anything else looks at the integrator.
        for done in [ns_done.as_mut(), ps_done.as_mut()].into_iter().flatten() {
            for task in done.tasks.iter_mut() {
                if let Some(mut task) = task.take() {
                    self.pg.attach(&mut task);
                    let k = task.index();
                    self.boxes[k] = Some(task);
                }
            }
        }
        let (Some(ns_done), Some(ps_done)) = (ns_done, ps_done) else {
            return Err(dead_worker(if self.ps_done.is_abandoned() {
                "physical task"
            } else {
                "numerical task"
            }));
        };
        self.miss_run = ps_done.miss_run.max(ns_done.miss_run);
        if let Some(error) = ps_done.error.or(ns_done.error) {
            return Err(error);
        }
        let t0 = now_ns();
        self.pg.interface_solve();
        let linked = self.pg.link_update();
        self.link_stats.record(now_ns() - t0, None, false);
        linked
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
        if self.estimation.push(Some(snap)).is_err() {
            self.snapshots_dropped += 1;
        }
    }
}

/// Pushes a row; when the ring is full, waits up to `wait_ns`.
fn push_row(tx: &mut rtrb::Producer<f64>, row: &[f64], wait_ns: u64) -> bool {
    if tx.push_entire_slice(row).is_ok() {
        return true;
    }
    if wait_ns == 0 {
        return false;
    }
    let until = now_ns().saturating_add(wait_ns);
    let mut b = Backoff::default();
    while tx.push_entire_slice(row).is_err() {
        if now_ns() > until {
            return false;
        }
        b.snooze();
    }
    true
}

/// The sink of the threaded runner: lock-free rings to the writer thread. A row that finds
/// the ring full is kept and written after the stop, so the last completed step still
/// reaches the disk.
struct RingSink {
    results: rtrb::Producer<f64>,
    labs: Vec<rtrb::Producer<f64>>,
    physical: Vec<usize>,
    wait_ns: u64,
    pending: Vec<f64>,
    has_pending: bool,
}

impl RunSink for RingSink {
    fn row(&mut self, row: &[f64]) -> bool {
        if push_row(&mut self.results, row, self.wait_ns) {
            return true;
        }
        self.pending.copy_from_slice(row);
        self.has_pending = true;
        false
    }

    fn lab_record(&mut self, partition: usize, record: &[f64]) -> bool {
        match self.physical.iter().position(|p| *p == partition) {
            Some(i) => push_row(&mut self.labs[i], record, self.wait_ns),
            None => true,
        }
    }

    fn stopped(&mut self) {
        self.wait_ns = u64::MAX;
        if self.has_pending {
            push_row(&mut self.results, &self.pending, u64::MAX);
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

/// Run `model` (PG-α with a `[lab]`) on the threaded runner.
pub fn run(model: &Model, opts: &RunOptions) -> Result<RunOutcome, StartError> {
    if model.analysis.integrator != IntegratorKind::PgAlpha {
        return Err(StartError::Model(format!(
            "{}: analysis.integrator: the real-time runner needs `pg-alpha`, found `{}`",
            model.source,
            model.analysis.integrator.name()
        )));
    }
    let parts = build_partitions(model, Grouping::Partitioned)
        .map_err(|e| StartError::Model(e.to_string()))?;
    let pg = PgAlpha::new(
        parts,
        &hybridsim::integrators::StepSettings::from_analysis(&model.analysis),
    )
    .map_err(|e| StartError::Model(format!("{}: analysis: {e}", model.source)))?;
    run_integrator(model, pg, opts)
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
    let columns: Vec<String> = recorder.columns().iter().map(|c| c.header()).collect();
    let ncol = columns.len();
    let ss = pg.subcycles() as u64;
    let n_steps = opts.max_steps.unwrap_or(a.n_steps()).min(a.n_steps());
    let every = model.output.every;
    let ring_rows = opts.results_ring.unwrap_or(lab.runner.results_ring);

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
    let lab_ring_rows = |ring_rows: u128| {
        (64 * ss as u128)
            .max(ring_rows * ss as u128 / every.max(1) as u128)
            .max(1024)
    };
    let ring_bytes = 8
        * (ring_rows as u128 * ncol as u128
            + lab_cols
                .iter()
                .map(|c| c.len().max(1) as u128 * lab_ring_rows(ring_rows as u128))
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
    let (res_tx, mut res_rx) = RingBuffer::<f64>::new(ring_rows * ncol);
    let mut lab_tx = Vec::new();
    let mut lab_rx = Vec::new();
    for cols in &lab_cols {
        let width = cols.len().max(1);
        let lab_rows = lab_ring_rows(ring_rows as u128) as usize;
        let (tx, rx) = RingBuffer::<f64>::new(width * lab_rows);
        lab_tx.push(tx);
        lab_rx.push((rx, width));
    }
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
    }
    let results_sink = match &opts.folder {
        Some(f) => {
            let p = f.join("results.csv");
            Some(CsvSink::create(&p, &columns.join(",")).map_err(io(&p))?)
        }
        None => None,
    };
    let mut lab_sinks = Vec::new();
    for (i, &k) in physical.iter().enumerate() {
        let sink = match &opts.folder {
            Some(f) => {
                let name = if i == 0 {
                    "lab.csv".to_string()
                } else {
                    format!("lab.{}.csv", pg.partitions()[k].state.name)
                };
                let p = f.join(name);
                Some(CsvSink::create(&p, &lab_cols[i].join(",")).map_err(io(&p))?)
            }
            None => None,
        };
        lab_sinks.push(sink);
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
    let coord_setup =
        clock::setup_current_thread("link", cpu_for(0), lab.runner.priority, realtime);
    if realtime && (any_hardware || opts.require_realtime) && !coord_setup.fifo {
        if memory_locked {
            clock::unlock_memory();
        }
        return Err(StartError::Model(format!(
            "realtime pacing with {} refuses to start without real-time scheduling: {}",
            if any_hardware {
                "a non-virtual transfer system"
            } else {
                "--require-realtime"
            },
            coord_setup.note
        )));
    }
    let start_ns = now_ns() + 2_000_000;
    let dtc_ns = (ts.dt_c * 1e9).round() as u64;
    let marker = opts.loop_marker;
    let priority = lab.runner.priority;

    // Workers.
    let ns_cpu = cpu_for(1);
    let ns = std::thread::Builder::new()
        .name("hs-ns".into())
        .spawn(move || {
            let setup = clock::setup_current_thread("numerical", ns_cpu, priority, realtime);
            let mut st = TaskStats::new("numerical");
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
                for task in job.tasks.iter_mut().flatten() {
                    if let Err(e) = task.numerical_step() {
                        error.get_or_insert(e);
                    }
                }
                let t1 = now_ns();
                let missed = realtime && t1 > start_ns + (job.step + 1) * ss * dtc_ns;
                let run = st.record(t1 - t0, None, missed);
                let _ = ns_done_tx.push(Done {
                    tasks: job.tasks,
                    error,
                    miss_run: run,
                });
            }
            if let Some(m) = marker {
                m(false);
            }
            (st, setup)
        })
        .expect("spawn");
    let ps_cpu = cpu_for(0).map(|c| if cpus.len() > 1 { cpus[0] } else { c });
    let ps = std::thread::Builder::new()
        .name("hs-ps".into())
        .spawn(move || {
            let setup = clock::setup_current_thread("physical", ps_cpu, priority, realtime);
            let mut st = TaskStats::new("physical");
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
                let mut error = None;
                let mut run = 0;
                for j in 1..=ss {
                    let i = job.step * ss + (j - 1);
                    let deadline = start_ns + i * dtc_ns;
                    let late = if realtime {
                        sleep_until(deadline);
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
                    let t1 = now_ns();
                    let missed = realtime && t1 > deadline + dtc_ns;
                    run = run.max(st.record(t1 - t0, late, missed));
                    if error.is_some() {
                        break;
                    }
                }
                let _ = ps_done_tx.push(Done {
                    tasks: job.tasks,
                    error,
                    miss_run: run,
                });
            }
            if let Some(m) = marker {
                m(false);
            }
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
                }),
            )
        })
        .expect("spawn");
    let keep = opts.keep_rows;
    let delay = opts.writer_delay;
    let lab_width: Vec<usize> = lab_rx.iter().map(|(_, w)| *w).collect();
    let lab_cols_w = lab_cols.clone();
    let writer = std::thread::Builder::new()
        .name("hs-writer".into())
        .spawn(move || -> WriterResult {
            let mut results_sink = results_sink;
            let mut lab_sinks = lab_sinks;
            let mut row = vec![0.0; ncol];
            let mut lab_row: Vec<Vec<f64>> = lab_width.iter().map(|w| vec![0.0; *w]).collect();
            let mut logs: Vec<LabLog> = lab_cols_w.into_iter().map(LabLog::new).collect();
            let mut kept = Vec::new();
            let (mut nrows, mut nlab) = (0u64, 0u64);
            let mut last_flush = std::time::Instant::now();
            loop {
                let mut progressed = false;
                while res_rx.slots() >= ncol {
                    res_rx
                        .pop_entire_slice(&mut row)
                        .map_err(|e| e.to_string())?;
                    if let Some(d) = delay {
                        std::thread::sleep(d);
                    }
                    if let Some(s) = &mut results_sink {
                        s.write_row(&row).map_err(|e| format!("results.csv: {e}"))?;
                    }
                    if keep {
                        kept.push(row.clone());
                    }
                    nrows += 1;
                    progressed = true;
                }
                for (i, (rx, w)) in lab_rx.iter_mut().enumerate() {
                    while rx.slots() >= *w {
                        rx.pop_entire_slice(&mut lab_row[i])
                            .map_err(|e| e.to_string())?;
                        if let Some(s) = &mut lab_sinks[i] {
                            s.write_row(&lab_row[i])
                                .map_err(|e| format!("lab.csv: {e}"))?;
                        }
                        logs[i].push(&lab_row[i]);
                        nlab += 1;
                        progressed = true;
                    }
                }
                if last_flush.elapsed() > Duration::from_millis(200) {
                    if let Some(s) = &mut results_sink {
                        s.flush().map_err(|e| format!("results.csv: {e}"))?;
                    }
                    for s in lab_sinks.iter_mut().flatten() {
                        s.flush().map_err(|e| format!("lab.csv: {e}"))?;
                    }
                    last_flush = std::time::Instant::now();
                }
                if !progressed {
                    let done = res_rx.is_abandoned()
                        && res_rx.slots() < ncol
                        && lab_rx
                            .iter()
                            .all(|(rx, w)| rx.is_abandoned() && rx.slots() < *w);
                    if done {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            if let Some(s) = results_sink {
                s.finish().map_err(|e| format!("results.csv: {e}"))?;
            }
            for s in lab_sinks.into_iter().flatten() {
                s.finish().map_err(|e| format!("lab.csv: {e}"))?;
            }
            Ok((nrows, nlab, kept, logs))
        })
        .expect("spawn");

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
        link_stats: TaskStats::new("link"),
        realtime,
        miss_run: 0,
    };
    let mut sink = RingSink {
        results: res_tx,
        labs: lab_tx,
        physical: physical.clone(),
        wait_ns,
        pending: vec![0.0; ncol],
        has_pending: false,
    };
    let settings = hybridsim::runner::RunSettings {
        n_steps,
        every,
        divergence: Some(lab.safety.divergence),
        max_overruns: realtime.then_some(lab.safety.max_overruns),
    };
    let mut row = vec![0.0; ncol];
    if let Some(m) = marker {
        m(true);
    }
    let wall0 = now_ns();
    let end = hybridsim::runner::run(
        &mut exec,
        &mut recorder,
        &mut sink,
        &settings,
        &opts.abort,
        &mut row,
    );
    let wall = (now_ns() - wall0) as f64 * 1e-9;
    if let Some(m) = marker {
        m(false);
    }
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
        link_stats,
        ..
    } = exec;

    // Stop the workers.
    let _ = ns_jobs_tx.push(Job::stop());
    let _ = ps_jobs_tx.push(Job::stop());
    let mut b = Backoff::default();
    while est_tx.push(None).is_err() && !est_tx.is_abandoned() {
        b.snooze();
    }
    // A thread that panicked is reported, never unwrapped: the run still ends with its files
    // and run.json.
    let mut panicked: Vec<&'static str> = Vec::new();
    let died = |task: &'static str| ThreadSetup {
        task: task.into(),
        cpu: None,
        pinned: false,
        fifo: false,
        note: "the thread panicked".into(),
    };
    let (ns_stats, ns_setup) = ns.join().unwrap_or_else(|_| {
        panicked.push("numerical");
        (TaskStats::new("numerical"), died("numerical"))
    });
    let (ps_stats, ps_setup) = ps.join().unwrap_or_else(|_| {
        panicked.push("physical");
        (TaskStats::new("physical"), died("physical"))
    });
    let (est_stats, mut estimation) = est.join().unwrap_or_else(|_| {
        panicked.push("estimation");
        (
            TaskStats::new("estimation"),
            json!({"error": "the estimation thread panicked"}),
        )
    });
    estimation["snapshots_dropped"] = json!(est_dropped);
    drop(sink);
    let written = writer
        .join()
        .unwrap_or_else(|_| Err("the writer thread panicked".to_string()));
    if !panicked.is_empty() {
        if let RunStatus::Completed = status {
            status = RunStatus::Failed(format!("the {} thread panicked", panicked.join(", ")));
        }
    }
    if memory_locked {
        clock::unlock_memory();
    }
    let (rows_written, lab_rows, rows, logs, writer_error) = match written {
        Ok((a, b, c, d)) => (a, b, c, d, None),
        Err(e) => (0, 0, Vec::new(), Vec::new(), Some(e)),
    };
    if let (Some(e), RunStatus::Completed) = (&writer_error, &status) {
        status = RunStatus::Failed(e.clone());
    }
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
    let tasks = vec![ps_stats, ns_stats, link_stats, est_stats];
    let setup = vec![coord_setup, ps_setup, ns_setup];
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
    let (status_name, event_json, error) = match &status {
        RunStatus::Completed => ("completed", Value::Null, writer_error.clone()),
        RunStatus::Stopped(ev) => (
            "stopped",
            json!({
                "kind": ev.kind.name(),
                "tick": ev.tick,
                "time": ev.time,
                "actuator": ev.actuator,
                "value": if ev.value.is_finite() { json!(ev.value) } else { json!(format!("{}", ev.value)) },
                "limit": if ev.limit.is_finite() { json!(ev.limit) } else { Value::Null },
                "message": ev.to_string(),
            }),
            None,
        ),
        RunStatus::Failed(e) => ("failed", Value::Null, Some(e.clone())),
    };
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
    let run_json = json!({
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
        "status": status_name,
        "safety_event": event_json,
        "error": error,
        "steps_completed": steps,
        "time_reached": pg.time(),
        "rows_written": rows_written,
        "lab_rows_written": lab_rows,
        "safety": safety.iter().map(|s| json!({
            "armed": s.armed,
            "actuators": s.actuators,
            "max_command_sent": s.max_sent,
            "displacement_limits": s.limits.iter().map(|l| l.displacement).collect::<Vec<_>>(),
            "commands_sent": s.commands_sent,
            "lab_records_dropped": s.lab_records_dropped,
        })).collect::<Vec<_>>(),
        "divergence_criterion": {
            "displacement": lab.safety.divergence.displacement,
            "force": lab.safety.divergence.force,
            "growth": lab.safety.divergence.growth,
            "window": lab.safety.divergence.window,
            "windows": lab.safety.divergence.windows,
            "floor": lab.safety.divergence.floor,
        },
        "tasks": tasks.iter().map(|t| t.to_json()).collect::<Vec<_>>(),
        "scheduling": {
            "memory_locked": memory_locked,
            "threads": setup.iter().map(|s| json!({"task": s.task, "cpu": s.cpu, "pinned": s.pinned, "sched_fifo": s.fifo, "note": s.note})).collect::<Vec<_>>(),
        },
        "indicators": indicators.iter().map(|i| i.to_json()).collect::<Vec<_>>(),
        "estimation": estimation,
        "wall_seconds": wall,
        "files": { "results": "results.csv", "lab": "lab.csv", "model": "model.toml", "synchronization_plot": "synchronization.png" },
    });
    if let Some(f) = &opts.folder {
        let p = f.join("run.json");
        hybridsim_io::write_json_atomic(&p, &run_json).map_err(io(&p))?;
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
        wall,
        run_json,
    })
}
