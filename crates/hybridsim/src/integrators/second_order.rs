//! The second-order form `M a + C v + r(d, v) = f(t)` of a whole model, as the full-operator
//! method and operator splitting see it ([`super::Fom`], [`super::Osm`]).
//!
//! - `M`: the mass of every element over all free DOFs (constant; must be non-singular);
//! - `C`: the damping at rest `∂r/∂v` of every numerical element (dashpots, Rayleigh terms,
//!   linear elements), treated implicitly by the schemes;
//! - `r(d, v)`: the restoring force, evaluated **once per step** at the displacement and
//!   velocity the scheme commands — the numerical elements through their displacement-driven
//!   form ([`crate::elements::ElementDriver`], their extra states integrated along the path,
//!   every evaluation committed) minus `C v`, plus the force measured on every physical
//!   substructure through its port (the virtual lab, a network transfer system, or the
//!   numerical stand-in without a `[lab]`);
//! - `K_I`: the initial stiffness, the numerical elements' `K0` plus the `estimate` of every
//!   physical substructure.
//!
//! Partition 0 of [`SecondOrder::partitions`] is the numerical model (its state `[d; v; s]`
//! is the corrected response); each physical partition holds the state its specimen was
//! commanded to (the predictor of FOM and OSM).

// Index loops over small dense matrices, written out so that nothing allocates per step.
#![allow(clippy::needless_range_loop)]

use super::StepError;
use crate::assembly::{build_partitions, Grouping, Partition};
use crate::elements::driver::initial_matrices;
use crate::elements::ElementDriver;
use crate::error::ModelError;
use crate::model::Model;
use crate::physical::PortError;
use nalgebra::{DMatrix, DVector};

struct Slot {
    name: String,
    driver: ElementDriver,
    map: Vec<Option<usize>>,
    state_offset: usize,
    u: Vec<f64>,
    v: Vec<f64>,
}

struct Link {
    rows: Vec<usize>,
    measured: Vec<f64>,
    y: DVector<f64>,
    ydot: DVector<f64>,
}

/// A model in second-order form with its physical ports (module docs).
pub struct SecondOrder {
    parts: Vec<Partition>,
    links: Vec<Link>,
    slots: Vec<Slot>,
    n: usize,
    /// Mass `M`.
    pub mass: DMatrix<f64>,
    /// Damping `C`.
    pub damping: DMatrix<f64>,
    /// Initial stiffness `K_I`.
    pub initial_stiffness: DMatrix<f64>,
    /// `[d; v; s]` of the numerical model.
    y: DVector<f64>,
    ydot: DVector<f64>,
    load: DVector<f64>,
    prev_t: f64,
    threshold: f64,
}

impl SecondOrder {
    /// Build from `model` (network laboratories connected by `connector`); `scheme` names the
    /// integrator in messages.
    pub fn new(
        model: &Model,
        connector: Option<&dyn crate::physical::transfer::TransferConnector>,
        scheme: &str,
    ) -> Result<Self, ModelError> {
        let refuse = |field: &str, why: String| {
            ModelError::single(&model.source, field, format!("{scheme}: {why}"))
        };
        if !model.imposed_motions.is_empty() {
            return Err(refuse(
                "imposed_motion",
                "imposed motions are not supported (use pg-alpha or llm)".into(),
            ));
        }
        if let Some(lab) = &model.lab {
            if model.analysis.subcycles != 1 {
                return Err(refuse(
                    "analysis.subcycles",
                    "the scheme commands the specimen once per step: ss must be 1".into(),
                ));
            }
            let _ = lab;
        }
        let mut numerical_model = model.clone();
        numerical_model.elements.retain(|e| {
            !(model.substructures[e.substructure as usize].physical
                && e.role == crate::model::Role::Specimen)
        });
        if let Some((alpha, beta)) = crate::assembly::rayleigh_coefficients(model)? {
            numerical_model.rayleigh = Some(crate::model::Rayleigh::Coefficients { alpha, beta });
        }
        numerical_model.lab = None;
        let numerical = build_partitions(&numerical_model, Grouping::Monolithic)?
            .into_iter()
            .next()
            .expect("one partition");
        let n = numerical.state.n_dofs();
        let mass = numerical.state.mass().clone();
        if mass.clone().lu().try_inverse().is_none() {
            return Err(refuse(
                "element",
                "the mass matrix is singular: every free DOF needs a mass".into(),
            ));
        }
        let mut damping = DMatrix::zeros(n, n);
        let mut stiffness = DMatrix::zeros(n, n);
        let mut slots = Vec::new();
        for slot in &numerical.state.slots {
            let (k0, c0) = initial_matrices(slot.element.as_ref());
            let map = numerical.state.map_of(slot).to_vec();
            scatter(&mut stiffness, &k0, &map);
            scatter(&mut damping, &c0, &map);
            let s0 = &numerical.state.y0.as_slice()
                [2 * n + slot.state_offset()..2 * n + slot.state_offset() + slot.n_states()];
            let driver = ElementDriver::from_shared(&slot.element, s0)
                .map_err(|e| refuse("element", format!("element `{}`: {e}", slot.name())))?;
            let ne = map.len();
            slots.push(Slot {
                name: slot.name().to_string(),
                driver,
                map,
                state_offset: slot.state_offset(),
                u: vec![0.0; ne],
                v: vec![0.0; ne],
            });
        }
        let mut physical: Vec<Partition> = build_partitions(model, Grouping::Partitioned)?
            .into_iter()
            .filter(|p| p.state.physical)
            .collect();
        super::connect_labs(&mut physical, connector)
            .map_err(|e| ModelError::single(&model.source, "lab.link", e))?;
        let size = numerical.state.size();
        let y = numerical.state.y0.clone();
        let mut parts = vec![numerical];
        let mut links = Vec::new();
        for mut p in physical {
            if p.physical.is_none() {
                return Err(refuse(
                    "substructure",
                    format!("substructure `{}` has no physical port", p.state.name),
                ));
            }
            let mut rows = Vec::new();
            for d in p.state.dofs.iter() {
                let Some(r) = parts[0].state.dofs.iter().position(|x| x == d) else {
                    return Err(refuse(
                        &format!("substructure.{}", p.state.name),
                        format!(
                            "DOF {d} has no mass: the scheme integrates M a + C v + r = f over \
                             every DOF, so each needs a mass"
                        ),
                    ));
                };
                rows.push(r);
            }
            if let Some(est) = &p.state.estimate {
                for (a, da) in est.dofs.iter().enumerate() {
                    let Some(i) = parts[0].state.dofs.iter().position(|x| x == da) else {
                        continue;
                    };
                    for (b, db) in est.dofs.iter().enumerate() {
                        if let Some(j) = parts[0].state.dofs.iter().position(|x| x == db) {
                            stiffness[(i, j)] += est.stiffness[(a, b)];
                        }
                    }
                }
            }
            let ps = p.state.size();
            p.index = parts.len();
            links.push(Link {
                measured: vec![0.0; rows.len()],
                rows,
                y: DVector::zeros(ps),
                ydot: DVector::zeros(ps),
            });
            parts.push(p);
        }
        let threshold = model.lab.as_ref().map_or(0.0, |l| {
            l.lab
                .actuators
                .iter()
                .map(|a| a.displacement_resolution)
                .filter(|r| *r > 0.0)
                .fold(f64::INFINITY, f64::min)
                .min(f64::MAX)
                * l.lab.geometric_scale
                * 2.5
        });
        let threshold = if threshold.is_finite() {
            threshold
        } else {
            0.0
        };
        Ok(Self {
            parts,
            links,
            slots,
            n,
            mass,
            damping,
            initial_stiffness: stiffness,
            y,
            ydot: DVector::zeros(size),
            load: DVector::zeros(size),
            prev_t: 0.0,
            threshold,
        })
    }

    /// Number of DOFs.
    pub fn n_dofs(&self) -> usize {
        self.n
    }

    /// Initial displacement and velocity `(d0, v0)`.
    pub fn initial(&self) -> (DVector<f64>, DVector<f64>) {
        let n = self.n;
        let y0 = &self.parts[0].state.y0;
        (
            DVector::from_column_slice(&y0.as_slice()[..n]),
            DVector::from_column_slice(&y0.as_slice()[n..2 * n]),
        )
    }

    /// Default threshold of the estimator's rule 2: 2.5 × the finest displacement resolution
    /// of the lab's actuators, in model units (0 without one).
    pub fn default_threshold(&self) -> f64 {
        self.threshold
    }

    /// External load `f(t)` into `out` (length n). Allocation-free.
    pub fn external(&mut self, t: f64, out: &mut [f64]) {
        let n = self.n;
        self.parts[0].state.load(t, self.load.as_mut_slice());
        out.copy_from_slice(&self.load.as_slice()[n..2 * n]);
    }

    fn numerical_force(
        &mut self,
        dt: f64,
        d: &[f64],
        v: &[f64],
        r: &mut [f64],
        commit: bool,
    ) -> Result<(), String> {
        r.iter_mut().for_each(|x| *x = 0.0);
        for slot in &mut self.slots {
            for (i, m) in slot.map.iter().enumerate() {
                (slot.u[i], slot.v[i]) = m.map_or((0.0, 0.0), |k| (d[k], v[k]));
            }
            slot.driver
                .set_trial(dt, &slot.u, &slot.v)
                .map_err(|e| format!("element `{}`: {e}", slot.name))?;
            if commit {
                slot.driver.commit();
            }
            for (i, m) in slot.map.iter().enumerate() {
                if let Some(k) = m {
                    r[*k] += slot.driver.force()[i];
                }
            }
        }
        let n = self.n;
        for i in 0..n {
            let mut cv = 0.0;
            for j in 0..n {
                cv += self.damping[(i, j)] * v[j];
            }
            r[i] -= cv;
        }
        Ok(())
    }

    /// The restoring force at rest at `t0`, `(d0, v0)`: numerical elements evaluated, every
    /// specimen measured at rest. A safety event at rest is latched in the layer and reported
    /// by the first step.
    pub fn at_rest(&mut self, t0: f64, d: &[f64], v: &[f64], r: &mut [f64]) -> Result<(), String> {
        self.prev_t = t0;
        self.numerical_force(0.0, d, v, r, true)?;
        self.store(d, v);
        self.gather_links(d, v);
        for (k, link) in self.links.iter().enumerate() {
            let part = &mut self.parts[k + 1];
            let port = part.physical.as_mut().expect("checked at build");
            match port.measure_at_rest(t0, link.y.as_slice()) {
                Ok(f) => {
                    for (i, row) in link.rows.iter().enumerate() {
                        r[*row] += f[i];
                    }
                }
                Err(PortError::Safety(_)) => {}
                Err(e) => return Err(format!("substructure `{}`: {e}", part.state.name)),
            }
        }
        Ok(())
    }

    /// Command `(d, v)` at `t` once: every numerical element evaluated and committed, every
    /// specimen commanded through its port; the total restoring force into `r`.
    /// Allocation-free.
    pub fn command(
        &mut self,
        t: f64,
        d: &[f64],
        v: &[f64],
        r: &mut [f64],
    ) -> Result<(), StepError> {
        let dt = (t - self.prev_t).max(0.0);
        self.prev_t = t;
        if let Err(e) = self.numerical_force(dt, d, v, r, true) {
            return Err(StepError::from_port(
                &self.parts[0].state.name,
                PortError::Fault(e),
            ));
        }
        self.gather_links(d, v);
        for (k, link) in self.links.iter().enumerate() {
            let part = &mut self.parts[k + 1];
            let port = part.physical.as_mut().expect("checked at build");
            let tick = port.tick(t);
            let f = port
                .command(tick, link.y.as_slice())
                .map_err(|e| StepError::from_port(&part.state.name, e))?;
            for (i, row) in link.rows.iter().enumerate() {
                r[*row] += f[i];
            }
        }
        Ok(())
    }

    /// The displacement control error `d^m − d` of the last command `d` over every DOF whose
    /// port reports a measured displacement (0 elsewhere) into `error`; `false` when no port
    /// reports one. Allocation-free.
    pub fn measured_error(&mut self, d: &[f64], error: &mut [f64]) -> bool {
        error.iter_mut().for_each(|x| *x = 0.0);
        let mut any = false;
        for (k, link) in self.links.iter_mut().enumerate() {
            let port = self.parts[k + 1]
                .physical
                .as_ref()
                .expect("checked at build");
            if port
                .substructure()
                .measured_displacement(&mut link.measured)
            {
                any = true;
                for (i, row) in link.rows.iter().enumerate() {
                    error[*row] = link.measured[i] - d[*row];
                }
            }
        }
        any
    }

    fn gather_links(&mut self, d: &[f64], v: &[f64]) {
        for (k, link) in self.links.iter_mut().enumerate() {
            let np = self.parts[k + 1].state.n_dofs();
            for (i, row) in link.rows.iter().enumerate() {
                link.y[i] = d[*row];
                link.y[np + i] = v[*row];
                link.ydot[i] = v[*row];
            }
        }
    }

    /// Record the corrected response `(d, v)` (and the acceleration `a`, when known) as the
    /// numerical model's state.
    pub fn store(&mut self, d: &[f64], v: &[f64]) {
        let n = self.n;
        self.y.as_mut_slice()[..n].copy_from_slice(d);
        self.y.as_mut_slice()[n..2 * n].copy_from_slice(v);
        self.ydot.as_mut_slice()[..n].copy_from_slice(v);
        for slot in &self.slots {
            let s0 = 2 * n + slot.state_offset;
            let st = slot.driver.states();
            self.y.as_mut_slice()[s0..s0 + st.len()].copy_from_slice(st);
        }
    }

    /// Record the acceleration.
    pub fn store_acceleration(&mut self, a: &[f64]) {
        let n = self.n;
        self.ydot.as_mut_slice()[n..2 * n].copy_from_slice(a);
        for (k, link) in self.links.iter_mut().enumerate() {
            let np = self.parts[k + 1].state.n_dofs();
            for (i, row) in link.rows.iter().enumerate() {
                link.ydot[np + i] = a[*row];
            }
        }
    }

    /// The start of both schemes at `t0`: the initial `(d, v)`, the restoring force `r_0`
    /// measured at rest, the external force `f_0` and `a_0 = M⁻¹(f_0 − C v_0 − r_0)`, stored
    /// as the partitions' state.
    pub fn start(&mut self, t0: f64) -> Result<Start, String> {
        let n = self.n_dofs();
        let (d, v) = self.initial();
        let mut r = DVector::zeros(n);
        self.at_rest(t0, d.as_slice(), v.as_slice(), r.as_mut_slice())?;
        let mut f = DVector::zeros(n);
        self.external(t0, f.as_mut_slice());
        let cv = &self.damping * &v;
        let a = self
            .mass
            .clone()
            .lu()
            .solve(&(&f - cv - &r))
            .ok_or("the mass matrix is singular")?;
        self.store(d.as_slice(), v.as_slice());
        self.store_acceleration(a.as_slice());
        Ok(Start { d, v, a, r, f })
    }

    /// The end of a step of either scheme at `t1`: `d` and `v` checked finite (`what` names
    /// the scheme's state in the error, `step` the step just completed), then `(d, v, a)`
    /// stored as the partitions' state.
    pub fn finish_step(
        &mut self,
        d: &[f64],
        v: &[f64],
        a: &[f64],
        what: &'static str,
        t1: f64,
        step: u64,
    ) -> Result<(), StepError> {
        super::check_finite(d, what, t1, step)?;
        super::check_finite(v, what, t1, step)?;
        self.store(d, v);
        self.store_acceleration(a);
        Ok(())
    }

    /// The partitions: numerical model first, then the physical ones.
    pub fn partitions(&self) -> &[Partition] {
        &self.parts
    }

    /// The partitions, mutably.
    pub fn partitions_mut(&mut self) -> &mut [Partition] {
        &mut self.parts
    }

    /// State of partition `p`.
    pub fn state(&self, p: usize) -> &[f64] {
        if p == 0 {
            self.y.as_slice()
        } else {
            self.links[p - 1].y.as_slice()
        }
    }

    /// Rate of partition `p`.
    pub fn rate(&self, p: usize) -> &[f64] {
        if p == 0 {
            self.ydot.as_slice()
        } else {
            self.links[p - 1].ydot.as_slice()
        }
    }

    /// Energy of the numerical model (`p = 0`), and for a physical partition its specimen's,
    /// as measured behind the port.
    pub fn energy(&mut self, p: usize) -> Option<f64> {
        if p == 0 {
            let Self { parts, y, .. } = self;
            parts[0].energy(y.as_slice())
        } else {
            // A physical partition: what its specimen holds or absorbed, as measured behind
            // the port (the numerical model carries its mass).
            self.parts[p]
                .physical
                .as_ref()?
                .substructure()
                .potential_energy()
        }
    }
}

/// What [`SecondOrder::start`] measures and computes at `t0`.
pub struct Start {
    /// Initial displacements.
    pub d: DVector<f64>,
    /// Initial velocities.
    pub v: DVector<f64>,
    /// `a_0 = M⁻¹(f_0 − C v_0 − r_0)`.
    pub a: DVector<f64>,
    /// The restoring force measured at rest.
    pub r: DVector<f64>,
    /// The external force at `t0`.
    pub f: DVector<f64>,
}

/// Newmark's explicit predictor of both schemes: `d̃ = d + Δt v + Δt²(1/2 − β) a`,
/// `ṽ = v + Δt(1 − γ) a`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn newmark_predictor(
    d: &[f64],
    v: &[f64],
    a: &[f64],
    dt: f64,
    beta: f64,
    gamma: f64,
    d_tilde: &mut [f64],
    v_tilde: &mut [f64],
) {
    for i in 0..d.len() {
        d_tilde[i] = d[i] + dt * v[i] + dt * dt * (0.5 - beta) * a[i];
        v_tilde[i] = v[i] + dt * (1.0 - gamma) * a[i];
    }
}

/// Newmark's corrector of both schemes (eq 2): `d = d̃ + βΔt² a`, `v = ṽ + γΔt a`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn newmark_corrector(
    d_tilde: &[f64],
    v_tilde: &[f64],
    a: &[f64],
    dt: f64,
    beta: f64,
    gamma: f64,
    d: &mut [f64],
    v: &mut [f64],
) {
    for i in 0..d.len() {
        d[i] = d_tilde[i] + beta * dt * dt * a[i];
        v[i] = v_tilde[i] + gamma * dt * a[i];
    }
}

/// The exported algorithmic state of both schemes: the vectors one after another.
pub(crate) fn export_vectors(vectors: &[&DVector<f64>], out: &mut [f64]) {
    let mut at = 0;
    for x in vectors {
        out[at..at + x.len()].copy_from_slice(x.as_slice());
        at += x.len();
    }
}

/// The inverse of [`export_vectors`]; returns the number of values read.
pub(crate) fn import_vectors(vectors: &mut [&mut DVector<f64>], x: &[f64]) -> usize {
    let mut at = 0;
    for v in vectors.iter_mut() {
        let n = v.len();
        v.as_mut_slice().copy_from_slice(&x[at..at + n]);
        at += n;
    }
    at
}

fn scatter(target: &mut DMatrix<f64>, local: &DMatrix<f64>, map: &[Option<usize>]) {
    for (i, mi) in map.iter().enumerate() {
        let Some(a) = mi else { continue };
        for (j, mj) in map.iter().enumerate() {
            let Some(b) = mj else { continue };
            target[(*a, *b)] += local[(i, j)];
        }
    }
}

/// `y = A x` without allocating.
pub(crate) fn mat_vec(a: &DMatrix<f64>, x: &[f64], y: &mut [f64]) {
    let n = x.len();
    for (i, yi) in y.iter_mut().enumerate() {
        let mut acc = 0.0;
        for j in 0..n {
            acc += a[(i, j)] * x[j];
        }
        *yi = acc;
    }
}

/// Solve `A x = b` in place by Gaussian elimination with partial pivoting (`a` is destroyed,
/// `b` becomes `x`). Allocation-free; `false` for a singular matrix.
pub(crate) fn solve_in_place(a: &mut DMatrix<f64>, b: &mut [f64]) -> bool {
    let n = b.len();
    let scale = a.amax();
    for col in 0..n {
        let mut p = col;
        for r in col + 1..n {
            if a[(r, col)].abs() > a[(p, col)].abs() {
                p = r;
            }
        }
        if a[(p, col)].abs() <= 1e-300 + scale * 1e-15 {
            return false;
        }
        if p != col {
            a.swap_rows(p, col);
            b.swap(p, col);
        }
        let piv = a[(col, col)];
        for r in col + 1..n {
            let f = a[(r, col)] / piv;
            if f != 0.0 {
                for c in col..n {
                    a[(r, c)] -= f * a[(col, c)];
                }
                b[r] -= f * b[col];
            }
        }
    }
    for col in (0..n).rev() {
        let mut acc = b[col];
        for c in col + 1..n {
            acc -= a[(col, c)] * b[c];
        }
        b[col] = acc / a[(col, col)];
    }
    true
}
