//! The paced single-step runner: any integrator that drives a laboratory, one step at a time
//! on one real-time thread.
//!
//! PG-α splits a coarse step into phases that run on separate threads (the rest of this
//! crate). Every other lab-driving scheme that [`hybridsim::integrators::build_with`] returns
//! (the explicit RTHS loop, and those to come) is a `Box<dyn TimeIntegrator>` whose
//! [`TimeIntegrator::step`] commands the laboratory itself. This runner gives such a scheme
//! the same guarantees as the threaded one:
//!
//! - the **step thread** (pinned to the first of `[runner] cpus`, SCHED_FIFO when permitted,
//!   with the same refusal of realtime pacing without it) runs the core's one run loop and
//!   trip policy ([`hybridsim::runner::run`]). With pacing `realtime` coarse step `n` is
//!   released at `start + n·ss·Δt^C` on the monotonic clock (with ss = 1, as in the explicit
//!   loop, every command goes out on its own controller tick); a step that ends after the
//!   release of the next one is a deadline miss, and `[safety] max_overruns` consecutive
//!   misses stop the test. Pacing `fast` runs the same calls back to back, bit-identical to
//!   `hybridsim run` ([`hybridsim::runner::Sequential`]);
//! - a **panic** in a step is caught on the step thread ([`Fault::TaskPanic`], task `step`):
//!   the laboratories trip and hold or ramp down;
//! - the **supervisor** (the calling thread) watches every step: when one has not returned by
//!   the end of its wall-clock window plus the watchdog grace (pacing `fast`: the grace
//!   alone), it asks the step thread to stop ([`Fault::Stalled`], task `step`): a step that
//!   returns within a second grace ends in the normal trip path (hold or paced ramp-down);
//!   one that never returns is left behind (never joined), the writer finishes what it has,
//!   and run.json says that hybridsim could not hold the laboratory;
//! - a laboratory on the network gets every command on its own controller tick, also with
//!   ss commands per coarse step and in the bumpless start inside the build
//!   ([`crate::paced_transfer`]); the virtual lab, whose clock is the tick count, is released
//!   a coarse step at a time;
//! - results and controller-rate lab records travel through the preallocated lock-free rings
//!   to the writer thread, which keeps run.json's heartbeat (status, counts on disk), exactly
//!   as in the threaded runner; the abort flag (Ctrl-C, SIGTERM) takes the safety path.
//!
//! Nothing in the step thread's loop allocates, locks, prints or touches a file.

use crate::clock::{self, now_ns, sleep_until_with, ThreadSetup, TickPacer};
use crate::paced_transfer::{PaceClock, PacingConnector};
use crate::stats::TaskStats;
use crate::{
    base_json, heartbeat_fields, io, join_within, lock_within, no_realtime_scheduling, panic_text,
    spawn_writer, supervisor_error, DiskFile, Joined, Journal, RingSink, RunOptions, RunOutcome,
    RunStatus, StartError, Task, TaskFault, WriterEnd, WriterSetup, FAST_WATCHDOG,
    JOURNAL_INTERVAL, MIN_REALTIME_GRACE,
};
use hybridsim::integrators::TimeIntegrator;
use hybridsim::model::lab::{Pacing, TransferKind};
use hybridsim::output::Recorder;
use hybridsim::physical::transfer::TransferConnector;
use hybridsim::physical::SafetySummary;
use hybridsim::runner::{EndState, Fault, RunEnd, StepExecutor};
use hybridsim::{Model, StepError};
use serde_json::{json, Value};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The name of the step task in run.json, the statistics and the faults.
pub const STEP_TASK: &str = "step";

/// Build the integrator of `model` with [`hybridsim::integrators::build_with`] and run it on
/// the paced single-step runner ([`run_sequential`]). A realtime-paced start that would be
/// refused for lack of real-time scheduling is refused before the integrator's start
/// commands anything; a scheme that cannot drive the model's `[lab]` is refused by
/// `build_with`, naming the scheme.
pub fn run(model: &Model, opts: &RunOptions) -> Result<RunOutcome, StartError> {
    let lab = model.lab.as_ref().ok_or_else(|| {
        StartError::Model(format!(
            "{}: the model has no [lab] table: `realtime` drives a laboratory (use `run` for \
             a numerical simulation)",
            model.source
        ))
    })?;
    if opts.pacing.unwrap_or(lab.runner.pacing) == Pacing::Realtime {
        crate::spin_refusal(model, lab)?;
        let probe = clock::setup_current_thread(
            "supervisor",
            lab.runner.cpus.first().copied(),
            lab.runner.priority,
            true,
        );
        let hardware = lab.lab.transfer != TransferKind::Virtual;
        if !probe.fifo && (hardware || opts.require_realtime || !opts.allow_soft_realtime) {
            return Err(no_realtime_scheduling(hardware, opts, &probe.note));
        }
    }
    // Network laboratories: every command on its controller tick, the bumpless start
    // inside the build included (crate::paced_transfer).
    let pace = (opts.pacing.unwrap_or(lab.runner.pacing) == Pacing::Realtime).then(|| {
        let dtc_ns = ((lab.lab.time_scale.dt_c * 1e9).round() as u64).max(1);
        Arc::new(PaceClock::new(dtc_ns, lab.runner.spin_budget_ns()))
    });
    let connector: Option<Arc<dyn TransferConnector>> = match (&opts.connector, &pace) {
        (Some(c), Some(clock)) => Some(Arc::new(PacingConnector::new(c.clone(), clock.clone()))),
        (c, _) => c.clone(),
    };
    let integ = hybridsim::integrators::build_with(model, connector.as_deref())
        .map_err(|e| StartError::Model(e.to_string()))?;
    run_paced(model, integ, opts, pace)
}

/// What the supervisor and the step thread share (atomics only).
#[derive(Default)]
struct Watch {
    /// `1 + n` while coarse step `n` is under way, 0 between steps.
    in_step: AtomicU64,
    /// When the step under way started (monotonic ns).
    step_started: AtomicU64,
    /// Completed steps.
    steps: AtomicU64,
    /// Steps and ramp-down ticks (liveness after the stop).
    progress: AtomicU64,
    /// Set by the supervisor: the step under way outlived its watchdog deadline.
    trip_request: AtomicBool,
    /// How long the supervisor had waited for it (s, f64 bits).
    waited: AtomicU64,
    /// The step thread saw the trip request after the step returned.
    acknowledged: AtomicBool,
}

/// The executor of the paced single-step runner (see the module documentation).
struct Paced {
    integ: Box<dyn TimeIntegrator>,
    realtime: bool,
    start_ns: u64,
    /// Wall-clock window of a coarse step, ss·Δt^C (ns).
    window_ns: u64,
    ticks_per_step: u64,
    spin_ns: u64,
    stats: TaskStats,
    miss_run: u64,
    pacer: TickPacer,
    watch: Arc<Watch>,
    inject: Option<TaskFault>,
    fault: Option<Fault>,
    panic: Option<Box<dyn Any + Send>>,
}

impl StepExecutor for Paced {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.integ.as_mut()
    }

    fn step(&mut self) -> Result<(), StepError> {
        let n = self.integ.steps_taken();
        let release = self.start_ns + n * self.window_ns;
        let late = if self.realtime {
            sleep_until_with(release, self.spin_ns);
            Some(now_ns().saturating_sub(release))
        } else {
            None
        };
        let t0 = now_ns();
        self.watch.step_started.store(t0, Ordering::SeqCst);
        self.watch.in_step.store(n + 1, Ordering::SeqCst);
        let inject = self.inject;
        let integ = &mut self.integ;
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            for task in [Task::Physical, Task::Numerical] {
                if let Some(kind) = TaskFault::hits(&inject, task, n) {
                    TaskFault::fire(kind, task);
                }
            }
            integ.step()
        }));
        self.watch.in_step.store(0, Ordering::SeqCst);
        let t1 = now_ns();
        let missed = self.realtime && t1 > release + self.window_ns;
        self.miss_run = self.stats.record(t1 - t0, late, missed);
        // The ramp-down after a stop continues the test's tick schedule from the tick after
        // this step's last command.
        self.pacer.resume_at((n + 1) * self.ticks_per_step);
        self.watch.progress.fetch_add(1, Ordering::Relaxed);
        if self.watch.trip_request.load(Ordering::SeqCst) {
            self.watch.acknowledged.store(true, Ordering::SeqCst);
            let waited = f64::from_bits(self.watch.waited.load(Ordering::SeqCst));
            self.fault = Some(Fault::Stalled {
                task: STEP_TASK,
                waited,
            });
            if let Err(payload) = caught {
                self.panic.get_or_insert(payload);
            }
            return Err(supervisor_error());
        }
        match caught {
            Ok(result) => result,
            Err(payload) => {
                self.panic = Some(payload);
                self.fault = Some(Fault::TaskPanic { task: STEP_TASK });
                Err(supervisor_error())
            }
        }
    }

    fn overruns(&self) -> u64 {
        if self.realtime {
            self.miss_run
        } else {
            0
        }
    }

    fn after_step(&mut self) {
        self.watch.steps.fetch_add(1, Ordering::SeqCst);
    }

    fn wait_tick(&mut self) {
        self.watch.progress.fetch_add(1, Ordering::Relaxed);
        if self.realtime {
            self.pacer.wait();
        }
    }

    fn take_fault(&mut self) -> Option<Fault> {
        self.fault.take()
    }
}

/// What the step thread hands back.
struct StepEnd {
    end: RunEnd,
    integ: Box<dyn TimeIntegrator>,
    stats: TaskStats,
    setup: ThreadSetup,
    panic: Option<String>,
    wall: f64,
    updating: Option<hybridsim::online_updating::OnlineUpdating>,
}

/// Run an integrator that drives the laboratories of `model` (built by
/// [`hybridsim::integrators::build_with`], or by a test with its own ports) on the paced
/// single-step runner: one step at a time on a real-time thread, under a supervisor (see the
/// module documentation). The integrator must have at least one laboratory.
pub fn run_sequential(
    model: &Model,
    integ: Box<dyn TimeIntegrator>,
    opts: &RunOptions,
) -> Result<RunOutcome, StartError> {
    run_paced(model, integ, opts, None)
}

/// [`run_sequential`], starting `pace` (the clock of the paced network transfer systems)
/// with the test clock.
fn run_paced(
    model: &Model,
    mut integ: Box<dyn TimeIntegrator>,
    opts: &RunOptions,
    pace: Option<Arc<PaceClock>>,
) -> Result<RunOutcome, StartError> {
    let lab = model.lab.as_ref().ok_or_else(|| {
        StartError::Model(format!("{}: the model has no [lab] table", model.source))
    })?;
    let mut physical: Vec<usize> = Vec::new();
    let mut any_hardware = false;
    integ.for_each_lab(&mut |k, lab| {
        physical.push(k);
        any_hardware |= !lab.is_virtual();
    });
    if physical.is_empty() {
        return Err(StartError::Model(format!(
            "{}: analysis.integrator: `{}` drives no laboratory: the real-time runner needs a \
             scheme that commands the [lab] (pg-alpha, explicit-rths)",
            model.source,
            integ.name()
        )));
    }
    if physical.len() > crate::MAX_PHYSICAL {
        return Err(StartError::Model(format!(
            "at most {} physical substructures are supported",
            crate::MAX_PHYSICAL
        )));
    }
    if let Some(f) = opts
        .inject
        .filter(|f| matches!(f.task, Task::Estimation | Task::Updating))
    {
        return Err(StartError::Model(format!(
            "--inject-fault: the {} runner has no {} task (its tasks are the step, i.e. \
             `physical` or `numerical`, and the writer)",
            integ.name(),
            f.task.name()
        )));
    }
    let ts = lab.lab.time_scale;
    let pacing = opts.pacing.unwrap_or(lab.runner.pacing);
    let realtime = pacing == Pacing::Realtime;
    let a = &model.analysis;
    let mut recorder = Recorder::new(model, integ.as_ref());
    let columns: Vec<String> = recorder.headers(integ.as_ref());
    let ncol = columns.len();
    let ss = a.subcycles.max(1) as u64;
    let n_steps = opts.max_steps.unwrap_or(a.n_steps()).min(a.n_steps());
    let every = model.output.every;
    let ring_rows = opts
        .results_ring
        .unwrap_or_else(|| lab.runner.results_ring_rows(ncol));
    // Online model updating ([updating], issue 14): on the step thread after every step,
    // estimates applied one step later, as in `hybridsim run`.
    if model
        .updating
        .as_ref()
        .is_some_and(|u| u.refactorize != hybridsim::model::updating::Refactorize::Never)
    {
        return Err(StartError::Model(format!(
            "{}: updating.refactorize = \"on_update\" needs the threaded pg-alpha runner (the \
             single-step runner has no updating task to build the new matrices off its \
             real-time thread)",
            model.source
        )));
    }
    let mut updating =
        hybridsim::online_updating::OnlineUpdating::new(model, integ.as_mut(), n_steps)
            .map_err(|e| StartError::Model(e.to_string()))?;

    // Rings, sized (in u128) before anything is allocated, as in the threaded runner.
    let mut lab_cols: Vec<Vec<String>> = Vec::new();
    integ.for_each_lab(&mut |_, lab| lab_cols.push(lab.lab_columns()));
    let (res_tx, res_rx, lab_tx, lab_rx) =
        crate::record_rings(model, &lab_cols, ncol, ss, every, ring_rows)?;

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
                format!("lab.{}.csv", integ.partitions()[k].state.name)
            })
        });
        lab_files.push(DiskFile::create(path, &lab_cols[i].join(","))?);
    }

    // The step thread: set up first, then told whether to go (a realtime start without
    // real-time scheduling is refused before any step).
    let memory_locked = if realtime {
        clock::lock_memory()
    } else {
        false
    };
    let unlock = |locked: bool| {
        if locked {
            clock::unlock_memory();
        }
    };
    let dtc_ns = ((ts.dt_c * 1e9).round() as u64).max(1);
    let spin_ns = lab.runner.spin_budget_ns();
    let grace = opts.watchdog.unwrap_or(if realtime {
        Duration::from_nanos(10 * ss * dtc_ns).max(MIN_REALTIME_GRACE)
    } else {
        FAST_WATCHDOG
    });
    let return_grace = grace.clamp(Duration::from_millis(50), Duration::from_secs(2));
    let end_bound = grace.max(Duration::from_secs(1));
    let journal = Arc::new(Journal::default());
    let watch = Arc::new(Watch::default());
    let mut base = base_json(model, lab, integ.as_ref(), opts, realtime, grace);
    base["startup"] = crate::startup_json(integ.as_ref());
    base["runner"] = json!("hybridsim-rt (paced single-step)");
    base["integrator"] = json!(integ.name());
    base["spin_budget_us"] = json!(spin_ns as f64 / 1e3);
    let wait_ns = opts
        .overflow_wait
        .unwrap_or(if realtime {
            Duration::ZERO
        } else {
            Duration::from_secs(2)
        })
        .as_nanos() as u64;
    let sink = RingSink {
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
    // The live console's tap (`--console`), started off the loop like the threaded runner's.
    let mut tap = hybridsim::runner::take_tap(&opts.tap);
    if let Some(tap) = tap.as_mut() {
        let labs: Vec<(usize, String, Vec<String>)> = physical
            .iter()
            .zip(&lab_cols)
            .map(|(&k, c)| (k, integ.partitions()[k].state.name.clone(), c.clone()))
            .collect();
        tap.start(&columns, &labs);
    }
    let cpu = lab.runner.cpus.first().copied();
    let priority = lab.runner.priority;
    let marker = opts.loop_marker;
    let inject = opts.inject;
    let abort = opts.abort.clone();
    let (setup_tx, setup_rx) = std::sync::mpsc::channel::<ThreadSetup>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<Option<u64>>();
    let step_watch = watch.clone();
    let step = std::thread::Builder::new()
        .name("hs-step".into())
        .spawn(move || -> Option<StepEnd> {
            let setup = clock::setup_current_thread(STEP_TASK, cpu, priority, realtime);
            let _ = setup_tx.send(setup.clone());
            let start_ns = go_rx.recv().ok().flatten()?;
            let mut sink = sink;
            let mut row = vec![0.0; ncol];
            let mut exec = Paced {
                integ,
                realtime,
                start_ns,
                window_ns: ss * dtc_ns,
                ticks_per_step: ss,
                spin_ns,
                stats: TaskStats::new(STEP_TASK),
                miss_run: 0,
                pacer: TickPacer::new(start_ns, dtc_ns).with_spin(spin_ns),
                watch: step_watch,
                inject,
                fault: None,
                panic: None,
            };
            let usage = TaskStats::usage_start();
            if let Some(m) = marker {
                m(true);
            }
            let wall0 = now_ns();
            let mut tap = tap;
            let mut tapped;
            let sink_ref: &mut dyn hybridsim::runner::RunSink = match tap.as_deref_mut() {
                Some(tap) => {
                    tapped = hybridsim::runner::Tapped {
                        sink: &mut sink,
                        tap,
                    };
                    &mut tapped
                }
                None => &mut sink,
            };
            let mut with_updating;
            let exec_ref: &mut dyn hybridsim::runner::StepExecutor = match updating.as_mut() {
                Some(updating) => {
                    with_updating = hybridsim::online_updating::WithUpdating {
                        inner: &mut exec,
                        updating,
                    };
                    &mut with_updating
                }
                None => &mut exec,
            };
            // A panic in the loop outside the step (the recorder, the sink, a tap) must not
            // leave a laboratory driven: it trips (`task_panic`) and ramps down or holds, as
            // after any fault (a panic inside the step is caught by `Paced::step`).
            let (end, loop_panic) = hybridsim::runner::run_guarded(
                &mut *exec_ref,
                &mut recorder,
                &mut *sink_ref,
                &settings,
                &abort,
                &mut row,
                STEP_TASK,
            );
            if let Some(text) = loop_panic {
                exec.panic.get_or_insert(Box::new(text));
            }
            let wall = (now_ns() - wall0) as f64 * 1e-9;
            if let Some(m) = marker {
                m(false);
            }
            exec.stats.usage_end(usage);
            // Give up the rings: the writer finishes what is in them.
            drop(sink);
            Some(StepEnd {
                end,
                integ: exec.integ,
                stats: exec.stats,
                setup,
                panic: exec.panic.map(|p| panic_text(p.as_ref())),
                wall,
                updating,
            })
        })
        .map_err(|e| StartError::Model(format!("cannot start the step thread: {e}")))?;
    let step_setup = setup_rx.recv().unwrap_or_default();
    let soft_realtime = realtime && !step_setup.fifo;
    if soft_realtime && (any_hardware || opts.require_realtime || !opts.allow_soft_realtime) {
        let _ = go_tx.send(None);
        let _ = step.join();
        unlock(memory_locked);
        return Err(no_realtime_scheduling(any_hardware, opts, &step_setup.note));
    }
    base["soft_realtime"] = json!(soft_realtime);
    match crate::pacing_check(model, lab, realtime) {
        Ok((doc, warning)) => {
            base["pacing_check"] = doc;
            base["pacing_warning"] = json!(warning);
        }
        Err(e) => {
            let _ = go_tx.send(None);
            let _ = step.join();
            unlock(memory_locked);
            return Err(e);
        }
    }
    if let Some(f) = &opts.folder {
        let p = f.join("run.json");
        let mut doc = base.clone();
        doc["status"] = json!("running");
        heartbeat_fields(&mut doc, &journal, model.analysis.time_step);
        if let Err(e) = hybridsim_io::write_json_atomic(&p, &doc) {
            let _ = go_tx.send(None);
            let _ = step.join();
            unlock(memory_locked);
            return Err(io(&p)(e));
        }
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
    let start_ns = now_ns() + crate::START_MARGIN.as_nanos() as u64;
    if let Some(clock) = &pace {
        clock.start(start_ns);
    }
    let _ = go_tx.send(Some(start_ns));

    // Supervise: every step has a watchdog deadline.
    let window_ns = ss * dtc_ns;
    let grace_ns = grace.as_nanos() as u64;
    let mut stalled: Option<f64> = None;
    while !step.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
        let n1 = watch.in_step.load(Ordering::SeqCst);
        if n1 == 0 || watch.trip_request.load(Ordering::SeqCst) {
            continue;
        }
        let started = watch.step_started.load(Ordering::SeqCst);
        if watch.in_step.load(Ordering::SeqCst) != n1 {
            continue;
        }
        let deadline = if realtime {
            (start_ns + n1 * window_ns).max(started + window_ns) + grace_ns
        } else {
            started + grace_ns
        };
        let now = now_ns();
        if now > deadline {
            let waited = (now - started) as f64 * 1e-9;
            watch.waited.store(waited.to_bits(), Ordering::SeqCst);
            watch.trip_request.store(true, Ordering::SeqCst);
            // A second grace for the step to return and the laboratories to be tripped.
            let until = now_ns() + return_grace.as_nanos() as u64;
            while !watch.acknowledged.load(Ordering::SeqCst)
                && !step.is_finished()
                && now_ns() < until
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            if !watch.acknowledged.load(Ordering::SeqCst) && !step.is_finished() {
                stalled = Some(waited);
                break;
            }
        }
    }
    // After the stop the ramp-down runs on the step thread: wait for it as long as it makes
    // progress (a tick at a time).
    let joined = match stalled {
        Some(_) => Joined::Stalled,
        None => join_within(step, end_bound, Some(&watch.progress)),
    };
    let mut panics: Vec<(&'static str, String)> = Vec::new();
    let mut stalled_tasks: Vec<&'static str> = Vec::new();
    let left = |why: &str| ThreadSetup {
        task: STEP_TASK.into(),
        cpu,
        pinned: false,
        fifo: false,
        priority: None,
        note: why.into(),
    };
    let step_end = match joined {
        Joined::Done(Some(e)) => Some(e),
        Joined::Done(None) => None,
        Joined::Panicked(msg) => {
            panics.push((STEP_TASK, msg));
            None
        }
        Joined::Stalled => {
            stalled_tasks.push(STEP_TASK);
            None
        }
    };
    let step_lost = step_end.is_none();
    let mut step_end = step_end;
    let updating = step_end.as_mut().and_then(|e| e.updating.take());
    if step_lost {
        // The step thread holds the rings: let the writer finish what it has.
        journal.finish.store(true, Ordering::SeqCst);
    }
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
    unlock(memory_locked);
    let WriterEnd {
        rows: rows_written,
        lab_rows,
        kept: rows,
        logs,
        error: writer_error,
        ..
    } = written;

    // How it ended.
    let steps = watch.steps.load(Ordering::SeqCst);
    let (mut status, fault, stats, setup, wall, time_reached, safety) = match step_end {
        Some(mut e) => {
            if let Some(msg) = e.panic.take() {
                panics.insert(0, (STEP_TASK, msg));
            }
            let status = match &e.end.state {
                EndState::Completed => RunStatus::Completed,
                EndState::Stopped { event, .. } => RunStatus::Stopped(*event),
                EndState::Failed(fault) => RunStatus::Failed(fault.to_string()),
            };
            let mut safety: Vec<SafetySummary> = Vec::new();
            e.integ
                .for_each_lab(&mut |_, lab| safety.push(lab.safety_summary()));
            (
                status,
                e.end.state.fault().cloned(),
                e.stats,
                e.setup,
                e.wall,
                e.integ.time(),
                safety,
            )
        }
        None => {
            let fault = match stalled {
                Some(waited) => Fault::Stalled {
                    task: STEP_TASK,
                    waited,
                },
                None => Fault::TaskPanic { task: STEP_TASK },
            };
            let why = if stalled.is_some() {
                "the thread stalled and was left behind (not joined)"
            } else {
                "the thread ended without a report"
            };
            (
                RunStatus::Failed(fault.to_string()),
                Some(fault),
                TaskStats::new(STEP_TASK),
                left(why),
                (now_ns().saturating_sub(start_ns)) as f64 * 1e-9,
                steps as f64 * a.time_step,
                Vec::new(),
            )
        }
    };
    if let RunStatus::Completed = status {
        if let Some((task, msg)) = panics.first() {
            status = RunStatus::Failed(format!("the {task} thread panicked: {msg}"));
        } else if let Some(e) = &writer_error {
            status = RunStatus::Failed(e.clone());
        } else if stalled_tasks.contains(&"writer") {
            status = RunStatus::Failed("the writer thread stalled".into());
        }
    }
    let stalled_task: Option<&'static str> = match &fault {
        Some(Fault::Stalled { task, .. }) => Some(*task),
        _ => stalled_tasks.first().copied(),
    };
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
    let (status_name, event_json, error) = match &status {
        RunStatus::Completed => ("completed", Value::Null, writer_error.clone()),
        RunStatus::Stopped(ev) => (
            "stopped",
            hybridsim_io::lab::event_json(ev),
            writer_error.clone(),
        ),
        RunStatus::Failed(e) => ("failed", Value::Null, Some(e.clone())),
    };
    let tasks = vec![stats];
    let setup = vec![setup];
    let mut run_json = base;
    let fields = json!({
        "status": status_name,
        "safety_event": event_json,
        "fault": fault.as_ref().map(|f| f.to_string()),
        "error": error,
        "stalled_task": stalled_task,
        "task_panics": panics.iter().map(|(t, m)| json!({"task": t, "message": m})).collect::<Vec<_>>(),
        "lab_not_ramped": step_lost.then_some(
            "the step thread never returned the laboratories: hybridsim could neither hold nor \
             ramp them down; the controller's own watchdog must hold the actuators"),
        "steps_completed": steps,
        "time_reached": time_reached,
        "rows_written": rows_written,
        "lab_rows_written": lab_rows,
        "safety": safety.iter().map(|s| hybridsim_io::lab::safety_json(None, s)).collect::<Vec<_>>(),
        "tasks": tasks.iter().map(|t| t.to_json()).collect::<Vec<_>>(),
        "scheduling": {
            "memory_locked": memory_locked,
            "threads": setup.iter().map(|s| json!({"task": s.task, "cpu": s.cpu, "pinned": s.pinned, "sched_fifo": s.fifo, "priority": s.priority, "note": s.note})).collect::<Vec<_>>(),
        },
        "indicators": indicators.iter().map(|i| i.to_json()).collect::<Vec<_>>(),
        "estimation": Value::Null,
        "wall_seconds": wall,
    });
    if let (Value::Object(doc), Value::Object(fields)) = (&mut run_json, fields) {
        doc.extend(fields);
    }
    if let Some(u) = &updating {
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
        journal.stop_writing.store(true, Ordering::SeqCst);
        let guard = lock_within(&journal.closed, Duration::from_secs(2));
        if let Some(mut closed) = guard {
            *closed = true;
        }
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
        estimation: Value::Null,
        stalled_task,
        panics,
        wall,
        run_json,
    })
}
