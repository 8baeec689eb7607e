//! Start-up time and memory of a run (issue 20): from reading the model file to the first
//! step, and the process's peak resident memory, for `run.json` and `hybridsim check`.

use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::Instant;

static LOAD_START: OnceLock<Instant> = OnceLock::new();

/// Mark the start of the start-up: the first call in the process wins (called by
/// [`crate::load_model`] before it reads the file).
pub fn mark_start() -> Instant {
    *LOAD_START.get_or_init(Instant::now)
}

/// When the start-up began, if [`mark_start`] was called in this process.
pub fn start() -> Option<Instant> {
    LOAD_START.get().copied()
}

/// A field `Vm…: N kB` of `/proc/self/status`, in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Peak resident memory of the process so far, in bytes: `VmHWM` of `/proc/self/status`
/// (`None` where there is no `/proc`).
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// Resident memory of the process now, in bytes (`VmRSS`).
pub fn rss_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// The start-up measured at `ready` (the integrator built, before the first step):
/// `seconds` since [`mark_start`] (or since `fallback` when the model was not read by this
/// process), `build_seconds` since `fallback` (assembly and factorization), the peak and
/// current resident memory and the peak per DOF of the computed substructures.
#[derive(Debug, Clone, Copy)]
pub struct Startup {
    /// Seconds from reading the model file to the first step.
    pub seconds: f64,
    /// Seconds of assembly and factorization (building the engine).
    pub build_seconds: f64,
    /// Peak resident memory of the process (bytes), if known.
    pub peak_rss_bytes: Option<u64>,
    /// Resident memory at the first step (bytes), if known.
    pub rss_bytes: Option<u64>,
    /// Number of DOFs over the partitions.
    pub dofs: usize,
}

impl Startup {
    /// Measure now, the engine having been built since `build_start`.
    pub fn measure(build_start: Instant, dofs: usize) -> Self {
        let now = Instant::now();
        let from = start().filter(|s| *s <= build_start).unwrap_or(build_start);
        Self {
            seconds: (now - from).as_secs_f64(),
            build_seconds: (now - build_start).as_secs_f64(),
            peak_rss_bytes: peak_rss_bytes(),
            rss_bytes: rss_bytes(),
            dofs,
        }
    }

    /// The `startup` object of `run.json`.
    pub fn to_json(&self) -> Value {
        json!({
            "seconds": self.seconds,
            "build_seconds": self.build_seconds,
            "peak_rss_bytes": self.peak_rss_bytes,
            "rss_bytes": self.rss_bytes,
            "dofs": self.dofs,
            "peak_rss_bytes_per_dof": self.peak_rss_bytes.filter(|_| self.dofs > 0)
                .map(|b| b as f64 / self.dofs as f64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_memory_is_read_and_at_least_the_current() {
        let now = rss_bytes().expect("Linux reports VmRSS");
        let peak = peak_rss_bytes().expect("Linux reports VmHWM");
        assert!(peak >= now && now > 0, "peak {peak}, now {now}");
        // A 64 MB allocation touched page by page raises the peak by about as much.
        let big = std::hint::black_box(vec![1u8; 64 << 20]);
        let after = peak_rss_bytes().unwrap();
        assert!(
            after >= now + (60 << 20),
            "peak {after} after 64 MB, was {now}"
        );
        drop(big);
        let s = Startup::measure(Instant::now(), 10);
        assert!(s.seconds >= 0.0 && s.build_seconds >= 0.0);
        assert_eq!(s.to_json()["dofs"], 10);
    }
}
