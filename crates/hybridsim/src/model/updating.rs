//! `[updating]`: online model updating with an unscented Kalman filter (Abbiati et al. 2020,
//! §2.1), as validated from the model file.

use crate::updating::IdentificationSettings;

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
    /// exceeds this (model acceleration units); seed 003 froze it above 0.50 g.
    pub freeze_above_pga: Option<f64>,
    /// Freeze updating when an estimate reaches one of its bounds (an unstable estimate).
    pub freeze_at_bound: bool,
}
