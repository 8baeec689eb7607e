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
/// - while the deformation moves, `r_2 = sgn(ḋ) r_lead g(ξ)`, `ξ = 1 + sgn(ḋ) d/p`,
///   `g(ξ) = 1 − 2e^{−a ξ} + 4ξ e^{−(a + ln 2) ξ}` (`g(0) = −1`, `g(1) = g(2) = 1`),
///
/// with `d = u1 − u2` and `p` the running peak `max |d|`. Corrections:
/// - E4: eq 43 as printed (`ṗ = ḋ sgn d` whenever `|d| ≥ p`) makes `p` follow `|d|` back down
///   after a peak; here `ṗ = max(0, ḋ sgn d)` when `|d| ≥ p`, else 0, so `p` only grows;
/// - E5: `p = 0` at rest makes `d/p = 0/0`: the forces use `max(p, p0)` with a parameter
///   `p0 > 0` (a small fraction of the expected amplitude);
/// - E6: read literally, `sgn(ḋ)` makes `r_2` jump by `2 r_lead g(ξ)` at every reversal inside
///   `|d| < p` and leaves it undefined (`sgn 0 = 0`) at rest. Here the sign is set-valued, as
///   for a friction element: the lead force is an extra state `q` confined to the band
///   `[r_2⁻(d, p), r_2⁺(d, p)]`, `r_2^± = ±r_lead g(1 ± d/p)` (the two branches of eq 42; the
///   band closes at `|d| = p`), moving elastically inside it with the stiffness the law has on
///   leaving a peak, `k_lead = r_lead g'(0)/p = (2a + 4) r_lead/p` (the stick regime), and
///   on its bound while the deformation moves outward (the slip regime, where `q` equals the
///   printed `r_2`). Over a step this is the elastic-predictor / return-mapping update of a
///   rate-independent law (Simo & Hughes 1998): `q = clamp(q_n + k_lead Δd, r_2⁻, r_2⁺)`,
///   exact along a monotonic path since no bound is steeper than `k_lead`. A reversal inside
///   `|d| < p` then unloads along `k_lead` instead of jumping (a parameter `k_lead` larger
///   than the law's own value replaces it; `k_lead → ∞` recovers the rigid set-valued sign
///   of the printed law, which needs steps that resolve it), the force is a Lipschitz
///   function of the deformation path (no spurious jumps in explicit or partitioned coupling,
///   no sign alternation in an implicit solve: issue 17), and the force does not depend on
///   the velocity.
///
/// Extra states: `p` (the running peak of `|d|`, starting from 0; displacement), `q`, the lead
/// force (starting from 0), and `e`, the absorbed energy `ė = r ḋ` (sign per E32).
/// Dissipated energy: `e` minus the rubber's potential at the current `p`,
/// `(k_rubber/2)(d²/2 + |d|^{n+1}/((n+1) p^{n−1}))`, minus the lead's elastic energy
/// `q²/(2 k_lead)`.
///
/// Initial tangent (E3: dual numbers at `p = 0` are meaningless): at `d = 0`, `p = p0`:
/// `∂r/∂d = k_rubber/2` (`k_rubber` if `n = 1`), `∂r/∂q = 1`, `∂q̇/∂ḋ = k_lead(p0)`.
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
    /// Stiffness of the lead inside its band (stick regime) where larger than the law's own
    /// `(2a + 4) r_lead / max(p, p0)`; 0 (the default): the law's own.
    pub k_lead: f64,
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
        Param::optional("k_lead", "F/L", Rule::NonNegative, 0.0, |e| e.k_lead, |e, x| e.k_lead = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] = &[
        ("p", Quantity::Displacement),
        ("q", Quantity::Force),
        ("e", Quantity::Energy),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs,
            r_lead: 0.0,
            k_rubber: 0.0,
            n_rubber: 0.0,
            a_lead: 0.0,
            p0: 0.0,
            k_lead: 0.0,
        }
    }
}

impl LeadRubberBearing {
    /// An LRB; `values = [r_lead, k_rubber, n_rubber, a_lead, p0]`, the lead's stiffness in
    /// its band the law's own (`k_lead = 0`).
    pub fn new(dofs: Vec<DofRef>, values: [f64; 5]) -> Result<Self, String> {
        let [r, k, n, a, p0] = values;
        with_values(dofs, &[r, k, n, a, p0, 0.0])
    }

    /// The lead shape function `g(ξ)`.
    pub fn g<T: Scalar>(&self, xi: T) -> T {
        let a = self.a_lead;
        let b = a + std::f64::consts::LN_2;
        -((xi * (-a)).exp() * 2.0) + (xi * (-b)).exp() * xi * 4.0 + 1.0
    }

    /// `g'(ξ)`.
    pub fn g_prime<T: Scalar>(&self, xi: T) -> T {
        let a = self.a_lead;
        let b = a + std::f64::consts::LN_2;
        (xi * (-a)).exp() * (2.0 * a) + (xi * (-b)).exp() * (-(xi * b) + 1.0) * 4.0
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

    /// The printed lead force `r_2(d, ḋ, p) = sgn(ḋ) r_lead g(1 + sgn(ḋ) d/p)` (eq 42): the
    /// bound of the lead force's band in the direction of motion (0 at rest).
    pub fn lead<T: Scalar>(&self, d: T, dv: T, p: T) -> T {
        let sv = sgn(re(dv));
        if sv == 0.0 {
            return d * 0.0;
        }
        let xi = d / self.p_eff(p) * sv + 1.0;
        self.g(xi) * (sv * self.r_lead)
    }

    /// The band `[r_2⁻, r_2⁺] = [−r_lead g(1 − d/p), r_lead g(1 + d/p)]` of the lead force.
    pub fn lead_band<T: Scalar>(&self, d: T, p: T) -> (T, T) {
        let x = d / self.p_eff(p);
        (
            -(self.g(-x + 1.0) * self.r_lead),
            self.g(x + 1.0) * self.r_lead,
        )
    }

    /// The lead's stiffness inside its band: `r_lead g'(0)/p = (2a + 4) r_lead/p`, the law's
    /// tangent on leaving a peak and the steepest slope of either bound, or the parameter
    /// `k_lead` where that is larger.
    pub fn lead_stiffness<T: Scalar>(&self, p: T) -> T {
        let own = self.p_eff(p).recip() * (self.r_lead * (2.0 * self.a_lead + 4.0));
        if self.k_lead > re(own) {
            T::from(self.k_lead)
        } else {
            own
        }
    }

    /// Along a straight path the running peak is exact: `p = max(p_start, |d|)`; the lead force
    /// is put back into its band at the end deformation (the return mapping).
    fn project<T: Scalar>(&self, u: &[T], s0: &[T], s: &mut [T]) {
        let d = deformation(u);
        let a = abs(d);
        s[0] = if re(a) > re(s0[0]) { a } else { s0[0] };
        s[1] = clamp(s[1], self.lead_band(d, s[0]));
    }
}

/// `x` confined to `[lo, hi]` (`lo` wins if the band is inverted by rounding; no panic).
fn clamp<T: Scalar>(x: T, (lo, hi): (T, T)) -> T {
    if re(x) > re(hi) {
        if re(hi) < re(lo) {
            lo
        } else {
            hi
        }
    } else if re(x) < re(lo) {
        lo
    } else {
        x
    }
}

impl ElementLaw for LeadRubberBearing {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let p = s[0];
        let q = s[1];
        let f = self.rubber(d, p) + q;
        let outward = dv * sgn(re(d));
        sdot[0] = if re(abs(d)) >= re(p) && re(outward) > 0.0 {
            outward
        } else {
            d * 0.0
        };
        // Lead force: on its bound while moving outward of the band (slip), the bound's rate;
        // otherwise elastic (stick).
        let (lo, hi) = self.lead_band(d, p);
        let tol = BAND_TOLERANCE * self.r_lead;
        let pe = self.p_eff(p);
        // d(d/p)/dt, with p frozen at the floor p0.
        let x_rate = if re(p) > self.p0 {
            (dv - d * sdot[0] / pe) / pe
        } else {
            dv / pe
        };
        sdot[1] = if re(dv) > 0.0 && re(q) >= re(hi) - tol {
            self.g_prime(d / pe + 1.0) * x_rate * self.r_lead
        } else if re(dv) < 0.0 && re(q) <= re(lo) + tol {
            self.g_prime(-(d / pe) + 1.0) * x_rate * self.r_lead
        } else {
            self.lead_stiffness(p) * dv
        };
        sdot[2] = f * dv;
        scatter_force(r, f);
    }
}

/// Relative distance (to `r_lead`) within which the lead force counts as on its bound in the
/// rate law (rounding only).
const BAND_TOLERANCE: f64 = 1e-9;

impl Element for LeadRubberBearing {
    impl_declared!();
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        let k_rubber = if self.n_rubber == 1.0 {
            self.k_rubber
        } else {
            0.5 * self.k_rubber
        };
        let k_lead = self.lead_stiffness(self.p0);
        let sign = [1.0, -1.0];
        // Columns [u; v; p, q, e], rows [r; ṗ, q̇, ė]; at rest r = 0, so ė has no slope.
        let mut t = DMatrix::zeros(n + 3, 2 * n + 3);
        for i in 0..n {
            for j in 0..n {
                t[(i, j)] = sign[i] * sign[j] * k_rubber;
            }
            t[(i, 2 * n + 1)] = sign[i];
            t[(n + 1, n + i)] = sign[i] * k_lead;
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
        let lead = s[1] * s[1] / (2.0 * self.lead_stiffness(s[0]));
        Some(s[2] - stored - lead)
    }
    fn project_state(&self, u: &[f64], _v: &[f64], s0: &[f64], s: &mut [f64]) {
        self.project(u, s0, s)
    }
    fn project_state_dual(&self, u: &[Dual64], _v: &[Dual64], s0: &[Dual64], s: &mut [Dual64]) {
        self.project(u, s0, s)
    }
    /// The exact lead force at the end of a monotonic path: the elastic trial
    /// `q_start + k_lead(p_start) Δd` returned to the band at the end deformation.
    fn integrate_path(&self, u_start: &[f64], u: &[f64], s_start: &[f64], s: &mut [f64]) {
        let d = deformation(u);
        let trial = s_start[1] + self.lead_stiffness(s_start[0]) * (d - deformation(u_start));
        s[1] = clamp(trial, self.lead_band(d, s[0]));
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.5 * self.p0)
    }
    fn exact_path_update(&self) -> bool {
        true
    }
}
