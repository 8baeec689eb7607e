//! Mid-tread quantizer (zero is a level) saturating at ±range: an A/D or D/A converter.

use super::Block;

/// `y = q · clamp(round(u/q), −L, L)`, `L = ⌊range/q⌋`; halves round away from zero.
#[derive(Debug, Clone, Copy)]
pub struct Quantizer {
    resolution: f64,
    levels: f64,
}

impl Quantizer {
    /// Step `resolution` > 0, full scale `range` ≥ `resolution`, both finite.
    pub fn new(resolution: f64, range: f64) -> Result<Self, String> {
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(format!(
                "the resolution must be positive and finite, found {resolution}"
            ));
        }
        if !(range.is_finite() && range >= resolution) {
            return Err(format!(
                "the range must be finite and at least the resolution {resolution}, found {range}"
            ));
        }
        let levels = (range / resolution).floor();
        if levels > 2f64.powi(52) {
            return Err(format!(
                "range/resolution = {levels:e} levels: more than 2^52 cannot be represented"
            ));
        }
        Ok(Self { resolution, levels })
    }
}

impl Block for Quantizer {
    fn step(&mut self, u: f64) -> f64 {
        (u / self.resolution)
            .round()
            .clamp(-self.levels, self.levels)
            * self.resolution
    }

    fn reset(&mut self, output: f64) -> f64 {
        output
    }
}
