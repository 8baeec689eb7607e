//! `[updating]`: online model updating with an unscented Kalman filter (Abbiati et al. 2020,
//! §2.1), as validated from the model file.

use super::ElementInstance;
use crate::updating::{ElementModel, FreezeRule, Identification, IdentificationSettings};

/// What the model file asks of online model updating.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatingConfig {
    /// Index into [`Model::elements`](super::Model::elements) of the identified element
    /// (the identification model, driven by the measured interface kinematics).
    pub identify: usize,
    /// Names of the identified parameters (in the order of `θ`).
    pub parameters: Vec<String>,
    /// Priors, noise, bounds and sigma-point scaling of the filter.
    pub settings: IdentificationSettings,
    /// Indices into [`Model::elements`](super::Model::elements) of the numerical elements that
    /// receive the estimates (each has every identified parameter).
    pub receivers: Vec<usize>,
    /// Coarse steps between two updates (≥ 1).
    pub period: u64,
    /// Runge–Kutta substeps of the identification model per update.
    pub substeps: usize,
    /// Freeze updating (keep the last estimates) once the ground acceleration's running peak
    /// exceeds this (model acceleration units); Abbiati et al. (2020) froze it above 0.50 g.
    pub freeze_above_pga: Option<f64>,
    /// Freeze updating when an estimate reaches one of its bounds (an unstable estimate).
    pub freeze_at_bound: bool,
    /// Whether the receiving partition's matrices are rebuilt when an estimate changes a
    /// receiver's zero-state tangent (`refactorize`).
    pub refactorize: Refactorize,
}

/// `[updating] refactorize`: what happens to the integrator's matrices (`D^N`, PG-α's link
/// operator `ℚ^N` and Steklov–Poincaré operator `H`) when estimates reach the receivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Refactorize {
    /// `"never"` (the default): kept from the start; the new law enters through the residual.
    #[default]
    Never,
    /// `"on_update"`: rebuilt off the real-time path for every applied estimate that changes
    /// the receivers' zero-state tangent, and swapped in at the step the estimate is applied.
    OnUpdate,
}

impl Refactorize {
    /// The model-file value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::OnUpdate => "on_update",
        }
    }
}

impl UpdatingConfig {
    /// The freeze criteria.
    pub fn freeze_rule(&self) -> FreezeRule {
        FreezeRule {
            above_pga: self.freeze_above_pga,
            at_bound: self.freeze_at_bound,
        }
    }

    /// A fresh identification (model, filter at its prior, freeze rule) for the model's
    /// `elements`; the configuration was validated against them, so this fails only for other
    /// elements.
    pub fn identification(
        &self,
        elements: &[ElementInstance],
    ) -> Result<Identification<ElementModel>, String> {
        let element = elements
            .get(self.identify)
            .ok_or("the identified element is not in the model")?;
        let names: Vec<&str> = self.parameters.iter().map(String::as_str).collect();
        let model = ElementModel::new(element.element.clone_box(), &names, self.substeps)?;
        let mut id = Identification::new(model, &self.settings)?;
        id.set_freeze_rule(self.freeze_rule());
        Ok(id)
    }
}
