//! `hybridsim`: the command-line tool.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use hybridsim_io::{load_model, run_to_folder, RunStatus};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  hybridsim run examples/quickstart.toml                 run a hybrid simulation, results in results/quickstart/
  hybridsim run examples/split_mass_v1.toml -o out/v1   choose the results folder
  hybridsim check examples/earthquake_elcentro.toml     validate a model and print its substructures, interface and modes";

/// Hybrid simulation of structures: numerical and physical substructures coupled online.
#[derive(Parser)]
#[command(name = "hybridsim", version, about, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a model file and write a results folder (results.csv, run.json, model.toml).
    #[command(
        after_help = "Example:\n  hybridsim run examples/quickstart.toml -o results/quickstart"
    )]
    Run {
        /// The model file (TOML).
        model: PathBuf,
        /// Results folder (default: results/<model name>).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// No progress bar.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Validate a model file and print a summary: DOFs per substructure, interface DOFs,
    /// time steps, and the periods and damping ratios of the linearized coupled model.
    #[command(after_help = "Example:\n  hybridsim check examples/split_mass_v1.toml")]
    Check {
        /// The model file (TOML).
        model: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match execute(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn execute(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Check { model } => {
            let loaded = load(&model)?;
            let sim =
                hybridsim::Simulation::new(loaded.model).map_err(|e| anyhow::anyhow!("{e}"))?;
            print!("{}", sim.summary());
            println!("ok: {} is valid", model.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            model,
            output,
            quiet,
        } => {
            let loaded = load(&model)?;
            let folder = output.unwrap_or_else(|| default_folder(&model));
            let n_steps = loaded.model.analysis.n_steps();
            let progress = Arc::new(AtomicU64::new(0));
            let done = Arc::new(AtomicBool::new(false));
            let abort = AtomicBool::new(false);
            let bar = (!quiet).then(|| {
                let bar = ProgressBar::new(n_steps);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{bar:40} {pos}/{len} steps {elapsed_precise} eta {eta}",
                    )
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
            let report = run_to_folder(&loaded, &folder, &progress, &abort);
            done.store(true, Ordering::Relaxed);
            if let Some(b) = &bar {
                b.set_position(progress.load(Ordering::Relaxed));
                b.finish_and_clear();
            }
            let report = report.map_err(|e| anyhow::anyhow!("{e}"))?;
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
                RunStatus::Failed { error } => {
                    eprintln!(
                        "error: the run failed after {} steps: {error}; the {} completed rows are in {}",
                        report.steps,
                        report.rows,
                        report.folder.display()
                    );
                    Ok(ExitCode::from(1))
                }
                RunStatus::Aborted => {
                    eprintln!(
                        "aborted after {} steps; results in {}",
                        report.steps,
                        report.folder.display()
                    );
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}

fn load(path: &Path) -> Result<hybridsim_io::LoadedModel> {
    if !path.exists() {
        bail!("{}: no such model file", path.display());
    }
    load_model(path)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("reading {}", path.display()))
}

fn default_folder(model: &Path) -> PathBuf {
    let stem = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    PathBuf::from("results").join(stem)
}
