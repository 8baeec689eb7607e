//! The physical substructure behind an interface.
//!
//! A physical substructure is (Abbiati et al. 2019, §2.2): its interface DOFs, their *numerical*
//! mass and damping (ordinary elements of the partition), a [`PhysicalSubstructure`] behind a typed
//! [`PhysicalPort`], commanded **once per controller tick at the predictor** `(ũ, ṽ)` with no
//! trial/revert (a specimen cannot be un-deformed), and a user-given *estimated* initial
//! stiffness/damping used only to build `D^P` and the interface operator. Runners reach a
//! laboratory only through its [`LabControl`] handle.
//!
//! With a `[lab]` table the substructure is a [`LabProvider`]: DOF→actuator transform and scale
//! factors, compensation ([`compensation`]), the mandatory [`safety`] layer and a
//! [`transfer::TransferSystem`] — the [`virtual_lab::VirtualLab`] by default. Without one, the
//! specimen elements are evaluated directly by the [`NumericalSpecimen`] stand-in.

pub mod actuator;
pub mod blocks;
pub mod compensation;
mod lab_provider;
mod port;
pub mod safety;
pub mod setup;
pub mod time_scale;
pub mod transfer;
pub mod virtual_lab;

pub use lab_provider::{LabProvider, LabRecords};
pub use port::{
    CommandHook, Intercepted, LabControl, PhysicalPort, PhysicalSubstructure, PortError, RampState,
    SafetySummary, Tick, TickClock, TransferError,
};
pub use safety::{EventKind, SafetyEvent};

use crate::elements::{DofRef, ElementDriver, ElementRef};

/// The physical substructure `name` of `model` behind its port: a [`LabProvider`] when the
/// model has a `[lab]`, the [`NumericalSpecimen`] stand-in otherwise.
pub fn build_port(
    model: &crate::model::Model,
    name: &str,
    dofs: &[DofRef],
    specimen: Vec<SpecimenElement>,
) -> Result<PhysicalPort, String> {
    let inner: Box<dyn PhysicalSubstructure> = if model.lab.is_some() {
        Box::new(LabProvider::new(model, name, dofs, specimen)?)
    } else {
        Box::new(NumericalSpecimen::new(dofs.len(), specimen))
    };
    Ok(PhysicalPort::new(inner, dofs.len()))
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
    driver: ElementDriver,
    u: Vec<f64>,
    v: Vec<f64>,
    /// Index of the absorbed-energy state `e = ∫ r·dd` among the element's states, if any.
    absorbed_energy_state: Option<usize>,
    /// Whether the element can store energy (false for dashpots and masses).
    stores_energy: bool,
}

/// Whether an element only damps or carries mass (a linear stiffness identically zero).
fn slot_is_damping(e: &dyn crate::elements::Element) -> bool {
    e.linear_stiffness().is_some_and(|k| k.amax() == 0.0)
}

/// Numerical stand-in for a tested specimen: a set of elements evaluated at the commanded
/// state through the element library's displacement-driven form ([`ElementDriver`]): between
/// two commands each element moves on the straight path, its extra states integrated along
/// it, so that the specimen's own memory follows the imposed motion as a real specimen's
/// would; every command is committed (a specimen cannot be reverted).
pub struct NumericalSpecimen {
    slots: Vec<SpecimenSlot>,
    n_dofs: usize,
    prev_t: f64,
    have_prev: bool,
    /// Whether the last evaluation succeeded (the slots hold its state): the stored energy is
    /// known (see `potential_energy`).
    evaluated: bool,
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
                let driver = ElementDriver::from_shared(&element, &s0)
                    .expect("validated element and initial state");
                let absorbed_energy_state = element.state_names().iter().position(|n| n == "e");
                let stores_energy = !slot_is_damping(element.as_ref());
                SpecimenSlot {
                    name,
                    element,
                    map,
                    s0,
                    driver,
                    u: vec![0.0; n],
                    v: vec![0.0; n],
                    absorbed_energy_state,
                    stores_energy,
                }
            })
            .collect();
        Self {
            slots,
            n_dofs,
            prev_t: 0.0,
            have_prev: false,
            evaluated: false,
        }
    }

    /// Back to the model file's elements in their initial states (a measurement at rest).
    pub(crate) fn reset(&mut self) -> Result<(), PortError> {
        self.have_prev = false;
        for slot in &mut self.slots {
            slot.driver = ElementDriver::from_shared(&slot.element, &slot.s0)
                .map_err(|e| PortError::Fault(format!("specimen element `{}`: {e}", slot.name)))?;
        }
        Ok(())
    }

    /// Index of the element named `name`, and the value of its parameter `parameter` (the
    /// model file's), if both exist. Allocates; call at setup.
    pub(crate) fn parameter_slot(&self, name: &str, parameter: &str) -> Option<(usize, f64)> {
        let k = self.slots.iter().position(|s| s.name == name)?;
        let value = self.slots[k]
            .element
            .parameters()
            .into_iter()
            .find(|(n, _)| *n == parameter)?
            .1;
        Some((k, value))
    }

    /// Change a parameter of element `slot` (a degrading specimen); it acts from the next
    /// evaluation on, the element's states are kept.
    pub(crate) fn set_slot_parameter(
        &mut self,
        slot: usize,
        parameter: &str,
        value: f64,
    ) -> Result<(), String> {
        self.slots[slot].driver.set_parameter(parameter, value)
    }

    /// Evaluate the stand-in at `(u, v)` reached at time `t` and commit (the virtual lab's
    /// specimen, at wall-clock time).
    pub(crate) fn evaluate(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        force.iter_mut().for_each(|x| *x = 0.0);
        self.evaluated = false;
        let dt = if self.have_prev {
            (t - self.prev_t).max(0.0)
        } else {
            0.0
        };
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
                .map_err(|e| PortError::Fault(format!("specimen element `{}`: {e}", slot.name)))?;
            slot.driver.commit();
            for (i, m) in slot.map.iter().enumerate() {
                if let Some(k) = m {
                    force[*k] += slot.driver.force()[i];
                }
            }
        }
        self.evaluated = true;
        self.prev_t = t;
        self.have_prev = true;
        if force.iter().any(|x| !x.is_finite()) {
            return Err(PortError::Fault("non-finite specimen force".into()));
        }
        Ok(())
    }
}

impl PhysicalSubstructure for NumericalSpecimen {
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
    ) -> Result<(), PortError> {
        debug_assert_eq!(u.len(), self.n_dofs);
        self.reset()?;
        self.evaluate(t, u, v, force)
    }

    fn command(
        &mut self,
        tick: &Tick,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        self.evaluate(tick.time(), u, v, force)
    }

    fn potential_energy(&self) -> Option<f64> {
        // Computed when asked (the virtual lab evaluates its specimen every controller tick,
        // a results row asks once per step at most) from the committed slots of the last
        // successful evaluation: the same sums in the same order as at that evaluation.
        if !self.evaluated {
            return None;
        }
        let mut energy = Some(0.0);
        for slot in &self.slots {
            // Stored energy of a conservative element, else the work it absorbed (`e`);
            // dashpots and masses hold none.
            let held = if slot.stores_energy {
                slot.element
                    .potential_energy(&slot.u, slot.driver.states())
                    .or_else(|| slot.absorbed_energy_state.map(|i| slot.driver.states()[i]))
            } else {
                Some(0.0)
            };
            energy = match (energy, held) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        energy
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
                        .map(|d| d.dof.to_string())
                        .unwrap_or_default(),
                ));
            }
            for (i, d) in slot.element.dofs().iter().enumerate() {
                let _ = i;
                out.push((
                    format!("force.{}.{}.{}", slot.name, d.node, d.dof),
                    crate::elements::Quantity::Force,
                    d.dof.to_string(),
                ));
            }
        }
        out
    }

    fn channels(&self, out: &mut [f64]) {
        let mut k = 0;
        for slot in &self.slots {
            for x in slot.driver.states() {
                out[k] = *x;
                k += 1;
            }
            for x in slot.driver.force() {
                out[k] = *x;
                k += 1;
            }
        }
    }

    fn try_clone(&self) -> Option<Box<dyn PhysicalSubstructure>> {
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
        Some(Box::new(NumericalSpecimen::new(self.n_dofs, elements)))
    }
}
