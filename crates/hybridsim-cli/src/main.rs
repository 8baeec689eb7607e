//! `hybridsim`: the command-line tool. Each subcommand lives in its own module under
//! `commands/`; this file only parses and dispatches.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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

/// The subcommands.
#[derive(Subcommand)]
enum Command {
    /// Run a model file and write a results folder (results.csv, run.json, model.toml).
    #[command(
        after_help = "Example:\n  hybridsim run examples/quickstart.toml -o results/quickstart"
    )]
    Run(commands::run::Args),
    /// Validate a model file and print a summary: DOFs per substructure, interface DOFs,
    /// time steps, and the periods and damping ratios of the linearized coupled model.
    #[command(after_help = "Example:\n  hybridsim check examples/split_mass_v1.toml")]
    Check(commands::check::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => commands::run::execute(args),
        Command::Check(args) => commands::check::execute(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
