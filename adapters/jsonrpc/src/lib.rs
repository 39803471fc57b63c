//! pi-jsonrpc: the JSON-RPC 2.0 dialect of pi-rpc, on the same core as the
//! native dialect.
//!
//! The stdio peer is ours (not jsonrpsee's): it keeps ids as raw tokens, takes
//! notifications and batches, and can frame with newlines or `Content-Length`
//! headers. See the README for the method and error tables.

pub mod errors;
pub mod framing;
pub mod methods;
pub mod notify;
pub mod params;
pub mod protocol;
pub mod serve;
pub mod ui;
pub mod wire;

pub use framing::Framing;
pub use serve::{ServeEnd, serve};
