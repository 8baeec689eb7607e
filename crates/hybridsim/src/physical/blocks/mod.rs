//! Block models of the transfer system: linear blocks discretized at the controller tick
//! Δt^C (zero-order hold, first-order hold, Tustin; [`mod@discretize`]), a fractional delay,
//! saturation, rate limit, mid-tread quantizer, the servo-valve + actuator +
//! control–structure-interaction plant (Dyke et al. 1995; Silva et al. 2020), the controllers
//! ([`Pid`], [`mod@lead_lag`]), and a [`Series`] chaining them.
//!
//! Every block is built once (all buffers allocated then) and stepped once per controller tick
//! without allocating, locking or printing.

pub mod delay;
pub mod discretize;
pub mod lead_lag;
pub mod pid;
pub mod quantizer;
pub mod rate_limit;
pub mod saturation;
pub mod series;
pub mod servo_valve;
pub mod state_space;

pub use delay::Delay;
pub use discretize::{discretize, expm, tf_to_ss, Discrete};
pub use lead_lag::{lead_lag, zero_pole_from_phase};
pub use pid::Pid;
pub use quantizer::Quantizer;
pub use rate_limit::RateLimit;
pub use saturation::Saturation;
pub use series::Series;
pub use servo_valve::ServoValveCsi;
pub use state_space::StateSpace;

use crate::model::lab::{BlockSpec, Discretization};
use nalgebra::{DMatrix, DVector};

/// A single-input single-output block stepped once per controller tick.
pub trait Block {
    /// Advance one tick with input `input`; the output at this tick. Allocation-free.
    fn step(&mut self, input: f64) -> f64;

    /// Put the block at rest with output `output` (its steady state); returns the constant
    /// input that keeps it there. A block with zero DC gain rests at zero.
    fn reset(&mut self, output: f64) -> f64;
}

/// A block of a chain that could not be built: which block, which field, why.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildError {
    /// Index in the chain.
    pub block: usize,
    /// Field of the block's table the reason is about.
    pub field: &'static str,
    /// Why.
    pub reason: String,
}

/// Any block (static dispatch).
#[derive(Debug, Clone)]
pub enum AnyBlock {
    /// A linear block (state space, transfer function, first-order lag).
    Linear(StateSpace),
    /// Delay.
    Delay(Delay),
    /// Saturation.
    Saturation(Saturation),
    /// Rate limit.
    RateLimit(RateLimit),
    /// Quantizer.
    Quantizer(Quantizer),
    /// Servo-valve/CSI plant.
    ServoValveCsi(ServoValveCsi),
    /// PID controller.
    Pid(Pid),
}

impl AnyBlock {
    /// Build `spec` for tick `dt`; on failure the field concerned and why.
    pub fn new(spec: &BlockSpec, dt: f64) -> Result<Self, (&'static str, String)> {
        let linear_field = |how: &Discretization| match how {
            Discretization::Tustin {
                prewarp_hz: Some(_),
            } => "prewarp",
            _ => "discretization",
        };
        Ok(match spec {
            BlockSpec::StateSpace {
                a,
                b,
                c,
                d,
                discretization,
            } => {
                let n = b.len();
                if a.len() != n || a.iter().any(|r| r.len() != n) || c.len() != n {
                    return Err(("a", format!("A must be {n}×{n} and C of length {n}")));
                }
                let am = DMatrix::from_fn(n, n, |i, j| a[i][j]);
                let bm = DVector::from_column_slice(b);
                let cm = DMatrix::from_row_slice(1, n, c);
                let dm = DVector::from_element(1, *d);
                AnyBlock::Linear(
                    StateSpace::new(&am, &bm, &cm, &dm, dt, *discretization)
                        .map_err(|e| (linear_field(discretization), e))?,
                )
            }
            BlockSpec::TransferFunction {
                num,
                den,
                discretization,
            } => AnyBlock::Linear(
                StateSpace::transfer_function(num, den, dt, *discretization)
                    .map_err(|e| (linear_field(discretization), e))?,
            ),
            BlockSpec::FirstOrder {
                tau,
                discretization,
            } => AnyBlock::Linear(
                StateSpace::transfer_function(&[1.0], &[*tau, 1.0], dt, *discretization)
                    .map_err(|e| (linear_field(discretization), e))?,
            ),
            BlockSpec::Delay { delay } => {
                AnyBlock::Delay(Delay::new(*delay, dt).map_err(|e| ("delay", e))?)
            }
            BlockSpec::Saturation { min, max } => {
                AnyBlock::Saturation(Saturation::new(*min, *max).map_err(|e| ("max", e))?)
            }
            BlockSpec::RateLimit { rate } => {
                AnyBlock::RateLimit(RateLimit::new(*rate, dt).map_err(|e| ("rate", e))?)
            }
            BlockSpec::Quantizer { resolution, range } => AnyBlock::Quantizer(
                Quantizer::new(*resolution, *range).map_err(|e| ("resolution", e))?,
            ),
            BlockSpec::ServoValveCsi {
                params,
                discretization,
            } => AnyBlock::ServoValveCsi(
                ServoValveCsi::new(params, dt, *discretization)
                    .map_err(|e| (linear_field(discretization), e))?,
            ),
            BlockSpec::Pid {
                kp,
                ki,
                kd,
                derivative_time_constant,
                min,
                max,
                discretization,
            } => AnyBlock::Pid(
                Pid::new(
                    *kp,
                    *ki,
                    *kd,
                    *derivative_time_constant,
                    *min,
                    *max,
                    dt,
                    *discretization,
                )
                .map_err(|e| (linear_field(discretization), e))?,
            ),
            BlockSpec::LeadLag {
                gain,
                zero,
                pole,
                discretization,
            } => AnyBlock::Linear(
                lead_lag(*gain, *zero, *pole, dt, *discretization)
                    .map_err(|e| (linear_field(discretization), e))?,
            ),
        })
    }
}

impl Block for AnyBlock {
    fn step(&mut self, u: f64) -> f64 {
        match self {
            AnyBlock::Linear(b) => b.step(u),
            AnyBlock::Delay(b) => b.step(u),
            AnyBlock::Saturation(b) => b.step(u),
            AnyBlock::RateLimit(b) => b.step(u),
            AnyBlock::Quantizer(b) => b.step(u),
            AnyBlock::ServoValveCsi(b) => b.step(u),
            AnyBlock::Pid(b) => b.step(u),
        }
    }

    fn reset(&mut self, output: f64) -> f64 {
        match self {
            AnyBlock::Linear(b) => b.reset(output),
            AnyBlock::Delay(b) => b.reset(output),
            AnyBlock::Saturation(b) => b.reset(output),
            AnyBlock::RateLimit(b) => b.reset(output),
            AnyBlock::Quantizer(b) => b.reset(output),
            AnyBlock::ServoValveCsi(b) => b.reset(output),
            AnyBlock::Pid(b) => b.reset(output),
        }
    }
}

/// Multiply two polynomials (coefficients highest power first).
pub fn poly_mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}
