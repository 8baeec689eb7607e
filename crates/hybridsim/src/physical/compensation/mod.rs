//! Actuator compensation, applied to the desired actuator displacement before the safety check
//! (one file per compensator):
//!
//! - [`polynomial`]: delay compensation by polynomial extrapolation, with a node spacing (one
//!   tick, `n` ticks, or one coarse step) and a start-up policy (the classical
//!   polynomial-extrapolation compensator of real-time hybrid testing; §5.2 of Bursi et al. 2011
//!   uses it against a ≈ 20 ms delay);
//! - [`inverse`]: model-based inverse compensation, the inverse of a first- or second-order
//!   actuator model made proper by a low-pass, Tustin-discretized;
//! - [`adaptive`]: the adaptive time series (ATS) compensator of Chae, Kazemibidokhti & Ricles
//!   (2013), which identifies the amplitude and delay of the actuator online;
//! - [`compliance`]: loading-system compliance compensation, Abbiati et al. (2020), eq 15:
//!   `d_cmd = d_des + r_fbk/k`, with `k = k⁺` for `r_fbk ≥ 0` and `k⁻` otherwise
//!   (ALGORITHMS.md A18; units explicit, E29).
//!
//! Every compensator is built once and applied once per controller tick without allocating.

pub mod adaptive;
pub mod inverse;
pub mod polynomial;

pub use adaptive::AdaptiveTimeSeries;
pub use inverse::InverseCompensator;
pub use polynomial::DelayCompensator;

use crate::model::lab::ComplianceCompensation;

/// Compliance compensation (Abbiati et al. 2020, eq 15).
pub fn compliance(c: &ComplianceCompensation, d_des: f64, r_fbk: f64) -> f64 {
    let k = if r_fbk >= 0.0 {
        c.k_positive
    } else {
        c.k_negative
    };
    d_des + r_fbk / k
}
