//! `hybridsim realtime MODEL [--pacing fast|realtime]`: run a hybrid test on the real-time
//! runner, with the safety layer on every actuator. PG-α runs on the threaded multi-rate runner
//! (NS free step, PS substeps one per controller tick, link solution and an estimation slot on
//! separate threads); every other scheme that drives a `[lab]` (`explicit-rths`, …) runs on
//! the paced single-step runner (`hybridsim_rt::sequential`: one step per release on a
//! real-time thread, under a watchdog). Writes `results.csv`, the controller-rate `lab.csv`,
//! `run.json` (time scale, seeds, safety event, per-task timing, spin budget) and a
//! synchronization-subspace plot. Ctrl-C aborts through the safety path.

use anyhow::{Context, Result};
use hybridsim::model::lab::Pacing;
use hybridsim_rt::{RunOptions, RunStatus};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Arguments of `realtime`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML) with `[lab]`, `[safety]` and optionally `[runner]`.
    pub model: PathBuf,
    /// Results folder (default: results/<model name>).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// `realtime` (wall clock, one tick per Δt^C) or `fast` (same code, as fast as possible);
    /// default: `[runner] pacing`.
    #[arg(long)]
    pub pacing: Option<String>,
    /// Refuse to start without SCHED_FIFO even on the virtual lab.
    #[arg(long)]
    pub require_realtime: bool,
    /// Stop after this much simulated time (default: the analysis duration).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Test hook (hidden): make a task of the runner panic or stall once, `TASK:KIND:AT`
    /// with TASK numerical, physical, estimation or writer, KIND panic, stall or
    /// stall=SECONDS, AT a step (results rows for writer); see `hybridsim_rt::TaskFault`.
    #[arg(long, hide = true, value_name = "TASK:KIND:AT")]
    pub inject_fault: Option<String>,
    /// Test hook (hidden): the watchdog of the runner's tasks in seconds (with pacing `fast`
    /// the bound of a coarse step, default 10 s; see `hybridsim_rt::RunOptions::watchdog`).
    #[arg(long, hide = true, value_name = "SECONDS")]
    pub watchdog: Option<f64>,
    /// With realtime pacing on a virtual lab, run without real-time scheduling (no
    /// SCHED_FIFO): deadlines may be missed; run.json then says `"soft_realtime": true`.
    /// Without it such a run is refused. Never allowed with a non-virtual transfer system.
    #[arg(long)]
    pub allow_soft_realtime: bool,
    /// Write the timeline of every task activation (each physical tick, numerical step and
    /// link hand-off: CPU and instants) to `trace.csv` after the run (docs/realtime-pipeline.md);
    /// kept in buffers allocated before the loop.
    #[arg(long)]
    pub trace: bool,
    /// Clear the results folder first when it holds a previous run's results (a run.json, and
    /// only the images of `hybridsim plot` in plots/); without it a non-empty folder is refused.
    #[arg(long)]
    pub overwrite: bool,
    /// The live browser console.
    #[command(flatten)]
    pub console: super::console::ConsoleArgs,
}

/// Run on the real-time runner.
pub fn execute(args: Args) -> Result<ExitCode> {
    // The runner's copy for the results folder is the file read again (checked against the
    // SHA-256 of the text that was parsed): the text is not held through the validation nor
    // the run.
    let mut loaded = super::load_released(&args.model)?;
    // The runner's threads take both cores (link and numerical): `analysis.threads` is for
    // `hybridsim run` only.
    loaded.model.analysis.threads = 1;
    let pacing = match args.pacing.as_deref() {
        None => None,
        Some("fast") => Some(Pacing::Fast),
        Some("realtime") | Some("real-time") => Some(Pacing::Realtime),
        Some(other) => anyhow::bail!("--pacing: unknown pacing `{other}` (fast, realtime)"),
    };
    let inject = args
        .inject_fault
        .as_deref()
        .map(str::parse::<hybridsim_rt::TaskFault>)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--inject-fault: {e}"))?;
    let watchdog = match args.watchdog {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => {
            Some(std::time::Duration::from_secs_f64(s))
        }
        Some(s) => anyhow::bail!("--watchdog: a positive number of seconds up to 3600, found {s}"),
    };
    let folder = args
        .output
        .clone()
        .unwrap_or_else(|| default_folder(&args.model));
    // A console that cannot start (address, token) leaves the folder alone.
    let realtime = hybridsim_console::is_realtime(pacing, &loaded.model);
    let console = args.console.start(&loaded, "realtime", realtime)?;
    hybridsim_io::prepare_folder(&folder, args.overwrite)?;
    let code = run_lab(
        &loaded,
        &folder,
        pacing,
        Scheduling {
            require_realtime: args.require_realtime,
            allow_soft_realtime: args.allow_soft_realtime,
        },
        args.duration,
        TestHooks {
            inject,
            watchdog,
            trace: args.trace,
        },
    );
    if let Some(console) = console {
        console.finish(&folder);
    }
    code
}

/// Test hooks of `realtime` (hidden options): an injected task fault and the watchdog.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestHooks {
    /// Make a task of the runner panic or stall once.
    pub inject: Option<hybridsim_rt::TaskFault>,
    /// The watchdog of the runner's tasks.
    pub watchdog: Option<std::time::Duration>,
    /// Keep the tasks' timeline (`trace.csv`).
    pub trace: bool,
}

/// What `realtime` asks of the scheduler.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scheduling {
    /// Refuse to start without SCHED_FIFO even on the virtual lab.
    pub require_realtime: bool,
    /// Run realtime pacing on a virtual lab without SCHED_FIFO.
    pub allow_soft_realtime: bool,
}

/// Run a model with a `[lab]` on the real-time runner (threaded for PG-α, paced single-step
/// otherwise) and print the outcome. `folder` must be
/// empty or missing ([`hybridsim_io::prepare_folder`]): a refused start removes its files.
pub fn run_lab(
    loaded: &hybridsim_io::LoadedModel,
    folder: &Path,
    pacing: Option<Pacing>,
    scheduling: Scheduling,
    duration: Option<f64>,
    hooks: TestHooks,
) -> Result<ExitCode> {
    let model = &loaded.model;
    // SIGINT, SIGTERM and SIGHUP take the safety path: the loop sees the flag, trips every
    // actuator, stops cleanly (super::signals).
    let stop = super::signals::stop_flag();
    let abort = Arc::new(AtomicBool::new(false));
    let watch = abort.clone();
    std::thread::spawn(move || loop {
        if stop.load(Ordering::SeqCst) {
            watch.store(true, Ordering::SeqCst);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    });
    let max_steps = duration.map(|d| (d / model.analysis.time_step - 1e-9).ceil().max(0.0) as u64);
    let opts = RunOptions {
        pacing,
        folder: Some(folder.to_path_buf()),
        model_text: Some(
            loaded
                .model_text()
                .with_context(|| format!("{}", loaded.path.display()))?
                .into_owned(),
        ),
        model_sha256: Some(loaded.sha256.clone()),
        record_sha256: loaded.record_sha256.clone(),
        abort,
        max_steps,
        require_realtime: scheduling.require_realtime,
        allow_soft_realtime: scheduling.allow_soft_realtime,
        inject: hooks.inject,
        watchdog: hooks.watchdog,
        trace: hooks.trace,
        connector: Some(std::sync::Arc::new(hybridsim_net::NetConnector)),
        tap: super::console::take_slot(),
        ..Default::default()
    };
    if let Some(lab) = &model.lab {
        println!("{}", lab.lab.time_scale.describe(&model.units.time));
    }
    let out = match hybridsim_rt::run(model, &opts) {
        Ok(out) => out,
        Err(e) => {
            // A refused start (no real-time scheduling, a model the runner cannot drive) may
            // have created files in the folder, which was empty before: remove them, so that
            // the folder holds either a whole run or nothing.
            remove_files(folder);
            anyhow::bail!("{e}");
        }
    };
    print!("{}", out.summary());
    if let Some(w) = out.run_json["pacing_warning"].as_str() {
        eprintln!("warning: {w}");
    }
    if out.run_json["soft_realtime"] == serde_json::Value::Bool(true) {
        eprintln!(
            "warning: realtime pacing ran without real-time scheduling (--allow-soft-realtime): \
             deadlines may have been missed; see the task statistics above and run.json"
        );
    }
    match &out.status {
        RunStatus::Completed => {
            println!(
                "completed {} steps ({} rows, {} lab rows) in {:.3} s; results in {}",
                out.steps,
                out.rows_written,
                out.lab_rows,
                out.wall,
                folder.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        RunStatus::Stopped(ev) => {
            // The counts are those on disk (a failed writer keeps fewer rows than steps).
            eprintln!(
                "stopped after {} steps: {ev}; {} results rows and {} lab rows are in {}",
                out.steps,
                out.rows_written,
                out.lab_rows,
                folder.display()
            );
            if let Some(e) = out.run_json["error"].as_str() {
                eprintln!("error: {e}");
            }
            if let Some(note) = out.run_json["lab_not_ramped"].as_str() {
                eprintln!("warning: {note}");
            }
            Ok(ExitCode::from(1))
        }
        RunStatus::Failed(e) => {
            eprintln!(
                "error: the run failed after {} steps: {e}; {} results rows and {} lab rows are \
                 in {}",
                out.steps,
                out.rows_written,
                out.lab_rows,
                folder.display()
            );
            if let Some(note) = out.run_json["lab_not_ramped"].as_str() {
                eprintln!("warning: {note}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// Remove the files of `folder` (a folder that was empty before this run started).
fn remove_files(folder: &Path) {
    if let Ok(entries) = std::fs::read_dir(folder) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| !t.is_dir()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

fn default_folder(model: &Path) -> PathBuf {
    let stem = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    PathBuf::from("results").join(stem)
}
