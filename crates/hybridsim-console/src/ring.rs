//! The snapshot ring: a bounded, lossy copy of a run's records, from the run loop to the
//! console's thread.
//!
//! [`SnapshotTap`] is the [`RecordTap`] a runner calls on its loop thread: it copies each
//! record as one frame into a single-producer single-consumer ring of `f64` slots (`rtrb`),
//! preallocated when the run starts. When the ring lacks room for a frame the frame is
//! dropped and counted: the tap never waits, never allocates and never locks once the run is
//! under way. [`SnapshotReader`] is the consumer side, on the console's thread.
//!
//! A frame is a tag followed by its payload: `0` a results row (the results columns), `1 + j`
//! a lab record of the `j`-th laboratory (its `lab.csv` columns), `-1` a completed step
//! (`steps`, wall-clock seconds since the tap's first step).

use hybridsim::runner::RecordTap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Frame tag of a results row.
pub const TAG_ROW: f64 = 0.0;
/// Frame tag of a completed step.
pub const TAG_STEP: f64 = -1.0;

/// Default ring capacity in `f64` slots (4 MiB): several seconds of a 4 kHz laboratory.
pub const DEFAULT_CAPACITY: usize = 1 << 19;

/// What the tap learns at the start: the headers of the records it will see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    /// Results headers (`name[unit]`).
    pub columns: Vec<String>,
    /// Per laboratory: `(partition, name, lab.csv headers)`.
    pub labs: Vec<(usize, String, Vec<String>)>,
}

/// The consumer's half, handed over when the run starts.
struct Handoff {
    layout: Layout,
    rx: rtrb::Consumer<f64>,
}

/// Shared between the tap and the reader: the handoff slot and the counters.
#[derive(Default)]
struct Shared {
    handoff: Mutex<Option<Handoff>>,
    dropped: AtomicU64,
    frames: AtomicU64,
}

/// The producer side: a [`RecordTap`] for [`hybridsim::runner::TapSlot`].
pub struct SnapshotTap {
    shared: Arc<Shared>,
    capacity: usize,
    tx: Option<rtrb::Producer<f64>>,
    /// Ring slot of each partition's lab (`usize::MAX`: none), indexed by partition.
    lab_tag: Vec<usize>,
    t0: Option<Instant>,
    /// Replay: wait for room instead of dropping.
    blocking: bool,
}

/// The consumer side (the console's thread).
pub struct SnapshotReader {
    shared: Arc<Shared>,
    rx: Option<rtrb::Consumer<f64>>,
    layout: Option<Layout>,
    widths: Vec<usize>,
    /// One frame, copied out of the ring.
    frame: Vec<f64>,
}

/// A tap and its reader, with a ring of `capacity` `f64` slots (allocated at the start of
/// the run, [`RecordTap::start`]).
pub fn snapshot_ring(capacity: usize) -> (SnapshotTap, SnapshotReader) {
    let shared = Arc::new(Shared::default());
    (
        SnapshotTap {
            shared: shared.clone(),
            capacity: capacity.max(64),
            tx: None,
            lab_tag: Vec::new(),
            t0: None,
            blocking: false,
        },
        SnapshotReader {
            shared,
            rx: None,
            layout: None,
            widths: Vec::new(),
            frame: Vec::new(),
        },
    )
}

impl SnapshotTap {
    /// Wait for room instead of dropping a frame (the replay of a results folder, never a
    /// live run).
    pub fn blocking(mut self) -> Self {
        self.blocking = true;
        self
    }

    fn push(&mut self, tag: f64, payload: &[f64]) {
        let Some(tx) = self.tx.as_mut() else {
            return;
        };
        let n = payload.len() + 1;
        if n > self.capacity {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if tx.slots() < n {
            if !self.blocking {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            while tx.slots() < n {
                if tx.is_abandoned() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        if let Ok(chunk) = tx.write_chunk_uninit(n) {
            chunk.fill_from_iter(std::iter::once(tag).chain(payload.iter().copied()));
            self.shared.frames.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl RecordTap for SnapshotTap {
    fn start(&mut self, columns: &[String], labs: &[(usize, String, Vec<String>)]) {
        let (tx, rx) = rtrb::RingBuffer::new(self.capacity);
        self.tx = Some(tx);
        let top = labs.iter().map(|l| l.0 + 1).max().unwrap_or(0);
        self.lab_tag = vec![usize::MAX; top];
        for (j, (k, _, _)) in labs.iter().enumerate() {
            self.lab_tag[*k] = j;
        }
        let layout = Layout {
            columns: columns.to_vec(),
            labs: labs.to_vec(),
        };
        if let Ok(mut slot) = self.shared.handoff.lock() {
            *slot = Some(Handoff { layout, rx });
        }
    }

    fn row(&mut self, row: &[f64]) {
        self.push(TAG_ROW, row);
    }

    fn lab_record(&mut self, partition: usize, record: &[f64]) {
        match self.lab_tag.get(partition) {
            Some(&j) if j != usize::MAX => self.push(1.0 + j as f64, record),
            _ => {}
        }
    }

    fn step(&mut self, steps: u64) {
        let now = Instant::now();
        let t0 = *self.t0.get_or_insert(now);
        let wall = now.duration_since(t0).as_secs_f64();
        self.push(TAG_STEP, &[steps as f64, wall]);
    }
}

/// One frame read from the ring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Frame<'a> {
    /// A results row.
    Row(&'a [f64]),
    /// A lab record of the `j`-th laboratory of the layout.
    Lab(usize, &'a [f64]),
    /// A completed step: steps so far and wall-clock seconds since the first one.
    Step {
        /// Completed steps.
        steps: u64,
        /// Wall-clock seconds since the first completed step.
        wall: f64,
    },
}

impl SnapshotReader {
    /// The layout, once the run has started.
    pub fn layout(&mut self) -> Option<&Layout> {
        if self.layout.is_none() {
            let handoff = self.shared.handoff.lock().ok().and_then(|mut g| g.take());
            if let Some(h) = handoff {
                self.widths = std::iter::once(h.layout.columns.len())
                    .chain(h.layout.labs.iter().map(|l| l.2.len()))
                    .collect();
                self.rx = Some(h.rx);
                self.layout = Some(h.layout);
            }
        }
        self.layout.as_ref()
    }

    /// Frames dropped so far because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Frames written into the ring so far.
    pub fn frames(&self) -> u64 {
        self.shared.frames.load(Ordering::Relaxed)
    }

    /// Whether the tap is gone (the run has ended) and everything it wrote has been read.
    pub fn finished(&self) -> bool {
        match &self.rx {
            Some(rx) => rx.is_abandoned() && rx.is_empty(),
            None => Arc::strong_count(&self.shared) == 1,
        }
    }

    /// Read every complete frame now in the ring, at most `max` of them, handing each to `f`.
    /// Returns the number read.
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(Frame<'_>)) -> usize {
        if self.layout().is_none() {
            return 0;
        }
        let Some(rx) = self.rx.as_mut() else {
            return 0;
        };
        let buf = &mut self.frame;
        let mut n = 0;
        while n < max {
            let Ok(head) = rx.peek().copied() else {
                break;
            };
            let width = if head == TAG_STEP {
                2
            } else {
                match self.widths.get(head as usize) {
                    Some(w) if head >= 0.0 => *w,
                    _ => {
                        // Not a frame boundary: cannot happen with one producer.
                        let _ = rx.pop();
                        continue;
                    }
                }
            };
            if rx.slots() < width + 1 {
                break;
            }
            let Ok(chunk) = rx.read_chunk(width + 1) else {
                break;
            };
            buf.clear();
            let (a, b) = chunk.as_slices();
            buf.extend_from_slice(a);
            buf.extend_from_slice(b);
            chunk.commit_all();
            let payload = &buf[1..];
            let frame = if head == TAG_STEP {
                Frame::Step {
                    steps: payload[0] as u64,
                    wall: payload[1],
                }
            } else if head == TAG_ROW {
                Frame::Row(payload)
            } else {
                Frame::Lab(head as usize - 1, payload)
            };
            f(frame);
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_a_full_ring_drops_whole_frames() {
        let (mut tap, mut reader) = snapshot_ring(64);
        assert!(reader.layout().is_none());
        tap.start(
            &["time[s]".into(), "u.a.1.x[m]".into()],
            &[(
                3,
                "lab".into(),
                vec!["time[s]".into(), "x[m]".into(), "y".into()],
            )],
        );
        tap.row(&[0.5, 1.0]);
        tap.lab_record(3, &[0.5, 2.0, 3.0]);
        tap.lab_record(0, &[9.0]); // no laboratory there: ignored
        tap.step(1);
        let mut seen = Vec::new();
        reader.drain(100, |f| seen.push(format!("{f:?}")));
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0], "Row([0.5, 1.0])");
        assert_eq!(seen[1], "Lab(0, [0.5, 2.0, 3.0])");
        assert!(seen[2].starts_with("Step { steps: 1"));
        // 64 slots hold 21 rows of 3 slots; the rest are dropped whole.
        for k in 0..30 {
            tap.row(&[k as f64, 0.0]);
        }
        assert_eq!(reader.dropped(), 9);
        let mut rows = Vec::new();
        reader.drain(1000, |f| {
            if let Frame::Row(r) = f {
                rows.push(r[0])
            }
        });
        assert_eq!(rows, (0..21).map(|k| k as f64).collect::<Vec<_>>());
        drop(tap);
        assert!(reader.finished());
    }
}
