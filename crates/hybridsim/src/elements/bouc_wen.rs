//! Bouc-Wen hysteretic spring (seed 003 eq 16; two-node form and energy state of seed 004
//! eq 11; ALGORITHMS.md A13, E30, E32).

use super::registry::{parse_params, ElementContext};
use super::switching::{
    abs_pow, check_params, deformation, re, scatter_force, settable, sgn, Rule,
};
use super::{DofRef, Element, ElementLaw, ElementRef, Quantity, Scalar};
use crate::error::Diagnostics;
use serde::Deserialize;
use std::sync::Arc;

/// Bouc-Wen spring between two nodes (or a node and the ground) on one DOF direction.
///
/// With deformation `d = u1 − u2` and its rate `ḋ = v1 − v2`, the restoring force `r` is an
/// extra state (seed 003 eq 16, seed 004 eq 11):
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
/// (seed 004 eq 11 row 6 with the sign corrected, E32: the printed `ė = −r ḋ` is minus the
/// absorbed energy). `e` does not feed back. The derived dissipated energy
/// ([`Element::dissipated_energy`]) is `e − r²/(2A)`, the absorbed energy minus the energy
/// stored in the elastic spring `A` that carries the current force — equal to `e` whenever the
/// loop closes at `r = 0`.
#[derive(Debug, Clone)]
pub struct BoucWen {
    dofs: Vec<DofRef>,
    /// Initial stiffness `A` (force/length).
    pub a: f64,
    /// `β` (1/length^n · force^(1−n)).
    pub beta: f64,
    /// `γ` (same units as `β`).
    pub gamma: f64,
    /// Exponent `n` (dimensionless, > 0).
    pub n: f64,
}

const PARAMS: [(&str, Rule); 4] = [
    ("A", Rule::Positive),
    ("beta", Rule::Finite),
    ("gamma", Rule::Finite),
    ("n", Rule::Positive),
];

impl BoucWen {
    /// A Bouc-Wen spring; checks the parameters (finite, `A > 0`, `n > 0`, `β + γ > 0`).
    pub fn new(dofs: Vec<DofRef>, a: f64, beta: f64, gamma: f64, n: f64) -> Result<Self, String> {
        assert!(matches!(dofs.len(), 1 | 2));
        let e = Self {
            dofs,
            a,
            beta,
            gamma,
            n,
        };
        for (i, (name, rule)) in PARAMS.iter().enumerate() {
            super::switching::check_value(e.values()[i], *rule)
                .map_err(|r| format!("`{name}` {r}"))?;
        }
        e.check_bounded()?;
        Ok(e)
    }

    fn values(&self) -> [f64; 4] {
        [self.a, self.beta, self.gamma, self.n]
    }

    fn check_bounded(&self) -> Result<(), String> {
        if self.beta + self.gamma <= 0.0 {
            return Err(format!(
                "`beta` + `gamma` must be > 0 for a bounded force, found {} + {}",
                self.beta, self.gamma
            ));
        }
        Ok(())
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
    fn kind(&self) -> &'static str {
        "bouc_wen"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn n_states(&self) -> usize {
        2
    }
    fn state_names(&self) -> Vec<String> {
        vec!["r".into(), "e".into()]
    }
    fn state_quantity(&self, i: usize) -> Quantity {
        [Quantity::Force, Quantity::Energy][i]
    }
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        PARAMS.iter().map(|p| p.0).zip(self.values()).collect()
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        let i = settable(self.kind(), &PARAMS, name, value)?;
        let mut next = self.clone();
        match i {
            0 => next.a = value,
            1 => next.beta = value,
            2 => next.gamma = value,
            _ => next.n = value,
        }
        next.check_bounded()?;
        *self = next;
        Ok(())
    }
    fn deformation(&self, u: &[f64]) -> Option<f64> {
        Some(deformation(u))
    }
    fn dissipated_energy(&self, _u: &[f64], s: &[f64]) -> Option<f64> {
        Some(s[1] - s[0] * s[0] / (2.0 * self.a))
    }
    fn driver_substep(&self) -> Option<f64> {
        // 1/50 of the yield deformation r_u/A.
        Some(0.02 * self.ultimate_force() / self.a)
    }
    crate::impl_element_evaluation!();
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    nodes: Vec<i64>,
    dof: String,
    #[serde(rename = "A")]
    a: f64,
    beta: f64,
    gamma: f64,
    #[serde(default = "one")]
    n: f64,
}

fn one() -> f64 {
    1.0
}

/// Registry builder for `type = "bouc_wen"`: `nodes`, `dof`, `A`, `beta`, `gamma`, `n`
/// (default 1).
pub(crate) fn build(
    ctx: &ElementContext,
    table: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let p: Params = parse_params(table, diag, field)?;
    let ok = check_params(
        diag,
        field,
        &[
            ("A", p.a, Rule::Positive),
            ("beta", p.beta, Rule::Finite),
            ("gamma", p.gamma, Rule::Finite),
            ("n", p.n, Rule::Positive),
        ],
    );
    let dofs = ctx.node_pair(&p.nodes, &p.dof, diag, field);
    if !ok {
        return None;
    }
    let dofs = dofs?;
    match BoucWen::new(dofs, p.a, p.beta, p.gamma, p.n) {
        Ok(e) => Some(Arc::new(e)),
        Err(e) => {
            diag.push(format!("{field}.gamma"), e);
            None
        }
    }
}
