//! `hybridsim analyze energy-error RUN --reference REF`: the cumulative energy error `E_c` of a
//! results folder against a reference results folder (Hung and El-Tawil 2009, eq 18;
//! [`hybridsim::analysis::energy_error`]).
//!
//! `E_c(n) = Σ_{j=1}^{n} |r_j^ref (d_j − d_j^ref)|` at one node of interest: `d` from RUN's
//! `results.csv`, `d^ref` and `r^ref` from REF's, matched by time (REF must have a row at
//! every time of RUN: the same or a finer time step that divides it, `[output] every = 1`).
//!
//! - The node of interest is `--node N --dof D`, by default the first DOF of RUN's first
//!   physical substructure (run.json).
//! - `d` is the column `u.PART.N.D` of a numerical partition of RUN when there is one (a
//!   physical partition records what its specimen was commanded), else of any partition;
//!   `--displacement COLUMN` names it instead. `d^ref` is REF's `u.*.N.D`.
//! - `r^ref` is REF's restoring force at the node: the sum of every element force column
//!   `force.ELEMENT.N.D` (damping columns `force.rayleigh@…` excluded), or the sum of the
//!   columns listed in `--force A,B`.
//!
//! Written by default into RUN itself: `energy_error.csv` (time, d, d_ref, r_ref, E_c per
//! step), `energy_error.json` and run.json's `analysis.energy_error` (the summary); with
//! `-o DIR` the CSV and JSON go to DIR and run.json is left alone.

use anyhow::{bail, Context, Result};
use hybridsim_plot::results::ResultsTable;
use hybridsim_plot::{Axis, Chart, Series};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::analyze::Format;

/// `analyze energy-error`.
#[derive(clap::Args)]
pub struct EnergyErrorArgs {
    /// The results folder under study (results.csv and run.json of `run`/`realtime`).
    pub run: PathBuf,
    /// The reference results folder (typically the monolithic scheme at a finer time step).
    #[arg(long)]
    pub reference: PathBuf,
    /// Node of interest (default: the first DOF of the first physical substructure).
    #[arg(long)]
    pub node: Option<String>,
    /// DOF of the node of interest (default: the node's only DOF, or that of --node's default).
    #[arg(long)]
    pub dof: Option<String>,
    /// RUN's displacement column (without the unit), instead of u.PART.NODE.DOF.
    #[arg(long)]
    pub displacement: Option<String>,
    /// REF's force columns to sum as r_ref (comma-separated, without units), instead of every
    /// element force at the node.
    #[arg(long, value_delimiter = ',')]
    pub force: Vec<String>,
    /// Write energy_error.csv/json here and leave RUN (and its run.json) unchanged.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Image formats of the plot (energy_error.png/svg).
    #[arg(long, value_enum, default_value = "none")]
    pub format: Format,
}

fn read_json(folder: &Path) -> Result<Value> {
    let p = folder.join("run.json");
    let text = std::fs::read_to_string(&p).with_context(|| {
        format!(
            "{}: not a results folder (cannot read run.json)",
            folder.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", p.display()))
}

fn read_table(folder: &Path) -> Result<ResultsTable> {
    ResultsTable::read(&folder.join("results.csv")).map_err(|e| anyhow::anyhow!("{e}"))
}

fn column(t: &ResultsTable, name: &str) -> Option<usize> {
    t.names.iter().position(|n| n == name)
}

/// `u.PART.NODE.DOF` columns of `t`, as (index, partition).
fn displacement_columns<'a>(t: &'a ResultsTable, node: &str, dof: &str) -> Vec<(usize, &'a str)> {
    t.names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let rest = n.strip_prefix("u.")?;
            let part = rest.strip_suffix(&format!(".{node}.{dof}"))?;
            (!part.is_empty() && !part.contains('.')).then_some((i, part))
        })
        .collect()
}

/// Element force columns at the node: `force.ELEMENT.NODE.DOF`, damping excluded.
fn force_columns(t: &ResultsTable, node: &str, dof: &str) -> Vec<usize> {
    let suffix = format!(".{node}.{dof}");
    t.names
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.strip_prefix("force.")
                .and_then(|r| r.strip_suffix(&suffix))
                .is_some_and(|e| !e.is_empty() && !e.contains('.') && !e.contains('@'))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The node of interest by default: the first DOF of the first physical substructure.
fn default_node(run: &Value) -> Option<(String, String)> {
    let parts = run["substructures"].as_array()?;
    let dof = parts
        .iter()
        .find(|p| p["physical"].as_bool() == Some(true))?["dofs"]
        .as_array()?
        .first()?
        .as_str()?;
    let (n, d) = dof.split_once('.')?;
    Some((n.to_string(), d.to_string()))
}

/// Run the command.
pub fn execute(a: EnergyErrorArgs) -> Result<ExitCode> {
    let run_name = a.run.display().to_string();
    let ref_name = a.reference.display().to_string();
    let run_json = read_json(&a.run)?;
    let ref_json = read_json(&a.reference)?;
    let units = &run_json["model"]["units"];
    if units != &ref_json["model"]["units"] {
        bail!(
            "{ref_name}: the reference's units {} differ from {run_name}'s {}",
            ref_json["model"]["units"],
            units
        );
    }
    let run = read_table(&a.run)?;
    let reference = read_table(&a.reference)?;
    let (node, dof) = match (&a.node, &a.dof) {
        (Some(n), Some(d)) => (n.clone(), d.clone()),
        (Some(n), None) => {
            let dofs: Vec<String> = run
                .names
                .iter()
                .filter_map(|c| {
                    let rest = c.strip_prefix("u.")?;
                    let mut it = rest.rsplitn(3, '.');
                    let d = it.next()?;
                    (it.next()? == n).then(|| d.to_string())
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            match dofs.as_slice() {
                [d] => (n.clone(), d.clone()),
                [] => {
                    bail!("{run_name}: option --node: no displacement of node {n} in results.csv")
                }
                _ => bail!(
                    "{run_name}: option --dof: node {n} has DOFs {}; name one",
                    dofs.join(", ")
                ),
            }
        }
        (None, _) => default_node(&run_json).with_context(|| {
            format!("{run_name}: run.json names no physical substructure: give --node and --dof")
        })?,
    };
    // d: RUN's displacement column.
    let d_col = match &a.displacement {
        Some(name) => column(&run, name).with_context(|| {
            format!("{run_name}/results.csv: option --displacement: no column {name}")
        })?,
        None => {
            let cands = displacement_columns(&run, &node, &dof);
            let physical = |part: &str| {
                run_json["substructures"].as_array().is_some_and(|ps| {
                    ps.iter().any(|p| {
                        p["name"].as_str() == Some(part) && p["physical"].as_bool() == Some(true)
                    })
                })
            };
            cands
                .iter()
                .find(|(_, p)| !physical(p))
                .or(cands.first())
                .map(|(i, _)| *i)
                .with_context(|| {
                    format!("{run_name}/results.csv: no displacement column u.*.{node}.{dof}")
                })?
        }
    };
    let dr_col = displacement_columns(&reference, &node, &dof)
        .first()
        .map(|(i, _)| *i)
        .with_context(|| {
            format!("{ref_name}/results.csv: no displacement column u.*.{node}.{dof}")
        })?;
    let f_cols: Vec<usize> = if a.force.is_empty() {
        let f = force_columns(&reference, &node, &dof);
        if f.is_empty() {
            bail!(
                "{ref_name}/results.csv: no element force column force.*.{node}.{dof} (record \
                 element forces, or name the columns with --force)"
            );
        }
        f
    } else {
        a.force
            .iter()
            .map(|name| {
                column(&reference, name.trim()).with_context(|| {
                    format!("{ref_name}/results.csv: option --force: no column {name}")
                })
            })
            .collect::<Result<_>>()?
    };
    let (Some(t_run), Some(t_ref)) = (column(&run, "time"), column(&reference, "time")) else {
        bail!("{run_name} or {ref_name}: results.csv has no time column");
    };
    let times = &run.columns[t_run];
    let ref_times = &reference.columns[t_ref];
    if times.len() < 2 {
        bail!("{run_name}/results.csv: no completed step to compare");
    }
    let dt = times[1] - times[0];
    let tol = 1e-6 * dt.abs().max(f64::MIN_POSITIVE);
    // Rows 1.. of RUN (step j = 1…n) matched to REF rows by time.
    let (mut t, mut d, mut d_ref, mut r_ref) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut beyond = 0usize;
    let ref_end = ref_times.last().copied().unwrap_or(f64::NEG_INFINITY);
    for (j, &tj) in times.iter().enumerate().skip(1) {
        if !run.columns[d_col][j].is_finite() {
            break; // a run that failed: its last row may be NaN
        }
        if tj > ref_end + tol {
            beyond += 1;
            continue;
        }
        let k = ref_times.partition_point(|&x| x < tj - tol);
        if k >= ref_times.len() || (ref_times[k] - tj).abs() > tol {
            bail!(
                "{ref_name}/results.csv: no row at t = {tj} (a time of {run_name}); the reference \
                 must be recorded at every time of the run: a time step that divides {dt} and \
                 [output] every = 1"
            );
        }
        t.push(tj);
        d.push(run.columns[d_col][j]);
        d_ref.push(reference.columns[dr_col][k]);
        r_ref.push(f_cols.iter().map(|&c| reference.columns[c][k]).sum());
    }
    let history = hybridsim::analysis::energy_error_history(&d, &d_ref, &r_ref)
        .map_err(|e| anyhow::anyhow!("{run_name} against {ref_name}: {e}"))?;
    let total = history.last().copied().unwrap_or(0.0);
    let unit = |k: &str| units[k].as_str().unwrap_or("").to_string();
    let energy_unit = format!("{}*{}", unit("force"), unit("length"));
    let d_name = run.names[d_col].clone();
    let f_names: Vec<String> = f_cols.iter().map(|&c| reference.names[c].clone()).collect();
    let mut csv = format!(
        "time[{}],d[{}],d_ref[{}],r_ref[{}],E_c[{energy_unit}]\n",
        unit("time"),
        run.units[d_col],
        reference.units[dr_col],
        reference.units[f_cols[0]]
    );
    for i in 0..t.len() {
        let _ = writeln!(
            csv,
            "{},{},{},{},{}",
            hybridsim_io::csv::format_number(t[i]),
            hybridsim_io::csv::format_number(d[i]),
            hybridsim_io::csv::format_number(d_ref[i]),
            hybridsim_io::csv::format_number(r_ref[i]),
            hybridsim_io::csv::format_number(history[i])
        );
    }
    let summary = json!({
        "definition": "E_c = sum_j |r_ref_j (d_j - d_ref_j)|, Hung and El-Tawil (2009), eq 18",
        "reference": ref_name,
        "reference_model_sha256": ref_json["model"]["sha256"],
        "reference_integrator": ref_json["settings"]["integrator"],
        "reference_time_step": ref_json["settings"]["time_step"],
        "node": node,
        "dof": dof,
        "displacement": d_name,
        "reference_displacement": reference.names[dr_col],
        "reference_force": f_names,
        "steps": t.len(),
        "steps_beyond_reference": beyond,
        "until": t.last().copied(),
        "E_c": total,
        "unit": energy_unit,
        "file": "energy_error.csv",
    });
    let out = a.output.clone().unwrap_or_else(|| a.run.clone());
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create the output folder {}", out.display()))?;
    let write = |name: &str, text: &str| -> Result<()> {
        let p = out.join(name);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))
    };
    write("energy_error.csv", &csv)?;
    write(
        "energy_error.json",
        &serde_json::to_string_pretty(&summary)?,
    )?;
    if a.output.is_none() {
        if run_json["status"].as_str() == Some("running") {
            bail!("{run_name}: run.json says the run is still going; not adding the summary");
        }
        let mut updated = run_json.clone();
        if !updated["analysis"].is_object() {
            updated["analysis"] = json!({});
        }
        updated["analysis"]["energy_error"] = summary.clone();
        hybridsim_io::write_json_atomic(&a.run.join("run.json"), &updated)
            .with_context(|| format!("cannot write {}/run.json", a.run.display()))?;
    }
    let exts: &[&str] = match a.format {
        Format::Png => &["png"],
        Format::Svg => &["svg"],
        Format::Both => &["png", "svg"],
        Format::None => &[],
    };
    for ext in exts {
        let series = |name: &str, y: &[f64]| Series {
            name: name.into(),
            x: t.clone(),
            y: y.to_vec(),
        };
        let time_axis = Axis {
            label: format!("time [{}]", unit("time")),
            log: false,
        };
        let charts = [
            Chart {
                title: format!("{d_name}: {run_name} and the reference {ref_name}"),
                x: time_axis.clone(),
                y: Axis {
                    label: format!("displacement [{}]", run.units[d_col]),
                    log: false,
                },
                series: vec![series("run", &d), series("reference", &d_ref)],
            },
            Chart {
                title: format!("cumulative energy error E_c = {total:.4e} {energy_unit}"),
                x: time_axis,
                y: Axis {
                    label: format!("E_c [{energy_unit}]"),
                    log: false,
                },
                series: vec![series("E_c", &history)],
            },
        ];
        hybridsim_plot::save_grid(&charts, &out.join(format!("energy_error.{ext}")))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    println!(
        "{run_name}: E_c = {total:.6e} {energy_unit} over {} steps (to t = {}), node {node}.{dof}: \
         {d_name} against {ref_name}'s {} with r_ref = {}",
        t.len(),
        t.last().copied().unwrap_or(0.0),
        reference.names[dr_col],
        f_names.join(" + ")
    );
    if beyond > 0 {
        println!(
            "warning: the reference ends at t = {ref_end}: {beyond} later step(s) of the run not compared"
        );
    }
    println!(
        "wrote energy_error.csv, energy_error.json{} in {}",
        if a.output.is_none() {
            " and run.json's analysis.energy_error"
        } else {
            ""
        },
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
