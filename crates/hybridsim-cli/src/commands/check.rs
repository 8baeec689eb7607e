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
    // A laboratory whose measurement at rest trips the safety layer cannot start a test: the
    // integrator builds (a run reports the event from its first step, with a results folder),
    // but `check` refuses the file here.
    for p in sim.integrator.partitions() {
        if let Some(event) = p.lab().and_then(|lab| lab.safety_summary().event) {
            anyhow::bail!(
                "{}: physical substructure `{}`: the safety layer tripped at rest: {event}; a \
                 test cannot start from this state",
                args.model.display(),
                p.state.name
            );
        }
    }
    print!("{}", sim.summary());
    println!("ok: {} is valid", args.model.display());
    Ok(ExitCode::SUCCESS)
}
