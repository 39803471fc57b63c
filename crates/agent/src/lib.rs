//! pi-agent: the agent actor (ops in, events and replies out), runs and compaction.
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_auth::auth;
pub(crate) use pi_config::{config, resources, system_prompt};
pub(crate) use pi_extensions::extensions;
pub(crate) use pi_mcp::mcp;
pub(crate) use pi_provider::{provider, stream};
pub(crate) use pi_session::{export_html, session};
pub(crate) use pi_tools::{client, tools};
pub(crate) use pi_types::{error, event, message, model, op, system_message};

pub mod agent;
pub mod compaction;
