//! One actuator between a fixed reaction point and a rigid body moving in a plane: the
//! geometric relation every planar setup is built from.
//!
//! The body's control point starts at the origin and moves by `q = (u, v, θ)` (translations and
//! a rotation about the control point, counter-clockwise positive). The actuator is pinned to
//! the body at `offset` (body frame) and to the reaction wall or floor a distance `length`
//! behind that point along its unit axis `n`, so that the fixed pin is at `offset − length·n`.
//! In the current configuration the body pin is at `(u, v) + R(θ)·offset`; the actuator's
//! length change is
//!
//! ```text
//! d(q) = |(u, v) + R(θ)·offset − offset + length·n| − length            (nonlinear)
//! d(q) = n·(u, v) + θ · n·(−offset_y, offset_x)                          (linear)
//! ```
//!
//! and the gradient `∂d/∂q = e/|e| · ∂a/∂q`, `e` the current pin-to-pin vector, `∂a/∂θ =
//! R′(θ)·offset`. At `q = 0` both geometries agree to first order (the linear one is the
//! tangent of the nonlinear one), which is the small-displacement check of `tests/setups.rs`.
//! These are the kinematics of the experimental setups of Schellenberg, Mahin and Fenves (2009)
//! (OpenFresco), written here as one actuator on one rigid body.

use super::Geometry;

/// One actuator pinned to a planar rigid body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanarActuator {
    /// Body pin relative to the control point, body frame `[x, y]`.
    pub offset: [f64; 2],
    /// Unit axis from the fixed pin towards the body pin (reference configuration).
    pub axis: [f64; 2],
    /// Pin-to-pin length in the reference configuration (> 0).
    pub length: f64,
}

impl PlanarActuator {
    /// An actuator of `length` along the direction `angle` (radians from +x), pinned at
    /// `offset`.
    pub fn new(offset: [f64; 2], angle: f64, length: f64) -> Self {
        let (s, c) = angle.sin_cos();
        // Exact axes for the usual horizontal and vertical actuators (no 6e-17 leftovers).
        let round = |x: f64| if x.abs() < 1e-15 { 0.0 } else { x };
        Self {
            offset,
            axis: [round(c), round(s)],
            length,
        }
    }

    /// Current pin-to-pin vector for `q = (u, v, θ)`.
    fn vector(&self, q: [f64; 3]) -> [f64; 2] {
        let (s, c) = q[2].sin_cos();
        let [ox, oy] = self.offset;
        [
            q[0] + c * ox - s * oy - ox + self.length * self.axis[0],
            q[1] + s * ox + c * oy - oy + self.length * self.axis[1],
        ]
    }

    /// Length change `d(q)`.
    pub fn displacement(&self, q: [f64; 3], geometry: Geometry) -> f64 {
        match geometry {
            Geometry::Linear => {
                let g = self.gradient([0.0; 3], Geometry::Linear);
                g[0] * q[0] + g[1] * q[1] + g[2] * q[2]
            }
            Geometry::Nonlinear => {
                let e = self.vector(q);
                e[0].hypot(e[1]) - self.length
            }
        }
    }

    /// `∂d/∂q` at `q` (constant for the linear geometry).
    pub fn gradient(&self, q: [f64; 3], geometry: Geometry) -> [f64; 3] {
        let [ox, oy] = self.offset;
        match geometry {
            Geometry::Linear => {
                let [nx, ny] = self.axis;
                [nx, ny, -nx * oy + ny * ox]
            }
            Geometry::Nonlinear => {
                let e = self.vector(q);
                let l = e[0].hypot(e[1]);
                let (nx, ny) = (e[0] / l, e[1] / l);
                let (s, c) = q[2].sin_cos();
                let da = [-s * ox - c * oy, c * ox - s * oy];
                [nx, ny, nx * da[0] + ny * da[1]]
            }
        }
    }
}
