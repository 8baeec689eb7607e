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
pub fn sleep_until(deadline_ns: u64) {
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
            Ok(()) => out.fifo = true,
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

/// Wait politely: spin briefly, then yield, then sleep 20 µs per round.
#[derive(Default)]
pub struct Backoff {
    n: u32,
}

impl Backoff {
    /// One round of waiting.
    pub fn snooze(&mut self) {
        if self.n < 64 {
            std::hint::spin_loop();
        } else if self.n < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        self.n = self.n.saturating_add(1);
    }
}
