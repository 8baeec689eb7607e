//! The servo-valve + actuator + control–structure interaction plant (Dyke et al. 1995; the
//! transfer system of the vRTHS benchmark, Silva et al. 2020), one state vector
//! `[x_v, ẋ_v, f, x, ẋ]` giving both the achieved displacement `x` and the actuator force `f`:
//!
//! - servo-valve, second order: `ẍ_v + 2ζ_v ω_v ẋ_v + ω_v² x_v = k_v ω_v² u`;
//! - actuator chamber: `ḟ = a1 x_v − a2 ẋ − a3 f` (the `1/(s + a3)` pressure dynamics with the
//!   piston-velocity feedback `a2 s`);
//! - specimen with the moving piston: `m ẍ + c ẋ + k x = f`.
//!
//! Hence `x/u = k_v ω_v² a1 / ((s² + 2ζ_v ω_v s + ω_v²) P(s))`,
//! `P(s) = (s + a3)(m s² + c s + k) + a2 s`, and `f/u = (m s² + c s + k) x/u`. With the optional
//! proportional servo loop `u = k_p (d − x)` the input is the displacement command `d`.

use super::discretize::Continuous;
use super::state_space::StateSpace;
use super::Block;
use crate::model::lab::{Discretization, ServoValveCsi as Params};
use nalgebra::{DMatrix, DVector};

/// The plant as a discretized state-space block; output 0 is the displacement, output 1 the
/// actuator force (what a load cell in line with the actuator reads).
#[derive(Debug, Clone)]
pub struct ServoValveCsi {
    plant: StateSpace,
}

/// Continuous `(A, B, C, D)` of the plant; C's rows: displacement, force.
pub fn continuous(p: &Params) -> Continuous {
    let w = 2.0 * std::f64::consts::PI * p.valve_frequency;
    let kp = p.proportional_gain.unwrap_or(0.0);
    #[rustfmt::skip]
    let mut a = DMatrix::from_row_slice(5, 5, &[
        0.0, 1.0, 0.0, 0.0, 0.0,
        -w * w, -2.0 * p.valve_damping * w, 0.0, 0.0, 0.0,
        p.a1, 0.0, -p.a3, 0.0, -p.a2,
        0.0, 0.0, 0.0, 0.0, 1.0,
        0.0, 0.0, 1.0 / p.mass, -p.stiffness / p.mass, -p.damping / p.mass,
    ]);
    let gain = p.valve_gain * w * w;
    let mut b = DVector::zeros(5);
    if p.proportional_gain.is_some() {
        a[(1, 3)] -= gain * kp;
        b[1] = gain * kp;
    } else {
        b[1] = gain;
    }
    #[rustfmt::skip]
    let c = DMatrix::from_row_slice(2, 5, &[
        0.0, 0.0, 0.0, 1.0, 0.0,
        0.0, 0.0, 1.0, 0.0, 0.0,
    ]);
    (a, b, c, DVector::zeros(2))
}

/// Characteristic polynomial of the plant (highest power first), including the proportional
/// loop when there is one: `D_v(s) P(s) + k_p k_v ω_v² a1`.
pub fn characteristic_polynomial(p: &Params) -> Vec<f64> {
    let w = 2.0 * std::f64::consts::PI * p.valve_frequency;
    let valve = [1.0, 2.0 * p.valve_damping * w, w * w];
    let specimen = [p.mass, p.damping, p.stiffness];
    let mut chamber = super::poly_mul(&[1.0, p.a3], &specimen);
    chamber[2] += p.a2;
    let mut out = super::poly_mul(&valve, &chamber);
    if let Some(kp) = p.proportional_gain {
        let last = out.len() - 1;
        out[last] += kp * p.valve_gain * w * w * p.a1;
    }
    out
}

impl ServoValveCsi {
    /// Discretize the plant at tick `dt`.
    pub fn new(p: &Params, dt: f64, how: Discretization) -> Result<Self, String> {
        let (a, b, c, d) = continuous(p);
        Ok(Self {
            plant: StateSpace::new(&a, &b, &c, &d, dt, how)?,
        })
    }

    /// Achieved displacement after the last step.
    pub fn displacement(&self) -> f64 {
        self.plant.outputs()[0]
    }

    /// Actuator force after the last step.
    pub fn force(&self) -> f64 {
        self.plant.outputs()[1]
    }

    /// The discretized plant.
    pub fn plant(&self) -> &StateSpace {
        &self.plant
    }
}

impl Block for ServoValveCsi {
    fn step(&mut self, u: f64) -> f64 {
        self.plant.step(u)
    }

    fn reset(&mut self, output: f64) -> f64 {
        self.plant.reset(output)
    }
}
