//! pi-types: the data every layer of the core shares (messages, models, errors,
//! ops and replies, events, the client's requests, session file entries).

pub mod client;
pub mod error;
pub mod event;
pub mod js;
pub mod js_json_error;
pub mod login;
pub mod message;
pub mod message_list;
mod message_text;
pub mod model;
pub mod op;
pub mod session;
pub mod system_message;
pub mod tool_name;

pub use error::{CoreError, ErrorKind};
pub use event::AgentEvent;
pub use message::AgentMessage;
pub use message_list::{MessageList, MessageSource};
pub use model::{Model, ThinkingBudgets, ThinkingLevel};
pub use op::{Op, Reply, RequestTag};

#[cfg(test)]
mod wire_tests;
