//! One substructure of a model served to an outside integrator (an OpenSees `genericClient`
//! element, through `hybridsim serve`): the trial/commit interface of finite-element programs
//! over a chosen list of *served* DOFs.
//!
//! ```text
//! set_trial(t, u, v) → force(), tangent(), initial_stiffness(), damping(), mass() → commit()
//! ```
//!
//! **Numerical substructure.** Every element of the substructure (and its share of the
//! model's Rayleigh damping, as one linear damping element) is driven by an
//! [`ElementDriver`]: each trial starts from the last committed state, so any number of trials
//! (Newton iterations, predictor and corrector) may come before a commit, exactly as an
//! element of the client's own library. `dt = t − t_committed` is the driving step.
//!
//! **Physical substructure with a `[lab]`.** Its specimen is commanded through the lab's port
//! and safety layer ([`PhysicalPort::command_open_loop`]) once per step, at the first trial
//! after a commit that moves the displacement; a later trial of the same step that keeps the
//! commanded displacement (a corrector changing only velocities) is answered with the
//! measured force, one that moves it is refused ([`ServeError::SecondTrial`]): a specimen
//! cannot be reverted. Its numerical elements (masses, numerical damping) are driven as above.
//!
//! **DOFs.** The served DOFs are the client's basic DOFs, in its order. By default they are the
//! substructure's free DOFs in the model's order (node id, then the node's DOF order); a
//! given list may reorder them and may add DOFs that the model fixes (the client drives
//! them). A free DOF of the substructure that is not served (an internal DOF) is refused in
//! this version. Matrices are returned column-major (as the OpenSees `Matrix` stores them).
//!
//! Nothing here does I/O; `set_trial`, `force`, `tangent` and `commit` do not allocate.

use super::{collect_dofs, rayleigh_coefficients};
use crate::elements::{ElementDriver, ElementRef};
use crate::model::{ElementName, Model, Role};
use crate::physical::{PhysicalPort, SpecimenElement};
use nalgebra::DMatrix;

/// Why a served call was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServeError {
    /// A vector has the wrong length.
    #[error("{what} has {found} values, the substructure serves {expected} DOFs")]
    Length {
        /// Which vector.
        what: &'static str,
        /// Served DOFs.
        expected: usize,
        /// Given.
        found: usize,
    },
    /// The trial time is before the committed one.
    #[error("trial time {t} is before the committed time {committed}")]
    TimeBackwards {
        /// Trial time.
        t: f64,
        /// Committed time.
        committed: f64,
    },
    /// A trial after the specimen was already commanded in this step, at another
    /// displacement.
    #[error(
        "a physical specimen cannot be reverted: a second trial at another displacement before a commit is refused (step {step})"
    )]
    SecondTrial {
        /// The step being tried (committed steps + 1).
        step: u64,
    },
    /// An element or the lab failed at the trial.
    #[error("{0}")]
    Failed(String),
    /// The specimen failed or tripped its safety layer earlier; nothing more is commanded.
    #[error("the specimen is stopped: {0}")]
    Stopped(String),
}

struct Slot {
    name: String,
    driver: ElementDriver,
    map: Vec<Option<usize>>,
    u: Vec<f64>,
    v: Vec<f64>,
}

/// The specimen of a physical substructure behind its port.
struct Specimen {
    port: PhysicalPort,
    /// Served DOF of each partition DOF.
    from_served: Vec<usize>,
    /// `[u; v]` over the partition DOFs.
    y: Vec<f64>,
    /// Displacement last commanded (partition DOFs).
    commanded: Vec<f64>,
    /// Measured force (served DOFs).
    force: Vec<f64>,
    commanded_this_step: bool,
    stopped: Option<String>,
}

/// A substructure served over chosen DOFs (see the module docs).
pub struct ServedSubstructure {
    name: String,
    dofs: Vec<crate::elements::DofRef>,
    slots: Vec<Slot>,
    specimen: Option<Specimen>,
    k0: Vec<f64>,
    /// The specimen's part of `k0` (its tangent is not measured).
    k_specimen: Vec<f64>,
    c0: Vec<f64>,
    mass: Vec<f64>,
    force: Vec<f64>,
    tangent: Vec<f64>,
    t_committed: f64,
    t_trial: f64,
    commits: u64,
    trials: u64,
}

fn scatter_cm(target: &mut [f64], n: usize, local: &DMatrix<f64>, map: &[Option<usize>]) {
    for (i, mi) in map.iter().enumerate() {
        for (j, mj) in map.iter().enumerate() {
            if let (Some(a), Some(b)) = (mi, mj) {
                target[b * n + a] += local[(i, j)];
            }
        }
    }
}

impl ServedSubstructure {
    /// Serve substructure `name` of `model` over `dofs` (default: its free DOFs in model
    /// order). Errors name the substructure, the DOF and the reason.
    pub fn new(
        model: &Model,
        name: &str,
        dofs: Option<&[crate::elements::DofRef]>,
    ) -> Result<Self, String> {
        let Some(k) = model.substructures.iter().position(|s| s.name == name) else {
            return Err(format!(
                "the model has no substructure `{name}` (it has: {})",
                model
                    .substructures
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let sub = &model.substructures[k];
        let instances: Vec<&crate::model::ElementInstance> = model
            .elements
            .iter()
            .filter(|e| e.substructure as usize == k)
            .collect();
        if instances.is_empty() {
            return Err(format!("substructure `{name}` has no elements"));
        }
        let free = collect_dofs(model, &instances);
        let served: Vec<crate::elements::DofRef> = match dofs {
            None => free.clone(),
            Some(list) => {
                for (i, d) in list.iter().enumerate() {
                    if list[..i].contains(d) {
                        return Err(format!("{d} is listed twice"));
                    }
                    if !instances.iter().any(|e| e.element.dofs().contains(d)) {
                        return Err(format!(
                            "{d} is not a DOF of substructure `{name}` (its DOFs: {})",
                            free.iter()
                                .map(|d| format!("{}:{}", d.node, d.dof))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
                list.to_vec()
            }
        };
        if let Some(d) = free.iter().find(|d| !served.contains(d)) {
            return Err(format!(
                "{d} of substructure `{name}` is not served: the client would not drive it \
                 (internal DOFs are not supported by `serve` in this version; list every free \
                 DOF of the substructure)"
            ));
        }
        if served.is_empty() {
            return Err(format!("substructure `{name}` has no DOF to serve"));
        }
        let n = served.len();
        let map_of = |e: &ElementRef| -> Vec<Option<usize>> {
            e.dofs()
                .iter()
                .map(|d| served.iter().position(|x| x == d))
                .collect()
        };
        let lab = sub.physical && model.lab.is_some();
        if let (true, Some(d)) = (lab, served.iter().find(|d| !free.contains(d))) {
            return Err(format!(
                "{d} is fixed in the model: the specimen of physical substructure `{name}` \
                 cannot be driven on it (serve its free DOFs only)"
            ));
        }
        let mut numerical: Vec<(ElementName, ElementRef, Vec<f64>)> = Vec::new();
        let mut specimen_elements: Vec<SpecimenElement> = Vec::new();
        let mut rayleigh_terms = Vec::new();
        let mut any_rayleigh = false;
        for inst in &instances {
            if lab && inst.role == Role::Specimen {
                specimen_elements.push(SpecimenElement {
                    name: inst.name.to_string(),
                    element: inst.element.clone(),
                    map: inst
                        .element
                        .dofs()
                        .iter()
                        .map(|d| free.iter().position(|x| x == d))
                        .collect(),
                    initial_state: inst.initial_state.to_vec(),
                });
                continue;
            }
            if inst.rayleigh {
                any_rayleigh = true;
                if super::tangent_rayleigh_stiffness(
                    inst.element.as_ref(),
                    model.rayleigh_stiffness,
                )
                .is_some()
                {
                    return Err(format!(
                        "damping.stiffness = \"{}\" is not supported on a served substructure \
                         (element `{}` of `{name}` is hysteretic with Rayleigh damping): use \
                         \"initial\"",
                        model.rayleigh_stiffness.name(),
                        inst.name
                    ));
                }
                let map = map_of(&inst.element);
                super::rayleigh_contributions(
                    inst.element.as_ref(),
                    &map,
                    false,
                    &mut rayleigh_terms,
                );
            }
            numerical.push((
                inst.name.clone(),
                inst.element.clone(),
                inst.initial_state.to_vec(),
            ));
        }
        let rayleigh = rayleigh_coefficients(model).map_err(|e| e.to_string())?;
        if let (Some(coefficients), true) = (rayleigh, any_rayleigh) {
            numerical.extend(super::rayleigh_element(
                name,
                served.as_slice().into(),
                rayleigh_terms,
                coefficients,
            ));
        }
        let mut k0 = vec![0.0; n * n];
        let mut c0 = vec![0.0; n * n];
        let mut mass = vec![0.0; n * n];
        let mut k_specimen = vec![0.0; n * n];
        let mut slots = Vec::with_capacity(numerical.len());
        for (ename, element, s0) in numerical {
            let driver = ElementDriver::from_shared(&element, &s0)
                .map_err(|e| format!("element `{ename}`: {e}"))?;
            let map = map_of(&element);
            scatter_cm(&mut k0, n, &driver.initial_stiffness(), &map);
            scatter_cm(&mut c0, n, &driver.damping(), &map);
            scatter_cm(&mut mass, n, &driver.mass(), &map);
            let ne = map.len();
            slots.push(Slot {
                name: ename.to_string(),
                driver,
                map,
                u: vec![0.0; ne],
                v: vec![0.0; ne],
            });
        }
        let specimen = if lab {
            let from_served: Vec<usize> = free
                .iter()
                .map(|d| {
                    served
                        .iter()
                        .position(|x| x == d)
                        .expect("every free DOF is served")
                })
                .collect();
            for e in &specimen_elements {
                let m = e.element.mass();
                let map: Vec<Option<usize>> =
                    e.map.iter().map(|p| p.map(|p| from_served[p])).collect();
                if let Some(m) = m {
                    scatter_cm(&mut mass, n, &m, &map);
                }
                let (ks, cs) = crate::elements::driver::initial_matrices(e.element.as_ref());
                scatter_cm(&mut k0, n, &ks, &map);
                scatter_cm(&mut k_specimen, n, &ks, &map);
                scatter_cm(&mut c0, n, &cs, &map);
            }
            let mut port = crate::physical::build_port(model, name, &free, specimen_elements)?;
            let nf = free.len();
            let y = vec![0.0; 2 * nf];
            port.measure_at_rest(0.0, &y)
                .map_err(|e| format!("substructure `{name}`: measuring at rest: {e}"))?;
            let mut force = vec![0.0; n];
            for (p, s) in from_served.iter().enumerate() {
                force[*s] = port.measured()[p];
            }
            Some(Specimen {
                port,
                from_served,
                y,
                commanded: vec![0.0; nf],
                force,
                commanded_this_step: false,
                stopped: None,
            })
        } else {
            None
        };
        let mut out = Self {
            name: name.to_string(),
            dofs: served,
            slots,
            specimen,
            k0,
            k_specimen,
            c0,
            mass,
            force: vec![0.0; n],
            tangent: vec![0.0; n * n],
            t_committed: 0.0,
            t_trial: 0.0,
            commits: 0,
            trials: 0,
        };
        out.sum_force();
        Ok(out)
    }

    /// Name of the substructure.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The served DOFs, in the client's order.
    pub fn dofs(&self) -> &[crate::elements::DofRef] {
        &self.dofs
    }

    /// Number of served DOFs.
    pub fn n_dofs(&self) -> usize {
        self.dofs.len()
    }

    /// Whether a specimen is commanded through a lab (one trial per step).
    pub fn is_physical(&self) -> bool {
        self.specimen.is_some()
    }

    /// A one-line description: elements and, for a physical substructure, the lab.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "substructure `{}`: {} numerical element{} ({})",
            self.name,
            self.slots.len(),
            if self.slots.len() == 1 { "" } else { "s" },
            self.slots
                .iter()
                .map(|s| format!("{} {}", s.driver.element().kind(), s.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(sp) = &self.specimen {
            s.push_str(&format!(
                "; specimen: {}",
                sp.port.substructure().describe()
            ));
        }
        s
    }

    /// Steps committed so far.
    pub fn commits(&self) -> u64 {
        self.commits
    }

    /// Trials received so far.
    pub fn trials(&self) -> u64 {
        self.trials
    }

    /// Time of the last commit.
    pub fn committed_time(&self) -> f64 {
        self.t_committed
    }

    fn sum_force(&mut self) {
        self.force.iter_mut().for_each(|x| *x = 0.0);
        for slot in &self.slots {
            for (i, m) in slot.map.iter().enumerate() {
                if let Some(k) = m {
                    self.force[*k] += slot.driver.force()[i];
                }
            }
        }
        if let Some(sp) = &self.specimen {
            for (f, m) in self.force.iter_mut().zip(&sp.force) {
                *f += m;
            }
        }
    }

    /// Impose the trial displacement `u` and velocity `v` (served DOFs) at time `t`, from the
    /// last committed state. On error the force is NaN until the next successful trial.
    /// Allocation-free on success.
    pub fn set_trial(&mut self, t: f64, u: &[f64], v: &[f64]) -> Result<(), ServeError> {
        self.trials += 1;
        let r = self.try_trial(t, u, v);
        match &r {
            Ok(()) => self.sum_force(),
            Err(_) => self.force.iter_mut().for_each(|x| *x = f64::NAN),
        }
        r
    }

    fn try_trial(&mut self, t: f64, u: &[f64], v: &[f64]) -> Result<(), ServeError> {
        let n = self.dofs.len();
        for (what, x) in [("displacement", u), ("velocity", v)] {
            if x.len() != n {
                return Err(ServeError::Length {
                    what,
                    expected: n,
                    found: x.len(),
                });
            }
        }
        if !t.is_finite() || t < self.t_committed {
            return Err(ServeError::TimeBackwards {
                t,
                committed: self.t_committed,
            });
        }
        let dt = t - self.t_committed;
        for slot in &mut self.slots {
            for (i, m) in slot.map.iter().enumerate() {
                let (a, b) = match m {
                    Some(k) => (u[*k], v[*k]),
                    None => (0.0, 0.0),
                };
                slot.u[i] = a;
                slot.v[i] = b;
            }
            slot.driver
                .set_trial(dt, &slot.u, &slot.v)
                .map_err(|e| ServeError::Failed(format!("element `{}`: {e}", slot.name)))?;
        }
        self.t_trial = t;
        let step = self.commits + 1;
        if let Some(sp) = &mut self.specimen {
            if let Some(why) = &sp.stopped {
                return Err(ServeError::Stopped(why.clone()));
            }
            let nf = sp.from_served.len();
            let moved = sp
                .from_served
                .iter()
                .zip(&sp.commanded)
                .any(|(s, c)| u[*s] != *c);
            if !moved {
                return Ok(());
            }
            if sp.commanded_this_step {
                return Err(ServeError::SecondTrial { step });
            }
            for (p, s) in sp.from_served.iter().enumerate() {
                sp.y[p] = u[*s];
                sp.y[nf + p] = v[*s];
            }
            match sp.port.command_open_loop(t, &sp.y) {
                Ok(measured) => {
                    for (p, s) in sp.from_served.iter().enumerate() {
                        sp.force[*s] = measured[p];
                    }
                    for (p, s) in sp.from_served.iter().enumerate() {
                        sp.commanded[p] = u[*s];
                    }
                    sp.commanded_this_step = true;
                }
                Err(e) => {
                    let why = format!("substructure `{}` at t = {t}: {e}", self.name);
                    sp.stopped = Some(why.clone());
                    return Err(ServeError::Failed(why));
                }
            }
        }
        Ok(())
    }

    /// Accept the last trial.
    pub fn commit(&mut self) {
        for slot in &mut self.slots {
            slot.driver.commit();
        }
        if let Some(sp) = &mut self.specimen {
            sp.commanded_this_step = false;
        }
        self.t_committed = self.t_trial;
        self.commits += 1;
    }

    /// Resisting force at the trial (served DOFs; NaN after a failed trial).
    pub fn force(&self) -> &[f64] {
        &self.force
    }

    /// Tangent stiffness `∂r/∂u` at the trial, column-major `n × n` (the specimen's part is
    /// its initial stiffness: a specimen's tangent is not measured). Allocation-free.
    pub fn tangent(&mut self) -> &[f64] {
        let n = self.dofs.len();
        self.tangent.iter_mut().for_each(|x| *x = 0.0);
        for slot in &mut self.slots {
            let kt = slot.driver.tangent();
            for (i, mi) in slot.map.iter().enumerate() {
                for (j, mj) in slot.map.iter().enumerate() {
                    if let (Some(a), Some(b)) = (mi, mj) {
                        self.tangent[b * n + a] += kt[(i, j)];
                    }
                }
            }
        }
        for (t, k) in self.tangent.iter_mut().zip(&self.k_specimen) {
            *t += k;
        }
        &self.tangent
    }

    /// Initial stiffness, column-major `n × n`.
    pub fn initial_stiffness(&self) -> &[f64] {
        &self.k0
    }

    /// Damping `∂r/∂v` at the start (constant), column-major `n × n`.
    pub fn damping(&self) -> &[f64] {
        &self.c0
    }

    /// Serve a zero mass matrix: the client's model carries the masses (a model file needs a
    /// mass on every free DOF of a substructure; the served copy may not be wanted).
    pub fn drop_mass(&mut self) {
        self.mass.iter_mut().for_each(|x| *x = 0.0);
    }

    /// Mass, column-major `n × n`.
    pub fn mass(&self) -> &[f64] {
        &self.mass
    }
}
