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
    warnings: Vec<ModelIssue>,
}

impl Diagnostics {
    /// Start collecting problems for `file`.
    pub fn new(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            issues: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Record a warning at `field`: a value that is valid but probably not meant (a PGA of
    /// 3 g, a run longer than its record). Warnings never stop a model from loading.
    pub fn warn(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.warnings.push(ModelIssue {
            file: self.file.clone(),
            field: field.into(),
            reason: reason.into(),
        });
    }

    /// The warnings recorded so far, taken out.
    pub fn take_warnings(&mut self) -> Vec<ModelIssue> {
        std::mem::take(&mut self.warnings)
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
