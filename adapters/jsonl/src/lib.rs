//! pi-jsonl: the native pi JSONL dialect (`pi --mode rpc`).
//!
//! `{"type":"prompt",…}` commands in, `{"type":"response",…}` replies and
//! streamed events out, one compact JSON object per LF-terminated line. The
//! framing and the single-writer output task are shared with the JSON-RPC
//! dialect.

pub mod command;
pub mod fields;
pub mod framing;
pub mod map;
pub mod serve;
pub mod serving;
pub mod wire;
pub mod wire_command;
pub mod wire_data;
pub mod writer;

pub use serve::serve;
pub use serving::ServeEnd;
