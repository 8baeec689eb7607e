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

use crate::lab::{CsvSink, LabLog, TrackingIndicators};
use crate::LoadedModel;
use hybridsim::integrators::TimeIntegrator;
use hybridsim::output::{Column, Recorder};
use hybridsim::physical::{SafetyEvent, SafetySummary};
use hybridsim::{Model, ModelError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Rows buffered between the simulation and the writer thread.
const QUEUE_ROWS: usize = 1024;
/// Batches of lab records (one batch per physical substructure and coarse step) buffered
/// between the simulation and the lab writer thread.
const QUEUE_LAB_BATCHES: usize = 1024;
/// Largest delay searched by the cross-correlation delay indicator (s, wall clock).
const MAX_INDICATOR_DELAY: f64 = 0.25;

/// The integrator of a run with its recorder. Laboratories are reached between steps only
/// through their [`hybridsim::physical::LabControl`] handles (drain the lab records, trip on a
/// fault); the stepping is the same [`TimeIntegrator::step`] as [`hybridsim::Simulation`]'s.
struct Engine {
    model: Model,
    integ: Box<dyn TimeIntegrator>,
    recorder: Recorder,
}

impl Engine {
    fn new(model: Model) -> Result<Self, ModelError> {
        let integ = hybridsim::integrators::build(&model)?;
        let recorder = Recorder::new(&model, integ.as_ref());
        Ok(Self {
            model,
            integ,
            recorder,
        })
    }

    fn integrator(&self) -> &dyn TimeIntegrator {
        self.integ.as_ref()
    }

    fn columns(&self) -> &[Column] {
        self.recorder.columns()
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
    handle: std::thread::JoinHandle<Result<Vec<(u64, LabLog)>, std::io::Error>>,
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

/// The sink of `run`: rows to the results writer thread, lab records to the lab writer
/// thread, both through bounded queues of recycled buffers.
struct FolderSink<'a> {
    rows: SyncSender<Vec<f64>>,
    free_rows: &'a Receiver<Vec<f64>>,
    ncol: usize,
    lab: Option<LabQueue>,
    progress: &'a AtomicU64,
}

impl hybridsim::runner::RunSink for FolderSink<'_> {
    fn row(&mut self, row: &[f64]) -> bool {
        let mut buf = self
            .free_rows
            .recv()
            .unwrap_or_else(|_| vec![0.0; self.ncol]);
        buf.copy_from_slice(row);
        self.rows.send(buf).is_ok()
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
        self.progress.store(steps, Ordering::Relaxed);
    }
}

/// The lab writer: `lab.csv` (first physical substructure) and `lab.NAME.csv` (others), and
/// the logs for the indicators. Returns the rows written per file and the logs.
fn lab_writer_thread(
    mut sinks: Vec<(CsvSink, usize, LabLog)>,
    batches: Receiver<LabBatch>,
    recycle: SyncSender<Vec<f64>>,
) -> std::thread::JoinHandle<Result<Vec<(u64, LabLog)>, std::io::Error>> {
    std::thread::Builder::new()
        .name("hybridsim-lab-writer".into())
        .spawn(move || {
            let mut last_flush = Instant::now();
            while let Ok((i, rows)) = batches.recv() {
                let (sink, width, log) = &mut sinks[i];
                for row in rows.chunks_exact(*width) {
                    sink.write_row(row)?;
                    log.push(row);
                }
                let _ = recycle.try_send(rows);
                if last_flush.elapsed() > Duration::from_millis(200) {
                    for (s, _, _) in sinks.iter_mut() {
                        s.flush()?;
                    }
                    last_flush = Instant::now();
                }
            }
            let mut out = Vec::new();
            for (s, _, log) in sinks {
                out.push((s.finish()?, log));
            }
            Ok(out)
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
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn write_json(path: &Path, value: &Value) -> Result<(), RunError> {
    write_json_atomic(path, value).map_err(io_err(path))
}

/// Write `value` as pretty JSON to `path` atomically (a temporary file renamed over it), so
/// that a reader, or a run killed mid-write, never sees a truncated run.json.
pub fn write_json_atomic(path: &Path, value: &Value) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).expect("json");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

pub(crate) fn writer_thread(
    path: PathBuf,
    header: String,
    rows: Receiver<Vec<f64>>,
    recycle: SyncSender<Vec<f64>>,
) -> std::thread::JoinHandle<Result<u64, std::io::Error>> {
    std::thread::Builder::new()
        .name("hybridsim-writer".into())
        .spawn(move || {
            // The CSV writer and number format of every results file (shortest round trip).
            let mut out = CsvSink::create(&path, &header)?;
            let mut last_flush = Instant::now();
            while let Ok(row) = rows.recv() {
                out.write_row(&row)?;
                let _ = recycle.try_send(row);
                if last_flush.elapsed() > Duration::from_millis(200) {
                    out.flush()?;
                    last_flush = Instant::now();
                }
            }
            out.finish()
        })
        .expect("spawn writer thread")
}

fn unix_now() -> f64 {
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
    indicators: &'a [TrackingIndicators],
}

fn event_json(ev: &SafetyEvent) -> Value {
    let num = |x: f64| {
        if x.is_finite() {
            json!(x)
        } else if x.is_nan() {
            Value::Null
        } else {
            json!(format!("{x}"))
        }
    };
    json!({
        "kind": ev.kind.name(),
        "tick": ev.tick,
        "time": ev.time,
        "actuator": ev.actuator,
        "value": num(ev.value),
        "limit": num(ev.limit),
        "message": ev.to_string(),
    })
}

/// The lab part of `run.json` (time scale, safety, divergence criterion, indicators, seeds).
fn lab_json(sim: &Engine, p: &Progress) -> Option<Value> {
    let lab = sim.model.lab.as_ref()?;
    let safety: Vec<Value> = sim
        .safety()
        .iter()
        .map(|(name, s)| {
            json!({
                "substructure": name,
                "state": if s.armed { "armed" } else { "tripped" },
                "event": s.event.as_ref().map(event_json),
                "actuators": s.actuators,
                "max_command_sent": s.max_sent,
                "displacement_limits": s.limits.iter().map(|l| l.displacement).collect::<Vec<_>>(),
                "velocity_limits": s.limits.iter().map(|l| l.velocity).collect::<Vec<_>>(),
                "force_limits": s.limits.iter().map(|l| l.force).collect::<Vec<_>>(),
                "increment_limits": s.limits.iter().map(|l| l.increment).collect::<Vec<_>>(),
                "commands_sent": s.commands_sent,
                "lab_records_dropped": s.lab_records_dropped,
                "energy_generated": s.energy_generated,
                "energy_bound": if s.energy_bound.is_finite() { json!(s.energy_bound) } else { Value::Null },
            })
        })
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
            "energy_default": "1/8 k_hat u_b^2 (estimated actuator-space stiffness, |u| bound)",
        },
        "indicators": p.indicators.iter().map(|i| i.to_json()).collect::<Vec<_>>(),
    }))
}

fn run_json(loaded: &LoadedModel, sim: &Engine, p: Progress) -> Value {
    let lab = lab_json(sim, &p);
    let Progress {
        status,
        error,
        steps,
        rows,
        started,
        wall,
        step_time,
        ..
    } = p;
    let m = &sim.model;
    let a = &m.analysis;
    let integ = sim.integrator();
    let parts: Vec<Value> = integ
        .partitions()
        .iter()
        .map(|p| {
            json!({
                "name": p.state.name,
                "physical": p.state.physical,
                "dofs": p.state.dofs.iter().map(|d| format!("{}.{}", d.node, d.dof)).collect::<Vec<_>>(),
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
        "ground_motions": m.ground_motions.iter().map(|g| json!({
            "direction": g.direction, "description": g.description, "pga_g": g.pga_g, "seed": g.seed,
        })).collect::<Vec<_>>(),
        "random_seeds": seeds,
        "status": status,
        "error": error,
        "steps_completed": steps,
        "time_reached": integ.time(),
        "rows_written": rows,
        "columns": sim.columns().len(),
        "files": { "results": "results.csv", "model": "model.toml" },
        "timing": {
            "started_unix": started,
            "wall_seconds": wall.as_secs_f64(),
            "step_seconds": step_time.as_secs_f64(),
            "mean_step_microseconds": if steps > 0 { step_time.as_secs_f64() * 1e6 / steps as f64 } else { 0.0 },
        },
    });
    if let (Some(Value::Object(lab)), Value::Object(o)) = (lab, &mut out) {
        for (k, v) in lab {
            o.insert(k, v);
        }
        o["files"]["lab"] = json!("lab.csv");
        o["files"]["synchronization_plot"] = json!("synchronization.png");
    }
    out
}

/// Run `loaded` to its end, writing the results folder `folder`. `progress` is set to the
/// number of completed steps as the run goes (for a progress bar on another thread); `abort`
/// stops the run cleanly between steps (with a `[lab]`: through the safety layer, as an
/// operator abort).
pub fn run_to_folder(
    loaded: &LoadedModel,
    folder: &Path,
    progress: &AtomicU64,
    abort: &AtomicBool,
) -> Result<RunReport, RunError> {
    std::fs::create_dir_all(folder).map_err(io_err(folder))?;
    let model_copy = folder.join("model.toml");
    std::fs::write(&model_copy, &loaded.text).map_err(io_err(&model_copy))?;
    let mut sim = Engine::new(loaded.model.clone())?;
    let json_path = folder.join("run.json");
    let started = unix_now();
    let t0 = Instant::now();
    write_json(
        &json_path,
        &run_json(
            loaded,
            &sim,
            Progress {
                status: "running",
                error: None,
                steps: 0,
                rows: 0,
                started,
                wall: Duration::ZERO,
                step_time: Duration::ZERO,
                lab_rows: &[],
                indicators: &[],
            },
        ),
    )?;

    let header = sim
        .columns()
        .iter()
        .map(|c| c.header())
        .collect::<Vec<_>>()
        .join(",");
    let ncol = sim.columns().len();
    let (row_tx, row_rx) = sync_channel::<Vec<f64>>(QUEUE_ROWS);
    let (free_tx, free_rx) = sync_channel::<Vec<f64>>(QUEUE_ROWS + 2);
    for _ in 0..QUEUE_ROWS + 2 {
        let _ = free_tx.try_send(vec![0.0; ncol]);
    }
    let csv_path = folder.join("results.csv");
    let writer = writer_thread(csv_path.clone(), header, row_rx, free_tx);

    // Lab records: one sink per physical substructure with a laboratory.
    let lab_parts = sim.lab_partitions();
    let mut lab_sinks = Vec::new();
    for (i, (_, name, cols)) in lab_parts.iter().enumerate() {
        let file = if i == 0 {
            "lab.csv".to_string()
        } else {
            format!("lab.{name}.csv")
        };
        let p = folder.join(file);
        let sink = CsvSink::create(&p, &cols.join(",")).map_err(io_err(&p))?;
        lab_sinks.push((sink, cols.len(), LabLog::new(cols.clone())));
    }
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
            handle: lab_writer_thread(std::mem::take(&mut lab_sinks), rx, free_tx),
            batches: vec![None; lab_parts.len()],
            slots: lab_parts.iter().map(|(k, _, _)| *k).collect(),
            cap,
        }
    });
    let mut sink = FolderSink {
        rows: row_tx,
        free_rows: &free_rx,
        ncol,
        lab: lab_io,
        progress,
    };
    // The one run loop and trip policy of every runner (hybridsim::runner).
    let settings = hybridsim::runner::RunSettings {
        n_steps: sim.n_steps(),
        every: sim.model.output.every,
        divergence: sim.model.lab.as_ref().map(|l| l.safety.divergence),
        max_overruns: None,
    };
    let mut row = vec![0.0; ncol];
    let end = {
        let Engine {
            integ, recorder, ..
        } = &mut sim;
        hybridsim::runner::run(
            &mut hybridsim::runner::Sequential(integ.as_mut()),
            recorder,
            &mut sink,
            &settings,
            abort,
            &mut row,
        )
    };
    let (status, steps, step_time) = (end.state, end.steps, end.step_time);
    let FolderSink {
        rows: row_tx, lab, ..
    } = sink;
    drop(row_tx);
    let written = writer.join().expect("writer thread");
    let lab_written = lab.map(|q| {
        drop(q.tx);
        drop(q.free);
        q.handle.join().expect("lab writer thread")
    });
    let wall = t0.elapsed();
    let (lab_rows, logs, lab_error) = match lab_written {
        None => (Vec::new(), Vec::new(), None),
        Some(Ok(v)) => {
            let (rows, logs): (Vec<u64>, Vec<LabLog>) = v.into_iter().unzip();
            (rows, logs, None)
        }
        Some(Err(e)) => (
            Vec::new(),
            Vec::new(),
            Some(format!("writing {}: {e}", folder.join("lab.csv").display())),
        ),
    };
    let mut indicators = Vec::new();
    if let Some(lab) = &sim.model.lab {
        for log in &logs {
            indicators.extend(log.indicators(lab.lab.time_scale.dt_c, MAX_INDICATOR_DELAY));
        }
        if let Some(log) = logs.first() {
            if log.len() > 1 {
                let _ = log.plot_synchronization(
                    &folder.join("synchronization.png"),
                    &sim.model.units.length,
                );
            }
        }
    }
    let (status_name, error) = match (&status, &written, &lab_error) {
        (_, Err(e), _) => (
            "failed",
            Some(format!("writing {}: {e}", csv_path.display())),
        ),
        (_, _, Some(e)) => ("failed", Some(e.clone())),
        (RunStatus::Completed, _, _) => ("completed", None),
        (state, _, _) => (state.status(), state.fault().map(|f| f.to_string())),
    };
    let rows = *written.as_ref().unwrap_or(&0);
    write_json(
        &json_path,
        &run_json(
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
                indicators: &indicators,
            },
        ),
    )?;
    if let Err(e) = written {
        return Err(RunError::Io {
            path: csv_path.display().to_string(),
            source: e,
        });
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
    })
}
