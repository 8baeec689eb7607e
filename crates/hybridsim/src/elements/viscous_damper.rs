//! Nonlinear fluid viscous damper `F = c |v|^α sgn(v)`, optionally in series with a spring (the
//! Maxwell model of OpenSees's `ViscousDamper` material) (issue 17).

use super::declare::{with_values, Declared, Param, Rule};
use super::switching::{abs, abs_pow, deformation, re, scatter_force, sgn};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};

/// Fluid viscous damper between two nodes (or a node and the ground) on one DOF direction.
///
/// **Law.** The damper force is `F = c |ḋ_d|^α sgn(ḋ_d)` of the rate `ḋ_d` of its own
/// deformation, with the exponent `α` in `(0, 2]` (`α = 1`: linear; `α ≈ 0.2–0.5`: the usual
/// seismic dampers with pressure-relief valves; Constantinou and Symans 1993 characterize such
/// devices). Two forms:
/// - `k_d = 0` (default): the damper alone, `ḋ_d = ḋ`, `F = c |ḋ|^α sgn(ḋ)`; the state `F` is
///   unused (stays 0).
/// - `k_d > 0`: the damper in series with a spring `k_d` (the brace, or the fluid's
///   compressibility; Maxwell model): the force is a state with
///   `Ḟ = k_d (ḋ − sgn(F) (|F|/c)^{1/α})`.
///
/// For `α = 1` the Maxwell form has the complex stiffness `K*(ω) = k_d iωc/(k_d + iωc)`
/// (tested). Under `d = X sin ωt` the damper alone dissipates per cycle
/// `W = λ c ω^α X^{1+α}`, `λ = 4·2^α Γ²(1 + α/2)/Γ(2 + α)` (from
/// `W = c ω^α X^{1+α} ∫₀^{2π} |cos θ|^{1+α} dθ`; tested).
///
/// Tangent: for `α = 1` the damping `c` at rest; for `α ≠ 1` the derivative of `|ḋ|^α` at
/// `ḋ = 0` is taken as 0 (it is 0 for `α > 1` and unbounded for `α < 1`), so such a damper
/// contributes no damping to the initial matrices.
///
/// Extra states: `F` (force of the Maxwell form) and `e`, the absorbed energy `ė = F ḋ`. The
/// dissipated energy is `e` minus the spring's stored `F²/(2 k_d)` (all of `e` without spring).
#[derive(Debug, Clone)]
pub struct ViscousDamper {
    dofs: super::PairDofs,
    /// Damping coefficient `c` (force·(time/length)^α).
    pub c: f64,
    /// Velocity exponent `α` in `(0, 2]`.
    pub alpha: f64,
    /// Series spring stiffness `k_d` (0: no spring).
    pub kd: f64,
}

impl Declared for ViscousDamper {
    const KIND: &'static str = "viscous_damper";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("c", "F·(T/L)^alpha", Rule::Positive, |e| e.c, |e, x| e.c = x),
        Param::optional("alpha", "-", Rule::Positive, 1.0, |e| e.alpha, |e, x| e.alpha = x),
        Param::optional("kd", "F/L", Rule::NonNegative, 0.0, |e| e.kd, |e, x| e.kd = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] =
        &[("F", Quantity::Force), ("e", Quantity::Energy)];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            c: 0.0,
            alpha: 0.0,
            kd: 0.0,
        }
    }
    fn check_joint(&self) -> Result<(), (&'static str, String)> {
        if self.alpha > 2.0 {
            return Err((
                "alpha",
                format!("`alpha` must be in (0, 2], found {}", self.alpha),
            ));
        }
        Ok(())
    }
}

impl ViscousDamper {
    /// A fluid viscous damper; checks `c > 0`, `0 < α ≤ 2`, `k_d ≥ 0` (0: no series spring).
    pub fn new(dofs: Vec<DofRef>, c: f64, alpha: f64, kd: f64) -> Result<Self, String> {
        with_values(dofs, &[c, alpha, kd])
    }

    /// Damper force `c |w|^α sgn(w)` at deformation rate `w`.
    pub fn damper_force<T: Scalar>(&self, w: T) -> T {
        if self.alpha == 1.0 {
            w * self.c
        } else {
            abs_pow(w, self.alpha) * (self.c * sgn(re(w)))
        }
    }

    /// Damper deformation rate `sgn(F) (|F|/c)^{1/α}` carrying force `F`.
    pub fn damper_rate<T: Scalar>(&self, f: T) -> T {
        if self.alpha == 1.0 {
            f / self.c
        } else {
            abs_pow(abs(f) / self.c, 1.0 / self.alpha) * sgn(re(f))
        }
    }

    /// Energy dissipated per cycle by the damper alone under `d = X sin ωt`,
    /// `λ c ω^α X^{1+α}` with `λ = 4·2^α Γ²(1 + α/2)/Γ(2 + α)`; `gamma` is the Γ function to use.
    pub fn energy_per_cycle(&self, omega: f64, x: f64, gamma: impl Fn(f64) -> f64) -> f64 {
        let a = self.alpha;
        let lambda = 4.0 * 2f64.powf(a) * gamma(1.0 + 0.5 * a).powi(2) / gamma(2.0 + a);
        lambda * self.c * omega.powf(a) * x.powf(1.0 + a)
    }
}

impl ElementLaw for ViscousDamper {
    fn law<T: Scalar>(&self, _u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let dv = deformation(v);
        let f = if self.kd > 0.0 {
            sdot[0] = (dv - self.damper_rate(s[0])) * self.kd;
            s[0]
        } else {
            sdot[0] = dv * 0.0;
            self.damper_force(dv)
        };
        sdot[1] = f * dv;
        scatter_force(r, f);
    }
}

impl Element for ViscousDamper {
    super::declare::impl_declared!();
    fn dissipated_energy(&self, _u: &[f64], s: &[f64]) -> Option<f64> {
        if self.kd > 0.0 {
            Some(s[1] - s[0] * s[0] / (2.0 * self.kd))
        } else {
            Some(s[1])
        }
    }
}
