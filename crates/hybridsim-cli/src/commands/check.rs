//! `hybridsim check MODEL`.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `check`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML).
    pub model: PathBuf,
}

/// Validate and print the summary.
pub fn execute(args: Args) -> Result<ExitCode> {
    let loaded = super::load(&args.model)?;
    let sim = hybridsim::Simulation::new(loaded.model).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{}", sim.summary());
    println!("ok: {} is valid", args.model.display());
    Ok(ExitCode::SUCCESS)
}
