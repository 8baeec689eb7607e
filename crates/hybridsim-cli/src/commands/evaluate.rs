//! `hybridsim evaluate RESULTS_DIR --reference REFERENCE_DIR [--response COLUMN]… [--json]`:
//! the evaluation criteria J1–J9 of the vRTHS benchmark (Silva et al. 2020; formulas in
//! `hybridsim::analysis::tracking`) for a results folder against a reference results folder.
//!
//! - J1–J3 (delay by cross-correlation, normalized RMS and peak tracking errors) per actuator
//!   from the `desired.NAME` and `measured.NAME` columns of RESULTS_DIR/lab.csv, sampled at the
//!   controller rate (the spacing of its `wall_time` column);
//! - the response criteria from results.csv of both folders, aligned on their `time` column
//!   (the same time steps are required): for each response column, the normalized RMS error
//!   and the normalized peak error, numbered as the benchmark does for its three storeys (the
//!   first column, the tested storey: J4 and J5; the others: J6, J7 RMS and J8, J9 peak). By
//!   default every
//!   displacement column (`u.…`) whose reference is not zero everywhere; `--response` picks
//!   columns by name (without the `[unit]`), in the order given.
//!
//! Prints a table (or the JSON with `--json`) and writes RESULTS_DIR/evaluation.json. Every
//! error names the file, the column and the reason.

use anyhow::{anyhow, bail, Result};
use hybridsim::analysis::tracking::{
    response_criteria, response_criterion_numbers, tracking_criteria,
};
use hybridsim_plot::results::ResultsTable;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `evaluate`.
#[derive(clap::Args)]
pub struct Args {
    /// The results folder to evaluate (results.csv and lab.csv of a run with a [lab]).
    pub results: PathBuf,
    /// The reference results folder (results.csv of a run at the same time steps, e.g. the
    /// same model with an ideal transfer system).
    #[arg(long)]
    pub reference: PathBuf,
    /// A results.csv column (name without unit) for the response criteria; repeat for more
    /// (default: every displacement column `u.…` whose reference is not zero everywhere).
    #[arg(long = "response", value_name = "COLUMN")]
    pub response: Vec<String>,
    /// Largest delay searched for J1, in seconds.
    #[arg(long, default_value_t = 0.25, value_name = "SECONDS")]
    pub max_delay: f64,
    /// Print the evaluation as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn read(path: &Path) -> Result<ResultsTable> {
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    ResultsTable::read(path).map_err(|e| anyhow!("{e}"))
}

/// The first column `Q.*.N.D` of `t` for a name `Q.S.N.D` (same quantity, node and DOF under any
/// substructure).
fn same_dof<'a>(t: &'a ResultsTable, name: &str) -> Option<&'a [f64]> {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let (q, node, dof) = (parts[0], parts[2], parts[3]);
    t.names.iter().find_map(|n| {
        let p: Vec<&str> = n.split('.').collect();
        (p.len() == 4 && p[0] == q && p[2] == node && p[3] == dof)
            .then(|| t.column(n))
            .flatten()
    })
}

fn column<'a>(t: &'a ResultsTable, file: &Path, name: &str, why: &str) -> Result<&'a [f64]> {
    t.column(name)
        .ok_or_else(|| anyhow!("{}: column `{name}`: missing ({why})", file.display()))
}

/// The controller sampling interval from lab.csv's `wall_time` column (uniform spacing
/// required).
fn sampling_interval(t: &ResultsTable, file: &Path) -> Result<f64> {
    let w = column(t, file, "wall_time", "J1 needs the controller clock")?;
    if w.len() < 3 {
        bail!(
            "{}: column `wall_time`: {} rows; J1–J3 need at least 3",
            file.display(),
            w.len()
        );
    }
    let dt = (w[w.len() - 1] - w[0]) / (w.len() - 1) as f64;
    if !(dt.is_finite() && dt > 0.0) {
        bail!(
            "{}: column `wall_time`: not increasing (spacing {dt})",
            file.display()
        );
    }
    for (k, p) in w.windows(2).enumerate() {
        if ((p[1] - p[0]) - dt).abs() > 1e-6 * dt {
            bail!(
                "{}: column `wall_time`: rows {} and {} are {} s apart, not the uniform {dt} s \
                 the cross-correlation needs",
                file.display(),
                k + 2,
                k + 3,
                p[1] - p[0]
            );
        }
    }
    Ok(dt)
}

/// Both results.csv on the same time steps, or an error naming the file, column and row.
fn check_aligned(a: &ResultsTable, a_file: &Path, r: &ResultsTable, r_file: &Path) -> Result<()> {
    let ta = column(a, a_file, "time", "the time axis")?;
    let tr = column(r, r_file, "time", "the time axis")?;
    if ta.len() != tr.len() {
        bail!(
            "{}: column `time`: {} rows, but the reference {} has {}; both runs must have the \
             same time steps",
            a_file.display(),
            ta.len(),
            r_file.display(),
            tr.len()
        );
    }
    for (k, (x, y)) in ta.iter().zip(tr).enumerate() {
        if (x - y).abs() > 1e-9 * x.abs().max(y.abs()).max(1.0) {
            bail!(
                "{}: column `time`: data row {} is at t = {x}, the reference {} at t = {y}; \
                 both runs must have the same time steps",
                a_file.display(),
                k + 1,
                r_file.display()
            );
        }
    }
    Ok(())
}

/// Compute the criteria, print them and write `evaluation.json`.
pub fn execute(args: Args) -> Result<ExitCode> {
    if !(args.max_delay.is_finite() && args.max_delay > 0.0) {
        bail!(
            "--max-delay: {} is not a positive number of seconds",
            args.max_delay
        );
    }
    let lab_file = args.results.join("lab.csv");
    let res_file = args.results.join("results.csv");
    let ref_file = args.reference.join("results.csv");

    // J1–J3 per actuator from lab.csv.
    let lab = read(&lab_file)?;
    let dt_c = sampling_interval(&lab, &lab_file)?;
    let max_lag = (args.max_delay / dt_c).ceil() as usize;
    let actuators: Vec<String> = lab
        .names
        .iter()
        .filter_map(|n| n.strip_prefix("desired.").map(str::to_string))
        .collect();
    if actuators.is_empty() {
        bail!(
            "{}: no `desired.NAME` column: not the lab records of a run with a [lab]",
            lab_file.display()
        );
    }
    let mut tracking = Vec::new();
    for a in &actuators {
        let d = column(&lab, &lab_file, &format!("desired.{a}"), "J1–J3")?;
        let mcol = format!("measured.{a}");
        let m = column(&lab, &lab_file, &mcol, "J1–J3")?;
        let c = tracking_criteria(d, m, dt_c, max_lag).map_err(|e| {
            anyhow!(
                "{}: columns `desired.{a}` and `{mcol}`: {e}",
                lab_file.display()
            )
        })?;
        tracking.push((a.clone(), c));
    }

    // Response criteria against the reference.
    let res = read(&res_file)?;
    let reference = read(&ref_file)?;
    check_aligned(&res, &res_file, &reference, &ref_file)?;
    let mut chosen: Vec<(String, String)> = Vec::new();
    let mut skipped = Vec::new();
    if args.response.is_empty() {
        for (i, n) in reference.names.iter().enumerate() {
            if !n.starts_with("u.") {
                continue;
            }
            if reference.columns[i].iter().all(|x| *x == 0.0) {
                skipped.push(n.clone());
            } else {
                chosen.push((n.clone(), reference.units[i].clone()));
            }
        }
        if chosen.is_empty() {
            bail!(
                "{}: no displacement column `u.…` that moves in the reference; name the \
                 response columns with --response",
                ref_file.display()
            );
        }
    } else {
        for n in &args.response {
            let i = reference.index(n).ok_or_else(|| {
                anyhow!(
                    "{}: column `{n}` (--response): no such column",
                    ref_file.display()
                )
            })?;
            chosen.push((n.clone(), reference.units[i].clone()));
        }
    }
    let nresp = chosen.len();
    let mut response = Vec::new();
    for (i, (name, unit)) in chosen.iter().enumerate() {
        let x = match res.column(name) {
            Some(x) => x,
            // The same DOF under another substructure name (a monolithic reference against a
            // partitioned test): `u.S.N.D` matches the first `u.*.N.D` of the results.
            None => same_dof(&res, name).ok_or_else(|| {
                anyhow!(
                    "{}: column `{name}`: missing (present in the reference), and no column of \
                     the same DOF under another substructure",
                    res_file.display()
                )
            })?,
        };
        let r = reference.column(name).unwrap_or_default();
        let c = response_criteria(x, r).map_err(|e| {
            anyhow!(
                "{} against {}: column `{name}`: {e}",
                res_file.display(),
                ref_file.display()
            )
        })?;
        let (jr, jp) = response_criterion_numbers(nresp, i);
        response.push((name.clone(), unit.clone(), jr, jp, c));
    }

    // The JSON and the table.
    let one = actuators.len() == 1;
    let mut criteria = serde_json::Map::new();
    for (a, c) in &tracking {
        let key = |j: u32| {
            if one {
                format!("J{j}")
            } else {
                format!("J{j}.{a}")
            }
        };
        criteria.insert(key(1), json!(c.j1_delay));
        criteria.insert(key(2), json!(c.j2_nrms));
        criteria.insert(key(3), json!(c.j3_peak));
    }
    for (_, _, jr, _, c) in &response {
        criteria.insert(format!("J{jr}"), json!(c.nrms));
    }
    for (_, _, _, jp, c) in &response {
        criteria.insert(format!("J{jp}"), json!(c.peak));
    }
    let doc = json!({
        "results": args.results.display().to_string(),
        "reference": args.reference.display().to_string(),
        "definition": "vRTHS benchmark criteria (Silva et al. 2020): J1 delay [s] of measured behind \
                       desired displacement by cross-correlation; J2 normalized RMS and J3 normalized peak \
                       tracking error (lab.csv); then per response column its normalized RMS error and \
                       its normalized peak error against the reference run (results.csv)",
        "controller_interval_seconds": dt_c,
        "max_delay_seconds": args.max_delay,
        "criteria": criteria,
        "tracking": tracking.iter().map(|(a, c)| json!({
            "actuator": a,
            "J1_delay_seconds": c.j1_delay,
            "J2_nrms_tracking_error": c.j2_nrms,
            "J3_peak_tracking_error": c.j3_peak,
        })).collect::<Vec<_>>(),
        "response": response.iter().map(|(n, u, jr, jp, c)| json!({
            "column": n,
            "unit": u,
            "nrms_criterion": format!("J{jr}"),
            "nrms_error": c.nrms,
            "peak_criterion": format!("J{jp}"),
            "peak_error": c.peak,
        })).collect::<Vec<_>>(),
        "skipped_zero_reference": skipped,
    });
    let out = args.results.join("evaluation.json");
    std::fs::write(&out, serde_json::to_string_pretty(&doc)? + "\n")
        .map_err(|e| anyhow!("{}: cannot write: {e}", out.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "evaluation of {} against {} (vRTHS benchmark criteria, Silva et al. 2020)",
        args.results.display(),
        args.reference.display()
    );
    println!("tracking (lab.csv, Δt^C = {dt_c} s):");
    for (a, c) in &tracking {
        println!(
            "  {a}: J1 delay {:.4} s ({:.1} ticks), J2 NRMS tracking error {:.3}%, J3 peak tracking error {:.3}%",
            c.j1_delay,
            c.j1_delay / dt_c,
            100.0 * c.j2_nrms,
            100.0 * c.j3_peak
        );
    }
    println!("response against the reference (results.csv):");
    println!(
        "  {:<32} {:>8} {:>12} {:>8} {:>12}",
        "column", "", "NRMS", "", "peak"
    );
    for (n, u, jr, jp, c) in &response {
        println!(
            "  {:<32} {:>8} {:>11.4}% {:>8} {:>11.4}%",
            format!("{n}[{u}]"),
            format!("J{jr}"),
            100.0 * c.nrms,
            format!("J{jp}"),
            100.0 * c.peak
        );
    }
    if !skipped.is_empty() {
        println!("  skipped (zero in the reference): {}", skipped.join(", "));
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
