//! Settings of the full-operator method and of operator splitting (`[analysis.estimator]`).
//!
//! The full-operator method (FOM) of Hung and El-Tawil (2009) predicts with an estimated tangent
//! stiffness `K̂` that a quasi-Newton update refines from the measured increments; operator
//! splitting (OSM, Nakashima et al. 1990; α-OS, Combescure and Pegon 1997) corrects with the
//! initial stiffness. The integrators are [`crate::integrators::Fom`] and
//! [`crate::integrators::Osm`]; the updates are in [`crate::integrators::tangent`].

/// Quasi-Newton update of the estimated tangent stiffness (Hung and El-Tawil 2009, eqs 13–17).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TangentUpdate {
    /// Keep the initial estimate (the paper's variants 1 and 2).
    Fixed,
    /// Broyden–Fletcher–Goldfarb–Shanno.
    Bfgs,
    /// Davidon–Fletcher–Powell.
    Dfp,
    /// Broyden's (non-symmetric) rank-one update.
    Broyden,
    /// The Broyden family `(1 − ψ) K_BFGS + ψ K_DFP`.
    BroydenFamily {
        /// Weight ψ of the DFP update, in [0, 1].
        psi: f64,
    },
    /// Symmetric rank one.
    Sr1,
}

impl TangentUpdate {
    /// Name as in model files.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fixed => "none",
            Self::Bfgs => "bfgs",
            Self::Dfp => "dfp",
            Self::Broyden => "broyden",
            Self::BroydenFamily { .. } => "broyden-family",
            Self::Sr1 => "sr1",
        }
    }
}

/// Default weight ψ of the Broyden family (Hung and El-Tawil 2009).
pub const DEFAULT_PSI: f64 = 0.5;

/// Where the predictor linearizes the restoring force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linearization {
    /// About the last predictor displacement `d̂_n`, where `r_n` was measured (default):
    /// `r(d̂_{n+1}) ≈ r_n + K̂ (d̂_{n+1} − d̂_n)`.
    Predictor,
    /// About the corrected displacement `d_n`, as Hung and El-Tawil (2009) print eq 7
    /// (ALGORITHMS.md E36): `r(d̂_{n+1}) ≈ r_n + K̂ (d̂_{n+1} − d_n)`.
    Corrected,
}

/// `[analysis.estimator]`, validated (defaults when the table is absent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EstimatorSettings {
    /// The tangent update (FOM; `Fixed` by default, BFGS when `update` is not given but the
    /// table is).
    pub update: TangentUpdate,
    /// Rule 1: reset `K̂` to the initial estimate when the displacement reverses.
    pub reset_at_reversal: bool,
    /// Rule 2: skip updates whose predictor increment `‖Δd̂‖∞` is below this (model length
    /// units); `None`: 2.5 × the finest displacement resolution of the lab's actuators (0
    /// without a lab).
    pub threshold: Option<f64>,
    /// FOM: apply the corrector (eq 12); `false` keeps the predictor (variants 1 and 3).
    pub corrector: bool,
    /// FOM: where the predictor linearizes the restoring force.
    pub linearization: Linearization,
    /// OSM: the I-modification of the measured force (Nakashima et al. 1990).
    pub i_modification: bool,
}

impl Default for EstimatorSettings {
    fn default() -> Self {
        Self {
            update: TangentUpdate::Fixed,
            reset_at_reversal: true,
            threshold: None,
            corrector: true,
            linearization: Linearization::Predictor,
            i_modification: false,
        }
    }
}
