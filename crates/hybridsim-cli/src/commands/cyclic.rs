//! `hybridsim cyclic MODEL --element NAME …`: impose a deformation history on one element of a
//! model file through its displacement-driven form ([`hybridsim::elements::ElementDriver`]) and
//! record its force — how laboratories characterize devices (Abbiati et al. 2019, Figs 19, 22).
//!
//! The history is a [`MotionHistory`], the type of the model file's `[[imposed_motion]]`
//! entries, evaluated by the same [`MotionHistory::kinematics`] (Hovmand et al. 2022, eq 3c; issue
//! 4): `--history sine|ramp|file` are shorthands that build one (a displacement sine, ramped
//! cycles, or the natural cubic spline through a two-column file's samples) imposed as
//! `u = [d]` on a node-to-ground element and `u = [d, 0]` on a two-node element (node 1 moves,
//! node 2 held); `--motion NAME` imposes the `[[imposed_motion]]` entry `NAME` of the model
//! file on the element DOFs it drives (the others held), with the exact velocities of the
//! history. The results folder holds `results.csv` (`time`, `deformation.<el>`,
//! `velocity.<el>`, `force.<el>.<node>.<dof>` per element DOF, `state.<el>.<name>` per extra
//! state, `state.<el>.absorbed_energy` = `∫ r dd` integrated by the driver,
//! `state.<el>.dissipated` = cumulative dissipated energy; headers `name[unit]` in the model's
//! units), `run.json` and a copy of the model.

use anyhow::{bail, Context, Result};
use hybridsim::elements::ElementDriver;
use hybridsim::model::imposed_motion::{self, MotionHistory, MotionQuantity};
use hybridsim_io::csv::CsvFile;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Shape of the imposed deformation history (shorthands building a [`MotionHistory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum History {
    /// `A sin(2π f t)` for `cycles` cycles.
    Sine,
    /// Cycles of linearly growing amplitude: `A (t f / cycles) sin(2π f t)`.
    Ramp,
    /// Two columns (time, deformation) from `--file`, through a natural cubic spline.
    File,
}

/// Arguments of `cyclic`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML) holding the element.
    pub model: PathBuf,
    /// Name of the element to drive (its `name` in the model file).
    #[arg(short, long)]
    pub element: String,
    /// History shape.
    #[arg(long, value_enum, default_value = "sine")]
    pub history: History,
    /// Use the `[[imposed_motion]]` entry NAME of the model file (its `name`, or
    /// `imposed_motion[i]`) on the element DOFs it drives, instead of `--history`.
    #[arg(long, conflicts_with_all = ["history", "amplitude", "file"])]
    pub motion: Option<String>,
    /// Deformation amplitude (model length unit); the final amplitude for `ramp`.
    #[arg(short, long)]
    pub amplitude: Option<f64>,
    /// Frequency (1/model time unit).
    #[arg(short, long, default_value_t = 0.5)]
    pub frequency: f64,
    /// Number of cycles (also of a sine `--motion`).
    #[arg(short, long, default_value_t = 3)]
    pub cycles: u32,
    /// Two-column file (time, deformation; spaces, tabs or commas; `#` comments) for
    /// `--history file`.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Driving step (model time unit). Default: 1/400 of a cycle, or the samples' own times.
    #[arg(long)]
    pub dt: Option<f64>,
    /// Results folder (default: results/<model>_cyclic_<element>).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Clear the results folder first when it holds a previous run's results (a run.json, and
    /// only the images of `hybridsim plot` in plots/); without it a non-empty folder is refused.
    #[arg(long)]
    pub overwrite: bool,
}

/// What drives the element: a history per element DOF (`None`: held at zero) and the driving
/// times.
struct Drive {
    histories: Vec<Option<MotionHistory>>,
    t: Vec<f64>,
    description: serde_json::Value,
}

const MAX_STEPS: usize = 20_000_000;

fn positive(x: f64, what: &str) -> Result<f64> {
    if !x.is_finite() || x <= 0.0 {
        bail!("{what} must be finite and > 0, found {x}");
    }
    Ok(x)
}

/// `n + 1` equally spaced times on `[t0, t0 + duration]`, `n = round(duration / dt)`.
fn uniform(t0: f64, duration: f64, dt: f64) -> Result<Vec<f64>> {
    let steps = (duration / dt).round();
    if steps < 1.0 || steps > MAX_STEPS as f64 {
        bail!("--dt {dt} gives {steps} driving steps over {duration}: choose 1 to {MAX_STEPS}");
    }
    let n = steps as usize;
    let h = duration / n as f64;
    Ok((0..=n).map(|k| t0 + k as f64 * h).collect())
}

/// Times every `dt` from `t0` up to `t1` (the last full step).
fn stepped(t0: f64, t1: f64, dt: f64) -> Result<Vec<f64>> {
    let dt = positive(dt, "--dt")?;
    let span = t1 - t0;
    let n = (span / dt * (1.0 + 1e-12)).floor();
    if n < 1.0 || n > MAX_STEPS as f64 {
        bail!("--dt {dt} gives {n} driving steps over {span}: choose 1 to {MAX_STEPS}");
    }
    Ok((0..=n as usize).map(|k| t0 + k as f64 * dt).collect())
}

fn analytic(args: &Args, n_dofs: usize) -> Result<Drive> {
    let amp = positive(
        args.amplitude
            .context("--amplitude is required for the sine and ramp histories")?,
        "--amplitude",
    )?;
    let f = positive(args.frequency, "--frequency")?;
    if args.cycles == 0 {
        bail!("--cycles must be at least 1");
    }
    let duration = args.cycles as f64 / f;
    let dt = positive(args.dt.unwrap_or(1.0 / (400.0 * f)), "--dt")?;
    let t = uniform(0.0, duration, dt)?;
    let ramp = args.history == History::Ramp;
    let history = if ramp {
        MotionHistory::ramped_sine(amp, f, duration)
    } else {
        MotionHistory::sine(amp, f)
    };
    Ok(Drive {
        description: json!({
            "shape": if ramp { "ramp" } else { "sine" },
            "amplitude": amp,
            "frequency": f,
            "cycles": args.cycles,
            "driving_step": duration / (t.len() - 1) as f64,
        }),
        histories: first_dof(history, n_dofs),
        t,
    })
}

fn first_dof(history: MotionHistory, n_dofs: usize) -> Vec<Option<MotionHistory>> {
    let mut h = vec![None; n_dofs];
    h[0] = Some(history);
    h
}

fn from_file(path: &Path, dt: Option<f64>, n_dofs: usize) -> Result<Drive> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the history file {}", path.display()))?;
    let (mut t, mut d) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .collect();
        let parse = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
        match fields.as_slice() {
            [a, b] => match (parse(a), parse(b)) {
                (Some(a), Some(b)) => {
                    if let Some(prev) = t.last() {
                        if a <= *prev {
                            bail!(
                                "{}: line {}: time {a} does not increase (previous {prev})",
                                path.display(),
                                i + 1
                            );
                        }
                    }
                    t.push(a);
                    d.push(b);
                }
                _ => {
                    // A header line is allowed before the first sample.
                    if !t.is_empty() {
                        bail!(
                            "{}: line {}: expected two finite numbers (time, deformation), found `{line}`",
                            path.display(),
                            i + 1
                        );
                    }
                }
            },
            _ => bail!(
                "{}: line {}: expected two columns (time, deformation), found {}",
                path.display(),
                i + 1,
                fields.len()
            ),
        }
    }
    let history = MotionHistory::from_samples(MotionQuantity::Displacement, &t, &d)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let n = t.len();
    let times = match dt {
        None => t.clone(),
        Some(dt) => stepped(t[0], t[n - 1], dt)?,
    };
    Ok(Drive {
        description: json!({
            "shape": "file",
            "file": path.display().to_string(),
            "samples": n,
            "interpolation": "natural cubic spline",
            "resampled_driving_step": dt,
        }),
        histories: first_dof(history, n_dofs),
        t: times,
    })
}

/// The `[[imposed_motion]]` entry `name` of the model on the element's DOFs.
fn from_model(
    args: &Args,
    name: &str,
    model: &hybridsim::Model,
    element: &dyn hybridsim::elements::Element,
) -> Result<Drive> {
    let found = imposed_motion::find(&model.imposed_motions, name);
    if found.is_empty() {
        let mut names: Vec<&str> = model
            .imposed_motions
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        names.dedup();
        bail!(
            "{}: no [[imposed_motion]] named `{name}` ({})",
            args.model.display(),
            if names.is_empty() {
                "the model has none".to_string()
            } else {
                format!("entries: {}", names.join(", "))
            }
        );
    }
    let dofs = element.dofs();
    let histories: Vec<Option<MotionHistory>> = dofs
        .iter()
        .map(|d| {
            found
                .iter()
                .find(|m| m.dof == *d)
                .map(|m| m.history.clone())
        })
        .collect();
    if histories.iter().all(Option::is_none) {
        bail!(
            "{}: [[imposed_motion]] `{name}` drives {} but element `{}` has DOFs {}",
            args.model.display(),
            found
                .iter()
                .map(|m| m.dof.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            args.element,
            dofs.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let active: Vec<&MotionHistory> = histories.iter().flatten().collect();
    // Duration: the last sample of sampled motions; `--cycles` of the slowest sine.
    let slowest = active
        .iter()
        .filter_map(|h| match h {
            MotionHistory::Sine { omega, .. } => Some(std::f64::consts::TAU / omega),
            _ => None,
        })
        .fold(None, |a: Option<f64>, p| Some(a.map_or(p, |a| a.max(p))));
    let fastest = active
        .iter()
        .filter_map(|h| match h {
            MotionHistory::Sine { omega, .. } => Some(std::f64::consts::TAU / omega),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min);
    let spans: Vec<(f64, f64)> = active.iter().filter_map(|h| h.span()).collect();
    let t0 = spans.iter().map(|s| s.0).fold(0.0, f64::min);
    let mut t1 = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    if let Some(p) = slowest {
        if args.cycles == 0 {
            bail!("--cycles must be at least 1");
        }
        t1 = t1.max(args.cycles as f64 * p);
    }
    let times = match (args.dt, fastest.is_finite()) {
        (Some(dt), _) => stepped(t0, t1, dt)?,
        (None, true) => uniform(t0, t1 - t0, fastest / 400.0)?,
        (None, false) => {
            // The samples' own times.
            let mut t: Vec<f64> = active
                .iter()
                .filter_map(|h| match h {
                    MotionHistory::Sampled(pc) => Some(pc.times().to_vec()),
                    _ => None,
                })
                .flatten()
                .collect();
            t.sort_by(f64::total_cmp);
            t.dedup();
            t
        }
    };
    let driven: Vec<serde_json::Value> = found
        .iter()
        .filter(|m| dofs.contains(&m.dof))
        .map(|m| json!({"dof": format!("{}.{}", m.dof.node, m.dof.dof), "history": m.description}))
        .collect();
    Ok(Drive {
        description: json!({
            "shape": "imposed_motion",
            "motion": name,
            "driven": driven,
            "start": t0,
            "end": times.last(),
            "driving_step": args.dt,
        }),
        histories,
        t: times,
    })
}

/// Drive the element and write the results folder.
pub fn execute(args: Args) -> Result<ExitCode> {
    // `model.toml` is the file read again at the end (checked against the SHA-256 of the
    // text that was parsed): the text is not held through the validation nor the test.
    let loaded = super::load_released(&args.model)?;
    let model = &loaded.model;
    let Some(inst) = model.elements.iter().find(|e| *e.name == *args.element) else {
        let names: Vec<&str> = model
            .elements
            .iter()
            .filter(|e| e.element.kind() != "mass")
            .map(|e| &*e.name)
            .collect();
        bail!(
            "{}: no element named `{}` (elements: {})",
            args.model.display(),
            args.element,
            names.join(", ")
        );
    };
    let element = &inst.element;
    let n = element.dofs().len();
    if !matches!(n, 1 | 2) || element.deformation(&vec![0.0; n]).is_none() {
        bail!(
            "element `{}` ({}) has no single deformation: `cyclic` drives one- or two-node elements",
            inst.name,
            element.kind()
        );
    }
    let drive = match (&args.motion, args.history) {
        (Some(name), _) => from_model(&args, name, model, element.as_ref())?,
        (None, History::File) => from_file(
            args.file
                .as_deref()
                .context("--history file needs --file PATH")?,
            args.dt,
            n,
        )?,
        (None, _) => analytic(&args, n)?,
    };
    let mut driver = ElementDriver::from_shared(element, &inst.initial_state)
        .map_err(|e| anyhow::anyhow!("element `{}`: {e}", inst.name))?;

    let folder = args.output.clone().unwrap_or_else(|| {
        let stem = args
            .model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        PathBuf::from("results").join(format!("{stem}_cyclic_{}", args.element))
    });
    // Everything is validated: only now is the folder touched (never overwritten silently).
    hybridsim_io::prepare_folder(&folder, args.overwrite)?;

    // Header with units.
    let units = &model.units;
    let dof = element.dofs()[0].dof;
    let name = &inst.name;
    let mut header = vec![
        format!("time[{}]", units.time),
        format!("deformation.{name}[{}]", units.displacement_unit(&dof)),
        format!("velocity.{name}[{}]", units.velocity_unit(&dof)),
    ];
    for d in element.dofs() {
        header.push(format!(
            "force.{name}.{}.{}[{}]",
            d.node,
            d.dof,
            units.force_unit(&d.dof)
        ));
    }
    for (i, s) in element.state_names().iter().enumerate() {
        let unit = hybridsim::output::unit_of(units, element.state_quantity(i), &dof);
        header.push(format!("state.{name}.{s}[{unit}]"));
    }
    header.push(format!(
        "state.{name}.absorbed_energy[{}]",
        units.energy_unit()
    ));
    header.push(format!("state.{name}.dissipated[{}]", units.energy_unit()));

    let csv_path = folder.join("results.csv");
    let mut out = CsvFile::create(&csv_path, &header.join(","))
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let mut u = vec![0.0; n];
    let mut v = vec![0.0; n];
    let mut row: Vec<f64> = Vec::with_capacity(header.len());
    let mut peak_force = 0.0f64;
    let started = std::time::Instant::now();
    let mut failure: Option<String> = None;
    let mut steps = 0usize;
    let mut rows = 0usize;
    for k in 0..drive.t.len() {
        let t = drive.t[k];
        for (i, h) in drive.histories.iter().enumerate() {
            let [d, dd, _] = h.as_ref().map_or([0.0; 3], |h| h.kinematics(t));
            u[i] = d;
            v[i] = dd;
        }
        if k > 0 {
            let dt = t - drive.t[k - 1];
            if let Err(e) = driver.set_trial(dt, &u, &v) {
                failure = Some(format!("at t = {t}: {e}"));
                break;
            }
            driver.commit();
            steps += 1;
        } else if let Err(e) = driver.set_trial(0.0, &u, &v) {
            failure = Some(format!("at the start: {e}"));
            break;
        } else {
            driver.commit();
        }
        row.clear();
        row.push(t);
        row.push(driver.deformation().unwrap_or(f64::NAN));
        row.push(element.deformation(&v).unwrap_or(f64::NAN));
        row.extend_from_slice(driver.force());
        row.extend_from_slice(driver.states());
        row.push(driver.work());
        row.push(driver.dissipated_energy());
        peak_force = peak_force.max(driver.force()[0].abs());
        out.write_row(&row)
            .with_context(|| format!("cannot write {}", csv_path.display()))?;
        rows += 1;
    }
    out.finish()
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let wall = started.elapsed().as_secs_f64();
    loaded
        .copy_model_to(&folder.join("model.toml"))
        .with_context(|| format!("cannot write {}", folder.join("model.toml").display()))?;
    let status = if failure.is_some() {
        "failed"
    } else {
        "completed"
    };
    let how: Vec<String> = element
        .dofs()
        .iter()
        .zip(&drive.histories)
        .map(|(d, h)| {
            format!(
                "{}.{}: {}",
                d.node,
                d.dof,
                if h.is_some() { "driven" } else { "held at 0" }
            )
        })
        .collect();
    let run = json!({
        "command": "cyclic",
        "status": status,
        "error": failure,
        "hybridsim_version": env!("CARGO_PKG_VERSION"),
        "model": loaded.path.display().to_string(),
        "model_sha256": loaded.sha256,
        "element": {
            "name": &*inst.name,
            "kind": element.kind(),
            "dofs": element.dofs().iter().map(|d| format!("{}.{}", d.node, d.dof)).collect::<Vec<_>>(),
            "parameters": element.parameters().into_iter().map(|(k, x)| (k.to_string(), json!(x))).collect::<serde_json::Map<_, _>>(),
            "initial_state": inst.initial_state,
            "law": element.law_record().map(|(name, values)| {
                let mut law = serde_json::Map::new();
                law.insert("name".into(), json!(name));
                law.insert("summary".into(), json!(element.law_summary()));
                for (k, x) in values {
                    law.insert(k.into(), json!(x));
                }
                law
            }),
        },
        "imposed": {
            "how": how,
            "history": drive.description,
        },
        "units": { "length": units.length, "force": units.force, "time": units.time },
        "steps": steps,
        "rows": rows,
        "peak_force": peak_force,
        "dissipated_energy": driver.dissipated_energy(),
        "wall_time_s": wall,
    });
    hybridsim_io::write_json_atomic(&folder.join("run.json"), &run)
        .with_context(|| format!("cannot write {}", folder.join("run.json").display()))?;
    match failure {
        None => {
            println!(
                "completed {steps} driving steps of `{}` ({}): peak force {peak_force:.6e} {}, dissipated energy {:.6e} {}; results in {}",
                inst.name,
                element.kind(),
                units.force_unit(&dof),
                driver.dissipated_energy(),
                units.energy_unit(),
                folder.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(e) => {
            eprintln!(
                "error: driving `{}` failed {e}; the completed rows are in {}",
                inst.name,
                folder.display()
            );
            Ok(ExitCode::from(1))
        }
    }
}
