//! Lead-rubber bearing (LRB), Benzoni–Casarotti model (Abbiati et al. 2019, eqs 42–44, corrected
//! per ALGORITHMS.md E4–E6; A16).

use super::declare::{check_value, with_values, Declared, Param, Rule};
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
///   `p0 > 0` (a small fraction of the expected amplitude).
///
/// **The lead law** (model-file key `lead`, [`LeadLaw`]). Read literally, eq 42 makes the lead
/// core rigid-plastic: `sgn(ḋ)` makes `r_2` jump by `r_lead (g(1 + d/p) + g(1 − d/p))` (up to
/// `2 r_lead`) at every reversal inside `|d| < p` and leaves it undefined (`sgn 0 = 0`) at rest
/// (E6). Commanded once per step, such a force makes the absorbed energy first order in the
/// time step (the sign chatters through every stick phase), and in a converged implicit solve
/// it alternates between the two branches from one iteration to the next (issue 17).
///
/// - [`LeadLaw::Band`] (the default): a real lead core has a finite elastic stiffness. The lead
///   force is an extra state `q` confined to the band `[r_2⁻(d, p), r_2⁺(d, p)]`,
///   `r_2^± = ±r_lead g(1 ± d/p)` (the two branches of eq 42; the band closes at `|d| = p`),
///   moving elastically inside it with stiffness `k_lead` (stick) and on its bound while the
///   deformation moves outward (slip, where `q` equals the printed `r_2`). By default
///   `k_lead = r_lead g'(0)/max(p, p0) = (2a + 4) r_lead/max(p, p0)`, the slope the printed law
///   has on leaving a peak and the steepest slope of either bound; the key `lead_stiffness`
///   replaces it by a constant. Over a step this is the elastic-predictor / return-mapping
///   update of a rate-independent law (Simo & Hughes 1998):
///   `q = clamp(q_n + k_lead Δd, r_2⁻, r_2⁺)`, exact along a monotonic path where no bound is
///   steeper than `k_lead` (always with the default). A reversal inside `|d| < p` unloads
///   along `k_lead` instead of jumping, the force is a Lipschitz function of the deformation
///   path and does not depend on the velocity. As `k_lead → ∞` the printed law comes back.
/// - [`LeadLaw::Rigid`]: eq 42 as printed, `r_2 = sgn(ḋ) r_lead g(1 + sgn(ḋ) d/p)` with
///   `sgn 0 = 0` (`r_2 = 0` at rest), for reproducing the paper; it needs time steps that
///   resolve every reversal.
///
/// Extra states: `p` (the running peak of `|d|`, starting from 0; displacement), with the band
/// law `q`, the lead force (starting from 0), and `e`, the absorbed energy `ė = r ḋ` (sign per
/// E32). Dissipated energy: `e` minus the rubber's potential at the current `p`,
/// `(k_rubber/2)(d²/2 + |d|^{n+1}/((n+1) p^{n−1}))`, minus, with the band law, the lead's
/// elastic energy `q²/(2 k_lead)`.
///
/// Initial tangent (E3: dual numbers at `p = 0` are meaningless), at `d = 0`, `p = p0`:
/// `∂r/∂d = k_rubber/2` (`k_rubber` if `n = 1`); with the band law `∂r/∂q = 1` and
/// `∂q̇/∂ḋ = k_lead(p0)`; with the rigid law the elastic tangent at `ḋ = 0⁺` adds
/// `r_lead g'(1)/p0` to `∂r/∂d`, `g'(1) = 2(1 − ln 2)e^{−a}`.
///
/// Paper values (Abbiati et al. 2019, eq 44): `r_lead = 1.02e5 N`, `k_rubber = 1.35e6 N/m`,
/// `n_rubber = 2`, `a_lead = 5`.
#[derive(Debug, Clone)]
pub struct LeadRubberBearing {
    dofs: super::PairDofs,
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
    /// The lead core's law (set through [`LeadRubberBearing::with_lead`]).
    lead_law: LeadLaw,
    /// Constant stiffness of the lead inside its band (band law), replacing the law's own
    /// `(2a + 4) r_lead / max(p, p0)`; `None`: the law's own.
    lead_stiffness_override: Option<f64>,
}

/// The lead core's law of a [`LeadRubberBearing`] (model-file key `lead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeadLaw {
    /// `lead = "band"` (the default): the lead force is a state inside the band of the two
    /// printed branches, elastic inside it (finite stiffness of the lead core).
    #[default]
    Band,
    /// `lead = "rigid"`: eq 42 of Abbiati et al. (2019) as printed, the lead force's sign
    /// taken from the velocity (rigid-plastic lead core).
    Rigid,
}

impl LeadLaw {
    /// The model-file spelling.
    pub fn name(self) -> &'static str {
        match self {
            LeadLaw::Band => "band",
            LeadLaw::Rigid => "rigid",
        }
    }

    /// The law named `name` in a model file, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "band" => Some(LeadLaw::Band),
            "rigid" => Some(LeadLaw::Rigid),
            _ => None,
        }
    }
}

const BAND_STATES: &[(&str, Quantity)] = &[
    ("p", Quantity::Displacement),
    ("q", Quantity::Force),
    ("e", Quantity::Energy),
];
const RIGID_STATES: &[(&str, Quantity)] = &[("p", Quantity::Displacement), ("e", Quantity::Energy)];

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
    /// The states of the default band law (the rigid law has `p`, `e`).
    const STATES: &'static [(&'static str, Quantity)] = BAND_STATES;
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            r_lead: 0.0,
            k_rubber: 0.0,
            n_rubber: 0.0,
            a_lead: 0.0,
            p0: 0.0,
            lead_law: LeadLaw::Band,
            lead_stiffness_override: None,
        }
    }
}

impl LeadRubberBearing {
    /// An LRB with the band law and the law's own lead stiffness;
    /// `values = [r_lead, k_rubber, n_rubber, a_lead, p0]`.
    pub fn new(dofs: Vec<DofRef>, values: [f64; 5]) -> Result<Self, String> {
        with_values(dofs, &values)
    }

    /// The same bearing with lead law `law` and, for the band law, the lead's stiffness inside
    /// its band (`None`: the law's own `(2a + 4) r_lead / max(p, p0)`). Refuses a stiffness
    /// that is not finite and `> 0`, one given with the rigid law, and one below
    /// [`LeadRubberBearing::steepest_bound_slope`] (there the elastic-predictor / return-mapping
    /// update is not exact along a monotonic path: a bound steeper than the lead can overtake
    /// the trial force inside the step and leave it again).
    pub fn with_lead(mut self, law: LeadLaw, stiffness: Option<f64>) -> Result<Self, String> {
        if let Some(k) = stiffness {
            check_lead_stiffness(k).map_err(|r| format!("`lead_stiffness` {r}"))?;
            if law == LeadLaw::Rigid {
                return Err(RIGID_WITH_STIFFNESS.to_string());
            }
            let bound = self.steepest_bound_slope();
            if k < bound {
                return Err(format!(
                    "must be at least the steepest slope of the lead band's bounds, \
                     (2 a_lead + 4) r_lead / p0 = {bound:e} (found {k:e}): below it the \
                     return-mapping update of the lead force is not exact along the step's \
                     path"
                ));
            }
        }
        self.lead_law = law;
        self.lead_stiffness_override = stiffness;
        Ok(self)
    }

    /// The lead core's law.
    pub fn lead_law(&self) -> LeadLaw {
        self.lead_law
    }

    /// The constant lead stiffness given by `lead_stiffness`, if any.
    pub fn lead_stiffness_override(&self) -> Option<f64> {
        self.lead_stiffness_override
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

    /// The steepest slope `∂r_2^±/∂d` of the band's bounds over every state:
    /// `r_lead max |g'| / p0 = (2a + 4) r_lead / p0` (`g'` is largest at `ξ = 0`, and
    /// `max(p, p0) ≥ p0`); the smallest `lead_stiffness` accepted.
    pub fn steepest_bound_slope(&self) -> f64 {
        (2.0 * self.a_lead + 4.0) * self.r_lead / self.p0
    }

    /// The lead's stiffness inside its band: `r_lead g'(0)/max(p, p0) = (2a + 4) r_lead/max(p, p0)`,
    /// the law's tangent on leaving a peak and the steepest slope of either bound, or the
    /// constant `lead_stiffness` where the model file gives it.
    pub fn lead_stiffness<T: Scalar>(&self, p: T) -> T {
        match self.lead_stiffness_override {
            Some(k) => T::from(k),
            None => self.p_eff(p).recip() * (self.r_lead * (2.0 * self.a_lead + 4.0)),
        }
    }

    /// Along a straight path the running peak is exact: `p = max(p_start, |d|)`; with the band
    /// law the lead force is put back into its band at the end deformation (the return
    /// mapping).
    fn project<T: Scalar>(&self, u: &[T], s0: &[T], s: &mut [T]) {
        let d = deformation(u);
        let a = abs(d);
        s[0] = if re(a) > re(s0[0]) { a } else { s0[0] };
        if self.lead_law == LeadLaw::Band {
            s[1] = clamp(s[1], self.lead_band(d, s[0]));
        }
    }

    /// Eq 42 as printed (states `p`, `e`).
    fn rigid_law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let p = s[0];
        let f = self.rubber(d, p) + self.lead(d, dv, p);
        sdot[0] = peak_rate(d, dv, p);
        sdot[1] = f * dv;
        scatter_force(r, f);
    }

    /// The lead force inside its band (states `p`, `q`, `e`).
    fn band_law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let p = s[0];
        let q = s[1];
        let f = self.rubber(d, p) + q;
        sdot[0] = peak_rate(d, dv, p);
        // Lead force: on its bound while moving outward of the band (slip), the bound's rate
        // where the elastic rate would leave the band; otherwise elastic (stick).
        let (lo, hi) = self.lead_band(d, p);
        let tol = BAND_TOLERANCE * self.r_lead;
        let pe = self.p_eff(p);
        // d(d/p)/dt, with p frozen at the floor p0.
        let x_rate = if re(p) > self.p0 {
            (dv - d * sdot[0] / pe) / pe
        } else {
            dv / pe
        };
        let elastic = self.lead_stiffness(p) * dv;
        sdot[1] = if re(dv) > 0.0 && re(q) >= re(hi) - tol {
            let bound = self.g_prime(d / pe + 1.0) * x_rate * self.r_lead;
            if re(bound) <= re(elastic) {
                bound
            } else {
                elastic
            }
        } else if re(dv) < 0.0 && re(q) <= re(lo) + tol {
            let bound = self.g_prime(-(d / pe) + 1.0) * x_rate * self.r_lead;
            if re(bound) >= re(elastic) {
                bound
            } else {
                elastic
            }
        } else {
            elastic
        };
        sdot[2] = f * dv;
        scatter_force(r, f);
    }
}

/// `ṗ = max(0, ḋ sgn d)` where `|d| ≥ p`, else 0 (E4).
fn peak_rate<T: Scalar>(d: T, dv: T, p: T) -> T {
    let outward = dv * sgn(re(d));
    if re(abs(d)) >= re(p) && re(outward) > 0.0 {
        outward
    } else {
        d * 0.0
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

/// `lead_stiffness` must be finite and `> 0`; the error is the reason only.
pub(crate) fn check_lead_stiffness(k: f64) -> Result<(), String> {
    check_value(k, Rule::Positive)
}

/// Why `lead_stiffness` is refused with `lead = "rigid"`.
pub(crate) const RIGID_WITH_STIFFNESS: &str =
    "`lead_stiffness` applies to `lead = \"band\"` only (the rigid lead core of `lead = \"rigid\"` \
     has no stiffness)";

impl ElementLaw for LeadRubberBearing {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        match self.lead_law {
            LeadLaw::Band => self.band_law(u, v, s, r, sdot),
            LeadLaw::Rigid => self.rigid_law(u, v, s, r, sdot),
        }
    }
}

/// Relative distance (to `r_lead`) within which the lead force counts as on its bound in the
/// rate law (rounding only).
const BAND_TOLERANCE: f64 = 1e-9;

impl LeadRubberBearing {
    fn states(&self) -> &'static [(&'static str, Quantity)] {
        match self.lead_law {
            LeadLaw::Band => BAND_STATES,
            LeadLaw::Rigid => RIGID_STATES,
        }
    }
}

impl Element for LeadRubberBearing {
    // The methods of `impl_declared!` with the states of the chosen lead law.
    fn kind(&self) -> &'static str {
        <Self as Declared>::KIND
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn n_states(&self) -> usize {
        self.states().len()
    }
    fn state_names(&self) -> Vec<String> {
        self.states().iter().map(|(n, _)| n.to_string()).collect()
    }
    fn state_quantity(&self, i: usize) -> Quantity {
        self.states()[i].1
    }
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        super::declare::values(self)
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        super::declare::set(self, name, value)
    }
    fn deformation(&self, u: &[f64]) -> Option<f64> {
        Some(deformation(u))
    }
    crate::impl_element_evaluation!();
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        let k_rubber = if self.n_rubber == 1.0 {
            self.k_rubber
        } else {
            0.5 * self.k_rubber
        };
        let sign = [1.0, -1.0];
        if self.lead_law == LeadLaw::Rigid {
            let k = k_rubber + self.r_lead * self.g_prime(1.0) / self.p0;
            let mut t = DMatrix::zeros(n + 2, 2 * n + 2);
            for i in 0..n {
                for j in 0..n {
                    t[(i, j)] = sign[i] * sign[j] * k;
                }
                // ė = r ḋ with r(0⁺) = r_lead g(1) = r_lead.
                t[(n + 1, n + i)] = sign[i] * self.r_lead;
            }
            return Some(t);
        }
        let k_lead = self.lead_stiffness(self.p0);
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
        if self.lead_law == LeadLaw::Rigid {
            return Some(s[1] - stored);
        }
        let lead = s[1] * s[1] / (2.0 * self.lead_stiffness(s[0]));
        Some(s[2] - stored - lead)
    }
    fn project_state(&self, u: &[f64], _v: &[f64], s0: &[f64], s: &mut [f64]) {
        self.project(u, s0, s)
    }
    fn project_state_dual(&self, u: &[Dual64], _v: &[Dual64], s0: &[Dual64], s: &mut [Dual64]) {
        self.project(u, s0, s)
    }
    /// Band law: the lead force at the end of a monotonic path, the elastic trial
    /// `q_start + k_lead(p_start) Δd` returned to the band at the end deformation. Rigid law:
    /// nothing (the running peak is set by the projection).
    fn integrate_path(&self, u_start: &[f64], u: &[f64], s_start: &[f64], s: &mut [f64]) {
        if self.lead_law == LeadLaw::Rigid {
            return;
        }
        let d = deformation(u);
        let trial = s_start[1] + self.lead_stiffness(s_start[0]) * (d - deformation(u_start));
        s[1] = clamp(trial, self.lead_band(d, s[0]));
    }
    fn law_summary(&self) -> Option<String> {
        Some(match (self.lead_law, self.lead_stiffness_override) {
            (LeadLaw::Rigid, _) => "lead = \"rigid\" (eq 42 of Abbiati et al. 2019 as printed: \
                 the lead force's sign follows the velocity, it jumps at reversals inside the \
                 running peak)"
                .to_string(),
            (LeadLaw::Band, None) => format!(
                "lead = \"band\" (the lead force elastic inside the band of the printed \
                 branches, lead_stiffness = (2 a_lead + 4) r_lead / max(p, p0): {:.6e} at p = \
                 p0)",
                self.lead_stiffness(self.p0)
            ),
            (LeadLaw::Band, Some(k)) => format!(
                "lead = \"band\" (the lead force elastic inside the band of the printed \
                 branches), lead_stiffness = {k:e}"
            ),
        })
    }
    /// `band` with the lead's stiffness at `p = p0` (`k_lead_at_p0`; the constant
    /// `lead_stiffness` when the model gives one), or `rigid`.
    fn law_record(&self) -> Option<(&'static str, Vec<(&'static str, f64)>)> {
        Some(match self.lead_law {
            LeadLaw::Rigid => ("rigid", Vec::new()),
            LeadLaw::Band => {
                let mut values = vec![("k_lead_at_p0", self.lead_stiffness(self.p0))];
                if let Some(k) = self.lead_stiffness_override {
                    values.push(("lead_stiffness", k));
                }
                ("band", values)
            }
        })
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.5 * self.p0)
    }
    fn exact_path_update(&self) -> bool {
        true
    }
}
