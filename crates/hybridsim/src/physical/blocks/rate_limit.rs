//! Rate limit: the output moves towards the input by at most `rate · Δt^C` per tick.

use super::Block;

/// Rate limiter with its previous output as state.
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    max_step: f64,
    last: f64,
}

impl RateLimit {
    /// At most `rate` units per second at tick `dt`.
    pub fn new(rate: f64, dt: f64) -> Result<Self, String> {
        let max_step = rate * dt;
        if !(rate.is_finite() && rate > 0.0 && max_step > 0.0) {
            return Err(format!("must be a positive finite rate, found {rate}"));
        }
        Ok(Self {
            max_step,
            last: 0.0,
        })
    }
}

impl Block for RateLimit {
    fn step(&mut self, u: f64) -> f64 {
        let y = self.last + (u - self.last).clamp(-self.max_step, self.max_step);
        // A NaN input leaves the output where it was (it cannot move at a bounded rate).
        if y.is_finite() {
            self.last = y;
        }
        self.last
    }

    fn reset(&mut self, output: f64) -> f64 {
        self.last = output;
        output
    }
}
