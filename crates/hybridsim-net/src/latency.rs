//! The round-trip latency of a network transfer system, for run.json: a histogram allocated
//! once (1 µs to 100 s at three significant figures), recorded without allocating.

use std::time::Duration;

/// Round-trip latencies of a link.
pub struct Latency {
    histogram: hdrhistogram::Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram (the only allocation).
    pub fn new() -> Self {
        Self {
            histogram: hdrhistogram::Histogram::new_with_bounds(1, 100_000_000, 3)
                .expect("histogram bounds"),
        }
    }

    /// Record one round trip (clamped to 1 µs … 100 s). Allocation-free.
    pub fn record(&mut self, round_trip: Duration) {
        let micros = round_trip.as_micros().clamp(1, 100_000_000) as u64;
        let _ = self.histogram.record(micros);
    }

    /// Append `latency_p50_ms`, `latency_p99_ms`, `latency_p999_ms` and `latency_max_ms` to
    /// `out` (nothing before the first round trip).
    pub fn append_statistics(&self, out: &mut Vec<(String, f64)>) {
        let h = &self.histogram;
        if h.is_empty() {
            return;
        }
        for (name, q) in [
            ("latency_p50_ms", 0.5),
            ("latency_p99_ms", 0.99),
            ("latency_p999_ms", 0.999),
        ] {
            out.push((name.to_string(), h.value_at_quantile(q) as f64 * 1e-3));
        }
        out.push(("latency_max_ms".to_string(), h.max() as f64 * 1e-3));
    }
}
