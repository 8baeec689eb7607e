//! `hybridsim plot RESULTS_DIR [-o OUT]`: the standard figures of a results folder as PNG and SVG.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `plot`.
#[derive(clap::Args)]
pub struct Args {
    /// A results folder written by `hybridsim run` or `hybridsim cyclic` (holds results.csv).
    pub results: PathBuf,
    /// Output folder for the images (default: RESULTS_DIR/plots).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Draw displacement histories per substructure copy, interface Λ and gaps, energies,
/// hysteresis loops and cumulative element energies (where those columns exist).
pub fn execute(args: Args) -> Result<ExitCode> {
    let out = args.output.unwrap_or_else(|| args.results.join("plots"));
    let written = hybridsim_plot::results::plot_results_folder(&args.results, &out)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("wrote {} images to {}:", written.len(), out.display());
    for p in &written {
        if let Some(name) = p.file_name() {
            println!("  {}", name.to_string_lossy());
        }
    }
    Ok(ExitCode::SUCCESS)
}
