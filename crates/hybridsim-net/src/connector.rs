//! The [`TransferConnector`] of the front ends: builds the network transfer system a
//! laboratory asks for ([`TransferRequest`]).

use crate::controller_link::ControllerLink;
use crate::remote_site::RemoteSite;
use hybridsim::model::lab::TransferKind;
use hybridsim::physical::transfer::{TransferConnector, TransferRequest, TransferSystem};
use hybridsim::physical::TransferError;

/// Connects `udp` and `tcp` controller links and `opensees` remote sites.
#[derive(Debug, Default, Clone, Copy)]
pub struct NetConnector;

impl TransferConnector for NetConnector {
    fn connect(&self, request: &TransferRequest) -> Result<Box<dyn TransferSystem>, TransferError> {
        match request.kind {
            TransferKind::Udp | TransferKind::Tcp => {
                Ok(Box::new(ControllerLink::connect(request)?))
            }
            TransferKind::OpenSees => Ok(Box::new(RemoteSite::connect(request)?)),
            other => Err(TransferError::new(format!(
                "this build cannot connect transfer system `{}`",
                other.name()
            ))),
        }
    }
}
