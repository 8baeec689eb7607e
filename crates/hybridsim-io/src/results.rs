//! Results folders: CSV time histories through a bounded writer queue, and `run.json`.
//!
//! A model with a `[lab]` runs on the same single-threaded path (the threaded runner is
//! `hybridsim realtime`); after every coarse step the laboratory's controller-rate records
//! (one per Δt^C) are drained into recycled buffers and sent through a second bounded queue to
//! a lab writer thread (`lab.csv`, one file per physical substructure), so that no file I/O
//! happens inside a step. `run.json` then also holds the time scale, the seeds of the virtual
//! lab, the safety state and event of every physical substructure, the divergence criterion and
//! the tracking indicators ([`crate::lab`]); `synchronization.png` plots measured against
//! desired displacement.

use crate::lab::event_json;
use crate::lab::{LabLog, TrackingIndicators};
use crate::rowfile::{RowFile, WriterFactory};
use crate::LoadedModel;
use hybridsim::integrators::TimeIntegrator;
use hybridsim::output::Recorder;
use hybridsim::physical::SafetySummary;
use hybridsim::{Model, ModelError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Rows buffered between the simulation and the writer thread (at most).
const QUEUE_ROWS: usize = 1024;
/// Bytes of the rows buffered between the simulation and the writer thread: a wide row (about
/// 7 columns a DOF) gets fewer than [`QUEUE_ROWS`] buffers, so that the queue's memory does not
/// grow with the number of DOFs (1026 rows were 57 KB a DOF once every buffer was used). 8 MB
/// is 14 rows of a 10⁴-DOF chain's 70 000 columns; with 32 MB and at least 16 rows the queue
/// was the largest part of a long run's memory (32 MB at 10⁴ DOFs, 90 MB at 10⁵, issue 20).
const QUEUE_BYTES: usize = 8 << 20;
/// Rows of the writer queue at least, however wide a row: one row on its way, queued or being
/// written, while the stepping thread fills the next in its own row. With at least 4 queued
/// rows and 2 spare buffers, a 10⁵-DOF chain's 600 001 columns held 29 MB of buffers, with 1
/// queued row and 2 buffers 9.6 MB (issue 20); the stepping thread waits for the buffer when
/// the writer is behind, as it waits for room in the queue ([`QUEUE_BYTES`] worth of rows) of
/// a narrower model.
const QUEUE_MIN_ROWS: usize = 1;

/// Rows of the writer queue for rows of `ncol` values: [`QUEUE_BYTES`] worth, between
/// [`QUEUE_MIN_ROWS`] and [`QUEUE_ROWS`].
fn queue_rows(ncol: usize) -> usize {
    (QUEUE_BYTES / (8 * ncol.max(1))).clamp(QUEUE_MIN_ROWS, QUEUE_ROWS)
}

/// Value buffers of the writer queue for rows of `ncol` values, the rows queued and the one
/// the writer is writing together: as many as the queue has rows (the stepping thread's row is
/// its own). A row of a 10⁵-DOF chain's 600 001 columns is 4.8 MB: with one buffer the
/// stepping thread fills its row while the writer writes the last one, and waits for that
/// buffer only when the writer is still behind at the next row (a second buffer, one
/// queued row more, was 4.8 MB more of the run's memory for a writer that keeps up, issue 20).
fn queue_buffers(ncol: usize) -> usize {
    queue_rows(ncol)
}

/// Bytes of the text of a row's first columns spelled on the stepping thread, at most, for a
/// row of up to 4 × 41 943 columns (a 10⁴-DOF chain's row is 70 001 columns, of which
/// the stepping thread spells fewer than half when the threads are balanced); a wider row's
/// share may reach [`TEXT_ROW_FRACTION`] of it.
const TEXT_ROW_BYTES: usize = 1 << 20;
/// A wide row's share spelled on the stepping thread is at most 1 / `TEXT_ROW_FRACTION` of
/// its columns: the text buffer is then a fraction of the row's text, O(N) as the model,
/// touched only as far as the share is spelled (4.9 MB reserved for a recorded 10⁵-DOF frame's
/// 780 001 columns, issue 20 session 26). With 1 MiB, 5 % of that row, the stepping thread
/// could not take the writer's spelling once the row's values cost it less than the
/// writer's text.
const TEXT_ROW_FRACTION: usize = 4;
/// Bytes of a text buffer of the share of a row of `ncol` columns spelled on the stepping
/// thread: the whole row's text up to [`TEXT_ROW_BYTES`], 1 / [`TEXT_ROW_FRACTION`] of it for
/// a wider row.
fn text_row_bytes(ncol: usize) -> usize {
    let whole = ncol * crate::csv::MAX_FIELD_BYTES;
    whole.min(TEXT_ROW_BYTES.max(whole / TEXT_ROW_FRACTION))
}

/// Bytes of the text buffers of the rows spelled on the stepping thread: at least 1 buffer,
/// at most one a value buffer of the queue (a 10⁴-DOF chain keeps its 4 buffers, of 1 MB
/// instead of 1.75 MB; a 10⁵-DOF one has 1, a quarter of its row, issue 20: it had 4 of 2 MB,
/// then 2, then 1 of 1 MB).
const TEXT_BYTES: usize = 4 << 20;

/// Batches of lab records (one batch per physical substructure and coarse step) buffered
/// between the simulation and the lab writer thread.
const QUEUE_LAB_BATCHES: usize = 1024;
/// Largest delay searched by the cross-correlation delay indicator (s, wall clock).
const MAX_INDICATOR_DELAY: f64 = 0.25;

/// The header cells of a run's results file, made by the recorder one at a time.
struct RecorderHeader<'a> {
    recorder: &'a Recorder,
    integrator: &'a dyn TimeIntegrator,
}

impl crate::rowfile::HeaderCells for RecorderHeader<'_> {
    fn count(&self) -> usize {
        self.recorder.n_columns()
    }
    fn write_cells(
        &self,
        out: &mut dyn std::io::Write,
        separator: u8,
        after_last: bool,
    ) -> std::io::Result<()> {
        let n = self.recorder.n_columns();
        let mut k = 0;
        let mut result = Ok(());
        self.recorder
            .for_each_column(self.integrator, |name, unit| {
                k += 1;
                if result.is_ok() {
                    let end: &[u8] = if after_last || k < n {
                        &[separator]
                    } else {
                        b""
                    };
                    result = [name.as_bytes(), b"[", unit.as_bytes(), b"]", end]
                        .iter()
                        .try_for_each(|piece| out.write_all(piece));
                }
            });
        result
    }
}

/// The integrator of a run with its recorder. Laboratories are reached between steps only
/// through their [`hybridsim::physical::LabControl`] handles (drain the lab records, trip on a
/// fault); the stepping is the same [`TimeIntegrator::step`] as [`hybridsim::Simulation`]'s.
/// The model is borrowed from the loaded one: the integrator keeps what it needs of it, so a
/// second copy of every node and element for the run would only add to the start-up memory
/// (issue 20).
struct Engine<'m> {
    model: &'m Model,
    integ: Box<dyn TimeIntegrator>,
    recorder: Recorder,
}

impl<'m> Engine<'m> {
    fn new(
        model: &'m Model,
        connector: Option<&dyn hybridsim::physical::transfer::TransferConnector>,
    ) -> Result<Self, ModelError> {
        let integ = hybridsim::integrators::build_with(model, connector)?;
        let recorder = Recorder::new(model, integ.as_ref());
        Ok(Self {
            model,
            integ,
            recorder,
        })
    }

    fn integrator(&self) -> &dyn TimeIntegrator {
        self.integ.as_ref()
    }

    fn n_columns(&self) -> usize {
        self.recorder.n_columns()
    }

    fn n_steps(&self) -> u64 {
        self.model.analysis.n_steps()
    }

    /// Physical partitions with a lab: (partition index, name, lab columns).
    fn lab_partitions(&self) -> Vec<(usize, String, Vec<String>)> {
        self.integrator()
            .partitions()
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                let cols = p.lab()?.lab_columns();
                (!cols.is_empty()).then(|| (k, p.state.name.clone(), cols))
            })
            .collect()
    }

    fn safety(&self) -> Vec<(String, SafetySummary)> {
        self.integrator()
            .partitions()
            .iter()
            .filter_map(|p| Some((p.state.name.clone(), p.lab()?.safety_summary())))
            .collect()
    }
}

/// One batch of lab records: partition slot and the rows, flattened.
type LabBatch = (usize, Vec<f64>);

/// The queue from the run loop to the lab writer thread.
struct LabQueue {
    tx: SyncSender<LabBatch>,
    free: Receiver<Vec<f64>>,
    handle: std::thread::JoinHandle<LabWritten>,
    /// The batch of the current step per lab file.
    batches: Vec<Option<Vec<f64>>>,
    /// Partition index of each lab file.
    slots: Vec<usize>,
    cap: usize,
}

impl LabQueue {
    /// Append one lab record of partition `k` to its batch (recycled buffers; no file I/O).
    fn record(&mut self, k: usize, r: &[f64]) {
        let Some(i) = self.slots.iter().position(|s| *s == k) else {
            return;
        };
        if self.batches[i].is_none() {
            let mut buf = self
                .free
                .try_recv()
                .ok()
                .unwrap_or_else(|| Vec::with_capacity(self.cap));
            buf.clear();
            self.batches[i] = Some(buf);
        }
        if let Some(b) = self.batches[i].as_mut() {
            b.extend_from_slice(r);
        }
    }

    /// Queue the batches of this step for the writer (blocking when the bounded queue is
    /// full: `run` has no wall-clock deadline, and dropping hybrid-test data is not an
    /// option). `false` when the writer has stopped.
    fn send(&mut self) -> bool {
        let mut ok = true;
        for (i, b) in self.batches.iter_mut().enumerate() {
            if let Some(buf) = b.take() {
                ok &= self.tx.send((i, buf)).is_ok();
            }
        }
        ok
    }
}

/// What is on disk so far, published by the writer threads after every flush and read by
/// the heartbeat of run.json.
struct OnDisk {
    /// Completed coarse steps (set by the sink).
    steps: AtomicU64,
    /// Whole rows of `results.csv` on disk.
    rows: AtomicU64,
    /// The step of the last of them (`u64::MAX`: none yet).
    last_step: AtomicU64,
    /// Whole rows of each lab file on disk.
    lab_rows: Vec<AtomicU64>,
}

impl OnDisk {
    fn new(labs: usize) -> Self {
        Self {
            steps: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            last_step: AtomicU64::new(u64::MAX),
            lab_rows: (0..labs).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn last_step(&self) -> Option<u64> {
        match self.last_step.load(Ordering::Acquire) {
            u64::MAX => None,
            s => Some(s),
        }
    }

    fn lab_rows(&self) -> Vec<u64> {
        self.lab_rows
            .iter()
            .map(|r| r.load(Ordering::Acquire))
            .collect()
    }
}

/// One results row on its way to the writer: the text of its first columns when the stepping
/// thread spelled them (empty otherwise), the values of the others.
struct QueuedRow {
    step: u64,
    spelled: Vec<u8>,
    values: Vec<f64>,
}

/// Columns a row at least for a share of its text to be spelled on the stepping thread: a
/// narrower row is spelled in a few microseconds, less than the clocks of the share cost.
const MIN_SHARED_COLUMNS: usize = 512;

/// CPU time of the calling thread (ns), `CLOCK_THREAD_CPUTIME_ID`: time waiting for a row
/// or a buffer, or for a core on a loaded machine, is not counted.
fn thread_cpu_ns() -> u64 {
    // SAFETY: `t` is a valid out-pointer for clock_gettime.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if r != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A running mean of a per-row CPU time (ns): `mean += (x − mean) / 8`.
fn running_mean(mean: u64, x: u64) -> u64 {
    if mean == 0 {
        x
    } else {
        (mean * 7 + x) / 8
    }
}

/// The share of a CSV row's text spelled on the stepping thread (issue 20): with text, the
/// writer thread spelled every number of a wide row (63 % of a recorded frame's samples, the
/// stepping thread idle most of each row), so the row's first `columns` are spelled by the
/// stepping thread into a recycled text buffer, the rest by the writer, and both threads
/// spell. `columns` balances the two threads' CPU time a row (running means of their thread
/// CPU clocks, so that a loaded machine's waits for a core do not count): more while the
/// stepping thread's is the smaller, fewer while it is the larger. The stepping thread waits
/// for a free text buffer as it waits for a value buffer (the writer is then behind by as many
/// rows as there are text buffers; `hybridsim run` is not real-time: `hybridsim-rt` has no
/// share). The file is the same bytes whatever the share ([`crate::csv::push_fields`]).
struct SpelledShare {
    /// Columns spelled by the stepping thread now.
    columns: usize,
    /// Most columns it may spell (the text buffers' size), 0 for binary rows.
    max: usize,
    /// Change of `columns` per row.
    stride: usize,
    /// A fixed share (tests, [`RunOptions::spelled_on_step`]).
    fixed: bool,
    /// The stepping thread's CPU clock at the last row (ns) and its running mean a row.
    last_cpu: u64,
    cpu_per_row: u64,
    /// The writer's running mean of its CPU time a row (ns), published by the writer.
    writer_cpu_per_row: Arc<AtomicU64>,
    /// Text buffers free for the stepping thread.
    free: Receiver<Vec<u8>>,
    num: zmij::Buffer,
}

impl SpelledShare {
    /// The columns to spell for the next row: one stride towards equal CPU time a row on
    /// the two threads (within 1/16 of the larger, left as they are).
    fn next_columns(&mut self) -> usize {
        if !self.fixed && self.max > 0 {
            let now = thread_cpu_ns();
            if self.last_cpu > 0 {
                self.cpu_per_row = running_mean(self.cpu_per_row, now - self.last_cpu);
            }
            self.last_cpu = now;
            let (mine, writer) = (
                self.cpu_per_row,
                self.writer_cpu_per_row.load(Ordering::Relaxed),
            );
            let band = mine.max(writer) / 16;
            if writer > 0 && mine > 0 {
                if mine + band < writer {
                    self.columns = (self.columns + self.stride).min(self.max);
                } else if mine > writer + band {
                    self.columns = self.columns.saturating_sub(self.stride);
                }
            }
        }
        self.columns
    }
}

/// The sink of `run`: rows to the results writer thread, lab records to the lab writer
/// thread, both through bounded queues of recycled buffers.
struct FolderSink<'a> {
    rows: SyncSender<QueuedRow>,
    free_rows: &'a Receiver<Vec<f64>>,
    ncol: usize,
    spell: SpelledShare,
    lab: Option<LabQueue>,
    progress: &'a AtomicU64,
    disk: &'a OnDisk,
    /// Completed steps (the tag of the next results row).
    steps: u64,
    /// Fault injection for tests ([`RunOptions::panic_after_steps`]).
    panic_after: Option<u64>,
}

impl hybridsim::runner::RunSink for FolderSink<'_> {
    fn row(&mut self, row: &[f64]) -> bool {
        // The share first, then the value buffer: the writer gives the text buffer back as soon
        // as it has copied the text (at the start of its row), the value buffer once it has
        // spelled the rest, so that the stepping thread spells this row's first columns while
        // the writer still spells the last row's others. Taken the other way round (the value
        // buffer first, as until session 25), the writer idled while the stepping thread
        // spelled its share, and the share only moved work from one thread to the other
        // (issue 20, session 26).
        let mut spelled = Vec::new();
        let mut first = self.spell.next_columns().min(row.len());
        if first > 0 {
            // Waiting for a text buffer, as for a value buffer. Taken without waiting (a row
            // without a share when none was free), the writer, once behind, got whole rows to
            // spell while the stepping thread ran ahead through its 135 value buffers with 21
            // text buffers: the share never caught up (the 990-DOF frame: writer 0.46 s of
            // CPU, stepping thread 0.26 s, issue 20 session 25).
            match self.spell.free.recv() {
                Ok(mut text) => {
                    text.clear();
                    crate::csv::push_fields(&mut text, &row[..first], false, &mut self.spell.num);
                    spelled = text;
                }
                Err(_) => first = 0,
            }
        }
        let mut values = self
            .free_rows
            .recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.ncol));
        values.clear();
        values.extend_from_slice(&row[first..]);
        self.rows
            .send(QueuedRow {
                step: self.steps,
                spelled,
                values,
            })
            .is_ok()
    }
    fn lab_record(&mut self, partition: usize, record: &[f64]) -> bool {
        if let Some(q) = self.lab.as_mut() {
            q.record(partition, record);
        }
        true
    }
    fn end_of_step(&mut self) -> bool {
        self.lab.as_mut().is_none_or(|q| q.send())
    }
    fn progress(&mut self, steps: u64) {
        self.steps = steps;
        self.progress.store(steps, Ordering::Relaxed);
        self.disk.steps.store(steps, Ordering::Relaxed);
        if self.panic_after == Some(steps) {
            panic!("injected panic after step {steps} (RunOptions::panic_after_steps)");
        }
    }
}

/// What the lab writer leaves: whole rows on disk per file, the logs for the indicators, and
/// the first write error (with the file).
struct LabWritten {
    rows: Vec<u64>,
    logs: Vec<LabLog>,
    error: Option<String>,
}

/// The lab writer: `lab.csv` (first physical substructure) and `lab.NAME.csv` (others), and
/// the logs for the indicators. Stops at the first write error (which stops the test: the
/// queue is then closed), leaving whole rows only.
fn lab_writer_thread(
    mut sinks: Vec<(RowFile, usize, LabLog, PathBuf)>,
    batches: Receiver<LabBatch>,
    recycle: SyncSender<Vec<f64>>,
    disk: Arc<OnDisk>,
) -> std::thread::JoinHandle<LabWritten> {
    std::thread::Builder::new()
        .name("hybridsim-lab-writer".into())
        .spawn(move || {
            let mut error = None;
            let mut last_flush = Instant::now();
            let flush_all = |sinks: &mut Vec<(RowFile, usize, LabLog, PathBuf)>,
                             finish: bool|
             -> Result<(), String> {
                for (i, (s, _, _, path)) in sinks.iter_mut().enumerate() {
                    let r = if finish { s.finish() } else { s.flush() };
                    disk.lab_rows[i].store(s.rows_on_disk(), Ordering::Release);
                    r.map_err(|e| format!("writing {}: {e}", path.display()))?;
                }
                Ok(())
            };
            loop {
                match batches.recv_timeout(FLUSH_EVERY) {
                    Ok((i, rows)) => {
                        let (sink, width, log, path) = &mut sinks[i];
                        for row in rows.chunks_exact(*width) {
                            if let Err(e) = sink.write_row(row, 0) {
                                error = Some(format!("writing {}: {e}", path.display()));
                                break;
                            }
                            log.push(row);
                        }
                        let _ = recycle.try_send(rows);
                        if error.is_some() {
                            break;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                if last_flush.elapsed() >= FLUSH_EVERY {
                    if let Err(e) = flush_all(&mut sinks, false) {
                        error = Some(e);
                        break;
                    }
                    last_flush = Instant::now();
                }
            }
            if error.is_none() {
                error = flush_all(&mut sinks, true).err();
            } else {
                // Keep what the other files still hold; the first error is the one reported.
                let _ = flush_all(&mut sinks, true);
            }
            let mut rows = Vec::new();
            let mut logs = Vec::new();
            for (i, (s, _, log, _)) in sinks.into_iter().enumerate() {
                disk.lab_rows[i].store(s.rows_on_disk(), Ordering::Release);
                rows.push(s.rows_on_disk());
                logs.push(log);
            }
            LabWritten { rows, logs, error }
        })
        .expect("spawn lab writer thread")
}

/// How a run ended: the core's one end state for every runner.
pub type RunStatus = hybridsim::runner::EndState;

/// Summary of a finished run.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Output folder.
    pub folder: PathBuf,
    /// Completed coarse steps.
    pub steps: u64,
    /// Recorded rows.
    pub rows: u64,
    /// How it ended.
    pub status: RunStatus,
    /// Wall time of the whole run.
    pub wall_time: Duration,
    /// Time spent inside integrator steps.
    pub step_time: Duration,
    /// Controller-rate rows written to `lab.csv` (0 without a `[lab]`).
    pub lab_rows: u64,
    /// Tracking indicators per actuator (empty without a `[lab]`).
    pub indicators: Vec<TrackingIndicators>,
    /// Safety state of every physical substructure behind a transfer system.
    pub safety: Vec<SafetySummary>,
    /// What went wrong besides the end state: a write error (the files hold every row
    /// written before it), a panic in the run loop. A run with an error has not succeeded,
    /// whatever its status.
    pub error: Option<String>,
}

/// Errors that prevent writing results.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// File-system error, with the path.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The model could not be turned into a simulation.
    #[error("{0}")]
    Model(#[from] hybridsim::ModelError),
    /// The results folder cannot be used (not empty, not a results folder, not writable).
    #[error("{0}")]
    Folder(#[from] crate::folder::FolderError),
}

/// Options of [`run_to_folder_with`].
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Clear a previous run's results folder first ([`crate::prepare_folder`]); without it a
    /// non-empty folder is refused.
    pub overwrite: bool,
    /// Where the results files go (default: plain files, [`crate::file_factory`]); the tests of
    /// the write-error path inject a writer that fails.
    pub writer: Option<WriterFactory>,
    /// Wall time between two heartbeats of run.json (default 1 s).
    pub heartbeat: Option<Duration>,
    /// Fault injection for tests: panic in the run loop once this many steps are completed.
    pub panic_after_steps: Option<u64>,
    /// Builds the network transfer systems (`lab.transfer = "udp"`, …); without one such a
    /// laboratory refuses to start.
    pub connector: Option<Arc<dyn hybridsim::physical::transfer::TransferConnector>>,
    /// A live copy of the records (the browser console), taken out once at the start; it
    /// sees every row and lab record after the folder's sink and cannot change the run.
    pub tap: Option<hybridsim::runner::TapSlot>,
    /// Tests: the number of each CSV row's first columns spelled on the stepping thread, fixed
    /// (default: adapted to keep the stepping and the writer thread both busy, see
    /// `SpelledShare`); the file is the same bytes whatever the share.
    pub spelled_on_step: Option<usize>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), RunError> {
    write_json_atomic(path, value).map_err(io_err(path))
}

/// A writer that counts the bytes written through it.
struct Counted<W> {
    out: W,
    bytes: usize,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(b)?;
        self.bytes += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Write `value` as pretty JSON to a new file `path` through a small buffer (the text is never
/// held whole: a 10⁵-DOF model's run.json is a few MB, written every heartbeat, issue 20),
/// padded as [`write_json_atomic`] says.
fn write_json_padded(path: &Path, value: &(impl serde::Serialize + ?Sized)) -> std::io::Result<()> {
    use std::io::Write;
    let file = std::fs::File::create(path)?;
    let mut out = Counted {
        out: std::io::BufWriter::with_capacity(1 << 16, file),
        bytes: 0,
    };
    serde_json::to_writer_pretty(&mut out, value)?;
    let reserve = (out.bytes + 4096).div_ceil(4096).max(4) * 4096;
    let pad = reserve - out.bytes - 2;
    out.write_all(b"\n")?;
    let spaces = [b' '; 512];
    let mut left = pad;
    while left > 0 {
        let n = left.min(spaces.len());
        out.write_all(&spaces[..n])?;
        left -= n;
    }
    out.write_all(b"\n")?;
    out.flush()
}

/// Write `value` as pretty JSON to `path` atomically (a temporary file renamed over it), so
/// that a reader, or a run killed mid-write, never sees a truncated run.json.
///
/// The text is padded with trailing whitespace (valid JSON) to a reserve of whole 4 KiB
/// blocks, so that each version holds room for a somewhat longer next one: when the temporary
/// file cannot be written (a full disk), the new text is written in place over the previous
/// version, inside the blocks it already holds, and only if that fails too is the error
/// returned.
pub fn write_json_atomic(
    path: &Path,
    value: &(impl serde::Serialize + ?Sized),
) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let atomic = write_json_padded(&tmp, value).and_then(|_| std::fs::rename(&tmp, path));
    let Err(e) = atomic else {
        return Ok(());
    };
    let _ = std::fs::remove_file(&tmp);
    let mut body = serde_json::to_vec_pretty(value)?;
    body.push(b'\n');
    rewrite_in_place(path, &body).map_err(|e2| {
        std::io::Error::new(
            e.kind(),
            format!("{e}; rewriting it in place failed too: {e2}"),
        )
    })
}

/// Overwrite `path` with `bytes` without allocating new blocks (the previous version is at
/// least as long), then cut it to their length.
fn rewrite_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let old = std::fs::metadata(path)?.len();
    if bytes.len() as u64 > old {
        return Err(std::io::Error::other(format!(
            "the new text ({} bytes) is longer than the previous version ({old} bytes)",
            bytes.len()
        )));
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(bytes)?;
    f.set_len(bytes.len() as u64)?;
    f.sync_data()
}

/// Interval of the writers' flushes (the rows on disk lag the run by at most this much).
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// What the results writer leaves: whole rows on disk, the step of the last one, and the
/// write error that stopped it.
struct Written {
    rows: u64,
    last_step: Option<u64>,
    error: Option<std::io::Error>,
}

/// The results writer: `results.csv` through a [`RowFile`], flushed every [`FLUSH_EVERY`]
/// (also when no row comes), publishing the rows on disk after every flush. Stops at the
/// first write error, which closes the queue and so stops the test.
fn writer_thread(
    mut out: RowFile,
    rows: Receiver<QueuedRow>,
    recycle: SyncSender<Vec<f64>>,
    recycle_text: SyncSender<Vec<u8>>,
    cpu_per_row: Option<Arc<AtomicU64>>,
    disk: Arc<OnDisk>,
) -> std::thread::JoinHandle<Written> {
    std::thread::Builder::new()
        .name("hybridsim-writer".into())
        .spawn(move || {
            let publish = |out: &RowFile| {
                disk.rows.store(out.rows_on_disk(), Ordering::Release);
                if let Some(s) = out.last_tag_on_disk() {
                    disk.last_step.store(s, Ordering::Release);
                }
            };
            let mut last_flush = Instant::now();
            let mut error = None;
            let (mut last_cpu, mut mean) = (0, 0);
            loop {
                let mut took_row = false;
                match rows.recv_timeout(FLUSH_EVERY) {
                    Ok(row) => {
                        took_row = true;
                        // The text buffer back as soon as its text is copied: the stepping
                        // thread spells the next row's share into it while this row's other
                        // columns are spelled here (it waits for the text buffer, then for
                        // the value buffer).
                        let r = out.write_row_text(&row.spelled);
                        if row.spelled.capacity() > 0 {
                            let _ = recycle_text.try_send(row.spelled);
                        }
                        let r = r.and_then(|()| out.end_row_with(&row.values, row.step));
                        let _ = recycle.try_send(row.values);
                        if let Err(e) = r {
                            error = Some(e);
                            break;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                if last_flush.elapsed() >= FLUSH_EVERY {
                    if let Err(e) = out.flush() {
                        error = Some(e);
                        break;
                    }
                    publish(&out);
                    last_flush = Instant::now();
                }
                // The CPU time of a row (and of the flushes between rows), for the share
                // spelled on the stepping thread.
                if let Some(shared) = cpu_per_row.as_ref().filter(|_| took_row) {
                    let now = thread_cpu_ns();
                    if last_cpu > 0 {
                        mean = running_mean(mean, now - last_cpu);
                        shared.store(mean, Ordering::Relaxed);
                    }
                    last_cpu = now;
                }
            }
            if error.is_none() {
                error = out.finish().err();
            }
            publish(&out);
            Written {
                rows: out.rows_on_disk(),
                last_step: out.last_tag_on_disk(),
                error,
            }
        })
        .expect("spawn writer thread")
}

/// `unix` seconds as an ISO 8601 UTC timestamp with milliseconds (the `heartbeat` of
/// run.json, for `run` and `realtime`).
pub fn utc_timestamp(unix: f64) -> String {
    let ms = (unix.max(0.0) * 1e3).round() as u64;
    let (secs, ms) = (ms / 1000, ms % 1000);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Wall-clock time now, unix seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Where a run stands, for `run.json`.
struct Progress<'a> {
    status: &'a str,
    error: Option<String>,
    steps: u64,
    rows: u64,
    started: f64,
    wall: Duration,
    step_time: Duration,
    lab_rows: &'a [u64],
    /// The step of the last results row on disk.
    last_step: Option<u64>,
    indicators: &'a [TrackingIndicators],
    /// Start-up time and memory (parse → first step).
    startup: &'a crate::startup::Startup,
}

/// The lab part of `run.json` (time scale, safety, divergence criterion, indicators, seeds).
fn lab_json(sim: &Engine<'_>, p: &Progress) -> Option<Value> {
    let lab = sim.model.lab.as_ref()?;
    let safety: Vec<Value> = sim
        .safety()
        .iter()
        .map(|(name, s)| crate::lab::safety_json(Some(name), s))
        .collect();
    let first_event = sim.safety().iter().find_map(|(_, s)| s.event);
    let d = &lab.safety.divergence;
    let mut lab_fields = crate::lab::lab_settings_json(&lab.lab);
    lab_fields.insert("seed".into(), json!(lab.lab.seed));
    lab_fields.insert("lab_rows_written".into(), json!(p.lab_rows));
    Some(json!({
        "time_scale": crate::lab::time_scale_json(&lab.lab),
        "lab": lab_fields,
        "safety": safety,
        "safety_event": first_event.as_ref().map(event_json),
        "divergence_criterion": {
            "displacement": d.displacement,
            "force": d.force,
            "growth": d.growth,
            "window": d.window,
            "windows": d.windows,
            "floor": d.floor,
            "energy": d.energy,
            "energy_mode": d.energy_mode.name(),
            "energy_window": d.energy_window,
            "energy_default": match d.energy_mode {
                hybridsim::model::lab::EnergyMode::Window => {
                    "1/2 k_hat u_b^2 over the window (estimated actuator-space stiffness, |u| bound)"
                }
                hybridsim::model::lab::EnergyMode::Cumulative => {
                    "1/8 k_hat u_b^2 since the start (estimated actuator-space stiffness, |u| bound)"
                }
            },
        },
        "indicators": p.indicators.iter().map(|i| i.to_json()).collect::<Vec<_>>(),
    }))
}

/// The coarse step whose end is `t` (1-based; the first step ends at `Δt`).
fn step_ending_at(t: f64, dt: f64) -> u64 {
    (t / dt).round().max(1.0) as u64
}

/// `run.json`'s `nonlinear_solve`: what the converged solve of the numerical partitions did.
fn nonlinear_solve_json(r: &hybridsim::integrators::NonlinearSolveReport, dt: f64) -> Value {
    json!({
        "tolerance": r.tolerance,
        "max_iterations": r.max_iterations,
        "solves": r.solves,
        "iterations": r.iterations,
        "unconverged_steps": r.unconverged_steps,
        "first_unconverged_step": r.first_unconverged_time.map(|t| step_ending_at(t, dt)),
        "first_unconverged_time": r.first_unconverged_time,
        "worst_residual": r.worst_residual,
        "newton": r.newton_factorizations.map(|f| json!({
            "factorizations": f,
            "singular_fallbacks": r.newton_singular,
        })),
        "current_link": (r.link_builds > 0).then(|| json!({
            "builds": r.link_builds,
            "singular": r.link_singular,
        })),
    })
}

/// The warnings of singular current-tangent matrices (Newton's iterations solved with the
/// initial-tangent `D`; PG-α link operators kept from the step before).
fn singular_tangent_warnings(r: &hybridsim::integrators::NonlinearSolveReport) -> Vec<String> {
    let mut out = Vec::new();
    if r.newton_singular > 0 {
        out.push(format!(
            "analysis.nonlinear_solver: {} Newton iteration(s) met a singular current-tangent \
             matrix and were solved with the initial-tangent D instead",
            r.newton_singular
        ));
    }
    if r.link_singular > 0 {
        out.push(format!(
            "analysis.link_tangent: {} of {} current-tangent link operator(s) met a singular \
             matrix; those steps linked with the operator of the step before",
            r.link_singular, r.link_builds
        ));
    }
    out
}

/// The warning of a run with unconverged steps.
fn unconverged_warning(r: &hybridsim::integrators::NonlinearSolveReport, dt: f64) -> String {
    format!(
        "analysis.nonlinear_max_iterations: {} step(s) of the nonlinear solve did not meet \
         analysis.nonlinear_tolerance = {:e} within {} iterations (first: step {} at t = {}; \
         worst residual, the last correction relative to the rate, {:.3e}); those steps keep \
         their last iterate",
        r.unconverged_steps,
        r.tolerance,
        r.max_iterations,
        r.first_unconverged_time
            .map_or(0, |t| step_ending_at(t, dt)),
        r.first_unconverged_time.unwrap_or(0.0),
        r.worst_residual,
    )
}

/// A substructure's DOF list (`node.dof` names, in order) as runs of nodes numbered one after
/// the other that have the same DOFs in the same order: a chain's or a frame's list is a few
/// runs, where the list as JSON strings was 78 bytes and 2 heap blocks a DOF held by the
/// heartbeat for the whole run (7.8 MB of a 10⁵-DOF chain, issue 20). At most 28 bytes a DOF
/// when no two nodes in a row follow each other.
#[derive(Debug, Default)]
struct DofList {
    /// The DOF names of the runs' nodes, one pattern after the other.
    names: Vec<hybridsim::elements::DofName>,
    runs: Vec<NodeRun>,
}

/// Nodes `first`, `first + 1`, … (`nodes` of them), each with the DOFs
/// `names[start..start + len]` of its [`DofList`].
#[derive(Debug, Clone, Copy)]
struct NodeRun {
    first: i64,
    nodes: u32,
    start: u32,
    len: u32,
}

impl DofList {
    fn new(dofs: &[hybridsim::elements::DofRef]) -> Self {
        let mut list = Self::default();
        let mut i = 0;
        while i < dofs.len() {
            let node = dofs[i].node;
            let end = i + dofs[i..].iter().take_while(|d| d.node == node).count();
            let group = &dofs[i..end];
            let same = |r: &NodeRun| {
                let pattern = &list.names[r.start as usize..(r.start + r.len) as usize];
                pattern.len() == group.len() && pattern.iter().zip(group).all(|(a, b)| *a == b.dof)
            };
            let last = list.runs.last().copied();
            match last {
                Some(r)
                    if r.nodes < u32::MAX
                        && r.first.checked_add(i64::from(r.nodes)) == Some(node)
                        && same(&r) =>
                {
                    if let Some(r) = list.runs.last_mut() {
                        r.nodes += 1;
                    }
                }
                _ => {
                    let start = match last.filter(same) {
                        Some(r) => r.start,
                        None => {
                            let start = list.names.len() as u32;
                            list.names.extend(group.iter().map(|d| d.dof));
                            start
                        }
                    };
                    list.runs.push(NodeRun {
                        first: node,
                        nodes: 1,
                        start,
                        len: group.len() as u32,
                    });
                }
            }
            i = end;
        }
        list.names.shrink_to_fit();
        list.runs.shrink_to_fit();
        list
    }
}

impl serde::Serialize for DofList {
    /// The list of `node.dof` strings, as the JSON array of them.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        struct Name(i64, hybridsim::elements::DofName);
        impl serde::Serialize for Name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&format_args!("{}.{}", self.0, self.1))
            }
        }
        let len = self
            .runs
            .iter()
            .map(|r| r.nodes as usize * r.len as usize)
            .sum();
        let mut seq = s.serialize_seq(Some(len))?;
        for r in &self.runs {
            let pattern = &self.names[r.start as usize..(r.start + r.len) as usize];
            for k in 0..i64::from(r.nodes) {
                for d in pattern {
                    seq.serialize_element(&Name(r.first + k, *d))?;
                }
            }
        }
        seq.end()
    }
}

/// The contents of `run.json`: a JSON tree, and the DOF list of every substructure kept as
/// [`DofList`]s (the tree's `substructures[k].dofs` is a `null` placeholder), written in its
/// place: the same text as the tree with the lists in it.
struct RunJson {
    tree: Value,
    dofs: Vec<DofList>,
}

impl serde::Serialize for RunJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Part<'a>(&'a Value, Option<&'a DofList>);
        impl serde::Serialize for Part<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match (self.0, self.1) {
                    (Value::Object(o), Some(dofs)) => {
                        let mut m = s.serialize_map(Some(o.len()))?;
                        for (k, v) in o {
                            if k == "dofs" {
                                m.serialize_entry(k, dofs)?;
                            } else {
                                m.serialize_entry(k, v)?;
                            }
                        }
                        m.end()
                    }
                    (v, _) => v.serialize(s),
                }
            }
        }
        struct Parts<'a>(&'a [Value], &'a [DofList]);
        impl serde::Serialize for Parts<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for (k, part) in self.0.iter().enumerate() {
                    seq.serialize_element(&Part(part, self.1.get(k)))?;
                }
                seq.end()
            }
        }
        let Value::Object(top) = &self.tree else {
            return self.tree.serialize(s);
        };
        let mut m = s.serialize_map(Some(top.len()))?;
        for (k, v) in top {
            match v {
                Value::Array(parts) if k == "substructures" => {
                    m.serialize_entry(k, &Parts(parts, &self.dofs))?
                }
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

fn run_json(loaded: &LoadedModel, sim: &Engine<'_>, p: Progress) -> RunJson {
    let lab = lab_json(sim, &p);
    let Progress {
        status,
        error,
        steps,
        rows,
        started,
        wall,
        step_time,
        lab_rows,
        last_step,
        startup,
        ..
    } = p;
    let m = sim.model;
    let a = &m.analysis;
    let integ = sim.integrator();
    let parts: Vec<Value> = integ
        .partitions()
        .iter()
        .map(|p| {
            json!({
                "name": p.state.name,
                "physical": p.state.physical,
                "dofs": Value::Null,
                "extra_states": p.state.n_states,
                "specimen": p.physical.as_ref().map(|port| port.substructure().describe()),
                "specimen_commands": p.physical.as_ref().map(|port| port.commands()),
            })
        })
        .collect();
    // Every multiplier: PG-α's substructure interface, LLM's localized and imposed ones.
    let interface: Vec<Value> = integ
        .multiplier_info()
        .into_iter()
        .map(|i| {
            json!({
                "dof": format!("{}.{}", i.dof.node, i.dof.dof),
                "plus": i.plus,
                "minus": i.minus,
                "lambda0": i.lambda0,
                "kind": i.kind,
                "channel": i.channel,
            })
        })
        .collect();
    let rayleigh = hybridsim::assembly::rayleigh_coefficients(m).ok().flatten();
    let seeds: Vec<Value> = m
        .ground_motions
        .iter()
        .filter_map(|g| {
            g.seed
                .map(|s| json!({"ground_motion": g.direction, "seed": s}))
        })
        .chain(
            integ
                .partitions()
                .iter()
                .filter_map(|p| p.lab())
                .flat_map(|lab| lab.seeds())
                .map(|(k, s)| json!({"source": k, "seed": s})),
        )
        .collect();
    let mut out = json!({
        "hybridsim_version": env!("CARGO_PKG_VERSION"),
        "model": {
            "path": loaded.path.display().to_string(),
            "sha256": loaded.sha256,
            "title": m.title,
            "units": { "length": m.units.length, "force": m.units.force, "time": m.units.time },
        },
        "settings": {
            "integrator": a.integrator.name(),
            "rho_inf": a.rho_inf,
            "time_step": a.time_step,
            "subcycles": a.subcycles,
            "physical_time_step": a.time_step / a.subcycles as f64,
            "duration": a.duration,
            "steps": a.n_steps(),
            "corrections": a.corrections,
            "start": format!("{:?}", a.start).to_lowercase(),
            "output_every": m.output.every,
        },
        "substructures": parts,
        "interface": interface,
        "rayleigh": rayleigh.map(|(alpha, beta)| json!({"alpha": alpha, "beta": beta})),
        "ground_motions": crate::inputs::ground_motion_json(m, &loaded.record_sha256),
        "warnings": crate::inputs::warnings_json(m),
        "nonlinear_solve": integ.nonlinear_solve().map(|r| nonlinear_solve_json(&r, a.time_step)),
        "random_seeds": seeds,
        "status": status,
        "error": error,
        "heartbeat": utc_timestamp(unix_now()),
        "heartbeat_unix": unix_now(),
        "steps_completed": steps,
        "time_reached": integ.time(),
        "rows_written": rows,
        "rows_on_disk": rows,
        "lab_rows_on_disk": lab_rows,
        "last_step_on_disk": last_step,
        "columns": sim.n_columns(),
        "files": { "results": sim.model.output.format.results_file_name(), "model": "model.toml" },
        "startup": startup.to_json(),
        "timing": {
            "started_unix": started,
            "wall_seconds": wall.as_secs_f64(),
            "step_seconds": step_time.as_secs_f64(),
            "mean_step_microseconds": if steps > 0 { step_time.as_secs_f64() * 1e6 / steps as f64 } else { 0.0 },
        },
    });
    // Unconverged steps of the converged nonlinear solve: an event among the warnings.
    if let (Some(r), Some(Value::Array(w))) = (integ.nonlinear_solve(), out.get_mut("warnings")) {
        if r.unconverged_steps > 0 {
            w.push(json!(unconverged_warning(&r, a.time_step)));
        }
        w.extend(singular_tangent_warnings(&r).into_iter().map(|s| json!(s)));
    }
    if let (Some(Value::Object(lab)), Value::Object(o)) = (lab, &mut out) {
        for (k, v) in lab {
            o.insert(k, v);
        }
        o["files"]["lab"] = json!("lab.csv");
        o["files"]["synchronization_plot"] = json!("synchronization.png");
    }
    RunJson {
        tree: out,
        dofs: integ
            .partitions()
            .iter()
            .map(|p| DofList::new(&p.state.dofs))
            .collect(),
    }
}

/// Run `loaded` to its end, writing the results folder `folder` (default [`RunOptions`]: an
/// existing non-empty folder is refused). See [`run_to_folder_with`].
pub fn run_to_folder(
    loaded: &LoadedModel,
    folder: &Path,
    progress: &AtomicU64,
    abort: &AtomicBool,
) -> Result<RunReport, RunError> {
    run_to_folder_with(loaded, folder, progress, abort, &RunOptions::default())
}

/// The heartbeat of run.json: every `period` of wall time, the start version `base` with the
/// counts of what is on disk, until `stop` closes.
fn journal_thread(
    path: PathBuf,
    mut journal: RunJson,
    disk: Arc<OnDisk>,
    time_step: f64,
    period: Duration,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("hybridsim-journal".into())
        .spawn(move || {
            let t0 = Instant::now();
            let mut reported = false;
            while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(period) {
                let base = &mut journal.tree;
                let steps = disk.steps.load(Ordering::Relaxed);
                let rows = disk.rows.load(Ordering::Acquire);
                let lab_rows = disk.lab_rows();
                let now = unix_now();
                base["heartbeat"] = json!(utc_timestamp(now));
                base["heartbeat_unix"] = json!(now);
                base["steps_completed"] = json!(steps);
                base["time_reached"] = json!(steps as f64 * time_step);
                base["rows_written"] = json!(rows);
                base["rows_on_disk"] = json!(rows);
                base["lab_rows_on_disk"] = json!(lab_rows);
                base["last_step_on_disk"] = json!(disk.last_step());
                base["timing"]["wall_seconds"] = json!(t0.elapsed().as_secs_f64());
                if let Some(lab) = base.get_mut("lab").and_then(Value::as_object_mut) {
                    lab.insert("lab_rows_written".into(), json!(lab_rows));
                }
                if let Err(e) = write_json_atomic(&path, &journal) {
                    if !reported {
                        eprintln!("warning: cannot update {} (heartbeat): {e}", path.display());
                        reported = true;
                    }
                }
            }
        })
        .expect("spawn journal thread")
}

/// Run `loaded` to its end, writing the results folder `folder`. `progress` is set to the
/// number of completed steps as the run goes (for a progress bar on another thread); `abort`
/// stops the run cleanly between steps (with a `[lab]`: through the safety layer, as an
/// operator abort).
///
/// Everything that can be checked is checked before the folder is touched (the model, the
/// integrator, the laboratory's measurement at rest), then the folder is prepared
/// ([`crate::prepare_folder`]: refused when not empty unless `opts.overwrite`). `run.json` is
/// a journal: written atomically at the start (`started`, then `running`), rewritten with a
/// heartbeat (UTC time, steps completed, rows and lab rows on disk, last step on disk) about
/// every second from a thread of its own, and at the end with the outcome, so that a killed
/// process leaves a folder that says how far it got. A write error (a full disk) stops the
/// test through the safety layer ([`hybridsim::runner::Fault::Recording`]), with every whole
/// row written before it on disk and no partial row; a panic in the run loop trips the
/// laboratories ([`hybridsim::runner::Fault::TaskPanic`]) and ends the run the same way.
pub fn run_to_folder_with(
    loaded: &LoadedModel,
    folder: &Path,
    progress: &AtomicU64,
    abort: &AtomicBool,
    opts: &RunOptions,
) -> Result<RunReport, RunError> {
    let build_start = Instant::now();
    let mut sim = Engine::new(&loaded.model, opts.connector.as_deref())?;
    // Online model updating ([updating], issue 14), resolved before the folder is touched.
    let n_steps = sim.n_steps();
    let mut updating =
        hybridsim::online_updating::OnlineUpdating::new(sim.model, sim.integ.as_mut(), n_steps)?;
    let dofs = sim.integrator().total_dofs();
    let startup = crate::startup::Startup::measure(build_start, dofs);
    crate::folder::prepare_folder(folder, opts.overwrite)?;
    let factory = opts.writer.clone().unwrap_or_else(crate::file_factory);
    let json_path = folder.join("run.json");
    let started = unix_now();
    let t0 = Instant::now();
    let lab_parts = sim.lab_partitions();
    let disk = Arc::new(OnDisk::new(lab_parts.len()));
    let journal = |sim: &Engine<'_>, status: &str, error: Option<String>| {
        let lab_rows = disk.lab_rows();
        run_json(
            loaded,
            sim,
            Progress {
                status,
                error,
                steps: disk.steps.load(Ordering::Relaxed),
                rows: disk.rows.load(Ordering::Acquire),
                started,
                wall: t0.elapsed(),
                step_time: Duration::ZERO,
                lab_rows: &lab_rows,
                last_step: disk.last_step(),
                indicators: &[],
                startup: &startup,
            },
        )
    };
    write_json(&json_path, &journal(&sim, "started", None))?;

    // The files; a failure here ends the run before any step, and run.json says so.
    let csv_path = folder.join(sim.model.output.format.results_file_name());
    let row_format = match sim.model.output.format {
        hybridsim::model::OutputFormat::Csv => crate::RowFormat::Csv,
        hybridsim::model::OutputFormat::Binary => crate::RowFormat::Binary,
    };
    let model_copy = folder.join("model.toml");
    let files = (|| {
        loaded
            .copy_model_to(&model_copy)
            .map_err(io_err(&model_copy))?;
        crate::inputs::write_ground_motions(folder, &loaded.model).map_err(io_err(folder))?;
        // The header (about 25 MB for a 10⁵-DOF chain's columns) is written a name at a
        // time, never held whole (issue 20).
        let header = RecorderHeader {
            recorder: &sim.recorder,
            integrator: sim.integ.as_ref(),
        };
        let results = RowFile::create_with(&factory, &csv_path, &header, row_format)
            .map_err(io_err(&csv_path))?;
        let mut labs = Vec::new();
        for (i, (_, name, cols)) in lab_parts.iter().enumerate() {
            let file = if i == 0 {
                "lab.csv".to_string()
            } else {
                format!("lab.{name}.csv")
            };
            let p = folder.join(file);
            let sink = RowFile::create(&factory, &p, &cols.join(",")).map_err(io_err(&p))?;
            labs.push((sink, cols.len(), LabLog::new(cols.clone()), p));
        }
        Ok::<_, RunError>((results, labs))
    })();
    let (results_file, lab_sinks) = match files {
        Ok(f) => f,
        Err(e) => {
            let _ = write_json(&json_path, &journal(&sim, "failed", Some(e.to_string())));
            return Err(e);
        }
    };

    let ncol = sim.n_columns();
    let queue = queue_rows(ncol);
    let buffers = queue_buffers(ncol);
    let (row_tx, row_rx) = sync_channel::<QueuedRow>(queue);
    let (free_tx, free_rx) = sync_channel::<Vec<f64>>(buffers);
    for _ in 0..buffers {
        let _ = free_tx.try_send(Vec::with_capacity(ncol));
    }
    // Text buffers of the columns spelled on the stepping thread (CSV only): each holds a
    // row's text up to text_row_bytes(), TEXT_BYTES of them in all (their pages are touched
    // only as far as a share is spelled).
    let shared = row_format == crate::RowFormat::Csv
        && (ncol >= MIN_SHARED_COLUMNS || opts.spelled_on_step.is_some());
    let text_row = if shared { text_row_bytes(ncol) } else { 0 };
    // One text buffer a value buffer at most: a queued row holds both (the stepping thread
    // spells into a text buffer, then waits for a value buffer, which the writer gives back
    // once the row it holds is spelled).
    let texts = TEXT_BYTES
        .checked_div(text_row)
        .map_or(0, |n| n.clamp(1, buffers));
    let (free_text_tx, free_text_rx) = sync_channel::<Vec<u8>>(texts.max(1));
    for _ in 0..texts {
        let _ = free_text_tx.try_send(Vec::with_capacity(text_row));
    }
    let writer_cpu_per_row = Arc::new(AtomicU64::new(0));
    let max_spelled = text_row / crate::csv::MAX_FIELD_BYTES;
    let spell = SpelledShare {
        columns: opts.spelled_on_step.unwrap_or(0).min(max_spelled),
        max: max_spelled,
        stride: (ncol / 64).max(1),
        fixed: opts.spelled_on_step.is_some(),
        last_cpu: 0,
        cpu_per_row: 0,
        writer_cpu_per_row: writer_cpu_per_row.clone(),
        free: free_text_rx,
        num: zmij::Buffer::new(),
    };
    let writer = writer_thread(
        results_file,
        row_rx,
        free_tx,
        free_text_tx,
        (shared && opts.spelled_on_step.is_none()).then_some(writer_cpu_per_row),
        disk.clone(),
    );

    // Lab records: one file per physical substructure with a laboratory.
    let lab_widths: Vec<usize> = lab_parts.iter().map(|(_, _, c)| c.len()).collect();
    let lab_io = (!lab_parts.is_empty()).then(|| {
        let (tx, rx) = sync_channel::<LabBatch>(QUEUE_LAB_BATCHES);
        let (free_tx, free_rx) = sync_channel::<Vec<f64>>(QUEUE_LAB_BATCHES + 2);
        let cap = lab_widths.iter().max().copied().unwrap_or(1)
            * (4 * sim.model.analysis.subcycles.max(1) + 16);
        for _ in 0..QUEUE_LAB_BATCHES + 2 {
            let _ = free_tx.try_send(Vec::with_capacity(cap));
        }
        LabQueue {
            tx,
            free: free_rx,
            handle: lab_writer_thread(lab_sinks, rx, free_tx, disk.clone()),
            batches: vec![None; lab_parts.len()],
            slots: lab_parts.iter().map(|(k, _, _)| *k).collect(),
            cap,
        }
    });
    let running = journal(&sim, "running", None);
    write_json(&json_path, &running)?;
    let (stop_journal, journal_stop) = sync_channel::<()>(1);
    let heartbeat = journal_thread(
        json_path.clone(),
        running,
        disk.clone(),
        sim.model.analysis.time_step,
        opts.heartbeat.unwrap_or(Duration::from_secs(1)),
        journal_stop,
    );
    let mut sink = FolderSink {
        rows: row_tx,
        free_rows: &free_rx,
        ncol,
        spell,
        lab: lab_io,
        progress,
        disk: &disk,
        steps: 0,
        panic_after: opts.panic_after_steps,
    };
    // The one run loop and trip policy of every runner (hybridsim::runner).
    let settings = hybridsim::runner::RunSettings {
        n_steps: sim.n_steps(),
        every: sim.model.output.every,
        divergence: sim.model.lab.as_ref().map(|l| l.safety.divergence),
        max_overruns: None,
    };
    let mut row = vec![0.0; ncol];
    let mut tap = hybridsim::runner::take_tap(&opts.tap);
    if let Some(tap) = tap.as_mut() {
        let columns: Vec<String> = sim.recorder.headers(sim.integ.as_ref());
        tap.start(&columns, &lab_parts);
    }
    let (end, panicked) = {
        let Engine {
            integ, recorder, ..
        } = &mut sim;
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
        let mut sequential = hybridsim::runner::Sequential(integ.as_mut());
        let mut with_updating;
        let exec: &mut dyn hybridsim::runner::StepExecutor = match updating.as_mut() {
            Some(updating) => {
                with_updating = hybridsim::online_updating::WithUpdating {
                    inner: &mut sequential,
                    updating,
                };
                &mut with_updating
            }
            None => &mut sequential,
        };
        // A panic anywhere in the loop trips the labs as after any fault and ramps them down
        // (or holds, as configured), the records of the stop and of every ramp tick kept.
        let (mut end, panicked) = hybridsim::runner::run_guarded(
            exec, recorder, sink_ref, &settings, abort, &mut row, "step",
        );
        if panicked.is_some() {
            // The steps the loop reported (`progress`), not the integrator's: a panic between
            // a step and its report leaves that step out, as the results do.
            end.steps = sink.steps;
        }
        (end, panicked)
    };
    let (status, steps, step_time) = (end.state, end.steps, end.step_time);
    let FolderSink {
        rows: row_tx, lab, ..
    } = sink;
    drop(row_tx);
    let written = writer.join().unwrap_or_else(|_| Written {
        rows: disk.rows.load(Ordering::Acquire),
        last_step: disk.last_step(),
        error: Some(std::io::Error::other("the results writer panicked")),
    });
    let lab_written = lab.map(|q| {
        drop(q.tx);
        drop(q.free);
        q.handle.join().unwrap_or_else(|_| LabWritten {
            rows: disk.lab_rows(),
            logs: Vec::new(),
            error: Some("the lab writer panicked".into()),
        })
    });
    drop(stop_journal);
    let _ = heartbeat.join();
    let wall = t0.elapsed();
    let (lab_rows, logs, lab_error) = match lab_written {
        None => (Vec::new(), Vec::new(), None),
        Some(w) => (w.rows, w.logs, w.error),
    };
    let mut indicators = Vec::new();
    if let Some(lab) = &sim.model.lab {
        for log in &logs {
            indicators.extend(log.indicators(lab.lab.time_scale.dt_c, MAX_INDICATOR_DELAY));
        }
        if let Some(log) = logs.first() {
            if log.len() > 1 && lab_error.is_none() && written.error.is_none() {
                let _ = log.plot_synchronization(
                    &folder.join("synchronization.png"),
                    &sim.model.units.length,
                );
            }
        }
    }
    // What went wrong besides the end state, first cause first.
    let mut problems: Vec<String> = Vec::new();
    if let Some(msg) = &panicked {
        problems.push(format!("panic in the run loop: {msg}"));
    }
    if let Some(e) = &written.error {
        problems.push(format!(
            "writing {}: {e} ({} whole rows on disk)",
            csv_path.display(),
            written.rows
        ));
    }
    if let Some(e) = &lab_error {
        problems.push(e.clone());
    }
    if let Some(u) = &updating {
        if let Err(e) = crate::updating::write_updating_csv(folder, u) {
            problems.push(e);
        }
    }
    let extra = (!problems.is_empty()).then(|| problems.join("; "));
    let status_name = match (&status, &extra) {
        (RunStatus::Completed, Some(_)) => "failed",
        (state, _) => state.status(),
    };
    let error = match (extra.clone(), status.fault()) {
        (None, None) => None,
        (Some(e), None) => Some(e),
        (None, Some(f)) => Some(f.to_string()),
        (Some(e), Some(f)) => Some(format!("{e}; {f}")),
    };
    let rows = written.rows;
    let mut final_json = run_json(
        loaded,
        &sim,
        Progress {
            status: status_name,
            error,
            steps,
            rows,
            started,
            wall,
            step_time,
            lab_rows: &lab_rows,
            last_step: written.last_step,
            indicators: &indicators,
            startup: &startup,
        },
    );
    if let Some(u) = &updating {
        final_json.tree["updating"] = crate::updating::updating_json(&u.summary());
    }
    if let Err(e) = write_json(&json_path, &final_json) {
        eprintln!(
            "error: the final run.json could not be written ({e}); it may still say `running`: \
             the run ended `{status_name}` after {steps} steps with {rows} rows in {}",
            csv_path.display()
        );
        return Err(e);
    }
    Ok(RunReport {
        folder: folder.to_path_buf(),
        steps,
        rows,
        status,
        wall_time: wall,
        step_time,
        lab_rows: lab_rows.first().copied().unwrap_or(0),
        indicators,
        safety: sim.safety().into_iter().map(|(_, s)| s).collect(),
        error: extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_json_is_rewritten_in_place_when_the_temporary_file_cannot_be_written() {
        let dir = std::env::temp_dir().join(format!("hybridsim-io-json-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.json");
        write_json_atomic(&path, &json!({"status": "running", "steps_completed": 0})).unwrap();
        let reserved = std::fs::metadata(&path).unwrap().len();
        assert_eq!(reserved % 4096, 0);
        // The temporary file cannot be created (as on a full disk): a folder is in its way.
        std::fs::create_dir_all(path.with_extension("json.tmp")).unwrap();
        let end = json!({"status": "stopped", "steps_completed": 123, "error": "disk full"});
        write_json_atomic(&path, &end).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), end);
        assert!(std::fs::metadata(&path).unwrap().len() <= reserved);
        // Longer than the space reserved: both failures are reported.
        let long = json!({"status": "stopped", "error": "x".repeat(20_000)});
        let e = write_json_atomic(&path, &long).unwrap_err().to_string();
        assert!(e.contains("in place failed too"), "{e}");
        assert_eq!(
            serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap()).unwrap(),
            end
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// run.json written through a buffer is the text padded as when it was held whole: the
    /// pretty text, a line end, spaces to whole 4 KiB blocks (at least 4, room for 4 KiB more)
    /// and a line end.
    #[test]
    fn run_json_written_through_a_buffer_is_the_padded_text() {
        let dir = std::env::temp_dir().join(format!("hybridsim-io-pad-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.json");
        for n in [0, 10, 1000, 20_000] {
            let v = json!({"list": (0..n).map(|i| format!("{i}.x")).collect::<Vec<_>>()});
            write_json_atomic(&path, &v).unwrap();
            let mut text = serde_json::to_string_pretty(&v).unwrap();
            let reserve = (text.len() + 4096).div_ceil(4096).max(4) * 4096;
            text.push('\n');
            text.extend(std::iter::repeat_n(' ', reserve - text.len() - 1));
            text.push('\n');
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{n}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn heartbeat_timestamps_are_utc() {
        assert_eq!(utc_timestamp(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_timestamp(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(utc_timestamp(1_795_651_200.0), "2026-11-26T00:00:00.000Z");
    }

    /// The DOF lists of run.json as runs of nodes: the same text as the lists of strings in
    /// the tree, for a chain, a frame with supports (nodes without DOFs), nodes out of order
    /// and irregular DOF sets; a chain's or a frame's list is one run, a few dozen bytes
    /// however long (the strings of a 10⁵-DOF chain's list were 7.8 MB held by the heartbeat).
    #[test]
    fn dof_lists_are_runs_of_nodes_written_as_the_strings() {
        use hybridsim::elements::DofRef;
        let chain: Vec<DofRef> = (1..=1000).map(|n| DofRef::new(n, "x")).collect();
        let frame: Vec<DofRef> = (5..=400)
            .flat_map(|n| ["x", "y", "rz"].map(|d| DofRef::new(n, d)))
            .collect();
        let mut irregular = vec![
            DofRef::new(7, "x"),
            DofRef::new(8, "x"),
            DofRef::new(8, "y"),
            DofRef::new(9, "y"),
            DofRef::new(9, "x"),
            DofRef::new(3, "x"),
            DofRef::new(4, "x"),
            DofRef::new(-2, "rz"),
            DofRef::new(-1, "rz"),
            DofRef::new(20, "x"),
            DofRef::new(22, "x"),
            DofRef::new(22, "y"),
            DofRef::new(22, "x"),
        ];
        irregular.extend((100..110).map(|n| DofRef::new(n, "z")));
        let bytes = |l: &DofList| {
            l.names.capacity() * std::mem::size_of::<hybridsim::elements::DofName>()
                + l.runs.capacity() * std::mem::size_of::<NodeRun>()
        };
        for (dofs, runs) in [
            (&chain[..], Some(1)),
            (&frame[..], Some(1)),
            (&irregular[..], None),
            (&[][..], Some(0)),
        ] {
            let list = DofList::new(dofs);
            if let Some(runs) = runs {
                assert_eq!(list.runs.len(), runs);
                assert!(bytes(&list) <= 64, "{} bytes", bytes(&list));
            }
            let strings: Vec<String> = dofs
                .iter()
                .map(|d| format!("{}.{}", d.node, d.dof))
                .collect();
            let tree = json!({"a": 1, "substructures": [
                {"dofs": Value::Null, "name": "s", "z": [1, 2]},
                {"dofs": Value::Null, "name": "t"},
            ], "z": {"b": [], "c": {}}});
            let mut whole = tree.clone();
            whole["substructures"][0]["dofs"] = json!(strings);
            whole["substructures"][1]["dofs"] = json!(["1.x"]);
            let run = RunJson {
                tree,
                dofs: vec![list, DofList::new(&[DofRef::new(1, "x")])],
            };
            assert_eq!(
                serde_json::to_string_pretty(&run).unwrap(),
                serde_json::to_string_pretty(&whole).unwrap()
            );
        }
    }

    /// The writer queue's buffers (the queued rows and the writer's) stay within a few MB
    /// however wide a row is, and hold at least a row: a 10⁵-DOF chain (600 001 columns) gets
    /// 1 queued row and 1 buffer (it had 4 and 6, then 1 and 2), a 10⁴-DOF one 14 rows, a
    /// narrow model 1024.
    #[test]
    fn the_writer_queue_is_sized_in_bytes() {
        let bytes = |ncol: usize| queue_buffers(ncol) * 8 * ncol;
        assert_eq!(queue_rows(600_001), 1);
        assert_eq!(queue_buffers(600_001), 1);
        assert_eq!(queue_rows(70_001), 14);
        assert_eq!(queue_rows(7), QUEUE_ROWS);
        for ncol in [1, 7, 1_000, 70_001, 100_000, 262_144, 600_001] {
            assert!(bytes(ncol) <= QUEUE_BYTES.max(8 * ncol), "{ncol} columns");
        }
        assert_eq!(bytes(600_001), 8 * 600_001);
        assert_eq!(bytes(2_000_000), 8 * 2_000_000);
    }

    /// The text buffer of the share spelled on the stepping thread holds a whole narrow row's
    /// text, 1 MiB of a row up to 4 × 41 943 columns, and a quarter of a wider row's (a
    /// recorded 10⁵-DOF frame's 780 001 columns: 4.9 MB, whose share was capped at 5 %).
    #[test]
    fn the_share_of_a_wide_row_is_a_fraction_of_it() {
        let field = crate::csv::MAX_FIELD_BYTES;
        assert_eq!(text_row_bytes(7_723), 7_723 * field);
        assert_eq!(text_row_bytes(70_001), TEXT_ROW_BYTES);
        assert_eq!(text_row_bytes(4 * 41_943), TEXT_ROW_BYTES);
        assert_eq!(text_row_bytes(780_001), 780_001 * field / 4);
        for ncol in [1, 512, 41_943, 100_000, 600_001, 780_001, 3_000_000] {
            let bytes = text_row_bytes(ncol);
            assert!(bytes <= ncol * field);
            assert!(bytes <= TEXT_ROW_BYTES.max(ncol * field / TEXT_ROW_FRACTION));
        }
    }
}
