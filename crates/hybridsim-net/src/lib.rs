//! # hybridsim-net — the physical substructure over the network
//!
//! The physical substructure over the network:
//!
//! - the real-time **controller link** ([`link`]: the frames, byte by byte in
//!   `docs/controller-link.md`): the runner's end [`controller_link::ControllerLink`]
//!   (`lab.transfer = "udp" | "tcp"`) and the server that serves a model's virtual laboratory on
//!   it ([`controller`], `hybridsim controller`), so that a test's two halves run as two
//!   processes as with hardware;
//! - the OpenSees/OpenFresco **`genericClient` protocol** ([`generic_client`], both sides): the
//!   `hybridsim serve` server (`docs/serve.md`) and the client end [`remote_site::RemoteSite`]
//!   (`lab.transfer = "opensees"`: OpenSees's `adapter` element or another `hybridsim serve`,
//!   `docs/multisite.md`);
//! - [`NetConnector`], which the front ends hand to the runners to connect network labs.

#![warn(missing_docs)]

pub mod connector;
pub mod controller;
pub mod controller_link;
pub mod generic_client;
pub mod latency;
pub mod link;
pub mod remote_site;

pub use connector::NetConnector;
pub use controller_link::ControllerLink;
pub use remote_site::RemoteSite;
