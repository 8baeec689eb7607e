//! `[lab]`, `[safety]` and `[runner]`: the transfer system, the actuator safety limits and
//! the real-time runner, read in a second pass (so that problems are reported at
//! `lab.…`, `safety.…`, `runner.…`) and checked against the rest of the model.

use super::finite_positive;
use super::schema::{
    ActuatorSpec, AdcSpec, CapacitySpec, CompensationSpec, DegradationSpec, DivergenceSpec,
    FaultSpec, ForceControlSpec, LabSpec, LimitsSpec, LinkSpec, NoiseSpec, RunnerSpec, SafetySpec,
    SetupSpec,
};
use crate::error::Diagnostics;
use crate::model::lab::*;
use crate::model::{AnalysisSettings, ElementInstance, Role, Substructure};
use crate::units::Units;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// `value` as the table `table` of the file; a problem (an unknown key at `table.key`) is
/// recorded and gives `None`.
fn deserialize<T: for<'de> Deserialize<'de>>(
    value: &toml::Value,
    table: &str,
    diag: &mut Diagnostics,
) -> Option<T> {
    match value.clone().try_into::<T>() {
        Ok(v) => Some(v),
        Err(e) => {
            let reason = e.message().trim().replace('\n', " ");
            let field = reason
                .strip_prefix("unknown field `")
                .and_then(|rest| rest.split('`').next())
                .map(|k| format!("{table}.{k}"))
                .unwrap_or_else(|| table.to_string());
            diag.push(field, reason);
            None
        }
    }
}

/// CPU indices of `[runner] cpus` must fit a `cpu_set_t` (CPU_SETSIZE) for pinning.
const MAX_CPUS: i64 = 1024;

/// Largest `[runner] results_ring` in rows (the runner allocates rows × columns up front).
const MAX_RESULTS_RING: i64 = 1 << 20;

/// Longest wall-clock length of a test, s (the runner's nanosecond clock must not overflow).
const MAX_WALL_CLOCK: f64 = 1.0e9;

/// Longest actuator delay in controller ticks (the delay line keeps one sample per tick).
const MAX_DELAY_TICKS: f64 = 1.0e6;

/// Widest gap between the increment limit and one velocity-limited tick: an increment limit
/// more than this many times `velocity × Δt^C` can never act before the velocity check and
/// points at a unit mistake.
const MAX_INCREMENT_TICKS: f64 = 100.0;

/// Largest `dropout_ticks`.
const MAX_DROPOUT_TICKS: i64 = 1000;

/// Longest `following_time` and `frozen_time`, s (or ten controller ticks when Δt^C is longer).
const MAX_SENSOR_TIME: f64 = 10.0;

/// Longest injected `stall`, s.
const MAX_STALL: f64 = 60.0;

/// Highest degree of a transfer function's denominator.
const MAX_TF_DEGREE: usize = 12;

/// Largest internal substeps of a servo-hydraulic actuator per controller tick.
const MAX_SUBSTEPS: i64 = 10_000;

/// Default divergence floor as a fraction of the displacement bound.
const DEFAULT_FLOOR_FRACTION: f64 = 0.01;

/// A stiffness with explicit units (`N/m`, `kN/m`, `kN/mm`, `MN/m`, `lbf/in`, `kip/in`) in model
/// units (force/length of `[units]`).
fn stiffness_in_model_units(value: f64, unit: &str, units: &Units) -> Option<f64> {
    let (f, l) = unit.split_once('/')?;
    let force_n = Units {
        force: f.trim().to_string(),
        ..Units::default()
    }
    .force_in_n()?;
    let length_m = Units {
        length: l.trim().to_string(),
        ..Units::default()
    }
    .length_in_m()?;
    let n_per_m = value * force_n / length_m;
    Some(n_per_m * units.length_in_m()? / units.force_in_n()?)
}

/// Inputs from the rest of the model that `[lab]` is checked against.
pub(super) struct LabContext<'a> {
    /// Δt^N.
    pub dt_n: f64,
    /// ss.
    pub ss: usize,
    /// Analysis duration (simulation time).
    pub duration: f64,
    /// Units.
    pub units: &'a Units,
    /// DOFs of every physical substructure (node, dof).
    pub physical_dofs: Vec<(i64, String)>,
    /// Whether the model has a physical substructure at all.
    pub has_physical: bool,
    /// Field paths of specimen `mass` elements (for the regime check).
    pub specimen_masses: Vec<String>,
    /// `[output] every` (sizes the real-time runner's lab ring).
    pub every: usize,
    /// Free DOFs of the model (at least three results columns each).
    pub free_dofs: usize,
    /// Each physical substructure's name and DOFs (actuator → substructure assignment).
    pub physical_substructures: Vec<(String, Vec<(i64, String)>)>,
    /// The specimen elements (`[[lab.degradation]]`).
    pub specimen_elements: Vec<(String, crate::elements::ElementRef)>,
}

impl<'a> LabContext<'a> {
    /// What the rest of the model gives: the time stepping of `analysis` (placeholders when it
    /// has a problem), the DOFs of the physical substructures and the specimen masses.
    pub(super) fn new(
        units: &'a Units,
        elements: &[ElementInstance],
        substructures: &[Substructure],
        analysis: Option<&AnalysisSettings>,
        every: u64,
        free_dofs: usize,
    ) -> Self {
        let physical_dofs = elements
            .iter()
            .filter(|e| substructures[e.substructure as usize].physical)
            .flat_map(|e| e.element.dofs().iter().map(|d| (d.node, d.dof.to_string())))
            .collect();
        let specimen_masses = elements
            .iter()
            .enumerate()
            .filter(|(_, e)| e.role == Role::Specimen && e.element.kind() == "mass")
            .map(|(i, e)| format!("element[{i}] ({})", e.name))
            .collect();
        let physical_substructures = substructures
            .iter()
            .enumerate()
            .filter(|(_, s)| s.physical)
            .map(|(k, s)| {
                let mut dofs: Vec<(i64, String)> = Vec::new();
                for e in elements.iter().filter(|e| e.substructure as usize == k) {
                    for d in e.element.dofs() {
                        let d = (d.node, d.dof.to_string());
                        if !dofs.contains(&d) {
                            dofs.push(d);
                        }
                    }
                }
                (s.name.clone(), dofs)
            })
            .collect();
        let (dt_n, ss, duration) = analysis
            .map(|a| (a.time_step, a.commands_per_step(), a.duration))
            .unwrap_or((1.0, 1, 1.0));
        Self {
            dt_n,
            ss,
            duration,
            units,
            physical_dofs,
            has_physical: substructures.iter().any(|s| s.physical),
            specimen_masses,
            every: usize::try_from(every).unwrap_or(usize::MAX).max(1),
            free_dofs,
            physical_substructures,
            specimen_elements: elements
                .iter()
                .filter(|e| e.role == Role::Specimen)
                .map(|e| (e.name.to_string(), e.element.clone()))
                .collect(),
        }
    }
}

/// Parse and validate `[lab]`, `[safety]` and `[runner]`. All three are needed once `[lab]` is
/// present; `[safety]` or `[runner]` alone is an error.
pub(super) fn lab(
    lab: Option<&toml::Value>,
    safety: Option<&toml::Value>,
    runner: Option<&toml::Value>,
    ctx: &LabContext,
    diag: &mut Diagnostics,
) -> Option<LabConfig> {
    let Some(lab) = lab else {
        if safety.is_some() {
            diag.push(
                "safety",
                "limits need a [lab] table describing the actuators",
            );
        }
        if runner.is_some() {
            diag.push(
                "runner",
                "the runner needs a [lab] table (the transfer system)",
            );
        }
        return None;
    };
    let before = diag.len();
    if !ctx.has_physical {
        diag.push("lab", "the model has no physical substructure to test");
    }
    let spec: LabSpec = deserialize(lab, "lab", diag)?;
    let lab_settings = lab_table(&spec, ctx, diag);
    // Safety: required.
    let safety = match safety {
        None => {
            diag.push(
                "safety",
                "a [safety] table with limits for every actuator is required when a [lab] is \
                 configured (there is no default limit)",
            );
            None
        }
        Some(v) => deserialize::<SafetySpec>(v, "safety", diag)
            .and_then(|spec| safety_table(&spec, &lab_settings, diag)),
    };
    let runner = match runner {
        None => Some(RunnerSettings {
            pacing: Pacing::Fast,
            cpus: Vec::new(),
            priority: 80,
            results_ring: crate::model::lab::DEFAULT_RESULTS_RING_ROWS,
            spin_budget: crate::model::lab::DEFAULT_SPIN_BUDGET_US,
            results_ring_given: false,
        }),
        Some(v) => {
            deserialize::<RunnerSpec>(v, "runner", diag).map(|spec| runner_table(spec, diag))
        }
    };
    if let Some(r) = &runner {
        ring_bound(r, &lab_settings, ctx, diag);
    }
    if diag.len() > before {
        return None;
    }
    Some(LabConfig {
        lab: lab_settings,
        safety: safety?,
        runner: runner?,
    })
}

/// `[lab]`: transfer system, time scale, regime, scales, actuators and force control.
fn lab_table(spec: &LabSpec, ctx: &LabContext, diag: &mut Diagnostics) -> LabSettings {
    let transfer = match spec.transfer.as_deref().unwrap_or("virtual") {
        "virtual" => TransferKind::Virtual,
        "udp" => TransferKind::Udp,
        "tcp" => TransferKind::Tcp,
        "opensees" => TransferKind::OpenSees,
        other => {
            diag.push(
                "lab.transfer",
                format!(
                    "unknown transfer system `{other}` (expected `virtual`, `udp`, `tcp` or \
                     `opensees`)"
                ),
            );
            TransferKind::Virtual
        }
    };
    let time_scale = time_scale(spec, ctx, diag);
    let link_spec = spec
        .link
        .as_ref()
        .map(|v| deserialize::<LinkSpec>(v, "lab.link", diag));
    let link = match link_spec {
        Some(None) => None,
        Some(Some(s)) => link(transfer, Some(&s), &time_scale, diag),
        None => link(transfer, None, &time_scale, diag),
    };
    let regime = regime(spec, time_scale.lambda, ctx, diag);
    let seed = spec.seed.unwrap_or(0);
    let geometric_scale = spec.geometric_scale.unwrap_or(1.0);
    if !finite_positive(geometric_scale) {
        diag.push(
            "lab.geometric_scale",
            format!("must be positive, found {geometric_scale}"),
        );
    }
    let force_scale = spec
        .force_scale
        .unwrap_or(geometric_scale * geometric_scale);
    if !finite_positive(force_scale) {
        diag.push(
            "lab.force_scale",
            format!("must be positive, found {force_scale}"),
        );
    }
    let device_multiplier = spec.device_multiplier.unwrap_or(1.0);
    if !finite_positive(device_multiplier) {
        diag.push(
            "lab.device_multiplier",
            format!("must be positive, found {device_multiplier}"),
        );
    }
    if spec.actuator.is_empty() {
        diag.push("lab.actuator", "at least one [[lab.actuator]] is needed");
    }
    let mut actuators = Vec::new();
    let mut names = BTreeSet::new();
    for (i, a) in spec.actuator.iter().enumerate() {
        let f = format!("lab.actuator[{i}]");
        if !names.insert(a.name.clone()) {
            diag.push(
                format!("{f}.name"),
                format!("actuator `{}` is defined twice", a.name),
            );
        }
        actuators.push(actuator(a, &f, ctx, &time_scale, diag));
    }
    let setups = setups(&spec.setup, &mut actuators, ctx, diag);
    assign_substructures(&mut actuators, &setups, ctx, diag);
    specimen_scales(
        &spec.actuator,
        &mut actuators,
        (geometric_scale, force_scale, device_multiplier),
        diag,
    );
    let force_control = force_control(&spec.force_control, &actuators, ctx, diag);
    let faults = faults(&spec.fault, transfer, &actuators, diag);
    let degradation = degradation(&spec.degradation, transfer, ctx, diag);
    LabSettings {
        transfer,
        regime,
        time_scale,
        seed,
        geometric_scale,
        force_scale,
        device_multiplier,
        actuators,
        force_control,
        faults,
        link,
        setups,
        degradation,
    }
}

/// Longest reply timeout of a network link, s.
const MAX_LINK_TIMEOUT: f64 = 60.0;

/// Largest stale-reply lag of a streaming link, ticks.
const MAX_LINK_LAG: i64 = 100_000;

/// `[lab.link]`: required with a network transfer system, refused with the virtual lab.
fn link(
    transfer: TransferKind,
    spec: Option<&LinkSpec>,
    ts: &TimeScale,
    diag: &mut Diagnostics,
) -> Option<LinkSettings> {
    let spec = match (transfer.is_network(), spec) {
        (false, None) => return None,
        (false, Some(_)) => {
            diag.push(
                "lab.link",
                "applies to a network transfer system only (`transfer = \"udp\"`, `\"tcp\"` or \
                 `\"opensees\"`)",
            );
            return None;
        }
        (true, None) => {
            diag.push(
                "lab.link",
                format!(
                    "`transfer = \"{}\"` needs a [lab.link] table with the peer's `address` \
                     (host:port)",
                    transfer.name()
                ),
            );
            return None;
        }
        (true, Some(s)) => s,
    };
    let before = diag.len();
    let address = match &spec.address {
        None => {
            diag.push("lab.link.address", "is required: the peer's `host:port`");
            String::new()
        }
        Some(a) => {
            check_socket_address(
                a,
                "lab.link.address",
                transfer == TransferKind::OpenSees,
                diag,
            );
            a.clone()
        }
    };
    if let Some(b) = &spec.bind {
        check_socket_address(b, "lab.link.bind", false, diag);
    }
    // Default: ten controller ticks, at least 50 ms (a loaded machine's scheduling jitter).
    let timeout = spec.timeout.unwrap_or((10.0 * ts.dt_c).max(0.05));
    if !(timeout.is_finite() && timeout > 0.0 && timeout <= MAX_LINK_TIMEOUT) {
        diag.push(
            "lab.link.timeout",
            format!("must be a time in seconds in (0, {MAX_LINK_TIMEOUT}], found {timeout}"),
        );
    }
    let mode = match spec.mode.as_deref().unwrap_or("lock_step") {
        "lock_step" => LinkMode::LockStep,
        "streaming" => LinkMode::Streaming,
        other => {
            diag.push(
                "lab.link.mode",
                format!("unknown mode `{other}` (expected `lock_step` or `streaming`)"),
            );
            LinkMode::LockStep
        }
    };
    let max_lag = spec.max_lag.unwrap_or(2);
    if !(1..=MAX_LINK_LAG).contains(&max_lag) {
        diag.push(
            "lab.link.max_lag",
            format!("must be a number of ticks in 1..={MAX_LINK_LAG}, found {max_lag}"),
        );
    }
    let udp = match spec.protocol.as_deref() {
        None | Some("tcp") => false,
        Some("udp") => true,
        Some(other) => {
            diag.push(
                "lab.link.protocol",
                format!("unknown protocol `{other}` (expected `tcp` or `udp`)"),
            );
            false
        }
    };
    if spec.protocol.is_some() && transfer != TransferKind::OpenSees {
        diag.push(
            "lab.link.protocol",
            "applies to `transfer = \"opensees\"` only (the controller link's transport is the \
             transfer system itself: `udp` or `tcp`)",
        );
    }
    let peer = match spec.peer.as_deref() {
        None | Some("adapter") => RemotePeer::Adapter,
        Some("element_server") => RemotePeer::ElementServer,
        Some(other) => {
            diag.push(
                "lab.link.peer",
                format!("unknown peer `{other}` (expected `adapter` or `element_server`)"),
            );
            RemotePeer::Adapter
        }
    };
    if spec.peer.is_some() && transfer != TransferKind::OpenSees {
        diag.push("lab.link.peer", "applies to `transfer = \"opensees\"` only");
    }
    if spec.mode.is_some() && transfer == TransferKind::OpenSees {
        diag.push(
            "lab.link.mode",
            "applies to the controller link only (`opensees` is always lock-step)",
        );
    }
    if diag.len() > before {
        return None;
    }
    Some(LinkSettings {
        address,
        bind: spec.bind.clone(),
        timeout,
        mode,
        max_lag: max_lag as u64,
        udp,
        peer,
    })
}

/// `host:port` with a port; with `ipv4_only` the host must be a dotted quad (OpenSees parses
/// addresses with `inet_addr`).
fn check_socket_address(a: &str, field: &str, ipv4_only: bool, diag: &mut Diagnostics) {
    let Some((host, port)) = a.rsplit_once(':') else {
        diag.push(field, format!("`{a}` is not `host:port`"));
        return;
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        diag.push(
            field,
            format!("`{a}`: expected `host:port` with a port in 0..=65535"),
        );
        return;
    }
    if ipv4_only && host.parse::<std::net::Ipv4Addr>().is_err() {
        diag.push(
            field,
            format!("`{a}`: OpenSees reads IPv4 dotted quads only (`127.0.0.1`, not `localhost`)"),
        );
    }
}

/// `lab.time_scale` λ or `lab.controller_rate` (checked against each other when both are
/// given), and the wall-clock length of the test.
fn time_scale(spec: &LabSpec, ctx: &LabContext, diag: &mut Diagnostics) -> TimeScale {
    let lambda = match (spec.time_scale, spec.controller_rate) {
        (None, None) => {
            diag.push(
                "lab",
                "give the time scale λ (`time_scale`) or the controller rate in Hz (`controller_rate`)",
            );
            1.0
        }
        (Some(l), rate) => {
            if !(l.is_finite() && l >= 1.0) {
                diag.push(
                    "lab.time_scale",
                    format!("λ must be a number ≥ 1, found {l}"),
                );
            }
            if let Some(rate) = rate {
                let dt_c = l * ctx.dt_n / ctx.ss as f64;
                if !finite_positive(rate) {
                    diag.push(
                        "lab.controller_rate",
                        format!("must be positive, found {rate}"),
                    );
                } else if ((1.0 / dt_c) - rate).abs() > 1e-6 * rate {
                    diag.push(
                        "lab.controller_rate",
                        format!(
                            "{rate} Hz does not match λ = {l} with dt_N = {} and ss = {}: \
                             dt_C = λ·dt_N/ss = {dt_c:e} s, i.e. {} Hz",
                            ctx.dt_n,
                            ctx.ss,
                            1.0 / dt_c
                        ),
                    );
                }
            }
            l
        }
        (None, Some(rate)) => {
            if !finite_positive(rate) {
                diag.push(
                    "lab.controller_rate",
                    format!("must be positive, found {rate}"),
                );
                1.0
            } else {
                let l = (1.0 / rate) / (ctx.dt_n / ctx.ss as f64);
                if l < 1.0 - 1e-9 {
                    diag.push(
                        "lab.controller_rate",
                        format!(
                            "{rate} Hz gives λ = {l} < 1: the test would run faster than real time \
                             (dt_P = {:e} s); lower the rate or raise ss",
                            ctx.dt_n / ctx.ss as f64
                        ),
                    );
                }
                l
            }
        }
    };
    let time_scale = TimeScale::new(ctx.dt_n, ctx.ss, lambda);
    // The runner counts wall-clock nanoseconds of every controller tick in a u64.
    let wall = (ctx.duration / ctx.dt_n).ceil() * time_scale.dt_s;
    if lambda.is_finite() && lambda >= 1.0 && wall > MAX_WALL_CLOCK {
        diag.push(
            if spec.time_scale.is_some() {
                "lab.time_scale"
            } else {
                "lab.controller_rate"
            },
            format!(
                "λ = {lambda:e} over the analysis duration {} makes the test last {wall:e} s of \
                 wall clock; at most {MAX_WALL_CLOCK:e} s (about 31 years) is supported",
                ctx.duration
            ),
        );
    }
    time_scale
}

/// `lab.regime` (by default real-time at λ = 1, else pseudodynamic), checked against λ and
/// the specimen masses.
fn regime(spec: &LabSpec, lambda: f64, ctx: &LabContext, diag: &mut Diagnostics) -> Regime {
    let regime = match spec.regime.as_deref() {
        Some("pseudodynamic") => Regime::Pseudodynamic,
        Some("real-time") | Some("realtime") => Regime::RealTime,
        Some(other) => {
            diag.push(
                "lab.regime",
                format!("unknown regime `{other}` (pseudodynamic, real-time)"),
            );
            Regime::Pseudodynamic
        }
        None => {
            if (lambda - 1.0).abs() < 1e-12 {
                Regime::RealTime
            } else {
                Regime::Pseudodynamic
            }
        }
    };
    if regime == Regime::RealTime && (lambda - 1.0).abs() > 1e-9 {
        diag.push(
            "lab.regime",
            format!("a real-time test needs λ = 1, found λ = {lambda}"),
        );
    }
    if regime == Regime::Pseudodynamic {
        for f in &ctx.specimen_masses {
            diag.push(
                format!("{f}.role"),
                "a specimen mass cannot be measured in a pseudodynamic test: give the mass \
                 role = \"numerical\" so that M^P carries its inertia",
            );
        }
    }
    regime
}

/// `[[lab.actuator]]` at field `f`: DOFs, coefficients, dynamics, sensors, loading stiffness
/// and compensation.
fn actuator(
    a: &ActuatorSpec,
    f: &str,
    ctx: &LabContext,
    time_scale: &TimeScale,
    diag: &mut Diagnostics,
) -> ActuatorSettings {
    // An actuator without DOFs must belong to a `[[lab.setup]]` (checked by `setups`).
    for d in &a.dofs {
        if !ctx.physical_dofs.contains(d) {
            diag.push(
                format!("{f}.dofs"),
                format!(
                    "node {} dof {} is not a DOF of a physical substructure",
                    d.0, d.1
                ),
            );
        }
    }
    let coefficients = coefficients(a, f, diag);
    let before = diag.len();
    let (dynamics, chained) = match &a.dynamics {
        None => (ActuatorDynamics::Ideal, false),
        Some(toml::Value::Table(t)) => (parse_dynamics(t, &format!("{f}.dynamics"), diag), false),
        Some(toml::Value::Array(items)) => {
            (parse_chain(items, &format!("{f}.dynamics"), diag), true)
        }
        Some(v) => {
            diag.push(
                format!("{f}.dynamics"),
                format!(
                    "must be a table with `kind` or an array of block tables, found {}",
                    v.type_str()
                ),
            );
            (ActuatorDynamics::Ideal, false)
        }
    };
    // A chain that passed every check is built once here, at Δt^C, so that what depends on
    // the tick (a prewarp frequency below Nyquist, the delay line's length) is reported too.
    if let ActuatorDynamics::Blocks(specs) = &dynamics {
        if diag.len() == before && time_scale.dt_c.is_finite() && time_scale.dt_c > 0.0 {
            if let Err(e) = crate::physical::blocks::Series::new(specs, time_scale.dt_c) {
                let at = if chained {
                    format!("{f}.dynamics[{}].{}", e.block, e.field)
                } else {
                    format!("{f}.dynamics.{}", e.field)
                };
                diag.push(at, e.reason);
            }
        }
    }
    if let ActuatorDynamics::Delay { delay } = dynamics {
        // The virtual actuator keeps one history sample per controller tick of delay.
        let ticks = delay / time_scale.dt_c;
        if delay.is_finite() && time_scale.dt_c > 0.0 && ticks > MAX_DELAY_TICKS {
            diag.push(
                format!("{f}.dynamics.delay"),
                format!(
                    "{delay} s is {ticks:e} controller ticks of dt_C = {:e} s; at most \
                     {MAX_DELAY_TICKS:e} are supported (shorten the delay or raise dt_C)",
                    time_scale.dt_c
                ),
            );
        }
    }
    let (displacement_noise, force_noise) = noise(a.noise.as_ref(), f, diag);
    let [displacement_resolution, force_resolution, displacement_range, force_range] =
        adc(a.adc.as_ref(), f, diag);
    let loading_stiffness = a.loading_stiffness.unwrap_or(f64::INFINITY);
    if loading_stiffness.is_nan() || loading_stiffness <= 0.0 {
        diag.push(
            format!("{f}.loading_stiffness"),
            format!("must be positive, found {loading_stiffness}"),
        );
    }
    let (delay_compensation, compliance_compensation) = match &a.compensation {
        None => (None, None),
        Some(c) => compensation(c, f, ctx.units, diag),
    };
    let (inverse_compensation, adaptive_compensation) = match &a.compensation {
        None => (None, None),
        Some(c) => model_compensation(c, f, delay_compensation.is_some(), time_scale.ss, diag),
    };
    let controller = a
        .controller
        .as_ref()
        .map(|v| controller(v, &format!("{f}.controller"), time_scale, diag));
    let signals = a
        .signals
        .as_ref()
        .map(|v| signals(v, &format!("{f}.signals"), time_scale, diag))
        .unwrap_or_default();
    if controller.is_none() && !signals.error.is_empty() {
        diag.push(
            format!("{f}.signals.error"),
            "acts on the servo controller's error: it needs `controller`",
        );
    }
    ActuatorSettings {
        name: a.name.clone(),
        dofs: a.dofs.clone(),
        coefficients,
        dynamics,
        displacement_noise,
        force_noise,
        displacement_resolution,
        force_resolution,
        displacement_range,
        force_range,
        loading_stiffness,
        delay_compensation,
        compliance_compensation,
        inverse_compensation,
        adaptive_compensation,
        controller,
        signals,
        capacity: capacity(a.capacity.as_ref(), f, diag),
        substructure: a.substructure.clone(),
        setup: None,
        control_error: control_error(a.control_error.as_ref(), f, diag),
        scale: None,
    }
}

/// `control_error = { kind, amount }` of an actuator of the virtual lab.
fn control_error(
    spec: Option<&super::schema::ControlErrorSpec>,
    f: &str,
    diag: &mut Diagnostics,
) -> Option<crate::model::lab::ControlError> {
    use crate::model::lab::ControlError;
    let c = spec?;
    if !(c.amount.is_finite() && c.amount > 0.0) {
        diag.push(
            format!("{f}.control_error.amount"),
            format!("must be a positive, finite length, found {}", c.amount),
        );
        return None;
    }
    match c.kind.as_str() {
        "overshoot" => Some(ControlError::Overshoot(c.amount)),
        "undershoot" => Some(ControlError::Undershoot(c.amount)),
        other => {
            diag.push(
                format!("{f}.control_error.kind"),
                format!("must be \"overshoot\" or \"undershoot\", found `{other}`"),
            );
            None
        }
    }
}

/// `coefficients` of `d = Σ c_i u_i` (`[1.0]` for a single DOF).
fn coefficients(a: &ActuatorSpec, f: &str, diag: &mut Diagnostics) -> Vec<f64> {
    if a.dofs.is_empty() && a.coefficients.is_none() {
        return Vec::new();
    }
    match &a.coefficients {
        None if a.dofs.len() == 1 => vec![1.0],
        None => {
            diag.push(
                format!("{f}.coefficients"),
                format!(
                    "an actuator on {} DOFs needs its coefficients (d = Σ c_i u_i), e.g. \
                     [-1.0, 1.0] for a two-node device",
                    a.dofs.len()
                ),
            );
            vec![0.0; a.dofs.len()]
        }
        Some(c) => {
            if c.len() != a.dofs.len() {
                diag.push(
                    format!("{f}.coefficients"),
                    format!("has {} entries for {} DOFs", c.len(), a.dofs.len()),
                );
            }
            if c.iter().any(|x| !x.is_finite()) || c.iter().all(|x| *x == 0.0) {
                diag.push(
                    format!("{f}.coefficients"),
                    "must be finite and not all zero",
                );
            }
            c.clone()
        }
    }
}

/// `noise`: displacement and force noise RMS (0 by default).
fn noise(noise: Option<&NoiseSpec>, f: &str, diag: &mut Diagnostics) -> (f64, f64) {
    let displacement_noise = noise.and_then(|n| n.displacement_rms).unwrap_or(0.0);
    let force_noise = noise.and_then(|n| n.force_rms).unwrap_or(0.0);
    for (x, k) in [
        (displacement_noise, "noise.displacement_rms"),
        (force_noise, "noise.force_rms"),
    ] {
        if !(x.is_finite() && x >= 0.0) {
            diag.push(format!("{f}.{k}"), format!("must be ≥ 0, found {x}"));
        }
    }
    (displacement_noise, force_noise)
}

/// `adc`: displacement and force resolutions (0: none) and ranges (∞ by default), in that
/// order.
fn adc(adc: Option<&AdcSpec>, f: &str, diag: &mut Diagnostics) -> [f64; 4] {
    let get = |o: Option<f64>, d: f64| o.unwrap_or(d);
    let displacement_resolution = get(adc.and_then(|a| a.displacement_resolution), 0.0);
    let force_resolution = get(adc.and_then(|a| a.force_resolution), 0.0);
    let displacement_range = get(adc.and_then(|a| a.displacement_range), f64::INFINITY);
    let force_range = get(adc.and_then(|a| a.force_range), f64::INFINITY);
    for (x, k) in [
        (displacement_resolution, "adc.displacement_resolution"),
        (force_resolution, "adc.force_resolution"),
    ] {
        if !(x.is_finite() && x >= 0.0) {
            diag.push(format!("{f}.{k}"), format!("must be ≥ 0, found {x}"));
        }
    }
    for (x, k) in [
        (displacement_range, "adc.displacement_range"),
        (force_range, "adc.force_range"),
    ] {
        if x.is_nan() || x <= 0.0 {
            diag.push(format!("{f}.{k}"), format!("must be positive, found {x}"));
        }
    }
    [
        displacement_resolution,
        force_resolution,
        displacement_range,
        force_range,
    ]
}

/// `compensation`: delay compensation and compliance compensation (in model units).
fn compensation(
    c: &CompensationSpec,
    f: &str,
    units: &Units,
    diag: &mut Diagnostics,
) -> (Option<DelayCompensation>, Option<ComplianceCompensation>) {
    let mut delay_compensation = None;
    let mut compliance_compensation = None;
    if let Some(d) = &c.delay {
        if !(0..=3).contains(&d.order) {
            diag.push(
                format!("{f}.compensation.delay.order"),
                format!("must be 0, 1, 2 or 3, found {}", d.order),
            );
        }
        if !(d.estimate.is_finite() && d.estimate >= 0.0) {
            diag.push(
                format!("{f}.compensation.delay.estimate"),
                format!("must be a delay ≥ 0 s, found {}", d.estimate),
            );
        }
        let fs = format!("{f}.compensation.delay.node_spacing");
        let node_spacing = match &d.node_spacing {
            None => NodeSpacing::Ticks(1),
            Some(toml::Value::Integer(n)) if (1..=MAX_NODE_SPACING).contains(n) => {
                NodeSpacing::Ticks(*n as usize)
            }
            Some(toml::Value::String(s)) if s == "coarse_step" => NodeSpacing::CoarseSteps(1),
            Some(toml::Value::Table(t))
                if t.len() == 1
                    && t.get("coarse_steps")
                        .and_then(|v| v.as_integer())
                        .is_some_and(|n| (1..=MAX_NODE_SPACING).contains(&n)) =>
            {
                NodeSpacing::CoarseSteps(t["coarse_steps"].as_integer().unwrap_or(1) as usize)
            }
            Some(v) => {
                diag.push(
                    fs,
                    format!(
                        "must be a number of controller ticks from 1 to {MAX_NODE_SPACING}, \
                         \"coarse_step\" or {{ coarse_steps = N }} (N from 1 to \
                         {MAX_NODE_SPACING}), found {v}"
                    ),
                );
                NodeSpacing::Ticks(1)
            }
        };
        let startup = match d.startup.as_deref() {
            None | Some("passthrough") => StartupPolicy::Passthrough,
            Some("hold_order") => StartupPolicy::HoldOrder,
            Some("rest_history") => StartupPolicy::RestHistory,
            Some(s) => {
                diag.push(
                    format!("{f}.compensation.delay.startup"),
                    format!(
                        "must be \"passthrough\", \"hold_order\" or \"rest_history\", found \"{s}\""
                    ),
                );
                StartupPolicy::Passthrough
            }
        };
        delay_compensation = Some(DelayCompensation {
            order: d.order.clamp(0, 3) as usize,
            estimate: d.estimate,
            node_spacing,
            startup,
        });
    }
    if let Some(k) = &c.compliance {
        let conv = |x: f64| stiffness_in_model_units(x, &k.units, units);
        match (conv(k.k_positive), conv(k.k_negative)) {
            (Some(kp), Some(kn)) if finite_positive(kp) && finite_positive(kn) => {
                compliance_compensation = Some(ComplianceCompensation {
                    k_positive: kp,
                    k_negative: kn,
                })
            }
            (Some(_), Some(_)) => diag.push(
                format!("{f}.compensation.compliance"),
                "k_positive and k_negative must be positive",
            ),
            _ => diag.push(
                format!("{f}.compensation.compliance.units"),
                format!(
                    "unknown stiffness unit `{}`: write force/length, e.g. `kN/mm` or \
                     `N/m` (eq 15 of Abbiati et al. 2020 prints kN/m where kN/mm is \
                     likely, E29)",
                    k.units
                ),
            ),
        }
    }
    (delay_compensation, compliance_compensation)
}

/// Largest node spacing of the polynomial extrapolation, in ticks.
const MAX_NODE_SPACING: i64 = 100_000;

/// Longest identification window of the adaptive compensator, in ticks.
const MAX_ADAPTIVE_WINDOW: i64 = 1_000_000;

/// `compensation.inverse` and `compensation.adaptive`; the adaptive compensator replaces the
/// others (it identifies the delay itself), so it may not be combined with `delay` or
/// `inverse`.
fn model_compensation(
    c: &CompensationSpec,
    f: &str,
    has_delay: bool,
    ss: usize,
    diag: &mut Diagnostics,
) -> (Option<InverseCompensation>, Option<AdaptiveCompensation>) {
    let mut inverse = None;
    if let Some(i) = &c.inverse {
        let fi = format!("{f}.compensation.inverse");
        let positive = |x: Option<f64>, key: &str, what: &str, diag: &mut Diagnostics| -> f64 {
            match x {
                Some(x) if x.is_finite() && x > 0.0 => x,
                Some(x) => {
                    diag.push(format!("{fi}.{key}"), format!("must be {what}, found {x}"));
                    f64::NAN
                }
                None => {
                    diag.push(
                        format!("{fi}.{key}"),
                        format!("is required by `model = \"{}\"`", i.model),
                    );
                    f64::NAN
                }
            }
        };
        let unused = |key: &str, set: bool, diag: &mut Diagnostics| {
            if set {
                diag.push(
                    format!("{fi}.{key}"),
                    format!("does not apply to `model = \"{}\"`", i.model),
                );
            }
        };
        let model = match i.model.as_str() {
            "first_order" => {
                unused("frequency", i.frequency.is_some(), diag);
                unused("damping", i.damping.is_some(), diag);
                Some(ActuatorModel::FirstOrder {
                    tau: positive(i.tau, "tau", "a positive finite time constant (s)", diag),
                })
            }
            "second_order" => {
                unused("tau", i.tau.is_some(), diag);
                Some(ActuatorModel::SecondOrder {
                    frequency: positive(
                        i.frequency,
                        "frequency",
                        "a positive finite natural frequency (Hz)",
                        diag,
                    ),
                    damping: positive(
                        i.damping,
                        "damping",
                        "a positive finite damping ratio",
                        diag,
                    ),
                })
            }
            other => {
                diag.push(
                    format!("{fi}.model"),
                    format!("unknown actuator model `{other}` (first_order, second_order)"),
                );
                None
            }
        };
        let tf = i.filter_time_constant;
        if !(tf.is_finite() && tf > 0.0) {
            diag.push(
                format!("{fi}.filter_time_constant"),
                format!("must be a positive finite time constant (s), found {tf}"),
            );
        }
        inverse = model.map(|model| InverseCompensation {
            model,
            filter_time_constant: tf,
        });
    }
    let mut adaptive = None;
    if let Some(a) = &c.adaptive {
        let fa = format!("{f}.compensation.adaptive");
        if has_delay || c.inverse.is_some() {
            diag.push(
                fa.clone(),
                "identifies the delay itself: it cannot be combined with `delay` or `inverse` \
                 compensation",
            );
        }
        if !(3..=MAX_ADAPTIVE_WINDOW).contains(&a.window) {
            diag.push(
                format!("{fa}.window"),
                format!(
                    "must be a number of controller ticks from 3 to {MAX_ADAPTIVE_WINDOW}, found {}",
                    a.window
                ),
            );
        }
        let every = a.update_every.unwrap_or(1);
        if !(1..=MAX_ADAPTIVE_WINDOW).contains(&every) {
            diag.push(
                format!("{fa}.update_every"),
                format!("must be a number of ticks from 1 to {MAX_ADAPTIVE_WINDOW}, found {every}"),
            );
        }
        let triple =
            |v: &Option<Vec<f64>>, key: &str, default: [f64; 3], diag: &mut Diagnostics| match v {
                None => default,
                Some(v) if v.len() == 3 && v.iter().all(|x| x.is_finite()) => [v[0], v[1], v[2]],
                Some(v) => {
                    diag.push(
                        format!("{fa}.{key}"),
                        format!("must list three finite numbers (a0, a1, a2), found {v:?}"),
                    );
                    default
                }
            };
        let initial = triple(&a.initial, "initial", [1.0, 0.0, 0.0], diag);
        let lower = triple(&a.lower, "lower", [0.1, 0.0, 0.0], diag);
        let upper = triple(&a.upper, "upper", [10.0, 0.1, 0.01], diag);
        for (i, name) in ["a0", "a1", "a2"].iter().enumerate() {
            if lower[i] > upper[i] {
                diag.push(
                    format!("{fa}.upper"),
                    format!(
                        "{name}: the upper bound {} lies below the lower bound {}",
                        upper[i], lower[i]
                    ),
                );
            } else if !(lower[i]..=upper[i]).contains(&initial[i]) {
                diag.push(
                    format!("{fa}.initial"),
                    format!(
                        "{name} = {} lies outside its bounds [{}, {}]",
                        initial[i], lower[i], upper[i]
                    ),
                );
            }
        }
        if lower[0] <= 0.0 {
            diag.push(
                format!("{fa}.lower"),
                format!(
                    "a0 (the amplitude factor) must stay positive: its lower bound must be > 0, \
                     found {}",
                    lower[0]
                ),
            );
        }
        let min_velocity = a.min_velocity.unwrap_or(0.0);
        if !(min_velocity.is_finite() && min_velocity >= 0.0) {
            diag.push(
                format!("{fa}.min_velocity"),
                format!("must be a finite velocity ≥ 0, found {min_velocity}"),
            );
        }
        let spacing = a.difference_spacing.unwrap_or(ss.max(1) as i64);
        if !(1..=MAX_NODE_SPACING).contains(&spacing) {
            diag.push(
                format!("{fa}.difference_spacing"),
                format!("must be a number of ticks from 1 to {MAX_NODE_SPACING}, found {spacing}"),
            );
        } else if (3..=MAX_ADAPTIVE_WINDOW).contains(&a.window) && 2 * spacing >= a.window {
            diag.push(
                format!("{fa}.window"),
                format!(
                    "must span more than two difference spacings ({spacing} ticks each), found {}",
                    a.window
                ),
            );
        }
        adaptive = Some(AdaptiveCompensation {
            difference_spacing: spacing.clamp(1, MAX_NODE_SPACING) as usize,
            window: a.window.clamp(3, MAX_ADAPTIVE_WINDOW) as usize,
            update_every: every.clamp(1, MAX_ADAPTIVE_WINDOW) as usize,
            initial,
            lower,
            upper,
            min_velocity,
        });
    }
    (inverse, adaptive)
}

/// A chain of blocks at `f`: an array of block tables (or one block table), each checked, then
/// built at Δt^C so that what depends on the tick is reported at its block.
fn block_chain(
    v: &toml::Value,
    f: &str,
    time_scale: &TimeScale,
    diag: &mut Diagnostics,
) -> Vec<BlockSpec> {
    let before = diag.len();
    let (items, single): (Vec<&toml::Table>, bool) = match v {
        toml::Value::Table(t) => (vec![t], true),
        toml::Value::Array(a) => {
            if a.is_empty() || a.len() > MAX_CHAIN {
                diag.push(
                    f,
                    format!("must list 1 to {MAX_CHAIN} blocks, found {}", a.len()),
                );
                return Vec::new();
            }
            let mut items = Vec::with_capacity(a.len());
            for (j, x) in a.iter().enumerate() {
                match x.as_table() {
                    Some(t) => items.push(t),
                    None => diag.push(
                        format!("{f}[{j}]"),
                        format!("must be a block table with `kind`, found {}", x.type_str()),
                    ),
                }
            }
            (items, false)
        }
        other => {
            diag.push(
                f,
                format!(
                    "must be an array of block tables, found {}",
                    other.type_str()
                ),
            );
            return Vec::new();
        }
    };
    let mut blocks = Vec::with_capacity(items.len());
    for (j, t) in items.iter().enumerate() {
        let fj = if single {
            f.to_string()
        } else {
            format!("{f}[{j}]")
        };
        blocks.extend(parse_block(t, &fj, diag));
    }
    if diag.len() == before && time_scale.dt_c.is_finite() && time_scale.dt_c > 0.0 {
        if let Err(e) = crate::physical::blocks::Series::new(&blocks, time_scale.dt_c) {
            let at = if single {
                format!("{f}.{}", e.field)
            } else {
                format!("{f}[{}].{}", e.block, e.field)
            };
            diag.push(at, e.reason);
        }
    }
    blocks
}

/// The keys of the table at `f` (an error for anything but a table, or an unknown key).
fn sub_table<'a>(
    v: &'a toml::Value,
    f: &str,
    keys: &[&str],
    diag: &mut Diagnostics,
) -> Option<&'a toml::Table> {
    let Some(t) = v.as_table() else {
        diag.push(f, format!("must be a table, found {}", v.type_str()));
        return None;
    };
    for k in t.keys() {
        if !keys.contains(&k.as_str()) {
            diag.push(
                format!("{f}.{k}"),
                format!("unknown key (expected {})", keys.join(", ")),
            );
        }
    }
    Some(t)
}

/// Keys of an actuator's `controller` table.
pub(super) const CONTROLLER_KEYS: &[&str] = &["feedback", "feedforward"];

/// Keys of an actuator's `signals` table.
pub(super) const SIGNALS_KEYS: &[&str] = &["target", "command", "error", "measurement"];

/// `controller = { feedback = [blocks], feedforward = [blocks] }`.
fn controller(
    v: &toml::Value,
    f: &str,
    time_scale: &TimeScale,
    diag: &mut Diagnostics,
) -> ControllerSettings {
    let mut c = ControllerSettings::default();
    let Some(t) = sub_table(v, f, CONTROLLER_KEYS, diag) else {
        return c;
    };
    match t.get("feedback") {
        Some(x) => c.feedback = block_chain(x, &format!("{f}.feedback"), time_scale, diag),
        None => diag.push(
            format!("{f}.feedback"),
            "is required: the blocks acting on the error (e.g. [{ kind = \"pid\", kp = 1.0 }])",
        ),
    }
    if let Some(x) = t.get("feedforward") {
        c.feedforward = block_chain(x, &format!("{f}.feedforward"), time_scale, diag);
    }
    c
}

/// `signals = { target, command, error, measurement }`, each a chain of blocks.
fn signals(
    v: &toml::Value,
    f: &str,
    time_scale: &TimeScale,
    diag: &mut Diagnostics,
) -> SignalChains {
    let mut s = SignalChains::default();
    let Some(t) = sub_table(v, f, SIGNALS_KEYS, diag) else {
        return s;
    };
    for (key, chain) in [
        ("target", &mut s.target),
        ("command", &mut s.command),
        ("error", &mut s.error),
        ("measurement", &mut s.measurement),
    ] {
        if let Some(x) = t.get(key) {
            *chain = block_chain(x, &format!("{f}.{key}"), time_scale, diag);
        }
    }
    s
}

/// `[[lab.force_control]]`: DOFs of a physical substructure not driven by an actuator.
fn force_control(
    specs: &[ForceControlSpec],
    actuators: &[ActuatorSettings],
    ctx: &LabContext,
    diag: &mut Diagnostics,
) -> Vec<ForceControl> {
    let mut force_control = Vec::new();
    for (i, fc) in specs.iter().enumerate() {
        let f = format!("lab.force_control[{i}]");
        if !ctx.physical_dofs.contains(&fc.dof) {
            diag.push(
                format!("{f}.dof"),
                format!(
                    "node {} dof {} is not a DOF of a physical substructure",
                    fc.dof.0, fc.dof.1
                ),
            );
        }
        if actuators.iter().any(|a| a.dofs.contains(&fc.dof)) {
            diag.push(
                format!("{f}.dof"),
                "is also driven by an actuator in displacement control",
            );
        }
        if !fc.force.is_finite() {
            diag.push(format!("{f}.force"), "must be finite");
        }
        force_control.push(ForceControl {
            dof: fc.dof.clone(),
            force: fc.force,
        });
    }
    force_control
}

/// `dynamics`: the kind and its parameters, nothing else, each checked (a NaN, infinite or
/// negative time, a non-number, an improper or unstable transfer function are refused).
fn parse_dynamics(t: &toml::Table, f: &str, diag: &mut Diagnostics) -> ActuatorDynamics {
    let kind = match t.get("kind") {
        None => {
            diag.push(
                format!("{f}.kind"),
                "is required (ideal, delay, first_order, transfer_function, servo_hydraulic, \
                 or a block kind: state_space, saturation, rate_limit, quantizer, \
                 servo_valve_csi)",
            );
            return ActuatorDynamics::Ideal;
        }
        Some(k) => match k.as_str() {
            Some(k) => k,
            None => {
                diag.push(
                    format!("{f}.kind"),
                    format!("must be a string, found {}", k.type_str()),
                );
                return ActuatorDynamics::Ideal;
            }
        },
    };
    let block_only = BLOCK_KINDS.contains(&kind) && !LEGACY_KINDS.contains(&kind);
    if block_only || t.contains_key("discretization") || t.contains_key("prewarp") {
        return ActuatorDynamics::Blocks(parse_block(t, f, diag).into_iter().collect());
    }
    let allowed: &[&str] = match dynamics_keys(kind) {
        Some(keys) => keys,
        _ => {
            diag.push(
                format!("{f}.kind"),
                format!(
                    "unknown actuator dynamics `{kind}` (ideal, delay, first_order, \
                     transfer_function, servo_hydraulic, state_space, saturation, rate_limit, \
                     quantizer, servo_valve_csi)"
                ),
            );
            return ActuatorDynamics::Ideal;
        }
    };
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            diag.push(
                format!("{f}.{k}"),
                format!(
                    "unknown key for `{kind}` dynamics (expected {})",
                    allowed.join(", ")
                ),
            );
        }
    }
    // A number (integer or float) at `key`, or NaN after a problem was recorded
    // (`block_number`).
    let number = |key: &str,
                  default: Option<f64>,
                  check: &dyn Fn(f64) -> bool,
                  what: &str,
                  diag: &mut Diagnostics|
     -> f64 { block_number(t, f, kind, key, default, check, what, diag) };
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let non_negative = |x: f64| x.is_finite() && x >= 0.0;
    match kind {
        "ideal" => ActuatorDynamics::Ideal,
        "delay" => ActuatorDynamics::Delay {
            delay: number("delay", None, &non_negative, "a finite delay ≥ 0 s", diag),
        },
        "first_order" => ActuatorDynamics::FirstOrder {
            tau: number(
                "tau",
                None,
                &positive,
                "a positive finite time constant (s)",
                diag,
            ),
        },
        "transfer_function" => transfer_function(t, f, diag),
        _ => {
            let pos = |key: &str, what: &str, diag: &mut Diagnostics| {
                number(key, None, &positive, what, diag)
            };
            let gain = pos("gain", "a positive finite flow gain", diag);
            let area = pos("area", "a positive finite piston area", diag);
            let compliance = pos(
                "compliance",
                "a positive finite oil compliance V/(4β)",
                diag,
            );
            let mass = pos("mass", "a positive finite moving mass", diag);
            let leakage = number(
                "leakage",
                Some(0.0),
                &non_negative,
                "a finite leakage ≥ 0",
                diag,
            );
            let substeps = match t.get("substeps") {
                None => 20,
                Some(v) => match v.as_integer() {
                    Some(n) if (1..=MAX_SUBSTEPS).contains(&n) => n,
                    Some(n) => {
                        diag.push(
                            format!("{f}.substeps"),
                            format!("must be 1..={MAX_SUBSTEPS}, found {n}"),
                        );
                        1
                    }
                    None => {
                        diag.push(
                            format!("{f}.substeps"),
                            format!("must be an integer 1..={MAX_SUBSTEPS}, found {v}"),
                        );
                        1
                    }
                },
            };
            ActuatorDynamics::ServoHydraulic {
                gain,
                area,
                compliance,
                leakage,
                mass,
                substeps: substeps as usize,
            }
        }
    }
}

/// Keys of a stand-alone `dynamics = { kind = KIND, … }` table of the kinds that are not
/// blocks (or are read as before blocks without a `discretization`), `kind` included.
pub(super) fn dynamics_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "ideal" => &["kind"],
        "delay" => &["kind", "delay"],
        "first_order" => &["kind", "tau"],
        "transfer_function" => &["kind", "num", "den"],
        "servo_hydraulic" => &[
            "kind",
            "gain",
            "area",
            "compliance",
            "leakage",
            "mass",
            "substeps",
        ],
        _ => return None,
    })
}

/// The parameters of a block of kind `kind` and whether it is linear (then it also takes
/// [`LINEAR_BLOCK_KEYS`]); `None` for a kind that is not a block.
pub(super) fn block_keys(kind: &str) -> Option<(&'static [&'static str], bool)> {
    Some(match kind {
        "state_space" => (&["a", "b", "c", "d"], true),
        "transfer_function" => (&["num", "den"], true),
        "first_order" => (&["tau"], true),
        "delay" => (&["delay"], false),
        "saturation" => (&["min", "max"], false),
        "rate_limit" => (&["rate"], false),
        "quantizer" => (&["resolution", "range"], false),
        "pid" => (
            &[
                "kp",
                "ki",
                "kd",
                "derivative_filter",
                "derivative_time_constant",
                "min",
                "max",
            ],
            true,
        ),
        "lead_lag" => (&["gain", "zero", "pole", "frequency", "phase"], true),
        "servo_valve_csi" => (
            &[
                "valve_gain",
                "valve_frequency",
                "valve_damping",
                "a1",
                "a2",
                "a3",
                "mass",
                "damping",
                "stiffness",
                "proportional_gain",
            ],
            true,
        ),
        _ => return None,
    })
}

/// Discretization keys every linear block takes.
pub(super) const LINEAR_BLOCK_KEYS: &[&str] = &["discretization", "prewarp"];

/// Longest chain of blocks in one actuator's `dynamics`.
const MAX_CHAIN: usize = 16;

/// Every kind a block of a chain may have.
pub(super) const BLOCK_KINDS: &[&str] = &[
    "state_space",
    "transfer_function",
    "first_order",
    "delay",
    "saturation",
    "rate_limit",
    "quantizer",
    "servo_valve_csi",
    "pid",
    "lead_lag",
];

/// Kinds a single `dynamics` table had before blocks (kept bit for bit without a
/// `discretization`).
pub(super) const LEGACY_KINDS: &[&str] = &[
    "ideal",
    "delay",
    "first_order",
    "transfer_function",
    "servo_hydraulic",
];

/// `dynamics = [ {…}, {…} ]`: 1 to [`MAX_CHAIN`] block tables, applied in series.
fn parse_chain(items: &[toml::Value], f: &str, diag: &mut Diagnostics) -> ActuatorDynamics {
    if items.is_empty() || items.len() > MAX_CHAIN {
        diag.push(
            f,
            format!("must list 1 to {MAX_CHAIN} blocks, found {}", items.len()),
        );
        return ActuatorDynamics::Ideal;
    }
    let mut blocks = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        let fj = format!("{f}[{j}]");
        match item.as_table() {
            Some(t) => blocks.extend(parse_block(t, &fj, diag)),
            None => diag.push(
                fj,
                format!(
                    "must be a block table with `kind`, found {}",
                    item.type_str()
                ),
            ),
        }
    }
    ActuatorDynamics::Blocks(blocks)
}

/// A number at `t[key]` (`default` when absent, else required), accepted by `check` (which
/// `what` describes); NaN after a recorded problem.
#[allow(clippy::too_many_arguments)]
fn block_number(
    t: &toml::Table,
    f: &str,
    kind: &str,
    key: &str,
    default: Option<f64>,
    check: &dyn Fn(f64) -> bool,
    what: &str,
    diag: &mut Diagnostics,
) -> f64 {
    let x = match t.get(key) {
        None => match default {
            Some(d) => return d,
            None => {
                diag.push(
                    format!("{f}.{key}"),
                    format!("a `{kind}` block needs `{key}`"),
                );
                return f64::NAN;
            }
        },
        Some(v) => match toml_number(v) {
            Some(x) => x,
            None => {
                diag.push(
                    format!("{f}.{key}"),
                    format!("must be a number, found {}", v.type_str()),
                );
                return f64::NAN;
            }
        },
    };
    if !check(x) {
        diag.push(format!("{f}.{key}"), format!("must be {what}, found {x}"));
        return f64::NAN;
    }
    x
}

/// A list of finite numbers at `t[key]` with `len` entries (any count in `1..=MAX_TF_DEGREE`
/// when `None`).
fn block_list(
    t: &toml::Table,
    f: &str,
    key: &str,
    len: Option<usize>,
    diag: &mut Diagnostics,
) -> Option<Vec<f64>> {
    let field = format!("{f}.{key}");
    let Some(v) = t.get(key) else {
        diag.push(field, "is required");
        return None;
    };
    let Some(a) = v.as_array() else {
        diag.push(
            field,
            format!("must be a list of numbers, found {}", v.type_str()),
        );
        return None;
    };
    match len {
        Some(n) if a.len() != n => {
            diag.push(
                field,
                format!(
                    "must list {n} numbers (the state dimension), found {}",
                    a.len()
                ),
            );
            return None;
        }
        None if a.is_empty() || a.len() > MAX_TF_DEGREE => {
            diag.push(
                field,
                format!(
                    "must list 1 to {MAX_TF_DEGREE} numbers (the state dimension), found {}",
                    a.len()
                ),
            );
            return None;
        }
        _ => {}
    }
    finite_numbers(a, &field, diag)
}

/// The numbers of the TOML list `a` at `field`, each finite; the first problem is recorded at
/// `field[i]` and gives `None`.
fn finite_numbers(a: &[toml::Value], field: &str, diag: &mut Diagnostics) -> Option<Vec<f64>> {
    let mut out = Vec::with_capacity(a.len());
    for (i, x) in a.iter().enumerate() {
        match toml_number(x) {
            Some(x) if x.is_finite() => out.push(x),
            Some(x) => {
                diag.push(
                    format!("{field}[{i}]"),
                    format!("must be finite, found {x}"),
                );
                return None;
            }
            None => {
                diag.push(
                    format!("{field}[{i}]"),
                    format!("must be a number, found {}", x.type_str()),
                );
                return None;
            }
        }
    }
    Some(out)
}

/// `discretization` (`"zoh"`, `"foh"` or `"tustin"`, default Tustin) and Tustin's optional
/// `prewarp` frequency (Hz; below Nyquist, checked when the chain is built at Δt^C).
fn discretization(t: &toml::Table, f: &str, diag: &mut Diagnostics) -> Discretization {
    let how = match t.get("discretization") {
        None => "tustin",
        Some(v) => match v.as_str() {
            Some(s @ ("zoh" | "foh" | "tustin")) => s,
            Some(s) => {
                diag.push(
                    format!("{f}.discretization"),
                    format!("must be \"zoh\", \"foh\" or \"tustin\", found \"{s}\""),
                );
                "tustin"
            }
            None => {
                diag.push(
                    format!("{f}.discretization"),
                    format!(
                        "must be \"zoh\", \"foh\" or \"tustin\", found {}",
                        v.type_str()
                    ),
                );
                "tustin"
            }
        },
    };
    let prewarp = t.get("prewarp").map(|_| {
        block_number(
            t,
            f,
            "tustin",
            "prewarp",
            None,
            &|x| x.is_finite() && x > 0.0,
            "a positive finite frequency (Hz)",
            diag,
        )
    });
    match how {
        "zoh" | "foh" => {
            if prewarp.is_some() {
                diag.push(
                    format!("{f}.prewarp"),
                    format!("applies to `discretization = \"tustin\"` only, not \"{how}\""),
                );
            }
            if how == "zoh" {
                Discretization::Zoh
            } else {
                Discretization::Foh
            }
        }
        _ => Discretization::Tustin {
            prewarp_hz: prewarp,
        },
    }
}

/// One block table at field `f`: its kind, its parameters (nothing else), each checked;
/// `None` after a recorded problem with the kind.
fn parse_block(t: &toml::Table, f: &str, diag: &mut Diagnostics) -> Option<BlockSpec> {
    let kinds = BLOCK_KINDS.join(", ");
    let kind = match t.get("kind") {
        None => {
            diag.push(format!("{f}.kind"), format!("is required ({kinds})"));
            return None;
        }
        Some(k) => match k.as_str() {
            Some(k) => k,
            None => {
                diag.push(
                    format!("{f}.kind"),
                    format!("must be a string, found {}", k.type_str()),
                );
                return None;
            }
        },
    };
    const LINEAR: &[&str] = LINEAR_BLOCK_KEYS;
    let (params, linear): (&[&str], bool) = match (block_keys(kind), kind) {
        (Some(keys), _) => keys,
        (None, "servo_hydraulic" | "ideal") => {
            diag.push(
                format!("{f}.kind"),
                format!(
                    "`{kind}` is not a block: it stands alone as `dynamics = {{ kind = \
                     \"{kind}\" }}`{} (blocks: {kinds})",
                    if kind == "servo_hydraulic" {
                        "; in a chain use `servo_valve_csi`"
                    } else {
                        ""
                    }
                ),
            );
            return None;
        }
        _ => {
            diag.push(
                format!("{f}.kind"),
                format!("unknown block kind `{kind}` ({kinds})"),
            );
            return None;
        }
    };
    for k in t.keys() {
        let k = k.as_str();
        if k != "kind" && !params.contains(&k) && !(linear && LINEAR.contains(&k)) {
            let mut expected: Vec<&str> = params.to_vec();
            if linear {
                expected.extend(LINEAR);
            }
            diag.push(
                format!("{f}.{k}"),
                format!(
                    "unknown key for a `{kind}` block (expected kind, {})",
                    expected.join(", ")
                ),
            );
        }
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let non_negative = |x: f64| x.is_finite() && x >= 0.0;
    let num = |key: &str, check: &dyn Fn(f64) -> bool, what: &str, diag: &mut Diagnostics| {
        block_number(t, f, kind, key, None, check, what, diag)
    };
    let spec = match kind {
        "state_space" => {
            let discretization = discretization(t, f, diag);
            let b = block_list(t, f, "b", None, diag)?;
            let n = b.len();
            let c = block_list(t, f, "c", Some(n), diag)?;
            let d = block_number(t, f, kind, "d", Some(0.0), &f64::is_finite, "finite", diag);
            let a = state_matrix(t, f, n, diag)?;
            let m = nalgebra::DMatrix::from_fn(n, n, |i, j| a[i][j]);
            match nalgebra::linalg::Schur::try_new(m, 1e-14, 10_000) {
                None => diag.push(
                    format!("{f}.a"),
                    "its eigenvalues could not be computed (no convergence)",
                ),
                Some(schur) => {
                    let eig = schur.complex_eigenvalues();
                    if let Some(p) = eig.iter().find(|p| p.re.is_nan() || p.re >= 0.0) {
                        diag.push(
                            format!("{f}.a"),
                            format!(
                                "the block must be stable (every eigenvalue of A with a \
                                 negative real part): eigenvalue {} {:+} i",
                                p.re, p.im
                            ),
                        );
                    }
                }
            }
            BlockSpec::StateSpace {
                a,
                b,
                c,
                d,
                discretization,
            }
        }
        "transfer_function" => {
            let discretization = discretization(t, f, diag);
            match transfer_function(t, f, diag) {
                ActuatorDynamics::TransferFunction { num, den } => BlockSpec::TransferFunction {
                    num,
                    den,
                    discretization,
                },
                _ => return None,
            }
        }
        "first_order" => BlockSpec::FirstOrder {
            tau: num(
                "tau",
                &positive,
                "a positive finite time constant (s)",
                diag,
            ),
            discretization: discretization(t, f, diag),
        },
        "delay" => BlockSpec::Delay {
            delay: num("delay", &non_negative, "a finite delay ≥ 0 s", diag),
        },
        "saturation" => {
            let not_nan = |x: f64| !x.is_nan();
            let min = num("min", &not_nan, "a number (−inf allowed)", diag);
            let max = num("max", &not_nan, "a number (inf allowed)", diag);
            if min >= max {
                diag.push(
                    format!("{f}.max"),
                    format!("must be greater than min = {min}, found {max}"),
                );
            }
            BlockSpec::Saturation { min, max }
        }
        "rate_limit" => BlockSpec::RateLimit {
            rate: num("rate", &positive, "a positive finite rate (units/s)", diag),
        },
        "quantizer" => {
            let resolution = num("resolution", &positive, "a positive finite step", diag);
            let range = num("range", &positive, "a positive finite full scale", diag);
            if resolution > range {
                diag.push(
                    format!("{f}.range"),
                    format!("must be at least the resolution {resolution}, found {range}"),
                );
            }
            BlockSpec::Quantizer { resolution, range }
        }
        "pid" => {
            let finite = |x: f64| x.is_finite();
            let kp = block_number(t, f, kind, "kp", Some(0.0), &finite, "finite", diag);
            let ki = block_number(t, f, kind, "ki", Some(0.0), &finite, "finite", diag);
            let kd = block_number(t, f, kind, "kd", Some(0.0), &finite, "finite", diag);
            if kp == 0.0 && ki == 0.0 && kd == 0.0 {
                diag.push(
                    f.to_string(),
                    "a `pid` block needs at least one of kp, ki, kd non-zero",
                );
            }
            let n = t.get("derivative_filter").map(|_| {
                num(
                    "derivative_filter",
                    &positive,
                    "a positive finite filter number N (T_f = kd/(kp N))",
                    diag,
                )
            });
            let tf = t.get("derivative_time_constant").map(|_| {
                num(
                    "derivative_time_constant",
                    &positive,
                    "a positive finite time constant (s)",
                    diag,
                )
            });
            let derivative_time_constant = match (n, tf) {
                (Some(_), Some(_)) => {
                    diag.push(
                        format!("{f}.derivative_time_constant"),
                        "give either derivative_filter (N) or derivative_time_constant, not both",
                    );
                    f64::NAN
                }
                (Some(n), None) => {
                    if kp == 0.0 {
                        diag.push(
                            format!("{f}.derivative_filter"),
                            "N sets T_f = kd/(kp N) and needs kp ≠ 0: give \
                             derivative_time_constant instead",
                        );
                    }
                    (kd / (kp * n)).abs()
                }
                (None, Some(tf)) => tf,
                (None, None) => {
                    if kd != 0.0 {
                        diag.push(
                            format!("{f}.kd"),
                            "a derivative needs its filter (derivative_filter N, or \
                             derivative_time_constant T_f): kd·s alone is improper",
                        );
                    }
                    0.0
                }
            };
            let not_nan = |x: f64| !x.is_nan();
            let min = block_number(
                t,
                f,
                kind,
                "min",
                Some(f64::NEG_INFINITY),
                &not_nan,
                "a number",
                diag,
            );
            let max = block_number(
                t,
                f,
                kind,
                "max",
                Some(f64::INFINITY),
                &not_nan,
                "a number",
                diag,
            );
            if min >= max {
                diag.push(
                    format!("{f}.max"),
                    format!("must be greater than min = {min}, found {max}"),
                );
            }
            BlockSpec::Pid {
                kp,
                ki,
                kd,
                derivative_time_constant,
                min,
                max,
                discretization: discretization(t, f, diag),
            }
        }
        "lead_lag" => {
            let gain = num(
                "gain",
                &|x: f64| x.is_finite() && x != 0.0,
                "a finite non-zero gain",
                diag,
            );
            let by_pole = t.contains_key("zero") || t.contains_key("pole");
            let by_phase = t.contains_key("frequency") || t.contains_key("phase");
            let (zero, pole) = if by_pole && by_phase {
                diag.push(
                    f.to_string(),
                    "give either zero and pole, or frequency and phase, not both",
                );
                (f64::NAN, f64::NAN)
            } else if by_phase {
                let fr = num(
                    "frequency",
                    &positive,
                    "a positive finite frequency (Hz)",
                    diag,
                );
                let ph = num(
                    "phase",
                    &|x: f64| x.is_finite() && x.abs() < 90.0 && x != 0.0,
                    "a phase in degrees strictly between −90 and 90, not 0 (positive: lead)",
                    diag,
                );
                crate::physical::blocks::zero_pole_from_phase(fr, ph)
            } else {
                let zero = num("zero", &positive, "a positive finite zero (rad/s)", diag);
                let pole = num(
                    "pole",
                    &positive,
                    "a positive finite pole (rad/s): a pole at or right of zero is unstable",
                    diag,
                );
                (zero, pole)
            };
            BlockSpec::LeadLag {
                gain,
                zero,
                pole,
                discretization: discretization(t, f, diag),
            }
        }
        _ => {
            let params = ServoValveCsi {
                valve_gain: num("valve_gain", &positive, "a positive finite gain", diag),
                valve_frequency: num(
                    "valve_frequency",
                    &positive,
                    "a positive finite natural frequency (Hz)",
                    diag,
                ),
                valve_damping: num(
                    "valve_damping",
                    &positive,
                    "a positive finite damping ratio",
                    diag,
                ),
                a1: num("a1", &positive, "a positive finite gain", diag),
                a2: num("a2", &non_negative, "a finite gain ≥ 0", diag),
                a3: num("a3", &non_negative, "a finite rate ≥ 0 (1/s)", diag),
                mass: num("mass", &positive, "a positive finite mass", diag),
                damping: num("damping", &non_negative, "a finite damping ≥ 0", diag),
                stiffness: num("stiffness", &non_negative, "a finite stiffness ≥ 0", diag),
                proportional_gain: t.get("proportional_gain").map(|_| {
                    num(
                        "proportional_gain",
                        &positive,
                        "a positive finite gain",
                        diag,
                    )
                }),
            };
            let poly = crate::physical::blocks::servo_valve::characteristic_polynomial(&params);
            if poly.iter().all(|x| x.is_finite()) {
                if let Err(reason) = hurwitz(&poly) {
                    diag.push(
                        f,
                        format!(
                            "the servo-valve/CSI plant must be stable (every pole with a \
                             negative real part; characteristic polynomial {poly:?}{}): {reason}",
                            if params.proportional_gain.is_some() {
                                ", with the proportional loop"
                            } else {
                                "; a zero stiffness or a3 = 0 leaves a pole at s = 0"
                            }
                        ),
                    );
                }
            }
            BlockSpec::ServoValveCsi {
                params,
                discretization: discretization(t, f, diag),
            }
        }
    };
    Some(spec)
}

/// `a` of a state-space block: `n` rows of `n` finite numbers.
fn state_matrix(
    t: &toml::Table,
    f: &str,
    n: usize,
    diag: &mut Diagnostics,
) -> Option<Vec<Vec<f64>>> {
    let field = format!("{f}.a");
    let Some(v) = t.get("a") else {
        diag.push(field, "is required: the state matrix, row by row");
        return None;
    };
    let rows = match v.as_array() {
        Some(r) if r.len() == n => r,
        _ => {
            diag.push(
                field,
                format!("must be {n} rows of {n} numbers (n = length of b)"),
            );
            return None;
        }
    };
    let mut out = Vec::with_capacity(n);
    for (i, r) in rows.iter().enumerate() {
        let mut tbl = toml::Table::new();
        tbl.insert(format!("a[{i}]"), r.clone());
        out.push(block_list(&tbl, f, &format!("a[{i}]"), Some(n), diag)?);
    }
    Some(out)
}

/// A TOML integer or float as `f64`.
fn toml_number(v: &toml::Value) -> Option<f64> {
    v.as_float().or(v.as_integer().map(|i| i as f64))
}

/// `num` and `den` of a transfer function: lists of finite numbers, highest power first, a
/// denominator of degree ≤ [`MAX_TF_DEGREE`] with a non-zero leading coefficient, a proper
/// function and a stable denominator (every pole in the open left half-plane, Routh–Hurwitz).
fn transfer_function(t: &toml::Table, f: &str, diag: &mut Diagnostics) -> ActuatorDynamics {
    let list = |key: &str, diag: &mut Diagnostics| -> Option<Vec<f64>> {
        let field = format!("{f}.{key}");
        let Some(v) = t.get(key) else {
            diag.push(
                field,
                "is required: a list of coefficients, highest power first",
            );
            return None;
        };
        let Some(a) = v.as_array() else {
            diag.push(
                field,
                format!("must be a list of coefficients, found {}", v.type_str()),
            );
            return None;
        };
        if a.is_empty() || a.len() > MAX_TF_DEGREE + 1 {
            diag.push(
                field,
                format!(
                    "must list 1 to {} coefficients, found {}",
                    MAX_TF_DEGREE + 1,
                    a.len()
                ),
            );
            return None;
        }
        finite_numbers(a, &field, diag)
    };
    let num = list("num", diag);
    let den = list("den", diag);
    let (Some(num), Some(den)) = (num, den) else {
        return ActuatorDynamics::TransferFunction {
            num: vec![1.0],
            den: vec![1.0],
        };
    };
    // Leading zeros of the numerator do not raise its degree.
    let num_degree = num
        .iter()
        .position(|x| *x != 0.0)
        .map(|k| num.len() - 1 - k);
    if den[0] == 0.0 {
        diag.push(
            format!("{f}.den[0]"),
            "the leading coefficient of the denominator must not be zero",
        );
    } else if num_degree.is_none() {
        diag.push(
            format!("{f}.num"),
            "is all zero: the actuator would never move",
        );
    } else if num_degree.unwrap_or(0) > den.len() - 1 {
        diag.push(
            format!("{f}.num"),
            format!(
                "the transfer function must be proper: numerator degree {} > denominator \
                 degree {}",
                num_degree.unwrap_or(0),
                den.len() - 1
            ),
        );
    } else if let Err(reason) = hurwitz(&den) {
        diag.push(
            format!("{f}.den"),
            format!("the actuator must be stable (every pole with a negative real part): {reason}"),
        );
    }
    // Without its leading zeros, so that the numerator is never longer than the denominator.
    let num = num[num.iter().position(|x| *x != 0.0).unwrap_or(0)..].to_vec();
    ActuatorDynamics::TransferFunction { num, den }
}

/// Routh–Hurwitz test of a real polynomial (highest power first, leading coefficient non-zero):
/// `Ok` when every root has a negative real part; else why not.
fn hurwitz(p: &[f64]) -> Result<(), String> {
    let n = p.len() - 1;
    let sign = p[0].signum();
    let p: Vec<f64> = p.iter().map(|x| x * sign).collect();
    if let Some(k) = p.iter().position(|x| x.is_nan() || *x <= 0.0) {
        return Err(format!(
            "den[{k}] = {} while den[0] = {} (a stable denominator has every coefficient \
             non-zero and of the same sign)",
            p[k] * sign,
            p[0] * sign
        ));
    }
    // Routh array, rows 0..=n: every first-column entry must be positive.
    let width = n / 2 + 1;
    let at = |row: &[f64], j: usize| row.get(j).copied().unwrap_or(0.0);
    let mut prev: Vec<f64> = (0..width).map(|j| at(&p, 2 * j)).collect();
    let mut cur: Vec<f64> = (0..width).map(|j| at(&p, 2 * j + 1)).collect();
    let unstable = || "a pole lies on or to the right of the imaginary axis (Routh–Hurwitz)";
    for _ in 1..n {
        let c0 = cur[0];
        if !(c0.is_finite() && c0 > 0.0) {
            return Err(unstable().to_string());
        }
        let next: Vec<f64> = (0..width)
            .map(|j| (c0 * at(&prev, j + 1) - prev[0] * at(&cur, j + 1)) / c0)
            .collect();
        prev = cur;
        cur = next;
    }
    if n >= 1 && !(cur[0].is_finite() && cur[0] > 0.0) {
        return Err(unstable().to_string());
    }
    Ok(())
}

/// `[safety]`: the action after an event, the overrun budget, limits for every actuator of
/// `lab` and the divergence criterion.
fn safety_table(
    spec: &SafetySpec,
    lab: &LabSettings,
    diag: &mut Diagnostics,
) -> Option<SafetySettings> {
    let on_trip = on_trip(spec, diag);
    let max_overruns = spec.max_overruns.unwrap_or(10);
    if max_overruns < 1 {
        diag.push(
            "safety.max_overruns",
            format!("must be at least 1, found {max_overruns}"),
        );
    }
    let limits = limits(&spec.actuator, lab, diag);
    let divergence = match &spec.divergence {
        None => {
            diag.push(
                "safety.divergence",
                "a divergence criterion is required: displacement (|u| bound) and force (|Λ| bound)",
            );
            None
        }
        Some(d) => Some(divergence(d, diag)),
    };
    Some(SafetySettings {
        limits,
        on_trip,
        max_overruns: max_overruns.max(1) as u64,
        divergence: divergence?,
    })
}

/// `on_trip` (`hold` by default, or `ramp_down` at `ramp_rate`).
fn on_trip(spec: &SafetySpec, diag: &mut Diagnostics) -> TripAction {
    match spec.on_trip.as_deref().unwrap_or("hold") {
        "hold" => TripAction::Hold,
        "ramp_down" => match spec.ramp_rate {
            Some(r) if finite_positive(r) => TripAction::RampDown { rate: r },
            other => {
                diag.push(
                    "safety.ramp_rate",
                    format!("ramp_down needs a positive ramp_rate (length/s), found {other:?}"),
                );
                TripAction::Hold
            }
        },
        other => {
            diag.push(
                "safety.on_trip",
                format!("unknown action `{other}` (hold, ramp_down)"),
            );
            TripAction::Hold
        }
    }
}

/// `[safety.actuator.NAME]`: positive limits for every actuator of `lab`, and no other name;
/// each within the actuator's declared capacity and below its sensor ranges, the increment
/// consistent with the velocity, and the sensor checks (following error, frozen sensor,
/// dropout).
fn limits(
    specs: &BTreeMap<String, LimitsSpec>,
    lab: &LabSettings,
    diag: &mut Diagnostics,
) -> BTreeMap<String, ActuatorLimits> {
    let dt_c = lab.time_scale.dt_c;
    let mut limits = BTreeMap::new();
    for (i, a) in lab.actuators.iter().enumerate() {
        let f = format!("safety.actuator.{}", a.name);
        let Some(l) = specs.get(&a.name) else {
            diag.push(
                f,
                "limits are required for every actuator: displacement, velocity, force, increment",
            );
            continue;
        };
        let mut get = |x: Option<f64>, key: &str| -> f64 {
            match x {
                Some(x) if finite_positive(x) => x,
                Some(x) => {
                    diag.push(
                        format!("{f}.{key}"),
                        format!("must be a positive finite limit, found {x}"),
                    );
                    f64::NAN
                }
                None => {
                    diag.push(format!("{f}.{key}"), "is required (no default limit)");
                    f64::NAN
                }
            }
        };
        let displacement = get(l.displacement, "displacement");
        let velocity = get(l.velocity, "velocity");
        let force = get(l.force, "force");
        let increment = get(l.increment, "increment");
        let act = format!("lab.actuator[{i}]");
        let cap = a.capacity;
        for (x, key, c, what) in [
            (displacement, "displacement", cap.stroke, "stroke"),
            (velocity, "velocity", cap.velocity, "velocity"),
            (force, "force", cap.force, "force"),
        ] {
            if x > c {
                diag.push(
                    format!("{f}.{key}"),
                    format!(
                        "{x} exceeds the declared capacity {act}.capacity.{what} = {c}: a limit \
                         beyond what the actuator can do never trips"
                    ),
                );
            }
        }
        if force >= a.force_range {
            diag.push(
                format!("{f}.force"),
                format!(
                    "{force} must lie below the load-cell range {act}.adc.force_range = {}: a \
                     saturated load cell reads at most its range and would hide an overload",
                    a.force_range
                ),
            );
        }
        if displacement >= a.displacement_range {
            diag.push(
                format!("{f}.displacement"),
                format!(
                    "{displacement} must lie below the displacement sensor range \
                     {act}.adc.displacement_range = {}: a saturated sensor would hide a \
                     stroke breach",
                    a.displacement_range
                ),
            );
        }
        if increment > displacement {
            diag.push(
                format!("{f}.increment"),
                format!(
                    "{increment} per tick exceeds the displacement limit {displacement}: a \
                     single command could cross the whole stroke"
                ),
            );
        } else if increment > MAX_INCREMENT_TICKS * velocity * dt_c {
            diag.push(
                format!("{f}.increment"),
                format!(
                    "{increment} per tick is more than {MAX_INCREMENT_TICKS} times velocity × \
                     dt_C = {velocity} × {dt_c:e} s = {:e}, so it could never trip before the \
                     velocity limit (a unit mistake?)",
                    velocity * dt_c
                ),
            );
        }
        let sensors = sensor_checks(l, &f, displacement, dt_c, diag);
        limits.insert(
            a.name.clone(),
            ActuatorLimits {
                displacement,
                velocity,
                force,
                increment,
                following_error: sensors.0,
                following_time: sensors.1,
                frozen_time: sensors.2,
                dropout_ticks: sensors.3,
            },
        );
    }
    for name in specs.keys() {
        if !lab.actuators.iter().any(|a| &a.name == name) {
            diag.push(
                format!("safety.actuator.{name}"),
                "names no actuator of [lab]",
            );
        }
    }
    limits
}

/// The sensor checks of `[safety.actuator.NAME]` at field `f`: following error (default 10 %
/// of the displacement limit, below it), following time (default 0.05 s, at least one
/// controller tick), frozen time (default 0.25 s, 0: off, else at least two ticks) and dropout
/// ticks (default 3, 1..=1000), in that order.
fn sensor_checks(
    l: &LimitsSpec,
    f: &str,
    displacement: f64,
    dt_c: f64,
    diag: &mut Diagnostics,
) -> (f64, f64, f64, u64) {
    let longest = MAX_SENSOR_TIME.max(10.0 * dt_c);
    let following_error = l.following_error.unwrap_or(0.1 * displacement);
    if !finite_positive(following_error) && l.following_error.is_some() {
        diag.push(
            format!("{f}.following_error"),
            format!("must be a positive finite length, found {following_error}"),
        );
    } else if following_error >= displacement {
        diag.push(
            format!("{f}.following_error"),
            format!(
                "{following_error} must lie below the displacement limit {displacement}: a \
                 following error that large could never trip before the stroke"
            ),
        );
    }
    let following_time = l.following_time.unwrap_or(0.05_f64.max(dt_c));
    if !(following_time.is_finite() && following_time >= dt_c * (1.0 - 1e-9)) {
        diag.push(
            format!("{f}.following_time"),
            format!(
                "must be at least one controller tick dt_C = {dt_c:e} s, found {following_time}"
            ),
        );
    } else if following_time > longest {
        diag.push(
            format!("{f}.following_time"),
            format!("must be at most {longest} s, found {following_time}"),
        );
    }
    let frozen_time = l.frozen_time.unwrap_or(0.25_f64.max(2.0 * dt_c));
    if !(frozen_time.is_finite() && frozen_time >= 0.0) {
        diag.push(
            format!("{f}.frozen_time"),
            format!("must be 0 (off) or a time in s, found {frozen_time}"),
        );
    } else if frozen_time > 0.0 && frozen_time < 2.0 * dt_c * (1.0 - 1e-9) {
        diag.push(
            format!("{f}.frozen_time"),
            format!(
                "must be 0 (off) or at least two controller ticks (2 dt_C = {:e} s), found \
                 {frozen_time}",
                2.0 * dt_c
            ),
        );
    } else if frozen_time > longest {
        diag.push(
            format!("{f}.frozen_time"),
            format!("must be at most {longest} s, found {frozen_time}"),
        );
    }
    let dropout_ticks = l.dropout_ticks.unwrap_or(3);
    if !(1..=MAX_DROPOUT_TICKS).contains(&dropout_ticks) {
        diag.push(
            format!("{f}.dropout_ticks"),
            format!("must be 1..={MAX_DROPOUT_TICKS} controller ticks, found {dropout_ticks}"),
        );
    }
    (
        following_error,
        following_time,
        frozen_time,
        dropout_ticks.clamp(1, MAX_DROPOUT_TICKS) as u64,
    )
}

/// `[safety.divergence]`: the displacement and force bounds (required), the growth criterion
/// and the energy criterion (`energy`, `energy_mode`, `energy_window`).
fn divergence(d: &DivergenceSpec, diag: &mut Diagnostics) -> DivergenceSettings {
    let mut req = |x: Option<f64>, key: &str| -> f64 {
        match x {
            Some(x) if finite_positive(x) => x,
            other => {
                diag.push(
                    format!("safety.divergence.{key}"),
                    format!("a positive bound is required, found {other:?}"),
                );
                0.0
            }
        }
    };
    let displacement = req(d.displacement, "displacement");
    let force = req(d.force, "force");
    let growth = d.growth.unwrap_or(1.5);
    let window = d.window.unwrap_or(1.0);
    let windows = d.windows.unwrap_or(3);
    let floor = d.floor.unwrap_or(DEFAULT_FLOOR_FRACTION * displacement);
    if !(growth.is_finite() && growth > 1.0) {
        diag.push(
            "safety.divergence.growth",
            format!("must be > 1, found {growth}"),
        );
    }
    if !finite_positive(window) {
        diag.push(
            "safety.divergence.window",
            format!("must be positive, found {window}"),
        );
    }
    if windows < 1 {
        diag.push(
            "safety.divergence.windows",
            format!("must be ≥ 1, found {windows}"),
        );
    }
    if !(floor.is_finite() && floor >= 0.0) {
        diag.push(
            "safety.divergence.floor",
            format!("must be ≥ 0, found {floor}"),
        );
    } else if displacement > 0.0 && floor >= displacement {
        diag.push(
            "safety.divergence.floor",
            format!(
                "{floor} must lie below the displacement bound {displacement} (safety.divergence.\
                 displacement), else growth is never detected"
            ),
        );
    }
    if let Some(e) = d.energy {
        if !finite_positive(e) {
            diag.push(
                "safety.divergence.energy",
                format!("must be a positive energy (force·length), found {e}"),
            );
        }
    }
    let energy_mode = match d.energy_mode.as_deref() {
        None | Some("window") => EnergyMode::Window,
        Some("cumulative") => EnergyMode::Cumulative,
        Some(other) => {
            diag.push(
                "safety.divergence.energy_mode",
                format!(
                    "unknown mode `{other}` (window: the energy generated over the last \
                     energy_window seconds; cumulative: since the start)"
                ),
            );
            EnergyMode::Window
        }
    };
    let energy_window = d.energy_window.unwrap_or(DEFAULT_ENERGY_WINDOW);
    if d.energy_window.is_some() && energy_mode == EnergyMode::Cumulative {
        diag.push(
            "safety.divergence.energy_window",
            "applies only to energy_mode = \"window\" (the cumulative mode has no window)",
        );
    } else if !finite_positive(energy_window) {
        diag.push(
            "safety.divergence.energy_window",
            format!("must be a positive time (s), found {energy_window}"),
        );
    }
    DivergenceSettings {
        displacement,
        force,
        growth,
        window,
        windows: windows.max(1) as usize,
        floor,
        energy: d.energy,
        energy_mode,
        energy_window,
    }
}

/// `[runner]`: pacing, CPUs, priority and the results ring.
fn runner_table(spec: RunnerSpec, diag: &mut Diagnostics) -> RunnerSettings {
    let pacing = match spec.pacing.as_deref().unwrap_or("fast") {
        "fast" => Pacing::Fast,
        "realtime" | "real-time" => Pacing::Realtime,
        other => {
            diag.push(
                "runner.pacing",
                format!("unknown pacing `{other}` (fast, realtime)"),
            );
            Pacing::Fast
        }
    };
    let cpus = spec.cpus.unwrap_or_default();
    if cpus.iter().any(|c| *c < 0) {
        diag.push("runner.cpus", "CPU indices must be ≥ 0");
    }
    if let Some(c) = cpus.iter().find(|c| **c >= MAX_CPUS) {
        diag.push(
            "runner.cpus",
            format!("CPU indices must be below {MAX_CPUS} (the size of a CPU set), found {c}"),
        );
    }
    let priority = spec.priority.unwrap_or(80);
    if !(1..=99).contains(&priority) {
        diag.push(
            "runner.priority",
            format!("must be 1..99, found {priority}"),
        );
    }
    let results_ring_given = spec.results_ring.is_some();
    let results_ring = spec
        .results_ring
        .unwrap_or(crate::model::lab::DEFAULT_RESULTS_RING_ROWS as i64);
    if results_ring < 16 {
        diag.push(
            "runner.results_ring",
            format!("must be at least 16 rows, found {results_ring}"),
        );
    } else if results_ring > MAX_RESULTS_RING {
        diag.push(
            "runner.results_ring",
            format!("must be at most {MAX_RESULTS_RING} rows, found {results_ring}"),
        );
    }
    let spin_budget = spec
        .spin_budget
        .unwrap_or(crate::model::lab::DEFAULT_SPIN_BUDGET_US);
    let max_spin = crate::model::lab::MAX_SPIN_BUDGET_US;
    if !(spin_budget.is_finite() && (0.0..=max_spin).contains(&spin_budget)) {
        diag.push(
            "runner.spin_budget",
            format!(
                "must be a number of microseconds in [0, {max_spin}] (the last stretch of each \
                 paced wait that spins instead of sleeping), found {spin_budget}"
            ),
        );
    }
    RunnerSettings {
        pacing,
        cpus: cpus.into_iter().map(|c| c.max(0) as usize).collect(),
        priority: priority.clamp(1, 99) as u8,
        results_ring: results_ring.max(16) as usize,
        spin_budget: if spin_budget.is_finite() {
            spin_budget.clamp(0.0, max_spin)
        } else {
            crate::model::lab::DEFAULT_SPIN_BUDGET_US
        },
        results_ring_given,
    }
}

/// `capacity` of `[[lab.actuator]]` at field `f`: stroke, velocity and force, each required,
/// positive and finite (NaN after a problem, so that no limit is compared with it).
fn capacity(spec: Option<&CapacitySpec>, f: &str, diag: &mut Diagnostics) -> ActuatorCapacity {
    let Some(c) = spec else {
        diag.push(
            format!("{f}.capacity"),
            "is required: the actuator's declared stroke, velocity and force, e.g. \
             capacity = { stroke = 0.25, velocity = 0.5, force = 1.0e6 } (specimen units, \
             wall-clock velocity); the safety limits must lie within it",
        );
        return ActuatorCapacity {
            stroke: f64::NAN,
            velocity: f64::NAN,
            force: f64::NAN,
        };
    };
    let mut get = |x: Option<f64>, key: &str| match x {
        Some(x) if finite_positive(x) => x,
        Some(x) => {
            diag.push(
                format!("{f}.capacity.{key}"),
                format!("must be positive and finite, found {x}"),
            );
            f64::NAN
        }
        None => {
            diag.push(
                format!("{f}.capacity.{key}"),
                "is required (the declared capacity has no default)",
            );
            f64::NAN
        }
    };
    ActuatorCapacity {
        stroke: get(c.stroke, "stroke"),
        velocity: get(c.velocity, "velocity"),
        force: get(c.force, "force"),
    }
}

/// `[[lab.fault]]`: faults injected into the virtual laboratory (refused with any other
/// transfer system), each on a named actuator from wall-clock time `at` on.
fn faults(
    specs: &[toml::Value],
    transfer: TransferKind,
    actuators: &[ActuatorSettings],
    diag: &mut Diagnostics,
) -> Vec<InjectedFault> {
    let mut faults = Vec::new();
    for (i, v) in specs.iter().enumerate() {
        let f = format!("lab.fault[{i}]");
        if matches!(transfer, TransferKind::OpenSees) {
            diag.push(
                f,
                "faults can only be injected into a virtual laboratory (`transfer = \"virtual\"`, \
                 or the one `hybridsim controller` serves on a `udp`/`tcp` link)",
            );
            continue;
        }
        let Some(spec) = deserialize::<FaultSpec>(v, &f, diag) else {
            continue;
        };
        let mut ok = true;
        let actuator = match &spec.actuator {
            None => {
                diag.push(format!("{f}.actuator"), "is required: the actuator's name");
                ok = false;
                String::new()
            }
            Some(name) => {
                if !actuators.iter().any(|a| &a.name == name) {
                    diag.push(
                        format!("{f}.actuator"),
                        format!("names no actuator of [lab]: `{name}`"),
                    );
                    ok = false;
                }
                name.clone()
            }
        };
        let at = match spec.at {
            Some(t) if t.is_finite() && t >= 0.0 => t,
            other => {
                diag.push(
                    format!("{f}.at"),
                    format!(
                        "a wall-clock time ≥ 0 s is required, found {}",
                        other.map_or("nothing".to_string(), |t| t.to_string())
                    ),
                );
                ok = false;
                0.0
            }
        };
        let kind = spec.kind.as_deref().unwrap_or("");
        let known = [
            "stuck_actuator",
            "frozen_sensor",
            "dropout",
            "nan_force",
            "overload",
            "panic",
            "stall",
        ];
        if !known.contains(&kind) {
            diag.push(
                format!("{f}.kind"),
                format!(
                    "{} (expected one of {})",
                    if spec.kind.is_none() {
                        "is required".to_string()
                    } else {
                        format!("unknown fault `{kind}`")
                    },
                    known.join(", ")
                ),
            );
            continue;
        }
        if kind != "overload" && spec.force.is_some() {
            diag.push(
                format!("{f}.force"),
                format!("only an `overload` fault takes a force, not `{kind}`"),
            );
            ok = false;
        }
        if kind != "stall" && spec.seconds.is_some() {
            diag.push(
                format!("{f}.seconds"),
                format!("only a `stall` fault takes seconds, not `{kind}`"),
            );
            ok = false;
        }
        let kind = match kind {
            "stuck_actuator" => InjectedFaultKind::StuckActuator,
            "frozen_sensor" => InjectedFaultKind::FrozenSensor,
            "dropout" => InjectedFaultKind::Dropout,
            "nan_force" => InjectedFaultKind::NanForce,
            "panic" => InjectedFaultKind::Panic,
            "overload" => match spec.force {
                Some(x) if x.is_finite() && x != 0.0 => InjectedFaultKind::Overload { force: x },
                other => {
                    diag.push(
                        format!("{f}.force"),
                        format!(
                            "an overload needs a finite non-zero force (specimen units), found {}",
                            other.map_or("nothing".to_string(), |x| x.to_string())
                        ),
                    );
                    continue;
                }
            },
            _ => match spec.seconds {
                Some(x) if x.is_finite() && x > 0.0 && x <= MAX_STALL => {
                    InjectedFaultKind::Stall { seconds: x }
                }
                other => {
                    diag.push(
                        format!("{f}.seconds"),
                        format!(
                            "a stall needs a length in (0, {MAX_STALL}] s, found {}",
                            other.map_or("nothing".to_string(), |x| x.to_string())
                        ),
                    );
                    continue;
                }
            },
        };
        if ok {
            faults.push(InjectedFault { actuator, at, kind });
        }
    }
    faults
}

/// The real-time runner's rings, sized from `[runner] results_ring`, `[output] every` and the
/// subcycles, must fit [`MAX_RING_BYTES`]: the results ring (at least three columns per free
/// DOF and the time) and the lab ring (`results_ring × ss / every` ticks of [`lab_columns`]).
/// Computed in `u128` from the model before anything is allocated; the runner checks the
/// exact column counts again at start.
fn ring_bound(
    runner: &RunnerSettings,
    lab: &LabSettings,
    ctx: &LabContext,
    diag: &mut Diagnostics,
) {
    let results_cols = 1 + 3 * ctx.free_dofs as u128;
    let rows = runner.results_ring_rows(results_cols.min(usize::MAX as u128) as usize);
    if rows as u128 > MAX_RESULTS_RING as u128 {
        return; // already refused by `runner_table`
    }
    let lab_rows = lab_ring_rows(rows, ctx.ss, ctx.every);
    let lab_cols = lab_columns(lab.actuators.len()) as u128;
    let bytes = 8 * (rows as u128 * results_cols + lab_rows * lab_cols);
    if bytes > MAX_RING_BYTES {
        diag.push(
            "runner.results_ring",
            format!(
                "{rows} rows need at least {} MiB of real-time rings ({results_cols} results \
                 columns, and {lab_rows} lab rows of {lab_cols} columns for ss = {} and \
                 output.every = {}), more than the {} MiB the runner preallocates at most; \
                 lower results_ring or raise output.every",
                bytes >> 20,
                ctx.ss,
                ctx.every,
                MAX_RING_BYTES >> 20
            ),
        );
    }
}

/// `[[lab.setup]]`: kinematic experimental setups. Each names its actuators (which then give no
/// `dofs` of their own), its DOFs and its geometry; the actuators take the setup's DOFs. An
/// actuator that belongs to no setup must list its DOFs.
fn setups(
    values: &[toml::Value],
    actuators: &mut [ActuatorSettings],
    ctx: &LabContext,
    diag: &mut Diagnostics,
) -> Vec<SetupSettings> {
    let mut out = Vec::new();
    // Actuators a setup names, valid or not: a broken setup is reported once, not again as
    // actuators without DOFs.
    let claimed: Vec<&str> = values
        .iter()
        .filter_map(|v| v.get("actuators").and_then(|a| a.as_array()))
        .flatten()
        .filter_map(|a| a.as_str())
        .collect();
    for (i, value) in values.iter().enumerate() {
        let f = format!("lab.setup[{i}]");
        let Some(spec) = deserialize::<SetupSpec>(value, &f, diag) else {
            continue;
        };
        if let Some(s) = setup(&spec, &f, out.len(), actuators, ctx, diag) {
            out.push(s);
        }
    }
    for (i, a) in actuators.iter().enumerate() {
        if a.setup.is_none() && a.dofs.is_empty() && !claimed.contains(&a.name.as_str()) {
            diag.push(
                format!("lab.actuator[{i}].dofs"),
                "lists no DOF (give `dofs`, or name the actuator in a [[lab.setup]])",
            );
        }
    }
    out
}

/// Largest |angle| of a one-actuator setup, degrees.
const MAX_SETUP_ANGLE: f64 = 360.0;

/// One `[[lab.setup]]` at field `f`, to be stored at index `index`.
fn setup(
    spec: &SetupSpec,
    f: &str,
    index: usize,
    actuators: &mut [ActuatorSettings],
    ctx: &LabContext,
    diag: &mut Diagnostics,
) -> Option<SetupSettings> {
    let before = diag.len();
    let n = match spec.kind.as_str() {
        "one_actuator" => 1,
        "two_actuators_2d" => 2,
        "three_actuators_2d" | "inverted_v_brace_2d" => 3,
        other => {
            diag.push(
                format!("{f}.kind"),
                format!(
                    "unknown setup `{other}` (expected `one_actuator`, `two_actuators_2d`, \
                     `three_actuators_2d` or `inverted_v_brace_2d`)"
                ),
            );
            return None;
        }
    };
    let kind_name = spec.kind.as_str();
    let geometry = match spec.geometry.as_deref().unwrap_or("linear") {
        "linear" => Geometry::Linear,
        "nonlinear" => Geometry::Nonlinear,
        other => {
            diag.push(
                format!("{f}.geometry"),
                format!("unknown geometry `{other}` (expected `linear` or `nonlinear`)"),
            );
            Geometry::Linear
        }
    };
    for (key, len) in [
        ("actuators", spec.actuators.len()),
        ("dofs", spec.dofs.len()),
        ("lengths", spec.lengths.len()),
    ] {
        if len != n {
            diag.push(
                format!("{f}.{key}"),
                format!("a `{kind_name}` setup has {n} actuator(s) and DOF(s); found {len} {key}"),
            );
        }
    }
    let mut members = Vec::new();
    for name in &spec.actuators {
        match actuators.iter().position(|a| &a.name == name) {
            None => diag.push(
                format!("{f}.actuators"),
                format!("names actuator `{name}`, which no [[lab.actuator]] defines"),
            ),
            Some(k) if members.contains(&k) => diag.push(
                format!("{f}.actuators"),
                format!("names actuator `{name}` twice"),
            ),
            Some(k) => {
                if let Some(other) = actuators[k].setup {
                    diag.push(
                        format!("{f}.actuators"),
                        format!("actuator `{name}` already belongs to lab.setup[{other}]"),
                    );
                } else if !actuators[k].dofs.is_empty() {
                    diag.push(
                        format!("lab.actuator[{k}].dofs"),
                        format!(
                            "actuator `{name}` belongs to {f}, which gives its DOFs: remove \
                             `dofs` (and `coefficients`)"
                        ),
                    );
                }
                members.push(k);
            }
        }
    }
    for (j, d) in spec.dofs.iter().enumerate() {
        if !ctx.physical_dofs.contains(d) {
            diag.push(
                format!("{f}.dofs"),
                format!(
                    "node {} dof {} is not a DOF of a physical substructure",
                    d.0, d.1
                ),
            );
        }
        if spec.dofs[..j].contains(d) {
            diag.push(
                format!("{f}.dofs"),
                format!("lists node {} dof {} twice", d.0, d.1),
            );
        }
    }
    for (j, l) in spec.lengths.iter().enumerate() {
        if !(l.is_finite() && *l > 0.0) {
            diag.push(
                format!("{f}.lengths"),
                format!("entry {j} must be a positive, finite actuator length, found {l}"),
            );
        }
    }
    let takes = |key: &str| match key {
        "angle" => kind_name == "one_actuator",
        "beam_length" => n == 3,
        _ => kind_name == "inverted_v_brace_2d",
    };
    for (key, value) in [
        ("angle", spec.angle),
        ("beam_length", spec.beam_length),
        ("arm_height", spec.arm_height),
    ] {
        match value {
            Some(_) if !takes(key) => diag.push(
                format!("{f}.{key}"),
                format!("does not apply to a `{kind_name}` setup"),
            ),
            None if takes(key) && key != "angle" => diag.push(
                format!("{f}.{key}"),
                format!("is required by a `{kind_name}` setup"),
            ),
            _ => {}
        }
    }
    let angle = spec.angle.unwrap_or(0.0);
    if !(angle.is_finite() && angle.abs() <= MAX_SETUP_ANGLE) {
        diag.push(
            format!("{f}.angle"),
            format!("must be finite degrees within ±{MAX_SETUP_ANGLE}, found {angle}"),
        );
    }
    let beam_length = spec.beam_length.unwrap_or(1.0);
    if !(beam_length.is_finite() && beam_length > 0.0) {
        diag.push(
            format!("{f}.beam_length"),
            format!("must be positive and finite, found {beam_length}"),
        );
    }
    let arm_height = spec.arm_height.unwrap_or(0.0);
    if !arm_height.is_finite() {
        diag.push(
            format!("{f}.arm_height"),
            format!("must be finite, found {arm_height}"),
        );
    }
    let mut factors = |key: &str, v: &Option<Vec<f64>>| -> Vec<f64> {
        match v {
            None => vec![1.0; n],
            Some(v) => {
                if v.len() != n {
                    diag.push(
                        format!("{f}.{key}"),
                        format!("has {} entries for {n} DOF(s)", v.len()),
                    );
                } else if v.iter().any(|x| !finite_positive(*x)) {
                    diag.push(format!("{f}.{key}"), "entries must be positive and finite");
                }
                v.clone()
            }
        }
    };
    let displacement_scale = factors("displacement_scale", &spec.displacement_scale);
    let force_scale = factors("force_scale", &spec.force_scale);
    if diag.len() > before {
        return None;
    }
    let l = &spec.lengths;
    let kind = match kind_name {
        "one_actuator" => SetupKind::OneActuator {
            length: l[0],
            angle: angle.to_radians(),
        },
        "two_actuators_2d" => SetupKind::TwoActuators2d {
            lengths: [l[0], l[1]],
        },
        "three_actuators_2d" => SetupKind::ThreeActuators2d {
            lengths: [l[0], l[1], l[2]],
            beam_length,
        },
        _ => SetupKind::InvertedVBrace2d {
            lengths: [l[0], l[1], l[2]],
            beam_length,
            arm_height,
        },
    };
    let settings = SetupSettings {
        kind,
        geometry,
        actuators: spec.actuators.clone(),
        dofs: spec.dofs.clone(),
        displacement_scale,
        force_scale,
    };
    if let Err(e) = crate::physical::setup::build(&settings) {
        let at = if kind_name == "one_actuator" {
            format!("{f}.angle")
        } else {
            f.to_string()
        };
        diag.push(at, e);
        return None;
    }
    for &k in &members {
        actuators[k].setup = Some(index);
        actuators[k].dofs = spec.dofs.clone();
        actuators[k].coefficients = Vec::new();
    }
    Some(settings)
}

/// The physical substructures an actuator loads: the one it names (`substructure`), or every
/// one one of its DOFs belongs to. An actuator on a DOF shared by several physical substructures
/// (pier and bearing tested on one node) must name its own; an actuator loads DOFs of its
/// substructure only; the actuators of one setup load the same substructure.
fn assign_substructures(
    actuators: &mut [ActuatorSettings],
    setups: &[SetupSettings],
    ctx: &LabContext,
    diag: &mut Diagnostics,
) {
    let subs = &ctx.physical_substructures;
    let mut loads: Vec<Option<String>> = vec![None; actuators.len()];
    for (i, a) in actuators.iter().enumerate() {
        let f = format!("lab.actuator[{i}].substructure");
        if let Some(name) = &a.substructure {
            let Some((_, dofs)) = subs.iter().find(|(s, _)| s == name) else {
                let known: Vec<&str> = subs.iter().map(|(s, _)| s.as_str()).collect();
                diag.push(
                    f,
                    format!(
                        "`{name}` is not a physical substructure (physical substructures: {})",
                        known.join(", ")
                    ),
                );
                continue;
            };
            if let Some(d) = a.dofs.iter().find(|d| !dofs.contains(d)) {
                diag.push(
                    f,
                    format!(
                        "actuator `{}` drives node {} dof {}, which is not a DOF of `{name}`",
                        a.name, d.0, d.1
                    ),
                );
                continue;
            }
            loads[i] = Some(name.clone());
            continue;
        }
        let owners: Vec<&str> = subs
            .iter()
            .filter(|(_, dofs)| a.dofs.iter().any(|d| dofs.contains(d)))
            .map(|(s, _)| s.as_str())
            .collect();
        if owners.len() > 1 {
            diag.push(
                f,
                format!(
                    "actuator `{}` drives DOFs of several physical substructures ({}): name \
                     the one it loads, e.g. substructure = \"{}\"",
                    a.name,
                    owners.join(", "),
                    owners[0]
                ),
            );
        } else if let Some(s) = owners.first() {
            loads[i] = Some(s.to_string());
        }
    }
    for (j, s) in setups.iter().enumerate() {
        let targets: Vec<&Option<String>> = actuators
            .iter()
            .enumerate()
            .filter(|(_, a)| a.setup == Some(j))
            .map(|(i, _)| &loads[i])
            .collect();
        if targets.windows(2).any(|w| w[0] != w[1]) {
            diag.push(
                format!("lab.setup[{j}].actuators"),
                "the actuators of one setup must load the same physical substructure",
            );
            continue;
        }
        let Some(Some(target)) = targets.first() else {
            continue;
        };
        // No other actuator may drive a setup DOF of the same substructure.
        for (i, a) in actuators.iter().enumerate() {
            if a.setup != Some(j)
                && loads[i].as_ref() == Some(target)
                && a.dofs.iter().any(|d| s.dofs.contains(d))
            {
                diag.push(
                    format!("lab.setup[{j}].dofs"),
                    format!(
                        "actuator `{}` also drives a DOF of this setup in substructure \
                         `{target}` (a setup's DOFs are driven by its own actuators only)",
                        a.name
                    ),
                );
            }
        }
    }
    for (a, l) in actuators.iter_mut().zip(loads) {
        if a.substructure.is_none() {
            a.substructure = l;
        }
    }
}

/// `[[lab.actuator]] geometric_scale`, `force_scale`, `device_multiplier`: the scales of an
/// actuator's specimen when they differ from the lab's, so that specimens at different scales
/// (a 1:2 pier and a full-scale bearing, one of a pair) are tested at once. A key not given
/// takes the lab's value (`force_scale`: the actuator's `geometric_scale` squared when it gives
/// one). The actuators of one physical substructure share one set of scales.
fn specimen_scales(
    specs: &[ActuatorSpec],
    actuators: &mut [ActuatorSettings],
    (geometric, force, multiplier): (f64, f64, f64),
    diag: &mut Diagnostics,
) {
    for (i, (spec, a)) in specs.iter().zip(actuators.iter_mut()).enumerate() {
        if spec.geometric_scale.is_none()
            && spec.force_scale.is_none()
            && spec.device_multiplier.is_none()
        {
            continue;
        }
        let g = spec.geometric_scale.unwrap_or(geometric);
        let scale = SpecimenScale {
            geometric_scale: g,
            force_scale: spec
                .force_scale
                .unwrap_or(if spec.geometric_scale.is_some() {
                    g * g
                } else {
                    force
                }),
            device_multiplier: spec.device_multiplier.unwrap_or(multiplier),
        };
        let mut ok = true;
        for (key, value) in [
            ("geometric_scale", spec.geometric_scale),
            ("force_scale", spec.force_scale),
            ("device_multiplier", spec.device_multiplier),
        ] {
            if let Some(x) = value {
                if !finite_positive(x) {
                    diag.push(
                        format!("lab.actuator[{i}].{key}"),
                        format!("must be positive and finite, found {x}"),
                    );
                    ok = false;
                }
            }
        }
        if ok {
            a.scale = Some(scale);
        }
    }
    // One substructure, one set of scales: its measured forces go back through one factor.
    let lab = SpecimenScale {
        geometric_scale: geometric,
        force_scale: force,
        device_multiplier: multiplier,
    };
    for i in 0..actuators.len() {
        let Some(s) = &actuators[i].substructure else {
            continue;
        };
        let mine = actuators[i].scale.unwrap_or(lab);
        if let Some(other) = actuators[..i]
            .iter()
            .find(|b| b.substructure.as_ref() == Some(s) && b.scale.unwrap_or(lab) != mine)
        {
            let key = if other.scale.unwrap_or(lab).geometric_scale != mine.geometric_scale {
                "geometric_scale"
            } else if other.scale.unwrap_or(lab).force_scale != mine.force_scale {
                "force_scale"
            } else {
                "device_multiplier"
            };
            diag.push(
                format!("lab.actuator[{i}].{key}"),
                format!(
                    "actuator `{}` loads substructure `{s}` with other scales than actuator \
                     `{}` ({:?} against {:?}): the actuators of one substructure share one \
                     geometric_scale, force_scale and device_multiplier",
                    actuators[i].name,
                    other.name,
                    mine,
                    other.scale.unwrap_or(lab)
                ),
            );
        }
    }
}

/// `[[lab.degradation]]`: specimen elements of the virtual laboratory whose parameter changes
/// during the test. Only the virtual laboratory has a specimen to change.
fn degradation(
    specs: &[toml::Value],
    transfer: TransferKind,
    ctx: &LabContext,
    diag: &mut Diagnostics,
) -> Vec<SpecimenDegradation> {
    let mut out = Vec::new();
    for (i, v) in specs.iter().enumerate() {
        let f = format!("lab.degradation[{i}]");
        if !matches!(transfer, TransferKind::Virtual) {
            diag.push(
                f,
                "a specimen can only be degraded in the virtual laboratory (`transfer = \"virtual\"`)",
            );
            continue;
        }
        let Some(spec) = deserialize::<DegradationSpec>(v, &f, diag) else {
            continue;
        };
        let element = match &spec.element {
            None => {
                diag.push(
                    format!("{f}.element"),
                    "is required: a specimen element's name",
                );
                continue;
            }
            Some(name) => match ctx.specimen_elements.iter().find(|(n, _)| n == name) {
                Some((_, e)) => e,
                None => {
                    diag.push(
                        format!("{f}.element"),
                        format!("`{name}` is not a specimen element of a physical substructure"),
                    );
                    continue;
                }
            },
        };
        let Some(parameter) = spec.parameter.clone() else {
            diag.push(
                format!("{f}.parameter"),
                "is required: one of the element's parameters",
            );
            continue;
        };
        let known: Vec<&str> = element.parameters().iter().map(|(n, _)| *n).collect();
        if !known.contains(&parameter.as_str()) {
            diag.push(
                format!("{f}.parameter"),
                format!(
                    "`{parameter}` is not a parameter of the {} element (it has: {})",
                    element.kind(),
                    known.join(", ")
                ),
            );
            continue;
        }
        let Some(to) = spec.to else {
            diag.push(
                format!("{f}.to"),
                "is required: the parameter's final value",
            );
            continue;
        };
        if let Err(e) = element.clone_box().set_parameter(&parameter, to) {
            diag.push(
                format!("{f}.to"),
                format!("{to} is refused by the element: {e}"),
            );
            continue;
        }
        let from_time = spec.from_time.unwrap_or(0.0);
        if !(from_time.is_finite() && from_time >= 0.0) {
            diag.push(
                format!("{f}.from_time"),
                format!("must be a finite time ≥ 0 s, found {from_time}"),
            );
            continue;
        }
        let Some(until_time) = spec.until_time else {
            diag.push(
                format!("{f}.until_time"),
                "is required: the wall-clock test time at which `to` is reached",
            );
            continue;
        };
        if !(until_time.is_finite() && until_time >= from_time) {
            diag.push(
                format!("{f}.until_time"),
                format!("must be finite and ≥ from_time = {from_time} s, found {until_time}"),
            );
            continue;
        }
        if out.iter().any(|d: &SpecimenDegradation| {
            d.element == *spec.element.as_ref().unwrap() && d.parameter == parameter
        }) {
            diag.push(
                format!("{f}.parameter"),
                format!("`{parameter}` of this element is already degraded by an earlier entry"),
            );
            continue;
        }
        out.push(SpecimenDegradation {
            element: spec.element.clone().unwrap(),
            parameter,
            to,
            from_time,
            until_time,
        });
    }
    out
}
