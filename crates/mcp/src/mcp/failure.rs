//! What a user (and the model) reads when an MCP request fails: rmcp's
//! errors without the Rust type names its transport errors carry
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`), the
//! same clean-up at initialize and on every call.

use std::error::Error;

use rmcp::ServiceError;

/// rmcp's initialize errors name Rust types; keep the part a user can act on.
pub fn short_error(text: &str) -> String {
    let kept = match text.rfind(" error: ") {
        Some(i) => &text[i + 8..],
        None => text,
    };
    without_type_names(kept)
}

/// Remove bracketed Rust paths (`[rmcp::transport::…<…>]`) from `text`.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(len) = closing_bracket(&rest[open..]) else { break };
        let inside = &rest[open + 1..open + len];
        out.push_str(&rest[..open]);
        if !inside.contains("::") {
            out.push_str(&rest[open..=open + len]);
        }
        rest = &rest[open + len + 1..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Offset of the `]` closing the `[` at the start of `text` (nesting counted).
fn closing_bracket(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// An error and its sources as one line, each part once: `a: b: c`.
fn chain(error: &(dyn Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    // The HTTP client's error is not a `source` of rmcp's: follow it by hand.
    if let Some(StreamableHttpError::Client(inner)) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return chain(inner);
    }
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        source = e.source();
    }
    without_type_names(&text)
}

/// A failed request, for the model: the server's own error, or what broke
/// on the way (`closed` says why the transport closed, when known).
pub fn service_error(error: &ServiceError, closed: Option<&str>) -> String {
    match error {
        ServiceError::McpError(e) => format!("MCP error {}: {}", e.code.0, e.message),
        ServiceError::TransportSend(e) => match closed {
            Some(why) => why.to_string(),
            None => format!("cannot reach the MCP server: {}", chain(e.error.as_ref())),
        },
        ServiceError::TransportClosed => closed.unwrap_or("the MCP server closed the connection").to_string(),
        ServiceError::Timeout { timeout } => {
            format!("the MCP server did not answer within {} s", timeout.as_secs_f64())
        }
        ServiceError::Cancelled { .. } => "the MCP request was cancelled".to_string(),
        other => format!("MCP error: {}", without_type_names(&other.to_string())),
    }
}

/// The transport went away (the connection must be made again).
pub fn is_lost(error: &ServiceError) -> bool {
    matches!(error, ServiceError::TransportClosed | ServiceError::TransportSend(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_type_names_are_left_out() {
        let raw = "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>] error: Client error: error sending request for url (http://127.0.0.1:9/mcp)";
        assert_eq!(
            without_type_names(raw),
            "Transport error: Client error: error sending request for url (http://127.0.0.1:9/mcp)"
        );
        assert_eq!(short_error(raw), "error sending request for url (http://127.0.0.1:9/mcp)");
        assert_eq!(without_type_names("keep [this] and [a::b] go"), "keep [this] and go");
        assert_eq!(without_type_names("unbalanced [a::b"), "unbalanced [a::b");

        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused (os error 111)");
        let dynamic = rmcp::transport::DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<X>",
            std::any::TypeId::of::<u8>(),
            Box::new(inner),
        );
        let text = service_error(&ServiceError::TransportSend(dynamic), None);
        assert_eq!(text, "cannot reach the MCP server: Connection refused (os error 111)");
        assert!(!text.contains("::"));
        assert_eq!(
            service_error(&ServiceError::TransportClosed, Some("the MCP server exited (exit status: 3)")),
            "the MCP server exited (exit status: 3)"
        );
    }
}
