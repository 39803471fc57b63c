//! pi-extensions: pi's TypeScript extensions and their host process.
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_config::{config, resources, system_prompt};
pub(crate) use pi_provider::provider;
pub(crate) use pi_tools::tools;
pub(crate) use pi_types::{event, message, model, op};

pub mod extensions;
pub mod packages;
