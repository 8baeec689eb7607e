//! A chain of blocks, the output of one into the next.

use super::{AnyBlock, Block, BuildError};
use crate::model::lab::BlockSpec;

/// Blocks applied in series (built once, stepped without allocation).
#[derive(Debug, Clone)]
pub struct Series {
    blocks: Vec<AnyBlock>,
}

impl Series {
    /// Build every block of `specs` for tick `dt`; the first failure names its block.
    pub fn new(specs: &[BlockSpec], dt: f64) -> Result<Self, BuildError> {
        let blocks = specs
            .iter()
            .enumerate()
            .map(|(j, s)| {
                AnyBlock::new(s, dt).map_err(|(field, reason)| BuildError {
                    block: j,
                    field,
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { blocks })
    }

    /// From built blocks.
    pub fn from_blocks(blocks: Vec<AnyBlock>) -> Self {
        Self { blocks }
    }

    /// The blocks.
    pub fn blocks(&self) -> &[AnyBlock] {
        &self.blocks
    }

    /// Force of the last servo-valve/CSI plant of the chain after the last step, if any.
    pub fn plant_force(&self) -> Option<f64> {
        self.blocks.iter().rev().find_map(|b| match b {
            AnyBlock::ServoValveCsi(p) => Some(p.force()),
            _ => None,
        })
    }
}

impl Block for Series {
    fn step(&mut self, u: f64) -> f64 {
        let mut y = u;
        for b in self.blocks.iter_mut() {
            y = b.step(y);
        }
        y
    }

    /// From the last block back to the first: each is put at rest with the output its
    /// successor needs as input.
    fn reset(&mut self, output: f64) -> f64 {
        let mut y = output;
        for b in self.blocks.iter_mut().rev() {
            y = b.reset(y);
        }
        y
    }
}
