//! `inverted_v_brace_2d`: an inverted-V (chevron) brace tested with its tip as the control
//! point; the actuators drive a rigid loading beam fixed to the tip a height `h` above it — one
//! horizontal actuator at the beam's centre, two vertical ones at `±B/2` (Schellenberg, Mahin
//! and Fenves 2009, the chevron-brace setup). The DOFs are the tip's `u`, `v`, `θ`.
//!
//! With the rigid arm the horizontal actuator sees the rotation too: in the linear geometry
//!
//! ```text
//! d0 = u − h θ,   d1 = v − (B/2) θ,   d2 = v + (B/2) θ
//! ```
//!
//! and in the nonlinear one each pin moves to `(u, v) + R(θ)·(x_i, h)` (see [`super::planar`]).

use super::planar::PlanarActuator;
use super::{Geometry, PlanarRig};
use std::f64::consts::FRAC_PI_2;

/// The inverted-V brace setup: reference lengths `[horizontal, left vertical, right vertical]`,
/// the distance `beam_length` between the vertical actuators and the height `arm_height` of the
/// loading beam above the brace tip.
pub fn inverted_v_brace_2d(
    lengths: [f64; 3],
    beam_length: f64,
    arm_height: f64,
    geometry: Geometry,
) -> Result<PlanarRig, String> {
    if !(beam_length.is_finite() && beam_length > 0.0) {
        return Err(format!(
            "the beam length must be positive and finite, found {beam_length}"
        ));
    }
    if !arm_height.is_finite() {
        return Err(format!("the arm height must be finite, found {arm_height}"));
    }
    let b = 0.5 * beam_length;
    let h = arm_height;
    PlanarRig::new(
        "inverted_v_brace_2d",
        vec![
            PlanarActuator::new([0.0, h], 0.0, lengths[0]),
            PlanarActuator::new([-b, h], FRAC_PI_2, lengths[1]),
            PlanarActuator::new([b, h], FRAC_PI_2, lengths[2]),
        ],
        vec![0, 1, 2],
        geometry,
    )
}
