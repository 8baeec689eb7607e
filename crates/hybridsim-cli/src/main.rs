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
    /// Plot a results folder to PNG and SVG: displacements, interface Λ and gaps, energy,
    /// hysteresis loops and cumulative element energy (where those columns exist).
    #[command(
        after_help = "Example:\n  hybridsim plot results/quickstart -o results/quickstart/plots"
    )]
    Plot(commands::plot::Args),
    /// Convert a binary results file (`[output] format = "binary"`, results.bin) to the
    /// results.csv the same run would have written (same header, same number spelling).
    #[command(
        after_help = "Example:\n  hybridsim convert results/big/results.bin -o results/big/results.csv"
    )]
    Convert(commands::convert::Args),
    /// Impose a deformation history (sine, ramped cycles or a file) on one element of a model
    /// file and record its force, states and dissipated energy (device characterization).
    #[command(
        after_help = "Examples:\n  hybridsim cyclic examples/mostaghel_dcsb.toml --element dcsb --amplitude 0.05 --frequency 0.5 --cycles 3\n  hybridsim cyclic examples/isolated_deck_lrb.toml --element lrb --history ramp --amplitude 0.2 --cycles 4\n  hybridsim cyclic model.toml --element pier --history file --file history.txt --dt 0.001"
    )]
    Cyclic(commands::cyclic::Args),
    /// Run a hybrid test with a [lab] on the real-time runner (virtual lab by default):
    /// PG-α on the threaded multi-rate runner, explicit-rths (and every other lab-driving
    /// scheme) one step per controller tick on a paced real-time thread; results.csv,
    /// controller-rate lab.csv, run.json with the time scale, seeds, safety event and
    /// per-task timing. Ctrl-C stops through the safety layer.
    #[command(
        after_help = "Examples:\n  hybridsim realtime examples/split_mass_delayed_actuator.toml --pacing realtime --allow-soft-realtime\n  hybridsim realtime examples/abbiati2020_lab_1024hz.toml --pacing fast -o out/abbiati2020\n  hybridsim realtime examples/rths_explicit_frame.toml --pacing realtime --allow-soft-realtime"
    )]
    Realtime(commands::realtime::Args),
    /// Algorithm analysis of the model's scheme: spectral radius, Ω̄ and ζ̄ over Ω = ωΔt
    /// (with drift modes, estimated-stiffness ratio and loop delay), convergence slopes, or
    /// the energy history; CSV, summary.json and PNG/SVG plots.
    #[command(
        after_help = "Examples:\n  hybridsim analyze spectral examples/split_mass_v1.toml -o out/spectral\n  hybridsim analyze convergence examples/split_mass_v1.toml --until 0.01\n  hybridsim analyze energy examples/split_mass_v2.toml --rho-inf 1"
    )]
    Analyze(commands::analyze::Args),
    /// Serve the model's laboratory (its virtual twin) on the controller link over UDP or
    /// TCP, so that `hybridsim run` with `lab.transfer = "udp"` tests it from another
    /// process; options inject latency, jitter, dropped or duplicated replies, a frozen
    /// sensor, a disconnect or an interlock.
    #[command(
        after_help = "Examples:\n  hybridsim controller examples/quickstart.toml --address 127.0.0.1:7400\n  hybridsim controller model.toml --once --latency 0.002 --jitter 0.001 --drop 0.01 --seed 7\n  hybridsim controller model.toml --tcp --freeze-after 5 --idle-timeout 60"
    )]
    Controller(commands::controller::Args),
    /// Serve one substructure of a model file to an OpenSees `genericClient` element (TCP, or
    /// UDP with --udp): forces, stiffness, damping and mass at the client's trial states.
    #[command(
        after_help = "Example:\n  hybridsim serve model.toml --substructure spring --dofs 1:x,2:x --port 8090 --once"
    )]
    Serve(commands::serve::Args),
    /// Score a results folder with the vRTHS benchmark criteria J1–J9 (Silva et al. 2020):
    /// delay, normalized RMS and peak tracking errors from lab.csv, normalized RMS and peak
    /// response errors against a reference folder; writes evaluation.json.
    #[command(
        after_help = "Examples:\n  hybridsim evaluate out/compensated --reference out/ideal\n  hybridsim evaluate out/test --reference out/ideal --response u.frame.1.x --response u.frame.2.x --json"
    )]
    Evaluate(commands::evaluate::Args),
    /// The elastic response spectrum of a ground-acceleration record (PEER .AT2 in g, or two
    /// columns time, acceleration): SD, SV, SA, PSV and PSA over a log-spaced period grid at
    /// one or more damping ratios, exact for an excitation linear between samples;
    /// spectrum.csv, spectrum.json and PNG/SVG.
    #[command(
        after_help = "Examples:\n  hybridsim spectrum ../shared/data/ground-motions/ElCentro1940_NS_PEER_IELC180.AT2\n  hybridsim spectrum record.txt --record-units m/s2 --damping 0.02,0.05 --periods 0.05:4:100 --pga 0.3 -o out/spectrum"
    )]
    Spectrum(commands::spectrum::Args),
    /// Serve the live console's page replaying a finished results folder (the plots, tracking
    /// indicators, safety margins and outcome of `run` or `realtime --console`).
    #[command(
        after_help = "Examples:\n  hybridsim console results/quickstart\n  hybridsim console out/test --console 127.0.0.1:0 --speed 10"
    )]
    Console(commands::console::Args),
    /// A batch study: every combination of swept values (noise seeds, PGA levels, records,
    /// parameters, by dotted key into the model file) run in parallel, one results folder per
    /// variant and a summary table (summary.csv).
    #[command(
        after_help = "Examples:\n  hybridsim sweep examples/quickstart.toml -o out/noise --set lab.seed=1..=100\n  hybridsim sweep examples/quickstart.toml -o out/pga --set 'ground_motion.0.synthetic.pga=[0.1, 0.2, 0.3]' --set lab.seed=1..=10 --jobs 2"
    )]
    Sweep(commands::sweep::Args),
    /// One self-contained HTML report of a results folder: run metadata, input motion and its
    /// response spectrum, histories, the specimen's measured loop beside its numerical twin,
    /// energy, tracking, peaks, safety events and how the run ended.
    #[command(
        after_help = "Examples:\n  hybridsim report results/quickstart\n  hybridsim report out/test -o out/test-report.html"
    )]
    Report(commands::report::Args),
}

/// Large blocks straight from and back to the kernel (glibc).
///
/// glibc serves a block above its *mmap threshold* with its own mapping, unmapped when freed,
/// and anything smaller from its heap. The threshold moves up (to 32 MiB) each time a mapped
/// block is freed, so after the model's first transients were released the state space, the
/// factors and the recorder's buffers of a large model were carved from the heap around the
/// freed holes: the frame of 10⁵ DOFs peaked at 239 MB resident for 193 MB live (issue 20,
/// BENCHMARKS.md). A fixed threshold keeps every block of 128 KiB or more in its own mapping
/// (200 MB for the same run). The real-time step allocates nothing, so it is unaffected.
fn return_large_blocks_to_the_kernel() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets an allocator parameter; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

fn main() -> ExitCode {
    return_large_blocks_to_the_kernel();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => commands::run::execute(args),
        Command::Realtime(args) => commands::realtime::execute(args),
        Command::Analyze(args) => commands::analyze::execute(args),
        Command::Check(args) => commands::check::execute(args),
        Command::Plot(args) => commands::plot::execute(args),
        Command::Convert(args) => commands::convert::execute(args),
        Command::Cyclic(args) => commands::cyclic::execute(args),
        Command::Controller(args) => commands::controller::execute(args),
        Command::Serve(args) => commands::serve::execute(args),
        Command::Evaluate(args) => commands::evaluate::execute(args),
        Command::Spectrum(args) => commands::spectrum::execute(args),
        Command::Console(args) => commands::console::execute(args),
        Command::Sweep(args) => commands::sweep::execute(args),
        Command::Report(args) => commands::report::execute(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
