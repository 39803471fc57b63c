//! The HTTP side of pi-rpc's streamable-HTTP MCP connections: rmcp's
//! transport drives the protocol, this client sends its POSTs. It answers as
//! rmcp's own reqwest client does, with one difference taken from pi 1.6.0:
//! a request the server refused (any status but 2xx, except a 401/403 with a
//! challenge and an expired session's 404) fails with the status and the
//! start of the answer's body, whatever its type, as pi's
//! `MCP HTTP request failed with status 503: <body>` quotes it. rmcp drops
//! the body of 429 and non-JSON 5xx answers, and reads a JSON-RPC error out
//! of a refused request's JSON body, where pi reports the refusal. The
//! failure is `UnexpectedServerResponse("HTTP <status>: <body>")`, which
//! [`super::retry`] reads. GET streams and session deletes are rmcp's,
//! except that a session the server said it no longer knows is not deleted.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

/// How much of a refused request's body is read (pi's limit).
const ERROR_BODY_BYTES: usize = 8 * 1024;

type HttpError = StreamableHttpError<reqwest::Error>;

/// The sessions an HTTP server answered 404, which the connection's end
/// does not delete while they are in it.
pub type ExpiredSessions = Arc<std::sync::Mutex<HashSet<Arc<str>>>>;

/// rmcp's streamable-HTTP client, quoting a refused request's body as pi does.
#[derive(Clone)]
pub struct QuotingHttpClient {
    inner: reqwest::Client,
    /// A server with `auth.provider`: the provider and how its token is
    /// read (at each request, as pi reads it; none sends no bearer).
    provider: Option<(String, super::factories::ProviderToken)>,
    /// The sessions the server said it no longer knows (a 404): they are
    /// not deleted when their connection is let go, as pi lets go the
    /// client of an expired session without closing it.
    expired: ExpiredSessions,
}

impl QuotingHttpClient {
    pub fn new(inner: reqwest::Client) -> QuotingHttpClient {
        QuotingHttpClient { inner, provider: None, expired: Arc::default() }
    }

    /// The sessions this client saw expire; emptied when the connection is
    /// closed rather than let go, so its last session is deleted.
    pub fn expired_sessions(&self) -> ExpiredSessions {
        self.expired.clone()
    }

    fn is_expired(&self, session_id: &Arc<str>) -> bool {
        self.expired.lock().is_ok_and(|expired| expired.contains(session_id))
    }

    /// Requests carry `provider`'s current credential as their bearer token (pi's `auth.provider`).
    pub fn with_provider_token(self, provider: &str, read: super::factories::ProviderToken) -> QuotingHttpClient {
        QuotingHttpClient { provider: Some((provider.to_string(), read)), ..self }
    }

    /// The token a request is sent with: the one given, else the provider's.
    async fn token(&self, given: Option<String>) -> Option<String> {
        match (&self.provider, given) {
            (_, Some(token)) => Some(token),
            (Some((provider, read)), None) => read(provider.clone()).await.filter(|t| !t.is_empty()),
            (None, None) => None,
        }
    }

    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut request =
            self.inner.post(uri.as_ref()).header(ACCEPT, format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"));
        let auth_token = self.token(auth_token).await;
        for (name, value) in custom_headers {
            // A bearer token replaces a configured `Authorization` header, as in pi.
            if auth_token.is_none() || name != reqwest::header::AUTHORIZATION {
                request = request.header(name, value);
            }
        }
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let session_was_attached = session_id.is_some();
        if let Some(session_id) = &session_id {
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        let response = request.json(&message).send().await?;
        let status = response.status();
        if let Some(challenge) = challenge(&response)? {
            if status == StatusCode::UNAUTHORIZED {
                return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge)));
            }
            if status == StatusCode::FORBIDDEN {
                let required_scope = super::oauth::client::Challenge::parse(&challenge).scope;
                return Err(StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
                    challenge,
                    required_scope,
                )));
            }
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if let (StatusCode::NOT_FOUND, Some(session_id)) = (status, session_id) {
            if let Ok(mut expired) = self.expired.lock() {
                expired.insert(session_id);
            }
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            let body = body_start(response).await;
            if let Some(answer) = discover_refused(&message, session_was_attached, status, &body) {
                return Ok(answer);
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP {status}: {body}"))));
        }
        let session_id = response.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
        let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
        if awaits_no_response && response.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let content_type =
            response.headers().get(CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes()).to_string());
        match content_type.as_deref() {
            Some(ct) if media_type_is(ct, EVENT_STREAM_MIME_TYPE) => {
                Ok(StreamableHttpPostResponse::Sse(bounded_events(response, limits.max_sse_event_size), session_id))
            }
            Some(ct) if media_type_is(ct, JSON_MIME_TYPE) => {
                let body = bounded_body(response, limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, session_id)),
                    Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                        "the answer is not JSON-RPC ({e}): {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    )))),
                }
            }
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }
}

/// The `WWW-Authenticate` challenge of a 401 or 403.
fn challenge(response: &Response) -> Result<Option<String>, HttpError> {
    if response.status() != StatusCode::UNAUTHORIZED && response.status() != StatusCode::FORBIDDEN {
        return Ok(None);
    }
    let Some(header) = response.headers().get(WWW_AUTHENTICATE) else { return Ok(None) };
    match header.to_str() {
        Ok(text) => Ok(Some(text.to_string())),
        Err(_) => {
            Err(StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed("invalid www-authenticate header value")))
        }
    }
}

/// rmcp's fallback for servers that predate `server/discover`: their 4xx
/// (not 401/403) to a discover without a session is its error answer.
fn discover_refused(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    status: StatusCode,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    let ClientJsonRpcMessage::Request(request) = message else { return None };
    let discover = matches!(request.request, rmcp::model::ClientRequest::DiscoverRequest(_));
    let refused = status.is_client_error() && status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN;
    if !discover || !refused || session_was_attached {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(error)) => error.error,
        _ => rmcp::model::ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::error(error, Some(request.id.clone())), None))
}

/// Whether a `Content-Type` names `expected` (parameters and case aside).
fn media_type_is(value: &str, expected: &str) -> bool {
    value.split(';').next().is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// The start of a refused request's body as text (empty when it cannot be read).
async fn body_start(mut response: Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk[..chunk.len().min(ERROR_BODY_BYTES - body.len())]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// A JSON answer, refused when it is larger than `max_size` bytes.
async fn bounded_body(mut response: Response, max_size: usize) -> Result<Vec<u8>, HttpError> {
    if response.content_length().is_some_and(|length| length > max_size as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if chunk.len() > max_size - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An answer's server-sent events; one larger than `max_event_size` bytes ends the stream with an error.
fn bounded_events(response: Response, max_event_size: usize) -> BoxStream<'static, Result<sse_stream::Sse, SseError>> {
    let mut pending = 0usize;
    let mut after_newline = false;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for byte in chunk.iter() {
            match byte {
                b'\n' if after_newline => pending = 0,
                b'\n' => after_newline = true,
                b'\r' => {}
                _ => {
                    after_newline = false;
                    pending += 1;
                }
            }
            if pending > max_event_size {
                return Err(std::io::Error::other(format!(
                    "an SSE event of the MCP server exceeds {max_event_size} bytes"
                )));
            }
        }
        Ok(chunk)
    });
    sse_stream::SseStream::from_bytes_stream(bytes).boxed()
}

impl StreamableHttpClient for QuotingHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let limits = StreamableHttpResponseLimits::default();
        self.post(uri, message, session_id, auth_token, custom_headers, limits).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post(uri, message, session_id, auth_token, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post(uri, message, session_id, auth_token, custom_headers, limits).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        if self.is_expired(&session_id) {
            return Ok(());
        }
        let auth_token = self.token(auth_token).await;
        self.inner.delete_session(uri, session_id, auth_token, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, HttpError> {
        let auth_token = self.token(auth_token).await;
        self.inner.get_stream(uri, session_id, last_event_id, auth_token, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, HttpError> {
        let auth_token = self.token(auth_token).await;
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_token,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
