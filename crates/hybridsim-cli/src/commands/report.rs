//! `hybridsim report RESULTS [-o report.html]`: one self-contained HTML page that a lab can put
//! in its test report.
//!
//! The page has inline CSS and inline SVG figures only (no script, no font, no network fetch):
//! run metadata, the input motion and its 5 %-damped elastic response spectrum
//! ([`hybridsim::analysis::response_spectrum`]), response histories, the tested specimen's
//! measured force–displacement loop beside its numerical twin (the virtual lab's noise-free
//! loop), energies, tracking (command against measurement, the synchronization subspace plot —
//! measured against desired displacement, a 45° line when tracking is perfect, Mercan and Ricles
//! 2007 — and the tracking indicators of run.json), a table of peaks, the safety events and how
//! the run ended. Sections whose data a run does not have (no lab, no record) say so in a
//! sentence.
//!
//! Each section is an `<section id="…">` and each figure a `<figure class="figure" id="fig-…">`
//! holding one `<svg>`, so tests (and readers) can find them.

use anyhow::{anyhow, bail, Context, Result};
use hybridsim::analysis::{log_periods, response_spectrum};
use hybridsim_plot::results::{lab_figures, results_figures, short_title, Figure, ResultsTable};
use hybridsim_plot::{Axis, Chart, Series};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `report`.
#[derive(clap::Args)]
pub struct Args {
    /// A results folder written by `hybridsim run` or `hybridsim realtime` (results.csv, run.json,
    /// and lab.csv and ground_motion.*.csv when the run had them).
    pub results: PathBuf,
    /// The HTML file to write (default: RESULTS/report.html).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Write the report and print its path.
pub fn execute(args: Args) -> Result<ExitCode> {
    let html = build(&args.results)?;
    let out = args
        .output
        .unwrap_or_else(|| args.results.join("report.html"));
    std::fs::write(&out, html).with_context(|| format!("{}: cannot write", out.display()))?;
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Height of each chart of a report figure, pixels.
const ROW: u32 = 420;
/// Points kept per loop / subspace series.
const MAX_POINTS: usize = 3000;

/// The ids of the report's sections, in order (tests check them).
pub const SECTIONS: [&str; 10] = [
    "metadata",
    "motion",
    "spectrum",
    "histories",
    "specimen",
    "energy",
    "tracking",
    "peaks",
    "safety",
    "ending",
];

/// `s` with the HTML special characters escaped.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

/// A JSON value as short text (`—` for null or missing).
fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "—".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if n.is_f64() => num(x),
            _ => n.to_string(),
        },
        Some(other) => other.to_string(),
    }
}

/// A number with four significant digits (`—` for non-finite values).
fn num(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{x:.3e}")
    } else {
        let digits = if a == 0.0 {
            0
        } else {
            (3 - a.log10().floor() as i32).clamp(0, 8) as usize
        };
        let s = format!("{x:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// Read a CSV table of the folder, with errors naming the file.
fn table(path: &Path) -> Result<ResultsTable> {
    let (t, note) = ResultsTable::read_noting(path).map_err(|e| anyhow!("{e}"))?;
    if let Some(note) = note {
        eprintln!("warning: {note}");
    }
    if t.rows() == 0 {
        bail!("{}: no data rows", path.display());
    }
    Ok(t)
}

/// One figure: its charts as inline SVG inside `<figure id="fig-ID">` with a caption.
fn figure(id: &str, caption: &str, charts: &[Chart]) -> Result<String> {
    let svg = hybridsim_plot::svg_string(charts, ROW, &format!("figure {id}"))
        .map_err(|e| anyhow!("{e}"))?;
    // Scale with the page: the SVG keeps its viewBox, the width follows the column.
    let svg = match svg.find("<svg") {
        Some(i) => {
            let mut s = svg[i..].to_string();
            s.replace_range(0..4, "<svg class=\"chart\" role=\"img\"");
            s
        }
        None => svg,
    };
    Ok(format!(
        "<figure class=\"figure\" id=\"fig-{id}\">{svg}<figcaption>{}</figcaption></figure>\n",
        esc(caption)
    ))
}

/// A two-column key/value table.
fn kv_table(rows: &[(&str, String)]) -> String {
    let mut s = String::from("<table class=\"kv\">\n");
    for (k, v) in rows {
        let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    s.push_str("</table>\n");
    s
}

/// Indices keeping about `max` of `n` rows, evenly.
fn thin(n: usize, max: usize) -> Vec<usize> {
    let stride = n.div_ceil(max).max(1);
    let mut v: Vec<usize> = (0..n).step_by(stride).collect();
    if n > 0 && v.last() != Some(&(n - 1)) {
        v.push(n - 1);
    }
    v
}

/// The stem's figure of `figures`, if built.
fn take(figures: &mut Vec<Figure>, stem: &str) -> Option<Figure> {
    let i = figures.iter().position(|f| f.stem == stem)?;
    Some(figures.remove(i))
}

/// A lab table of the folder: file name, table, actuators.
struct Lab {
    file: String,
    table: ResultsTable,
    actuators: Vec<String>,
}

/// Build the HTML of the report of results folder `dir`.
pub fn build(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        bail!("{}: no such results folder", dir.display());
    }
    let results_path = hybridsim_plot::results::results_file(dir);
    if !results_path.is_file() {
        bail!(
            "{}: missing (a results folder written by `hybridsim run` holds results.csv or results.bin, and run.json)",
            results_path.display()
        );
    }
    let run_path = dir.join("run.json");
    let run_text = std::fs::read_to_string(&run_path)
        .with_context(|| format!("{}: cannot read (missing?)", run_path.display()))?;
    let run: Value = serde_json::from_str(&run_text)
        .map_err(|e| anyhow!("{}: damaged, not valid JSON: {e}", run_path.display()))?;
    if !run.is_object() {
        bail!("{}: damaged, not a JSON object", run_path.display());
    }
    let results = table(&results_path)?;

    // Lab tables: every file run.json lists must be there.
    let mut lab_files: Vec<String> = Vec::new();
    if let Some(f) = run.pointer("/files/lab").and_then(Value::as_str) {
        lab_files.push(f.to_string());
    }
    if let Some(list) = run.pointer("/files/labs").and_then(Value::as_array) {
        lab_files.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("lab") && name.ends_with(".csv") && !lab_files.contains(&name) {
            lab_files.push(name);
        }
    }
    lab_files.sort();
    lab_files.dedup();
    let mut labs = Vec::new();
    for file in &lab_files {
        let path = dir.join(file);
        if !path.is_file() {
            bail!(
                "{}: missing (run.json lists it as the lab record)",
                path.display()
            );
        }
        let table = table(&path)?;
        let actuators = table
            .names
            .iter()
            .filter_map(|n| n.strip_prefix("measured."))
            .map(str::to_string)
            .collect();
        labs.push(Lab {
            file: file.clone(),
            table,
            actuators,
        });
    }

    // Ground motions recorded with the results.
    let mut motions: Vec<(Value, Option<ResultsTable>)> = Vec::new();
    for gm in run
        .get("ground_motions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let t = match gm.get("file").and_then(Value::as_str) {
            Some(f) => {
                let p = dir.join(f);
                if !p.is_file() {
                    bail!(
                        "{}: missing (run.json lists it as the input motion)",
                        p.display()
                    );
                }
                Some(table(&p)?)
            }
            None => None,
        };
        motions.push((gm.clone(), t));
    }

    let title = run
        .pointer("/model/title")
        .and_then(Value::as_str)
        .unwrap_or("hybridsim run")
        .to_string();
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n\
         <h1>{}</h1>\n<p class=\"sub\">Hybrid simulation report written by hybridsim {} from <code>{}</code>.</p>\n",
        esc(&short_title(&title, 90)),
        esc(&title),
        esc(&text(run.get("hybridsim_version"))),
        esc(&dir.display().to_string()),
    );
    let _ = writeln!(html, "<nav>{}</nav>", nav());

    // 1. Metadata.
    html.push_str("<section id=\"metadata\">\n<h2>Run</h2>\n");
    let p = |ptr: &str| text(run.pointer(ptr));
    let units = format!(
        "{}, {}, {}",
        p("/model/units/length"),
        p("/model/units/force"),
        p("/model/units/time")
    );
    let records: Vec<String> = motions
        .iter()
        .map(|(gm, _)| {
            let mut s = format!(
                "{}: {}",
                text(gm.get("direction")),
                text(gm.get("description"))
            );
            if let Some(path) = gm.get("path").and_then(Value::as_str) {
                let _ = write!(s, " ({path})");
            }
            if let Some(h) = gm.get("sha256").and_then(Value::as_str) {
                let _ = write!(s, ", sha256 {h}");
            }
            s
        })
        .collect();
    let seeds: Vec<String> = run
        .get("random_seeds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            let what = match s.get("source").and_then(Value::as_str) {
                Some(source) => source.to_string(),
                None => format!("ground motion {}", text(s.get("ground_motion"))),
            };
            format!("{what}: {}", text(s.get("seed")))
        })
        .collect();
    html.push_str(&kv_table(&[
        ("model", title.clone()),
        ("model file", p("/model/path")),
        ("model sha256", p("/model/sha256")),
        ("units (length, force, time)", units),
        ("integrator", p("/settings/integrator")),
        ("time step Δt", format!("{} s", p("/settings/time_step"))),
        ("duration", format!("{} s", p("/settings/duration"))),
        ("steps", p("/settings/steps")),
        (
            "time scale λ",
            format!("{} ({})", p("/time_scale/lambda"), p("/time_scale/regime")),
        ),
        (
            "substeps, controller rate",
            format!(
                "{} substeps, {} Hz",
                p("/time_scale/subcycles"),
                p("/time_scale/controller_rate_hz")
            ),
        ),
        (
            "input motion",
            if records.is_empty() {
                "none".into()
            } else {
                records.join("; ")
            },
        ),
        (
            "random seeds",
            if seeds.is_empty() {
                "none".into()
            } else {
                seeds.join("; ")
            },
        ),
        ("lab transfer", p("/lab/transfer")),
        ("lab.csv scale", p("/lab/lab_csv_scale")),
        ("hybridsim version", p("/hybridsim_version")),
    ]));
    html.push_str("</section>\n");

    // 2–3. Input motion and its response spectrum.
    html.push_str("<section id=\"motion\">\n<h2>Input motion</h2>\n");
    let mut spectra = Vec::new();
    let with_data: Vec<&(Value, Option<ResultsTable>)> =
        motions.iter().filter(|(_, t)| t.is_some()).collect();
    if with_data.is_empty() {
        html.push_str("<p class=\"none\">This run has no ground motion (no record in the results folder).</p>\n");
    } else {
        let mut charts = Vec::new();
        for (gm, t) in &with_data {
            let t = t.as_ref().expect("filtered");
            let (Some(ti), Some(ai)) = (
                t.index("time"),
                (0..t.names.len()).find(|&c| t.names[c] != "time"),
            ) else {
                continue;
            };
            let dir_name = text(gm.get("direction"));
            let idx = thin(t.rows(), 6000);
            charts.push(Chart {
                title: format!("ground acceleration, direction {dir_name}"),
                x: Axis {
                    label: format!("time [{}]", t.units[ti]),
                    log: false,
                },
                y: Axis {
                    label: format!("ground acceleration [{}]", t.units[ai]),
                    log: false,
                },
                series: vec![Series {
                    name: short_title(&text(gm.get("description")), 70),
                    x: idx.iter().map(|&i| t.columns[ti][i]).collect(),
                    y: idx.iter().map(|&i| t.columns[ai][i]).collect(),
                }],
            });
            let periods = {
                let mut p = vec![0.0];
                p.extend(log_periods(0.02, 5.0, 120));
                p
            };
            let s = response_spectrum(&t.columns[ti], &t.columns[ai], &periods, 0.05)
                .map_err(|e| anyhow!("{}: {e}", text(gm.get("file"))))?;
            spectra.push((dir_name, t.units[ai].clone(), s));
        }
        html.push_str(&figure(
            "motion",
            "Ground acceleration recorded with the results (as applied to the model).",
            &charts,
        )?);
    }
    html.push_str("</section>\n<section id=\"spectrum\">\n<h2>Response spectrum</h2>\n");
    if spectra.is_empty() {
        html.push_str("<p class=\"none\">No input motion, hence no response spectrum.</p>\n");
    } else {
        let unit = spectra[0].1.clone();
        let chart = Chart {
            title: "elastic response spectrum, 5 % damping".into(),
            x: Axis {
                label: "period T [s]".into(),
                log: false,
            },
            y: Axis {
                label: format!("pseudo-acceleration Sa [{unit}]"),
                log: false,
            },
            series: spectra
                .iter()
                .map(|(d, _, s)| Series {
                    name: format!("direction {d}"),
                    x: s.periods.clone(),
                    y: s.pseudo_acceleration.clone(),
                })
                .collect(),
        };
        html.push_str(&figure(
            "spectrum",
            "Pseudo-acceleration spectrum of the applied motion (5 % damping, exact piecewise-linear integration).",
            &[chart],
        )?);
    }
    html.push_str("</section>\n");

    // 4. Response histories.
    let mut figs = results_figures(&results, "");
    html.push_str("<section id=\"histories\">\n<h2>Response histories</h2>\n");
    let mut any = false;
    if let Some(f) = take(&mut figs, "displacements") {
        html.push_str(&figure(
            "displacements",
            "Displacements of every degree of freedom, per substructure.",
            &f.charts,
        )?);
        any = true;
    }
    if let Some(f) = take(&mut figs, "interface") {
        html.push_str(&figure(
            "interface",
            "Interface forces Λ and the displacement and velocity gaps between the substructures.",
            &f.charts,
        )?);
        any = true;
    }
    if !any {
        html.push_str("<p class=\"none\">results.csv has no displacement columns.</p>\n");
    }
    html.push_str("</section>\n");

    // 5. Specimen loop beside its numerical twin.
    html.push_str("<section id=\"specimen\">\n<h2>Tested specimen</h2>\n");
    let mut tracking_figs = Vec::new();
    if labs.is_empty() {
        html.push_str("<p class=\"none\">This run has no physical substructure (no lab.csv): there is no measured specimen loop.</p>\n");
        if let Some(f) = take(&mut figs, "hysteresis") {
            html.push_str(&figure(
                "hysteresis",
                "Element force against deformation of the numerical model.",
                &f.charts,
            )?);
        }
    } else {
        for lab in &labs {
            let suffix = lab
                .file
                .strip_prefix("lab")
                .and_then(|s| s.strip_suffix(".csv"))
                .unwrap_or("")
                .replace('.', "_");
            let mut lf = lab_figures(&lab.table, "", &suffix);
            if let Some(f) = take(&mut lf, &format!("specimen_loop{suffix}")) {
                html.push_str(&figure(
                    &format!("specimen_loop{suffix}"),
                    &format!(
                        "Measured force against measured displacement of the specimen ({}), beside its noise-free numerical twin.",
                        lab.file
                    ),
                    &f.charts,
                )?);
            } else {
                let _ = writeln!(
                    html,
                    "<p class=\"none\">{} has no measured displacement and force.</p>",
                    esc(&lab.file)
                );
            }
            if let Some(f) = take(&mut lf, &format!("lab_tracking{suffix}")) {
                tracking_figs.push((format!("lab_tracking{suffix}"), lab, f));
            }
        }
    }
    html.push_str("</section>\n");

    // 6. Energy.
    html.push_str("<section id=\"energy\">\n<h2>Energy</h2>\n");
    let mut any = false;
    if let Some(f) = take(&mut figs, "energy") {
        html.push_str(&figure(
            "energy",
            "Energy channels of the results (energy balance per substructure).",
            &f.charts,
        )?);
        any = true;
    }
    if let Some(f) = take(&mut figs, "element_energy") {
        html.push_str(&figure(
            "element_energy",
            "Cumulative energy absorbed by the elements, Σ∫ r·du; over closed loops the dissipated energy.",
            &f.charts,
        )?);
        any = true;
    }
    if !any {
        html.push_str("<p class=\"none\">results.csv has no energy columns.</p>\n");
    }
    html.push_str("</section>\n");

    // 7. Tracking.
    html.push_str("<section id=\"tracking\">\n<h2>Actuator tracking</h2>\n");
    if labs.is_empty() {
        html.push_str(
            "<p class=\"none\">No actuators in this run (no lab.csv), hence no tracking.</p>\n",
        );
    } else {
        for (id, lab, f) in &tracking_figs {
            html.push_str(&figure(
                id,
                &format!(
                    "Desired, compensated and measured displacement ({}).",
                    lab.file
                ),
                &f.charts,
            )?);
        }
        for lab in &labs {
            let t = &lab.table;
            let mut charts = Vec::new();
            for a in &lab.actuators {
                let (Some(d), Some(m)) = (
                    t.index(&format!("desired.{a}")),
                    t.index(&format!("measured.{a}")),
                ) else {
                    continue;
                };
                let keep: Vec<usize> = (0..t.rows())
                    .filter(|&i| t.columns[d][i].is_finite() && t.columns[m][i].is_finite())
                    .collect();
                let idx: Vec<usize> = thin(keep.len(), MAX_POINTS)
                    .into_iter()
                    .map(|i| keep[i])
                    .collect();
                let x: Vec<f64> = idx.iter().map(|&i| t.columns[d][i]).collect();
                let y: Vec<f64> = idx.iter().map(|&i| t.columns[m][i]).collect();
                let lo = x.iter().chain(&y).cloned().fold(f64::INFINITY, f64::min);
                let hi = x
                    .iter()
                    .chain(&y)
                    .cloned()
                    .fold(f64::NEG_INFINITY, f64::max);
                let mut series = vec![Series {
                    name: "measured against desired".into(),
                    x,
                    y,
                }];
                if lo < hi {
                    series.push(Series {
                        name: "perfect tracking (45°)".into(),
                        x: vec![lo, hi],
                        y: vec![lo, hi],
                    });
                }
                let unit = &t.units[d];
                charts.push(Chart {
                    title: format!("synchronization subspace, actuator {a}"),
                    x: Axis {
                        label: format!("desired displacement [{unit}]"),
                        log: false,
                    },
                    y: Axis {
                        label: format!("measured displacement [{unit}]"),
                        log: false,
                    },
                    series,
                });
            }
            if !charts.is_empty() {
                let id = format!(
                    "synchronization{}",
                    lab.file
                        .strip_prefix("lab")
                        .and_then(|s| s.strip_suffix(".csv"))
                        .unwrap_or("")
                        .replace('.', "_")
                );
                html.push_str(&figure(
                    &id,
                    &format!("Synchronization subspace plot ({}): a lag opens the line into an ellipse, an amplitude error tilts it.", lab.file),
                    &charts,
                )?);
            }
        }
        let inds: Vec<&Value> = run
            .get("indicators")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        if inds.is_empty() {
            html.push_str("<p class=\"none\">run.json has no tracking indicators.</p>\n");
        } else {
            html.push_str("<table class=\"grid\" id=\"indicators\">\n<tr><th>actuator</th><th>delay [s]</th><th>NRMS tracking error</th><th>peak tracking error</th><th>energy error</th><th>energy input</th><th>normalized energy error</th></tr>\n");
            for i in inds {
                let _ = writeln!(
                    html,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&text(i.get("actuator"))),
                    esc(&text(i.get("delay_seconds"))),
                    esc(&text(i.get("nrms_tracking_error"))),
                    esc(&text(i.get("peak_tracking_error"))),
                    esc(&text(i.get("energy_error"))),
                    esc(&text(i.get("energy_input"))),
                    esc(&text(i.get("normalized_energy_error"))),
                );
            }
            html.push_str("</table>\n");
        }
    }
    html.push_str("</section>\n");

    // 8. Peaks.
    html.push_str("<section id=\"peaks\">\n<h2>Peaks</h2>\n<table class=\"grid\" id=\"peak-table\">\n<tr><th>channel</th><th>unit</th><th>minimum</th><th>maximum</th><th>peak |x|</th><th>at time [s]</th></tr>\n");
    let time = results.index("time").map(|i| &results.columns[i]);
    for (c, name) in results.names.iter().enumerate() {
        if name == "time" {
            continue;
        }
        let col = &results.columns[c];
        let (mut lo, mut hi, mut peak, mut at) = (f64::INFINITY, f64::NEG_INFINITY, -1.0f64, None);
        for (k, &x) in col.iter().enumerate() {
            if !x.is_finite() {
                continue;
            }
            lo = lo.min(x);
            hi = hi.max(x);
            if x.abs() > peak {
                peak = x.abs();
                at = Some(k);
            }
        }
        let when = match (at, time) {
            (Some(k), Some(t)) => num(t[k]),
            _ => "—".into(),
        };
        let _ = writeln!(
            html,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(name),
            esc(&results.units[c]),
            num(lo),
            num(hi),
            if peak >= 0.0 { num(peak) } else { "—".into() },
            when
        );
    }
    html.push_str("</table>\n</section>\n");

    // 9. Safety.
    html.push_str("<section id=\"safety\">\n<h2>Safety</h2>\n");
    let safety: Vec<&Value> = run
        .get("safety")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    if safety.is_empty() {
        html.push_str(
            "<p class=\"none\">No safety layer in this run (no physical substructure).</p>\n",
        );
    } else {
        html.push_str("<table class=\"grid\" id=\"safety-table\">\n<tr><th>substructure</th><th>state</th><th>event</th><th>second event</th><th>ramp-down</th><th>commands sent</th><th>largest command</th><th>displacement limit</th><th>transfer fault</th></tr>\n");
        for s in safety {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text(s.get("substructure"))),
                esc(&text(s.get("state"))),
                esc(&text(s.get("event"))),
                esc(&text(s.get("second_event"))),
                esc(&text(s.get("ramp_down"))),
                esc(&text(s.get("commands_sent"))),
                esc(&text(s.get("max_command_sent"))),
                esc(&text(s.get("displacement_limits"))),
                esc(&text(s.get("transfer_fault"))),
            );
        }
        html.push_str("</table>\n");
    }
    let warnings: Vec<String> = run
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|w| text(Some(w)))
        .collect();
    if !warnings.is_empty() {
        html.push_str("<h3>Warnings</h3>\n<ul>\n");
        for w in warnings {
            let _ = writeln!(html, "<li>{}</li>", esc(&w));
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</section>\n");

    // 10. How the run ended.
    let status = text(run.get("status"));
    let class = if status == "completed" { "ok" } else { "bad" };
    let _ = writeln!(
        html,
        "<section id=\"ending\">\n<h2>How the run ended</h2>\n<p class=\"{class}\">Status: <strong>{}</strong>.</p>",
        esc(&status)
    );
    html.push_str(&kv_table(&[
        ("safety event", p("/safety_event")),
        ("error", p("/error")),
        (
            "steps completed",
            format!("{} of {}", p("/steps_completed"), p("/settings/steps")),
        ),
        (
            "time reached",
            format!("{} s of {} s", p("/time_reached"), p("/settings/duration")),
        ),
        ("last step on disk", p("/last_step_on_disk")),
        ("rows on disk", p("/rows_on_disk")),
        ("wall time", format!("{} s", p("/timing/wall_seconds"))),
    ]));
    html.push_str("</section>\n</main>\n</body>\n</html>\n");
    Ok(html)
}

/// The table of contents.
fn nav() -> String {
    let names = [
        "Run",
        "Input motion",
        "Response spectrum",
        "Histories",
        "Specimen",
        "Energy",
        "Tracking",
        "Peaks",
        "Safety",
        "Ending",
    ];
    SECTIONS
        .iter()
        .zip(names)
        .map(|(id, n)| format!("<a href=\"#{id}\">{n}</a>"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The page's style sheet (inline: the file needs nothing else).
const CSS: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;color:#222;background:#fafafa;margin:0}\
main{max-width:1150px;margin:0 auto;padding:1.5em 2em;background:#fff}\
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;border-bottom:2px solid #1f77b4;padding-bottom:.2em;margin-top:1.8em}\
.sub{color:#555}nav{margin:1em 0;font-size:.95em}nav a{color:#1f77b4;text-decoration:none}\
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}th,td{border:1px solid #ddd;padding:.3em .6em;text-align:left;vertical-align:top}\
table.kv th{background:#f3f6fa;width:16em}table.grid th{background:#f3f6fa}table.grid td{font-variant-numeric:tabular-nums}\
td{word-break:break-word}figure{margin:1em 0}svg.chart{width:100%;height:auto;display:block;border:1px solid #eee}\
figcaption{color:#555;font-size:.9em;margin-top:.3em}.none{color:#777;font-style:italic}.ok{color:#2c7a2c}.bad{color:#b22222}\
code{font-size:.9em}";
