//! The inputs of a run that a results folder keeps beside the results: the ground motions as the
//! run applied them (`ground_motion.<direction>.csv`, after scaling, in model units), each record
//! file's SHA-256, and the model file's plausibility warnings, so that a folder says exactly
//! which record drove the test without the model file's surroundings.

use hybridsim::excitation::TimeFunction;
use hybridsim::Model;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;

/// SHA-256 (hex) of each ground-motion record file of `model`, read relative to `base` (the
/// model file's folder): `(path as written, hash)`. A file that cannot be read any more (it was
/// read when the model loaded) gets no hash.
pub fn record_hashes(model: &Model, base: &Path) -> Vec<(String, String)> {
    model
        .ground_motions
        .iter()
        .filter_map(|g| g.record.as_ref())
        .filter_map(|r| {
            let bytes = std::fs::read(base.join(&r.path)).ok()?;
            Some((r.path.clone(), super::hex(&Sha256::digest(&bytes))))
        })
        .collect()
}

/// The file name of a ground motion's input history in a results folder.
pub fn ground_motion_file(direction: &str) -> String {
    format!("ground_motion.{direction}.csv")
}

/// The `ground_motions` entries of run.json: direction, description, PGA, seed, and for a
/// record its path, SHA-256, scale factor, sample interval and end time, and the file of the
/// applied history in the folder.
pub fn ground_motion_json(model: &Model, hashes: &[(String, String)]) -> Vec<Value> {
    model
        .ground_motions
        .iter()
        .map(|g| {
            let mut v = json!({
                "direction": g.direction,
                "description": g.description,
                "pga_g": g.pga_g,
                "seed": g.seed,
                "file": ground_motion_file(&g.direction),
            });
            if let Some(r) = &g.record {
                v["record"] = json!({
                    "path": r.path,
                    "sha256": hashes.iter().find(|(p, _)| *p == r.path).map(|(_, h)| h.clone()),
                    "scale": r.scale,
                    "dt": r.dt,
                    "end_time": r.end_time,
                });
            }
            v
        })
        .collect()
}

/// The model's plausibility warnings as `file: field: reason` lines.
pub fn warnings_json(model: &Model) -> Vec<String> {
    model.warnings.iter().map(|w| w.to_string()).collect()
}

/// Write each ground motion's applied acceleration history into `folder`
/// (`ground_motion.<direction>.csv`: `time[unit]`, `a_g.<direction>[unit]`; the record's samples
/// after scaling, or a synthetic motion's samples); returns the file names written.
pub fn write_ground_motions(folder: &Path, model: &Model) -> std::io::Result<Vec<String>> {
    let mut written = Vec::new();
    for g in &model.ground_motions {
        let TimeFunction::Series(series) = &g.acceleration else {
            continue;
        };
        let name = ground_motion_file(&g.direction);
        let path = folder.join(&name);
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        writeln!(
            out,
            "time[{}],a_g.{}[{}]",
            model.units.time,
            g.direction,
            model.units.acceleration_unit(&g.direction)
        )?;
        for (t, a) in series.samples() {
            writeln!(out, "{t},{a}")?;
        }
        out.flush()?;
        written.push(name);
    }
    Ok(written)
}
