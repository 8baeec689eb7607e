//! `hybridsim spectrum RECORD`: the elastic response spectrum of a ground-acceleration record
//! (PEER `.AT2` or a two-column text file), as CSV, JSON and PNG/SVG.

use anyhow::{bail, Context, Result};
use hybridsim::analysis::{log_periods, response_spectrum, ResponseSpectrum};
use hybridsim::excitation::STANDARD_GRAVITY;
use hybridsim_plot::{Axis, Chart, Series};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `spectrum`.
#[derive(clap::Args)]
pub struct Args {
    /// The record: a PEER `.AT2` file (in g) or a two-column text file `time, acceleration`.
    pub record: PathBuf,
    /// Damping ratios (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0.05")]
    pub damping: Vec<f64>,
    /// Periods `FIRST:LAST:COUNT` in s, log-spaced; T = 0 (the peak ground acceleration) is
    /// always added.
    #[arg(long, default_value = "0.02:5:200")]
    pub periods: String,
    /// Units of a two-column record's accelerations: `g` or `m/s2` (an `.AT2` says its own).
    #[arg(long, default_value = "g")]
    pub record_units: String,
    /// Scale the record to this peak ground acceleration (g) first.
    #[arg(long, conflicts_with = "scale")]
    pub pga: Option<f64>,
    /// Multiply the record by this factor first.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Output folder (default: results/spectrum-<record name>); spectrum.csv, spectrum.json,
    /// spectrum.png and spectrum.svg are written (replaced) there.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// `FIRST:LAST:COUNT` → the log-spaced grid, with errors naming the option.
fn parse_periods(text: &str) -> Result<Vec<f64>> {
    let parts: Vec<&str> = text.split(':').collect();
    let bad = |why: &str| {
        anyhow::anyhow!("--periods {text}: {why} (expected FIRST:LAST:COUNT, e.g. 0.02:5:200)")
    };
    if parts.len() != 3 {
        return Err(bad("needs three fields"));
    }
    let first: f64 = parts[0]
        .trim()
        .parse()
        .map_err(|_| bad("FIRST is not a number"))?;
    let last: f64 = parts[1]
        .trim()
        .parse()
        .map_err(|_| bad("LAST is not a number"))?;
    let count: usize = parts[2]
        .trim()
        .parse()
        .map_err(|_| bad("COUNT is not a whole number"))?;
    if !(first.is_finite() && first > 0.0) {
        return Err(bad("FIRST must be a positive period"));
    }
    if !(last.is_finite() && last > first) {
        return Err(bad("LAST must be a period larger than FIRST"));
    }
    if !(2..=100_000).contains(&count) {
        return Err(bad("COUNT must be between 2 and 100000"));
    }
    let mut p = vec![0.0];
    p.extend(log_periods(first, last, count));
    Ok(p)
}

/// The record's times and accelerations in m/s², and a description.
fn read_record(args: &Args) -> Result<(Vec<f64>, Vec<f64>, String)> {
    let path = &args.record;
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let is_at2 = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("at2"));
    let (series, in_g, description) = if is_at2 {
        let (s, h) = hybridsim::excitation::parse_at2(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if !h.is_in_g() {
            bail!(
                "{}: the header gives the units `{}`; only records in g are read",
                path.display(),
                h.units
            );
        }
        (s, true, h.description)
    } else {
        let s = hybridsim::excitation::parse_two_column(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let in_g = match args.record_units.as_str() {
            "g" => true,
            "m/s2" | "m/s^2" => false,
            other => bail!("--record-units: `{other}` is not `g` or `m/s2`"),
        };
        (s, in_g, String::new())
    };
    let to_si = if in_g { STANDARD_GRAVITY } else { 1.0 };
    let mut values: Vec<f64> = series.values().iter().map(|a| a * to_si).collect();
    let peak = values.iter().fold(0.0f64, |m, a| m.max(a.abs()));
    let factor = match (args.pga, args.scale) {
        (Some(pga), _) => {
            if !(pga.is_finite() && pga > 0.0) {
                bail!("--pga {pga}: must be a positive peak ground acceleration in g");
            }
            if peak == 0.0 {
                bail!("{}: --pga: the record is zero everywhere", path.display());
            }
            pga * STANDARD_GRAVITY / peak
        }
        (None, Some(scale)) => {
            if !scale.is_finite() {
                bail!("--scale {scale}: must be a finite factor");
            }
            scale
        }
        (None, None) => 1.0,
    };
    for a in &mut values {
        *a *= factor;
    }
    Ok((series.times().to_vec(), values, description))
}

/// Compute and write the spectra.
pub fn execute(args: Args) -> Result<ExitCode> {
    for &z in &args.damping {
        if !(0.0..1.0).contains(&z) {
            bail!("--damping {z}: a damping ratio must be in [0, 1)");
        }
    }
    let periods = parse_periods(&args.periods)?;
    let (times, accel, description) = read_record(&args)?;
    let spectra: Vec<ResponseSpectrum> = args
        .damping
        .iter()
        .map(|&z| response_spectrum(&times, &accel, &periods, z))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.record.display()))?;
    let stem = args
        .record
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "record".into());
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("spectrum-{stem}")));
    std::fs::create_dir_all(&out)
        .with_context(|| format!("{}: cannot create the folder", out.display()))?;
    write_csv(&out.join("spectrum.csv"), &periods, &spectra)?;
    let pga = accel.iter().fold(0.0f64, |m, a| m.max(a.abs())) / STANDARD_GRAVITY;
    let summary = serde_json::json!({
        "record": args.record.display().to_string(),
        "description": description,
        "samples": times.len(),
        "duration_s": times.last().copied().unwrap_or(0.0) - times[0],
        "pga_g": pga,
        "damping": args.damping,
        "method": "exact for an excitation linear between samples (Nigam & Jennings 1969); peaks at the samples",
        "peaks": spectra.iter().map(|s| {
            let (i, psa) = s.pseudo_acceleration.iter().enumerate()
                .fold((0, 0.0f64), |(bi, b), (i, &x)| if x > b { (i, x) } else { (bi, b) });
            serde_json::json!({
                "damping": s.damping,
                "psa_max_g": psa / STANDARD_GRAVITY,
                "period_of_psa_max_s": s.periods[i],
            })
        }).collect::<Vec<_>>(),
    });
    let json_path = out.join("spectrum.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&summary)? + "\n")
        .with_context(|| format!("{}: cannot write", json_path.display()))?;
    let charts = charts(&stem, &spectra);
    for ext in ["png", "svg"] {
        let path = out.join(format!("spectrum.{ext}"));
        hybridsim_plot::save_grid(&charts, &path).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    println!(
        "{}: {} samples, PGA {:.4} g; spectra at ζ = {} over {} periods in {}",
        args.record.display(),
        times.len(),
        pga,
        args.damping
            .iter()
            .map(|z| format!("{z}"))
            .collect::<Vec<_>>()
            .join(", "),
        periods.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn write_csv(path: &Path, periods: &[f64], spectra: &[ResponseSpectrum]) -> Result<()> {
    let mut text = String::from("period[s]");
    for s in spectra {
        let z = format!("{}", s.damping * 100.0);
        for (what, unit) in [
            ("SD", "m"),
            ("SV", "m/s"),
            ("SA", "g"),
            ("PSV", "m/s"),
            ("PSA", "g"),
        ] {
            let _ = write!(text, ",{what}_{z}%[{unit}]");
        }
    }
    text.push('\n');
    for (i, t) in periods.iter().enumerate() {
        let _ = write!(text, "{t}");
        for s in spectra {
            let _ = write!(
                text,
                ",{},{},{},{},{}",
                s.displacement[i],
                s.velocity[i],
                s.acceleration[i] / STANDARD_GRAVITY,
                s.pseudo_velocity[i],
                s.pseudo_acceleration[i] / STANDARD_GRAVITY
            );
        }
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

fn charts(stem: &str, spectra: &[ResponseSpectrum]) -> Vec<Chart> {
    let period_axis = Axis {
        label: "period [s]".into(),
        log: false,
    };
    let series = |f: &dyn Fn(&ResponseSpectrum) -> Vec<f64>| -> Vec<Series> {
        spectra
            .iter()
            .map(|s| Series {
                name: format!("ζ = {}", s.damping),
                x: s.periods.clone(),
                y: f(s),
            })
            .collect()
    };
    vec![
        Chart {
            title: format!("pseudo-acceleration spectrum of {stem}"),
            x: period_axis.clone(),
            y: Axis {
                label: "PSA [g]".into(),
                log: false,
            },
            series: series(&|s| {
                s.pseudo_acceleration
                    .iter()
                    .map(|a| a / STANDARD_GRAVITY)
                    .collect()
            }),
        },
        Chart {
            title: format!("displacement spectrum of {stem}"),
            x: period_axis,
            y: Axis {
                label: "SD [m]".into(),
                log: false,
            },
            series: series(&|s| s.displacement.clone()),
        },
    ]
}
