//! Results folders: CSV time histories through a bounded writer queue, and `run.json`.
//!
//! A model with a `[lab]` runs on the same single-threaded path (the threaded runner is
//! `hybridsim realtime`); after every coarse step the lab provider's controller-rate records
//! (one per Δt^C) are drained into recycled buffers and sent through a second bounded queue to
//! a lab writer thread (`lab.csv`, one file per physical substructure), so that no file I/O
//! happens inside a step. `run.json` then also holds the time scale, the seeds of the virtual
//! lab, the safety state and event of every physical substructure, the divergence criterion and
//! the tracking indicators ([`crate::lab`]); `synchronization.png` plots measured against
//! desired displacement.

use crate::lab::{CsvSink, LabLog, TrackingIndicators};
use crate::LoadedModel;
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{PgAlpha, TimeIntegrator};
use hybridsim::model::IntegratorKind;
use hybridsim::output::{Column, Recorder};
use hybridsim::physical::safety::DivergenceMonitor;
use hybridsim::physical::{EventKind, SafetyEvent, SafetySummary};
use hybridsim::{Model, ModelError, StepError};
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

/// The integrator of a run with its recorder. Models with a `[lab]` keep the concrete PG-α
/// integrator so that the lab providers of its physical partitions can be reached between
/// steps (drain the lab records, trip on an abort); the stepping is the same
/// [`TimeIntegrator::step`] as [`hybridsim::Simulation`]'s.
struct Engine {
    model: Model,
    integ: Integ,
    recorder: Recorder,
}

enum Integ {
    Boxed(Box<dyn TimeIntegrator>),
    Pg(Box<PgAlpha>),
}

impl Engine {
    fn new(model: Model) -> Result<Self, ModelError> {
        let a = &model.analysis;
        let integ = if model.lab.is_some() && a.integrator == IntegratorKind::PgAlpha {
            let parts = build_partitions(&model, Grouping::Partitioned)?;
            let pg = PgAlpha::new(
                parts,
                a.rho_inf,
                a.time_step,
                a.subcycles,
                a.corrections,
                a.start,
                0.0,
            )
            .map_err(|e| ModelError::single(&model.source, "analysis", e))?;
            Integ::Pg(Box::new(pg))
        } else {
            Integ::Boxed(hybridsim::integrators::build(&model)?)
        };
        let recorder = match &integ {
            Integ::Boxed(b) => Recorder::new(&model, b.as_ref()),
            Integ::Pg(p) => Recorder::new(&model, p.as_ref()),
        };
        Ok(Self {
            model,
            integ,
            recorder,
        })
    }

    fn integrator(&self) -> &dyn TimeIntegrator {
        match &self.integ {
            Integ::Boxed(b) => b.as_ref(),
            Integ::Pg(p) => p.as_ref(),
        }
    }

    fn integrator_mut(&mut self) -> &mut dyn TimeIntegrator {
        match &mut self.integ {
            Integ::Boxed(b) => b.as_mut(),
            Integ::Pg(p) => p.as_mut(),
        }
    }

    fn columns(&self) -> &[Column] {
        self.recorder.columns()
    }

    fn n_steps(&self) -> u64 {
        self.model.analysis.n_steps()
    }

    fn step(&mut self) -> Result<(), StepError> {
        self.integrator_mut().step()
    }

    fn record(&mut self, row: &mut [f64]) {
        let Self {
            integ, recorder, ..
        } = self;
        match integ {
            Integ::Boxed(b) => recorder.record(b.as_mut(), row),
            Integ::Pg(p) => recorder.record(p.as_mut(), row),
        }
    }

    /// Physical partitions with a lab provider: (partition index, lab columns).
    fn lab_partitions(&self) -> Vec<(usize, String, Vec<String>)> {
        self.integrator()
            .partitions()
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                let cols = p.provider.as_ref()?.lab_columns();
                (!cols.is_empty()).then(|| (k, p.state.name.clone(), cols))
            })
            .collect()
    }

    /// Hand the lab records of partition `k` to `sink` (allocation-free).
    fn drain_lab(&mut self, k: usize, sink: &mut dyn FnMut(&[f64])) {
        if let Integ::Pg(pg) = &mut self.integ {
            if let Some(mut ph) = pg.free_phases().nth(k) {
                if let Some(p) = ph.partition_mut().provider.as_mut() {
                    p.drain_lab(sink);
                }
            }
        }
    }

    /// Trip the safety layer of every physical partition (operator abort, divergence of Λ).
    fn trip_all(&mut self, kind: EventKind, t: f64) {
        if let Integ::Pg(pg) = &mut self.integ {
            for mut ph in pg.free_phases() {
                if let Some(p) = ph.partition_mut().provider.as_mut() {
                    p.trip(kind, t);
                }
            }
        }
    }

    fn safety(&self) -> Vec<(String, SafetySummary)> {
        self.integrator()
            .partitions()
            .iter()
            .filter_map(|p| Some((p.state.name.clone(), p.provider.as_ref()?.safety_summary()?)))
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
    /// A buffer kept back when a drain found nothing.
    spare: Option<Vec<f64>>,
    /// Partition index of each lab file.
    slots: Vec<usize>,
    cap: usize,
}

impl LabQueue {
    /// Drain the lab records of every provider into recycled buffers and queue them for the
    /// writer (blocking when the bounded queue is full: `run` has no wall-clock deadline, and
    /// dropping hybrid-test data is not an option). `false` when the writer has stopped.
    fn drain(&mut self, sim: &mut Engine) -> bool {
        let mut ok = true;
        for (i, &k) in self.slots.iter().enumerate() {
            let mut buf = self
                .spare
                .take()
                .or_else(|| self.free.try_recv().ok())
                .unwrap_or_else(|| Vec::with_capacity(self.cap));
            buf.clear();
            sim.drain_lab(k, &mut |r: &[f64]| buf.extend_from_slice(r));
            if buf.is_empty() {
                self.spare = Some(buf);
            } else {
                ok &= self.tx.send((i, buf)).is_ok();
            }
        }
        ok
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

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    /// Every step done.
    Completed,
    /// Stopped by a step failure after `steps` completed steps.
    Failed {
        /// The failure.
        error: StepError,
    },
    /// Stopped on request.
    Aborted,
}

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
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).expect("json");
    std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
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
                "specimen": p.provider.as_ref().map(|pr| pr.describe()),
                "provider_queries": p.provider_calls,
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
                .filter_map(|p| p.provider.as_ref())
                .flat_map(|p| p.seeds())
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

    // Lab records: one sink per physical substructure with a lab provider.
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
    let mut lab_io = (!lab_parts.is_empty()).then(|| {
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
            spare: None,
            slots: lab_parts.iter().map(|(k, _, _)| *k).collect(),
            cap,
        }
    });
    // Drains every lab provider into recycled buffers and queues them (no file I/O here).
    let drain = |sim: &mut Engine, q: &mut Option<LabQueue>| -> bool {
        match q {
            Some(q) => q.drain(sim),
            None => true,
        }
    };

    let every = sim.model.output.every;
    let n_steps = sim.n_steps();
    let divergence = sim
        .model
        .lab
        .as_ref()
        .map(|l| DivergenceMonitor::new(l.safety.divergence));
    let send = |sim: &mut Engine| -> bool {
        let mut row = free_rx.recv().unwrap_or_else(|_| vec![0.0; ncol]);
        sim.record(&mut row);
        row_tx.send(row).is_ok()
    };
    let mut writer_ok = send(&mut sim);
    writer_ok &= drain(&mut sim, &mut lab_io);
    let mut status = RunStatus::Completed;
    let mut step_time = Duration::ZERO;
    let mut steps = 0u64;
    // One clock read per step: the end of a step starts the next one, unless rows, lab
    // records or the divergence check came in between (the clock is then read again after
    // them, so `step_time` stays the time inside steps). A countdown replaces `n % every`.
    let reread = lab_io.is_some() || divergence.is_some();
    let mut until_row = every.max(1);
    let mut ts = Instant::now();
    for n in 1..=n_steps {
        if abort.load(Ordering::Relaxed) {
            let t = sim.integrator().time();
            sim.trip_all(EventKind::OperatorAbort, t);
            status = RunStatus::Aborted;
            break;
        }
        let r = sim.step();
        let te = Instant::now();
        step_time += te - ts;
        ts = te;
        if let Err(error) = r {
            // Any failure of a step takes the safety path before the run stops: non-finite
            // states are a divergence, anything else a transfer-system fault.
            let t = sim.integrator().time();
            let kind = match error {
                StepError::NonFinite { .. } => EventKind::Divergence,
                _ => EventKind::TransferFault,
            };
            sim.trip_all(kind, t);
            status = RunStatus::Failed { error };
            break;
        }
        steps = n;
        progress.store(n, Ordering::Relaxed);
        writer_ok &= drain(&mut sim, &mut lab_io);
        until_row -= 1;
        let row_sent = until_row == 0 || n == n_steps;
        if row_sent {
            writer_ok &= send(&mut sim);
            until_row = every.max(1);
        }
        if !writer_ok {
            // Losing results is a safety event: stop the actuators before stopping the run.
            let t = sim.integrator().time();
            sim.trip_all(EventKind::WriterOverflow, t);
            break;
        }
        // Divergence of the multipliers (|Λ| bound, non-finite) takes the safety path.
        if let Some(value) = divergence
            .as_ref()
            .and_then(|d| d.observe_force(sim.integrator().multipliers()))
        {
            let t = sim.integrator().time();
            sim.trip_all(EventKind::Divergence, t);
            status = RunStatus::Failed {
                error: StepError::Physical {
                    substructure: "interface".into(),
                    reason: format!(
                        "divergence at t = {t} s: |Λ| = {value:e} beyond the bound {:e} of \
                         [safety.divergence] force; no further command was sent",
                        sim.model
                            .lab
                            .as_ref()
                            .map(|l| l.safety.divergence.force)
                            .unwrap_or(f64::NAN)
                    ),
                },
            };
            break;
        }
        if row_sent || reread {
            ts = Instant::now();
        }
    }
    // The records of the last (possibly failed) step and of a trip.
    writer_ok &= drain(&mut sim, &mut lab_io);
    drop(row_tx);
    let written = writer.join().expect("writer thread");
    let lab_written = lab_io.map(|q| {
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
        (RunStatus::Completed, _, _) if !writer_ok => ("failed", Some("the writer stopped".into())),
        (RunStatus::Completed, _, _) => ("completed", None),
        (RunStatus::Failed { error }, _, _) => ("failed", Some(error.to_string())),
        (RunStatus::Aborted, _, _) => ("aborted", Some("aborted by the operator".into())),
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
