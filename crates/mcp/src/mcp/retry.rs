//! pi 1.6.0's retries of MCP requests over HTTP. Connecting to a server
//! configured by `url` is tried up to three times, 250 ms and then 1 s
//! apart, when it failed with a transient error: a network error, or HTTP
//! status 408, 429 or 5xx other than 501 (the whole connect is made again:
//! `initialize`, `notifications/initialized`, `tools/list`). A read-only
//! request (listing or reading resources) is sent once more after 250 ms
//! when it failed with such a status (not after a network error). Tool
//! calls are never retried: they may have run. After the last failure the
//! error reads as pi's: `MCP HTTP request failed with status N`. A request
//! whose session the server no longer knows (404) is sent once more in a
//! new session, whatever the request ([`HttpFailure::is_session_expired`]).

use std::error::Error;
use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::host_transport::PiMcpError;

/// The waits between connect attempts.
pub const CONNECT_DELAYS: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(1)];
/// The wait before a read-only request is sent again.
pub const READ_DELAY: Duration = Duration::from_millis(250);

/// What went wrong with an HTTP request, when it can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpFailure {
    /// The server answered with this status (and this body, when it was kept).
    Status(u16, Option<String>),
    /// No answer: the connection could not be made or broke.
    Network,
    /// An extension's transport (`createTransport`) threw from `send`: its
    /// message, which is the failure's; a status for pi-mcp's HTTP errors.
    Thrown(super::host_transport::SendFailure),
    /// A 404 to a request of a session (pi-mcp's `McpSessionExpiredError`).
    SessionExpired,
    /// A 401 (pi-mcp's `McpAuthRequiredError`).
    AuthRequired,
}

impl HttpFailure {
    /// Worth another attempt: a network error, 408, 429, or 5xx but 501.
    pub fn is_transient(&self) -> bool {
        match self {
            HttpFailure::Network => true,
            HttpFailure::Status(status, _) => is_transient_status(*status),
            HttpFailure::Thrown(thrown) => thrown.status.map_or(thrown.network, is_transient_status),
            HttpFailure::SessionExpired | HttpFailure::AuthRequired => false,
        }
    }

    /// The server no longer knows the session: pi starts a new one and
    /// sends the request once more.
    pub fn is_session_expired(&self) -> bool {
        match self {
            HttpFailure::SessionExpired => true,
            HttpFailure::Thrown(thrown) => thrown.kind == Some(PiMcpError::SessionExpired),
            _ => false,
        }
    }

    /// The server asks for authentication: a server pi gives an auth
    /// provider (OAuth, `auth.provider`) then needs sign-in.
    pub fn is_auth_required(&self) -> bool {
        match self {
            HttpFailure::AuthRequired | HttpFailure::Status(401, _) => true,
            HttpFailure::Thrown(thrown) => thrown.kind == Some(PiMcpError::AuthRequired),
            _ => false,
        }
    }

    /// A status worth another attempt (read-only requests retry only these).
    pub fn is_transient_status(&self) -> bool {
        match self {
            HttpFailure::Status(status, _) => is_transient_status(*status),
            HttpFailure::Thrown(thrown) => thrown.status.is_some_and(is_transient_status),
            HttpFailure::Network | HttpFailure::SessionExpired | HttpFailure::AuthRequired => false,
        }
    }

    /// pi's words for a failed status, or what the extension's transport
    /// threw (None for a network error of pi-rpc's own transport).
    pub fn status_message(&self) -> Option<String> {
        let (status, body) = match self {
            HttpFailure::Thrown(thrown) => return Some(thrown.message.clone()),
            // pi-mcp's messages of its two errors.
            HttpFailure::SessionExpired => return Some("MCP session expired".to_string()),
            HttpFailure::AuthRequired | HttpFailure::Status(401, _) => {
                return Some("MCP server requires authentication".to_string());
            }
            HttpFailure::Network => return None,
            HttpFailure::Status(status, body) => (status, body),
        };
        Some(match body.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
            Some(body) => format!("MCP HTTP request failed with status {status}: {}", excerpt(body)),
            None => format!("MCP HTTP request failed with status {status}"),
        })
    }
}

fn is_transient_status(status: u16) -> bool {
    status == 408 || status == 429 || (status >= 500 && status != 501)
}

/// The first 500 characters of a body, as pi quotes it.
fn excerpt(body: &str) -> String {
    if body.chars().count() <= 500 {
        return body.to_string();
    }
    format!("{}...", body.chars().take(497).collect::<String>())
}

/// Why an HTTP transport's request failed, found in the error or its sources.
pub fn http_failure(error: &(dyn Error + 'static)) -> Option<HttpFailure> {
    let mut current: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return of_transport(found);
        }
        if let Some(found) = e.downcast_ref::<reqwest::Error>() {
            return of_client(found);
        }
        if let Some(found) = e.downcast_ref::<super::host_transport::SendFailure>() {
            return Some(HttpFailure::Thrown(found.clone()));
        }
        if let Some(found) = e.downcast_ref::<rmcp::transport::DynamicTransportError>() {
            return http_failure(found.error.as_ref());
        }
        current = e.source();
    }
    None
}

/// Of a failed request (None when the server answered with a JSON-RPC error, or it is not HTTP).
pub fn of_service(error: &rmcp::ServiceError) -> Option<HttpFailure> {
    match error {
        rmcp::ServiceError::TransportSend(e) => http_failure(e.error.as_ref()),
        _ => None,
    }
}

/// Of a failed initialize.
pub fn of_initialize(error: &rmcp::service::ClientInitializeError) -> Option<HttpFailure> {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => http_failure(error.error.as_ref()),
        _ => None,
    }
}

fn of_transport(error: &StreamableHttpError<reqwest::Error>) -> Option<HttpFailure> {
    match error {
        StreamableHttpError::HttpStatus(e) => Some(HttpFailure::Status(e.status, None)),
        StreamableHttpError::Client(e) => of_client(e),
        StreamableHttpError::SessionExpired => Some(HttpFailure::SessionExpired),
        StreamableHttpError::AuthRequired(_) => Some(HttpFailure::AuthRequired),
        // Statuses rmcp does not classify (408, other 4xx) come as `HTTP 408 Request Timeout: body`.
        StreamableHttpError::UnexpectedServerResponse(text) => {
            let rest = text.strip_prefix("HTTP ")?;
            let status = rest.get(..3)?.parse().ok()?;
            let body = rest.split_once(": ").map(|(_, body)| body.to_string()).filter(|b| b != "<empty>");
            Some(HttpFailure::Status(status, body))
        }
        _ => None,
    }
}

fn of_client(error: &reqwest::Error) -> Option<HttpFailure> {
    if let Some(status) = error.status() {
        return Some(HttpFailure::Status(status.as_u16(), None));
    }
    (error.is_connect() || error.is_request() || error.is_body() || error.is_timeout()).then_some(HttpFailure::Network)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_retries_network_errors_and_408_429_and_5xx_but_501() {
        for status in [408, 429, 500, 502, 503, 504, 599] {
            assert!(HttpFailure::Status(status, None).is_transient(), "{status}");
        }
        for status in [400, 403, 404, 409, 501] {
            assert!(!HttpFailure::Status(status, None).is_transient(), "{status}");
        }
        assert!(HttpFailure::Network.is_transient());
        assert!(!HttpFailure::Network.is_transient_status());
    }

    #[test]
    fn statuses_rmcp_leaves_in_its_text_are_read_and_worded_as_pi() {
        let error =
            StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse("HTTP 408 Request Timeout: slow".into());
        let failure = of_transport(&error).unwrap();
        assert_eq!(failure, HttpFailure::Status(408, Some("slow".into())));
        assert_eq!(failure.status_message().unwrap(), "MCP HTTP request failed with status 408: slow");
        let error = StreamableHttpError::<reqwest::Error>::HttpStatus(
            rmcp::transport::streamable_http_client::HttpStatusError::new(503, None),
        );
        assert_eq!(of_transport(&error).unwrap().status_message().unwrap(), "MCP HTTP request failed with status 503");
        let long = "x".repeat(600);
        assert_eq!(HttpFailure::Status(500, Some(long)).status_message().unwrap().len(), 39 + 2 + 500);
    }

    /// pi-mcp's `McpSessionExpiredError` and `McpAuthRequiredError`, from
    /// pi-rpc's own transport or thrown by an extension's: never retried as
    /// transient, worded as pi-mcp words them (or as the extension threw them).
    #[test]
    fn an_expired_session_and_a_401_are_told_apart_and_worded_as_pi_mcps() {
        let expired = of_transport(&StreamableHttpError::<reqwest::Error>::SessionExpired).unwrap();
        assert!(expired.is_session_expired() && !expired.is_transient() && !expired.is_auth_required());
        assert_eq!(expired.status_message().unwrap(), "MCP session expired");
        let refused = HttpFailure::Status(401, Some("who are you".into()));
        assert!(refused.is_auth_required() && !refused.is_session_expired());
        assert_eq!(refused.status_message().unwrap(), "MCP server requires authentication");
        let thrown = |kind: &str| {
            let report = serde_json::json!({"message": "it threw", "status": 404, "kind": kind});
            HttpFailure::Thrown(super::super::host_transport::SendFailure::from_report(&report))
        };
        assert!(thrown("sessionExpired").is_session_expired());
        assert!(thrown("authRequired").is_auth_required());
        assert!(!thrown("other").is_session_expired() && !thrown("other").is_auth_required());
        assert_eq!(thrown("sessionExpired").status_message().unwrap(), "it threw");
    }
}
