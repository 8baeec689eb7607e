//! # hybridsim — the core engine
//!
//! Hybrid simulation couples a *physical substructure* tested in a laboratory with a *numerical
//! substructure* computed online. This crate holds the engine, free of file and network I/O.
//!
//! ## How the crate is layered
//!
//! Each module imports only modules listed above it (`tests/module_graph.rs` checks it):
//!
//! - [`units`], [`excitation`] (ground-motion records, time functions, synthetic
//!   accelerograms), [`modal`] (eigen-analysis, Rayleigh damping), [`linalg`] (skyline LU with
//!   reverse Cuthill–McKee), [`error`] (model-file errors), [`updating`] (online model
//!   updating: the unscented Kalman filter and its identification models);
//! - [`elements`]: the element abstraction (state-space form generic over the scalar, so that
//!   initial Jacobians come from dual numbers), each kind's parameter table and the
//!   displacement-driven [`elements::ElementDriver`];
//! - [`model`]: the FE-style model types (nodes with named DOFs, elements, substructures,
//!   loads, `[lab]` settings);
//! - [`physical`]: the typed port of a physical substructure ([`physical::PhysicalPort`],
//!   commanded once per controller tick), the lab-control handle runners use
//!   ([`physical::LabControl`]), the virtual lab, actuators, compensation and the safety layer;
//! - [`assembly`]: state-space substructures `M Ẏ + R(Y) = F(t)` (Abbiati et al. 2019,
//!   eqs 1–4), signed Boolean interface matrices and the Steklov–Poincaré operator;
//! - [`integrators`]: MG-α (Brüls and Arnold 2008), PG-α with subcycling (Abbiati et al. 2019,
//!   §2.2), LSRT2 (Bursi et al. 2011, §2) and the element-level LLM scheme (Hovmand et al.
//!   2022) behind one [`integrators::TimeIntegrator`] trait, with [`integrators::StepSettings`]
//!   and one [`integrators::StepClock`];
//! - [`analysis`] (spectral radius, convergence, energy), [`output`] (recorded channels with
//!   names and units), [`config`] (model files to a validated [`Model`], the registry of
//!   element kinds; the only module that reads TOML);
//! - [`runner`]: the one run loop and trip policy of every runner; [`simulation`]: a model
//!   with its integrator and recorder.
//!
//! The full citations are in `REFERENCES.md` at the root of the repository.
//!
//! ## A hybrid simulation in a few lines
//!
//! The split-mass benchmark of Abbiati et al. (2019, Table 1): a specimen (mass and spring at
//! node 1) coupled to a numerical substructure, integrated by PG-α with ten physical substeps
//! per numerical step. The consistent start shares the spring force k2·u2(0) = 5000 N between the
//! two halves of the node-1 mass, Λ0 = 2500 N; with ρ∞ = 1 the scheme does not dissipate, and
//! the energy of the coupled system stays within 10⁻⁴ of its start over the 1000 steps.
//!
//! ```
//! use hybridsim::integrators::TimeIntegrator;
//! use hybridsim::{model::NoFiles, Model, Simulation};
//!
//! let text = r#"
//! [[node]]
//! id = 1
//! dofs = ["x"]
//! [[node]]
//! id = 2
//! dofs = ["x"]
//! initial_displacement = { x = 0.01 }
//!
//! [substructure.numerical]
//! [substructure.specimen]
//! physical = true
//! estimate = { dofs = [[1, "x"]], stiffness = [[4.0e5]] }
//!
//! [[element]]
//! type = "mass"
//! node = 1
//! mass = 4.0e3
//! split = { specimen = 0.5, numerical = 0.5 }
//! [[element]]
//! type = "spring"
//! nodes = [1]
//! dof = "x"
//! k = 4.0e5
//! substructure = "specimen"
//! [[element]]
//! type = "spring"
//! nodes = [1, 2]
//! dof = "x"
//! k = 5.0e5
//! substructure = "numerical"
//! [[element]]
//! type = "mass"
//! node = 2
//! mass = 9.0e3
//! substructure = "numerical"
//!
//! [analysis]
//! integrator = "pg-alpha"
//! rho_inf = 1.0
//! time_step = 1.0e-3
//! subcycles = 10
//! duration = 1.0
//! "#;
//! let model = Model::from_toml(text, "split_mass.toml", &NoFiles)?;
//! let mut sim = Simulation::new(model)?;
//! assert!((sim.integrator.initial_multipliers()[0] - 2500.0).abs() < 1e-9);
//! let energy = |sim: &mut Simulation| -> f64 {
//!     (0..2).map(|p| sim.integrator.energy(p).unwrap()).sum()
//! };
//! let e0 = energy(&mut sim);
//! for _ in 0..sim.n_steps() {
//!     sim.step()?;
//! }
//! assert!((energy(&mut sim) - e0).abs() < 1e-4 * e0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod analysis;
pub mod assembly;
pub mod condensation;
pub mod config;
pub mod elements;
pub mod error;
pub mod excitation;
pub mod integrators;
pub mod linalg;
pub mod modal;
pub mod model;
pub mod online_updating;
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
