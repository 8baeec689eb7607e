//! The configuration layer: a model file (TOML text) to a validated [`Model`].
//!
//! [`schema`] is the file as written; [`Model::from_toml`] reads it, checks every table and
//! field (every problem reported at once, by file, field and reason), builds the model types
//! of [`crate::model`], then runs the checks that need the assembled layout (positive-definite
//! partition masses, interfaces that couple every substructure, non-singular element
//! partitions of the LLM scheme). Only this layer knows TOML; the model types stay below the
//! assembly and the integrators.

mod build;
mod imposed_motion;
mod lab;
pub mod schema;
mod structure;

pub use structure::{dynamic_matrix, validate_element_partitions, validate_structure};

use crate::elements::ElementRegistry;
use crate::error::ModelError;
use crate::model::{Model, SourceResolver};

impl Model {
    /// Read and validate a model from TOML text with the default element registry.
    pub fn from_toml(
        text: &str,
        source: &str,
        files: &dyn SourceResolver,
    ) -> Result<Model, ModelError> {
        Self::from_toml_with(text, source, files, &ElementRegistry::default())
    }

    /// Read and validate with a custom element registry.
    pub fn from_toml_with(
        text: &str,
        source: &str,
        files: &dyn SourceResolver,
        registry: &ElementRegistry,
    ) -> Result<Model, ModelError> {
        let model = build::parse(text, source, files, registry)?;
        validate_structure(&model)?;
        Ok(model)
    }
}
