//! Actuator dynamics of the virtual laboratory: from the command to the achieved displacement,
//! one call per controller tick Δt^C (wall clock), allocation-free after construction.
//!
//! Models (Abbiati et al. 2020, §1 "actuator lag, typically 10–20 ms"; the real-time hybrid
//! simulation benchmark literature for the servo-hydraulic model with control–structure
//! interaction): pure delay, first-order lag, a general linear transfer function discretized by the
//! bilinear (Tustin) transform, and a servo-hydraulic actuator coupled with the specimen force;
//! or a chain of [`super::blocks`] (linear blocks discretized by ZOH, FOH or Tustin, delays,
//! saturation, rate limits, quantizers, the servo-valve/CSI plant of Dyke et al. 1995).

use super::blocks::{Block, Series};
use crate::model::lab::{ActuatorDynamics, BlockSpec, ControllerSettings};

/// Actuator state machine.
#[derive(Debug, Clone)]
pub enum Actuator {
    /// Achieved = commanded.
    Ideal,
    /// Pure delay of `ticks` (fractional) controller ticks, linear interpolation.
    Delay {
        /// Delay in ticks.
        ticks: f64,
        /// Ring of past commands (capacity ⌈ticks⌉ + 2).
        history: Vec<f64>,
        /// Index of the newest entry.
        head: usize,
    },
    /// First-order lag: `x_k = x_{k−1} + a (d_k − x_{k−1})`, `a = 1 − e^{−Δt^C/τ}`.
    FirstOrder {
        /// Discrete gain.
        a: f64,
        /// State.
        x: f64,
    },
    /// Direct-form difference equation `Σ a_i y_{k−i} = Σ b_i d_{k−i}`, `a_0 = 1`.
    Linear {
        /// Numerator coefficients.
        b: Vec<f64>,
        /// Denominator coefficients (`a[0] = 1`).
        a: Vec<f64>,
        /// Past inputs (newest first).
        xs: Vec<f64>,
        /// Past outputs (newest first).
        ys: Vec<f64>,
    },
    /// Servo-hydraulic actuator `m ẍ = A p − F_s`, `C ṗ = K (d − x) − A ẋ − c_l p`, with the
    /// specimen force linearized within the tick as `F_s ≈ F_prev + k_s (x − x_prev)`.
    ServoHydraulic {
        /// K.
        gain: f64,
        /// A.
        area: f64,
        /// C = V/(4β).
        compliance: f64,
        /// c_l.
        leakage: f64,
        /// m.
        mass: f64,
        /// Substeps per tick.
        substeps: usize,
        /// Tangent stiffness of the specimen (specimen units) used within a tick.
        k_specimen: f64,
        /// Position, velocity, pressure.
        state: [f64; 3],
    },
    /// A chain of blocks ([`ActuatorDynamics::Blocks`]).
    Blocks(Series),
}

/// Multiply two polynomials (coefficients highest power first).
fn poly_mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// Bilinear (Tustin) discretization of `num(s)/den(s)` at step `dt`: substitute
/// `s = (2/dt)(z − 1)/(z + 1)` and multiply through by `(z + 1)^n`, `n = deg den`.
/// Returns `(b, a)` in powers of `z^{-1}` with `a[0] = 1`.
///
/// Leading zero coefficients are dropped; the function must be proper (deg num ≤ deg den,
/// which the configuration checks); an improper numerator keeps only its proper part.
pub fn tustin(num: &[f64], den: &[f64], dt: f64) -> (Vec<f64>, Vec<f64>) {
    let strip = |p: &[f64]| -> Vec<f64> {
        let first = p
            .iter()
            .position(|c| *c != 0.0)
            .unwrap_or(p.len().saturating_sub(1));
        let q = p[first.min(p.len())..].to_vec();
        if q.is_empty() {
            vec![0.0]
        } else {
            q
        }
    };
    let den = strip(den);
    let mut num = strip(num);
    if num.len() > den.len() {
        num.drain(..num.len() - den.len());
    }
    let (num, den) = (&num[..], &den[..]);
    let n = den.len() - 1;
    let k = 2.0 / dt;
    let expand = |p: &[f64]| -> Vec<f64> {
        // p(s) = Σ_i p_i s^{deg−i}; padded to degree n.
        let deg = p.len() - 1;
        let mut out = vec![0.0; n + 1];
        for (i, c) in p.iter().enumerate() {
            let power = deg - i;
            let mut term = vec![*c * k.powi(power as i32)];
            for _ in 0..power {
                term = poly_mul(&term, &[1.0, -1.0]);
            }
            for _ in 0..(n - power) {
                term = poly_mul(&term, &[1.0, 1.0]);
            }
            for (j, t) in term.iter().enumerate() {
                out[j] += t;
            }
        }
        out
    };
    let b = expand(num);
    let a = expand(den);
    let a0 = a[0];
    (
        b.iter().map(|x| x / a0).collect(),
        a.iter().map(|x| x / a0).collect(),
    )
}

impl Actuator {
    /// Build for controller tick `dt_c` (s). `k_specimen` (specimen units) feeds the
    /// servo-hydraulic model's in-tick linearization.
    ///
    /// A block chain is built as the configuration checked it ([`Actuator::try_new`]); one that
    /// cannot be built (only a hand-made, unchecked one) becomes an actuator that never moves,
    /// which the safety layer's tracking checks then report.
    pub fn new(d: &ActuatorDynamics, dt_c: f64, k_specimen: f64) -> Self {
        Self::try_new(d, dt_c, k_specimen).unwrap_or_else(|_| {
            Actuator::Blocks(Series::from_blocks(vec![
                super::blocks::AnyBlock::Saturation(
                    super::blocks::Saturation::new(0.0, f64::MIN_POSITIVE)
                        .expect("0 < MIN_POSITIVE"),
                ),
            ]))
        })
    }

    /// Build for controller tick `dt_c`, or why a block chain cannot be built.
    pub fn try_new(
        d: &ActuatorDynamics,
        dt_c: f64,
        k_specimen: f64,
    ) -> Result<Self, super::blocks::BuildError> {
        Ok(match d {
            ActuatorDynamics::Ideal => Actuator::Ideal,
            ActuatorDynamics::Delay { delay } => {
                let ticks = delay / dt_c;
                Actuator::Delay {
                    ticks,
                    history: vec![0.0; ticks.ceil() as usize + 2],
                    head: 0,
                }
            }
            ActuatorDynamics::FirstOrder { tau } => Actuator::FirstOrder {
                a: 1.0 - (-dt_c / tau).exp(),
                x: 0.0,
            },
            ActuatorDynamics::TransferFunction { num, den } => {
                let (b, a) = tustin(num, den, dt_c);
                Actuator::Linear {
                    xs: vec![0.0; b.len()],
                    ys: vec![0.0; a.len()],
                    b,
                    a,
                }
            }
            ActuatorDynamics::ServoHydraulic {
                gain,
                area,
                compliance,
                leakage,
                mass,
                substeps,
            } => Actuator::ServoHydraulic {
                gain: *gain,
                area: *area,
                compliance: *compliance,
                leakage: *leakage,
                mass: *mass,
                substeps: *substeps,
                k_specimen,
                state: [0.0; 3],
            },
            ActuatorDynamics::Blocks(specs) => Actuator::Blocks(Series::new(specs, dt_c)?),
        })
    }

    /// Reset to rest at position `x0` with specimen force `f0` (measure-at-rest, bumpless);
    /// returns the constant input that keeps it there (for a block chain, the input its
    /// blocks need, e.g. the servo-valve command; `x0` for the other models).
    pub fn reset(&mut self, x0: f64, f0: f64) -> f64 {
        match self {
            Actuator::Ideal => x0,
            Actuator::Delay { history, head, .. } => {
                history.iter_mut().for_each(|h| *h = x0);
                *head = 0;
                x0
            }
            Actuator::FirstOrder { x, .. } => {
                *x = x0;
                x0
            }
            Actuator::Linear { b, a, xs, ys } => {
                xs.iter_mut().for_each(|v| *v = x0);
                // Steady state y = G(1) x0 for a stable filter.
                let g: f64 = b.iter().sum::<f64>() / a.iter().sum::<f64>();
                ys.iter_mut().for_each(|v| *v = g * x0);
                x0
            }
            Actuator::ServoHydraulic { area, state, .. } => {
                *state = [x0, 0.0, f0 / *area];
                x0
            }
            Actuator::Blocks(series) => series.reset(x0),
        }
    }

    /// Advance one tick with command `d`; `f_prev` is the specimen force of the previous tick
    /// (control–structure interaction). Returns the achieved displacement. No allocation.
    pub fn tick(&mut self, d: f64, dt_c: f64, f_prev: f64) -> f64 {
        match self {
            Actuator::Ideal => d,
            Actuator::Delay {
                ticks,
                history,
                head,
            } => {
                let n = history.len();
                *head = (*head + 1) % n;
                history[*head] = d;
                let whole = ticks.floor() as usize;
                let frac = *ticks - whole as f64;
                let at = |k: usize| history[(*head + n - k) % n];
                if frac == 0.0 {
                    at(whole)
                } else {
                    at(whole) + frac * (at(whole + 1) - at(whole))
                }
            }
            Actuator::FirstOrder { a, x } => {
                *x += *a * (d - *x);
                *x
            }
            Actuator::Linear { b, a, xs, ys } => {
                xs.rotate_right(1);
                xs[0] = d;
                let mut y = 0.0;
                for (i, bi) in b.iter().enumerate() {
                    y += bi * xs[i];
                }
                for i in 1..a.len() {
                    y -= a[i] * ys[i - 1];
                }
                ys.rotate_right(1);
                ys[0] = y;
                y
            }
            Actuator::ServoHydraulic {
                gain,
                area,
                compliance,
                leakage,
                mass,
                substeps,
                k_specimen,
                state,
            } => {
                let h = dt_c / *substeps as f64;
                let x0 = state[0];
                let f = |s: &[f64; 3]| -> [f64; 3] {
                    let fs = f_prev + *k_specimen * (s[0] - x0);
                    [
                        s[1],
                        (*area * s[2] - fs) / *mass,
                        (*gain * (d - s[0]) - *area * s[1] - *leakage * s[2]) / *compliance,
                    ]
                };
                // Classical RK4 on the three states.
                for _ in 0..*substeps {
                    let s0 = *state;
                    let k1 = f(&s0);
                    let s1 = [
                        s0[0] + 0.5 * h * k1[0],
                        s0[1] + 0.5 * h * k1[1],
                        s0[2] + 0.5 * h * k1[2],
                    ];
                    let k2 = f(&s1);
                    let s2 = [
                        s0[0] + 0.5 * h * k2[0],
                        s0[1] + 0.5 * h * k2[1],
                        s0[2] + 0.5 * h * k2[2],
                    ];
                    let k3 = f(&s2);
                    let s3 = [s0[0] + h * k3[0], s0[1] + h * k3[1], s0[2] + h * k3[2]];
                    let k4 = f(&s3);
                    for i in 0..3 {
                        state[i] = s0[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
                    }
                }
                state[0]
            }
            Actuator::Blocks(series) => series.step(d),
        }
    }

    /// Nominal delay of the model in seconds (for summaries): the pure delay, τ of the lag,
    /// or the low-frequency group delay of a linear filter estimated from its coefficients.
    pub fn nominal_delay(&self, dt_c: f64) -> f64 {
        match self {
            Actuator::Ideal => 0.0,
            Actuator::Delay { ticks, .. } => ticks * dt_c,
            Actuator::FirstOrder { a, .. } => -dt_c / (1.0 - a).ln(),
            _ => f64::NAN,
        }
    }
}

/// The servo loop of one actuator of the virtual lab (`[lab.actuator.controller]`): the input
/// of the actuator's dynamics (the plant) is
///
/// `u_k = feedforward(d_k) + feedback(error_chain(d_k − x^m_{k−1}))`,
///
/// `d_k` the command of this tick and `x^m_{k−1}` the displacement channel of the previous
/// tick as the controller reads it (noise, ADC, `signals.measurement`): a discrete loop closed
/// over one controller sample, as a digital servo controller runs it.
#[derive(Debug, Clone)]
pub struct ServoLoop {
    feedback: Series,
    feedforward: Option<Series>,
    error: Option<Series>,
}

/// Where a servo loop could not be built: `"feedback"`, `"feedforward"` or `"error"`, and why.
pub type ServoLoopError = (&'static str, super::blocks::BuildError);

impl ServoLoop {
    /// Build `c` (and the `error` chain) at the controller tick `dt_c`.
    pub fn try_new(
        c: &ControllerSettings,
        error: &[BlockSpec],
        dt_c: f64,
    ) -> Result<Self, ServoLoopError> {
        let chain =
            |what: &'static str, specs: &[BlockSpec]| -> Result<Option<Series>, ServoLoopError> {
                if specs.is_empty() {
                    Ok(None)
                } else {
                    Series::new(specs, dt_c).map(Some).map_err(|e| (what, e))
                }
            };
        Ok(Self {
            feedback: chain("feedback", &c.feedback)?
                .unwrap_or_else(|| Series::from_blocks(Vec::new())),
            feedforward: chain("feedforward", &c.feedforward)?,
            error: chain("error", error)?,
        })
    }

    /// As [`ServoLoop::try_new`]; a loop that cannot be built (only a hand-made, unchecked one)
    /// commands zero, which the safety layer's tracking checks then report.
    pub fn new(c: &ControllerSettings, error: &[BlockSpec], dt_c: f64) -> Self {
        Self::try_new(c, error, dt_c).unwrap_or_else(|_| Self {
            feedback: Series::from_blocks(vec![super::blocks::AnyBlock::Saturation(
                super::blocks::Saturation::new(0.0, f64::MIN_POSITIVE).expect("0 < MIN_POSITIVE"),
            )]),
            feedforward: None,
            error: None,
        })
    }

    /// The plant input for command `d` and the previous tick's measured displacement `x_m`.
    pub fn step(&mut self, d: f64, x_m: f64) -> f64 {
        let mut e = d - x_m;
        if let Some(c) = &mut self.error {
            e = c.step(e);
        }
        let mut u = self.feedback.step(e);
        if let Some(c) = &mut self.feedforward {
            u += c.step(d);
        }
        u
    }

    /// At rest with command `d` and plant input `u0` (what holds the plant there): the
    /// feedforward at its steady state for `d` (its DC gain found from its own reset), the
    /// feedback supplying the rest (a controller with integral action at zero error).
    pub fn reset(&mut self, d: f64, u0: f64) {
        let mut ff = 0.0;
        if let Some(c) = &mut self.feedforward {
            let x1 = c.reset(1.0);
            let g = if x1.is_finite() && x1 != 0.0 {
                1.0 / x1
            } else {
                0.0
            };
            ff = g * d;
            c.reset(ff);
        }
        let e = self.feedback.reset(u0 - ff);
        if let Some(c) = &mut self.error {
            c.reset(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tustin;

    #[test]
    fn leading_zeros_and_an_improper_numerator_do_not_panic() {
        // 1/(0.01 s + 1) written with leading zeros in the numerator: same filter.
        let (b, a) = tustin(&[1.0], &[0.01, 1.0], 1e-3);
        let (b0, a0) = tustin(&[0.0, 0.0, 1.0], &[0.01, 1.0], 1e-3);
        assert_eq!((b, a), (b0, a0));
        // An improper numerator (refused by the configuration) must not underflow.
        let (b, a) = tustin(&[1.0, 2.0, 3.0], &[0.01, 1.0], 1e-3);
        assert_eq!(b.len(), a.len());
    }
}
