//! A simulation: a validated model, its integrator and its recorder.

use crate::assembly::{linearize, rayleigh_coefficients};
use crate::error::ModelError;
use crate::integrators::StepError;
use crate::integrators::{self, TimeIntegrator};
use crate::modal;
use crate::model::{IntegratorKind, Model};
use crate::output::{Column, Recorder};
use std::fmt::Write;

/// The largest model (DOFs over every partition) whose [`Simulation::summary`] lists the modes
/// of the linearized coupled model: their dense eigenanalysis takes `O(N²)` memory and `O(N³)`
/// time.
pub const SUMMARY_MODES_MAX_DOFS: usize = 2000;

/// The size (unknowns of the effective matrix) below which `threads = 2` is reported as slower
/// than one thread (issue 20, session 23: the 990-DOF frame's step 17 → 26 µs with two
/// threads, the 2000-DOF one equal, the 3000-DOF one −21 %, with both cores free).
const TWO_CORES_FROM: usize = 3000;

/// A model ready to run.
pub struct Simulation {
    /// The model.
    pub model: Model,
    /// Its integrator.
    pub integrator: Box<dyn TimeIntegrator>,
    recorder: Recorder,
    /// Online model updating of `[updating]`, applied after every step as in a run.
    updating: Option<crate::online_updating::OnlineUpdating>,
}

impl Simulation {
    /// Build the integrator and recorder for `model`.
    pub fn new(model: Model) -> Result<Self, ModelError> {
        let mut integrator = integrators::build(&model)?;
        let recorder = Recorder::new(&model, integrator.as_ref());
        let updating = crate::online_updating::OnlineUpdating::new(
            &model,
            integrator.as_mut(),
            model.analysis.n_steps(),
        )?;
        Ok(Self {
            model,
            integrator,
            recorder,
            updating,
        })
    }

    /// Number of coarse steps of the whole analysis.
    pub fn n_steps(&self) -> u64 {
        self.model.analysis.n_steps()
    }

    /// One coarse step; with `[updating]`, then the online updating's work after it (the
    /// previous update's estimates applied, a new update), as in `runner::run`.
    pub fn step(&mut self) -> Result<(), StepError> {
        self.integrator.step()?;
        if let Some(u) = self.updating.as_mut() {
            u.after_step(self.integrator.as_mut());
        }
        Ok(())
    }

    /// The online model updating of `[updating]`, if the model has one: its estimates,
    /// state and record ([`crate::online_updating::OnlineUpdating`]).
    pub fn updating(&self) -> Option<&crate::online_updating::OnlineUpdating> {
        self.updating.as_ref()
    }

    /// The online model updating, mutable (e.g. to reach its refactorizer in a test).
    pub fn updating_mut(&mut self) -> Option<&mut crate::online_updating::OnlineUpdating> {
        self.updating.as_mut()
    }

    /// Recorded columns (made on demand from the recorder's packed names).
    pub fn columns(&self) -> Vec<Column> {
        self.recorder.columns(self.integrator.as_ref())
    }

    /// Number of recorded columns (the length of a row).
    pub fn n_columns(&self) -> usize {
        self.recorder.n_columns()
    }

    /// The recorder (column names and units without making every [`Column`]).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Fill a row with the current values (allocation-free).
    pub fn record(&mut self, row: &mut [f64]) {
        self.recorder.record(self.integrator.as_mut(), row)
    }

    /// Initial multipliers Λ0 with their DOFs (partitioned schemes).
    pub fn initial_multipliers(&self) -> Vec<(String, f64)> {
        match self.integrator.interface() {
            Some(iface) => iface
                .dofs
                .iter()
                .zip(self.integrator.initial_multipliers())
                .map(|(d, l)| (format!("{}", d.dof), *l))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// One line of what the results rows hold: the number of columns, every how many steps,
    /// and the `[output]` selection (`nodes`, `dofs`, element names) with what is always kept.
    fn recorded_summary(&self) -> String {
        let o = &self.model.output;
        let list = |v: &[String]| v.join(", ");
        let mut line = format!(
            "recorded: {} columns every {} step(s)",
            self.recorder.n_columns(),
            o.every
        );
        let sel = o.selection.as_ref();
        let nodes = sel.and_then(|s| s.nodes.as_ref()).map(|n| {
            n.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        });
        let dofs = sel.and_then(|s| s.dofs.as_deref());
        if nodes.is_some() || dofs.is_some() {
            line += &format!(
                "; nodes [{}], DOFs [{}] (and the physical and interface DOFs)",
                nodes.as_deref().unwrap_or("all"),
                dofs.map_or("all".into(), list)
            );
        } else {
            line += "; every node and DOF";
        }
        line += &match (o.elements, sel.and_then(|s| s.elements.as_deref())) {
            (false, _) => "; no elements".to_string(),
            (true, Some(names)) => format!("; elements [{}]", list(names)),
            (true, None) => "; every element".to_string(),
        };
        line += if o.energy {
            "; energies"
        } else {
            "; no energies"
        };
        line += match o.format {
            crate::model::OutputFormat::Csv => "; format csv (results.csv)",
            crate::model::OutputFormat::Binary => {
                "; format binary (results.bin, little-endian f64 rows)"
            }
        };
        line
    }

    /// Human-readable summary: substructures, interface, time steps, modes (modes only up to
    /// [`SUMMARY_MODES_MAX_DOFS`] DOFs).
    pub fn summary(&self) -> String {
        let m = &self.model;
        let a = &m.analysis;
        let mut s = String::new();
        let u = &m.units;
        let _ = writeln!(
            s,
            "model: {}{}",
            m.source,
            if m.title.is_empty() {
                String::new()
            } else {
                format!(" — {}", m.title)
            }
        );
        let _ = writeln!(
            s,
            "units: length {}, force {}, time {}, mass {}, g = {} {}/{}^2",
            u.length,
            u.force,
            u.time,
            u.mass_unit(),
            u.gravity(),
            u.length,
            u.time
        );
        // Nonlinear numerical partitions: the converged solve (the default) or a fixed
        // number of corrections (`analysis.nonlinear_solver`).
        let alpha = matches!(
            a.integrator,
            IntegratorKind::MgAlpha | IntegratorKind::PgAlpha
        );
        let nonlinear = match a.nonlinear_tolerance.filter(|_| alpha) {
            Some(tolerance) if a.nonlinear_newton => format!(
                "nonlinear_solver = newton (current tangent, re-factored every iteration) to \
                 {tolerance:e} in at most {} iterations",
                a.nonlinear_max_iterations
            ),
            Some(tolerance) => format!(
                "nonlinear_solver = converged to {tolerance:e} in at most {} iterations",
                a.nonlinear_max_iterations
            ),
            None if alpha => format!(
                "nonlinear_solver = corrections, corrections = {}",
                a.corrections
            ),
            None => format!("corrections = {}", a.corrections),
        };
        // PG-α's split of the interface force, when it is not the published one.
        let predictor = match a.multiplier_predictor {
            crate::model::MultiplierPredictor::None => String::new(),
            p => format!(", multiplier_predictor = {}", p.name()),
        };
        // PG-α's link operator on the current tangent (issue 17), when asked for.
        let predictor = if a.link_current_tangent && a.integrator == IntegratorKind::PgAlpha {
            format!(
                "{predictor}, link_tangent = current (the numerical link operator and H \
                 rebuilt every step{})",
                if self.integrator.nonlinear_solve().is_some() {
                    ""
                } else {
                    "; no effect: the numerical substructure is linear"
                }
            )
        } else {
            predictor
        };
        let _ = writeln!(
            s,
            "integrator: {} (rho_inf = {}, {nonlinear}{predictor})",
            a.integrator.name(),
            a.rho_inf,
        );
        if a.threads > 1 {
            let _ = match self.integrator.solve_parts() {
                Some((na, nb, ns)) => writeln!(
                    s,
                    "threads = {}: the effective matrix in two parts of {na} and {nb} unknowns \
                     and a separator of {ns}, the second part on a worker thread{}",
                    a.threads,
                    if na + nb + ns < TWO_CORES_FROM {
                        " (below about 3000 unknowns the hand-overs between the cores cost \
                         more than the second core saves: one thread is faster)"
                    } else {
                        ""
                    }
                ),
                None => writeln!(
                    s,
                    "threads = {}: not used (only for a linear numerical substructure with \
                     Rayleigh damping whose effective matrix is banded and wide enough)",
                    a.threads
                ),
            };
        }
        let _ = write!(s, "time steps: numerical dt = {} {}", a.time_step, u.time);
        if a.integrator == IntegratorKind::PgAlpha {
            let _ = write!(
                s,
                ", subcycles = {}, physical dt = {} {}",
                a.subcycles,
                a.time_step / a.subcycles as f64,
                u.time
            );
        }
        let _ = writeln!(
            s,
            ", duration = {} {} ({} steps)",
            a.duration,
            u.time,
            a.n_steps()
        );
        if let Some(lab) = &m.lab {
            let l = &lab.lab;
            let _ = writeln!(
                s,
                "lab: {:?} transfer system, {:?} regime, noise seed {}\n  {}",
                l.transfer,
                l.regime,
                l.seed,
                l.time_scale.describe(&u.time)
            );
        }
        for p in self.integrator.partitions() {
            let st = &p.state;
            let kind = if st.physical { "physical" } else { "numerical" };
            let _ = writeln!(
                s,
                "substructure `{}` ({kind}): {} DOFs [{}], {} extra states, {} computed elements",
                st.name,
                st.n_dofs(),
                st.dofs
                    .iter()
                    .map(|d| format!("{}.{}", d.node, d.dof))
                    .collect::<Vec<_>>()
                    .join(", "),
                st.n_states,
                st.slots.len()
            );
            if let Some(port) = &p.physical {
                let _ = writeln!(s, "  specimen: {}", port.substructure().describe());
            }
        }
        if let Some(iface) = self.integrator.interface() {
            let _ = writeln!(s, "interface: {} multiplier(s)", iface.len());
            let parts = self.integrator.partitions();
            for (k, d) in iface.dofs.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "  lambda[{k}] on {}: +Λ on `{}`, −Λ on `{}`, Λ0 = {:.6e} {}",
                    d.dof,
                    parts[d.plus].state.name,
                    parts[d.minus].state.name,
                    self.integrator
                        .initial_multipliers()
                        .get(k)
                        .copied()
                        .unwrap_or(0.0)
                        + 0.0,
                    u.force_unit(&d.dof.dof)
                );
            }
            let _ = writeln!(
                s,
                "  Steklov-Poincaré operator H = {:?}",
                iface.h.as_slice()
            );
        }
        for e in &m.elements {
            if let Some(law) = e.element.law_summary() {
                let _ = writeln!(s, "element `{}` ({}): {law}", e.name, e.element.kind());
            }
        }
        let _ = writeln!(s, "{}", self.recorded_summary());
        for g in &m.ground_motions {
            let _ = writeln!(
                s,
                "ground motion along `{}`: {} (PGA {:.4} g)",
                g.direction, g.description, g.pga_g
            );
        }
        for l in &m.loads {
            let _ = writeln!(s, "load on {}", l.dof);
        }
        if let Some(up) = &m.updating {
            let name = |i: usize| &*m.elements[i].name;
            let receivers: Vec<&str> = up.receivers.iter().map(|&i| name(i)).collect();
            let _ = writeln!(
                s,
                "updating: `{}` identified ({}), every {} step(s), estimates to [{}] one step \
                 later; refactorize = \"{}\"{}",
                name(up.identify),
                up.parameters.join(", "),
                up.period,
                receivers.join(", "),
                up.refactorize.name(),
                match up.refactorize {
                    crate::model::updating::Refactorize::Never => " (D and H kept from the start)",
                    crate::model::updating::Refactorize::OnUpdate =>
                        " (D^N, and for pg-alpha Q^N and H, rebuilt off the real-time path and \
                         swapped in with the estimate)",
                }
            );
        }
        // Modes of the linearized coupled model: a dense eigenanalysis, O(N²) memory and O(N³)
        // time, so only up to `SUMMARY_MODES_MAX_DOFS` (a 10⁴-DOF chain took 13 minutes).
        let n_dofs = self.integrator.total_dofs();
        if n_dofs > SUMMARY_MODES_MAX_DOFS {
            match &m.rayleigh {
                Some(crate::model::Rayleigh::Coefficients { alpha, beta }) => {
                    let _ = writeln!(
                        s,
                        "Rayleigh damping: alpha = {alpha:.6e} 1/{}, beta = {beta:.6e} {}",
                        u.time, u.time
                    );
                }
                Some(crate::model::Rayleigh::Modal { modes, ratios }) => {
                    let _ = writeln!(s, "Rayleigh damping: ratios {ratios:?} at modes {modes:?}");
                }
                None => {}
            }
            let _ = writeln!(
                s,
                "modes: not computed for {n_dofs} DOFs (the summary's dense eigenanalysis stops \
                 at {SUMMARY_MODES_MAX_DOFS} DOFs)"
            );
            return s;
        }
        let lin = linearize(m);
        let (alpha, beta) = rayleigh_coefficients(m)
            .ok()
            .flatten()
            .unwrap_or((0.0, 0.0));
        if alpha != 0.0 || beta != 0.0 {
            let _ = writeln!(
                s,
                "Rayleigh damping: alpha = {alpha:.6e} 1/{}, beta = {beta:.6e} {}",
                u.time, u.time
            );
            let hysteretic = m.elements.iter().filter(|e| {
                e.rayleigh && e.element.linear_stiffness().is_none() && {
                    crate::elements::rayleigh_stiffness(e.element.as_ref()).is_some()
                }
            });
            let count = hysteretic.count();
            if beta != 0.0 && count > 0 {
                let _ = writeln!(
                    s,
                    "Rayleigh stiffness of the {count} hysteretic element(s): {} ({})",
                    m.rayleigh_stiffness.name(),
                    match m.rayleigh_stiffness {
                        crate::model::RayleighStiffness::Initial =>
                            "beta K_0, the initial stiffness",
                        crate::model::RayleighStiffness::Committed => {
                            "beta K_c, the tangent of the state each step starts from"
                        }
                        crate::model::RayleighStiffness::Current => {
                            "beta K_t, the tangent of the current state"
                        }
                    }
                );
            }
        }
        // Imposed DOFs follow their prescribed motion: the modes are those of the model with
        // them restrained (fixed), as in Hovmand et al. (2022), §3 (no rigid-body mode, no
        // massless supports).
        let keep: Vec<usize> = (0..lin.dofs.len())
            .filter(|&i| !m.imposed_motions.iter().any(|im| im.dof == lin.dofs[i]))
            .collect();
        let restrained = lin.dofs.len() - keep.len();
        let sub = |a: &nalgebra::DMatrix<f64>| a.select_rows(&keep).select_columns(&keep);
        let (mm, kk) = (sub(&lin.m), sub(&lin.k));
        match modal::modes(&mm, &kk) {
            Ok(modes) => {
                let c = sub(&(&lin.c + &lin.m_rayleigh * alpha + &lin.k_rayleigh * beta));
                let zeta = modal::damping_ratios(&modes, &c);
                let _ = writeln!(
                    s,
                    "modes of the linearized coupled model ({} DOFs{}):",
                    keep.len(),
                    if restrained > 0 {
                        format!(", the {restrained} imposed-motion DOF(s) restrained as fixed")
                    } else {
                        String::new()
                    }
                );
                let _ = writeln!(
                    s,
                    "  mode   omega [rad/{t}]   period [{t}]   damping ratio",
                    t = u.time
                );
                for (i, (w, z)) in modes.omega.iter().zip(&zeta).enumerate() {
                    let period = if *w > 0.0 {
                        2.0 * std::f64::consts::PI / w
                    } else {
                        f64::INFINITY
                    };
                    let _ = writeln!(
                        s,
                        "  {:>4}   {:>14.6}   {:>12.6}   {:>12.6}",
                        i + 1,
                        w,
                        period,
                        z
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(s, "modes: not available ({e})");
            }
        }
        s
    }
}
