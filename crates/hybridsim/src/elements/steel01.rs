//! Bilinear spring with kinematic hardening, the law of OpenSees's `Steel01` uniaxial material
//! without its isotropic-hardening option (issue 17).

use super::declare::{checked, impl_declared, Declared, Param, Rule};
use super::mostaghel::force_state_tangent;
use super::switching::{deformation, re, scatter_force, stick};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};
use nalgebra::DMatrix;
use num_dual::Dual64;

/// Bilinear kinematic-hardening spring between two nodes (or a node and the ground) on one DOF
/// direction: elastic stiffness `E`, yield force `Fy`, post-yield stiffness `b E`.
///
/// The force `r` of deformation `d = u1 − u2` stays between the two bounding lines
/// `b E d ± (1 − b) Fy` (the yield surface translated by the hardening, i.e. kinematic
/// hardening); inside them the spring is elastic (`ṙ = E ḋ`), on them it hardens (`ṙ = b E ḋ`)
/// while loading outward. In state-space form the force is an extra state with
///
/// `ṙ = (b E + (1 − b) E · stick) ḋ`,
///
/// `stick` being 1 inside the bounds or when unloading from one, 0 when loading outward on a
/// bound (the switching function of [`crate::elements::Mostaghel`], to which this law is
/// equivalent with `k = E`, `α = b`, `δ = Fy/E`).
///
/// Return mapping (displacement-driven form, [`crate::elements::ElementDriver`]): after every
/// substep the force is put back between the bounds at the current deformation,
/// `r ← min(max(r, b E d − (1 − b) Fy), b E d + (1 − b) Fy)`. Along the driver's straight paths
/// the elastic predictor `r_start + E Δd` followed by this clip is the exact update — the one
/// of OpenSees's `Steel01` with `a1 = a3 = 0` (no isotropic hardening, which this element
/// leaves out).
///
/// Parameters: `E` (force/length; a material modulus when the deformation is a strain),
/// `Fy` (force), `b` (in `[0, 1)`). Extra states: `r` (force) and `e`, the absorbed energy
/// `ė = r ḋ`. Dissipated energy: `e` minus the energy stored in the elastic parts,
/// `½ b E d² + ½ (1 − b) E s²` with `s = (r − b E d)/((1 − b) E)`, i.e. the plastic work.
#[derive(Debug, Clone)]
pub struct Steel01 {
    dofs: super::PairDofs,
    /// Elastic stiffness `E`.
    pub e: f64,
    /// Yield force `Fy`.
    pub fy: f64,
    /// Strain-hardening ratio `b` (post-yield over elastic stiffness).
    pub b: f64,
}

impl Declared for Steel01 {
    const KIND: &'static str = "steel01";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("E", "F/L", Rule::Positive, |e| e.e, |e, x| e.e = x),
        Param::new("Fy", "F", Rule::Positive, |e| e.fy, |e, x| e.fy = x),
        Param::new("b", "-", Rule::Fraction, |e| e.b, |e, x| e.b = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] =
        &[("r", Quantity::Force), ("e", Quantity::Energy)];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            e: 0.0,
            fy: 0.0,
            b: 0.0,
        }
    }
}

impl Steel01 {
    /// A Steel01-like spring; checks `E > 0`, `Fy > 0`, `0 ≤ b < 1`.
    pub fn new(dofs: Vec<DofRef>, e: f64, fy: f64, b: f64) -> Result<Self, String> {
        checked(Self {
            dofs: dofs.into(),
            e,
            fy,
            b,
        })
    }

    /// Yield deformation `Fy / E`.
    pub fn yield_deformation(&self) -> f64 {
        self.fy / self.e
    }

    /// The return mapping: `r` clipped to the bounding lines at deformation `d`.
    fn project<T: Scalar>(&self, u: &[T], s: &mut [T]) {
        let d = deformation(u);
        let c1 = d * (self.b * self.e);
        let width = self.fy * (1.0 - self.b);
        let upper = c1 + width;
        let lower = c1 - width;
        if re(s[0]) > re(upper) {
            s[0] = upper;
        } else if re(s[0]) < re(lower) {
            s[0] = lower;
        }
    }
}

impl ElementLaw for Steel01 {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let f = s[0];
        let bk = self.b * self.e;
        let ke = (1.0 - self.b) * self.e;
        // Deformation of the elastic branch in series with the slider (Mostaghel form).
        let sl = (re(f) - bk * re(d)) / ke;
        let kt = bk + ke * stick(re(dv), sl, self.fy / self.e);
        sdot[0] = dv * kt;
        sdot[1] = f * dv;
        scatter_force(r, f);
    }
}

impl Element for Steel01 {
    impl_declared!();
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        Some(force_state_tangent(self.dofs.len(), 2, self.e))
    }
    fn dissipated_energy(&self, u: &[f64], s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        let bk = self.b * self.e;
        let ke = (1.0 - self.b) * self.e;
        let sl = (s[0] - bk * d) / ke;
        Some(s[1] - 0.5 * bk * d * d - 0.5 * ke * sl * sl)
    }
    fn project_state(&self, u: &[f64], _v: &[f64], _s0: &[f64], s: &mut [f64]) {
        self.project(u, s)
    }
    fn project_state_dual(&self, u: &[Dual64], _v: &[Dual64], _s0: &[Dual64], s: &mut [Dual64]) {
        self.project(u, s)
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.1 * self.fy / self.e)
    }
    fn exact_path_update(&self) -> bool {
        true
    }
}
