//! The online updating task of the threaded runner (`[updating]`, issue 14; Abbiati et al.
//! 2020, §2.2 run the identification beside the NS and PS tasks).
//!
//! The link thread observes each completed coarse step
//! ([`OnlineUpdating::observe`]: the identified element's measured interface kinematics and
//! the force on it, the ground acceleration) and pushes the snapshot into a lock-free queue;
//! the **updating task**, a thread of its own, runs the filter ([`UpdateFilter::process`]) on
//! it while the next coarse step runs on the workers, and sends the estimate back through a
//! second queue. The estimate of step `n` is applied at the end of step `n + 1`, before step
//! `n + 2` — the fixed latency of one coarse step of the inline filter — so the same values
//! reach the receivers at the same steps and the run is bit-identical to `hybridsim run`.
//!
//! **Misses.** An estimate that is not back when due is a miss: the receivers keep the values
//! they have, and the estimate is dropped when it arrives (the filter itself goes on with
//! every snapshot, in order). With pacing `fast` the link thread waits for it, bounded by the
//! watchdog, so that a fast run stays deterministic (after a wait that timed out it does not
//! wait again until an estimate is back in time: a stalled task costs one bounded wait); with
//! pacing `realtime` it never waits.
//!
//! **Faults.** A panic of the task, a non-finite estimate or a full snapshot queue (a task
//! that fell behind) turn updating off ([`OnlineUpdating::turn_off`]), never the test; a trip
//! of the filter (a covariance that is not positive definite) stops its estimates as in the
//! inline filter. run.json says which, and when.
//!
//! **Refactorization** (`[updating] refactorize = "on_update"`). The task also holds the
//! [`Refactorizer`]: right after an estimate that will be applied it builds the receiving
//! partition's new operators (`D^N`, `ℚ^N`, `H`) and sends them through a third queue; the link
//! thread takes them together with the estimate, at the end of step `n + 1`, and swaps them in
//! ([`OnlineUpdating::take_operators`], moves only). The old operators go back through a fourth
//! queue and are dropped on the task, so the link thread neither allocates nor frees. A build
//! that is not back when due is a miss (the operators in use are kept; with pacing `fast` the
//! link thread waits for it as for the estimate); a failed or panicking build turns
//! refactorization off, never the test.
//!
//! Nothing here allocates, locks or prints per step: the snapshots and estimates are
//! fixed-size values in rings allocated before the loop.

use crate::clock::{now_ns, Backoff};
use crate::stats::TaskStats;
use crate::{Task, TaskFault, TaskFaultKind};
use hybridsim::integrators::TimeIntegrator;
use hybridsim::integrators::{Operators, Refactorizer};
use hybridsim::online_updating::{
    build_operators, OnlineUpdating, RefactorMessage, UpdateEstimate, UpdateFilter, UpdateSnapshot,
    UpdatingOff,
};
use hybridsim::runner::{Fault, StepExecutor};
use hybridsim::StepError;
use std::panic::AssertUnwindSafe;

/// Capacity of the snapshot and estimate queues (coarse steps the task may fall behind before
/// updating is turned off).
pub const UPDATING_QUEUE: usize = 4096;

/// A message to the updating task: a snapshot and when it was pushed (ns), or `None` to end.
pub(crate) type ToTask = Option<(UpdateSnapshot, u64)>;

/// What the task's thread returns: its timing, the filter (for the record and the summary)
/// and the message of a panic it caught.
pub(crate) struct TaskEnd {
    pub stats: TaskStats,
    pub filter: Box<UpdateFilter>,
    pub panic: Option<String>,
}

/// How long the idle updating task sleeps between looks at its queue with pacing `realtime`:
/// a fiftieth of the coarse step, within [20 µs, 100 µs] (one snapshot per coarse step; a
/// shorter sleep only burns the CPU the real-time tasks need).
pub fn idle_sleep_ns(coarse_step_ns: u64) -> u64 {
    (coarse_step_ns / 50).clamp(20_000, 100_000)
}

/// The next message; `None` once the link thread is gone and nothing is left. Spins briefly,
/// then sleeps `sleep_ns` (`None`: the runner's usual backoff, for pacing `fast`).
fn next(c: &mut rtrb::Consumer<ToTask>, sleep_ns: Option<u64>) -> Option<ToTask> {
    let Some(sleep_ns) = sleep_ns else {
        return crate::wait_pop(c);
    };
    let mut spins = 0u32;
    loop {
        if let Ok(x) = c.pop() {
            return Some(x);
        }
        if c.is_abandoned() {
            return c.pop().ok();
        }
        if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            crate::clock::sleep_until_with(now_ns() + sleep_ns, 0);
        }
    }
}

/// The refactorization side of the updating task: the refactorizer, the queue of its builds
/// to the link thread and the queue of the old operators coming back to be dropped.
pub(crate) struct TaskRefactor {
    pub refactorizer: Box<Refactorizer>,
    pub builds: rtrb::Producer<RefactorMessage>,
    pub returned: rtrb::Consumer<Box<Operators>>,
}

/// Run `f` with the thread's loop marker (the counting allocator of the tests) off.
fn unmarked<T>(marker: Option<fn(bool)>, f: impl FnOnce() -> T) -> T {
    if let Some(m) = marker {
        m(false);
    }
    let out = f();
    if let Some(m) = marker {
        m(true);
    }
    out
}

/// Spawn the updating task with `filter` (`sleep_ns`: see [`idle_sleep_ns`]; `None` with
/// pacing `fast`) and, with `refactorize = "on_update"`, its refactorization side.
pub(crate) fn spawn(
    mut filter: Box<UpdateFilter>,
    mut snapshots: rtrb::Consumer<ToTask>,
    mut estimates: rtrb::Producer<UpdateEstimate>,
    mut refactor: Option<TaskRefactor>,
    inject: Option<TaskFault>,
    marker: Option<fn(bool)>,
    sleep_ns: Option<u64>,
) -> std::thread::JoinHandle<TaskEnd> {
    std::thread::Builder::new()
        .name("hs-updating".into())
        .spawn(move || {
            let mut st = TaskStats::new("updating");
            let usage = TaskStats::usage_start();
            let mut panic = None;
            if let Some(m) = marker {
                m(true);
            }
            while let Some(Some((s, pushed))) = next(&mut snapshots, sleep_ns) {
                if let Some(r) = refactor.as_mut() {
                    // The old operators the link thread swapped out: freed here (outside
                    // the part of the loop that is held to no allocation).
                    unmarked(marker, || while r.returned.pop().is_ok() {});
                }
                if panic.is_some() {
                    // Failed: take the snapshots, do nothing with them.
                    continue;
                }
                let t0 = now_ns();
                let hit = TaskFault::hits(&inject, Task::Updating, s.step);
                let out = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    if let Some(kind) = hit {
                        TaskFault::fire(kind, Task::Updating);
                    }
                    filter.process(&s)
                }));
                let t1 = now_ns();
                st.record(t1 - t0, Some(t0.saturating_sub(pushed)), false);
                match out {
                    Ok(Some(mut e)) => {
                        if hit == Some(TaskFaultKind::NonFinite) {
                            e.values[0] = f64::NAN;
                        }
                        let np = filter.parameter_count();
                        let applied = e.send && e.values[..np].iter().all(|v| v.is_finite());
                        let _ = estimates.push(e);
                        // The operators for the values the link thread is about to apply,
                        // built here, off the real-time thread, after the estimate is sent.
                        if let Some(r) = refactor.as_mut().filter(|_| applied) {
                            // The build allocates by design (a new factorization): it is the
                            // work this task takes off the real-time thread.
                            let message = unmarked(marker, || {
                                build_operators(&mut r.refactorizer, e.step, &e.values[..np])
                            });
                            let failed = matches!(
                                message.rebuilt,
                                hybridsim::online_updating::Rebuilt::Failed(_)
                            );
                            let _ = r.builds.push(message);
                            if failed {
                                // Refactorization is off: no more builds.
                                refactor = None;
                            }
                        }
                    }
                    Ok(None) => {}
                    Err(payload) => {
                        panic = Some(crate::panic_text(payload.as_ref()));
                        let _ = estimates.push(UpdateEstimate {
                            step: s.step,
                            send: false,
                            values: [f64::NAN; hybridsim::online_updating::MAX_UPDATE_PARAMETERS],
                            task_failed: true,
                        });
                    }
                }
            }
            if let Some(m) = marker {
                m(false);
            }
            st.usage_end(usage);
            TaskEnd {
                stats: st,
                filter,
                panic,
            }
        })
        .expect("spawn")
}

/// A [`StepExecutor`] that runs the step-thread side of an [`OnlineUpdating`] after every
/// completed step of another one, with the filter on the updating task.
pub(crate) struct WithUpdatingTask<'a> {
    pub inner: &'a mut dyn StepExecutor,
    pub updating: &'a mut OnlineUpdating,
    pub snapshots: rtrb::Producer<ToTask>,
    pub estimates: rtrb::Consumer<UpdateEstimate>,
    /// Pacing `realtime`: never wait for an estimate.
    pub realtime: bool,
    /// Pacing `fast`: how long to wait for an estimate at most (ns).
    pub wait_ns: u64,
    /// Estimates not back when due, and the longest run of them.
    pub misses: u64,
    pub miss_run: u64,
    pub worst_miss_run: u64,
    /// Estimates that came back after they were due (dropped).
    pub late: u64,
    /// A wait for an estimate timed out: no more waits until one is back in time (a stalled
    /// task costs one bounded wait, not one per step).
    pub behind: bool,
    /// `refactorize = "on_update"`: the builds from the task and the queue that takes the old
    /// operators back to it.
    pub refactor: Option<LinkRefactor>,
}

/// The link thread's side of the refactorization queues.
pub(crate) struct LinkRefactor {
    pub builds: rtrb::Consumer<RefactorMessage>,
    pub returned: rtrb::Producer<Box<Operators>>,
    /// A wait for a build timed out: no more waits until one is back in time.
    pub behind: bool,
    /// Old operators that did not fit the return queue (kept, pushed again next step).
    pub pending: Option<Box<Operators>>,
}

impl LinkRefactor {
    /// Hand old operators back to the task (to be dropped there).
    fn give_back(&mut self, ops: Box<Operators>) {
        if let Err(rtrb::PushError::Full(ops)) = self.returned.push(ops) {
            // Cannot happen while the task drains the queue before every snapshot; kept
            // rather than freed here.
            self.pending.get_or_insert(ops);
        }
    }
}

impl WithUpdatingTask<'_> {
    /// The estimate of `step`, or `None` (a miss). Older, late estimates are dropped.
    fn receive(&mut self, step: u64) -> Option<UpdateEstimate> {
        let wait = !self.realtime && !self.behind;
        let until = now_ns().saturating_add(self.wait_ns);
        let mut b = Backoff::default();
        loop {
            match self.estimates.pop() {
                Ok(e) if e.step < step && !e.task_failed => self.late += 1,
                Ok(e) => {
                    self.behind = false;
                    return Some(e);
                }
                Err(_) => {
                    if !wait || self.estimates.is_abandoned() {
                        return None;
                    }
                    if now_ns() > until {
                        self.behind = true;
                        return None;
                    }
                    b.snooze();
                }
            }
        }
    }
}

impl WithUpdatingTask<'_> {
    /// After an estimate was applied: the task's build for it, swapped in now; or a miss (the
    /// operators in use kept). Late builds are handed back. With pacing `fast` it waits for
    /// the build, bounded like the wait for an estimate. Allocation-free.
    fn take_build(&mut self) {
        let realtime = self.realtime;
        let wait_ns = self.wait_ns;
        let Some(r) = self.refactor.as_mut() else {
            return;
        };
        if let Some(ops) = r.pending.take() {
            r.give_back(ops);
        }
        let Some(step) = self.updating.refactor_due() else {
            return;
        };
        let wait = !realtime && !r.behind;
        let until = now_ns().saturating_add(wait_ns);
        let mut b = Backoff::default();
        loop {
            match r.builds.pop() {
                Ok(m) => {
                    let current = m.step >= step;
                    if let Some(old) = self.updating.take_operators(self.inner.integrator(), m) {
                        r.give_back(old);
                    }
                    if current || self.updating.refactor_due().is_none() {
                        r.behind = false;
                        return;
                    }
                }
                Err(_) => {
                    if !wait || r.builds.is_abandoned() || now_ns() > until {
                        if wait && !r.builds.is_abandoned() {
                            r.behind = true;
                        }
                        self.updating.refactor_missed();
                        return;
                    }
                    b.snooze();
                }
            }
        }
    }
}

impl StepExecutor for WithUpdatingTask<'_> {
    fn integrator(&mut self) -> &mut dyn TimeIntegrator {
        self.inner.integrator()
    }
    fn step(&mut self) -> Result<(), StepError> {
        self.inner.step()
    }
    fn overruns(&self) -> u64 {
        self.inner.overruns()
    }
    fn after_step(&mut self) {
        self.inner.after_step();
        if self.updating.is_off() {
            return;
        }
        if let Some(step) = self.updating.awaiting() {
            let e = self.receive(step);
            if e.is_none() {
                self.misses += 1;
                self.miss_run += 1;
                self.worst_miss_run = self.worst_miss_run.max(self.miss_run);
            } else {
                self.miss_run = 0;
            }
            let dead = e.is_none() && self.estimates.is_abandoned();
            let integ = self.inner.integrator();
            self.updating.apply_estimate(integ, e.as_ref());
            self.take_build();
            if dead {
                let t = self.inner.integrator().time();
                self.updating.turn_off(UpdatingOff::Panic, t);
            }
            if self.updating.is_off() {
                return;
            }
        }
        let s = self.updating.observe(self.inner.integrator());
        if self.snapshots.is_abandoned() {
            self.updating.turn_off(UpdatingOff::Panic, s.time);
        } else if self.snapshots.push(Some((s, now_ns()))).is_err() {
            self.updating.turn_off(UpdatingOff::Stalled, s.time);
        }
    }
    fn wait_tick(&mut self) {
        self.inner.wait_tick()
    }
    fn take_fault(&mut self) -> Option<Fault> {
        self.inner.take_fault()
    }
    fn partitions_attached(&self) -> bool {
        self.inner.partitions_attached()
    }
}
