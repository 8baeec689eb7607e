//! Results folders: CSV time histories through a bounded writer queue, and `run.json`.

use crate::LoadedModel;
use hybridsim::{Simulation, StepError};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Rows buffered between the simulation and the writer thread.
const QUEUE_ROWS: usize = 1024;

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

fn writer_thread(
    path: PathBuf,
    header: String,
    rows: Receiver<Vec<f64>>,
    recycle: SyncSender<Vec<f64>>,
) -> std::thread::JoinHandle<Result<u64, std::io::Error>> {
    std::thread::Builder::new()
        .name("hybridsim-writer".into())
        .spawn(move || {
            let mut out = BufWriter::with_capacity(1 << 16, File::create(&path)?);
            writeln!(out, "{header}")?;
            let mut count = 0u64;
            let mut last_flush = Instant::now();
            let mut line = String::with_capacity(4096);
            while let Ok(row) = rows.recv() {
                line.clear();
                for (i, x) in row.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    use std::fmt::Write as _;
                    let _ = write!(line, "{x:e}");
                }
                line.push('\n');
                out.write_all(line.as_bytes())?;
                count += 1;
                let _ = recycle.try_send(row);
                if last_flush.elapsed() > Duration::from_millis(200) {
                    out.flush()?;
                    last_flush = Instant::now();
                }
            }
            out.flush()?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            Ok(count)
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
}

fn run_json(loaded: &LoadedModel, sim: &Simulation, p: Progress) -> Value {
    let Progress {
        status,
        error,
        steps,
        rows,
        started,
        wall,
        step_time,
    } = p;
    let m = &sim.model;
    let a = &m.analysis;
    let integ = sim.integrator.as_ref();
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
    let interface: Vec<Value> = match integ.interface() {
        Some(iface) => iface
            .dofs
            .iter()
            .enumerate()
            .map(|(k, d)| {
                json!({
                    "dof": format!("{}.{}", d.dof.node, d.dof.dof),
                    "plus": integ.partitions()[d.plus].state.name,
                    "minus": integ.partitions()[d.minus].state.name,
                    "lambda0": integ.initial_multipliers().get(k),
                })
            })
            .collect(),
        None => Vec::new(),
    };
    let rayleigh = hybridsim::assembly::rayleigh_coefficients(m).ok().flatten();
    let seeds: Vec<Value> = m
        .ground_motions
        .iter()
        .filter_map(|g| {
            g.seed
                .map(|s| json!({"ground_motion": g.direction, "seed": s}))
        })
        .collect();
    json!({
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
    })
}

/// Run `loaded` to its end, writing the results folder `folder`. `progress` is set to the
/// number of completed steps as the run goes (for a progress bar on another thread); `abort`
/// stops the run cleanly between steps.
pub fn run_to_folder(
    loaded: &LoadedModel,
    folder: &Path,
    progress: &AtomicU64,
    abort: &AtomicBool,
) -> Result<RunReport, RunError> {
    std::fs::create_dir_all(folder).map_err(io_err(folder))?;
    let model_copy = folder.join("model.toml");
    std::fs::write(&model_copy, &loaded.text).map_err(io_err(&model_copy))?;
    let mut sim = Simulation::new(loaded.model.clone())?;
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

    let every = sim.model.output.every;
    let n_steps = sim.n_steps();
    let send = |sim: &mut Simulation| -> bool {
        let mut row = free_rx.recv().unwrap_or_else(|_| vec![0.0; ncol]);
        sim.record(&mut row);
        row_tx.send(row).is_ok()
    };
    let mut writer_ok = send(&mut sim);
    let mut status = RunStatus::Completed;
    let mut step_time = Duration::ZERO;
    let mut steps = 0u64;
    for n in 1..=n_steps {
        if abort.load(Ordering::Relaxed) {
            status = RunStatus::Aborted;
            break;
        }
        let ts = Instant::now();
        let r = sim.step();
        step_time += ts.elapsed();
        if let Err(error) = r {
            status = RunStatus::Failed { error };
            break;
        }
        steps = n;
        progress.store(n, Ordering::Relaxed);
        if n % every == 0 || n == n_steps {
            writer_ok = send(&mut sim);
            if !writer_ok {
                break;
            }
        }
    }
    drop(row_tx);
    let written = writer.join().expect("writer thread");
    let wall = t0.elapsed();
    let (status_name, error) = match (&status, &written) {
        (_, Err(e)) => (
            "failed",
            Some(format!("writing {}: {e}", csv_path.display())),
        ),
        (RunStatus::Completed, _) if !writer_ok => ("failed", Some("the writer stopped".into())),
        (RunStatus::Completed, _) => ("completed", None),
        (RunStatus::Failed { error }, _) => ("failed", Some(error.to_string())),
        (RunStatus::Aborted, _) => ("aborted", Some("aborted by the operator".into())),
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
    })
}
