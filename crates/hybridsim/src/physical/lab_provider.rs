//! The physical substructure behind a transfer system: the restoring-force provider that the
//! integrator queries once per substep (one controller tick Δt^C), composed of
//!
//! 1. the DOF→actuator transform `d = T u` and the scale factors (prototype → specimen units,
//!    wall-clock rates `ṽ/λ`, `ã/λ²`; A17),
//! 2. compensation: the `signals.target` blocks, adaptive time series (Chae et al. 2013),
//!    polynomial delay extrapolation, model-based inverse, compliance (Abbiati et al. 2020,
//!    eq 15), then the `signals.command` blocks (the D/A); the largest change of the command in
//!    one tick is kept per actuator (`largest_command_jump`),
//! 3. the safety layer (final command checked in specimen units; measurement checked),
//! 4. the transfer system (the [`VirtualLab`] by default),
//! 5. forces back to the DOFs `f = Tᵀ F · force_scale · device_multiplier`, plus the constant
//!    force-controlled DOFs and, in real time, the numerical seismic load of the specimen mass.
//!
//! Every tick writes a controller-rate record (simulation and wall time; per actuator desired,
//! compensated, measured displacement, measured force, safety state) into a preallocated ring
//! that the runner drains after each coarse step (`lab.csv`).

use super::blocks::{Block, Series};
use super::compensation::{compliance, AdaptiveTimeSeries, DelayCompensator, InverseCompensator};
use super::safety::{
    DivergenceMonitor, EventKind, SafetyEvent, SafetyLayer, SafetyState, SensorSettings,
};
use super::setup::{Placed, SetupMap};
use super::transfer::{ActuatorCommand, TransferRequest, TransferSystem, Unconnected};
use super::virtual_lab::VirtualLab;
use super::{
    LabControl, NumericalSpecimen, PhysicalSubstructure, PortError, SafetySummary, SpecimenElement,
    Tick,
};
use crate::elements::DofRef;
use crate::excitation::TimeFunction;
use crate::model::lab::{
    ComplianceCompensation, EnergyMode, LabConfig, Regime, LAB_COLUMNS_PER_ACTUATOR,
};
use crate::model::Model;

/// Preallocated ring of controller-rate records.
#[derive(Debug, Clone)]
pub struct LabRecords {
    ncol: usize,
    cap: usize,
    data: Vec<f64>,
    head: usize,
    len: usize,
    dropped: u64,
    growable: bool,
}

impl LabRecords {
    /// A ring of `cap` rows of `ncol` values.
    pub fn new(ncol: usize, cap: usize) -> Self {
        Self {
            ncol,
            cap,
            data: vec![0.0; ncol * cap],
            head: 0,
            len: 0,
            dropped: 0,
            growable: false,
        }
    }

    /// While growable (before the test, e.g. during the bumpless start), a full ring doubles
    /// instead of overwriting its oldest row; during the test it never allocates.
    pub fn set_growable(&mut self, growable: bool) {
        self.growable = growable;
    }

    /// One controller tick's row in the order of [`LabControl::lab_columns`]: simulation and
    /// wall time, then per actuator the desired displacement, the command sent (compensated),
    /// the measured displacement and force, the safety state, and the noise-free achieved
    /// displacement and force of `truth` (NaN when the transfer system does not know them).
    #[allow(clippy::too_many_arguments)]
    fn push_tick(
        &mut self,
        t: f64,
        wall: f64,
        desired: impl Fn(usize) -> f64,
        cmd: &[ActuatorCommand],
        achieved: &[f64],
        force: &[f64],
        safety: f64,
        truth: Option<(&[f64], &[f64])>,
    ) {
        let row = self.push();
        row[0] = t;
        row[1] = wall;
        for (k, c) in cmd.iter().enumerate() {
            let o = 2 + LAB_COLUMNS_PER_ACTUATOR * k;
            row[o] = desired(k);
            row[o + 1] = c.d;
            row[o + 2] = achieved[k];
            row[o + 3] = force[k];
            row[o + 4] = safety;
            let (x, f) = truth.map_or((f64::NAN, f64::NAN), |(x, f)| (x[k], f[k]));
            row[o + 5] = x;
            row[o + 6] = f;
        }
    }

    fn push(&mut self) -> &mut [f64] {
        if self.len == self.cap && self.growable {
            let mut data = Vec::with_capacity(2 * self.data.len());
            for i in 0..self.len {
                let at = (self.head + i) % self.cap;
                data.extend_from_slice(&self.data[at * self.ncol..(at + 1) * self.ncol]);
            }
            data.resize(2 * self.cap * self.ncol, 0.0);
            self.data = data;
            self.head = 0;
            self.cap *= 2;
        }
        let at = (self.head + self.len) % self.cap;
        if self.len == self.cap {
            self.head = (self.head + 1) % self.cap;
            self.dropped += 1;
        } else {
            self.len += 1;
        }
        &mut self.data[at * self.ncol..(at + 1) * self.ncol]
    }

    /// Hand every stored row to `sink`, oldest first, and empty the ring.
    pub fn drain(&mut self, sink: &mut dyn FnMut(&[f64])) {
        for i in 0..self.len {
            let at = (self.head + i) % self.cap;
            sink(&self.data[at * self.ncol..(at + 1) * self.ncol]);
        }
        self.head = 0;
        self.len = 0;
    }

    /// Rows overwritten before being drained.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// What is needed to (re)build a lab provider.
#[derive(Clone)]
struct Recipe {
    name: String,
    dofs: Vec<DofRef>,
    specimen: Vec<SpecimenElement>,
    config: LabConfig,
    t: Vec<f64>,
    act: Vec<usize>,
    force_control: Vec<(usize, f64)>,
    seismic: Vec<(usize, f64, TimeFunction)>,
    inertia: Option<Vec<f64>>,
    k_specimen: Vec<f64>,
    lab_ring: usize,
    /// The lab.csv header cells, `name[unit]`.
    columns: Vec<String>,
}

/// The lab-side restoring-force provider of one physical substructure.
pub struct LabProvider {
    recipe: Recipe,
    map: SetupMap,
    /// The last trial DOF displacements (the configuration of a nonlinear setup's Jacobian).
    u_trial: Vec<f64>,
    safety: SafetyLayer<Box<dyn TransferSystem>>,
    delay: Vec<Option<DelayCompensator>>,
    compliance: Vec<Option<ComplianceCompensation>>,
    /// Model-based inverse compensation per actuator.
    inverse: Vec<Option<InverseCompensator>>,
    /// Adaptive time series compensation per actuator.
    adaptive: Vec<Option<AdaptiveTimeSeries>>,
    /// Blocks on the target (before compensation) and on the command (after it, the D/A).
    target_chain: Vec<Option<Series>>,
    command_chain: Vec<Option<Series>>,
    /// The last command sent and the largest change of the command in one tick per actuator
    /// since the start (specimen units).
    last_command: Vec<f64>,
    largest_jump: Vec<f64>,
    divergence: DivergenceMonitor,
    lambda: f64,
    dt_p: f64,
    dt_c: f64,
    s_d: f64,
    s_f: f64,
    tick: u64,
    d: Vec<f64>,
    vd: Vec<f64>,
    vd_prev: Vec<f64>,
    desired: Vec<f64>,
    cmd: Vec<ActuatorCommand>,
    force: Vec<f64>,
    achieved: Vec<f64>,
    /// Noise-free achieved displacement and force of the last tick (virtual lab).
    achieved_true: Vec<f64>,
    force_true: Vec<f64>,
    records: LabRecords,
    event: Option<SafetyEvent>,
    /// Work of the measured force on the commanded prototype displacement since the start
    /// (trapezoidal; `−work` is the generated energy of the divergence criterion).
    work: f64,
    work_f: Vec<f64>,
    work_d: Vec<f64>,
    /// Force and displacement per actuator measured at rest (prototype units): the origin of
    /// the secant estimate of the recoverable energy of the window energy criterion.
    rest_f: Vec<f64>,
    rest_d: Vec<f64>,
    /// The wall clock that paces the bumpless start, when a runner gave one.
    clock: Option<Box<dyn super::TickClock>>,
    /// Whether the controller-rate records are gathered ([`LabControl::set_records_kept`]).
    records_kept: bool,
}

impl LabProvider {
    /// The secant estimate of the recoverable energy at the last measurement,
    /// `Σ ½ (F − F₀)(d − d₀)` over the actuators from the state at rest (prototype units; the
    /// window energy criterion, see `DivergenceSettings`). Exact for a linear elastic
    /// specimen whatever its stiffness.
    fn stored_energy(&self) -> f64 {
        let mut e = 0.0;
        for k in 0..self.work_f.len() {
            e += 0.5 * (self.work_f[k] - self.rest_f[k]) * (self.work_d[k] - self.rest_d[k]);
        }
        e
    }

    /// Build the provider of physical substructure `name` over its partition `dofs`.
    pub fn new(
        model: &Model,
        name: &str,
        dofs: &[DofRef],
        specimen: Vec<SpecimenElement>,
    ) -> Result<Self, String> {
        let mut config = model
            .lab
            .clone()
            .ok_or("the model has no [lab] configuration")?;
        let n = dofs.len();
        let dof_index = |d: &(i64, String)| dofs.iter().position(|x| x.node == d.0 && x.dof == d.1);
        let act: Vec<usize> = config
            .lab
            .actuators
            .iter()
            .enumerate()
            .filter(|(_, a)| match &a.substructure {
                // Explicit (or resolved) assignment: pier and bearing on one node each keep
                // their own actuators.
                Some(s) => s == name,
                None => a.dofs.iter().any(|d| dof_index(d).is_some()),
            })
            .map(|(i, _)| i)
            .collect();
        if act.is_empty() {
            return Err(format!(
                "physical substructure `{name}` has no actuator in [lab] driving its DOFs"
            ));
        }
        // The scales of this substructure's specimen, when its actuators give their own (the
        // reader checked that they agree): every later use reads them from this copy.
        if let Some(scale) = act.iter().find_map(|&i| config.lab.actuators[i].scale) {
            config.lab.geometric_scale = scale.geometric_scale;
            config.lab.force_scale = scale.force_scale;
            config.lab.device_multiplier = scale.device_multiplier;
        }
        let mut t = vec![0.0; act.len() * n];
        for (row, &ai) in act.iter().enumerate() {
            let a = &config.lab.actuators[ai];
            if a.setup.is_some() {
                // A kinematic setup's actuator: no row of `T` (see `setup_map`).
                for d in &a.dofs {
                    if dof_index(d).is_none() {
                        return Err(format!(
                            "actuator `{}` drives node {} dof {} outside substructure `{name}`",
                            a.name, d.0, d.1
                        ));
                    }
                }
                continue;
            }
            for (d, c) in a.dofs.iter().zip(&a.coefficients) {
                let j = dof_index(d).ok_or_else(|| {
                    format!(
                        "actuator `{}` drives node {} dof {} outside substructure `{name}`",
                        a.name, d.0, d.1
                    )
                })?;
                t[row * n + j] += c;
            }
        }
        let force_control = config
            .lab
            .force_control
            .iter()
            .filter_map(|f| dof_index(&f.dof).map(|j| (j, f.force)))
            .collect();
        // Specimen mass (real time: measured inertia, numerical seismic load).
        let mut inertia = None;
        let mut seismic = Vec::new();
        if config.lab.regime == Regime::RealTime {
            let mut m = vec![0.0; n * n];
            let mut any = false;
            for e in &specimen {
                let Some(me) = e.element.mass() else { continue };
                any = true;
                for (i, mi) in e.map.iter().enumerate() {
                    let Some(a) = mi else { continue };
                    for (j, mj) in e.map.iter().enumerate() {
                        if let Some(b) = mj {
                            m[a * n + b] += me[(i, j)];
                        }
                    }
                    for g in &model.ground_motions {
                        // Row i of m ι: Σ_j m_ij ι_j.
                        let influence = e.element.seismic_influence();
                        let iota = |j: usize| match &influence {
                            Some(v) => v[j],
                            None if e.element.dofs()[j].dof == g.direction => 1.0,
                            None => 0.0,
                        };
                        let p: f64 = (0..e.map.len()).map(|j| me[(i, j)] * iota(j)).sum();
                        if p != 0.0 {
                            seismic.push((*a, p, g.acceleration.clone()));
                        }
                    }
                }
            }
            if any {
                inertia = Some(m);
            }
        }
        // Estimated specimen stiffness per actuator (servo-hydraulic CSI linearization), through
        // the tangent of the setups at the reference configuration.
        let setup_map = setup_map(&config, &act, dofs, &t)?;
        let map = setup_map.tangent().clone();
        let mut k_dof = vec![0.0; n * n];
        if let Some(est) = model
            .substructures
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.estimate.as_ref())
        {
            for (i, di) in est.dofs.iter().enumerate() {
                for (j, dj) in est.dofs.iter().enumerate() {
                    if let (Some(a), Some(b)) = (
                        dofs.iter().position(|x| x == di),
                        dofs.iter().position(|x| x == dj),
                    ) {
                        k_dof[a * n + b] = est.stiffness[(i, j)];
                    }
                }
            }
        }
        let s_d = config.lab.geometric_scale;
        let s_f = config.lab.force_scale * config.lab.device_multiplier;
        let k_specimen = (0..act.len())
            .map(|a| {
                let mut s = 0.0;
                for i in 0..n {
                    for j in 0..n {
                        s += map.r[a * n + i] * k_dof[i * n + j] * map.p[j * act.len() + a];
                    }
                }
                s * s_d / s_f
            })
            .collect();
        // lab.csv header: specimen units of each actuator's first DOF.
        let u = &model.units;
        let mut columns = vec![
            format!("time[{}]", u.time),
            format!("wall_time[{}]", u.time),
        ];
        for &i in &act {
            let a = &config.lab.actuators[i];
            let dof = a.dofs.first().map_or("x", |d| d.1.as_str());
            let (du, fu) = (u.displacement_unit(dof), u.force_unit(dof));
            for (what, unit) in [
                ("desired", &du),
                ("compensated", &du),
                ("measured", &du),
                ("force", &fu),
                ("safety", &"-".to_string()),
                ("achieved_true", &du),
                ("force_true", &fu),
            ] {
                columns.push(format!("{what}.{}[{unit}]", a.name));
            }
        }
        let recipe = Recipe {
            columns,
            name: name.to_string(),
            dofs: dofs.to_vec(),
            specimen,
            config,
            t,
            act,
            force_control,
            seismic,
            inertia,
            k_specimen,
            lab_ring: 4 * model.analysis.subcycles.max(1) + 16,
        };
        Self::from_recipe(recipe)
    }

    fn from_recipe(recipe: Recipe) -> Result<Self, String> {
        let na = recipe.act.len();
        let cfg = &recipe.config;
        let ts = cfg.lab.time_scale;
        let map = setup_map(cfg, &recipe.act, &recipe.dofs, &recipe.t)?;
        let settings: Vec<_> = recipe
            .act
            .iter()
            .map(|&i| cfg.lab.actuators[i].clone())
            .collect();
        let limits = settings
            .iter()
            .map(|a| {
                cfg.safety
                    .limits
                    .get(&a.name)
                    .copied()
                    .ok_or_else(|| format!("actuator `{}` has no safety limits", a.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let transfer: Box<dyn TransferSystem> = if cfg.lab.transfer.is_network() {
            // A front end connects the link (`LabControl::attach_transfer`).
            Box::new(Unconnected::new(cfg.lab.transfer, na))
        } else {
            Box::new(recipe.virtual_lab(&map, &settings))
        };
        let sensors = settings
            .iter()
            .map(|a| SensorSettings {
                displacement_range: a.displacement_range,
                force_range: a.force_range,
                // `force_noise` declares the load cell's noise (the virtual lab's, or a real
                // one's): a noise-free load cell may legitimately read the same value twice.
                force_is_noisy: a.force_noise > 0.0,
            })
            .collect();
        let safety =
            SafetyLayer::new(transfer, limits, cfg.safety.on_trip, ts.dt_c).with_sensors(sensors);
        let delay = settings
            .iter()
            .map(|a| {
                a.delay_compensation
                    .as_ref()
                    .map(|c| DelayCompensator::with_subcycles(c, ts.dt_c, ts.ss))
            })
            .collect();
        let compliance = settings.iter().map(|a| a.compliance_compensation).collect();
        let inverse = settings
            .iter()
            .map(|a| {
                a.inverse_compensation
                    .as_ref()
                    .map(|c| {
                        InverseCompensator::new(c, ts.dt_c).map_err(|e| {
                            format!("actuator `{}`: inverse compensation: {e}", a.name)
                        })
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let adaptive = settings
            .iter()
            .map(|a| {
                a.adaptive_compensation
                    .as_ref()
                    .map(|c| AdaptiveTimeSeries::new(c, ts.dt_c))
            })
            .collect();
        let chain = |a: &crate::model::lab::ActuatorSettings,
                     what: &str,
                     specs: &[crate::model::lab::BlockSpec]|
         -> Result<Option<Series>, String> {
            if specs.is_empty() {
                return Ok(None);
            }
            Series::new(specs, ts.dt_c).map(Some).map_err(|e| {
                format!(
                    "actuator `{}`: signals.{what}[{}].{}: {}",
                    a.name, e.block, e.field, e.reason
                )
            })
        };
        let target_chain = settings
            .iter()
            .map(|a| chain(a, "target", &a.signals.target))
            .collect::<Result<Vec<_>, _>>()?;
        let command_chain = settings
            .iter()
            .map(|a| chain(a, "command", &a.signals.command))
            .collect::<Result<Vec<_>, _>>()?;
        let ncol = 2 + LAB_COLUMNS_PER_ACTUATOR * na;
        let s_d = cfg.lab.geometric_scale;
        let s_f = cfg.lab.force_scale * cfg.lab.device_multiplier;
        // Default energy bound: ⅛ k̂ u_b², k̂ the largest estimated actuator-space stiffness in
        // prototype units (see `DivergenceSettings`).
        let k_hat = recipe
            .k_specimen
            .iter()
            .map(|k| (k * s_f / s_d).abs())
            .fold(0.0f64, f64::max);
        let u_b = cfg.safety.divergence.displacement;
        // Window mode: ½ k̂ u_b², the elastic energy at the bound (the secant estimate of the
        // recoverable energy of a specimen no stiffer than k̂ errs by less within the bound).
        let fraction = match cfg.safety.divergence.energy_mode {
            EnergyMode::Window => 0.5,
            EnergyMode::Cumulative => 0.125,
        };
        let energy_default = if k_hat > 0.0 {
            fraction * k_hat * u_b * u_b
        } else {
            f64::INFINITY
        };
        Ok(Self {
            u_trial: vec![0.0; map.n_dofs()],
            map,
            safety,
            delay,
            compliance,
            inverse,
            adaptive,
            target_chain,
            command_chain,
            last_command: vec![0.0; na],
            largest_jump: vec![0.0; na],
            divergence: DivergenceMonitor::new(cfg.safety.divergence)
                .with_energy_bound(energy_default)
                .with_energy_window(ts.dt_p),
            rest_f: vec![0.0; na],
            rest_d: vec![0.0; na],
            lambda: ts.lambda,
            dt_p: ts.dt_p,
            dt_c: ts.dt_c,
            s_d: cfg.lab.geometric_scale,
            s_f: cfg.lab.force_scale * cfg.lab.device_multiplier,
            tick: 0,
            d: vec![0.0; na],
            vd: vec![0.0; na],
            vd_prev: vec![0.0; na],
            desired: vec![0.0; na],
            cmd: vec![ActuatorCommand::default(); na],
            force: vec![0.0; na],
            achieved: vec![0.0; na],
            achieved_true: vec![f64::NAN; na],
            force_true: vec![f64::NAN; na],
            records: LabRecords::new(ncol, recipe.lab_ring),
            event: None,
            work: 0.0,
            work_f: vec![0.0; na],
            work_d: vec![0.0; na],
            clock: None,
            recipe,
            records_kept: true,
        })
    }

    /// The settings of the actuators of this substructure, in command order.
    fn actuator_settings(&self) -> Vec<crate::model::lab::ActuatorSettings> {
        self.recipe
            .act
            .iter()
            .map(|&i| self.recipe.config.lab.actuators[i].clone())
            .collect()
    }

    /// The kinematic setups of this substructure (`[[lab.setup]]`), `""` without any.
    fn describe_setups(&self) -> String {
        let lab = &self.recipe.config.lab;
        let mut seen = Vec::new();
        let mut out = String::new();
        for &i in &self.recipe.act {
            let Some(j) = lab.actuators[i].setup else {
                continue;
            };
            if seen.contains(&j) {
                continue;
            }
            seen.push(j);
            let s = &lab.setups[j];
            out += &format!(
                "; setup `{}` ({:?} geometry) on {}",
                s.kind.name(),
                s.geometry,
                s.actuators.join(", ")
            );
        }
        out
    }

    /// Actuator names in lab.csv order.
    pub fn actuator_names(&self) -> Vec<String> {
        self.recipe
            .act
            .iter()
            .map(|&i| self.recipe.config.lab.actuators[i].name.clone())
            .collect()
    }

    fn dof_forces(&self, t: f64, force: &mut [f64]) {
        force.iter_mut().for_each(|x| *x = 0.0);
        // f = s_f · J(u)ᵀ F at the trial configuration (`T` for linear rows; see `setup`).
        self.map
            .forces_to_dofs(&self.u_trial, &self.force, self.s_f, force);
        for (j, f) in &self.recipe.force_control {
            force[*j] += f;
        }
        for (j, p, ag) in &self.recipe.seismic {
            force[*j] += p * ag.value(t);
        }
    }

    fn record(&mut self, t: f64) {
        if !self.records_kept {
            return;
        }
        // The tick's place on the test's wall clock (tick · Δt^C): deterministic, so that a
        // run and its threaded replay write the same bits; the measured lateness of each tick
        // is in the runner's task statistics.
        let wall = self.tick as f64 * self.dt_c;
        // 0: armed; 1: tripped (holding or ramping down); 2: a second event during the ramp.
        let tripped = if self.safety.second_event().is_some() {
            2.0
        } else if self.safety.state() == SafetyState::Tripped {
            1.0
        } else {
            0.0
        };
        let truth = self
            .safety
            .inner()
            .noise_free(&mut self.force_true, &mut self.achieved_true);
        let desired = &self.desired;
        self.records.push_tick(
            t,
            wall,
            |k| desired[k],
            &self.cmd,
            &self.achieved,
            &self.force,
            tripped,
            truth.then_some((self.achieved_true.as_slice(), self.force_true.as_slice())),
        );
    }

    /// The online estimates of the adaptive compensators (`NAME.ats_delay` in s,
    /// `NAME.ats_amplitude_factor`, `NAME.ats_a0|a1|a2`, `NAME.ats_updates`).
    fn compensation_statistics(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for (k, name) in self.actuator_names().iter().enumerate() {
            if let Some(c) = &self.adaptive[k] {
                let [a0, a1, a2] = c.coefficients();
                out.push((format!("{name}.ats_delay"), c.delay()));
                out.push((format!("{name}.ats_amplitude_factor"), c.amplitude_factor()));
                out.push((format!("{name}.ats_a0"), a0));
                out.push((format!("{name}.ats_a1"), a1));
                out.push((format!("{name}.ats_a2"), a2));
                out.push((format!("{name}.ats_updates"), c.updates() as f64));
            }
        }
        out
    }

    fn fail(&mut self, ev: SafetyEvent, t: f64) -> PortError {
        self.event = Some(ev);
        self.record(t);
        PortError::Safety(ev)
    }
}

impl PhysicalSubstructure for LabProvider {
    fn describe(&self) -> String {
        let c = &self.recipe.config.lab;
        format!(
            "{} ({:?}, geometric scale ×{}, force ×{}, device ×{}, safety armed)",
            self.safety.inner().describe(),
            c.regime,
            c.geometric_scale,
            c.force_scale,
            c.device_multiplier,
        ) + &self.describe_setups()
    }

    #[allow(clippy::needless_range_loop)] // parallel per-actuator arrays
    fn measure_at_rest(
        &mut self,
        t: f64,
        u: &[f64],
        _v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        self.tick = 0;
        self.event = None;
        self.divergence.reset();
        self.u_trial.copy_from_slice(u);
        self.map.to_actuators(u, &mut self.d);
        // The model's initial position in specimen units: the target of the bumpless start.
        for k in 0..self.d.len() {
            self.desired[k] = self.d[k] / self.s_d;
            self.vd_prev[k] = 0.0;
        }
        let target = self.desired.clone();
        let dt_c = self.dt_c;
        let records = &mut self.records;
        records.set_growable(true);
        // The last tick of the start on record: a refused tick is the one after it.
        let mut recorded: Option<u64> = None;
        let mut on_tick = |tick: u64, cmd: &[ActuatorCommand], f: &[f64], x: &[f64]| {
            recorded = Some(tick);
            // The bumpless start's rows have no noise-free columns (NaN): the safety layer
            // drives it and does not hand the transfer system to this observer.
            records.push_tick(t, tick as f64 * dt_c, |k| cmd[k].d, cmd, x, f, 0.0, None);
        };
        let clock = &mut self.clock;
        let mut pace = || {
            if let Some(c) = clock.as_mut() {
                c.wait_tick();
            }
        };
        let approach = self.safety.approach(
            &target,
            &mut self.force,
            &mut self.achieved,
            &mut on_tick,
            &mut pace,
        );
        self.records.set_growable(false);
        match approach {
            Ok(ticks) => self.tick = ticks,
            Err(e) => {
                self.tick = recorded.map_or(0, |tick| tick + 1);
                if let PortError::Safety(ev) = &e {
                    self.event = Some(*ev);
                    self.record(t);
                }
                return Err(e);
            }
        }
        for k in 0..self.d.len() {
            self.cmd[k] = ActuatorCommand {
                d: target[k],
                v: 0.0,
                a: 0.0,
            };
            if let Some(c) = &mut self.delay[k] {
                c.reset(target[k]);
            }
            if let Some(c) = &mut self.inverse[k] {
                c.reset(target[k]);
            }
            if let Some(c) = &mut self.adaptive[k] {
                c.reset(target[k]);
            }
            if let Some(c) = &mut self.target_chain[k] {
                c.reset(target[k]);
            }
            if let Some(c) = &mut self.command_chain[k] {
                c.reset(target[k]);
            }
            self.last_command[k] = target[k];
            self.largest_jump[k] = 0.0;
            self.work_f[k] = self.force[k] * self.s_f;
            self.work_d[k] = self.d[k];
            self.rest_f[k] = self.work_f[k];
            self.rest_d[k] = self.work_d[k];
        }
        self.work = 0.0;
        let stored = self.stored_energy();
        self.divergence.start_energy(stored);
        self.dof_forces(t, force);
        Ok(())
    }

    fn command(
        &mut self,
        at: &Tick,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        let t = at.time();
        self.tick += 1;
        let tick = self.tick;
        if let Some(ev) = self.safety.event() {
            return Err(self.fail(ev, t));
        }
        if let Some(value) = self.divergence.observe_displacement(t, u) {
            let ev = SafetyEvent {
                kind: EventKind::Divergence,
                tick,
                time: t,
                actuator: None,
                value,
                // NaN: the growth criterion fired (the bound was not reached).
                limit: if value.abs() > self.recipe.config.safety.divergence.displacement {
                    self.recipe.config.safety.divergence.displacement
                } else {
                    f64::NAN
                },
            };
            self.safety.trip(ev);
            return Err(self.fail(ev, t));
        }
        self.u_trial.copy_from_slice(u);
        self.map.to_actuators(u, &mut self.d);
        self.map.velocities_to_actuators(u, v, &mut self.vd);
        let lam = self.lambda;
        for k in 0..self.d.len() {
            let (d, vd) = if self.s_d == 1.0 {
                (self.d[k], self.vd[k])
            } else {
                (self.d[k] / self.s_d, self.vd[k] / self.s_d)
            };
            let a = (vd - self.vd_prev[k]) / self.dt_p;
            self.vd_prev[k] = vd;
            self.desired[k] = d;
            let mut dc = d;
            if let Some(c) = &mut self.target_chain[k] {
                dc = c.step(dc);
            }
            if let Some(c) = &mut self.adaptive[k] {
                dc = c.apply(dc);
            }
            if let Some(c) = &mut self.delay[k] {
                dc = c.apply(dc);
            }
            if let Some(c) = &mut self.inverse[k] {
                dc = c.apply(dc);
            }
            if let Some(c) = &self.compliance[k] {
                dc = compliance(c, dc, self.force[k]);
            }
            if let Some(c) = &mut self.command_chain[k] {
                dc = c.step(dc);
            }
            let jump = (dc - self.last_command[k]).abs();
            if jump > self.largest_jump[k] {
                self.largest_jump[k] = jump;
            }
            self.last_command[k] = dc;
            self.cmd[k] = ActuatorCommand {
                d: dc,
                v: if lam == 1.0 { vd } else { vd / lam },
                a: a / (lam * lam),
            };
        }
        let t_wall = tick as f64 * self.dt_c;
        if let Err(ev) = self.safety.exchange(
            tick,
            t,
            t_wall,
            &self.cmd,
            &mut self.force,
            &mut self.achieved,
        ) {
            return Err(self.fail(ev, t));
        }
        for k in 0..self.d.len() {
            if let Some(c) = &mut self.adaptive[k] {
                c.observe(self.cmd[k].d, self.achieved[k]);
            }
        }
        // Energy-growth bound: work of the measured force on the commanded prototype
        // displacement (trapezoidal rule), checked on every measurement.
        for k in 0..self.d.len() {
            let f = self.force[k] * self.s_f;
            self.work += 0.5 * (f + self.work_f[k]) * (self.d[k] - self.work_d[k]);
            self.work_f[k] = f;
            self.work_d[k] = self.d[k];
        }
        let stored = self.stored_energy();
        if let Some(value) = self.divergence.observe_energy(-self.work, stored) {
            let ev = SafetyEvent {
                kind: EventKind::DivergenceEnergy,
                tick,
                time: t,
                actuator: None,
                value,
                limit: self.divergence.energy_bound(),
            };
            self.safety.trip(ev);
            return Err(self.fail(ev, t));
        }
        self.dof_forces(t, force);
        self.record(t);
        Ok(())
    }

    fn measured_displacement(&self, out: &mut [f64]) -> bool {
        // The control error of every actuator (measured − desired, specimen units) mapped to
        // the DOFs and added to the last commanded DOF displacement.
        const MAX: usize = 32;
        let na = self.desired.len();
        if na > MAX || out.len() != self.u_trial.len() {
            return false;
        }
        let mut e = [0.0; MAX];
        for ((e, m), d) in e.iter_mut().zip(&self.achieved).zip(&self.desired) {
            *e = m - d;
        }
        if !self.map.errors_to_dofs(&e[..na], out) {
            return false;
        }
        for (o, u) in out.iter_mut().zip(&self.u_trial) {
            *o += u;
        }
        true
    }

    fn potential_energy(&self) -> Option<f64> {
        // What the laboratory measured: the work of the specimen's measured force on the
        // commanded displacement since the start (trapezoidal, prototype units) — the same
        // quantity for the virtual lab, hardware and a network link, so that a test gives
        // the same energies whichever transfer system carries it.
        Some(self.work)
    }

    fn try_clone(&self) -> Option<Box<dyn PhysicalSubstructure>> {
        Self::from_recipe(self.recipe.clone())
            .ok()
            .map(|p| Box::new(p) as Box<dyn PhysicalSubstructure>)
    }

    fn lab(&self) -> Option<&dyn LabControl> {
        Some(self)
    }

    fn lab_mut(&mut self) -> Option<&mut dyn LabControl> {
        Some(self)
    }
}

impl LabControl for LabProvider {
    fn lab_columns(&self) -> Vec<String> {
        self.recipe.columns.clone()
    }

    fn set_tick_clock(&mut self, clock: Box<dyn super::TickClock>) {
        self.clock = Some(clock);
    }

    fn drain_lab(&mut self, sink: &mut dyn FnMut(&[f64])) {
        self.records.drain(sink);
    }

    fn set_records_kept(&mut self, kept: bool) {
        self.records_kept = kept;
    }

    fn trip(&mut self, kind: EventKind, t: f64) {
        let ev = SafetyEvent {
            kind,
            tick: self.tick,
            time: t,
            actuator: None,
            value: f64::NAN,
            limit: f64::NAN,
        };
        let was_armed = self.safety.state() == SafetyState::Armed;
        self.safety.trip(ev);
        if self.event.is_none() {
            self.event = self.safety.event();
        }
        // The trip itself is a lab record (the layer's state changes without a command).
        if was_armed {
            self.record(t);
        }
    }

    fn event(&self) -> Option<SafetyEvent> {
        self.safety.event().or(self.event)
    }

    fn ramp_tick(&mut self) -> bool {
        let Some(event) = self.safety.event() else {
            return false;
        };
        if self.safety.ramp_state() != super::RampState::Ramping {
            return false;
        }
        self.tick += 1;
        let tick = self.tick;
        let more = self.safety.ramp_tick(
            tick,
            event.time,
            tick as f64 * self.dt_c,
            &mut self.cmd,
            &mut self.force,
            &mut self.achieved,
        );
        for k in 0..self.cmd.len() {
            self.desired[k] = self.cmd[k].d;
        }
        self.record(event.time);
        more
    }

    fn safety_summary(&self) -> SafetySummary {
        SafetySummary {
            armed: self.safety.state() == SafetyState::Armed,
            event: self.safety.event().or(self.event),
            actuators: self.actuator_names(),
            max_sent: self.safety.max_sent().to_vec(),
            limits: self.safety.limits().to_vec(),
            commands_sent: self.safety.sent(),
            lab_records_dropped: self.records.dropped(),
            energy_generated: -self.work,
            energy_bound: self.divergence.energy_bound(),
            energy_peak: self.divergence.energy_peak(),
            ramp: self.safety.ramp_state(),
            ramp_commands: self.safety.ramp_commands(),
            second_event: self.safety.second_event(),
            transfer_fault: self.safety.transfer_fault_message().map(str::to_string),
            transfer_statistics: self.safety.inner().statistics(),
            largest_command_jump: self.largest_jump.clone(),
            compensation_statistics: self.compensation_statistics(),
        }
    }

    fn is_virtual(&self) -> bool {
        self.safety.inner().is_virtual()
    }

    fn seeds(&self) -> Vec<(String, u64)> {
        self.safety
            .inner()
            .seeds()
            .into_iter()
            .map(|(k, s)| (format!("{}.{k}", self.recipe.name), s))
            .collect()
    }

    fn transfer_request(&self) -> TransferRequest {
        let lab = &self.recipe.config.lab;
        TransferRequest {
            substructure: self.recipe.name.clone(),
            kind: lab.transfer,
            link: lab.link.clone(),
            actuators: self.actuator_names(),
            dt_c: self.dt_c,
        }
    }

    fn attach_transfer(&mut self, transfer: Box<dyn TransferSystem>) -> Result<(), String> {
        self.safety.replace_transfer(transfer)
    }

    fn virtual_twin(&self) -> Box<dyn TransferSystem> {
        Box::new(
            self.recipe
                .virtual_lab(&self.map, &self.actuator_settings()),
        )
    }
}

impl Recipe {
    /// The virtual laboratory of these settings (a fresh specimen, the injected faults).
    fn virtual_lab(
        &self,
        map: &SetupMap,
        settings: &[crate::model::lab::ActuatorSettings],
    ) -> VirtualLab {
        let cfg = &self.config;
        let ts = cfg.lab.time_scale;
        VirtualLab::new(
            NumericalSpecimen::new(self.dofs.len(), self.specimen.clone()),
            map.clone(),
            settings,
            cfg.lab.seed,
            ts.dt_c,
            ts.lambda,
            cfg.lab.geometric_scale,
            cfg.lab.force_scale * cfg.lab.device_multiplier,
            &self.k_specimen,
            self.inertia.clone(),
        )
        .with_faults(&cfg.lab.faults)
        .with_degradation(&cfg.lab.degradation)
    }
}

/// The setup map of the actuators `act` (indices into `[[lab.actuator]]`, in command order) of
/// a substructure over its partition `dofs`: the linear rows of `t` and the kinematic setups of
/// `[[lab.setup]]` those actuators belong to. Without setups it is today's `T` (bit for bit).
fn setup_map(
    config: &LabConfig,
    act: &[usize],
    dofs: &[DofRef],
    t: &[f64],
) -> Result<SetupMap, String> {
    let n = dofs.len();
    let actuators = &config.lab.actuators;
    let mut rows = Vec::new();
    let mut parts = Vec::new();
    let mut done = Vec::new();
    for (k, &i) in act.iter().enumerate() {
        let Some(j) = actuators[i].setup else {
            rows.push((k, t[k * n..(k + 1) * n].to_vec()));
            continue;
        };
        if done.contains(&j) {
            continue;
        }
        done.push(j);
        let settings = &config.lab.setups[j];
        let setup = super::setup::build(settings).map_err(|e| format!("lab.setup[{j}]: {e}"))?;
        let members = settings
            .actuators
            .iter()
            .map(|name| {
                act.iter()
                    .position(|&i| actuators[i].name == *name)
                    .ok_or_else(|| {
                        format!("lab.setup[{j}]: actuator `{name}` loads another substructure")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let places = settings
            .dofs
            .iter()
            .map(|d| {
                dofs.iter()
                    .position(|x| x.node == d.0 && x.dof == d.1)
                    .ok_or_else(|| {
                        format!(
                            "lab.setup[{j}]: node {} dof {} is outside the substructure",
                            d.0, d.1
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        parts.push(Placed {
            setup: Box::new(setup),
            actuators: members,
            dofs: places,
            displacement_scale: settings.displacement_scale.clone(),
            force_scale: settings.force_scale.clone(),
        });
    }
    SetupMap::new(act.len(), n, rows, parts, config.lab.geometric_scale)
}
