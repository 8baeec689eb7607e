//! # hybridsim-net — the physical substructure over the network
//!
//! The first piece of issue 11: the frames of the real-time controller link ([`link`]),
//! documented byte by byte in `docs/controller-link.md` for whoever implements the controller
//! end. The UDP/TCP transfer systems, `hybridsim controller` and the OpenSees `genericClient`
//! server build on them. [`generic_client`] holds the OpenSees `genericClient` protocol (both
//! sides) and the `hybridsim serve` server (`docs/serve.md`).

#![warn(missing_docs)]

pub mod generic_client;
pub mod link;
