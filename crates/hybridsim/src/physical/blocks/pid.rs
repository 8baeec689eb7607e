//! PID controller with a filtered derivative and an output limit with anti-windup:
//!
//! `C(s) = k_p + k_i/s + k_d s/(T_f s + 1)`,
//!
//! the textbook parallel form (Åström & Hägglund 1995): the derivative is filtered by a
//! first-order lag of time constant `T_f` (given directly, or as `T_f = k_d/(k_p N)` from the
//! derivative filter number `N`, typically 5–20), so that `C` is proper and its high-frequency
//! gain is bounded by `k_p + k_d/T_f`.
//!
//! Discretization at the controller tick Δt^C:
//! - Tustin (default, optionally prewarped; `α = 2/Δt`, or `ω₀/tan(ω₀Δt/2)`): the integral is
//!   the trapezoidal rule `I_k = I_{k−1} + (k_i/α)(e_k + e_{k−1})`, the derivative the Tustin
//!   image of `k_d s/(T_f s + 1)`;
//! - FOH: the triangle-hold equivalent of `1/s` is Tustin's, so the integral is the same; the
//!   derivative is the FOH image;
//! - ZOH: `I_k = I_{k−1} + k_i Δt e_{k−1}` (the exact ZOH image of `k_i/s`), derivative by ZOH.
//!
//! Output limit `[min, max]`: the output is clamped, and the integral is not advanced on a tick
//! where that would drive an already saturated output further out (conditional integration, the
//! clamping anti-windup described by Åström & Hägglund 1995).

use super::{Block, StateSpace};
use crate::model::lab::Discretization;

/// Discrete PID of one error signal. Built once; a step allocates nothing.
#[derive(Debug, Clone)]
pub struct Pid {
    kp: f64,
    /// `k_i/α` (Tustin/FOH) or `k_i Δt` (ZOH).
    ki_step: f64,
    zoh: bool,
    derivative: Option<StateSpace>,
    min: f64,
    max: f64,
    integral: f64,
    e_prev: f64,
}

impl Pid {
    /// `k_p`, `k_i` (1/s), `k_d` (s), derivative filter `T_f` (s; required positive when
    /// `k_d ≠ 0`), output limits `min < max` (infinite: none), at tick `dt`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kp: f64,
        ki: f64,
        kd: f64,
        tf: f64,
        min: f64,
        max: f64,
        dt: f64,
        how: Discretization,
    ) -> Result<Self, String> {
        if !(kp.is_finite() && ki.is_finite() && kd.is_finite()) {
            return Err(format!(
                "gains must be finite, found kp = {kp}, ki = {ki}, kd = {kd}"
            ));
        }
        if min.is_nan() || max.is_nan() || min >= max {
            return Err(format!("needs min < max, found min = {min}, max = {max}"));
        }
        if !(dt.is_finite() && dt > 0.0) {
            return Err(format!("the controller tick must be positive, found {dt}"));
        }
        let derivative = if kd != 0.0 {
            if !(tf.is_finite() && tf > 0.0) {
                return Err(format!(
                    "a derivative gain needs a positive filter time constant, found {tf}"
                ));
            }
            Some(StateSpace::transfer_function(
                &[kd, 0.0],
                &[tf, 1.0],
                dt,
                how,
            )?)
        } else {
            None
        };
        let (ki_step, zoh) = match how {
            Discretization::Zoh => (ki * dt, true),
            Discretization::Foh => (ki * dt / 2.0, false),
            Discretization::Tustin { prewarp_hz } => {
                let alpha = match prewarp_hz {
                    None => 2.0 / dt,
                    Some(f) => {
                        let w = 2.0 * std::f64::consts::PI * f;
                        if w.is_nan() || w * dt / 2.0 >= std::f64::consts::FRAC_PI_2 {
                            return Err(format!(
                                "prewarp frequency {f} Hz must lie below the Nyquist \
                                 frequency {} Hz",
                                0.5 / dt
                            ));
                        }
                        w / (w * dt / 2.0).tan()
                    }
                };
                (ki / alpha, false)
            }
        };
        Ok(Self {
            kp,
            ki_step,
            zoh,
            derivative,
            min,
            max,
            integral: 0.0,
            e_prev: 0.0,
        })
    }

    /// The integral term after the last step.
    pub fn integral(&self) -> f64 {
        self.integral
    }
}

impl Block for Pid {
    fn step(&mut self, e: f64) -> f64 {
        let d = match &mut self.derivative {
            Some(b) => b.step(e),
            None => 0.0,
        };
        let increment = if self.zoh {
            self.ki_step * self.e_prev
        } else {
            self.ki_step * (e + self.e_prev)
        };
        self.e_prev = e;
        let p = self.kp * e + d;
        let candidate = self.integral + increment;
        let u = p + candidate;
        // Conditional integration: no integration that pushes a saturated output further.
        if !((u > self.max && increment > 0.0) || (u < self.min && increment < 0.0)) {
            self.integral = candidate;
        }
        (p + self.integral).clamp(self.min, self.max)
    }

    /// At rest with zero error the output is the integral: it is set to `output` (clamped to
    /// the limits), and the error at rest is zero. Without integral action the error that
    /// gives `output` through `k_p` is returned (zero if `k_p = 0`).
    fn reset(&mut self, output: f64) -> f64 {
        if let Some(b) = &mut self.derivative {
            b.reset(0.0);
        }
        if self.ki_step != 0.0 {
            self.integral = output.clamp(self.min, self.max);
            self.e_prev = 0.0;
            0.0
        } else {
            self.integral = 0.0;
            let e = if self.kp != 0.0 {
                output / self.kp
            } else {
                0.0
            };
            self.e_prev = e;
            e
        }
    }
}
