//! Elastomeric (rubber) bearing in shear: linear rubber plus an optional Bouc–Wen hysteretic
//! part of characteristic strength `Qd` (issue 17).

use super::declare::{impl_declared, with_values, Declared, Param, Rule};
use super::switching::{abs_pow, deformation, re, scatter_force, sgn};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};

/// Elastomeric bearing in shear between two nodes (or a node and the ground) on one horizontal
/// DOF direction (shear only: no axial, rotational or P-Δ coupling).
///
/// **Law.** With `d = u1 − u2` the shear deformation,
///
/// `F = k_r d + Qd z`, `k_r = G A_r / t_r`,
/// `ż = (1 − |z|^η [γ + β sgn(ḋ z)]) ḋ / u_y`,
///
/// the rubber's shear stiffness `k_r` from its shear modulus `G`, bonded area `A_r` and total
/// rubber thickness `t_r` (the stiffness of a rubber layer in simple shear,
/// Naeim and Kelly 1999), and a smooth hysteretic part: the characteristic strength `Qd` (the
/// force at zero deformation on a large loop: the lead core's or the high-damping compound's
/// yield strength) reached through a Bouc–Wen variable `z` (`|z| → 1`) with yield
/// deformation `u_y`. This is the shear law of OpenSees's `elastomericBearingBoucWen` with
/// `kInit = k_r + Qd/u_y`, `qd = Qd`, `alpha1 = k_r/kInit`, `alpha2 = 0`, `mu = 2` (unused
/// with `alpha2 = 0`), `eta`, `beta`, `gamma`. `Qd = 0` (default) is a linear low-damping
/// bearing, `F = k_r d`.
///
/// **Parameters**: `G` (force/length²), `area` (length²), `rubber_thickness` (length), `Qd`
/// (force, default 0), `yield_displacement` (length, required when `Qd > 0`), `eta` (default
/// 1), `beta` and `gamma` (default 0.5 each; `β + γ = 1` makes `|z| ≤ 1`).
///
/// **Extra states**: `z` and `e`, the absorbed energy `ė = F ḋ`. Dissipated energy: `e` minus
/// the rubber's `½ k_r d²` and the hysteretic part's elastic `½ Qd u_y z²`.
#[derive(Debug, Clone)]
pub struct ElastomericBearing {
    dofs: super::PairDofs,
    /// Shear modulus `G`.
    pub g: f64,
    /// Bonded rubber area `A_r`.
    pub area: f64,
    /// Total rubber thickness `t_r`.
    pub thickness: f64,
    /// Characteristic strength `Qd`.
    pub qd: f64,
    /// Yield deformation `u_y` of the hysteretic part.
    pub uy: f64,
    /// Exponent `η`.
    pub eta: f64,
    /// `β`.
    pub beta: f64,
    /// `γ`.
    pub gamma: f64,
}

impl Declared for ElastomericBearing {
    const KIND: &'static str = "elastomeric_bearing";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("G", "F/L^2", Rule::Positive, |e| e.g, |e, x| e.g = x),
        Param::new("area", "L^2", Rule::Positive, |e| e.area, |e, x| e.area = x),
        Param::new("rubber_thickness", "L", Rule::Positive, |e| e.thickness, |e, x| e.thickness = x),
        Param::optional("Qd", "F", Rule::NonNegative, 0.0, |e| e.qd, |e, x| e.qd = x),
        Param::optional("yield_displacement", "L", Rule::NonNegative, 0.0, |e| e.uy, |e, x| e.uy = x),
        Param::optional("eta", "-", Rule::Positive, 1.0, |e| e.eta, |e, x| e.eta = x),
        Param::optional("beta", "-", Rule::Finite, 0.5, |e| e.beta, |e, x| e.beta = x),
        Param::optional("gamma", "-", Rule::Finite, 0.5, |e| e.gamma, |e, x| e.gamma = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] =
        &[("z", Quantity::Dimensionless), ("e", Quantity::Energy)];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            g: 0.0,
            area: 0.0,
            thickness: 0.0,
            qd: 0.0,
            uy: 0.0,
            eta: 0.0,
            beta: 0.0,
            gamma: 0.0,
        }
    }
    fn check_joint(&self) -> Result<(), (&'static str, String)> {
        if self.qd > 0.0 && self.uy <= 0.0 {
            return Err((
                "yield_displacement",
                format!(
                    "`yield_displacement` must be > 0 when `Qd` > 0 (Qd = {}), found {}",
                    self.qd, self.uy
                ),
            ));
        }
        if self.qd > 0.0 && self.beta + self.gamma <= 0.0 {
            return Err((
                "gamma",
                format!(
                    "`beta` + `gamma` must be > 0 for a bounded hysteretic force, found {} + {}",
                    self.beta, self.gamma
                ),
            ));
        }
        Ok(())
    }
}

impl ElastomericBearing {
    /// A bearing from `[G, area, rubber_thickness, Qd, yield_displacement, eta, beta, gamma]`;
    /// checks every value.
    pub fn new(dofs: Vec<DofRef>, values: [f64; 8]) -> Result<Self, String> {
        with_values(dofs, &values)
    }

    /// Rubber shear stiffness `k_r = G A_r / t_r`.
    pub fn rubber_stiffness(&self) -> f64 {
        self.g * self.area / self.thickness
    }

    /// Initial stiffness `k_r + Qd/u_y` (`k_r` without hysteretic part).
    pub fn initial_stiffness(&self) -> f64 {
        if self.qd > 0.0 {
            self.rubber_stiffness() + self.qd / self.uy
        } else {
            self.rubber_stiffness()
        }
    }
}

impl ElementLaw for ElastomericBearing {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let z = s[0];
        let mut f = d * self.rubber_stiffness();
        if self.qd > 0.0 {
            let sg = sgn(re(dv) * re(z));
            let zn = abs_pow(z, self.eta);
            sdot[0] = (-(zn * (self.gamma + self.beta * sg)) + 1.0) * dv / self.uy;
            f += z * self.qd;
        } else {
            sdot[0] = dv * 0.0;
        }
        sdot[1] = f * dv;
        scatter_force(r, f);
    }
}

impl Element for ElastomericBearing {
    impl_declared!();
    fn dissipated_energy(&self, u: &[f64], s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        Some(s[1] - 0.5 * self.rubber_stiffness() * d * d - 0.5 * self.qd * self.uy * s[0] * s[0])
    }
    fn driver_substep(&self) -> Option<f64> {
        (self.qd > 0.0).then_some(0.02 * self.uy)
    }
}
