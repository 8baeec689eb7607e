//! Declared elements: one table row per scalar parameter.
//!
//! The one- or two-node elements on one DOF direction (spring, dashpot, cubic spring and the
//! hysteretic springs and bearings) implement [`Declared`]: a table [`Declared::PARAMETERS`]
//! gives, once per parameter, its model-file key, unit, admissible range ([`Rule`]) and how to
//! read and write it, and [`Declared::STATES`] names the extra states. Everything else follows
//! from the tables:
//! - the registry builder [`build`] (keys `nodes`, `dof` and the parameters, each problem
//!   reported at its own field),
//! - the checks of the public constructors ([`checked`], [`with_values`]),
//! - [`Element::parameters`](super::Element::parameters),
//!   [`Element::set_parameter`](super::Element::set_parameter) and the state and DOF
//!   accessors, through [`impl_declared!`].

use super::{DofRef, Element, Quantity};

/// Admissible range of a parameter (always finite as well).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any finite value.
    Finite,
    /// `> 0`.
    Positive,
    /// `≥ 0`.
    NonNegative,
    /// In `[0, 1)`.
    Fraction,
    /// `≥ 1`.
    AtLeastOne,
}

/// Check a parameter value: finite and within `rule`. The error is the reason only
/// (`must be > 0, found -1`); callers add the file and field.
pub fn check_value(value: f64, rule: Rule) -> Result<(), String> {
    if !value.is_finite() {
        return Err(format!("must be finite, found {value}"));
    }
    match rule {
        Rule::Positive if value <= 0.0 => Err(format!("must be > 0, found {value}")),
        Rule::NonNegative if value < 0.0 => Err(format!("must not be negative, found {value}")),
        Rule::Fraction if !(0.0..1.0).contains(&value) => {
            Err(format!("must be in [0, 1), found {value}"))
        }
        Rule::AtLeastOne if value < 1.0 => Err(format!("must be ≥ 1, found {value}")),
        _ => Ok(()),
    }
}

/// One scalar parameter of element `E`.
pub struct Param<E> {
    /// Key in the model file and name for run-time updates.
    pub name: &'static str,
    /// Unit in the model's base quantities: `F` force, `L` length, `T` time, `-` none.
    pub unit: &'static str,
    /// Admissible values.
    pub rule: Rule,
    /// Value when the model file omits the key; `None`: the key is required.
    pub default: Option<f64>,
    /// Reads the parameter.
    pub get: fn(&E) -> f64,
    /// Writes the parameter (unchecked).
    pub set: fn(&mut E, f64),
}

impl<E> Param<E> {
    /// A required parameter.
    pub const fn new(
        name: &'static str,
        unit: &'static str,
        rule: Rule,
        get: fn(&E) -> f64,
        set: fn(&mut E, f64),
    ) -> Self {
        Self {
            name,
            unit,
            rule,
            default: None,
            get,
            set,
        }
    }

    /// A parameter that model files may omit, with value `default`.
    pub const fn optional(
        name: &'static str,
        unit: &'static str,
        rule: Rule,
        default: f64,
        get: fn(&E) -> f64,
        set: fn(&mut E, f64),
    ) -> Self {
        Self {
            default: Some(default),
            ..Self::new(name, unit, rule, get, set)
        }
    }
}

/// A one- or two-node element on one DOF direction (field `dofs`) described by its tables.
pub trait Declared: Element + Clone + Sized + 'static {
    /// Registry name of the kind.
    const KIND: &'static str;
    /// The scalar parameters, in the order of [`Element::parameters`].
    const PARAMETERS: &'static [Param<Self>];
    /// The extra states: name and quantity.
    const STATES: &'static [(&'static str, Quantity)] = &[];

    /// The element on `dofs` with every parameter 0, to be set from [`Self::PARAMETERS`].
    fn blank(dofs: Vec<DofRef>) -> Self;

    /// Conditions on several parameters, checked after each passed its rule. The error names
    /// the model-file key to report it at, and the reason.
    fn check_joint(&self) -> Result<(), (&'static str, String)> {
        Ok(())
    }
}

/// `e` if every parameter passes its rule and the joint conditions hold (for constructors).
pub fn checked<E: Declared>(e: E) -> Result<E, String> {
    assert!(matches!(e.dofs().len(), 1 | 2));
    for p in E::PARAMETERS {
        check_value((p.get)(&e), p.rule).map_err(|r| format!("`{}` {r}", p.name))?;
    }
    e.check_joint().map_err(|(_, r)| r)?;
    Ok(e)
}

/// The element on `dofs` with parameter values in table order, [`checked`].
pub fn with_values<E: Declared>(dofs: Vec<DofRef>, values: &[f64]) -> Result<E, String> {
    checked(filled(dofs, values))
}

pub(crate) fn filled<E: Declared>(dofs: Vec<DofRef>, values: &[f64]) -> E {
    assert_eq!(values.len(), E::PARAMETERS.len());
    let mut e = E::blank(dofs);
    for (p, x) in E::PARAMETERS.iter().zip(values) {
        (p.set)(&mut e, *x);
    }
    e
}

/// [`Element::parameters`]: every parameter by name.
pub fn values<E: Declared>(e: &E) -> Vec<(&'static str, f64)> {
    E::PARAMETERS.iter().map(|p| (p.name, (p.get)(e))).collect()
}

/// [`Element::state_names`].
pub fn state_names<E: Declared>() -> Vec<String> {
    E::STATES.iter().map(|(n, _)| n.to_string()).collect()
}

/// [`Element::set_parameter`]: checks the value like the model file's; on error `e` is left
/// unchanged.
pub fn set<E: Declared>(e: &mut E, name: &str, value: f64) -> Result<(), String> {
    let Some(p) = E::PARAMETERS.iter().find(|p| p.name == name) else {
        return Err(format!(
            "element kind `{}` has no run-time parameter `{name}` (it has {})",
            E::KIND,
            listing(E::PARAMETERS)
        ));
    };
    check_value(value, p.rule).map_err(|r| format!("`{name}` {r}"))?;
    let old = (p.get)(e);
    (p.set)(e, value);
    if let Err((_, r)) = e.check_joint() {
        (p.set)(e, old);
        return Err(r);
    }
    Ok(())
}

/// `k [F/L], alpha [-], …`
pub(crate) fn listing<E>(params: &[Param<E>]) -> String {
    let names: Vec<String> = params
        .iter()
        .map(|p| format!("{} [{}]", p.name, p.unit))
        .collect();
    names.join(", ")
}

/// The [`Element`] methods of a [`Declared`] element: `kind`, `dofs`, `n_states`,
/// `state_names`, `state_quantity`, `parameters`, `set_parameter`, `deformation` (`u1 − u2`,
/// or `u1` to ground) and, through [`ElementLaw`](super::ElementLaw), `restoring` and
/// `restoring_dual`. Call it inside `impl Element`.
macro_rules! impl_declared {
    () => {
        fn kind(&self) -> &'static str {
            <Self as $crate::elements::declare::Declared>::KIND
        }
        fn dofs(&self) -> &[$crate::elements::DofRef] {
            &self.dofs
        }
        fn n_states(&self) -> usize {
            <Self as $crate::elements::declare::Declared>::STATES.len()
        }
        fn state_names(&self) -> Vec<String> {
            $crate::elements::declare::state_names::<Self>()
        }
        fn state_quantity(&self, i: usize) -> $crate::elements::Quantity {
            <Self as $crate::elements::declare::Declared>::STATES[i].1
        }
        fn parameters(&self) -> Vec<(&'static str, f64)> {
            $crate::elements::declare::values(self)
        }
        fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
            $crate::elements::declare::set(self, name, value)
        }
        fn deformation(&self, u: &[f64]) -> Option<f64> {
            Some($crate::elements::switching::deformation(u))
        }
        $crate::impl_element_evaluation!();
    };
}
pub(crate) use impl_declared;
