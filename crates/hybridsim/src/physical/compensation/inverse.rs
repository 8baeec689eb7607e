//! Model-based inverse compensation: the target passes through `G⁻¹(s) F(s)`, the inverse of a
//! low-order actuator model with unit DC gain, made proper by the low-pass
//! `F(s) = 1/(T_f s + 1)^r` (`r` the relative degree of `G`), Tustin-discretized at Δt^C:
//!
//! - first order `G = 1/(τ s + 1)`: `(τ s + 1)/(T_f s + 1)`;
//! - second order `G = ω²/(s² + 2ζω s + ω²)`: `(s² + 2ζω s + ω²)/(ω² (T_f s + 1)²)`.
//!
//! This is the feedforward of the sample controllers of the vRTHS benchmark (Silva et al.
//! 2020), where the inverse of the identified plant model is rolled off by a fast low-pass;
//! with the true plant and `T_f → 0` the achieved displacement follows the target with unit
//! amplitude and no delay in the band where the low-pass is flat, and what remains is a lag of
//! about `r T_f`.

use crate::model::lab::{ActuatorModel, Discretization, InverseCompensation};
use crate::physical::blocks::{Block, StateSpace};

/// The discretized inverse of one actuator's model.
#[derive(Debug, Clone)]
pub struct InverseCompensator {
    filter: StateSpace,
}

impl InverseCompensator {
    /// Build at the controller tick `dt_c` (Tustin).
    pub fn new(c: &InverseCompensation, dt_c: f64) -> Result<Self, String> {
        let tf = c.filter_time_constant;
        if !(tf.is_finite() && tf > 0.0) {
            return Err(format!(
                "the filter time constant must be positive, found {tf}"
            ));
        }
        let (num, den) = match c.model {
            ActuatorModel::FirstOrder { tau } => (vec![tau, 1.0], vec![tf, 1.0]),
            ActuatorModel::SecondOrder { frequency, damping } => {
                let w = 2.0 * std::f64::consts::PI * frequency;
                (
                    vec![1.0 / (w * w), 2.0 * damping / w, 1.0],
                    vec![tf * tf, 2.0 * tf, 1.0],
                )
            }
        };
        let filter = StateSpace::transfer_function(
            &num,
            &den,
            dt_c,
            Discretization::Tustin { prewarp_hz: None },
        )?;
        Ok(Self { filter })
    }

    /// At rest at `x0` (the filter's DC gain is one).
    pub fn reset(&mut self, x0: f64) {
        self.filter.reset(x0);
    }

    /// The command for the target `d` of this tick.
    pub fn apply(&mut self, d: f64) -> f64 {
        self.filter.step(d)
    }
}
