//! One module per subcommand.

pub mod analyze;
pub mod check;
pub mod console;
pub mod controller;
pub mod convert;
pub mod cyclic;
pub mod energy_error;
pub mod evaluate;
pub mod plot;
pub mod realtime;
pub mod report;
pub mod run;
pub mod serve;
pub mod signals;
pub mod spectrum;
pub mod sweep;

use anyhow::{bail, Context, Result};
use std::path::Path;

/// Read and validate a model file, with the file's problems as the error; its plausibility
/// warnings (valid values that are probably not meant) go to standard error.
pub fn load(path: &Path) -> Result<hybridsim_io::LoadedModel> {
    load_with(path, hybridsim_io::load_model)
}

/// [`load`] without keeping the model file's text: it is released before the model's layout
/// is validated ([`hybridsim_io::load_model_released`]), and the results folder's copy of the
/// model is the file read again, checked against the SHA-256 of the text that was parsed.
pub fn load_released(path: &Path) -> Result<hybridsim_io::LoadedModel> {
    load_with(path, hybridsim_io::load_model_released)
}

fn load_with(
    path: &Path,
    read: fn(&Path) -> Result<hybridsim_io::LoadedModel, hybridsim::ModelError>,
) -> Result<hybridsim_io::LoadedModel> {
    if !path.exists() {
        bail!("{}: no such model file", path.display());
    }
    let loaded = read(path)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("reading {}", path.display()))?;
    for w in &loaded.model.warnings {
        eprintln!("warning: {w}");
    }
    Ok(loaded)
}
