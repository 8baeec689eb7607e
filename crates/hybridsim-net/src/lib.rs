//! # hybridsim-net — the physical substructure over the network
//!
//! The frames of the real-time controller link ([`link`]), documented byte by byte in
//! `docs/controller-link.md` for whoever implements the controller end, and the server that
//! serves the virtual laboratory on that link ([`controller`], `hybridsim controller`), so
//! that a test's two halves run as two processes as with real hardware. The UDP/TCP transfer
//! systems and the OpenSees `genericClient` server build on them.

#![warn(missing_docs)]

pub mod connector;
pub mod controller;
pub mod controller_link;
pub mod generic_client;
pub mod link;
pub mod remote_site;

pub use connector::NetConnector;
pub use controller_link::ControllerLink;
pub use remote_site::RemoteSite;
