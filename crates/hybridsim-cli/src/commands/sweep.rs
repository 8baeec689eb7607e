//! `hybridsim sweep MODEL -o DIR --set KEY=VALUES …`: a batch study. Every combination of the
//! swept values (records, PGA levels, noise seeds, parameters, by dotted key into the model
//! file) is one variant, run by `run`'s own code path into `DIR/variant-NNNN` on a pool of
//! worker threads (one run per thread, so each variant's results equal a single `hybridsim
//! run` of its `model.toml` bit for bit), and `DIR/summary.csv` lists every variant: its
//! values, status, steps, rows, wall time, error and the peak magnitude of every results
//! column.

use anyhow::{bail, Result};
use hybridsim_io::sweep::{self, Override};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `sweep`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML).
    pub model: PathBuf,
    /// Folder of the study: one results folder per variant and summary.csv.
    #[arg(short, long)]
    pub output: PathBuf,
    /// A swept key and its values: `KEY=[v1, v2, …]` (a TOML array), `KEY=A..B` or `KEY=A..=B`
    /// (integers, end excluded or included), or `KEY=VALUE` (the same in every variant). Keys
    /// are dotted paths into the model file, arrays indexed from 0: `lab.seed`,
    /// `ground_motion.0.pga`, `ground_motion.0.record`, `lab.actuator.0.noise.force_rms`.
    /// Repeat for a grid (every combination; the first key varies slowest).
    #[arg(long = "set", value_name = "KEY=VALUES")]
    pub set: Vec<String>,
    /// Worker threads (default: every core).
    #[arg(short, long)]
    pub jobs: Option<usize>,
    /// Replace the variant folders and summary of a previous sweep in the folder (each one
    /// only if it holds a previous run's results, as `run --overwrite`).
    #[arg(long)]
    pub overwrite: bool,
    /// No per-variant lines.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The variants of `--set` options: every combination.
pub fn variants(set: &[String]) -> Result<Vec<Vec<Override>>> {
    let mut keys: Vec<(String, Vec<toml::Value>)> = Vec::new();
    for s in set {
        let Some((key, values)) = s.split_once('=') else {
            bail!("--set `{s}`: expected KEY=VALUES");
        };
        let key = key.trim();
        if key.is_empty() {
            bail!("--set `{s}`: the key is empty");
        }
        let values =
            sweep::parse_values(values).map_err(|e| anyhow::anyhow!("--set {key}: {e}"))?;
        keys.push((key.to_string(), values));
    }
    Ok(sweep::grid(&keys))
}

/// Run the study.
pub fn execute(args: Args) -> Result<ExitCode> {
    let base = super::load(&args.model)?;
    let list = variants(&args.set)?;
    if list.len() > 1_000_000 {
        bail!("{} variants: at most a million", list.len());
    }
    let summary = args.output.join("summary.csv");
    if !args.overwrite
        && args
            .output
            .read_dir()
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    {
        bail!(
            "{}: the folder is not empty (give --overwrite to replace a previous sweep's results)",
            args.output.display()
        );
    }
    let opts = hybridsim_io::RunOptions {
        overwrite: args.overwrite,
        connector: Some(Arc::new(hybridsim_net::NetConnector)),
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let rows = sweep::run_sweep(&base, &list, &args.output, args.jobs, &opts)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut failed = 0;
    for r in &rows {
        if r.status != "completed" || r.error.is_some() {
            failed += 1;
        }
        if !args.quiet || r.status != "completed" {
            println!(
                "{}: {} ({} steps, {:.3} s){}{}",
                r.folder.display(),
                r.status,
                r.steps,
                r.wall_seconds,
                if r.overrides.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", sweep::describe(&r.overrides))
                },
                r.error
                    .as_ref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            );
        }
    }
    println!(
        "{} variants ({} not completed) in {:.3} s; summary in {}",
        rows.len(),
        failed,
        t0.elapsed().as_secs_f64(),
        summary.display()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
