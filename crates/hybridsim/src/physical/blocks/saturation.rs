//! Saturation: the output is the input clamped to `[min, max]`.

use super::Block;

/// Clamp to `[min, max]` (stateless).
#[derive(Debug, Clone, Copy)]
pub struct Saturation {
    min: f64,
    max: f64,
}

impl Saturation {
    /// `min < max` (either may be infinite).
    pub fn new(min: f64, max: f64) -> Result<Self, String> {
        if min.is_nan() || max.is_nan() || min >= max {
            return Err(format!("needs min < max, found min = {min}, max = {max}"));
        }
        Ok(Self { min, max })
    }
}

impl Block for Saturation {
    fn step(&mut self, u: f64) -> f64 {
        u.clamp(self.min, self.max)
    }

    fn reset(&mut self, output: f64) -> f64 {
        output
    }
}
