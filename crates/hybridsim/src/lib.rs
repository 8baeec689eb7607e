//! # hybridsim — the core engine
//!
//! Hybrid simulation couples a *physical substructure* tested in a laboratory with a *numerical
//! substructure* computed online. This crate holds the engine, free of file and network I/O:
//!
//! - [`model`]: the FE-style model (nodes with named DOFs, elements, substructures, loads) read
//!   from TOML text and validated with precise errors;
//! - [`elements`]: the element abstraction (state-space form generic over the scalar, so that
//!   initial Jacobians come from dual numbers) and the registry of element kinds;
//! - [`assembly`]: state-space substructures `M Ẏ + R(Y) = F(t)` (Abbiati et al. 2019, eqs 1–4),
//!   signed Boolean interface matrices and the Steklov–Poincaré operator;
//! - [`physical`]: the physical-substructure interface (restoring-force providers) and the
//!   numerical stand-in specimen;
//! - [`integrators`]: MG-α (Brüls–Arnold), PG-α with subcycling (Abbiati et al. 2019, §2.2) and
//!   LSRT2 (Bursi et al. 2011, §2), behind one [`integrators::TimeIntegrator`] trait;
//! - [`excitation`]: ground-motion records (PEER `.AT2`), time functions and synthetic
//!   accelerograms;
//! - [`output`]: recorded channels with names and units;
//! - [`modal`]: eigen-analysis of the linearized coupled model and Rayleigh damping.

pub mod analysis;
pub mod assembly;
pub mod config;
pub mod elements;
pub mod error;
pub mod excitation;
pub mod integrators;
pub mod modal;
pub mod model;
pub mod output;
pub mod physical;
pub mod runner;
pub mod simulation;
pub mod units;
pub mod updating;

pub use error::ModelError;
pub use integrators::StepError;
pub use model::Model;
pub use simulation::Simulation;
