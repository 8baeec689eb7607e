//! The elastic 2D beam-column of a plane frame in the global x–y plane.

use super::{beam3d::Beam3d, FrameElement, MassForm};
use nalgebra::{DMatrix, Vector3};

/// An elastic beam-column of a plane frame in the global `x–y` plane (DOFs `x`, `y`, `rz` of
/// each node): axial `E A` and bending `E I`; `mass_per_length` m̄ (consistent or lumped).
/// It is the 3D element with bending about the global `z` axis only, so its out-of-plane DOFs
/// (`z`, `rx`, `ry`) carry no stiffness and are restrained by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Beam2d {
    /// Node indices.
    pub nodes: [usize; 2],
    /// Young's modulus E.
    pub e: f64,
    /// Area A.
    pub area: f64,
    /// Second moment of area I (bending in the frame's plane).
    pub i: f64,
    /// Mass per unit length m̄.
    pub mass_per_length: f64,
}

impl Beam2d {
    fn as_3d(&self, coords: &[Vector3<f64>]) -> Result<Beam3d, String> {
        let [a, b] = self.nodes;
        if coords[a].z != 0.0 || coords[b].z != 0.0 {
            return Err("a 2D beam-column lies in the x–y plane (z = 0 at both nodes)".into());
        }
        Ok(Beam3d {
            nodes: self.nodes,
            e: self.e,
            g: 0.0,
            area: self.area,
            iz: self.i,
            iy: 0.0,
            j: 0.0,
            mass_per_length: self.mass_per_length,
            vecxz: Vector3::z(),
        })
    }
}

impl FrameElement for Beam2d {
    fn nodes(&self) -> [usize; 2] {
        self.nodes
    }
    fn stiffness(&self, coords: &[Vector3<f64>]) -> Result<DMatrix<f64>, String> {
        self.as_3d(coords)?.stiffness(coords)
    }
    fn mass(&self, coords: &[Vector3<f64>], form: MassForm) -> Result<DMatrix<f64>, String> {
        let mut m = self.as_3d(coords)?.mass(coords, form)?;
        // Keep only the in-plane DOFs' mass (x, y, rz); the rest is restrained anyway.
        for i in 0..12 {
            if matches!(i % 6, 2..=4) {
                for j in 0..12 {
                    m[(i, j)] = 0.0;
                    m[(j, i)] = 0.0;
                }
            }
        }
        Ok(m)
    }
}
