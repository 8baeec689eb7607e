//! Errors with the location a lab engineer needs: the file, the field and the reason.

use std::fmt;

/// One problem found in a model file.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelIssue {
    /// The model file (or other source) the problem is in.
    pub file: String,
    /// Dotted path of the offending field, e.g. `element[3].k` or `analysis.subcycles`.
    pub field: String,
    /// What is wrong, in a sentence.
    pub reason: String,
}

impl fmt::Display for ModelIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.field, self.reason)
    }
}

/// Every problem found while reading and validating a model, reported together.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelError {
    /// The individual problems, in the order found.
    pub issues: Vec<ModelIssue>,
}

impl ModelError {
    /// A single problem.
    pub fn single(file: &str, field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            issues: vec![ModelIssue {
                file: file.to_string(),
                field: field.into(),
                reason: reason.into(),
            }],
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.issues.len();
        writeln!(
            f,
            "the model has {n} problem{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for issue in &self.issues {
            writeln!(f, "  {issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelError {}

/// Collects problems while validating, so that all of them are reported at once.
#[derive(Debug)]
pub struct Diagnostics {
    file: String,
    issues: Vec<ModelIssue>,
}

impl Diagnostics {
    /// Start collecting problems for `file`.
    pub fn new(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            issues: Vec::new(),
        }
    }

    /// The file the problems are reported against.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Record a problem at `field`.
    pub fn push(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.issues.push(ModelIssue {
            file: self.file.clone(),
            field: field.into(),
            reason: reason.into(),
        });
    }

    /// Whether any problem has been recorded.
    pub fn has_errors(&self) -> bool {
        !self.issues.is_empty()
    }

    /// Number of problems so far.
    pub fn len(&self) -> usize {
        self.issues.len()
    }

    /// Whether no problem has been recorded.
    pub fn is_empty(&self) -> bool {
        self.issues.is_empty()
    }

    /// Finish: `Ok(value)` when nothing was recorded.
    pub fn finish<T>(self, value: T) -> Result<T, ModelError> {
        if self.issues.is_empty() {
            Ok(value)
        } else {
            Err(ModelError {
                issues: self.issues,
            })
        }
    }

    /// Turn the collected problems into an error (even when empty).
    pub fn into_error(self) -> ModelError {
        ModelError {
            issues: self.issues,
        }
    }
}

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

    /// The safety event that stopped the step, if one did.
    pub fn safety_event(&self) -> Option<crate::physical::SafetyEvent> {
        match self {
            StepError::Safety(event) => Some(*event),
            _ => None,
        }
    }
}
