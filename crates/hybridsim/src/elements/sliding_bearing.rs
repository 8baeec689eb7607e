//! Triple-curvature concave sliding bearing (T-CSB): three parallel spring-slider branches
//! (Abbiati et al. 2019, eqs 39–41, corrected per ALGORITHMS.md E2; A15), optionally with the
//! velocity-dependent friction of Abbiati et al. (2019), Table 5.

use super::declare::{impl_declared, with_values, Declared, Param, Rule};
use super::switching::{deformation, re, scatter_force, stick};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};
use nalgebra::DMatrix;
use num_dual::Dual64;
use serde::Deserialize;

/// Velocity dependence of the slider bounds (Abbiati et al. 2019, Table 5, "identified values of
/// friction coefficients" at peak velocities 0.5–100 mm/s).
///
/// What is implemented (a reading — the paper identifies `k_i`, `δ_i` at 0.1 m/s only): the
/// slip force of branch `i` scales with its friction coefficient,
/// `δ_i(|ḋ|) = δ_i · μ_i(|ḋ|)/μ_i(v_ref)`, with `μ_i` interpolated linearly in the table and
/// held constant outside it. Branch 0 (first slip, `k_0 δ_0 ≈ μ_{2,3} P`) follows the inner
/// surfaces' `μ_{2,3}`, branch 1 the outer surfaces' `μ_{1,4}`. Velocities are in the model's
/// length/time units; `μ` may be in % or as fractions (only ratios enter). The bound is
/// evaluated at the current rate: while slipping at a falling speed the state-space law
/// keeps the force reached until the next reversal; the displacement-driven form
/// ([`crate::elements::ElementDriver`]) clamps the force to the current bound.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrictionTable {
    /// Velocities (increasing, ≥ 0).
    pub velocity: Vec<f64>,
    /// `μ` of branch 0 (inner surfaces 2–3).
    pub mu0: Vec<f64>,
    /// `μ` of branch 1 (outer surfaces 1–4).
    pub mu1: Vec<f64>,
    /// Velocity at which `δ_0`, `δ_1` were identified.
    pub reference_velocity: f64,
}

impl FrictionTable {
    /// Table 5 of Abbiati et al. (2019) in SI units (m/s), referenced to 0.1 m/s.
    pub fn abbiati_2019_table_5() -> Self {
        Self {
            velocity: vec![0.0005, 0.005, 0.025, 0.05, 0.1],
            mu0: vec![4.5, 6.0, 7.0, 7.0, 7.5],
            mu1: vec![8.5, 12.0, 14.0, 14.0, 15.0],
            reference_velocity: 0.1,
        }
    }

    fn interp(&self, mu: &[f64], v: f64) -> f64 {
        let x = &self.velocity;
        if v <= x[0] {
            return mu[0];
        }
        for i in 1..x.len() {
            if v <= x[i] {
                let w = (v - x[i - 1]) / (x[i] - x[i - 1]);
                return mu[i - 1] + w * (mu[i] - mu[i - 1]);
            }
        }
        mu[mu.len() - 1]
    }

    /// Scale factors `(μ_0(|v|)/μ_0(v_ref), μ_1(|v|)/μ_1(v_ref))`.
    pub fn scales(&self, v: f64) -> (f64, f64) {
        let v = v.abs();
        let r = self.reference_velocity;
        (
            self.interp(&self.mu0, v) / self.interp(&self.mu0, r),
            self.interp(&self.mu1, v) / self.interp(&self.mu1, r),
        )
    }

    /// Check the table; the error names the offending key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let n = self.velocity.len();
        if n == 0 {
            return Err(("velocity", "is empty".into()));
        }
        for (key, mu) in [("mu0", &self.mu0), ("mu1", &self.mu1)] {
            if mu.len() != n {
                return Err((key, format!("has {} values for {n} velocities", mu.len())));
            }
            if let Some(x) = mu.iter().find(|x| !x.is_finite() || **x <= 0.0) {
                return Err((key, format!("values must be finite and > 0, found {x}")));
            }
        }
        if self.velocity.iter().any(|x| !x.is_finite() || *x < 0.0)
            || self.velocity.windows(2).any(|w| w[1] <= w[0])
        {
            return Err((
                "velocity",
                format!(
                    "must be finite, non-negative and strictly increasing, found {:?}",
                    self.velocity
                ),
            ));
        }
        if !self.reference_velocity.is_finite() || self.reference_velocity <= 0.0 {
            return Err((
                "reference_velocity",
                format!("must be finite and > 0, found {}", self.reference_velocity),
            ));
        }
        Ok(())
    }
}

/// T-CSB model: `r = r_0 + r_1 + r_2` with two spring-slider branches and a linear one
/// (Abbiati et al. 2019, eq 39):
///
/// `ṙ_i = k_i [N̄(ḋ) M̄(s_i − δ_i) + M(ḋ) N(s_i + δ_i)] ḋ` (i = 0, 1), `r_2 = k_2 d`,
///
/// with `s_0 = r_0/k_0`, `s_1 = r_1/k_1` — eq 40 as printed (`s_1 = r_1/k_1`, `s_2 = r_2/k_2`)
/// is mis-indexed, since branch 2 has no slider (E2). Switching functions as
/// [`super::Mostaghel`] (E1). The stiffness is `k_0 + k_1 + k_2` until `|r_0| = k_0 δ_0`, then
/// `k_1 + k_2` until `|r_1| = k_1 δ_1`, then `k_2`. The linear branch is kept algebraic
/// (`r_2 = k_2 d` is the integral of eq 39d).
///
/// Identified values at 0.1 m/s (Abbiati et al. 2019, §3.2.1, [`Self::abbiati_2019`]):
/// `k_0 = 6.67e7 N/m`, `δ_0 = 1.5e-3 m`, `k_1 = 1.15e6 N/m`, `δ_1 = 0.07 m`, `k_2 = 5e5 N/m` (slip
/// forces 100.05 kN and 80.5 kN under `P = 1500 kN`).
///
/// Extra states: `r0`, `r1` (forces) and `e`, the absorbed energy `ė = r ḋ` (sign per E32).
/// Dissipated energy: `e − r_0²/(2k_0) − r_1²/(2k_1) − ½k_2 d²`, the work of both sliders.
/// At `ḋ = 0` dual numbers give `k_2` (E3); [`Element::initial_tangent`] gives
/// `k_0 + k_1 + k_2` at `ḋ = 0⁺`.
#[derive(Debug, Clone)]
pub struct TripleSlidingBearing {
    dofs: super::PairDofs,
    /// Branch-0 stiffness.
    pub k0: f64,
    /// Branch-0 slip deformation.
    pub delta0: f64,
    /// Branch-1 stiffness.
    pub k1: f64,
    /// Branch-1 slip deformation.
    pub delta1: f64,
    /// Linear branch stiffness.
    pub k2: f64,
    /// Optional velocity-dependent friction.
    pub friction: Option<FrictionTable>,
}

impl Declared for TripleSlidingBearing {
    const KIND: &'static str = "sliding_bearing";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("k0", "F/L", Rule::Positive, |e| e.k0, |e, x| e.k0 = x),
        Param::new("delta0", "L", Rule::Positive, |e| e.delta0, |e, x| e.delta0 = x),
        Param::new("k1", "F/L", Rule::Positive, |e| e.k1, |e, x| e.k1 = x),
        Param::new("delta1", "L", Rule::Positive, |e| e.delta1, |e, x| e.delta1 = x),
        Param::new("k2", "F/L", Rule::NonNegative, |e| e.k2, |e, x| e.k2 = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] = &[
        ("r0", Quantity::Force),
        ("r1", Quantity::Force),
        ("e", Quantity::Energy),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            k0: 0.0,
            delta0: 0.0,
            k1: 0.0,
            delta1: 0.0,
            k2: 0.0,
            friction: None,
        }
    }
}

impl TripleSlidingBearing {
    /// A T-CSB with `values = [k0, delta0, k1, delta1, k2]`; checks `k0, δ0, k1, δ1 > 0`,
    /// `k2 ≥ 0` and the friction table.
    pub fn new(
        dofs: Vec<DofRef>,
        values: [f64; 5],
        friction: Option<FrictionTable>,
    ) -> Result<Self, String> {
        let e: Self = with_values(dofs, &values)?;
        if let Some(f) = &friction {
            f.check().map_err(|(k, e)| format!("`friction.{k}` {e}"))?;
        }
        Ok(Self { friction, ..e })
    }

    /// The bearing identified in Abbiati et al. (2019), §3.2.1 (SI units), without
    /// velocity dependence.
    pub fn abbiati_2019(dofs: Vec<DofRef>) -> Self {
        Self::new(dofs, [6.67e7, 1.5e-3, 1.15e6, 0.07, 5e5], None).expect("valid")
    }

    /// Slip deformations `(δ_0, δ_1)` at deformation rate `v`.
    pub fn bounds(&self, v: f64) -> (f64, f64) {
        match &self.friction {
            None => (self.delta0, self.delta1),
            Some(f) => {
                let (a, b) = f.scales(v);
                (self.delta0 * a, self.delta1 * b)
            }
        }
    }

    fn project<T: Scalar>(&self, v: &[T], s: &mut [T]) {
        let (d0, d1) = self.bounds(re(deformation(v)));
        for (i, (k, d)) in [(self.k0, d0), (self.k1, d1)].into_iter().enumerate() {
            let lim = k * d;
            if re(s[i]) > lim {
                s[i] = T::from(lim);
            } else if re(s[i]) < -lim {
                s[i] = T::from(-lim);
            }
        }
    }
}

impl ElementLaw for TripleSlidingBearing {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let d = deformation(u);
        let dv = deformation(v);
        let (d0, d1) = self.bounds(re(dv));
        sdot[0] = dv * (self.k0 * stick(re(dv), re(s[0]) / self.k0, d0));
        sdot[1] = dv * (self.k1 * stick(re(dv), re(s[1]) / self.k1, d1));
        let f = s[0] + s[1] + d * self.k2;
        sdot[2] = f * dv;
        scatter_force(r, f);
    }
}

impl Element for TripleSlidingBearing {
    impl_declared!();
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        let mut t = DMatrix::zeros(n + 3, 2 * n + 3);
        let sign = [1.0, -1.0];
        for i in 0..n {
            t[(i, 2 * n)] = sign[i];
            t[(i, 2 * n + 1)] = sign[i];
            for j in 0..n {
                t[(i, j)] = sign[i] * sign[j] * self.k2;
            }
            t[(n, n + i)] = sign[i] * self.k0;
            t[(n + 1, n + i)] = sign[i] * self.k1;
        }
        Some(t)
    }
    fn dissipated_energy(&self, u: &[f64], s: &[f64]) -> Option<f64> {
        let d = deformation(u);
        Some(
            s[2] - s[0] * s[0] / (2.0 * self.k0)
                - s[1] * s[1] / (2.0 * self.k1)
                - 0.5 * self.k2 * d * d,
        )
    }
    fn project_state(&self, _u: &[f64], v: &[f64], _s0: &[f64], s: &mut [f64]) {
        self.project(v, s)
    }
    fn project_state_dual(&self, _u: &[Dual64], v: &[Dual64], _s0: &[Dual64], s: &mut [Dual64]) {
        self.project(v, s)
    }
    fn driver_substep(&self) -> Option<f64> {
        Some(0.1 * self.delta0.min(self.delta1))
    }
}
