//! pi-jsonl: the native pi JSONL dialect (`pi --mode rpc`).
//!
//! `{"type":"prompt",…}` commands in, `{"type":"response",…}` replies and
//! streamed events out, one compact JSON object per LF-terminated line. The
//! framing, the writer and the connection loop are the transport's.

pub mod command;
pub mod dialect;
pub mod map;
pub mod wire;

pub use dialect::Native;
