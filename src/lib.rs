//! pi-core: the protocol-neutral agent core of pi-rpc.
//!
//! It owns the agent loop (model stream, tool calls, turns), the providers,
//! the tools, the session store and the configuration. Front ends talk to it
//! through [`agent::AgentHandle`] (`Op` in) and an ordered stream of
//! [`agent::Output`] (`Event`s and `Reply`s out). Nothing here knows about
//! stdin/stdout, JSONL or JSON-RPC.

pub mod agent;
pub mod auth;
pub mod client;
pub mod codemode;
pub mod compaction;
pub mod config;
pub mod error;
pub mod event;
pub mod export_html;
pub mod extensions;
pub mod mcp;
pub mod message;
mod message_text;
pub mod model;
pub mod op;
pub mod provider;
pub mod resources;
pub mod session;
pub(crate) mod stream;
pub mod system_prompt;
pub mod tools;

pub use error::{CoreError, ErrorKind};
pub use event::AgentEvent;
pub use message::AgentMessage;
pub use model::{Model, ThinkingLevel};
pub use op::{Op, Reply, RequestTag};
