//! Laboratory records: the controller-rate `lab.csv`, tracking and energy-error indicators and
//! the synchronization-subspace plot.
//!
//! `lab.csv` has one row per controller tick Δt^C: `time` (simulation), `wall_time`, and per
//! actuator `desired`, `compensated` (the final command), `measured` displacement, measured
//! `force`, the `safety` state (0 armed, 1 tripped, 2 a second event), and the noise-free
//! `achieved_true` displacement and `force_true` (the virtual lab's values before sensor noise,
//! ADC and injected sensor faults; `NaN` for hardware and links, and during the bumpless
//! start), in specimen units. Headers carry units as in `results.csv`:
//! `measured.storey1[m]`, `force_true.storey1[kN]`, `safety.storey1[-]`.
//!
//! Indicators per actuator (tracking of the transfer system, as used in real-time hybrid
//! testing):
//! - delay: the lag (in ticks × Δt^C, refined between ticks by a parabola) maximizing the
//!   normalized cross-correlation of measured and desired displacement;
//! - normalized RMS tracking error `√(Σ e²/Σ d²)` and peak tracking error `max|e|/max|d|`,
//!   `e = measured − desired`;
//! - energy error (after Mosqueda, Stojadinovic & Mahin 2007, "Real-time error monitoring for
//!   hybrid simulation", J. Struct. Eng. 133(8): the energy computed along the measured
//!   displacements minus the energy computed along the commanded ones): the work of the measured
//!   force on the tracking error, trapezoidal rule,
//!   `E_err = Σ ½ (F_k + F_{k−1}) (e_k − e_{k−1})` = `W_measured − W_desired`, against the input
//!   energy `W_desired = Σ ½ (F_k + F_{k−1}) (d_k − d_{k−1})` (work on the desired path) and the
//!   energy throughput `Σ |½ (F_k + F_{k−1}) (d_k − d_{k−1})|`; the normalized energy error is
//!   `E_err / throughput` (the net input of a mostly elastic specimen is close to zero, the
//!   throughput is not). Positive: the specimen absorbed more energy along the path it actually
//!   followed than the integrator asked for.
//!
//! The trapezoidal rule matters: the right-endpoint sum `Σ F_k Δx_k` adds `½ Σ ΔF_k Δx_k` to
//! every work, i.e. `½ k Σ Δx²` for a spring and `½ c Σ v_k (v_k − v_{k−1}) Δt` for a damper,
//! which is large on a path that zigzags from tick to tick (see the quick start in the README).

use std::path::Path;

/// Tracking indicators of one actuator.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackingIndicators {
    /// Actuator name.
    pub actuator: String,
    /// Delay estimated by cross-correlation (s, wall clock).
    pub delay: f64,
    /// Normalized RMS tracking error.
    pub nrms_error: f64,
    /// Peak tracking error normalized by the peak desired displacement.
    pub peak_error: f64,
    /// Work of the measured force on the tracking error.
    pub energy_error: f64,
    /// Work of the measured force along the desired path.
    pub energy_input: f64,
    /// Absolute work of the measured force along the desired path (energy throughput).
    pub energy_throughput: f64,
    /// `energy_error / energy_throughput` (0 when nothing moved).
    pub normalized_energy_error: f64,
}

impl TrackingIndicators {
    /// As JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "actuator": self.actuator,
            "delay_seconds": self.delay,
            "nrms_tracking_error": self.nrms_error,
            "peak_tracking_error": self.peak_error,
            "energy_error": self.energy_error,
            "energy_input": self.energy_input,
            "energy_throughput": self.energy_throughput,
            "normalized_energy_error": self.normalized_energy_error,
        })
    }
}

/// Indicators from the desired, measured and force series of one actuator (controller rate
/// `dt_c`); `max_lag` bounds the cross-correlation search (ticks).
pub fn tracking(
    actuator: &str,
    desired: &[f64],
    measured: &[f64],
    force: &[f64],
    dt_c: f64,
    max_lag: usize,
) -> TrackingIndicators {
    let n = desired.len().min(measured.len()).min(force.len());
    let (d, m, f) = (&desired[..n], &measured[..n], &force[..n]);
    // Normalized cross-correlation over the overlap (an unnormalized mean product favours
    // lags that drop the large samples), refined by a parabola through the peak's neighbours.
    let top = max_lag.min(n.saturating_sub(2));
    let mut r = Vec::with_capacity(top + 1);
    for lag in 0..=top {
        let (mut smd, mut smm, mut sdd) = (0.0, 0.0, 0.0);
        for k in lag..n {
            smd += m[k] * d[k - lag];
            smm += m[k] * m[k];
            sdd += d[k - lag] * d[k - lag];
        }
        let den = (smm * sdd).sqrt();
        r.push(if den > 0.0 { smd / den } else { 0.0 });
    }
    let mut best = 0usize;
    for (lag, v) in r.iter().enumerate() {
        if *v > r[best] {
            best = lag;
        }
    }
    let mut lag = best as f64;
    if best > 0 && best < top {
        let (a, b, c) = (r[best - 1], r[best], r[best + 1]);
        let curv = a - 2.0 * b + c;
        if curv < 0.0 {
            lag += (0.5 * (a - c) / curv).clamp(-0.5, 0.5);
        }
    }
    let mut e2 = 0.0;
    let mut d2 = 0.0;
    let mut emax = 0.0f64;
    let mut dmax = 0.0f64;
    let mut ee = 0.0;
    let mut ein = 0.0;
    let mut eabs = 0.0;
    for k in 0..n {
        let e = m[k] - d[k];
        e2 += e * e;
        d2 += d[k] * d[k];
        emax = emax.max(e.abs());
        dmax = dmax.max(d[k].abs());
        if k > 0 {
            let ep = m[k - 1] - d[k - 1];
            let fm = 0.5 * (f[k] + f[k - 1]);
            ee += fm * (e - ep);
            let w = fm * (d[k] - d[k - 1]);
            ein += w;
            eabs += w.abs();
        }
    }
    TrackingIndicators {
        actuator: actuator.to_string(),
        delay: lag * dt_c,
        nrms_error: if d2 > 0.0 { (e2 / d2).sqrt() } else { 0.0 },
        peak_error: if dmax > 0.0 { emax / dmax } else { 0.0 },
        energy_error: ee,
        energy_input: ein,
        energy_throughput: eabs,
        normalized_energy_error: if eabs > 0.0 { ee / eabs } else { 0.0 },
    }
}

/// Collects lab rows (on the writer thread) for the indicators and plots at the end.
pub struct LabLog {
    /// Column names (without units).
    pub columns: Vec<String>,
    /// Actuator names.
    pub actuators: Vec<String>,
    data: Vec<Vec<f64>>,
}

impl LabLog {
    /// A log for `columns` as produced by the lab provider (`time`, `wall_time`, then seven
    /// columns per actuator; header cells `name[unit]`, stored here without the unit).
    pub fn new(columns: Vec<String>) -> Self {
        let columns: Vec<String> = columns
            .into_iter()
            .map(|c| match c.rfind('[') {
                Some(i) if c.ends_with(']') => c[..i].to_string(),
                _ => c,
            })
            .collect();
        let actuators = columns
            .iter()
            .filter_map(|c| c.strip_prefix("desired.").map(str::to_string))
            .collect();
        let n = columns.len();
        Self {
            columns,
            actuators,
            data: vec![Vec::new(); n],
        }
    }

    /// Add a row.
    pub fn push(&mut self, row: &[f64]) {
        for (c, x) in self.data.iter_mut().zip(row) {
            c.push(*x);
        }
    }

    /// Rows stored.
    pub fn len(&self) -> usize {
        self.data.first().map(Vec::len).unwrap_or(0)
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn column(&self, name: &str) -> Option<&[f64]> {
        self.columns
            .iter()
            .position(|c| c == name)
            .map(|i| self.data[i].as_slice())
    }

    /// Indicators of every actuator.
    pub fn indicators(&self, dt_c: f64, max_delay: f64) -> Vec<TrackingIndicators> {
        let max_lag = (max_delay / dt_c).ceil() as usize;
        self.actuators
            .iter()
            .filter_map(|a| {
                Some(tracking(
                    a,
                    self.column(&format!("desired.{a}"))?,
                    self.column(&format!("measured.{a}"))?,
                    self.column(&format!("force.{a}"))?,
                    dt_c,
                    max_lag,
                ))
            })
            .collect()
    }

    /// Synchronization-subspace plot (measured against desired displacement, one series per
    /// actuator; a perfect transfer system is the diagonal) to `path` (PNG or SVG).
    pub fn plot_synchronization(&self, path: &Path, unit: &str) -> Result<(), String> {
        let mut series = Vec::new();
        for a in &self.actuators {
            let (Some(d), Some(m)) = (
                self.column(&format!("desired.{a}")),
                self.column(&format!("measured.{a}")),
            ) else {
                continue;
            };
            let lo = d.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = d.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            series.push(hybridsim_plot::Series {
                name: format!("{a}: measured"),
                x: d.to_vec(),
                y: m.to_vec(),
            });
            if lo.is_finite() && hi.is_finite() {
                series.push(hybridsim_plot::Series {
                    name: format!("{a}: ideal"),
                    x: vec![lo, hi],
                    y: vec![lo, hi],
                });
            }
        }
        let chart = hybridsim_plot::Chart {
            title: "Synchronization subspace".into(),
            x: hybridsim_plot::Axis {
                label: format!("desired displacement [{unit}]"),
                log: false,
            },
            y: hybridsim_plot::Axis {
                label: format!("measured displacement [{unit}]"),
                log: false,
            },
            series,
        };
        hybridsim_plot::save(&chart, path).map_err(|e| e.to_string())
    }
}

/// The `time_scale` object of `run.json`: Δt^N, ss, λ, Δt^P, Δt^C, Δt^S and the regime
/// (Abbiati et al. 2019, §2.2; ALGORITHMS.md A17). Shared by `run` and the real-time runner.
pub fn time_scale_json(lab: &hybridsim::model::lab::LabSettings) -> serde_json::Value {
    let ts = lab.time_scale;
    serde_json::json!({
        "dt_N": ts.dt_n, "subcycles": ts.ss, "lambda": ts.lambda, "dt_P": ts.dt_p,
        "dt_C_wall": ts.dt_c, "dt_S_wall": ts.dt_s, "controller_rate_hz": ts.controller_rate(),
        "regime": format!("{:?}", lab.regime),
    })
}

/// The transfer-system fields of the `lab` object of `run.json` (callers add their own).
pub fn lab_settings_json(
    lab: &hybridsim::model::lab::LabSettings,
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("transfer".into(), lab.transfer.name().into());
    m.insert("geometric_scale".into(), lab.geometric_scale.into());
    m.insert("force_scale".into(), lab.force_scale.into());
    m.insert("device_multiplier".into(), lab.device_multiplier.into());
    // Actuators whose specimen has its own scales (`[[lab.actuator]] geometric_scale`, …).
    let own: serde_json::Map<String, serde_json::Value> = lab
        .actuators
        .iter()
        .filter_map(|a| {
            a.scale.map(|s| {
                (
                    a.name.clone(),
                    serde_json::json!({
                        "geometric_scale": s.geometric_scale,
                        "force_scale": s.force_scale,
                        "device_multiplier": s.device_multiplier,
                    }),
                )
            })
        })
        .collect();
    if !own.is_empty() {
        m.insert("actuator_scales".into(), own.into());
    }
    m.insert(
        "lab_csv_scale".into(),
        "specimen: lab.csv holds the specimen's displacements and forces in the model's units; \
         prototype displacement = geometric_scale × specimen displacement, prototype force = \
         force_scale × device_multiplier × specimen force (times any per-DOF ratio of a setup)"
            .into(),
    );
    m
}

/// A safety event in `run.json` (the same fields for `run` and `realtime`; non-finite values
/// as null or a string).
pub fn event_json(ev: &hybridsim::physical::SafetyEvent) -> serde_json::Value {
    use serde_json::{json, Value};
    let num = |x: f64| {
        if x.is_finite() {
            json!(x)
        } else if x.is_nan() {
            Value::Null
        } else {
            json!(format!("{x}"))
        }
    };
    json!({
        "kind": ev.kind.name(),
        "tick": ev.tick,
        "time": ev.time,
        "actuator": ev.actuator,
        "value": num(ev.value),
        "limit": num(ev.limit),
        "message": ev.to_string(),
    })
}

/// The safety state of one laboratory in `run.json` (the same fields for `run` and
/// `realtime`): state, event, how the ramp-down went and the event that stopped it, the
/// largest command sent against the limits, commands sent, dropped lab records and the
/// generated energy against its bound.
pub fn safety_json(
    substructure: Option<&str>,
    s: &hybridsim::physical::SafetySummary,
) -> serde_json::Value {
    use serde_json::{json, Value};
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let limits = |f: fn(&hybridsim::model::lab::ActuatorLimits) -> f64| {
        s.limits.iter().map(f).collect::<Vec<_>>()
    };
    json!({
        "substructure": substructure,
        "state": if s.armed { "armed" } else { "tripped" },
        "armed": s.armed,
        "event": s.event.as_ref().map(event_json),
        "ramp_down": s.ramp.name(),
        "ramp_commands": s.ramp_commands,
        "second_event": s.second_event.as_ref().map(event_json),
        "actuators": s.actuators,
        "max_command_sent": s.max_sent,
        "largest_command_jump": s.largest_command_jump,
        "compensation": if s.compensation_statistics.is_empty() {
            Value::Null
        } else {
            let mut c = serde_json::Map::new();
            for (k, v) in &s.compensation_statistics {
                c.insert(k.clone(), num(*v));
            }
            Value::Object(c)
        },
        "displacement_limits": limits(|l| l.displacement),
        "velocity_limits": limits(|l| l.velocity),
        "force_limits": limits(|l| l.force),
        "increment_limits": limits(|l| l.increment),
        "following_error_limits": limits(|l| l.following_error),
        "commands_sent": s.commands_sent,
        "lab_records_dropped": s.lab_records_dropped,
        "energy_generated": s.energy_generated,
        "energy_bound": if s.energy_bound.is_finite() { json!(s.energy_bound) } else { Value::Null },
        "energy_peak": if s.energy_peak.is_finite() { json!(s.energy_peak) } else { Value::Null },
        "transfer_fault": s.transfer_fault,
        "link": if s.transfer_statistics.is_empty() {
            Value::Null
        } else {
            let mut link = serde_json::Map::new();
            for (k, v) in &s.transfer_statistics {
                link.insert(k.clone(), num(*v));
            }
            Value::Object(link)
        },
    })
}
