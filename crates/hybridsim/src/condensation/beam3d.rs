//! The elastic 3D beam-column (Euler–Bernoulli, 12 DOFs).

use super::{axis, non_negative, positive, rotate, FrameElement, MassForm};
use nalgebra::{DMatrix, Matrix3, Vector3};

/// An elastic 3D beam-column between two nodes: axial `E A`, torsion `G J`, bending `E I_z`
/// in the local `x–y` plane and `E I_y` in the local `x–z` plane; `mass_per_length` m̄
/// (consistent mass with rotary inertia of torsion `m̄ (I_y + I_z)/A`, or lumped). Local
/// axes as OpenSees's `Linear` transformation: `x` from node a to node b, `vecxz` in the
/// local `x–z` plane.
#[derive(Debug, Clone, PartialEq)]
pub struct Beam3d {
    /// Node indices.
    pub nodes: [usize; 2],
    /// Young's modulus E.
    pub e: f64,
    /// Shear modulus G.
    pub g: f64,
    /// Area A.
    pub area: f64,
    /// Second moment about the local z axis (bending in the local x–y plane).
    pub iz: f64,
    /// Second moment about the local y axis (bending in the local x–z plane).
    pub iy: f64,
    /// Torsion constant J.
    pub j: f64,
    /// Mass per unit length m̄.
    pub mass_per_length: f64,
    /// A vector in the local x–z plane (global components).
    pub vecxz: Vector3<f64>,
}

impl Beam3d {
    /// Rows: the local x, y, z axes in global components.
    pub(crate) fn rotation(&self, coords: &[Vector3<f64>]) -> Result<(f64, Matrix3<f64>), String> {
        let [a, b] = self.nodes;
        let (l, x) = axis(coords, a, b)?;
        let y = self.vecxz.cross(&x);
        let ny = y.norm();
        if !(ny.is_finite() && ny > 1e-9 * self.vecxz.norm().max(f64::MIN_POSITIVE)) {
            return Err(
                "vecxz is parallel to the element axis (or zero): give a vector in the \
                        local x–z plane"
                    .into(),
            );
        }
        let y = y / ny;
        let z = x.cross(&y);
        Ok((
            l,
            Matrix3::from_rows(&[x.transpose(), y.transpose(), z.transpose()]),
        ))
    }

    /// The 12 × 12 stiffness in local axes.
    pub(crate) fn local_stiffness(&self, l: f64) -> DMatrix<f64> {
        let mut k = DMatrix::zeros(12, 12);
        let (ea, gj) = (self.e * self.area, self.g * self.j);
        let (eiz, eiy) = (self.e * self.iz, self.e * self.iy);
        let mut set = |i: usize, j: usize, v: f64| {
            k[(i, j)] = v;
            k[(j, i)] = v;
        };
        set(0, 0, ea / l);
        set(6, 6, ea / l);
        set(0, 6, -ea / l);
        set(3, 3, gj / l);
        set(9, 9, gj / l);
        set(3, 9, -gj / l);
        let (l2, l3) = (l * l, l * l * l);
        // v, θz (x–y plane).
        set(1, 1, 12.0 * eiz / l3);
        set(1, 5, 6.0 * eiz / l2);
        set(1, 7, -12.0 * eiz / l3);
        set(1, 11, 6.0 * eiz / l2);
        set(5, 5, 4.0 * eiz / l);
        set(5, 7, -6.0 * eiz / l2);
        set(5, 11, 2.0 * eiz / l);
        set(7, 7, 12.0 * eiz / l3);
        set(7, 11, -6.0 * eiz / l2);
        set(11, 11, 4.0 * eiz / l);
        // w, θy (x–z plane; θy = −dw/dx).
        set(2, 2, 12.0 * eiy / l3);
        set(2, 4, -6.0 * eiy / l2);
        set(2, 8, -12.0 * eiy / l3);
        set(2, 10, -6.0 * eiy / l2);
        set(4, 4, 4.0 * eiy / l);
        set(4, 8, 6.0 * eiy / l2);
        set(4, 10, 2.0 * eiy / l);
        set(8, 8, 12.0 * eiy / l3);
        set(8, 10, 6.0 * eiy / l2);
        set(10, 10, 4.0 * eiy / l);
        k
    }

    /// The 12 × 12 mass in local axes.
    pub(crate) fn local_mass(&self, l: f64, form: MassForm) -> DMatrix<f64> {
        let mut m = DMatrix::zeros(12, 12);
        let total = self.mass_per_length * l;
        if form == MassForm::Lumped {
            for i in [0, 1, 2, 6, 7, 8] {
                m[(i, i)] = 0.5 * total;
            }
            return m;
        }
        let mut set = |i: usize, j: usize, v: f64| {
            m[(i, j)] = v;
            m[(j, i)] = v;
        };
        let a = total / 6.0;
        set(0, 0, 2.0 * a);
        set(6, 6, 2.0 * a);
        set(0, 6, a);
        let r2 = if self.area > 0.0 {
            (self.iy + self.iz) / self.area
        } else {
            0.0
        };
        set(3, 3, 2.0 * a * r2);
        set(9, 9, 2.0 * a * r2);
        set(3, 9, a * r2);
        let c = total / 420.0;
        let l2 = l * l;
        set(1, 1, 156.0 * c);
        set(1, 5, 22.0 * l * c);
        set(1, 7, 54.0 * c);
        set(1, 11, -13.0 * l * c);
        set(5, 5, 4.0 * l2 * c);
        set(5, 7, 13.0 * l * c);
        set(5, 11, -3.0 * l2 * c);
        set(7, 7, 156.0 * c);
        set(7, 11, -22.0 * l * c);
        set(11, 11, 4.0 * l2 * c);
        set(2, 2, 156.0 * c);
        set(2, 4, -22.0 * l * c);
        set(2, 8, 54.0 * c);
        set(2, 10, 13.0 * l * c);
        set(4, 4, 4.0 * l2 * c);
        set(4, 8, -13.0 * l * c);
        set(4, 10, -3.0 * l2 * c);
        set(8, 8, 156.0 * c);
        set(8, 10, 22.0 * l * c);
        set(10, 10, 4.0 * l2 * c);
        m
    }

    fn check(&self) -> Result<(), String> {
        positive("E", self.e)?;
        positive("A", self.area)?;
        non_negative("G", self.g)?;
        non_negative("Iy", self.iy)?;
        non_negative("Iz", self.iz)?;
        non_negative("J", self.j)?;
        non_negative("mass_per_length", self.mass_per_length)?;
        Ok(())
    }
}

impl FrameElement for Beam3d {
    fn nodes(&self) -> [usize; 2] {
        self.nodes
    }
    fn stiffness(&self, coords: &[Vector3<f64>]) -> Result<DMatrix<f64>, String> {
        self.check()?;
        let (l, r) = self.rotation(coords)?;
        Ok(rotate(&self.local_stiffness(l), &r))
    }
    fn mass(&self, coords: &[Vector3<f64>], form: MassForm) -> Result<DMatrix<f64>, String> {
        self.check()?;
        let (l, r) = self.rotation(coords)?;
        Ok(rotate(&self.local_mass(l, form), &r))
    }
}
