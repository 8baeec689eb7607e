//! `one_actuator`: one actuator on one DOF, its axis at an angle to the DOF's direction
//! (Schellenberg, Mahin and Fenves 2009, the one-actuator setup with an inclined actuator).
//!
//! The DOF translates the specimen's control point along its direction by `u`; the actuator of
//! reference length `L` meets that direction at the angle `α`:
//!
//! ```text
//! d = sqrt((L cos α + u)² + (L sin α)²) − L      (nonlinear),    d = u cos α      (linear)
//! ```
//!
//! `α = 90°` leaves the DOF uncontrolled (refused as a singular configuration).

use super::planar::PlanarActuator;
use super::{Geometry, PlanarRig};

/// The one-actuator setup: reference `length` (> 0), `angle` (radians) between the actuator's
/// axis and the DOF's direction.
pub fn one_actuator(length: f64, angle: f64, geometry: Geometry) -> Result<PlanarRig, String> {
    if !angle.is_finite() {
        return Err(format!("the angle must be finite, found {angle}"));
    }
    PlanarRig::new(
        "one_actuator",
        vec![PlanarActuator::new([0.0, 0.0], angle, length)],
        vec![0],
        geometry,
    )
}
