//! The failure of a step.

/// A failure while stepping an integrator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    /// A state, rate or multiplier became NaN or infinite.
    #[error("non-finite value in {what} at t = {time} s (step {step})")]
    NonFinite {
        /// Which quantity (e.g. `numerical substructure state`, `Lambda`).
        what: &'static str,
        /// Simulation time of the failed step.
        time: f64,
        /// Index of the failed step.
        step: u64,
    },
    /// The safety layer of a physical substructure stopped the test (the event is latched;
    /// nothing allocates on this path).
    #[error("{0}")]
    Safety(crate::physical::SafetyEvent),
    /// The physical substructure could not deliver a restoring force.
    #[error("physical substructure `{substructure}` failed: {reason}")]
    Physical {
        /// Name of the substructure.
        substructure: String,
        /// What the port reported.
        reason: String,
    },
}

impl StepError {
    /// The step error of a port failure of substructure `substructure`: a safety stop stays
    /// a [`StepError::Safety`] (allocation-free), anything else names the substructure.
    pub fn from_port(substructure: &str, error: crate::physical::PortError) -> Self {
        match error {
            crate::physical::PortError::Safety(event) => StepError::Safety(event),
            crate::physical::PortError::Fault(reason) => StepError::Physical {
                substructure: substructure.to_string(),
                reason,
            },
        }
    }
}
