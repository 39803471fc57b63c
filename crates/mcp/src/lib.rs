//! pi-mcp: the MCP servers of a session and the codemode tool.
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_auth::auth;
pub(crate) use pi_config::{config, system_prompt};
pub(crate) use pi_provider::provider;
pub(crate) use pi_tools::tools;
pub(crate) use pi_types::{message, model};

pub mod codemode;
pub mod mcp;
