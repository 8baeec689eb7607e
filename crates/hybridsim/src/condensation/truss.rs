//! The elastic truss (bar) element.

use super::{axis, non_negative, positive, FrameElement, MassForm};
use nalgebra::{DMatrix, Vector3};

/// An elastic truss between two nodes: axial stiffness `E A / L` along its axis,
/// `mass_per_length` m̄ (consistent `m̄L/6 [2 1; 1 2]` in each direction, or lumped). Its
/// nodes' rotations carry no stiffness from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Truss {
    /// Node indices.
    pub nodes: [usize; 2],
    /// Young's modulus E.
    pub e: f64,
    /// Area A.
    pub area: f64,
    /// Mass per unit length m̄.
    pub mass_per_length: f64,
}

impl FrameElement for Truss {
    fn nodes(&self) -> [usize; 2] {
        self.nodes
    }
    fn stiffness(&self, coords: &[Vector3<f64>]) -> Result<DMatrix<f64>, String> {
        positive("E", self.e)?;
        positive("A", self.area)?;
        let [a, b] = self.nodes;
        let (l, c) = axis(coords, a, b)?;
        let k = self.e * self.area / l;
        let mut out = DMatrix::zeros(12, 12);
        for i in 0..3 {
            for j in 0..3 {
                let v = k * c[i] * c[j];
                out[(i, j)] = v;
                out[(6 + i, 6 + j)] = v;
                out[(i, 6 + j)] = -v;
                out[(6 + i, j)] = -v;
            }
        }
        Ok(out)
    }
    fn mass(&self, coords: &[Vector3<f64>], form: MassForm) -> Result<DMatrix<f64>, String> {
        non_negative("mass_per_length", self.mass_per_length)?;
        let [a, b] = self.nodes;
        let (l, _) = axis(coords, a, b)?;
        let total = self.mass_per_length * l;
        let mut out = DMatrix::zeros(12, 12);
        for i in 0..3 {
            match form {
                MassForm::Lumped => {
                    out[(i, i)] = 0.5 * total;
                    out[(6 + i, 6 + i)] = 0.5 * total;
                }
                MassForm::Consistent => {
                    out[(i, i)] = total / 3.0;
                    out[(6 + i, 6 + i)] = total / 3.0;
                    out[(i, 6 + i)] = total / 6.0;
                    out[(6 + i, i)] = total / 6.0;
                }
            }
        }
        Ok(out)
    }
}
