//! `hybridsim analyze spectral|convergence|energy|delay MODEL [options] -o DIR`: algorithm
//! analysis of the model's configured scheme (Abbiati et al. 2019, §2.1.2 and §2.2.2, Figs 1–3
//! and 6–9) and the critical actuator delay of its real-time loop, written as CSV files,
//! `summary.json` and PNG/SVG charts; `analyze energy-error RUN --reference REF` compares two
//! results folders (the module `energy_error`).

use anyhow::{bail, Context, Result};
use hybridsim::analysis::spectral::log_sweep;
use hybridsim::analysis::{
    convergence, energy_history, spectral_sweep, ConvergenceOptions, FrequencyReference, Reference,
    RootKind, SpectralOptions,
};
use hybridsim::Model;
use hybridsim_plot::{Axis, Chart, Series};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `analyze`.
#[derive(clap::Args)]
pub struct Args {
    /// The analysis.
    #[command(subcommand)]
    pub kind: Kind,
}

/// The analyses.
#[derive(clap::Subcommand)]
pub enum Kind {
    /// Amplification matrix over a sweep of Ω = ωΔt: spectral radius, Ω̄, ζ̄, frequency error,
    /// constraint-drift modes (Abbiati et al. 2019, Figs 2–3). Needs a linear model.
    #[command(
        after_help = "Examples:\n  hybridsim analyze spectral examples/split_mass_v1.toml -o out/spectral\n  hybridsim analyze spectral examples/split_mass_v1.toml --estimate-ratio 0.5 --subcycles 1 --rho-inf 1\n  hybridsim analyze spectral examples/split_mass_v1.toml --delay 2 --omega-max 10"
    )]
    Spectral(SpectralArgs),
    /// Global error at a fixed time for halving time steps, against an exact or fine-step
    /// reference, with fitted slopes (Abbiati et al. 2019, Figs 1 and 6).
    #[command(
        after_help = "Example:\n  hybridsim analyze convergence examples/split_mass_v1.toml --dt 1e-3 --levels 4 --until 0.01"
    )]
    Convergence(ConvergenceArgs),
    /// Total mechanical energy history and drift (Abbiati et al. 2019, Fig 9).
    #[command(
        after_help = "Example:\n  hybridsim analyze energy examples/split_mass_v2.toml --rho-inf 1"
    )]
    Energy(EnergyArgs),
    /// Closed-loop spectral radius against the actuator's pure delay and the critical delay
    /// at which it exceeds 1 (explicit-rths: continuous delay, as the lab interpolates it, plus
    /// the scheme's force_delay; pg-alpha: whole physical substeps). Needs a linear model.
    #[command(
        after_help = "Examples:\n  hybridsim analyze delay examples/rths_explicit_frame.toml -o out/delay\n  hybridsim analyze delay examples/rths_explicit_frame.toml --max-delay 0.02 --points-per-sample 8"
    )]
    Delay(DelayArgs),
    /// Cumulative energy error E_c of a results folder against a reference results folder
    /// (Hung and El-Tawil 2009, eq 18) at a node of interest: energy_error.csv/json, and
    /// run.json's analysis.energy_error when written into the run's folder.
    #[command(
        after_help = "Examples:\n  hybridsim analyze energy-error results/fom_01 --reference results/fom_01_reference\n  hybridsim analyze energy-error results/osm --reference results/ref --node 1 --dof x --force force.storey1.1.x -o out/ec"
    )]
    EnergyError(super::energy_error::EnergyErrorArgs),
}

/// `analyze delay`.
#[derive(clap::Args)]
pub struct DelayArgs {
    #[command(flatten)]
    common: Common,
    /// Largest actuator delay of the sweep, in model time units (default: 40 controller
    /// samples).
    #[arg(long)]
    max_delay: Option<f64>,
    /// Sweep points per controller sample (explicit-rths).
    #[arg(long, default_value_t = 4)]
    points_per_sample: usize,
    /// Override [analysis].force_delay (explicit-rths), in controller samples.
    #[arg(long)]
    force_delay: Option<usize>,
}

/// Options shared by every analysis.
#[derive(clap::Args)]
pub struct Common {
    /// The model file (TOML); its [analysis] table configures the scheme.
    pub model: PathBuf,
    /// Output folder (default: results/<model name>-<analysis>).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Override [analysis].rho_inf (0 ≤ ρ∞ ≤ 1).
    #[arg(long)]
    pub rho_inf: Option<f64>,
    /// Override [analysis].subcycles (≥ 1).
    #[arg(long)]
    pub subcycles: Option<usize>,
    /// Image formats of the plots.
    #[arg(long, value_enum, default_value = "both")]
    pub format: Format,
}

/// Plot formats.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// PNG only.
    Png,
    /// SVG only.
    Svg,
    /// PNG and SVG.
    Both,
    /// No plots (CSV and summary only).
    None,
}

/// `analyze spectral`.
#[derive(clap::Args)]
pub struct SpectralArgs {
    #[command(flatten)]
    common: Common,
    /// Smallest Ω = ω Δt.
    #[arg(long, default_value_t = 1e-2)]
    omega_min: f64,
    /// Largest Ω.
    #[arg(long, default_value_t = 1e3)]
    omega_max: f64,
    /// Points of the log-spaced sweep.
    #[arg(long, default_value_t = 61)]
    points: usize,
    /// Ω refers to this mode (1-based) of the linearized coupled model.
    #[arg(long, default_value_t = 1, conflicts_with = "omega")]
    mode: usize,
    /// Ω refers to this circular frequency [rad per model time unit] instead of a mode.
    #[arg(long)]
    omega: Option<f64>,
    /// Estimated / true stiffness of the physical substructures (D^P and H use the estimate).
    #[arg(long)]
    estimate_ratio: Option<f64>,
    /// Loop delay of the measured specimen force, in ticks of Δt^P (PG-α).
    #[arg(long, default_value_t = 0)]
    delay: usize,
}

/// `analyze convergence`.
#[derive(clap::Args)]
pub struct ConvergenceArgs {
    #[command(flatten)]
    common: Common,
    /// Largest time step (default: the model's time_step).
    #[arg(long)]
    dt: Option<f64>,
    /// Number of time steps (each half the previous).
    #[arg(long, default_value_t = 5)]
    levels: usize,
    /// Time of the error measure (default: 10 × the largest step).
    #[arg(long)]
    until: Option<f64>,
    /// Reference solution.
    #[arg(long, value_enum, default_value = "auto")]
    reference: RefArg,
    /// The fine reference step is the smallest step divided by this.
    #[arg(long, default_value_t = 64)]
    fine_factor: usize,
}

/// Reference choice.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RefArg {
    /// Exact when possible (linear free vibration), else fine.
    Auto,
    /// Matrix exponential of the linearized coupled model.
    Exact,
    /// Monolithic trapezoidal rule with a much smaller step.
    Fine,
}

/// `analyze energy`.
#[derive(clap::Args)]
pub struct EnergyArgs {
    #[command(flatten)]
    common: Common,
    /// Sample every n-th coarse step.
    #[arg(long, default_value_t = 1)]
    every: u64,
    /// Override [analysis].duration.
    #[arg(long)]
    duration: Option<f64>,
}

/// Run the analysis.
pub fn execute(args: Args) -> Result<ExitCode> {
    match args.kind {
        Kind::Spectral(a) => spectral(a),
        Kind::Convergence(a) => convergence_cmd(a),
        Kind::Energy(a) => energy(a),
        Kind::Delay(a) => delay(a),
        Kind::EnergyError(a) => super::energy_error::execute(a),
    }
}

/// Load the model, apply the overrides, create the output folder.
fn prepare(c: &Common, analysis: &str) -> Result<(Model, PathBuf)> {
    let loaded = super::load(&c.model)?;
    let mut model = loaded.model;
    let file = c.model.display();
    if let Some(r) = c.rho_inf {
        if !(0.0..=1.0).contains(&r) {
            bail!("{file}: option --rho-inf: must be between 0 and 1, found {r}");
        }
        model.analysis.rho_inf = r;
    }
    if let Some(s) = c.subcycles {
        if s == 0 {
            bail!("{file}: option --subcycles: must be at least 1");
        }
        model.analysis.subcycles = s;
    }
    let out = c.output.clone().unwrap_or_else(|| {
        let stem = c
            .model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        PathBuf::from("results").join(format!("{stem}-{analysis}"))
    });
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create the output folder {}", out.display()))?;
    Ok((model, out))
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn plots(format: Format, out: &Path, stem: &str, charts: &[Chart]) -> Result<Vec<PathBuf>> {
    let exts: &[&str] = match format {
        Format::Png => &["png"],
        Format::Svg => &["svg"],
        Format::Both => &["png", "svg"],
        Format::None => &[],
    };
    let mut written = Vec::new();
    for ext in exts {
        let p = out.join(format!("{stem}.{ext}"));
        hybridsim_plot::save_grid(charts, &p).map_err(|e| anyhow::anyhow!("{e}"))?;
        written.push(p);
    }
    Ok(written)
}

fn axis(label: &str, log: bool) -> Axis {
    Axis {
        label: label.into(),
        log,
    }
}

fn series(name: impl Into<String>, x: Vec<f64>, y: Vec<f64>) -> Series {
    Series {
        name: name.into(),
        x,
        y,
    }
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:e}")
    } else {
        "NaN".into()
    }
}

fn spectral(a: SpectralArgs) -> Result<ExitCode> {
    let (model, out) = prepare(&a.common, "spectral")?;
    let file = a.common.model.display().to_string();
    if !(a.omega_min > 0.0 && a.omega_max >= a.omega_min && a.omega_max.is_finite()) {
        bail!(
            "{file}: options --omega-min/--omega-max: need 0 < min ≤ max, found {} and {}",
            a.omega_min,
            a.omega_max
        );
    }
    if a.points == 0 {
        bail!("{file}: option --points: must be at least 1");
    }
    let opts = SpectralOptions {
        omegas: log_sweep(a.omega_min, a.omega_max, a.points),
        reference: match a.omega {
            Some(w) => FrequencyReference::Omega(w),
            None => FrequencyReference::Mode(a.mode),
        },
        estimate_ratio: a.estimate_ratio,
        delay_ticks: a.delay,
        tolerance: 1e-10,
    };
    let r = spectral_sweep(&model, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let nm = r.mode_omegas.len();
    // spectral.csv
    let mut csv = String::from("Omega,dt,rho,rho_without_drift,drift_modes,drift_deviation,stable");
    for i in 1..=nm {
        let _ = write!(
            csv,
            ",Omega_{i},abs_lambda_{i},Omega_bar_{i},zeta_bar_{i},frequency_error_{i}"
        );
    }
    csv.push('\n');
    let mut eig = String::from("Omega,dt,index,re,im,abs,arg,kind\n");
    for p in &r.points {
        let _ = write!(
            csv,
            "{},{},{},{},{},{},{}",
            num(p.omega),
            num(p.dt),
            num(p.rho),
            num(p.rho_without_drift),
            p.drift_modes,
            num(p.drift_deviation),
            p.stable
        );
        for i in 1..=nm {
            match p.modal.iter().find(|m| m.mode == i) {
                Some(m) => {
                    let _ = write!(
                        csv,
                        ",{},{},{},{},{}",
                        num(m.omega),
                        num(m.lambda.norm()),
                        num(m.omega_bar),
                        num(m.zeta_bar),
                        num(m.frequency_error)
                    );
                }
                None => {
                    let _ = write!(csv, ",{},NaN,NaN,NaN,NaN", num(r.mode_omegas[i - 1] * p.dt));
                }
            }
        }
        csv.push('\n');
        for (k, (l, kind)) in p.roots.iter().enumerate() {
            let kind = match kind {
                RootKind::Drift => "drift".to_string(),
                RootKind::Principal(i) => format!("principal_mode_{i}"),
                RootKind::Other => "other".to_string(),
            };
            let _ = writeln!(
                eig,
                "{},{},{k},{},{},{},{},{kind}",
                num(p.omega),
                num(p.dt),
                num(l.re),
                num(l.im),
                num(l.norm()),
                num(l.arg())
            );
        }
    }
    write(&out.join("spectral.csv"), &csv)?;
    write(&out.join("eigenvalues.csv"), &eig)?;
    let unstable = r.unstable_omegas();
    let summary = json!({
        "analysis": "spectral",
        "model": file,
        "scheme": r.scheme,
        "rho_inf": r.rho_inf,
        "subcycles": r.subcycles,
        "reference_omega": r.reference_omega,
        "reference": r.reference_label,
        "mode_omegas": r.mode_omegas,
        "estimate_ratio": r.estimate_ratio,
        "delay_ticks": r.delay_ticks,
        "linearized_at_rest": r.linearized_elements,
        "state_length": r.state_len,
        "max_rho": r.max_rho(),
        "max_rho_without_drift": r.max_rho_without_drift(),
        "drift_modes": r.points.first().map(|p| p.drift_modes).unwrap_or(0),
        "stable": r.stable(),
        "tolerance": r.tolerance,
        "unstable_omegas": unstable,
    });
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary)?,
    )?;
    // Charts: Abbiati et al. (2019), Fig 2 (ρ vs Ω) and Fig 3 (frequency error, damping
    // vs Ω), log Ω.
    let om: Vec<f64> = r.points.iter().map(|p| p.omega).collect();
    let mut rho_series = vec![series(
        "ρ(𝔸)",
        om.clone(),
        r.points.iter().map(|p| p.rho).collect(),
    )];
    if r.points.iter().any(|p| p.drift_modes > 0) {
        rho_series.push(series(
            "ρ without drift modes",
            om.clone(),
            r.points.iter().map(|p| p.rho_without_drift).collect(),
        ));
    }
    let modal = |f: &dyn Fn(&hybridsim::analysis::spectral::ModalRoot) -> f64| -> Vec<Series> {
        (1..=nm)
            .map(|i| {
                let (x, y): (Vec<f64>, Vec<f64>) = r
                    .points
                    .iter()
                    .filter_map(|p| p.modal.iter().find(|m| m.mode == i))
                    .map(|m| (m.omega, f(m)))
                    .unzip();
                series(format!("mode {i}"), x, y)
            })
            .collect()
    };
    let title = format!(
        "{} — {}, ρ∞ = {}, ss = {}{}{}",
        model.title_or_source(),
        r.scheme,
        r.rho_inf,
        r.subcycles,
        r.estimate_ratio
            .map(|x| format!(", estimate = {x} × true"))
            .unwrap_or_default(),
        if r.delay_ticks > 0 {
            format!(", delay {} tick(s)", r.delay_ticks)
        } else {
            String::new()
        }
    );
    let charts = [
        Chart {
            title: format!("spectral radius — {title}"),
            x: axis(
                &format!(
                    "Ω = ω Δt (ω = {:.4} rad/s, {})",
                    r.reference_omega, r.reference_label
                ),
                true,
            ),
            y: axis("spectral radius ρ [-]", false),
            series: rho_series,
        },
        Chart {
            title: "frequency error (Ω̄ − Ω)/Ω̄ of the principal roots".into(),
            x: axis("Ω_i = ω_i Δt", true),
            y: axis("(Ω̄ − Ω)/Ω̄ [-]", false),
            series: modal(&|m| m.frequency_error),
        },
        Chart {
            title: "algorithmic damping ζ̄ = −ln|λ|/Ω̄".into(),
            x: axis("Ω_i = ω_i Δt", true),
            y: axis("ζ̄ [-]", false),
            series: modal(&|m| m.zeta_bar),
        },
    ];
    let written = plots(a.common.format, &out, "spectral", &charts)?;
    println!(
        "{}: {} on {} points, Ω from {:e} to {:e} (ω = {:.6} rad/s, {}); state length {}",
        file,
        r.scheme,
        r.points.len(),
        a.omega_min,
        a.omega_max,
        r.reference_omega,
        r.reference_label,
        r.state_len
    );
    if !r.linearized_elements.is_empty() {
        println!(
            "nonlinear elements analysed through their tangent at rest (initial stiffness): {}",
            r.linearized_elements.join(", ")
        );
    }
    println!(
        "max spectral radius {:.12}, without drift modes {:.12}; drift modes {}",
        r.max_rho(),
        r.max_rho_without_drift(),
        r.points.first().map(|p| p.drift_modes).unwrap_or(0)
    );
    if r.stable() {
        println!("stable: ρ ≤ 1 + {:e} over the sweep", r.tolerance);
    } else {
        println!(
            "UNSTABLE: ρ > 1 at {} of {} points (first at Ω = {:e})",
            unstable.len(),
            r.points.len(),
            unstable[0]
        );
    }
    println!(
        "wrote spectral.csv and eigenvalues.csv ({} plots) in {}",
        written.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn convergence_cmd(a: ConvergenceArgs) -> Result<ExitCode> {
    let (model, out) = prepare(&a.common, "convergence")?;
    let file = a.common.model.display().to_string();
    let dt0 = a.dt.unwrap_or(model.analysis.time_step);
    if !(dt0.is_finite() && dt0 > 0.0) {
        bail!("{file}: option --dt: must be a positive time step, found {dt0}");
    }
    if a.levels < 2 {
        bail!("{file}: option --levels: needs at least 2 time steps");
    }
    let until = a.until.unwrap_or(10.0 * dt0);
    let mut opts = ConvergenceOptions::halving(dt0, a.levels, until);
    opts.reference = match a.reference {
        RefArg::Auto => Reference::Auto,
        RefArg::Exact => Reference::Exact,
        RefArg::Fine => Reference::Fine,
    };
    opts.fine_factor = a.fine_factor.max(1);
    let r = convergence(&model, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut csv = String::from("dt,error,relative_error,slope_to_next\n");
    for (k, (dt, e)) in r.errors.iter().enumerate() {
        let _ = writeln!(
            csv,
            "{},{},{},{}",
            num(*dt),
            num(*e),
            num(e / r.reference_scale),
            r.slopes
                .get(k)
                .map(|s| num(*s))
                .unwrap_or_else(|| "NaN".into())
        );
    }
    write(&out.join("convergence.csv"), &csv)?;
    let summary = json!({
        "analysis": "convergence",
        "model": file,
        "scheme": r.scheme,
        "rho_inf": model.analysis.rho_inf,
        "subcycles": model.analysis.subcycles,
        "until": r.until,
        "reference": r.reference,
        "linear": r.linear,
        "slopes": r.slopes,
        "fitted_slope": r.fitted_slope,
        "expected_order": r.expected_order,
        "label": r.label,
    });
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary)?,
    )?;
    // Abbiati et al. (2019), Figs 1/6: GTE against Δt on log-log axes with a reference slope.
    let (x, y): (Vec<f64>, Vec<f64>) = r.errors.iter().copied().unzip();
    let mut s = vec![series(
        format!("GTE at t = {}", r.until),
        x.clone(),
        y.clone(),
    )];
    if let (Some(&x0), Some(&y0)) = (x.first(), y.first()) {
        let order = r.expected_order.unwrap_or(2.0);
        s.push(series(
            format!("slope {order}"),
            x.clone(),
            x.iter().map(|xi| y0 * (xi / x0).powf(order)).collect(),
        ));
    }
    let charts = [Chart {
        title: format!(
            "{} — {}, ρ∞ = {}, ss = {}: fitted slope {:.3}",
            model.title_or_source(),
            r.scheme,
            model.analysis.rho_inf,
            model.analysis.subcycles,
            r.fitted_slope
        ),
        x: axis("Δt", true),
        y: axis("global truncation error (max |u − u_ref|)", true),
        series: s,
    }];
    let written = plots(a.common.format, &out, "convergence", &charts)?;
    println!(
        "{file}: {} — error at t = {} against {}",
        r.scheme, r.until, r.reference
    );
    for (k, (dt, e)) in r.errors.iter().enumerate() {
        let slope = r
            .slopes
            .get(k)
            .map(|s| format!("  slope {s:.4}"))
            .unwrap_or_default();
        println!("  dt = {dt:e}  error = {e:.6e}{slope}");
    }
    println!("fitted slope {:.4}; {}", r.fitted_slope, r.label);
    println!(
        "wrote convergence.csv ({} plots) in {}",
        written.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn energy(a: EnergyArgs) -> Result<ExitCode> {
    let (mut model, out) = prepare(&a.common, "energy")?;
    let file = a.common.model.display().to_string();
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            bail!("{file}: option --duration: must be positive, found {d}");
        }
        model.analysis.duration = d;
    }
    let r = energy_history(&model, a.every).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut csv = String::from("time");
    for p in &r.partitions {
        let _ = write!(csv, ",E_{p}");
    }
    csv.push_str(",E_total,relative_drift\n");
    let drift = r.relative_drift();
    for (k, t) in r.times.iter().enumerate() {
        let _ = write!(csv, "{}", num(*t));
        for e in &r.partition_energy[k] {
            let _ = write!(csv, ",{}", num(*e));
        }
        let _ = writeln!(csv, ",{},{}", num(r.total[k]), num(drift[k]));
    }
    write(&out.join("energy.csv"), &csv)?;
    let summary = json!({
        "analysis": "energy",
        "model": file,
        "scheme": r.scheme,
        "rho_inf": model.analysis.rho_inf,
        "subcycles": model.analysis.subcycles,
        "initial_energy": r.initial(),
        "max_relative_drift": r.max_relative_drift(),
        "final_relative_drift": r.final_relative_drift(),
        "drift_rate_per_time_unit": r.drift_rate(),
        "forced": r.forced,
    });
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary)?,
    )?;
    let u = &model.units;
    let mut es = vec![series("total", r.times.clone(), r.total.clone())];
    if r.partitions.len() > 1 {
        for (i, p) in r.partitions.iter().enumerate() {
            es.push(series(
                format!("`{p}`"),
                r.times.clone(),
                r.partition_energy.iter().map(|row| row[i]).collect(),
            ));
        }
    }
    let time_label = format!("time [{}]", u.time);
    let charts = [
        Chart {
            title: format!(
                "{} — {}, ρ∞ = {}, ss = {}: total mechanical energy",
                model.title_or_source(),
                r.scheme,
                model.analysis.rho_inf,
                model.analysis.subcycles
            ),
            x: axis(&time_label, false),
            y: axis(&format!("energy [{}·{}]", u.force, u.length), false),
            series: es,
        },
        Chart {
            title: "relative drift (E − E0)/E0".into(),
            x: axis(&time_label, false),
            y: axis("relative drift [-]", false),
            series: vec![series("drift", r.times.clone(), drift)],
        },
    ];
    let written = plots(a.common.format, &out, "energy", &charts)?;
    println!(
        "{file}: {} — E0 = {:.9e}, max |relative drift| {:.3e}, final {:.3e}, trend {:.3e} per {}{}",
        r.scheme,
        r.initial(),
        r.max_relative_drift(),
        r.final_relative_drift(),
        r.drift_rate(),
        u.time,
        if r.forced {
            " (the model is loaded: the history includes the work of the loads)"
        } else {
            ""
        }
    );
    println!(
        "wrote energy.csv ({} plots) in {}",
        written.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn delay(a: DelayArgs) -> Result<ExitCode> {
    use hybridsim::analysis::{critical_delay, LoopDelayOptions};
    let (mut model, out) = prepare(&a.common, "delay")?;
    let file = a.common.model.display().to_string();
    if let Some(d) = a.force_delay {
        if model.analysis.integrator != hybridsim::model::IntegratorKind::ExplicitRths {
            bail!("{file}: option --force-delay: only applies to integrator = \"explicit-rths\"");
        }
        model.analysis.force_delay = d;
    }
    if let Some(m) = a.max_delay {
        if !(m.is_finite() && m > 0.0) {
            bail!("{file}: option --max-delay: must be positive, found {m}");
        }
    }
    if a.points_per_sample == 0 {
        bail!("{file}: option --points-per-sample: must be at least 1");
    }
    let opts = LoopDelayOptions {
        max_delay: a.max_delay,
        points_per_sample: a.points_per_sample,
        ..LoopDelayOptions::default()
    };
    let r = critical_delay(&model, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let u = &model.units;
    let mut csv = format!("delay [{}],delay [samples],spectral_radius\n", u.time);
    for p in &r.points {
        let _ = writeln!(csv, "{},{},{}", num(p.delay), num(p.samples), num(p.rho));
    }
    write(&out.join("delay.csv"), &csv)?;
    let summary = json!({
        "analysis": "delay",
        "model": file,
        "scheme": r.scheme,
        "rho_inf": model.analysis.rho_inf,
        "sample": r.sample,
        "force_delay": r.force_delay,
        "critical_delay": r.critical,
        "critical_delay_samples": r.critical_samples(),
        "continuous": r.continuous,
    });
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary)?,
    )?;
    let time_label = format!("actuator delay [{}]", u.time);
    let charts = [Chart {
        title: format!(
            "{} — {}, force delay {} sample(s): closed-loop spectral radius",
            model.title_or_source(),
            r.scheme,
            r.force_delay
        ),
        x: axis(&time_label, false),
        y: axis("spectral radius ρ [-]", false),
        series: vec![
            series(
                "ρ",
                r.points.iter().map(|p| p.delay).collect(),
                r.points.iter().map(|p| p.rho).collect(),
            ),
            series(
                "ρ = 1",
                vec![0.0, r.points.last().map_or(0.0, |p| p.delay)],
                vec![1.0, 1.0],
            ),
        ],
    }];
    let written = plots(a.common.format, &out, "delay", &charts)?;
    println!(
        "{file}: {}, sample {:e} {}, force delay {} sample(s)",
        r.scheme, r.sample, u.time, r.force_delay
    );
    println!(
        "{:>14} {:>10} {:>14}",
        format!("delay [{}]", u.time),
        "samples",
        "ρ"
    );
    // At most about 40 rows on the terminal; every point is in delay.csv.
    let every = r.points.len().div_ceil(40).max(1);
    for (i, p) in r.points.iter().enumerate() {
        let last = i + 1 == r.points.len();
        if i % every == 0 || last {
            println!(
                "{:>14.6e} {:>10.3} {:>14.10} {}",
                p.delay,
                p.samples,
                p.rho,
                if p.rho > 1.0 + hybridsim::analysis::critical_delay::RHO_TOLERANCE {
                    "unstable"
                } else {
                    ""
                }
            );
        }
    }
    match (r.critical, r.critical_samples()) {
        (Some(c), Some(s)) if r.continuous => println!(
            "critical actuator delay: {c:.6e} {} = {s:.3} samples (ρ > 1 beyond it)",
            u.time
        ),
        (Some(c), Some(s)) => println!(
            "critical actuator delay: {c:.6e} {} = {s:.0} samples (first unstable whole \
             substep; stable at {:.0})",
            u.time,
            s - 1.0
        ),
        _ => println!(
            "stable over the whole sweep (up to {:.6e} {})",
            r.points.last().map_or(0.0, |p| p.delay),
            u.time
        ),
    }
    println!(
        "wrote delay.csv, summary.json ({} plots) in {}",
        written.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The model's title, or its file name.
trait TitleOrSource {
    fn title_or_source(&self) -> String;
}

impl TitleOrSource for Model {
    fn title_or_source(&self) -> String {
        if self.title.is_empty() {
            Path::new(&self.source)
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.source.clone())
        } else {
            self.title.clone()
        }
    }
}
