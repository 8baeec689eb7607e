//! Lead-rubber bearing (LRB), Benzoni–Casarotti model (Abbiati et al. 2019, eqs 42–44, corrected
//! per ALGORITHMS.md E4–E6; A16).

use super::declare::{impl_declared, with_values, Declared, Param, Rule};
use super::switching::{abs, abs_pow, deformation, re, scatter_force, sgn};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};
use nalgebra::DMatrix;
use num_dual::Dual64;

/// Lead-rubber bearing: rubber `r_1` and lead core `r_2` in parallel (Abbiati et al. 2019, eq 42):
///
/// - `r_1 = (k_rubber/2)(d + p sgn(d) |d/p|^{n_rubber})`,
/// - `r_2 = sgn(ḋ) r_lead g(ξ)`, `ξ = 1 + sgn(ḋ) d/p`,
///   `g(ξ) = 1 − 2e^{−a ξ} + 4ξ e^{−(a + ln 2) ξ}` (`g(0) = −1`, `g(1) = g(2) = 1`),
///
/// with `d = u1 − u2` and `p` the running peak `max |d|`. Corrections:
/// - E4: eq 43 as printed (`ṗ = ḋ sgn d` whenever `|d| ≥ p`) makes `p` follow `|d|` back down
///   after a peak; here `ṗ = max(0, ḋ sgn d)` when `|d| ≥ p`, else 0, so `p` only grows;
/// - E5: `p = 0` at rest makes `d/p = 0/0`: the forces use `max(p, p0)` with a parameter
///   `p0 > 0` (a small fraction of the expected amplitude), and `sgn(0) = 0`, so `r_2 = 0` at
///   rest;
/// - E6 (not an error): `r_2` is continuous at reversals with `|d| = p` and jumps by
///   `2 r_lead g(ξ)` at reversals inside `|d| < p` — inherent to the model.
///
/// Extra states: `p` (the running peak of `|d|`, starting from 0; displacement) and `e`, the
/// absorbed energy `ė = r ḋ` (sign per E32). Dissipated energy: `e` minus the rubber's
/// potential at the current `p`, `(k_rubber/2)(d²/2 + |d|^{n+1}/((n+1) p^{n−1}))` (the lead
/// stores nothing).
///
/// Initial tangent (E3: dual numbers at `p = 0`, `ḋ = 0` are meaningless): the elastic
/// tangent at `d = 0`, `ḋ = 0⁺`, `p = p0`: `∂r/∂d = k_rubber/2 (k_rubber if n = 1) +
/// r_lead g'(1)/p0`, with `g'(1) = 2(1 − ln 2)e^{−a}`.
///
/// Paper values (Abbiati et al. 2019, eq 44): `r_lead = 1.02e5 N`, `k_rubber = 1.35e6 N/m`,
/// `n_rubber = 2`, `a_lead = 5`.
#[derive(Debug, Clone)]
pub struct LeadRubberBearing {
    dofs: Vec<DofRef>,
    /// Lead yield force `r_lead = A_lead τ_lead`.
    pub r_lead: f64,
    /// Rubber stiffness `k_rubber = A_rubber G_rubber / h_rubber`.
    pub k_rubber: f64,
    /// Rubber exponent `n_rubber ≥ 1`.
    pub n_rubber: f64,
    /// Lead shape parameter `a_lead > 0`.
    pub a_lead: f64,
    /// Floor `p0 > 0` of the peak used in the forces.
    pub p0: f64,
}

impl Declared for LeadRubberBearing {
    const KIND: &'static str = "lead_rubber";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("r_lead", "F", Rule::NonNegative, |e| e.r_lead, |e, x| e.r_lead = x),
        Param::new("k_rubber", "F/L", Rule::NonNegative, |e| e.k_rubber, |e, x| e.k_rubber = x),
        Param::new("n_rubber", "-", Rule::AtLeastOne, |e| e.n_rubber, |e, x| e.n_rubber = x),
        Param::new("a_lead", "-", Rule::Positive, |e| e.a_lead, |e, x| e.a_lead = x),
        Param::new("p0", "L", Rule::Positive, |e| e.p0, |e, x| e.p0 = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] =
        &[("p", Quantity::Displacement), ("e", Quantity::Energy)];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs,
            r_lead: 0.0,
            k_rubber: 0.0,
            n_rubber: 0.0,
            a_lead: 0.0,
            p0: 0.0,
        }
    }
}

impl LeadRubberBearing {
    /// An LRB; `values = [r_lead, k_rubber, n_rubber, a_lead, p0]`.
    pub fn new(dofs: Vec<DofRef>, values: [f64; 5]) -> Result<Self, String> {
        with_values(dofs, &values)
    }

    /// The lead shape function `g(ξ)`.
    pub fn g<T: Scalar>(&self, xi: T) -> T {
        let a = self.a_lead;
        let b = a + std::f64::consts::LN_2;
        -((xi * (-a)).exp() * 2.0) + (xi * (-b)).exp() * xi * 4.0 + 1.0
    }

    /// `g'(ξ)`.
    pub fn g_prime(&self, xi: f64) -> f64 {
        let a = self.a_lead;
        let b = a + std::f64::consts::LN_2;
        2.0 * a * (-a * xi).exp() + 4.0 * (-b * xi).exp() * (1.0 - b * xi)
    }

    fn p_eff<T: Scalar>(&self, p: T) -> T {
        if re(p) > self.p0 {
            p
        } else {
            T::from(self.p0)
        }
    }

    /// Rubber force `r_1(d, p)`.
    pub fn rubber<T: Scalar>(&self, d: T, p: T) -> T {
        let pe = self.p_eff(p);
        (d + pe * abs_pow(d / pe, self.n_rubber) * sgn(re(d))) * (0.5 * self.k_rubber)
    }

    /// Lead force `r_2(d, ḋ, p)`.
    pub fn lead<T: Scalar>(&self, d: T, dv: T, p: T) -> T {
        let sv = sgn(re(dv));
        if sv == 0.0 {
            return d * 0.0;
        }
        let xi = d / self.p_eff(p) * sv + 1.0;
        self.g(xi) * (sv * self.r_lead)
    }

    /// Along a straight path the running peak is exact: `p = max(p_start, |d|)`.
    fn project<T: Scalar>(&self, u: &[T], s0: &[T], s: &mut [T]) {
        let a = abs(deformation(u));
        s[0] = if re(a) > re(s0[0]) { a } else { s0[0] };
    }
}

impl ElementLaw for LeadRubberBearing {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let p = s[0];
        let f = self.rubber(d, p) + self.lead(d, dv, p);
        let outward = dv * sgn(re(d));
        sdot[0] = if re(abs(d)) >= re(p) && re(outward) > 0.0 {
            outward
        } else {
            d * 0.0
        };
        sdot[1] = f * dv;
        scatter_force(r, f);
    }
}

impl Element for LeadRubberBearing {
    impl_declared!();
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        let k_rubber = if self.n_rubber == 1.0 {
            self.k_rubber
        } else {
            0.5 * self.k_rubber
        };
        let k = k_rubber + self.r_lead * self.g_prime(1.0) / self.p0;
        let sign = [1.0, -1.0];
        let mut t = DMatrix::zeros(n + 2, 2 * n + 2);
        for i in 0..n {
            for j in 0..n {
                t[(i, j)] = sign[i] * sign[j] * k;
            }
            // ė = r ḋ with r(0⁺) = r_lead g(1) = r_lead.
            t[(n + 1, n + i)] = sign[i] * self.r_lead;
        }
        Some(t)
    }
    fn dissipated_energy(&self, u: &[f64], s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        let p = self.p_eff(s[0]);
        let n = self.n_rubber;
        let stored = 0.5
            * self.k_rubber
            * (0.5 * d * d + d.abs().powf(n + 1.0) / ((n + 1.0) * p.powf(n - 1.0)));
        Some(s[1] - stored)
    }
    fn project_state(&self, u: &[f64], _v: &[f64], s0: &[f64], s: &mut [f64]) {
        self.project(u, s0, s)
    }
    fn project_state_dual(&self, u: &[Dual64], _v: &[Dual64], s0: &[Dual64], s: &mut [Dual64]) {
        self.project(u, s0, s)
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.5 * self.p0)
    }
    fn exact_path_update(&self) -> bool {
        true
    }
}
