//! pi-provider: the model providers (wire APIs, HTTP, the faux model) and the
//! model stream that turns a provider's events into agent events.
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_types::{error, event, message, model};

pub mod provider;
pub mod stream;
