//! Unit system of a model: length, force and time; mass and g are derived.
//!
//! Everything inside the engine is in the model's own consistent units. The mass unit is
//! force·time²/length (kg for N, m, s); the standard gravity is expressed in length/time².

use serde::Deserialize;

/// Standard gravity in m/s².
pub const STANDARD_GRAVITY_SI: f64 = 9.80665;

/// The `[units]` table of a model file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Units {
    /// Length unit: `m`, `cm`, `mm`, `in` or `ft`.
    pub length: String,
    /// Force unit: `N`, `kN`, `MN`, `lbf` or `kip`.
    pub force: String,
    /// Time unit: `s` or `ms`.
    pub time: String,
}

impl Default for Units {
    fn default() -> Self {
        Self {
            length: "m".into(),
            force: "N".into(),
            time: "s".into(),
        }
    }
}

impl Units {
    /// Metres per length unit.
    pub fn length_in_m(&self) -> Option<f64> {
        Some(match self.length.as_str() {
            "m" => 1.0,
            "cm" => 0.01,
            "mm" => 0.001,
            "in" => 0.0254,
            "ft" => 0.3048,
            _ => return None,
        })
    }

    /// Newtons per force unit.
    pub fn force_in_n(&self) -> Option<f64> {
        Some(match self.force.as_str() {
            "N" => 1.0,
            "kN" => 1e3,
            "MN" => 1e6,
            "lbf" => 4.448_221_615_260_5,
            "kip" => 4_448.221_615_260_5,
            _ => return None,
        })
    }

    /// Seconds per time unit.
    pub fn time_in_s(&self) -> Option<f64> {
        Some(match self.time.as_str() {
            "s" => 1.0,
            "ms" => 1e-3,
            _ => return None,
        })
    }

    /// Standard gravity in the model's length/time² (derived, never given by the user).
    pub fn gravity(&self) -> f64 {
        let l = self.length_in_m().unwrap_or(1.0);
        let t = self.time_in_s().unwrap_or(1.0);
        STANDARD_GRAVITY_SI / l * t * t
    }

    /// Name of the mass unit (force·time²/length).
    pub fn mass_unit(&self) -> String {
        if self.force == "N" && self.length == "m" && self.time == "s" {
            "kg".into()
        } else {
            format!("{}*{}^2/{}", self.force, self.time, self.length)
        }
    }

    /// Unit label of a generalized displacement for a DOF name (rotations start with `r`).
    pub fn displacement_unit(&self, dof: &str) -> String {
        if is_rotation(dof) {
            "rad".into()
        } else {
            self.length.clone()
        }
    }

    /// Unit of a generalized velocity.
    pub fn velocity_unit(&self, dof: &str) -> String {
        format!("{}/{}", self.displacement_unit(dof), self.time)
    }

    /// Unit of a generalized acceleration.
    pub fn acceleration_unit(&self, dof: &str) -> String {
        format!("{}/{}^2", self.displacement_unit(dof), self.time)
    }

    /// Unit of a generalized force (moments for rotations).
    pub fn force_unit(&self, dof: &str) -> String {
        if is_rotation(dof) {
            format!("{}*{}", self.force, self.length)
        } else {
            self.force.clone()
        }
    }

    /// Unit of energy.
    pub fn energy_unit(&self) -> String {
        format!("{}*{}", self.force, self.length)
    }
}

/// DOF names starting with `r` (`rx`, `ry`, `rz`, `r`) are rotations.
pub fn is_rotation(dof: &str) -> bool {
    dof.starts_with('r')
}
