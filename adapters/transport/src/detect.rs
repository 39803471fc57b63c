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
    /// An `initialize` whose `protocolVersion` is an integer: the Agent Client Protocol.
    Acp,
}

/// ACP's first request: `initialize` with an integer `protocolVersion`.
fn is_acp_initialize(obj: &crate::raw::RawObject) -> bool {
    if obj.get("method").map(|m| m.get()) != Some("\"initialize\"") {
        return false;
    }
    let Some(params) = obj.get("params") else { return false };
    match RawJson::parse(params.get()) {
        Ok(RawJson::Object(params)) => params
            .get("protocolVersion")
            .is_some_and(|v| !v.get().is_empty() && v.get().bytes().all(|b| b.is_ascii_digit())),
        _ => false,
    }
}

/// An ACP `initialize` means ACP; `{"jsonrpc":…}` or a JSON array mean JSON-RPC, a `Content-Length:` header
/// JSON-RPC with header framing; anything else the native dialect.
pub fn detect(record: &Record) -> Detected {
    let Ok(line) = record else { return Detected::Native };
    if is_content_length_header(line) {
        return Detected::JsonRpcHeaders;
    }
    match RawJson::parse(line) {
        Ok(RawJson::Array(_)) => Detected::JsonRpc,
        Ok(RawJson::Object(obj)) if is_acp_initialize(&obj) => Detected::Acp,
        Ok(RawJson::Object(obj)) if obj.contains("jsonrpc") => Detected::JsonRpc,
        _ => Detected::Native,
    }
}
