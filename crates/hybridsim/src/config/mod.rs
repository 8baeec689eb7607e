//! The configuration layer: a model file (TOML text) to a validated [`Model`].
//!
//! [`schema`] is the file as written. [`Model::from_toml`] reads it, then reads each table with
//! its own function (every problem of the file collected in one [`Diagnostics`] and reported
//! at once, by file, field and reason) and assembles the model types of [`crate::model`];
//! last come the checks that need the assembled layout ([`validate_structure`]). Apart from
//! the element builders (each reads its own parameter table), only this layer knows TOML; the
//! model types stay below the assembly and the integrators.
//!
//! One file per table: `nodes.rs` (`[[node]]`), `substructures.rs` (`[substructure.NAME]`),
//! `elements.rs` (`[[element]]`), `damping.rs` (`[damping]`), `loads.rs` (`[[load]]`),
//! `ground_motion.rs` (`[[ground_motion]]`), `imposed_motion.rs` (`[[imposed_motion]]`),
//! `analysis.rs` (`[analysis]`, `[output]`), `lab.rs` (`[lab]`, `[safety]`, `[runner]`) and
//! `updating.rs` (`[updating]`);
//! `title`, `[units]` and the reserved tables are read here, the layout checks are in
//! `structure.rs`.

mod analysis;
mod damping;
mod element_reader;
mod elements;
mod entries;
mod frame;
mod ground_motion;
mod imposed_motion;
pub mod keys;
mod lab;
mod loads;
mod nodes;
mod registry;
pub mod schema;
mod structure;
mod substructures;
mod updating;

pub use structure::{dynamic_matrix, validate_element_partitions, validate_structure};

use crate::error::{Diagnostics, ModelError};
use crate::model::{Model, SourceResolver};
use crate::units::Units;
pub use nodes::{startup_memory_estimate, MAX_DOFS, MEMORY_BUDGET_BYTES};
pub use nodes::{DofNames, NodeDofs};
pub use registry::{parse_params, ElementBuilder, ElementContext, ElementRegistry};
use schema::{ModelFile, RESERVED_TABLES};

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
        Self::read_toml_with(text, source, files, registry)?.validate()
    }

    /// Read a model from TOML text with the default element registry, every table checked
    /// but not yet the assembled layout ([`UnvalidatedModel::validate`]): a caller that holds
    /// a large file's text can release it before the layout is built (issue 20: the text of
    /// a 10⁵-DOF frame, 45 MB, was live at the start-up's peak).
    /// `Model::read_toml(..)?.validate()` is [`Model::from_toml`], error for error.
    pub fn read_toml(
        text: &str,
        source: &str,
        files: &dyn SourceResolver,
    ) -> Result<UnvalidatedModel, ModelError> {
        Self::read_toml_with(text, source, files, &ElementRegistry::default())
    }

    /// [`Model::read_toml`] with a custom element registry.
    pub fn read_toml_with(
        text: &str,
        source: &str,
        files: &dyn SourceResolver,
        registry: &ElementRegistry,
    ) -> Result<UnvalidatedModel, ModelError> {
        if text.len() > MAX_MODEL_FILE_BYTES {
            return Err(ModelError::single(
                source,
                "file",
                format!(
                    "is {} bytes long; a model file has at most {} MiB",
                    text.len(),
                    MAX_MODEL_FILE_BYTES >> 20
                ),
            ));
        }
        let model = match entries::split(text) {
            Some(split) => {
                let mut spec = parse(&split.rest, true, source)?;
                // Sized exactly (a collect of results grows by doubling: up to twice the
                // 104 bytes a node, issue 20).
                spec.node = Vec::with_capacity(split.nodes.len());
                for e in &split.nodes {
                    spec.node.push(e.node(text, source)?);
                }
                let elements = split.elements.iter().map(|e| e.element(text, source));
                build(
                    spec,
                    elements,
                    split.elements.len(),
                    source,
                    files,
                    registry,
                )?
            }
            None => return Self::read_whole_unvalidated(text, source, files, registry),
        };
        Ok(UnvalidatedModel(model))
    }
}

/// A model whose tables have been read and checked, but not yet its assembled layout
/// ([`validate_structure`]); [`UnvalidatedModel::validate`] gives the [`Model`].
#[derive(Debug)]
pub struct UnvalidatedModel(Model);

impl UnvalidatedModel {
    /// Check the assembled layout ([`validate_structure`]): the model, or the errors
    /// [`Model::from_toml`] reports for it.
    pub fn validate(self) -> Result<Model, ModelError> {
        validate_structure(&self.0)?;
        Ok(self.0)
    }
}

impl Model {
    /// The model read by the whole-file TOML reader alone (every value of the file in one
    /// tree before the first node is built), not entry by entry: what [`Model::from_toml`]
    /// gives for files whose `node` and `element` arrays it does not take apart, and the
    /// reference its entry-by-entry reading is tested against.
    #[doc(hidden)]
    pub fn read_whole(
        text: &str,
        source: &str,
        files: &dyn SourceResolver,
        registry: &ElementRegistry,
    ) -> Result<Model, ModelError> {
        Self::read_whole_unvalidated(text, source, files, registry)?.validate()
    }

    /// [`Model::read_whole`] without the layout checks.
    fn read_whole_unvalidated(
        text: &str,
        source: &str,
        files: &dyn SourceResolver,
        registry: &ElementRegistry,
    ) -> Result<UnvalidatedModel, ModelError> {
        let mut spec = parse(text, false, source)?;
        let elements = std::mem::take(&mut spec.element);
        let count = elements.len();
        let model = build(
            spec,
            elements.into_iter().map(Ok),
            count,
            source,
            files,
            registry,
        )?;
        Ok(UnvalidatedModel(model))
    }
}

/// Longest text the whole-file TOML reader is given, bytes (16 MiB): a whole model file, or a
/// file's text besides the `node` and `element` arrays it reads entry by entry.
pub const MAX_MODEL_BYTES: usize = 16 << 20;

/// Longest model file whose `node` and `element` arrays are read entry by entry, bytes
/// (256 MiB: a 2D frame of 10⁵ DOFs written as 6-DOF `linear` members is about 45 MB).
pub const MAX_MODEL_FILE_BYTES: usize = 256 << 20;

/// The model file as written (`text`: the whole file, or with `blanked` the file with its node
/// and element arrays blanked); a TOML error is reported at its line, an unknown key written as
/// `key = …` at its dotted path.
fn parse(text: &str, blanked: bool, source: &str) -> Result<ModelFile, ModelError> {
    // The TOML reader keeps every token of the text (several words per byte): bound the text
    // before it is read.
    if text.len() > MAX_MODEL_BYTES {
        let besides = if blanked {
            " besides its `node` and `element` arrays"
        } else {
            ""
        };
        return Err(ModelError::single(
            source,
            "file",
            format!(
                "is {} bytes long{besides}; a model file has at most {} MiB (records belong in \
                 their own files)",
                text.len(),
                MAX_MODEL_BYTES >> 20
            ),
        ));
    }
    toml::from_str(text).map_err(|e| toml_error(text, source, &e, 0))
}

/// A TOML error `e` of the text that starts at byte `offset` of the file `text`, reported at
/// its line of the file, an unknown key written as `key = …` at its dotted path.
fn toml_error(text: &str, source: &str, e: &toml::de::Error, offset: usize) -> ModelError {
    let reason = e.message().trim().replace('\n', " ");
    let Some(start) = e.span().map(|sp| (offset + sp.start).min(text.len())) else {
        return ModelError::single(source, "file", reason);
    };
    let line = text.get(..start).unwrap_or(text).matches('\n').count() + 1;
    let field = reason
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
        .and_then(|key| key_path(text, line, key));
    match field {
        Some(field) => ModelError::single(source, field, format!("{reason} (line {line})")),
        None => ModelError::single(source, format!("line {line}"), reason),
    }
}

/// Dotted path of `key`, written as `key = …` on 1-based `line`, from the table header above it
/// (`[analysis]` → `analysis.key`, the third `[[node]]` → `node[2].key`); `None` when the key is
/// not written that way (inline tables, dotted keys).
fn key_path(text: &str, line: usize, key: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?.trim_start();
    let after = here.strip_prefix(key)?.trim_start();
    if key.is_empty() || !after.starts_with('=') {
        return None;
    }
    let header = |l: &str| -> Option<(String, bool)> {
        let l = l.trim();
        let (inner, array) = match l.strip_prefix("[[") {
            Some(rest) => (rest.split("]]").next()?, true),
            None => (l.strip_prefix('[')?.split(']').next()?, false),
        };
        Some((inner.replace([' ', '"'], ""), array))
    };
    let above = &lines[..line - 1];
    let Some(at) = above.iter().rposition(|l| header(l).is_some()) else {
        return Some(key.to_string());
    };
    let (name, array) = header(above[at])?;
    if array {
        let index = above[..at]
            .iter()
            .filter(|l| header(l) == Some((name.clone(), true)))
            .count();
        Some(format!("{name}[{index}].{key}"))
    } else {
        Some(format!("{name}.{key}"))
    }
}

/// Every table of the file in order, each read by its own function into one [`Diagnostics`];
/// the model when none of them found a problem. The `count` element tables come one by one
/// from `element_tables` (each dropped once its element is built); the first that cannot be
/// read is the error.
fn build(
    mut spec: ModelFile,
    element_tables: impl Iterator<Item = Result<toml::Table, ModelError>>,
    count: usize,
    source: &str,
    files: &dyn SourceResolver,
    registry: &ElementRegistry,
) -> Result<Model, ModelError> {
    let mut diag = Diagnostics::new(source);
    let llm = analysis::llm_mode(spec.analysis.as_ref());
    reserved_tables(&spec, &mut diag);
    let units = units(spec.units, &mut diag);
    // Refuse a model whose start-up matrices would not fit the memory budget before any
    // node, element, substructure or partition is built.
    let integrator = spec.analysis.as_ref().map(|a| a.integrator.as_str());
    if nodes::too_many_dofs(&spec.node, integrator, &mut diag) {
        return Err(diag.into_error());
    }
    let (nodes, node_dofs) = nodes::nodes(&spec.node, &mut diag);
    // The nodes as written are read again only for their ids (where a node's problem is
    // reported): their DOF names' heap blocks go before the elements are read, so that the
    // elements' blocks fill the holes they leave (issue 20).
    let node_ids: Vec<i64> = spec.node.iter().map(|n| n.id).collect();
    drop(std::mem::take(&mut spec.node));
    let free_dofs = nodes
        .iter()
        .map(|n| n.dofs.iter().filter(|d| !d.fixed).count())
        .sum();
    let ctx = ElementContext::new(&node_dofs);
    let substructures = substructures::substructures(&spec.substructure, &ctx, &mut diag);
    let before_elements = diag.len();
    let (elements, mass_shares) = elements::elements(
        element_tables,
        count,
        llm,
        &substructures,
        &ctx,
        registry,
        &mut diag,
    )?;
    // The coverage checks would only repeat an element's problem as a gap elsewhere.
    if diag.len() == before_elements {
        elements::check_coverage(&node_ids, &nodes, &elements, &substructures, &mut diag);
    }
    let rayleigh = damping::damping(spec.damping.as_ref(), &mut diag);
    let rayleigh_stiffness = damping::stiffness(spec.damping.as_ref(), &mut diag);
    let loads = loads::loads(&spec.load, &ctx, &nodes, files, &mut diag);
    let ground_motions =
        ground_motion::ground_motions(&spec.ground_motion, &node_dofs, &units, files, &mut diag);
    let imposed_motions = imposed_motion::imposed_motions(
        spec.imposed_motion.as_ref(),
        llm,
        &ctx,
        &nodes,
        &units,
        files,
        &mut diag,
    );
    let mut analysis = analysis::analysis(spec.analysis.as_ref(), &substructures, &mut diag);
    let element_names: Vec<&str> = elements.iter().map(|e| &*e.name).collect();
    let output = analysis::output(&spec.output, &node_dofs, &element_names, &mut diag);
    let lab = lab::lab(
        spec.lab.as_ref(),
        spec.safety.as_ref(),
        spec.runner.as_ref(),
        &lab::LabContext::new(
            &units,
            &elements,
            &substructures,
            analysis.as_ref(),
            output.every,
            free_dofs,
        ),
        &mut diag,
    );
    let link_tangent_given = spec
        .analysis
        .as_ref()
        .is_some_and(|a| a.link_tangent.is_some());
    if let Some(a) = analysis.as_mut() {
        damping::check_stiffness_against_analysis(rayleigh_stiffness, a.integrator, &mut diag);
        analysis::default_link_tangent(a, rayleigh_stiffness, link_tangent_given);
        ground_motion::check_against_analysis(&ground_motions, a.time_step, a.duration, &mut diag);
    }
    let updating = updating::updating(spec.updating.as_ref(), &elements, &mut diag);
    if diag.has_errors() {
        return Err(diag.into_error());
    }
    let warnings = diag.take_warnings();
    Ok(Model {
        warnings,
        title: spec.title.unwrap_or_default(),
        source: source.to_string(),
        units,
        nodes,
        elements,
        substructures,
        rayleigh,
        rayleigh_stiffness,
        loads,
        ground_motions,
        analysis: analysis.expect("analysis validated"),
        output,
        imposed_motions,
        mass_shares,
        lab,
        updating,
    })
}

/// `network`: reserved for a later version.
fn reserved_tables(spec: &ModelFile, diag: &mut Diagnostics) {
    let reserved = [("network", spec.network.is_some())];
    for (name, present) in reserved {
        if present {
            let what = RESERVED_TABLES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, w)| *w)
                .unwrap_or("");
            diag.push(
                name,
                format!("is reserved for {what}, which this version does not support yet"),
            );
        }
    }
}

/// `[units]`: known length, force and time units.
fn units(units: Units, diag: &mut Diagnostics) -> Units {
    if units.length_in_m().is_none() {
        diag.push(
            "units.length",
            format!("unknown length unit `{}` (m, cm, mm, in, ft)", units.length),
        );
    }
    if units.force_in_n().is_none() {
        diag.push(
            "units.force",
            format!("unknown force unit `{}` (N, kN, MN, lbf, kip)", units.force),
        );
    }
    if units.time_in_s().is_none() {
        diag.push(
            "units.time",
            format!("unknown time unit `{}` (s, ms)", units.time),
        );
    }
    units
}

/// Positive and finite.
fn finite_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}
