//! pi-acp-agent: the Agent Client Protocol (ACP, what Zed, JetBrains and
//! Neovim speak) as a third dialect on pi-rpc's core.
//!
//! Unlike the seed dialects, one ACP connection holds many sessions (each
//! its own agent, from a [`host::SessionHost`]). The wire types are those of
//! the ACP project's `agent-client-protocol-schema` crate; the protocol
//! version implemented is [`PROTOCOL_VERSION`] (a newer client gets it as
//! the negotiated version, as the spec says).
//!
//! * [`connection`]: the connection loop (initialize, the session lifecycle,
//!   routing, the client's responses to our requests);
//! * [`lifecycle`]: the sessions a connection holds: bounds, sleep and wake;
//! * [`session`]: one session's task (prompts, updates, config options);
//! * [`requests`]: approvals, files and terminals as ACP requests;
//! * [`updates`]: tool calls, content, replay as `session/update`s;
//! * [`config`]: config options and modes; [`wire`]: the JSON-RPC envelope;
//! * [`host`]: where sessions come from; [`stored`]: the stored ones' list.
//! * [`login`]: the authentication methods (subscription logins);
//! * [`outbox`]: the way out a connection's sessions share.

pub mod config;
pub mod connection;
pub mod host;
pub mod lifecycle;
pub mod login;
pub mod outbox;
pub mod requests;
pub mod session;
pub mod stored;
pub mod updates;
pub mod wire;

#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod tests;

pub use agent_client_protocol_schema as schema;
pub use connection::serve_acp;
pub use host::{OpenError, Opened, SessionHost, SessionSpec, SessionStart, StoredSession};
pub use stored::stored_in;

/// The ACP protocol version implemented.
pub const PROTOCOL_VERSION: schema::ProtocolVersion = schema::ProtocolVersion::V1;
