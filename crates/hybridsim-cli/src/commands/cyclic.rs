//! `hybridsim cyclic MODEL --element NAME …`: impose a deformation history on one element of a
//! model file through its displacement-driven form ([`hybridsim::elements::ElementDriver`]) and
//! record its force — how laboratories characterize devices (seed 000 Figs 19, 22).
//!
//! The deformation `d(t)` is imposed as `u = [d]` on a node-to-ground element and `u = [d, 0]`
//! on a two-node element (node 1 moves, node 2 held), with the exact velocity of the history
//! (sine, ramp) or central differences of the file's samples. The results folder holds
//! `results.csv` (`time`, `deformation.<el>`, `velocity.<el>`, `force.<el>.<node>.<dof>` per
//! element DOF, `state.<el>.<name>` per extra state, `state.<el>.absorbed_energy` = `∫ r dd`
//! integrated by the driver, `state.<el>.dissipated` = cumulative dissipated energy; headers
//! `name[unit]` in the model's units), `run.json` and a copy of the model.

use anyhow::{bail, Context, Result};
use hybridsim::elements::ElementDriver;
use serde_json::json;
use std::f64::consts::PI;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Shape of the imposed deformation history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum History {
    /// `A sin(2π f t)` for `cycles` cycles.
    Sine,
    /// Cycles of linearly growing amplitude: `A (t f / cycles) sin(2π f t)`.
    Ramp,
    /// Two columns (time, deformation) from `--file`.
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
    /// Deformation amplitude (model length unit); the final amplitude for `ramp`.
    #[arg(short, long)]
    pub amplitude: Option<f64>,
    /// Frequency (1/model time unit).
    #[arg(short, long, default_value_t = 0.5)]
    pub frequency: f64,
    /// Number of cycles.
    #[arg(short, long, default_value_t = 3)]
    pub cycles: u32,
    /// Two-column file (time, deformation; spaces, tabs or commas; `#` comments) for
    /// `--history file`.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Driving step (model time unit). Default: 1/400 of a cycle, or the file's own sampling.
    #[arg(long)]
    pub dt: Option<f64>,
    /// Results folder (default: results/<model>_cyclic_<element>).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// A sampled deformation history `(t, d, ḋ)`.
struct Samples {
    t: Vec<f64>,
    d: Vec<f64>,
    v: Vec<f64>,
    description: serde_json::Value,
}

const MAX_STEPS: usize = 20_000_000;

fn positive(x: f64, what: &str) -> Result<f64> {
    if !x.is_finite() || x <= 0.0 {
        bail!("{what} must be finite and > 0, found {x}");
    }
    Ok(x)
}

fn analytic(args: &Args) -> Result<Samples> {
    let amp = positive(
        args.amplitude
            .context("--amplitude is required for the sine and ramp histories")?,
        "--amplitude",
    )?;
    let f = positive(args.frequency, "--frequency")?;
    if args.cycles == 0 {
        bail!("--cycles must be at least 1");
    }
    let cycles = args.cycles as f64;
    let duration = cycles / f;
    let dt = positive(args.dt.unwrap_or(1.0 / (400.0 * f)), "--dt")?;
    let steps = (duration / dt).round();
    if steps < 1.0 || steps > MAX_STEPS as f64 {
        bail!("--dt {dt} gives {steps} driving steps over {duration}: choose 1 to {MAX_STEPS}");
    }
    let n = steps as usize;
    let dt = duration / n as f64;
    let w = 2.0 * PI * f;
    let ramp = args.history == History::Ramp;
    let (mut t, mut d, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..=n {
        let tk = k as f64 * dt;
        let (s, c) = (w * tk).sin_cos();
        if ramp {
            let a = amp * tk / duration;
            t.push(tk);
            d.push(a * s);
            v.push(amp / duration * s + a * w * c);
        } else {
            t.push(tk);
            d.push(amp * s);
            v.push(amp * w * c);
        }
    }
    Ok(Samples {
        t,
        d,
        v,
        description: json!({
            "shape": if ramp { "ramp" } else { "sine" },
            "amplitude": amp,
            "frequency": f,
            "cycles": args.cycles,
            "driving_step": dt,
        }),
    })
}

fn from_file(path: &Path, dt: Option<f64>) -> Result<Samples> {
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
    if t.len() < 2 {
        bail!("{}: needs at least two samples", path.display());
    }
    // Resample on a uniform grid when a driving step is given (linear interpolation).
    let (t, d) = match dt {
        None => (t, d),
        Some(dt) => {
            let dt = positive(dt, "--dt")?;
            let span = t[t.len() - 1] - t[0];
            let n = (span / dt).floor() as usize;
            if n == 0 || n > MAX_STEPS {
                bail!("--dt {dt} gives {n} driving steps over the file's {span}");
            }
            let mut j = 0;
            let (mut tt, mut dd) = (Vec::new(), Vec::new());
            for k in 0..=n {
                let tk = t[0] + k as f64 * dt;
                while j + 2 < t.len() && t[j + 1] < tk {
                    j += 1;
                }
                let w = ((tk - t[j]) / (t[j + 1] - t[j])).clamp(0.0, 1.0);
                tt.push(tk);
                dd.push(d[j] + w * (d[j + 1] - d[j]));
            }
            (tt, dd)
        }
    };
    let n = t.len();
    let v: Vec<f64> = (0..n)
        .map(|k| {
            let (a, b) = (k.saturating_sub(1), (k + 1).min(n - 1));
            (d[b] - d[a]) / (t[b] - t[a])
        })
        .collect();
    Ok(Samples {
        description: json!({
            "shape": "file",
            "file": path.display().to_string(),
            "samples": n,
            "resampled_driving_step": dt,
        }),
        t,
        d,
        v,
    })
}

/// Drive the element and write the results folder.
pub fn execute(args: Args) -> Result<ExitCode> {
    let loaded = super::load(&args.model)?;
    let model = &loaded.model;
    let Some(inst) = model.elements.iter().find(|e| e.name == args.element) else {
        let names: Vec<&str> = model
            .elements
            .iter()
            .filter(|e| e.element.kind() != "mass")
            .map(|e| e.name.as_str())
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
    let samples = match args.history {
        History::File => from_file(
            args.file
                .as_deref()
                .context("--history file needs --file PATH")?,
            args.dt,
        )?,
        _ => analytic(&args)?,
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
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create the results folder {}", folder.display()))?;

    // Header with units.
    let units = &model.units;
    let dof = element.dofs()[0].dof.clone();
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
        let unit = match element.state_quantity(i) {
            hybridsim::elements::Quantity::Force => units.force_unit(&dof),
            hybridsim::elements::Quantity::Displacement => units.displacement_unit(&dof),
            hybridsim::elements::Quantity::Velocity => units.velocity_unit(&dof),
            hybridsim::elements::Quantity::Energy => units.energy_unit(),
            hybridsim::elements::Quantity::Dimensionless => "-".into(),
        };
        header.push(format!("state.{name}.{s}[{unit}]"));
    }
    header.push(format!(
        "state.{name}.absorbed_energy[{}]",
        units.energy_unit()
    ));
    header.push(format!("state.{name}.dissipated[{}]", units.energy_unit()));

    let csv_path = folder.join("results.csv");
    let file = std::fs::File::create(&csv_path)
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "{}", header.join(","))?;
    let mut u = vec![0.0; n];
    let mut v = vec![0.0; n];
    let mut row: Vec<f64> = Vec::with_capacity(header.len());
    let mut peak_force = 0.0f64;
    let started = std::time::Instant::now();
    let mut failure: Option<String> = None;
    let mut steps = 0usize;
    let mut rows = 0usize;
    for k in 0..samples.t.len() {
        u[0] = samples.d[k];
        v[0] = samples.v[k];
        if k > 0 {
            let dt = samples.t[k] - samples.t[k - 1];
            if let Err(e) = driver.set_trial(dt, &u, &v) {
                failure = Some(format!("at t = {}: {e}", samples.t[k]));
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
        row.push(samples.t[k]);
        row.push(driver.deformation().unwrap_or(f64::NAN));
        row.push(samples.v[k]);
        row.extend_from_slice(driver.force());
        row.extend_from_slice(driver.states());
        row.push(driver.work());
        row.push(driver.dissipated_energy());
        peak_force = peak_force.max(driver.force()[0].abs());
        let line: Vec<String> = row.iter().map(|x| format!("{x}")).collect();
        writeln!(out, "{}", line.join(","))?;
        rows += 1;
    }
    out.flush()?;
    let wall = started.elapsed().as_secs_f64();
    std::fs::write(folder.join("model.toml"), &loaded.text)
        .with_context(|| format!("cannot write {}", folder.join("model.toml").display()))?;
    let status = if failure.is_some() {
        "failed"
    } else {
        "completed"
    };
    let run = json!({
        "command": "cyclic",
        "status": status,
        "error": failure,
        "hybridsim_version": env!("CARGO_PKG_VERSION"),
        "model": loaded.path.display().to_string(),
        "model_sha256": loaded.sha256,
        "element": {
            "name": inst.name,
            "kind": element.kind(),
            "dofs": element.dofs().iter().map(|d| format!("{}.{}", d.node, d.dof)).collect::<Vec<_>>(),
            "parameters": element.parameters().into_iter().map(|(k, x)| (k.to_string(), json!(x))).collect::<serde_json::Map<_, _>>(),
            "initial_state": inst.initial_state,
        },
        "imposed": {
            "how": if n == 1 { "u = [d]" } else { "u = [d, 0] (node 1 moves, node 2 held)" },
            "history": samples.description,
        },
        "units": { "length": units.length, "force": units.force, "time": units.time },
        "steps": steps,
        "rows": rows,
        "peak_force": peak_force,
        "dissipated_energy": driver.dissipated_energy(),
        "wall_time_s": wall,
    });
    std::fs::write(folder.join("run.json"), serde_json::to_string_pretty(&run)?)
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
