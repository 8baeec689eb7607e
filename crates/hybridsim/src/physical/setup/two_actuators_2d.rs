//! `two_actuators_2d`: a horizontal and a vertical actuator pinned at one point of the specimen
//! (a rigid link or loading shoe), driving its two translations `u` (x) and `v` (y)
//! (Schellenberg, Mahin and Fenves 2009, the two-actuator planar setup).
//!
//! The horizontal actuator (reference length `L0`) pushes from a reaction wall on the −x side,
//! the vertical one (`L1`) from the floor below:
//!
//! ```text
//! d0 = sqrt((L0 + u)² + v²) − L0,      d1 = sqrt(u² + (L1 + v)²) − L1     (nonlinear)
//! d0 = u,                              d1 = v                             (linear)
//! ```

use super::planar::PlanarActuator;
use super::{Geometry, PlanarRig};

/// The two-actuator setup with reference lengths `[horizontal, vertical]`.
pub fn two_actuators_2d(lengths: [f64; 2], geometry: Geometry) -> Result<PlanarRig, String> {
    PlanarRig::new(
        "two_actuators_2d",
        vec![
            PlanarActuator::new([0.0, 0.0], 0.0, lengths[0]),
            PlanarActuator::new([0.0, 0.0], std::f64::consts::FRAC_PI_2, lengths[1]),
        ],
        vec![0, 1],
        geometry,
    )
}
