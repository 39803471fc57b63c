//! Dialect detection from a connection's first record, the same for stdio
//! and for a `pi serve` WebSocket connection.

use crate::framing::{Record, is_content_length_header};
use crate::raw::RawJson;

/// The dialect the first record asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    Native,
    JsonRpc,
    /// `Content-Length:` header framing (JSON-RPC; byte streams only).
    JsonRpcHeaders,
}

/// `{"jsonrpc":…}` or a JSON array mean JSON-RPC, a `Content-Length:` header
/// JSON-RPC with header framing; anything else the native dialect.
pub fn detect(record: &Record) -> Detected {
    let Ok(line) = record else { return Detected::Native };
    if is_content_length_header(line) {
        return Detected::JsonRpcHeaders;
    }
    match RawJson::parse(line) {
        Ok(RawJson::Array(_)) => Detected::JsonRpc,
        Ok(RawJson::Object(obj)) if obj.contains("jsonrpc") => Detected::JsonRpc,
        _ => Detected::Native,
    }
}
