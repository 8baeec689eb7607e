//! Per-task timing statistics: execution-time and wake-up-lateness histograms (hdrhistogram,
//! nanoseconds, allocated before the loop) and deadline misses.

use hdrhistogram::Histogram;

/// Timing of one task.
pub struct TaskStats {
    /// Task name.
    pub name: &'static str,
    /// Execution time per activation (ns).
    pub exec: Histogram<u64>,
    /// Wake-up lateness against the schedule (ns), paced tasks only.
    pub lateness: Histogram<u64>,
    /// Activations that ended after their deadline.
    pub misses: u64,
    /// Longest run of consecutive misses.
    pub worst_run: u64,
    run: u64,
    /// CPU time of the task's thread over its loop (s; user and system), when measured.
    pub cpu_seconds: Option<f64>,
    /// Wall time of the task's loop (s), when measured.
    pub loop_seconds: Option<f64>,
    /// The task's timeline, when traced ([`TaskStats::with_trace`]); never grows past the
    /// capacity given there.
    pub trace: Vec<TraceEvent>,
    /// Events that found the trace full (not recorded).
    pub trace_dropped: u64,
}

/// One activation of a task on the runner's timeline (`hybridsim realtime --trace`): the task's
/// coarse step, its substep (physical ticks: `1..=ss`), the CPU it ran on and four instants on
/// the monotonic clock (ns; what each means depends on the task, see docs/realtime-pipeline.md).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TraceEvent {
    /// Coarse step.
    pub step: u64,
    /// Substep (1..=ss for physical ticks, 0 otherwise).
    pub substep: u32,
    /// CPU the task ran on at its last instant (`sched_getcpu`; −1 when unknown).
    pub cpu: i32,
    /// Four instants (ns, monotonic clock).
    pub t: [u64; 4],
}

impl TaskStats {
    /// Empty statistics, 1 ns … 100 s at 3 significant digits.
    pub fn new(name: &'static str) -> Self {
        let h = || Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("histogram bounds");
        Self {
            name,
            exec: h(),
            lateness: h(),
            misses: 0,
            worst_run: 0,
            run: 0,
            cpu_seconds: None,
            loop_seconds: None,
            trace: Vec::new(),
            trace_dropped: 0,
        }
    }

    /// Keep a timeline of up to `events` activations (allocated here, before the loop).
    pub fn with_trace(mut self, events: usize) -> Self {
        self.trace = Vec::with_capacity(events);
        self
    }

    /// Whether a timeline is kept.
    pub fn tracing(&self) -> bool {
        self.trace.capacity() > 0
    }

    /// Add one event to the timeline (nothing when not traced; counted when full).
    /// Allocation-free: never pushes past the capacity allocated by [`TaskStats::with_trace`].
    pub fn trace(&mut self, step: u64, substep: u32, t: [u64; 4]) {
        if !self.tracing() {
            return;
        }
        if self.trace.len() < self.trace.capacity() {
            self.trace.push(TraceEvent {
                step,
                substep,
                cpu: current_cpu(),
                t,
            });
        } else {
            self.trace_dropped += 1;
        }
    }

    /// Start measuring the CPU use of the calling thread's loop: `(cpu s, monotonic ns)`.
    pub fn usage_start() -> (f64, u64) {
        (crate::clock::thread_cpu_seconds(), crate::clock::now_ns())
    }

    /// The CPU time and wall time of the calling thread since `start`
    /// ([`TaskStats::usage_start`]): what its work and its waiting loop cost.
    pub fn usage_end(&mut self, start: (f64, u64)) {
        let cpu = crate::clock::thread_cpu_seconds() - start.0;
        self.cpu_seconds = cpu.is_finite().then_some(cpu);
        self.loop_seconds = Some(crate::clock::now_ns().saturating_sub(start.1) as f64 * 1e-9);
    }

    /// Record one activation; returns the current run of consecutive misses.
    pub fn record(&mut self, exec_ns: u64, late_ns: Option<u64>, missed: bool) -> u64 {
        self.exec.saturating_record(exec_ns.max(1));
        if let Some(l) = late_ns {
            self.lateness.saturating_record(l.max(1));
        }
        if missed {
            self.misses += 1;
            self.run += 1;
            self.worst_run = self.worst_run.max(self.run);
        } else {
            self.run = 0;
        }
        self.run
    }

    /// Summary as JSON (microseconds).
    pub fn to_json(&self) -> serde_json::Value {
        let q = |h: &Histogram<u64>, p: f64| h.value_at_quantile(p) as f64 / 1e3;
        let summary = |h: &Histogram<u64>| {
            if h.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::json!({
                    "count": h.len(),
                    "mean_us": h.mean() / 1e3,
                    "p50_us": q(h, 0.5),
                    "p99_us": q(h, 0.99),
                    "p999_us": q(h, 0.999),
                    "max_us": h.max() as f64 / 1e3,
                })
            }
        };
        serde_json::json!({
            "task": self.name,
            "execution": summary(&self.exec),
            "wakeup_lateness": summary(&self.lateness),
            "deadline_misses": self.misses,
            "longest_miss_run": self.worst_run,
            "cpu_seconds": self.cpu_seconds,
            "loop_seconds": self.loop_seconds,
            "cpu_share": match (self.cpu_seconds, self.loop_seconds) {
                (Some(c), Some(w)) if w > 0.0 => Some(c / w),
                _ => None,
            },
        })
    }

    /// One line for the terminal.
    pub fn line(&self) -> String {
        let q = |h: &Histogram<u64>, p: f64| h.value_at_quantile(p) as f64 / 1e3;
        let mut s = format!(
            "{:<12} exec p50 {:>9.2} µs  p99 {:>9.2} µs  p99.9 {:>9.2} µs  max {:>9.2} µs",
            self.name,
            q(&self.exec, 0.5),
            q(&self.exec, 0.99),
            q(&self.exec, 0.999),
            self.exec.max() as f64 / 1e3
        );
        if !self.lateness.is_empty() {
            s.push_str(&format!(
                " | wake-up late p50 {:.1} µs p99 {:.1} µs p99.9 {:.1} µs max {:.1} µs",
                q(&self.lateness, 0.5),
                q(&self.lateness, 0.99),
                q(&self.lateness, 0.999),
                self.lateness.max() as f64 / 1e3
            ));
        }
        s.push_str(&format!(" | deadline misses {}", self.misses));
        if let (Some(c), Some(w)) = (self.cpu_seconds, self.loop_seconds) {
            if w > 0.0 {
                s.push_str(&format!(" | CPU {:.0} % of {:.2} s", 100.0 * c / w, w));
            }
        }
        s
    }
}

/// The CPU the calling thread runs on (`sched_getcpu`), −1 when unknown.
pub fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu takes no arguments and only reads the calling thread's CPU.
    unsafe { libc::sched_getcpu() }
}
