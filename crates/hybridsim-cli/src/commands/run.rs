//! `hybridsim run MODEL [-o DIR]`. With a `[lab]` the physical substructures are tested on the
//! transfer system (the virtual lab by default) behind the safety layer, single-threaded and as
//! fast as possible; the folder then also holds the controller-rate `lab.csv`, and `run.json`
//! the time scale, seeds, safety state/event and tracking indicators.

use anyhow::Result;
use hybridsim_io::{run_to_folder_with, RunOptions, RunStatus};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `run`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML).
    pub model: PathBuf,
    /// Results folder (default: results/<model name>).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
    /// Clear the results folder first when it holds a previous run's results (a run.json, and
    /// only the images of `hybridsim plot` in plots/); without it a non-empty folder is refused.
    #[arg(long)]
    pub overwrite: bool,
    /// Cores the MG-α step of a large linear numerical substructure may use (1 or 2),
    /// overriding the model's `analysis.threads`: with 2 its effective matrix is solved in two
    /// parts, the second on a worker thread.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub threads: Option<u8>,
    /// The live browser console.
    #[command(flatten)]
    pub console: super::console::ConsoleArgs,
}

/// Run the model and write its results folder.
pub fn execute(args: Args) -> Result<ExitCode> {
    let Args {
        model,
        output,
        quiet,
        overwrite,
        threads,
        console,
    } = args;
    // The results folder's copy of the model reads the file again (checked against the
    // SHA-256 of the text that was parsed): its text is not held through the start-up, nor
    // through the validation's build of the partitions.
    let mut loaded = super::load_released(&model)?;
    if let Some(t) = threads {
        loaded.model.analysis.threads = t as usize;
    }
    let console = console.start(&loaded, "run", false)?;
    let folder = output.unwrap_or_else(|| default_folder(&model));
    let n_steps = loaded.model.analysis.n_steps();
    let progress = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // SIGINT, SIGTERM and SIGHUP take the safety path (super::signals).
    let abort = super::signals::stop_flag();
    let bar = (!quiet).then(|| {
        let bar = ProgressBar::new(n_steps);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} steps {elapsed_precise} eta {eta}")
                .expect("template"),
        );
        let (p, d, b) = (progress.clone(), done.clone(), bar.clone());
        std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                b.set_position(p.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        bar
    });
    let opts = RunOptions {
        overwrite,
        connector: Some(Arc::new(hybridsim_net::NetConnector)),
        tap: super::console::take_slot(),
        ..RunOptions::default()
    };
    let report = run_to_folder_with(&loaded, &folder, &progress, abort, &opts);
    drop(opts);
    if let Some(console) = console {
        console.finish(&folder);
    }
    done.store(true, Ordering::Relaxed);
    if let Some(b) = &bar {
        b.set_position(progress.load(Ordering::Relaxed));
        b.finish_and_clear();
    }
    let report = report.map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(lab) = &loaded.model.lab {
        println!("{}", lab.lab.time_scale.describe(&loaded.model.units.time));
        for i in &report.indicators {
            println!(
                "actuator {}: delay {:.4} s, NRMS tracking error {:.3e}, peak error {:.3e}, \
                 energy error {:.3e} (input {:.3e}, throughput {:.3e}, normalized {:.3e}) {}·{}",
                i.actuator,
                i.delay,
                i.nrms_error,
                i.peak_error,
                i.energy_error,
                i.energy_input,
                i.energy_throughput,
                i.normalized_energy_error,
                loaded.model.units.force,
                loaded.model.units.length
            );
        }
        for s in &report.safety {
            match &s.event {
                None => println!(
                    "safety: armed, {} commands sent, max |command| {:?} (limits {:?}), {} lab rows",
                    s.commands_sent,
                    s.max_sent,
                    s.limits.iter().map(|l| l.displacement).collect::<Vec<_>>(),
                    report.lab_rows
                ),
                Some(ev) => println!("safety: tripped: {ev}"),
            }
            println!(
                "largest command jump per tick: {}",
                s.actuators
                    .iter()
                    .zip(&s.largest_command_jump)
                    .map(|(a, j)| format!("{a} {j:.4e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (k, v) in &s.compensation_statistics {
                println!("compensation: {k} = {v:.6e}");
            }
        }
    }
    if let Some(e) = &report.error {
        eprintln!(
            "error: {e}; run.json in {} says what is on disk",
            report.folder.display()
        );
        if report.status == RunStatus::Completed {
            return Ok(ExitCode::from(1));
        }
    }
    let per_step = if report.steps > 0 {
        report.step_time.as_secs_f64() * 1e6 / report.steps as f64
    } else {
        0.0
    };
    match &report.status {
        RunStatus::Completed => {
            println!(
                        "completed {} steps ({} rows) in {:.3} s ({per_step:.2} µs per step); results in {}",
                        report.steps,
                        report.rows,
                        report.wall_time.as_secs_f64(),
                        report.folder.display()
                    );
            Ok(ExitCode::SUCCESS)
        }
        RunStatus::Stopped { event, fault } => {
            eprintln!(
                "error: the test was stopped through the safety layer after {} steps: {event} \
                 (cause: {fault}); the {} completed rows are in {}",
                report.steps,
                report.rows,
                report.folder.display()
            );
            Ok(ExitCode::from(1))
        }
        RunStatus::Failed(hybridsim::runner::Fault::Abort) => {
            eprintln!(
                "aborted{} after {} steps; results in {}",
                super::signals::received()
                    .map(|s| format!(" by {s}"))
                    .unwrap_or_default(),
                report.steps,
                report.folder.display()
            );
            Ok(ExitCode::from(1))
        }
        RunStatus::Failed(fault) => {
            eprintln!(
                "error: the run failed after {} steps: {fault}; the {} completed rows are in {}",
                report.steps,
                report.rows,
                report.folder.display()
            );
            Ok(ExitCode::from(1))
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
