//! Phase lead/lag compensator `C(s) = K (s + z)/(s + p)` (Ogata 2010): a lead
//! when `z < p` (phase advance, largest at `ω_m = √(z p)`), a lag when `z > p`. Lab engineers
//! often give it by its centre frequency `f_m` (Hz) and the phase `φ_m` it adds there (positive:
//! lead, negative: lag): with `α = (1 − sin φ_m)/(1 + sin φ_m)`, `z = ω_m √α`, `p = ω_m/√α`,
//! which is [`zero_pole_from_phase`]. DC gain `K z/p`, high-frequency gain `K`.
//!
//! It is a first-order linear block, discretized like any other (Tustin by default) and stepped
//! as a [`StateSpace`].

use super::StateSpace;
use crate::model::lab::Discretization;

/// Zero and pole (rad/s) of the lead/lag with the largest phase `phase_deg` (|φ| < 90°) at
/// `frequency_hz`.
pub fn zero_pole_from_phase(frequency_hz: f64, phase_deg: f64) -> (f64, f64) {
    let wm = 2.0 * std::f64::consts::PI * frequency_hz;
    let s = phase_deg.to_radians().sin();
    let alpha = (1.0 - s) / (1.0 + s);
    (wm * alpha.sqrt(), wm / alpha.sqrt())
}

/// The discretized `K (s + z)/(s + p)` (`p > 0`: stable).
pub fn lead_lag(
    gain: f64,
    zero: f64,
    pole: f64,
    dt: f64,
    how: Discretization,
) -> Result<StateSpace, String> {
    if !(pole.is_finite() && pole > 0.0) {
        return Err(format!("the pole must be positive (stable), found {pole}"));
    }
    if !(gain.is_finite() && zero.is_finite()) {
        return Err(format!(
            "gain and zero must be finite, found {gain}, {zero}"
        ));
    }
    StateSpace::transfer_function(&[gain, gain * zero], &[1.0, pole], dt, how)
}
