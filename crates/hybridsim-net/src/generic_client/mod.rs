//! The OpenSees `genericClient` protocol ([`protocol`]) and the `hybridsim serve` server.
//!
//! An OpenSees model with `element('genericClient', tag, '-node', …, '-dof', …, '-server',
//! port, '127.0.0.1')` asks a server for the resisting force, stiffness, damping and mass of
//! the element at the trial state it sends. The protocol module is written for both sides so
//! that a hybridsim client (to OpenSees's `adapter` element or another `hybridsim serve`)
//! reuses its sizes, layouts and framing.

pub mod protocol;
pub mod server;

pub use server::{
    ServeFailure, ServeOptions, Served, Server, SessionEnd, SessionReport, Transport,
};
