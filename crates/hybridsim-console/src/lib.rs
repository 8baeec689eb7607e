//! The live test console of hybridsim: watch a running hybrid test in a browser and stop it
//! safely.
//!
//! `hybridsim run|realtime MODEL --console [ADDR:PORT]` hands the runner a [`SnapshotTap`]
//! (through [`hybridsim::runner::TapSlot`]): the run loop copies every results row, lab record
//! and step mark into a bounded, preallocated, lossy ring ([`ring`]) and never waits for the
//! console. The console's own threads ([`server`]) read the ring, keep the picture of the run
//! ([`state`]: command against measured displacement, their synchronization subspace, the
//! specimen's force–displacement loop, tracking delay, normalized RMS and peak errors as in
//! Silva et al. (2020), interface Λ, safety state with the margins to the limits, step timing
//! and deadline misses, the run's metadata) and send it to each browser as Server-Sent Events
//! through a bounded queue of its own. The page and its drawing code are part of the binary
//! (hand-written canvas plots; nothing is fetched at run time).
//!
//! The page's stop button requests the same safe stop as Ctrl-C (the front end's stop flag):
//! a first press arms it and answers a one-time code, a second press within
//! [`server::CONFIRM_WINDOW`] confirms it; the run loop then trips every actuator with an
//! `operator_abort` and holds or ramps down as configured. On a non-loopback address a token
//! is required ([`ConsoleOptions::token`]); the page passes it from its own URL
//! (`?token=…`).
//!
//! [`replay`] serves the same page from a finished results folder (`hybridsim console DIR`).

#![warn(missing_docs)]

pub mod ring;
pub mod server;
pub mod state;

pub use ring::{snapshot_ring, Frame, Layout, SnapshotReader, SnapshotTap};
pub use server::{Console, ConsoleError, ConsoleOptions, StopRequest};
pub use state::{Limits, Meta, State};

use hybridsim::model::lab::Pacing;
use hybridsim::runner::{RecordTap, TapSlot};
use hybridsim::Model;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The console's metadata of a model about to run: title, scheme, time steps, time scale,
/// transfer system, pacing and the safety limits of every actuator. `realtime`: the run is
/// paced by the wall clock (its coarse steps have deadlines).
pub fn meta_from_model(model: &Model, model_path: &str, runner: &str, realtime: bool) -> Meta {
    let a = &model.analysis;
    let mut info = json!({
        "mode": "live",
        "runner": runner,
        "title": model.title,
        "model": model_path,
        "integrator": a.integrator.name(),
        "time_step": a.time_step,
        "subcycles": a.subcycles,
        "duration": a.duration,
        "steps": a.n_steps(),
        "units": { "length": model.units.length, "force": model.units.force, "time": model.units.time },
        "pacing": if realtime { "realtime" } else { "fast" },
    });
    let mut meta = Meta {
        n_steps: a.n_steps(),
        ..Meta::default()
    };
    if let Some(lab) = &model.lab {
        let ts = &lab.lab.time_scale;
        meta.dt_c = ts.dt_c;
        meta.step_deadline = realtime.then_some(ts.dt_s);
        info["time_scale"] = json!(ts.describe(&model.units.time));
        info["transfer"] = json!(lab.lab.transfer.name());
        info["seed"] = json!(lab.lab.seed);
        info["on_trip"] = json!(format!("{:?}", lab.safety.on_trip));
        for (name, l) in &lab.safety.limits {
            meta.limits.push((
                name.clone(),
                Limits {
                    displacement: l.displacement,
                    velocity: l.velocity,
                    force: l.force,
                },
            ));
        }
    }
    meta.info = info;
    meta
}

/// Whether `[runner] pacing` (or the front end's override) paces the run by the wall clock.
pub fn is_realtime(pacing: Option<Pacing>, model: &Model) -> bool {
    match pacing {
        Some(p) => p == Pacing::Realtime,
        None => model
            .lab
            .as_ref()
            .is_some_and(|l| l.runner.pacing == Pacing::Realtime),
    }
}

/// A live console: start the server on `opts.addr` and return it with the slot to hand the
/// runner (`RunOptions::tap` of hybridsim-io or hybridsim-rt).
pub fn live(meta: Meta, opts: ConsoleOptions) -> Result<(Console, TapSlot), ConsoleError> {
    let (tap, reader) = snapshot_ring(ring::DEFAULT_CAPACITY);
    let console = Console::start(reader, State::new(meta), opts)?;
    let slot: TapSlot = Arc::new(Mutex::new(Some(Box::new(tap) as Box<dyn RecordTap>)));
    Ok((console, slot))
}

/// Errors of [`replay`].
#[derive(Debug)]
pub enum ReplayError {
    /// A file of the folder cannot be read.
    File(String, String),
    /// The console could not start.
    Console(ConsoleError),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::File(p, e) => write!(f, "{p}: {e}"),
            ReplayError::Console(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReplayError {}

type Table = (Vec<String>, Vec<Vec<f64>>);

fn read_table(path: &Path) -> Result<Table, ReplayError> {
    let err =
        |e: &dyn std::fmt::Display| ReplayError::File(path.display().to_string(), e.to_string());
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .map_err(|e| err(&e))?;
    let headers: Vec<String> = r
        .headers()
        .map_err(|e| err(&e))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| err(&e))?;
        let row: Result<Vec<f64>, _> = rec.iter().map(|v| v.trim().parse::<f64>()).collect();
        let row = row.map_err(|e| err(&format!("row {}: {e}", i + 2)))?;
        if row.len() != headers.len() {
            return Err(err(&format!(
                "row {}: {} values for {} columns",
                i + 2,
                row.len(),
                headers.len()
            )));
        }
        rows.push(row);
    }
    Ok((headers, rows))
}

/// A binary results file (`results.bin`, [`hybridsim_plot::binary`]) as a table of rows; a
/// partial last row is ignored and reported on stderr.
fn read_binary_table(path: &Path) -> Result<Table, ReplayError> {
    let err =
        |e: &dyn std::fmt::Display| ReplayError::File(path.display().to_string(), e.to_string());
    let bytes = std::fs::read(path).map_err(|e| err(&e))?;
    let header = hybridsim_plot::binary::parse_header(&bytes, path).map_err(|e| err(&e))?;
    let b = hybridsim_plot::binary::parse(&bytes, path).map_err(|e| err(&e))?;
    if let Some(note) = b.partial_row_note(path) {
        eprintln!("warning: {note}");
    }
    let rows = (0..b.table.rows())
        .map(|k| b.table.columns.iter().map(|c| c[k]).collect())
        .collect();
    Ok((header.cells, rows))
}

/// Serve the page replaying the finished results folder `folder` (`results.csv` or
/// `results.bin`, `lab.csv`
/// and `lab.NAME.csv`, `run.json`) at `speed` × the test's pace (0: at once). Returns the
/// console; the replay runs on its own thread and the page shows the run's outcome at the
/// end. The page offers no stop control.
pub fn replay(folder: &Path, speed: f64, opts: ConsoleOptions) -> Result<Console, ReplayError> {
    let run_json: Value = {
        let p = folder.join("run.json");
        let text = std::fs::read_to_string(&p)
            .map_err(|e| ReplayError::File(p.display().to_string(), e.to_string()))?;
        serde_json::from_str(&text)
            .map_err(|e| ReplayError::File(p.display().to_string(), e.to_string()))?
    };
    let results = if !folder.join("results.csv").exists() && folder.join("results.bin").exists() {
        read_binary_table(&folder.join("results.bin"))?
    } else {
        read_table(&folder.join("results.csv"))?
    };
    let mut labs: Vec<(String, Table)> = Vec::new();
    if folder.join("lab.csv").exists() {
        let name = run_json["safety"][0]["substructure"]
            .as_str()
            .unwrap_or("lab")
            .to_string();
        labs.push((name, read_table(&folder.join("lab.csv"))?));
    }
    let mut extra: Vec<_> = std::fs::read_dir(folder)
        .map_err(|e| ReplayError::File(folder.display().to_string(), e.to_string()))?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let sub = n.strip_prefix("lab.")?.strip_suffix(".csv")?.to_string();
            Some((sub, e.path()))
        })
        .collect();
    extra.sort();
    for (sub, p) in extra {
        labs.push((sub, read_table(&p)?));
    }
    let ts = &run_json["time_scale"];
    let mut meta = Meta {
        dt_c: ts["dt_C_wall"].as_f64().unwrap_or(0.0),
        step_deadline: None,
        n_steps: run_json["settings"]["steps"].as_u64().unwrap_or(0),
        ..Meta::default()
    };
    if let Some(safety) = run_json["safety"].as_array() {
        for s in safety {
            let names = s["actuators"].as_array().cloned().unwrap_or_default();
            for (i, n) in names.iter().enumerate() {
                let get = |k: &str| s[k][i].as_f64().unwrap_or(0.0);
                meta.limits.push((
                    n.as_str().unwrap_or("").to_string(),
                    Limits {
                        displacement: get("displacement_limits"),
                        velocity: get("velocity_limits"),
                        force: get("force_limits"),
                    },
                ));
            }
        }
    }
    meta.info = json!({
        "mode": "replay",
        "folder": folder.display().to_string(),
        "title": run_json["model"]["title"],
        "model": run_json["model"]["path"],
        "integrator": run_json["settings"]["integrator"],
        "time_step": run_json["settings"]["time_step"],
        "subcycles": run_json["settings"]["subcycles"],
        "duration": run_json["settings"]["duration"],
        "steps": run_json["settings"]["steps"],
        "units": run_json["model"]["units"],
        "pacing": "replay",
        "time_scale": ts,
    });
    let outcome = json!({
        "status": run_json["status"],
        "safety_event": run_json["safety_event"],
        "error": run_json["error"],
        "steps": run_json["steps_completed"],
    });
    let (tap, reader) = snapshot_ring(ring::DEFAULT_CAPACITY);
    let mut tap = tap.blocking();
    // The layout goes into the ring before the server's first tick, so that the first page
    // (its `init`) already lists the actuators: a replay knows them from the start.
    let layout: Vec<(usize, String, Vec<String>)> = labs
        .iter()
        .enumerate()
        .map(|(j, (n, (h, _)))| (j, n.clone(), h.clone()))
        .collect();
    tap.start(&results.0, &layout);
    let mut state = State::new(meta);
    state.set_outcome(outcome);
    let console = Console::start(reader, state, ConsoleOptions { stop: None, ..opts })
        .map_err(ReplayError::Console)?;
    let every = run_json["settings"]["output_every"]
        .as_u64()
        .unwrap_or(1)
        .max(1);
    std::thread::Builder::new()
        .name("hybridsim-console-replay".into())
        .spawn(move || feed(&mut tap, results, labs, speed, every))
        .expect("spawn replay thread");
    Ok(console)
}

/// Hand the records of a folder to the tap in time order, paced at `speed` × test time (the
/// layout is already in the tap).
fn feed(tap: &mut SnapshotTap, results: Table, labs: Vec<(String, Table)>, speed: f64, every: u64) {
    let t_col = results
        .0
        .iter()
        .position(|c| c.starts_with("time["))
        .unwrap_or(0);
    let start = std::time::Instant::now();
    let mut next = vec![0usize; labs.len()];
    let pace = |t: f64| {
        if speed > 0.0 && t.is_finite() {
            let due = Duration::from_secs_f64((t / speed).max(0.0));
            let now = start.elapsed();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    };
    let t0 = results.1.first().map_or(0.0, |r| r[t_col]);
    for (i, row) in results.1.iter().enumerate() {
        let t = row[t_col];
        for (j, (_, (_, rows))) in labs.iter().enumerate() {
            while next[j] < rows.len() && rows[next[j]][0] <= t {
                pace(rows[next[j]][0] - t0);
                tap.lab_record(j, &rows[next[j]]);
                next[j] += 1;
            }
        }
        pace(t - t0);
        tap.row(row);
        tap.step(i as u64 * every);
    }
    // The records after the last row (the ramp-down of a stopped test).
    for (j, (_, (_, rows))) in labs.iter().enumerate() {
        for r in &rows[next[j]..] {
            pace(r[0] - t0);
            tap.lab_record(j, r);
        }
    }
}
