//! Bouc-Wen hysteretic spring (Abbiati et al. 2020, eq 16; two-node form and energy state of
//! Hovmand et al. 2022, eq 11; ALGORITHMS.md A13, E30, E32).

use super::declare::{checked, impl_declared, Declared, Param, Rule};
use super::switching::{abs_pow, deformation, re, scatter_force, sgn};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};

/// Bouc-Wen spring between two nodes (or a node and the ground) on one DOF direction.
///
/// With deformation `d = u1 − u2` and its rate `ḋ = v1 − v2`, the restoring force `r` is an
/// extra state (Abbiati et al. 2020, eq 16; Hovmand et al. 2022, eq 11):
///
/// `ṙ = (A − [β sgn(r ḋ) + γ] |r|ⁿ) ḋ`,
///
/// and the resisting forces are `[r, −r]` (`[r]` to ground). With `n = 1`, `β` and `γ` have
/// units of 1/length (E30); the published pier values are `β = 3.5 m⁻¹`, `γ = 60 m⁻¹`
/// (`γ > β` gives the unusually soft unloading `0.11 A` at the ultimate force; as published).
/// The force never exceeds the ultimate force `r_u = (A/(β+γ))^{1/n}` and approaches it under
/// monotonic loading.
///
/// Extra states: `r` (force) and `e`, the energy absorbed by the spring, `ė = r ḋ`
/// (Hovmand et al. 2022, eq 11 row 6 with the sign corrected, E32: the printed `ė = −r ḋ` is minus
/// the absorbed energy). `e` does not feed back. The derived dissipated energy
/// ([`Element::dissipated_energy`]) is `e − r²/(2A)`, the absorbed energy minus the energy
/// stored in the elastic spring `A` that carries the current force — equal to `e` whenever the
/// loop closes at `r = 0`.
#[derive(Debug, Clone)]
pub struct BoucWen {
    dofs: super::PairDofs,
    /// Initial stiffness `A` (force/length).
    pub a: f64,
    /// `β` (1/length^n · force^(1−n)).
    pub beta: f64,
    /// `γ` (same units as `β`).
    pub gamma: f64,
    /// Exponent `n` (dimensionless, > 0).
    pub n: f64,
}

impl Declared for BoucWen {
    const KIND: &'static str = "bouc_wen";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("A", "F/L", Rule::Positive, |e| e.a, |e, x| e.a = x),
        Param::new("beta", "F^(1-n)/L^n", Rule::Finite, |e| e.beta, |e, x| e.beta = x),
        Param::new("gamma", "F^(1-n)/L^n", Rule::Finite, |e| e.gamma, |e, x| e.gamma = x),
        Param::optional("n", "-", Rule::Positive, 1.0, |e| e.n, |e, x| e.n = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] =
        &[("r", Quantity::Force), ("e", Quantity::Energy)];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            a: 0.0,
            beta: 0.0,
            gamma: 0.0,
            n: 0.0,
        }
    }
    fn check_joint(&self) -> Result<(), (&'static str, String)> {
        if self.beta + self.gamma <= 0.0 {
            return Err((
                "gamma",
                format!(
                    "`beta` + `gamma` must be > 0 for a bounded force, found {} + {}",
                    self.beta, self.gamma
                ),
            ));
        }
        Ok(())
    }
}

impl BoucWen {
    /// A Bouc-Wen spring; checks the parameters (finite, `A > 0`, `n > 0`, `β + γ > 0`).
    pub fn new(dofs: Vec<DofRef>, a: f64, beta: f64, gamma: f64, n: f64) -> Result<Self, String> {
        checked(Self {
            dofs: dofs.into(),
            a,
            beta,
            gamma,
            n,
        })
    }

    /// Ultimate force `r_u = (A/(β+γ))^{1/n}`.
    pub fn ultimate_force(&self) -> f64 {
        (self.a / (self.beta + self.gamma)).powf(1.0 / self.n)
    }
}

impl ElementLaw for BoucWen {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let dv = deformation(v);
        let f = s[0];
        let sg = sgn(re(f) * re(dv));
        let rn = abs_pow(f, self.n);
        sdot[0] = (-(rn * (self.beta * sg + self.gamma)) + self.a) * dv;
        sdot[1] = f * dv;
        let _ = u;
        scatter_force(r, f);
    }
}

impl Element for BoucWen {
    impl_declared!();
    fn dissipated_energy(&self, _u: &[f64], s: &[f64]) -> Option<f64> {
        Some(s[1] - s[0] * s[0] / (2.0 * self.a))
    }
    fn driver_substep(&self) -> Option<f64> {
        // 1/50 of the yield deformation r_u/A.
        Some(0.02 * self.ultimate_force() / self.a)
    }
    fn exact_path_update(&self) -> bool {
        true
    }
    fn integrate_path(&self, u_start: &[f64], u: &[f64], s_start: &[f64], s: &mut [f64]) {
        s[0] = self.force_along_path(s_start[0], deformation(u) - deformation(u_start));
    }
}

impl BoucWen {
    /// The force at the end of a straight deformation increment `delta` from force `r0`: the
    /// law is rate-independent, `dr/dd = A − [β sgn(r Δ) + γ] |r|ⁿ` along a monotonic path, so
    /// with `ρ = r sgn(Δ)` and the path length `ξ = |Δ|`,
    /// `dρ/dξ = A − (β sgn ρ + γ)|ρ|ⁿ`. For `n = 1` both branches are linear and solved in
    /// closed form, with the switch at `ρ = 0` located exactly: `ρ < 0` (unloading):
    /// `ρ' = A + (γ − β)ρ`; `ρ ≥ 0` (loading): `ρ' = A − (β + γ)ρ`. For other `n`, classical
    /// Runge–Kutta in `ξ` with steps of at most 1/200 of the yield deformation `r_u/A`.
    /// This is the event location at velocity reversals of issue 17: the straight path of a
    /// step never reverses, so the kink of the rate law at `ḋ = 0` is at the ends of steps.
    pub fn force_along_path(&self, r0: f64, delta: f64) -> f64 {
        if delta == 0.0 || !delta.is_finite() {
            return r0;
        }
        let sign = delta.signum();
        let xi = delta.abs();
        let rho = r0 * sign;
        let out = if self.n == 1.0 {
            self.path_linear(rho, xi)
        } else {
            self.path_runge_kutta(rho, xi)
        };
        out * sign
    }

    fn path_linear(&self, mut rho: f64, mut xi: f64) -> f64 {
        let a = self.a;
        if rho < 0.0 {
            // ρ' = A + cρ, c = γ − β, from ρ < 0 towards 0.
            let c = self.gamma - self.beta;
            let x = c * rho / a;
            // Path length to ρ = 0 (infinite when the branch never gets there).
            let to_zero = if c == 0.0 {
                -rho / a
            } else if x > -1.0 {
                -x.ln_1p() / c
            } else {
                f64::INFINITY
            };
            if xi <= to_zero {
                return if c == 0.0 {
                    rho + a * xi
                } else {
                    rho * (c * xi).exp() + a * (c * xi).exp_m1() / c
                };
            }
            xi -= to_zero;
            rho = 0.0;
        }
        // ρ' = A − bρ, b = β + γ > 0.
        let b = self.beta + self.gamma;
        rho * (-b * xi).exp() - a * (-b * xi).exp_m1() / b
    }

    fn path_runge_kutta(&self, mut rho: f64, xi: f64) -> f64 {
        let rate = |p: f64| {
            let sg = if p > 0.0 {
                1.0
            } else if p < 0.0 {
                -1.0
            } else {
                0.0
            };
            self.a - (self.beta * sg + self.gamma) * p.abs().powf(self.n)
        };
        let h_max = 0.005 * self.ultimate_force() / self.a;
        let steps = ((xi / h_max).ceil() as usize).clamp(1, 100_000);
        let h = xi / steps as f64;
        for _ in 0..steps {
            let k1 = rate(rho);
            let k2 = rate(rho + 0.5 * h * k1);
            let k3 = rate(rho + 0.5 * h * k2);
            let k4 = rate(rho + h * k3);
            rho += h / 6.0 * (k1 + 2.0 * (k2 + k3) + k4);
        }
        rho
    }
}
