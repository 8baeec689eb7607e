//! The physical substructure behind an interface.
//!
//! A physical substructure is (seed 000 §2.2; issue "core engine"): its interface DOFs, their
//! *numerical* mass and damping (ordinary elements of the partition), a [`RestoringForceProvider`]
//! queried **once per substep at the predictor** `(ũ, ṽ)` with no trial/revert (a specimen cannot
//! be un-deformed), and a user-given *estimated* initial stiffness/damping used only to build
//! `D^P` and the interface operator. Later versions put a virtual lab and networked controllers
//! behind the same trait; [`NumericalSpecimen`] is the stand-in used now.

use crate::elements::{DofRef, ElementRef};

/// A failure reported by a provider (lab fault, network error, non-finite measurement).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// Source of the restoring force of a physical substructure.
///
/// `u`, `v` and `force` are over the partition DOFs (in the order of
/// [`crate::assembly::StateSpace::dofs`]). The force is the *resisting* force the specimen
/// exerts back on those DOFs.
pub trait RestoringForceProvider: Send {
    /// A short description for summaries (`numerical stand-in (2 elements)`, …).
    fn describe(&self) -> String;

    /// Measure the force at rest before step 1 (the consistent start uses it).
    fn measure_at_rest(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), ProviderError>;

    /// Command the predictor displacement and velocity for time `t` and return the measured
    /// force. Called exactly once per substep; never reverted. Must not allocate.
    fn command(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), ProviderError>;

    /// Stored energy of the specimen at its last commanded state, when known.
    fn potential_energy(&self) -> Option<f64> {
        None
    }

    /// Names of the provider's recorded channels (element states, …).
    fn channel_names(&self) -> Vec<(String, crate::elements::Quantity, String)> {
        Vec::new()
    }

    /// Values of those channels (length of [`RestoringForceProvider::channel_names`]).
    fn channels(&self, _out: &mut [f64]) {}

    /// Make an independent copy in its initial state, when the provider supports it
    /// (numerical stand-ins do; a laboratory does not).
    fn try_clone(&self) -> Option<Box<dyn RestoringForceProvider>> {
        None
    }
}

/// A specimen element placed on the partition DOFs.
#[derive(Debug, Clone)]
pub struct SpecimenElement {
    /// Element name.
    pub name: String,
    /// The element.
    pub element: ElementRef,
    /// Partition DOF of each element DOF (`None`: fixed).
    pub map: Vec<Option<usize>>,
    /// Initial extra states.
    pub initial_state: Vec<f64>,
}

struct SpecimenSlot {
    name: String,
    element: ElementRef,
    map: Vec<Option<usize>>,
    s0: Vec<f64>,
    s: Vec<f64>,
    s_mid: Vec<f64>,
    k1: Vec<f64>,
    k2: Vec<f64>,
    u: Vec<f64>,
    v: Vec<f64>,
    r: Vec<f64>,
}

/// Numerical stand-in for a tested specimen: a set of elements evaluated at the commanded
/// state. Extra states are integrated along the commanded path (linear in `u` and `v` between
/// commands) with `internal_substeps` explicit midpoint steps, so that the specimen's own
/// memory follows the imposed motion as a real specimen's would.
pub struct NumericalSpecimen {
    slots: Vec<SpecimenSlot>,
    n_dofs: usize,
    internal_substeps: usize,
    prev_u: Vec<f64>,
    prev_v: Vec<f64>,
    prev_t: f64,
    have_prev: bool,
    energy: Option<f64>,
}

impl NumericalSpecimen {
    /// A stand-in over `n_dofs` partition DOFs.
    pub fn new(n_dofs: usize, elements: Vec<SpecimenElement>) -> Self {
        let slots = elements
            .into_iter()
            .map(|e| {
                let SpecimenElement {
                    name,
                    element,
                    map,
                    initial_state: s0,
                } = e;
                let n = element.dofs().len();
                let ns = element.n_states();
                SpecimenSlot {
                    name,
                    element,
                    map,
                    s: s0.clone(),
                    s0,
                    s_mid: vec![0.0; ns],
                    k1: vec![0.0; ns],
                    k2: vec![0.0; ns],
                    u: vec![0.0; n],
                    v: vec![0.0; n],
                    r: vec![0.0; n],
                }
            })
            .collect();
        Self {
            slots,
            n_dofs,
            internal_substeps: 8,
            prev_u: vec![0.0; n_dofs],
            prev_v: vec![0.0; n_dofs],
            prev_t: 0.0,
            have_prev: false,
            energy: None,
        }
    }

    fn gather(slot: &mut SpecimenSlot, u: &[f64], v: &[f64], w: f64, u0: &[f64], v0: &[f64]) {
        for (i, m) in slot.map.iter().enumerate() {
            let (a, b) = match m {
                Some(k) => (u0[*k] + w * (u[*k] - u0[*k]), v0[*k] + w * (v[*k] - v0[*k])),
                None => (0.0, 0.0),
            };
            slot.u[i] = a;
            slot.v[i] = b;
        }
    }

    fn evaluate(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), ProviderError> {
        force.iter_mut().for_each(|x| *x = 0.0);
        let mut energy = Some(0.0);
        let nsub = self.internal_substeps;
        let (pu, pv) = (&self.prev_u, &self.prev_v);
        let have_prev = self.have_prev;
        let span = t - self.prev_t;
        for slot in &mut self.slots {
            let ns = slot.s.len();
            if ns > 0 && have_prev {
                // Explicit midpoint along the linear path from the previous command.
                let h = 1.0 / nsub as f64;
                let dt = h * span;
                for k in 0..nsub {
                    let w0 = k as f64 * h;
                    Self::gather(slot, u, v, w0, pu, pv);
                    slot.element
                        .restoring(&slot.u, &slot.v, &slot.s, &mut slot.r, &mut slot.k1);
                    for i in 0..ns {
                        slot.s_mid[i] = slot.s[i] + 0.5 * dt * slot.k1[i];
                    }
                    Self::gather(slot, u, v, w0 + 0.5 * h, pu, pv);
                    slot.element.restoring(
                        &slot.u,
                        &slot.v,
                        &slot.s_mid,
                        &mut slot.r,
                        &mut slot.k2,
                    );
                    for i in 0..ns {
                        slot.s[i] += dt * slot.k2[i];
                    }
                }
            }
            Self::gather(slot, u, v, 1.0, u, v);
            slot.element
                .restoring(&slot.u, &slot.v, &slot.s, &mut slot.r, &mut slot.k1);
            for (i, m) in slot.map.iter().enumerate() {
                if let Some(k) = m {
                    force[*k] += slot.r[i];
                }
            }
            energy = match (energy, slot.element.potential_energy(&slot.u, &slot.s)) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        self.energy = energy;
        self.prev_u.copy_from_slice(u);
        self.prev_v.copy_from_slice(v);
        self.prev_t = t;
        self.have_prev = true;
        if force.iter().any(|x| !x.is_finite()) {
            return Err(ProviderError("non-finite specimen force".into()));
        }
        Ok(())
    }
}

impl RestoringForceProvider for NumericalSpecimen {
    fn describe(&self) -> String {
        format!(
            "numerical stand-in ({} element{}: {})",
            self.slots.len(),
            if self.slots.len() == 1 { "" } else { "s" },
            self.slots
                .iter()
                .map(|s| format!("{} {}", s.element.kind(), s.name))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    fn measure_at_rest(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), ProviderError> {
        debug_assert_eq!(u.len(), self.n_dofs);
        self.have_prev = false;
        for slot in &mut self.slots {
            slot.s.copy_from_slice(&slot.s0);
        }
        self.evaluate(t, u, v, force)
    }

    fn command(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), ProviderError> {
        self.evaluate(t, u, v, force)
    }

    fn potential_energy(&self) -> Option<f64> {
        self.energy
    }

    fn channel_names(&self) -> Vec<(String, crate::elements::Quantity, String)> {
        let mut out = Vec::new();
        for slot in &self.slots {
            for (i, name) in slot.element.state_names().into_iter().enumerate() {
                out.push((
                    format!("state.{}.{}", slot.name, name),
                    slot.element.state_quantity(i),
                    slot.element
                        .dofs()
                        .first()
                        .map(|d| d.dof.clone())
                        .unwrap_or_default(),
                ));
            }
            for (i, d) in slot.element.dofs().iter().enumerate() {
                let _ = i;
                out.push((
                    format!("force.{}.{}.{}", slot.name, d.node, d.dof),
                    crate::elements::Quantity::Force,
                    d.dof.clone(),
                ));
            }
        }
        out
    }

    fn channels(&self, out: &mut [f64]) {
        let mut k = 0;
        for slot in &self.slots {
            for x in &slot.s {
                out[k] = *x;
                k += 1;
            }
            for x in &slot.r {
                out[k] = *x;
                k += 1;
            }
        }
    }

    fn try_clone(&self) -> Option<Box<dyn RestoringForceProvider>> {
        let elements = self
            .slots
            .iter()
            .map(|s| SpecimenElement {
                name: s.name.clone(),
                element: s.element.clone(),
                map: s.map.clone(),
                initial_state: s.s0.clone(),
            })
            .collect();
        let mut c = NumericalSpecimen::new(self.n_dofs, elements);
        c.internal_substeps = self.internal_substeps;
        Some(Box::new(c))
    }
}

/// DOFs of a specimen element set (for summaries).
pub fn specimen_dofs(elements: &[ElementRef]) -> Vec<DofRef> {
    let mut out: Vec<DofRef> = Vec::new();
    for e in elements {
        for d in e.dofs() {
            if !out.contains(d) {
                out.push(d.clone());
            }
        }
    }
    out
}
