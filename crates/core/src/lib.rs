//! pi-core: the protocol-neutral agent core of pi-rpc, as one crate for the front ends.
//!
//! The core is split into layer crates whose dependencies point one way
//! (pi-types ← pi-provider, pi-session ← pi-tools ← pi-config ← pi-mcp,
//! pi-extensions, pi-auth ← pi-agent); this crate re-exports their modules under the
//! names the front ends use. Front ends talk to the core through
//! [`agent::AgentHandle`] (`Op` in) and an ordered stream of [`agent::Output`]
//! (`Event`s and `Reply`s out). Nothing here knows about stdin/stdout, JSONL or JSON-RPC.

pub use pi_agent::{agent, compaction};
pub use pi_auth::auth;
pub use pi_config::{config, resources, system_prompt};
pub use pi_extensions::{extensions, packages};
pub use pi_mcp::{codemode, mcp};
pub use pi_provider::provider;
pub use pi_session::{export_html, session};
pub use pi_tools::{client, tools};
pub use pi_types::{error, event, js_json_error, login, message, model, op};

pub use pi_types::{
    AgentEvent, AgentMessage, CoreError, ErrorKind, MessageList, Model, Op, Reply, RequestTag, ThinkingLevel,
};
/// The dialects' wire enums take their names from the event table.
pub use pi_types::{jsonrpc_wire, native_wire};
