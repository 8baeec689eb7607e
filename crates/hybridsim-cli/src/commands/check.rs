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
    // A laboratory whose measurement at rest trips the safety layer cannot start a test: the
    // integrator builds (the event is reported by the first step of a run, with a results
    // folder), but `check` says so here.
    let integ = hybridsim::integrators::build(&loaded.model).map_err(|e| anyhow::anyhow!("{e}"))?;
    for p in integ.partitions() {
        if let Some(event) = p.lab().and_then(|lab| lab.safety_summary().event) {
            anyhow::bail!(
                "{}: physical substructure `{}`: the safety layer tripped at rest: {event}; a \
                 test cannot start from this state",
                args.model.display(),
                p.state.name
            );
        }
    }
    drop(integ);
    let sim = hybridsim::Simulation::new(loaded.model).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{}", sim.summary());
    println!("ok: {} is valid", args.model.display());
    Ok(ExitCode::SUCCESS)
}
