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
    let mut model = super::load(&args.model)?.model;
    // `check` contacts no hardware: a laboratory on the network is checked on its virtual
    // twin (the same actuators, sensors and specimen), the link left alone.
    let mut twin_of = None;
    if let Some(config) = model.lab.as_mut() {
        let lab = &mut config.lab;
        if lab.transfer.is_network() {
            twin_of = Some((
                lab.transfer.name(),
                lab.link.take().map(|l| l.address).unwrap_or_default(),
            ));
            lab.transfer = hybridsim::model::lab::TransferKind::Virtual;
        }
    }
    let build_start = std::time::Instant::now();
    let sim = hybridsim::Simulation::new(model).map_err(|e| anyhow::anyhow!("{e}"))?;
    let dofs = sim.integrator.total_dofs();
    let startup = hybridsim_io::startup::Startup::measure(build_start, dofs);
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
    if let Some((transfer, address)) = twin_of {
        println!(
            "checked on the virtual twin of the lab; the {transfer} link to {address} was not \
             contacted"
        );
    }
    // `check` builds exactly what a run builds before its first step, so these are the
    // run's start-up time and memory (issue 20), up to the results files.
    println!(
        "start-up estimate: {:.3} s (assembly and factorization {:.3} s), peak memory {}",
        startup.seconds,
        startup.build_seconds,
        startup.peak_rss_bytes.map_or("unknown".into(), |b| format!(
            "{:.1} MB ({:.0} bytes per DOF over {dofs} DOFs)",
            b as f64 / 1e6,
            b as f64 / dofs.max(1) as f64
        ))
    );
    println!("ok: {} is valid", args.model.display());
    Ok(ExitCode::SUCCESS)
}
