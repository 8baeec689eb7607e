//! The time scale of a hybrid test (Abbiati et al. 2019, §2.2; 2020, §2.2; ALGORITHMS.md A17):
//! λ = Δt^C/Δt^P = Δt^S/Δt^N and ss = Δt^N/Δt^P = Δt^S/Δt^C. The settings type lives with the
//! model (`[lab]`); this module re-exports it next to the lab machinery that uses it.

pub use crate::model::lab::{Regime, TimeScale};
