//! Mostaghel bilinear elastoplastic spring (Abbiati et al. 2020, eqs 17–19; ALGORITHMS.md A14, E1,
//! E3): the double concave sliding bearing (D-CSB) model.

use super::declare::{checked, impl_declared, Declared, Param, Rule};
use super::switching::{deformation, re, scatter_force, stick};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};
use nalgebra::DMatrix;
use num_dual::Dual64;

/// Mostaghel's spring-slider model: a linear spring `αk` in parallel with a spring `(1−α)k`
/// in series with a slider that slips when its spring deformation `s` reaches `±δ`.
///
/// With `d = u1 − u2`, `ḋ = v1 − v2` and the restoring force `r` as extra state
/// (Abbiati et al. 2020, eqs 17–19):
///
/// `ṙ = (αk + (1−α)k [N̄(ḋ) M̄(s−δ) + M(ḋ) N(s+δ)]) ḋ`, `s = (r − αk d)/((1−α)k)`,
///
/// with `N(w) = [w ≥ 0]`, `M = 1 − N`, `N̄(w) = M(−w)`, `M̄(w) = N(−w)` and `sgn(0) = 0`
/// (E1: never `f64::signum`, which is ±1 at ±0). Initial stiffness `k`, yield force `kδ`,
/// post-yield stiffness `αk`. Resisting forces `[r, −r]` (`[r]` to ground).
///
/// At `ḋ = 0` exactly the bracket is 0, so dual numbers at the zero state give `∂ṙ/∂ḋ = αk`
/// (E3); [`Element::initial_tangent`] returns the elastic tangent at `ḋ = 0⁺` (`k`).
///
/// Extra states: `r` (force) and `e`, the absorbed energy `ė = r ḋ` (as Hovmand et al. 2022, eq 11,
/// sign per E32). Dissipated energy: `e − ½αk d² − ½(1−α)k s²` (absorbed minus the energy of
/// both springs), the work of the slider.
#[derive(Debug, Clone)]
pub struct Mostaghel {
    dofs: super::PairDofs,
    /// Initial stiffness `k` (force/length).
    pub k: f64,
    /// Post-yield stiffness ratio `α` in `[0, 1)`.
    pub alpha: f64,
    /// Yield deformation `δ` (length).
    pub delta: f64,
}

impl Declared for Mostaghel {
    const KIND: &'static str = "mostaghel";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("k", "F/L", Rule::Positive, |e| e.k, |e, x| e.k = x),
        Param::new("alpha", "-", Rule::Fraction, |e| e.alpha, |e, x| e.alpha = x),
        Param::new("delta", "L", Rule::Positive, |e| e.delta, |e, x| e.delta = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] =
        &[("r", Quantity::Force), ("e", Quantity::Energy)];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            k: 0.0,
            alpha: 0.0,
            delta: 0.0,
        }
    }
}

impl Mostaghel {
    /// A Mostaghel spring; checks `k > 0`, `0 ≤ α < 1`, `δ > 0`.
    pub fn new(dofs: Vec<DofRef>, k: f64, alpha: f64, delta: f64) -> Result<Self, String> {
        checked(Self {
            dofs: dofs.into(),
            k,
            alpha,
            delta,
        })
    }

    /// Slider spring deformation `s` at deformation `d` and force `r`.
    pub fn slider_deformation(&self, d: f64, r: f64) -> f64 {
        (r - self.alpha * self.k * d) / ((1.0 - self.alpha) * self.k)
    }

    fn project<T: Scalar>(&self, u: &[T], s: &mut [T]) {
        let d = deformation(u);
        let ke = (1.0 - self.alpha) * self.k;
        let sl = (s[0] - d * (self.alpha * self.k)) / ke;
        let bound = if re(sl) > self.delta {
            self.delta
        } else if re(sl) < -self.delta {
            -self.delta
        } else {
            return;
        };
        s[0] = d * (self.alpha * self.k) + T::from(ke * bound);
    }
}

impl ElementLaw for Mostaghel {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let f = s[0];
        let ak = self.alpha * self.k;
        let sl = (re(f) - ak * re(d)) / ((1.0 - self.alpha) * self.k);
        let kt = ak + (1.0 - self.alpha) * self.k * stick(re(dv), sl, self.delta);
        sdot[0] = dv * kt;
        sdot[1] = f * dv;
        scatter_force(r, f);
    }
}

/// Explicit elastic initial tangent of a force-state spring with `n_states` states
/// (`r` first, then others whose rates vanish at rest): `∂r_out/∂r = ±1`, `∂ṙ/∂ḋ = k`.
pub(crate) fn force_state_tangent(n: usize, n_states: usize, k: f64) -> DMatrix<f64> {
    let mut t = DMatrix::zeros(n + n_states, 2 * n + n_states);
    t[(0, 2 * n)] = 1.0;
    t[(n, n)] = k;
    if n == 2 {
        t[(1, 2 * n)] = -1.0;
        t[(n, n + 1)] = -k;
    }
    t
}

impl Element for Mostaghel {
    impl_declared!();
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        Some(force_state_tangent(self.dofs.len(), 2, self.k))
    }
    fn dissipated_energy(&self, u: &[f64], s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        let sl = self.slider_deformation(d, s[0]);
        Some(s[1] - 0.5 * self.alpha * self.k * d * d - 0.5 * (1.0 - self.alpha) * self.k * sl * sl)
    }
    fn project_state(&self, u: &[f64], _v: &[f64], _s0: &[f64], s: &mut [f64]) {
        self.project(u, s)
    }
    fn project_state_dual(&self, u: &[Dual64], _v: &[Dual64], _s0: &[Dual64], s: &mut [Dual64]) {
        self.project(u, s)
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.1 * self.delta)
    }
    fn exact_path_update(&self) -> bool {
        true
    }
}
