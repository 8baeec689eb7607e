//! Pure delay of a (fractional) number of controller ticks, linear interpolation between the
//! two neighbouring samples.

use super::Block;

/// Ring buffer of past inputs, sized at construction.
#[derive(Debug, Clone)]
pub struct Delay {
    ticks: f64,
    whole: usize,
    frac: f64,
    history: Vec<f64>,
    head: usize,
}

/// Largest delay in controller ticks (one history sample per tick is kept).
pub const MAX_DELAY_TICKS: f64 = 1.0e6;

impl Delay {
    /// A delay of `delay` seconds at tick `dt`.
    pub fn new(delay: f64, dt: f64) -> Result<Self, String> {
        let ticks = delay / dt;
        if !(ticks.is_finite() && ticks >= 0.0) {
            return Err(format!("must be a finite delay ≥ 0 s, found {delay}"));
        }
        if ticks > MAX_DELAY_TICKS {
            return Err(format!(
                "{delay} s is {ticks:e} controller ticks of dt_C = {dt:e} s; at most \
                 {MAX_DELAY_TICKS:e} are supported"
            ));
        }
        let whole = ticks.floor() as usize;
        Ok(Self {
            ticks,
            whole,
            frac: ticks - whole as f64,
            history: vec![0.0; whole + 2],
            head: 0,
        })
    }

    /// Delay in ticks.
    pub fn ticks(&self) -> f64 {
        self.ticks
    }
}

impl Block for Delay {
    fn step(&mut self, u: f64) -> f64 {
        let n = self.history.len();
        self.head = (self.head + 1) % n;
        self.history[self.head] = u;
        let at = |k: usize| self.history[(self.head + n - k) % n];
        if self.frac == 0.0 {
            at(self.whole)
        } else {
            at(self.whole) + self.frac * (at(self.whole + 1) - at(self.whole))
        }
    }

    fn reset(&mut self, output: f64) -> f64 {
        self.history.iter_mut().for_each(|h| *h = output);
        self.head = 0;
        output
    }
}
