//! Shared helpers of the hybridsim-rt integration tests.
#![allow(dead_code)]

pub mod counting;
