//! pi-config: configuration read the way pi reads it, the resources (skills,
//! prompt templates, context files) and the system prompt.
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_provider::provider;
pub(crate) use pi_tools::{client, tools};
pub(crate) use pi_types::{model, op};

pub mod cli_args;
pub mod cli_args_pi;
pub mod config;
pub mod resources;
pub mod system_prompt;
