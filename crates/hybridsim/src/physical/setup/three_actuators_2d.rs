//! `three_actuators_2d`: a loading beam driven in its plane by one horizontal and two vertical
//! actuators, controlling the beam's translations `u`, `v` and rotation `θ` at its centre
//! (Schellenberg, Mahin and Fenves 2009, the three-actuator planar setup).
//!
//! The horizontal actuator (reference length `L0`) is pinned at the beam's centre and pushes from
//! a reaction wall on the −x side; the vertical ones (`L1`, `L2`) are pinned at `x = −B/2` and
//! `x = +B/2` along the beam and push from the floor. With `R(θ)` the rotation:
//!
//! ```text
//! d0 = sqrt((L0 + u)² + v²) − L0
//! d1 = sqrt((u − (B/2) cos θ + B/2)² + (L1 + v − (B/2) sin θ)²) − L1
//! d2 = sqrt((u + (B/2) cos θ − B/2)² + (L2 + v + (B/2) sin θ)²) − L2      (nonlinear)
//! d0 = u,   d1 = v − (B/2) θ,   d2 = v + (B/2) θ                          (linear)
//! ```
//!
//! The DOFs are taken in the order `u, v, θ` (`dofs = [[n, "x"], [n, "y"], [n, "rz"]]`).

use super::planar::PlanarActuator;
use super::{Geometry, PlanarRig};
use std::f64::consts::FRAC_PI_2;

/// The three-actuator setup: reference lengths `[horizontal, left vertical, right vertical]`
/// and the distance `beam_length` between the vertical actuators.
pub fn three_actuators_2d(
    lengths: [f64; 3],
    beam_length: f64,
    geometry: Geometry,
) -> Result<PlanarRig, String> {
    if !(beam_length.is_finite() && beam_length > 0.0) {
        return Err(format!(
            "the beam length must be positive and finite, found {beam_length}"
        ));
    }
    let b = 0.5 * beam_length;
    PlanarRig::new(
        "three_actuators_2d",
        vec![
            PlanarActuator::new([0.0, 0.0], 0.0, lengths[0]),
            PlanarActuator::new([-b, 0.0], FRAC_PI_2, lengths[1]),
            PlanarActuator::new([b, 0.0], FRAC_PI_2, lengths[2]),
        ],
        vec![0, 1, 2],
        geometry,
    )
}
