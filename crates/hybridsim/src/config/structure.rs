//! The checks that need the assembled layout, run after every table has been read: positive-
//! definite partition masses, interfaces that couple every substructure, non-singular element
//! partitions of the LLM scheme.

use crate::assembly::{build_element_partitions, build_partitions, Grouping, Interface, Partition};
use crate::error::{Diagnostics, ModelError};
use crate::integrators::AlphaParameters;
use crate::model::{IntegratorKind, Model};
use nalgebra::DMatrix;

/// Checks that need the assembled layout: every partition's mass matrix is positive definite
/// (else `D` is singular), interfaces exist where the integrator needs them.
pub fn validate_structure(model: &Model) -> Result<(), ModelError> {
    let grouping = match model.analysis.integrator {
        IntegratorKind::Llm => return validate_element_partitions(model),
        IntegratorKind::PgAlpha
        | IntegratorKind::Lsrt2Partitioned
        | IntegratorKind::Lsrt2Interfield => Grouping::Partitioned,
        _ => Grouping::Monolithic,
    };
    let parts = build_partitions(model, grouping)?;
    // Always also check the assembled model for a monolithic reference.
    if grouping == Grouping::Partitioned {
        build_partitions(model, Grouping::Monolithic)?;
        let mut diag = Diagnostics::new(&model.source);
        let iface = Interface::dofs_of(&parts);
        for p in &parts {
            if !iface
                .iter()
                .any(|d| d.plus == p.index || d.minus == p.index)
            {
                diag.push(
                    format!("substructure.{}", p.state.name),
                    "shares no DOF with any other substructure, so nothing couples it",
                );
            }
        }
        diag.finish(())?;
    }
    Ok(())
}

/// `D^(i) = M^(i) + c K_0^(i)` of a partition (Hovmand et al. 2022, eq 8 with `c = γΔt`; with a
/// generalized-α basic solver `c = γΔt α_f/α_m`).
pub fn dynamic_matrix(part: &Partition, params: AlphaParameters, dt: f64) -> DMatrix<f64> {
    part.state.big_mass() + part.state.j0() * params.c(dt)
}

/// Checks of the LLM mode that need the assembled layout: everything
/// [`build_element_partitions`] checks, plus a non-singular `D^(i)` for every element at the
/// analysis time step.
pub fn validate_element_partitions(model: &Model) -> Result<(), ModelError> {
    let ep = build_element_partitions(model)?;
    let params = AlphaParameters::new(model.analysis.rho_inf);
    let mut diag = Diagnostics::new(&model.source);
    for (p, zero) in ep.parts.iter().zip(&ep.massless) {
        let d = dynamic_matrix(p, params, model.analysis.time_step);
        if !d.lu().is_invertible() {
            let nodes: Vec<String> = if zero.is_empty() {
                p.state.dofs.iter().map(|d| d.to_string()).collect()
            } else {
                zero.iter().map(|i| p.state.dofs[*i].to_string()).collect()
            };
            let ei = model
                .elements
                .iter()
                .position(|e| *e.name == *p.state.name)
                .unwrap_or(0);
            diag.push(
                format!("element[{ei}]"),
                format!(
                    "the partition matrix D = M + c·K0 of `{}` is singular at Δt = {} (check \
                     the mass and stiffness at {})",
                    p.state.name,
                    model.analysis.time_step,
                    nodes.join(", ")
                ),
            );
        }
    }
    diag.finish(())
}
