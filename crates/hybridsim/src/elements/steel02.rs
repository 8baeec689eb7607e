//! Menegotto–Pinto spring with the Filippou et al. (1983) curvature degradation, the law of
//! OpenSees's `Steel02` uniaxial material without its isotropic-hardening option (issue 17).

use super::declare::{checked, impl_declared, Declared, Param, Rule};
use super::switching::{abs, deformation, re, scatter_force};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};
use num_dual::Dual64;

/// Indices of the extra states.
const R: usize = 0;
const D: usize = 1;
const EPS_UP: usize = 2;
const SIG_UP: usize = 3;
const EPS_DOWN: usize = 4;
const SIG_DOWN: usize = 5;
const MAX_EXCESS: usize = 6;
const MIN_EXCESS: usize = 7;
const DIRECTION: usize = 8;
const ENERGY: usize = 9;

/// Menegotto–Pinto (Steel02-like) spring between two nodes (or a node and the ground) on one DOF
/// direction.
///
/// **Law** (Menegotto and Pinto 1973; Filippou, Popov and Bertero 1983). Between two load
/// reversals the force follows the curve
///
/// `r* = b ε* + (1 − b) ε* / (1 + |ε*|^R)^{1/R}`, `ε* = (d − d_r)/(d_0 − d_r)`,
/// `r* = (r − r_r)/(r_0 − r_r)`,
///
/// from the last reversal point `(d_r, r_r)` towards the intersection `(d_0, r_0)` of the
/// elastic line through it (slope `E`) with the hardening asymptote `r = ±Fy + b E (d ∓ d_y)`
/// (`d_y = Fy/E`; `+` while loading up, `−` while loading down). The curvature parameter
/// degrades with the excursion, `R = R0 (1 − cR1 ξ/(cR2 + ξ))`, `ξ = |d_p − d_0|/d_y`, where
/// `d_p` is the largest deformation reached before (the smallest when loading down), at least
/// `±d_y`. The virgin curve starts at the origin with `(d_0, r_0) = (±d_y, ±Fy)`. The
/// isotropic-hardening shift of OpenSees (`a1`–`a4`) is left out: this is OpenSees's `Steel02`
/// with its default `a1 = a3 = 0`.
///
/// **Displacement-driven form** ([`crate::elements::ElementDriver`]: the virtual-lab specimen,
/// `hybridsim cyclic`, served elements). [`Element::project_state`] is the strain-driven update of
/// OpenSees's `Steel02` from the state at the start of each substep to the current deformation:
/// reversal detection by the sign of the increment, the new reversal point and asymptote
/// intersection, the extreme deformations, then the curve. It agrees with OpenSees to round-off
/// under any deformation history (tests/new_elements.rs compares with openseespy).
///
/// **State-space form** (numerical substructures, whose integrators integrate `ṡ` and do not
/// call the projection). The force is a state with `ṙ = E_t ḋ`, `E_t` the slope of the curve
/// of the branch of the current loading direction (`ḋ ≥ 0`: up). A rate form cannot jump a
/// state at a reversal, so the data of the *other* branch are captured continuously: while
/// loading up, the reversal point of the down branch is drawn to the current point,
/// `ḋ_r = ḋ + κ |ḋ| (d − d_r)/d_y`, `ṙ_r = ṙ + κ |ḋ| (r − r_r)/d_y`, and the down branch's
/// extreme to the smallest turning point (`min_excess` towards `d_up + d_y`), with
/// the capture rate `κ = 10`; conversely while loading down. A reversal after an excursion of
/// `Δd` finds the captured data within `e^{−κ Δd/d_y}` of the exact ones (`e^{−10}` after one
/// yield deformation; the first excursion from rest is exact), so the law is followed except
/// after excursions shorter than about `0.5 d_y`. The capture term is not in the tangent at
/// rest; it is stable for deformation increments per integration step up to about `d_y/κ`.
/// tests/new_elements.rs measures the difference from OpenSees under a cyclic history.
///
/// **Parameters**: `E`, `Fy`, `b` (in `[0, 1)`), `R0` (> 0, typically 10–20), `cR1` (in
/// `[0, 1)`, typically 0.925), `cR2` (> 0, typically 0.15); OpenSees's recommended values are
/// the defaults of `R0`, `cR1`, `cR2` (20, 0.925, 0.15).
///
/// **Extra states**: `r` (force), `d` (the deformation of the last update), `d_up`, `r_up` and
/// `d_down`, `r_down` (reversal points of the up and down branches), `max_excess` =
/// `max(0, d_max − d_y)` and `min_excess` = `min(0, d_min + d_y)` over the turning points
/// (so that every state starts at 0), `direction` (0 before the first move, then +1 up or −1
/// down; projection only) and
/// `e`, the absorbed energy `ė = r ḋ`. Dissipated energy: `e − r²/(2E)` (absorbed energy
/// minus the energy an elastic unloading to zero force would return).
#[derive(Debug, Clone)]
pub struct Steel02 {
    dofs: super::PairDofs,
    /// Elastic stiffness `E`.
    pub e: f64,
    /// Yield force `Fy`.
    pub fy: f64,
    /// Strain-hardening ratio `b`.
    pub b: f64,
    /// Initial curvature parameter `R0`.
    pub r0: f64,
    /// Curvature degradation `cR1`.
    pub cr1: f64,
    /// Curvature degradation `cR2`.
    pub cr2: f64,
}

impl Declared for Steel02 {
    const KIND: &'static str = "steel02";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("E", "F/L", Rule::Positive, |e| e.e, |e, x| e.e = x),
        Param::new("Fy", "F", Rule::Positive, |e| e.fy, |e, x| e.fy = x),
        Param::new("b", "-", Rule::Fraction, |e| e.b, |e, x| e.b = x),
        Param::optional("R0", "-", Rule::Positive, 20.0, |e| e.r0, |e, x| e.r0 = x),
        Param::optional("cR1", "-", Rule::Fraction, 0.925, |e| e.cr1, |e, x| e.cr1 = x),
        Param::optional("cR2", "-", Rule::Positive, 0.15, |e| e.cr2, |e, x| e.cr2 = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] = &[
        ("r", Quantity::Force),
        ("d", Quantity::Displacement),
        ("d_up", Quantity::Displacement),
        ("r_up", Quantity::Force),
        ("d_down", Quantity::Displacement),
        ("r_down", Quantity::Force),
        ("max_excess", Quantity::Displacement),
        ("min_excess", Quantity::Displacement),
        ("direction", Quantity::Dimensionless),
        ("e", Quantity::Energy),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            e: 0.0,
            fy: 0.0,
            b: 0.0,
            r0: 0.0,
            cr1: 0.0,
            cr2: 0.0,
        }
    }
}

/// `|x|^p` with a scalar exponent; 0 with zero derivative at `x = 0`.
fn abs_pow_scalar<T: Scalar>(x: T, p: T) -> T {
    if re(x) == 0.0 {
        x * 0.0
    } else {
        abs(x).powd(p)
    }
}

impl Steel02 {
    /// A Steel02-like spring; checks `E, Fy, R0, cR2 > 0` and `b, cR1` in `[0, 1)`.
    pub fn new(
        dofs: Vec<DofRef>,
        e: f64,
        fy: f64,
        b: f64,
        [r0, cr1, cr2]: [f64; 3],
    ) -> Result<Self, String> {
        checked(Self {
            dofs: dofs.into(),
            e,
            fy,
            b,
            r0,
            cr1,
            cr2,
        })
    }

    /// Yield deformation `Fy / E`.
    pub fn yield_deformation(&self) -> f64 {
        self.fy / self.e
    }

    /// Force and tangent on the branch from reversal point `(dr, rr)` in direction `up`, with
    /// previous extreme `dp`, at deformation `d`.
    fn branch<T: Scalar>(&self, up: bool, dr: T, rr: T, dp: T, d: T) -> (T, T) {
        let e0 = self.e;
        let esh = self.b * e0;
        let epsy = self.fy / e0;
        let (d0, r0) = if re(dr) == 0.0 && re(rr) == 0.0 {
            // Virgin curve: exactly (±d_y, ±Fy).
            if up {
                (dr + epsy, rr + self.fy)
            } else {
                (dr - epsy, rr - self.fy)
            }
        } else if up {
            let d0 = (-rr + (self.fy - esh * epsy) + dr * e0) / (e0 - esh);
            (d0, (d0 - epsy) * esh + self.fy)
        } else {
            let d0 = (-rr + (-self.fy + esh * epsy) + dr * e0) / (e0 - esh);
            (d0, (d0 + epsy) * esh - self.fy)
        };
        let xi = abs((dp - d0) / epsy);
        let rexp = (-(xi * self.cr1) / (xi + self.cr2) + 1.0) * self.r0;
        let rat = (d - dr) / (d0 - dr);
        let dum1 = abs_pow_scalar(rat, rexp) + 1.0;
        let dum2 = dum1.powd(rexp.recip());
        let star = rat * self.b + rat * (1.0 - self.b) / dum2;
        let force = star * (r0 - rr) + rr;
        let tangent = ((dum1 * dum2).recip() * (1.0 - self.b) + self.b) * (r0 - rr) / (d0 - dr);
        (force, tangent)
    }

    fn extreme_up<T: Scalar>(&self, s: &[T]) -> T {
        s[MAX_EXCESS] + self.fy / self.e
    }

    fn extreme_down<T: Scalar>(&self, s: &[T]) -> T {
        s[MIN_EXCESS] - self.fy / self.e
    }

    /// The strain-driven update of OpenSees's `Steel02` from `s0` (start of the substep) to the
    /// deformation of `u`; writes every state of `s` but the energy.
    fn project<T: Scalar>(&self, u: &[T], s0: &[T], s: &mut [T]) {
        let d = deformation(u);
        let step = re(d) - re(s0[D]);
        let epsy = self.fy / self.e;
        s[..ENERGY].copy_from_slice(&s0[..ENERGY]);
        s[D] = d;
        let mut dir = re(s0[DIRECTION]);
        if dir == 0.0 {
            if step.abs() < 10.0 * f64::EPSILON {
                s[R] = d * 0.0;
                return;
            }
            dir = if step > 0.0 { 1.0 } else { -1.0 };
        } else if dir < 0.0 && step > 0.0 {
            dir = 1.0;
            s[EPS_UP] = s0[D];
            s[SIG_UP] = s0[R];
            if re(s0[D]) + epsy < re(s0[MIN_EXCESS]) {
                s[MIN_EXCESS] = s0[D] + epsy;
            }
        } else if dir > 0.0 && step < 0.0 {
            dir = -1.0;
            s[EPS_DOWN] = s0[D];
            s[SIG_DOWN] = s0[R];
            if re(s0[D]) - epsy > re(s0[MAX_EXCESS]) {
                s[MAX_EXCESS] = s0[D] - epsy;
            }
        }
        s[DIRECTION] = T::from(dir);
        let (f, _) = if dir > 0.0 {
            self.branch(true, s[EPS_UP], s[SIG_UP], self.extreme_up(s), d)
        } else {
            self.branch(false, s[EPS_DOWN], s[SIG_DOWN], self.extreme_down(s), d)
        };
        s[R] = f;
    }
}

impl ElementLaw for Steel02 {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let f = s[R];
        let zero = dv * 0.0;
        sdot.iter_mut().for_each(|x| *x = zero);
        let epsy = self.fy / self.e;
        // Capture rate κ |ḋ| of the inactive branch's data (module docs).
        let capture = abs(dv) * (CAPTURE / epsy);
        if re(dv) >= 0.0 {
            let (_, kt) = self.branch(true, s[EPS_UP], s[SIG_UP], self.extreme_up(s), d);
            sdot[R] = kt * dv;
            sdot[EPS_DOWN] = dv + capture * (d - s[EPS_DOWN]);
            sdot[SIG_DOWN] = sdot[R] + capture * (f - s[SIG_DOWN]);
            // The next down branch's extreme: the smallest turning point so far.
            let gap = s[EPS_UP] + epsy - s[MIN_EXCESS];
            if re(gap) < 0.0 {
                sdot[MIN_EXCESS] = capture * gap;
            }
        } else {
            let (_, kt) = self.branch(false, s[EPS_DOWN], s[SIG_DOWN], self.extreme_down(s), d);
            sdot[R] = kt * dv;
            sdot[EPS_UP] = dv + capture * (d - s[EPS_UP]);
            sdot[SIG_UP] = sdot[R] + capture * (f - s[SIG_UP]);
            let gap = s[EPS_DOWN] - epsy - s[MAX_EXCESS];
            if re(gap) > 0.0 {
                sdot[MAX_EXCESS] = capture * gap;
            }
        }
        sdot[D] = dv;
        sdot[ENERGY] = f * dv;
        scatter_force(r, f);
    }
}

/// Capture rate of the state-space form, per yield deformation travelled: the inactive
/// reversal point closes its distance to the current point by `e^{−κ Δd/d_y}`.
const CAPTURE: f64 = 10.0;

impl Element for Steel02 {
    impl_declared!();
    fn dissipated_energy(&self, _u: &[f64], s: &[f64]) -> Option<f64> {
        Some(s[ENERGY] - s[R] * s[R] / (2.0 * self.e))
    }
    fn project_state(&self, u: &[f64], _v: &[f64], s0: &[f64], s: &mut [f64]) {
        self.project(u, s0, s)
    }
    fn project_state_dual(&self, u: &[Dual64], _v: &[Dual64], s0: &[Dual64], s: &mut [Dual64]) {
        self.project(u, s0, s)
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.1 * self.fy / self.e)
    }
}
