//! `[[ground_motion]]`: uniform ground accelerations from a record or a synthetic
//! accelerogram, in model units.

use super::finite_positive;
use super::schema::{GroundMotionSpec, SyntheticSpec};
use crate::error::Diagnostics;
use crate::excitation::{self, KanaiTajimi, TimeFunction, TimeSeries};
use crate::model::{GroundMotion, RecordSource, SourceResolver};
use crate::units::Units;

/// The ground motions, at most one per direction; `node_dofs` are the declared DOF names by
/// node.
pub(super) fn ground_motions(
    specs: &[GroundMotionSpec],
    node_dofs: &super::NodeDofs,
    units: &Units,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Vec<GroundMotion> {
    let mut ground_motions = Vec::new();
    let g = units.gravity();
    for (i, gm) in specs.iter().enumerate() {
        let f = format!("ground_motion[{i}]");
        if !node_dofs.any_declares(&gm.direction) {
            diag.push(
                format!("{f}.direction"),
                format!("no node has a DOF named `{}`", gm.direction),
            );
            continue;
        }
        if ground_motions
            .iter()
            .any(|x: &GroundMotion| x.direction == gm.direction)
        {
            diag.push(
                format!("{f}.direction"),
                format!("direction `{}` is excited twice", gm.direction),
            );
            continue;
        }
        ground_motions.extend(ground_motion(gm, &f, g, files, diag));
    }
    ground_motions
}

/// One ground motion at field `f` along a direction some node has; `g` in model units.
fn ground_motion(
    gm: &GroundMotionSpec,
    f: &str,
    g: f64,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Option<GroundMotion> {
    if gm.pga.is_some() && gm.scale.is_some() {
        diag.push(
            format!("{f}.scale"),
            "give either `pga` or `scale`, not both",
        );
        return None;
    }
    if let Some(p) = gm.pga {
        if !finite_positive(p) {
            diag.push(
                format!("{f}.pga"),
                format!("must be a positive PGA in g, found {p}"),
            );
            return None;
        }
    }
    if let Some(s) = gm.scale {
        if !s.is_finite() {
            diag.push(format!("{f}.scale"), "must be finite");
            return None;
        }
    }
    let mut source = None;
    let (mut series_g, description, seed) = match (&gm.record, &gm.synthetic) {
        (Some(_), Some(_)) | (None, None) => {
            diag.push(f, "give exactly one of `record` or `synthetic`");
            return None;
        }
        (None, Some(s)) => {
            if gm.pga.is_some() || gm.scale.is_some() {
                diag.push(
                    format!("{f}.pga"),
                    "a synthetic record takes its PGA in `synthetic.pga`",
                );
                return None;
            }
            synthetic(s, f, diag)?
        }
        (Some(path), None) => {
            let series = record(path, gm.record_units.as_deref(), f, g, files, diag)?;
            source = Some(RecordSource {
                path: path.clone(),
                dt: series.dt(),
                end_time: series.end_time(),
                scale: 1.0,
            });
            (series, format!("record {path}"), None)
        }
    };
    let raw_peak = series_g.peak_abs();
    if let Some(p) = gm.pga {
        if let Err(e) = series_g.scaled_to_peak(p) {
            diag.push(format!("{f}.pga"), e.to_string());
            return None;
        }
    } else if let Some(s) = gm.scale {
        series_g.scale(s);
    }
    let pga_g = series_g.peak_abs();
    if let Some(src) = source.as_mut() {
        src.scale = if raw_peak > 0.0 {
            pga_g / raw_peak
        } else {
            1.0
        };
    }
    if pga_g > PLAUSIBLE_PGA_G {
        let field = if gm.pga.is_some() {
            format!("{f}.pga")
        } else if gm.scale.is_some() {
            format!("{f}.scale")
        } else {
            format!("{f}.record")
        };
        diag.warn(
            field,
            format!(
                "the peak ground acceleration is {pga_g:.3} g, above {PLAUSIBLE_PGA_G} g (the \
                 strongest records reach about 2 g); `pga` is in g: 0.3 means 0.3 g"
            ),
        );
    }
    series_g.scale(g);
    Some(GroundMotion {
        direction: gm.direction.clone(),
        acceleration: TimeFunction::Series(series_g),
        description,
        seed,
        pga_g,
        record: source,
    })
}

/// Peak ground accelerations above this (in g) draw a warning: a slip of the decimal point
/// (`pga = 3.0` for 0.3 g) rather than a record.
pub const PLAUSIBLE_PGA_G: f64 = 2.0;

/// Warnings of the ground motions against the analysis: a run longer than a record (the rest
/// is free vibration under zero acceleration) and a time step coarser than the record's
/// (samples skipped, peaks lost).
pub(super) fn check_against_analysis(
    motions: &[GroundMotion],
    time_step: f64,
    duration: f64,
    diag: &mut Diagnostics,
) {
    for (i, gm) in motions.iter().enumerate() {
        let Some(src) = &gm.record else { continue };
        let f = format!("ground_motion[{i}].record");
        if duration > src.end_time * (1.0 + 1e-9) + 1e-12 {
            diag.warn(
                "analysis.duration",
                format!(
                    "{duration} is longer than the record `{}` ({} to its last sample): the rest \
                     of the run is free vibration under zero ground acceleration",
                    src.path, src.end_time
                ),
            );
        }
        if let Some(dt) = src.dt {
            if time_step > dt * (1.0 + 1e-9) {
                diag.warn(
                    f,
                    format!(
                        "the analysis time step {time_step} is coarser than the record's sample \
                         interval {dt}: the motion is sampled at the steps only, so peaks between \
                         them are lost"
                    ),
                );
            }
        }
    }
}

/// Most samples of a synthetic record (10^7: 80 MB, over 13 hours at 200 Hz).
const MAX_SYNTHETIC_SAMPLES: f64 = 1.0e7;

/// `[ground_motion.synthetic]`: the accelerogram in g, its description and its seed.
fn synthetic(
    s: &SyntheticSpec,
    f: &str,
    diag: &mut Diagnostics,
) -> Option<(TimeSeries, String, Option<u64>)> {
    if !finite_positive(s.pga) {
        diag.push(
            format!("{f}.synthetic.pga"),
            format!("must be a positive PGA in g, found {}", s.pga),
        );
        return None;
    }
    let mut kt = KanaiTajimi::new(s.pga, s.duration, s.seed);
    if let Some(dt) = s.dt {
        kt.dt = dt;
    }
    if let Some(w) = s.omega_g {
        kt.omega_g = w;
    }
    if let Some(z) = s.zeta_g {
        kt.zeta_g = z;
    }
    // The record is generated here, at validation: bound its length before anything is
    // allocated (the generator's own bound is far larger).
    let samples = kt.duration / kt.dt;
    if kt.duration.is_finite()
        && kt.dt.is_finite()
        && kt.dt > 0.0
        && samples > MAX_SYNTHETIC_SAMPLES
    {
        diag.push(
            format!("{f}.synthetic.duration"),
            format!(
                "{} s at dt = {} s is {samples:e} samples; a synthetic record has at most \
                 {MAX_SYNTHETIC_SAMPLES:e} (shorten it or raise dt)",
                kt.duration, kt.dt
            ),
        );
        return None;
    }
    match kt.generate() {
        Ok(series) => Some((
            series,
            format!(
                "synthetic Kanai-Tajimi record (seed {}, {} s, PGA {} g, omega_g {} rad/s, zeta_g {})",
                s.seed, kt.duration, s.pga, kt.omega_g, kt.zeta_g
            ),
            Some(s.seed),
        )),
        Err(e) => {
            diag.push(format!("{f}.synthetic"), e.to_string());
            None
        }
    }
}

/// `record` (PEER `.AT2`, or two columns in `record_units`): the accelerogram in g.
fn record(
    path: &str,
    record_units: Option<&str>,
    f: &str,
    g: f64,
    files: &dyn SourceResolver,
    diag: &mut Diagnostics,
) -> Option<TimeSeries> {
    let is_at2 = path.to_ascii_lowercase().ends_with(".at2");
    // The units are checked before the file is read, so that both problems show.
    let units_ok = match (is_at2, record_units) {
        (true, Some(u)) if u != "g" => {
            diag.push(
                format!("{f}.record_units"),
                "a PEER .AT2 record is always in g",
            );
            false
        }
        (true, _) | (false, Some("g" | "model")) => true,
        (false, Some(other)) => {
            diag.push(
                format!("{f}.record_units"),
                format!("must be \"g\" or \"model\", found `{other}`"),
            );
            false
        }
        (false, None) => {
            diag.push(
                format!("{f}.record_units"),
                "is required for a two-column record: \"g\" or \"model\"",
            );
            false
        }
    };
    let text = match files.read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            diag.push(format!("{f}.record"), e);
            return None;
        }
    };
    if !units_ok {
        return None;
    }
    let parsed = if is_at2 {
        excitation::parse_at2(&text).map(|(s, _)| s)
    } else if record_units == Some("model") {
        excitation::parse_two_column(&text).map(|mut s| {
            s.scale(1.0 / g);
            s
        })
    } else {
        excitation::parse_two_column(&text)
    };
    match parsed {
        Ok(s) => Some(s),
        Err(e) => {
            diag.push(format!("{f}.record"), format!("{path}: {e}"));
            None
        }
    }
}
