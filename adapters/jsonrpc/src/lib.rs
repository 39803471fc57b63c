//! pi-jsonrpc: the JSON-RPC 2.0 dialect of pi-rpc, on the same core as the
//! native dialect.
//!
//! The peer is ours (not jsonrpsee's): it keeps ids as raw tokens, takes
//! notifications and batches, and runs on the transport's framings (newlines
//! or `Content-Length` headers). See the README for the method and error tables.

pub mod dialect;
pub mod errors;
pub mod notify;
pub mod protocol;
pub mod wire;

pub use dialect::JsonRpc;
