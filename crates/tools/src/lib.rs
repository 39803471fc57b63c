//! pi-tools: the coding tools, their registry and argument validation, and the
//! tools that run through the client (its terminals, its own tools).
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_provider::provider;
#[cfg(test)]
pub(crate) use pi_types::event;
pub(crate) use pi_types::{message, op};

pub mod client;
pub mod tools;
