//! Monotonic clock, absolute-time sleeps and real-time scheduling set-up (Linux; graceful
//! degradation elsewhere and without privileges).

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep until the absolute monotonic time `deadline_ns` (`clock_nanosleep` with
/// `TIMER_ABSTIME`: no drift, unlike relative sleeps). Returns immediately when it has passed.
/// Spins the last [`DEFAULT_SPIN_NS`]; see [`sleep_until_with`].
pub fn sleep_until(deadline_ns: u64) {
    sleep_until_with(deadline_ns, DEFAULT_SPIN_NS);
}

/// Default spin budget of a paced wait (ns): `[runner] spin_budget`'s default.
pub const DEFAULT_SPIN_NS: u64 = 50_000;

/// Sleep on the kernel until `deadline_ns − spin_ns` with an absolute `clock_nanosleep`
/// (`CLOCK_MONOTONIC`, `TIMER_ABSTIME`), then spin on the clock for the rest. A thread under
/// SCHED_FIFO that spun for the whole wait would use up the kernel's real-time budget
/// (`sched_rt_runtime_us`, 95 % of each second by default) at high controller rates and be
/// throttled for tens of milliseconds; sleeping leaves the CPU idle and only the last
/// `spin_ns` — which absorb the wake-up latency of the sleep — are busy. Returns at once when
/// the deadline has passed; `spin_ns = 0` sleeps the whole wait. Allocation-free.
pub fn sleep_until_with(deadline_ns: u64, spin_ns: u64) {
    let wake = deadline_ns.saturating_sub(spin_ns);
    if now_ns() < wake {
        nanosleep_abs(wake);
    }
    if spin_ns > 0 {
        while now_ns() < deadline_ns {
            std::hint::spin_loop();
        }
    }
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline_ns)`, restarted after a signal.
fn nanosleep_abs(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            break;
        }
    }
}

/// CPU time used by the calling thread so far (s): user and system time from
/// `getrusage(RUSAGE_THREAD)`; what a waiting loop costs shows up here.
pub fn thread_cpu_seconds() -> f64 {
    // SAFETY: `usage` is a valid out-pointer; RUSAGE_THREAD is Linux's per-thread usage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if r != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The wake-up latency of an absolute `clock_nanosleep` on this machine: the largest of
/// `samples` sleeps of `period_ns` (ns) past its deadline. Measured before a paced run to tell
/// whether a controller tick can be held with the configured spin budget.
pub fn measure_wakeup_latency(samples: usize, period_ns: u64) -> u64 {
    let mut worst = 0;
    for _ in 0..samples {
        let deadline = now_ns() + period_ns;
        nanosleep_abs(deadline);
        worst = worst.max(now_ns().saturating_sub(deadline));
    }
    worst
}

/// What real-time set-up was obtained for one thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadSetup {
    /// Task name.
    pub task: String,
    /// CPU pinned to, if any.
    pub cpu: Option<usize>,
    /// Whether pinning succeeded.
    pub pinned: bool,
    /// Whether SCHED_FIFO was set.
    pub fifo: bool,
    /// The SCHED_FIFO priority, when it was set.
    pub priority: Option<u8>,
    /// Why something failed.
    pub note: String,
}

/// Pin the calling thread to `cpu` and ask for SCHED_FIFO at `priority`; report what worked.
pub fn setup_current_thread(
    task: &str,
    cpu: Option<usize>,
    priority: u8,
    realtime: bool,
) -> ThreadSetup {
    let mut out = ThreadSetup {
        task: task.to_string(),
        cpu,
        ..Default::default()
    };
    if let Some(c) = cpu {
        out.pinned = core_affinity::set_for_current(core_affinity::CoreId { id: c });
        if !out.pinned {
            out.note.push_str(&format!("could not pin to CPU {c}; "));
        }
    }
    if realtime {
        use thread_priority::*;
        let prio = ThreadPriorityValue::try_from(priority.clamp(1, 99))
            .map(ThreadPriority::Crossplatform)
            .unwrap_or(ThreadPriority::Max);
        match set_thread_priority_and_policy(
            thread_native_id(),
            prio,
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
        ) {
            Ok(()) => {
                out.fifo = true;
                out.priority = Some(priority.clamp(1, 99));
            }
            Err(e) => out.note.push_str(&format!(
                "SCHED_FIFO not permitted ({e:?}), running SCHED_OTHER; "
            )),
        }
        // SAFETY: prctl with PR_SET_TIMERSLACK and an integer argument.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
    }
    out
}

/// Lock all current and future pages in memory (no page faults in the loop). Returns whether
/// it was permitted.
pub fn lock_memory() -> bool {
    // SAFETY: plain syscall with flag arguments.
    unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) == 0 }
}

/// Undo [`lock_memory`].
pub fn unlock_memory() {
    // SAFETY: plain syscall.
    unsafe {
        libc::munlockall();
    }
}

/// Wait politely for something without a deadline of its own (a worker's report, the next
/// job): spin briefly, then sleep 20 µs per round. It never yields in a loop: under
/// SCHED_FIFO `sched_yield` returns at once when no thread of the same priority waits, which
/// is a spin that uses up the kernel's real-time budget.
#[derive(Default)]
pub struct Backoff {
    n: u32,
}

impl Backoff {
    /// One round of waiting.
    pub fn snooze(&mut self) {
        if self.n < 64 {
            std::hint::spin_loop();
        } else {
            nanosleep_abs(now_ns() + 20_000);
        }
        self.n = self.n.saturating_add(1);
    }
}

/// The controller-tick schedule of a paced test: tick `i` is due at `start_ns + i·dtc_ns`
/// on the monotonic clock. After a stop, the paced ramp-down sends one command per tick by
/// waiting here between commands: it continues the test's absolute schedule from the tick
/// after the last one commanded, and never sleeps to a tick already past (after a late stop
/// it resumes at the next tick to come, so no commands go out in a burst). Allocation-free.
#[derive(Debug, Clone, Copy)]
pub struct TickPacer {
    start_ns: u64,
    dtc_ns: u64,
    next: u64,
    spin_ns: u64,
}

impl TickPacer {
    /// A schedule starting at `start_ns` with ticks of `dtc_ns` (at least 1 ns); the next
    /// tick is tick 0.
    pub fn new(start_ns: u64, dtc_ns: u64) -> Self {
        Self {
            start_ns,
            dtc_ns: dtc_ns.max(1),
            next: 0,
            spin_ns: DEFAULT_SPIN_NS,
        }
    }

    /// With a spin budget of `spin_ns` at the end of each wait ([`sleep_until_with`]).
    pub fn with_spin(mut self, spin_ns: u64) -> Self {
        self.spin_ns = spin_ns;
        self
    }

    /// The next tick to command is `tick` (the one after the last tick commanded).
    pub fn resume_at(&mut self, tick: u64) {
        self.next = tick;
    }

    /// The index of the tick the next [`TickPacer::wait`] sleeps to, as of `now`.
    pub fn next_tick(&self, now: u64) -> u64 {
        let due = if now >= self.start_ns {
            (now - self.start_ns) / self.dtc_ns + 1
        } else {
            0
        };
        self.next.max(due)
    }

    /// Sleep to the next tick's deadline; returns its index.
    pub fn wait(&mut self) -> u64 {
        let i = self.next_tick(now_ns());
        sleep_until_with(self.start_ns + i * self.dtc_ns, self.spin_ns);
        self.next = i + 1;
        i
    }
}

/// A wall-clock runner's clock for the bumpless start of a laboratory: one controller tick
/// per call, from the moment it was made.
impl hybridsim::physical::TickClock for TickPacer {
    fn wait_tick(&mut self) {
        self.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// N waits take at least about N ticks of wall time, also after the schedule fell behind
    /// (no burst). Only loose lower bounds are asserted: a slow machine can make the waits
    /// longer, never shorter.
    #[test]
    fn tick_pacer_paces_one_tick_per_wait_and_never_bursts_after_a_late_stop() {
        let dtc = 2_000_000; // 2 ms
        let n = 25;
        let mut p = TickPacer::new(now_ns(), dtc);
        p.resume_at(3);
        let t0 = now_ns();
        let first = p.wait();
        assert!(first >= 3, "{first}");
        for _ in 1..n {
            p.wait();
        }
        let took = now_ns() - t0;
        // n waits from tick 3 end at tick ≥ 3 + n − 1, i.e. ≥ (n + 2) ticks after start.
        assert!(took >= n * dtc / 2, "{n} ticks took {took} ns");
        // Fall 20 ticks behind the schedule: the next waits still go one tick apart.
        std::thread::sleep(Duration::from_nanos(20 * dtc));
        let t1 = now_ns();
        let behind = p.next_tick(t1);
        assert!(
            behind > p.next,
            "the late tick is skipped, not sent at once"
        );
        for _ in 0..n {
            p.wait();
        }
        let took = now_ns() - t1;
        assert!(
            took >= n * dtc / 2,
            "{n} ticks after a late stop took {took} ns: a burst"
        );
    }
}
