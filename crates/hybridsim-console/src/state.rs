//! What the console shows, built on its own thread from the frames of the snapshot ring:
//! per actuator the desired, commanded and measured displacement, the measured force, the
//! safety state, peaks against the limits, and the tracking indicators over a sliding window;
//! the interface multipliers Λ; the step timing. Updates carry only what is new since the
//! last one; a browser that connects late first receives the retained history.

use crate::ring::{Frame, Layout};
use hybridsim::analysis::tracking::tracking_criteria;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Display points kept per actuator and for Λ (the history a new browser receives).
const DISPLAY_POINTS: usize = 6000;
/// Display points per second of test time per actuator (lab records are decimated to it).
const DISPLAY_RATE: f64 = 250.0;
/// Sliding window of the tracking indicators (s of test time).
pub const TRACKING_WINDOW: f64 = 4.0;
/// Largest lag of the delay search (s).
const MAX_DELAY: f64 = 0.1;
/// Most records in the tracking window (a fast controller's window is shortened to it).
const MAX_WINDOW_SAMPLES: usize = 4096;
/// Test time between two evaluations of the tracking indicators (s).
const TRACKING_EVERY: f64 = 0.5;

/// Safety limits of one actuator (specimen units, wall-clock rates).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// |d| bound (stroke).
    pub displacement: f64,
    /// |ḋ| bound.
    pub velocity: f64,
    /// |F| bound.
    pub force: f64,
}

/// What the console knows before the run starts (from the model file or `run.json`).
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// Shown as is on the page (title, model, integrator, time steps, seeds, …).
    pub info: Value,
    /// Controller tick Δt^C (s of test time), for the delay and the velocity.
    pub dt_c: f64,
    /// Wall-clock duration of a coarse step with realtime pacing (`None`: not paced, no
    /// deadlines).
    pub step_deadline: Option<f64>,
    /// Coarse steps of the whole run.
    pub n_steps: u64,
    /// Limits by actuator name.
    pub limits: Vec<(String, Limits)>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    t: f64,
    desired: f64,
    command: f64,
    measured: f64,
    force: f64,
}

struct Actuator {
    name: String,
    lab: usize,
    unit_d: String,
    unit_f: String,
    /// Columns of desired, compensated, measured, force, safety in the lab record.
    idx: [usize; 5],
    limits: Option<Limits>,
    /// Every record of the last TRACKING_WINDOW (for the indicators).
    window: VecDeque<Sample>,
    display: VecDeque<Sample>,
    fresh: Vec<Sample>,
    decimate: u64,
    seen: u64,
    state: f64,
    peak_d: f64,
    peak_v: f64,
    peak_f: f64,
    last_command: Option<f64>,
    tracking: Value,
    tracked_at: f64,
}

/// The console's picture of the run.
pub struct State {
    meta: Meta,
    layout: Option<Layout>,
    actuators: Vec<Actuator>,
    /// Results columns: time and the multipliers.
    time_col: usize,
    lambda_cols: Vec<usize>,
    lambda_display: VecDeque<Vec<f64>>,
    lambda_fresh: Vec<Vec<f64>>,
    time: f64,
    steps: u64,
    first_wall: Option<(u64, f64)>,
    last_wall: Option<f64>,
    intervals: Vec<f64>,
    interval_max_all: f64,
    behind: f64,
    max_behind: f64,
    late_steps: u64,
    updates: u64,
    outcome: Option<Value>,
}

fn split_header(h: &str) -> (&str, &str) {
    match h.find('[') {
        Some(i) => (&h[..i], h[i + 1..].trim_end_matches(']')),
        None => (h, ""),
    }
}

impl State {
    /// An empty picture.
    pub fn new(meta: Meta) -> Self {
        Self {
            meta,
            layout: None,
            actuators: Vec::new(),
            time_col: 0,
            lambda_cols: Vec::new(),
            lambda_display: VecDeque::new(),
            lambda_fresh: Vec::new(),
            time: 0.0,
            steps: 0,
            first_wall: None,
            last_wall: None,
            intervals: Vec::new(),
            interval_max_all: 0.0,
            behind: 0.0,
            max_behind: 0.0,
            late_steps: 0,
            updates: 0,
            outcome: None,
        }
    }

    /// Learn the headers (once).
    pub fn set_layout(&mut self, layout: &Layout) {
        if self.layout.is_some() {
            return;
        }
        let rate = if self.meta.dt_c > 0.0 {
            1.0 / self.meta.dt_c
        } else {
            DISPLAY_RATE
        };
        let decimate = (rate / DISPLAY_RATE).ceil().max(1.0) as u64;
        for (j, (_, _, cols)) in layout.labs.iter().enumerate() {
            let find = |what: &str, name: &str| {
                cols.iter()
                    .position(|c| split_header(c).0 == format!("{what}.{name}"))
            };
            for c in cols {
                let (n, unit) = split_header(c);
                let Some(name) = n.strip_prefix("desired.") else {
                    continue;
                };
                let ids = ["desired", "compensated", "measured", "force", "safety"]
                    .map(|w| find(w, name));
                if ids.iter().any(Option::is_none) {
                    continue;
                }
                let unit_f = split_header(&cols[ids[3].unwrap_or(0)]).1.to_string();
                self.actuators.push(Actuator {
                    name: name.to_string(),
                    lab: j,
                    unit_d: unit.to_string(),
                    unit_f,
                    idx: ids.map(|i| i.unwrap_or(0)),
                    limits: self
                        .meta
                        .limits
                        .iter()
                        .find(|(a, _)| a == name)
                        .map(|(_, l)| *l),
                    window: VecDeque::new(),
                    display: VecDeque::new(),
                    fresh: Vec::new(),
                    decimate,
                    seen: 0,
                    state: 0.0,
                    peak_d: 0.0,
                    peak_v: 0.0,
                    peak_f: 0.0,
                    last_command: None,
                    tracking: json!({ "window": TRACKING_WINDOW, "samples": 0 }),
                    tracked_at: f64::NEG_INFINITY,
                });
            }
        }
        self.time_col = layout
            .columns
            .iter()
            .position(|c| split_header(c).0 == "time")
            .unwrap_or(0);
        self.lambda_cols = layout
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.starts_with("lambda."))
            .map(|(i, _)| i)
            .collect();
        self.layout = Some(layout.clone());
    }

    /// Take one frame in.
    pub fn absorb(&mut self, frame: Frame<'_>) {
        match frame {
            Frame::Row(row) => {
                let t = row.get(self.time_col).copied().unwrap_or(f64::NAN);
                self.time = t;
                if !self.lambda_cols.is_empty() {
                    let mut v = Vec::with_capacity(self.lambda_cols.len() + 1);
                    v.push(t);
                    v.extend(self.lambda_cols.iter().map(|&i| row[i]));
                    self.lambda_fresh.push(v.clone());
                    self.lambda_display.push_back(v);
                    if self.lambda_display.len() > DISPLAY_POINTS {
                        self.lambda_display.pop_front();
                    }
                }
            }
            Frame::Lab(j, rec) => {
                let dt_c = self.meta.dt_c;
                for a in self.actuators.iter_mut().filter(|a| a.lab == j) {
                    let s = Sample {
                        t: rec[0],
                        desired: rec[a.idx[0]],
                        command: rec[a.idx[1]],
                        measured: rec[a.idx[2]],
                        force: rec[a.idx[3]],
                    };
                    a.state = rec[a.idx[4]];
                    if a.state == 0.0 {
                        a.peak_d = a.peak_d.max(s.command.abs()).max(s.measured.abs());
                        a.peak_f = a.peak_f.max(s.force.abs());
                        if let Some(last) = a.last_command {
                            if dt_c > 0.0 {
                                a.peak_v = a.peak_v.max(((s.command - last) / dt_c).abs());
                            }
                        }
                    }
                    a.last_command = Some(s.command);
                    a.window.push_back(s);
                    while a.window.len() > MAX_WINDOW_SAMPLES
                        || a.window
                            .front()
                            .is_some_and(|f| s.t - f.t > TRACKING_WINDOW)
                    {
                        a.window.pop_front();
                    }
                    if a.seen % a.decimate == 0 || a.state != 0.0 {
                        a.fresh.push(s);
                        a.display.push_back(s);
                        if a.display.len() > DISPLAY_POINTS {
                            a.display.pop_front();
                        }
                    }
                    a.seen += 1;
                }
            }
            Frame::Step { steps, wall } => {
                self.steps = steps;
                if let Some(last) = self.last_wall {
                    let dt = wall - last;
                    self.intervals.push(dt);
                    self.interval_max_all = self.interval_max_all.max(dt);
                }
                self.last_wall = Some(wall);
                let (s0, w0) = *self.first_wall.get_or_insert((steps, wall));
                if let Some(deadline) = self.meta.step_deadline {
                    // Lateness of this step against the schedule of the first one seen.
                    let behind = wall - w0 - (steps - s0) as f64 * deadline;
                    self.behind = behind;
                    self.max_behind = self.max_behind.max(behind);
                    if behind > deadline {
                        self.late_steps += 1;
                    }
                }
            }
        }
    }

    /// The run's outcome (status, safety event), shown once it has ended.
    pub fn set_outcome(&mut self, outcome: Value) {
        self.outcome = Some(outcome);
    }

    fn series<'a>(points: impl Iterator<Item = &'a Sample>) -> Value {
        let (mut t, mut d, mut c, mut m, mut f) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in points {
            t.push(s.t);
            d.push(s.desired);
            c.push(s.command);
            m.push(s.measured);
            f.push(s.force);
        }
        json!({ "t": t, "desired": d, "command": c, "measured": m, "force": f })
    }

    fn body(&mut self, history: bool, dropped: u64, lost: u64) -> Value {
        let dt_c = self.meta.dt_c;
        let actuators: Vec<Value> = self
            .actuators
            .iter_mut()
            .map(|a| {
                let series = if history {
                    Self::series(a.display.iter())
                } else {
                    Self::series(a.fresh.iter())
                };
                let now = a.window.back().map_or(f64::NEG_INFINITY, |s| s.t);
                if history || now - a.tracked_at >= TRACKING_EVERY || now < a.tracked_at {
                    a.tracked_at = now;
                    let (desired, measured): (Vec<f64>, Vec<f64>) =
                        a.window.iter().map(|s| (s.desired, s.measured)).unzip();
                    let max_lag = if dt_c > 0.0 {
                        ((MAX_DELAY / dt_c) as usize).clamp(1, 400)
                    } else {
                        1
                    };
                    let span = match (a.window.front(), a.window.back()) {
                        (Some(f), Some(b)) => b.t - f.t,
                        _ => 0.0,
                    };
                    a.tracking = match tracking_criteria(&desired, &measured, dt_c, max_lag) {
                        Ok(c) => json!({ "delay": c.j1_delay, "nrms": c.j2_nrms,
                                         "peak": c.j3_peak, "window": span,
                                         "samples": desired.len() }),
                        Err(_) => json!({ "window": span, "samples": desired.len() }),
                    };
                }
                let tracking = a.tracking.clone();
                let margin = |peak: f64, limit: f64| {
                    if limit > 0.0 {
                        json!({ "peak": peak, "limit": limit, "margin": 1.0 - peak / limit })
                    } else {
                        json!({ "peak": peak })
                    }
                };
                let l = a.limits;
                json!({
                    "name": a.name,
                    "unit_displacement": a.unit_d,
                    "unit_force": a.unit_f,
                    "series": series,
                    "safety_state": a.state,
                    "tracking": tracking,
                    "displacement": margin(a.peak_d, l.map_or(0.0, |l| l.displacement)),
                    "velocity": margin(a.peak_v, l.map_or(0.0, |l| l.velocity)),
                    "force": margin(a.peak_f, l.map_or(0.0, |l| l.force)),
                })
            })
            .collect();
        let lambda_names: Vec<String> = match &self.layout {
            Some(l) => self
                .lambda_cols
                .iter()
                .map(|&i| l.columns[i].clone())
                .collect(),
            None => Vec::new(),
        };
        let lambda: Vec<&Vec<f64>> = if history {
            self.lambda_display.iter().collect()
        } else {
            self.lambda_fresh.iter().collect()
        };
        let n = self.intervals.len();
        let mean = if n > 0 {
            self.intervals.iter().sum::<f64>() / n as f64
        } else {
            f64::NAN
        };
        let max = self.intervals.iter().copied().fold(f64::NAN, f64::max);
        let timing = json!({
            "steps": self.steps,
            "n_steps": self.meta.n_steps,
            "interval_mean_ms": mean * 1e3,
            "interval_max_ms": max * 1e3,
            "interval_max_all_ms": self.interval_max_all * 1e3,
            "deadline_ms": self.meta.step_deadline.map(|d| d * 1e3),
            "behind_ms": self.behind * 1e3,
            "max_behind_ms": self.max_behind * 1e3,
            "late_steps": self.late_steps,
        });
        self.updates += 1;
        json!({
            "frame": self.updates,
            "time": self.time,
            "actuators": actuators,
            "lambda": { "names": lambda_names, "rows": lambda },
            "timing": timing,
            "dropped_frames": dropped,
            "lost_updates": lost,
            "outcome": self.outcome,
        })
    }

    /// The update since the last one (and forget what it carried).
    pub fn update(&mut self, dropped: u64, lost: u64) -> Value {
        let mut v = self.body(false, dropped, lost);
        v["kind"] = json!("update");
        for a in &mut self.actuators {
            a.fresh.clear();
        }
        self.lambda_fresh.clear();
        self.intervals.clear();
        v
    }

    /// The first message of a browser: the metadata and the retained history.
    pub fn init(&mut self, dropped: u64, lost: u64) -> Value {
        let mut v = self.body(true, dropped, lost);
        v["kind"] = json!("init");
        v["meta"] = self.meta.info.clone();
        v
    }

    /// Whether the headers are known.
    pub fn started(&self) -> bool {
        self.layout.is_some()
    }
}
