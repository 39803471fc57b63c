//! The auth side of a connection to an OAuth MCP server (pi-mcp's auth
//! provider): every request carries the stored access token; one that is
//! about to expire is refreshed first, and after a 401 the stored refresh
//! token is used once (under the server's refresh lock, so that a token pi
//! or another request refreshed meanwhile is used as it is) and the request
//! retried. When the user has to sign in, the source says so
//! ([`TokenSource::needs_sign_in`]) and the request fails; no browser flow
//! starts here.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::Value;

use super::flow::{self, Client, FlowError};
use super::{CredentialBackend, OAuthSettings, normalized_url, now_ms};

/// Access tokens this close to expiry are refreshed before they are sent (pi's value).
const REFRESH_SKEW_MS: i64 = 30_000;

/// A server's `WWW-Authenticate` challenge, as far as sign-in uses it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    pub resource_metadata_url: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    pub fn parse(header: &str) -> Challenge {
        let scheme = header.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
        if scheme != "bearer" && scheme != "dpop" {
            return Challenge::default();
        }
        let field = |name: &str| -> Option<String> {
            let lower = header.to_ascii_lowercase();
            let mut from = 0;
            while let Some(i) = lower[from..].find(&format!("{name}=")) {
                let at = from + i;
                let before = lower[..at].chars().last();
                from = at + name.len() + 1;
                if before.is_some_and(|c| !(c == ',' || c.is_whitespace())) {
                    continue;
                }
                let rest = &header[from..];
                let value = match rest.strip_prefix('"') {
                    Some(quoted) => quoted.split('"').next().unwrap_or(""),
                    None => rest.split([',', ' ']).next().unwrap_or(""),
                };
                return (!value.is_empty()).then(|| value.to_string());
            }
            None
        };
        Challenge { resource_metadata_url: field("resource_metadata"), scope: field("scope"), error: field("error") }
    }
}

/// The credentials of one server for its connection.
pub struct TokenSource {
    pub name: String,
    pub url: String,
    pub settings: OAuthSettings,
    /// Where the session keeps credentials (`mcp-auth.json`, or an extension's store set later).
    shared: Arc<crate::mcp::factories::FactoryState>,
    /// The store when the session has none (never used: a source is only made with one).
    fallback: Arc<dyn CredentialBackend>,
    /// One refresh at a time in this process.
    refreshing: tokio::sync::Mutex<()>,
    /// The last challenge of the server (sign-in uses its metadata URL and scope).
    challenge: std::sync::Mutex<Option<Challenge>>,
    needs_sign_in: AtomicBool,
}

impl TokenSource {
    pub fn new(
        name: &str,
        url: &str,
        settings: OAuthSettings,
        shared: Arc<crate::mcp::factories::FactoryState>,
        fallback: Arc<dyn CredentialBackend>,
    ) -> TokenSource {
        TokenSource {
            name: name.to_string(),
            url: url.to_string(),
            settings,
            shared,
            fallback,
            refreshing: tokio::sync::Mutex::new(()),
            challenge: std::sync::Mutex::new(None),
            needs_sign_in: AtomicBool::new(false),
        }
    }

    /// The session's credentials store as it is now.
    pub fn store(&self) -> Arc<dyn CredentialBackend> {
        self.shared.credentials().unwrap_or_else(|| self.fallback.clone())
    }

    /// The user has to sign in (the last request could not be authorized).
    pub fn needs_sign_in(&self) -> bool {
        self.needs_sign_in.load(Ordering::SeqCst)
    }

    /// A new connection attempt starts with a clean slate.
    pub fn reset(&self) {
        self.needs_sign_in.store(false, Ordering::SeqCst);
    }

    /// pi's `authProvider.settled()`: ends when no refresh of this process is under way.
    pub async fn settled(&self) {
        let _none = self.refreshing.lock().await;
    }

    fn mark_needs_sign_in(&self) {
        self.needs_sign_in.store(true, Ordering::SeqCst);
    }

    pub fn challenge(&self) -> Option<Challenge> {
        self.challenge.lock().ok().and_then(|c| c.clone())
    }

    pub fn clear_challenge(&self) {
        if let Ok(mut c) = self.challenge.lock() {
            *c = None;
        }
    }

    /// The stored state, when it belongs to this server's URL (pi ignores another URL's).
    pub async fn state(&self) -> Option<Value> {
        let state = match self.store().load(&self.name, &self.url).await {
            Ok(state) => state?,
            Err(e) => {
                tracing::warn!("MCP server {}: cannot read its credentials: {e}", self.name);
                return None;
            }
        };
        let own = state.get("serverUrl").and_then(Value::as_str) == Some(normalized_url(&self.url).as_str());
        own.then_some(state)
    }

    /// The stored tokens as text (`null` without them), whatever URL they
    /// were stored for: what pi compares to see a sign-in made elsewhere.
    pub async fn stored_tokens(&self) -> String {
        let state = self.store().load(&self.name, &self.url).await.ok().flatten();
        state.and_then(|s| s.get("tokens").cloned()).unwrap_or(Value::Null).to_string()
    }

    /// The stored access token, refreshed first when it is about to expire.
    pub async fn token(&self) -> Option<String> {
        let _wait = self.refreshing.lock().await;
        drop(_wait);
        let state = self.state().await?;
        let token = access_token(&state);
        let expired =
            state.get("tokensExpireAt").and_then(Value::as_i64).is_some_and(|at| at - REFRESH_SKEW_MS <= now_ms());
        if !expired || refresh_token(&state).is_none() {
            return token;
        }
        // A failure falls through: the request goes with the old token and its 401 decides.
        let _ = self.refresh(token.as_deref(), None).await;
        self.state().await.as_ref().and_then(access_token)
    }

    /// The server rejected `sent`: refresh (once), or say that the user must sign in.
    pub async fn on_unauthorized(&self, sent: Option<&str>, header: &str) -> Result<(), String> {
        let challenge = Challenge::parse(header);
        let insufficient = challenge.error.as_deref() == Some("insufficient_scope");
        if let Ok(mut c) = self.challenge.lock() {
            *c = Some(challenge.clone());
        }
        if insufficient {
            self.mark_needs_sign_in();
            return Err(super::sign_in_required(&self.name));
        }
        self.refresh(sent, challenge.resource_metadata_url.as_deref()).await
    }

    /// Replace `stale` with new tokens from the stored refresh token.
    async fn refresh(&self, stale: Option<&str>, resource_metadata_url: Option<&str>) -> Result<(), String> {
        let _one = self.refreshing.lock().await;
        let _lock = self.store().refresh_lock(&self.name, &self.url).await?;
        let state = self.state().await;
        if state.as_ref().and_then(access_token).as_deref() != stale {
            return Ok(());
        }
        let Some(mut state) = state.filter(|s| refresh_token(s).is_some()) else {
            self.mark_needs_sign_in();
            return Err(super::sign_in_required(&self.name));
        };
        match refresh_stored(&self.url, &self.settings, &mut state, resource_metadata_url).await {
            Ok(true) => self.store().save(&self.name, &self.url, state).await,
            Ok(false) => {
                self.mark_needs_sign_in();
                Err(super::sign_in_required(&self.name))
            }
            Err(e) => {
                if let FlowError::OAuth { code, .. } = &e {
                    // The grant (or the client) is gone: forget it, as pi-mcp does.
                    let forget: &[&str] = match code.as_str() {
                        "invalid_grant" => &["tokens", "tokensExpireAt"],
                        "invalid_client" | "unauthorized_client" => {
                            &["clientInformation", "tokens", "tokensExpireAt", "discovery"]
                        }
                        _ => &[],
                    };
                    if !forget.is_empty()
                        && let Some(map) = state.as_object_mut()
                    {
                        for key in forget {
                            map.remove(*key);
                        }
                        let _ = self.store().save(&self.name, &self.url, state).await;
                    }
                }
                tracing::warn!("MCP server {}: refreshing its access token failed: {e}", self.name);
                self.mark_needs_sign_in();
                Err(super::sign_in_required(&self.name))
            }
        }
    }
}

fn access_token(state: &Value) -> Option<String> {
    state.get("tokens")?.get("access_token")?.as_str().map(str::to_string)
}

fn refresh_token(state: &Value) -> Option<String> {
    state.get("tokens")?.get("refresh_token")?.as_str().map(str::to_string)
}

/// Refresh the tokens of `state` in place with its client (the configured
/// one, the stored one, or pi's metadata document). `Ok(false)` when that is
/// not possible and the user must sign in.
pub async fn refresh_stored(
    server_url: &str,
    settings: &OAuthSettings,
    state: &mut Value,
    resource_metadata_url: Option<&str>,
) -> Result<bool, FlowError> {
    let Some(refresh) = refresh_token(state) else { return Ok(false) };
    let http = flow::http_client()?;
    let cached = state.get("discovery").filter(|_| settings.auth_server_metadata_url.is_none()).and_then(|d| {
        Some(flow::Discovered {
            authorization_server_url: d.get("authorizationServerUrl")?.as_str()?.to_string(),
            metadata: d.get("authorizationServerMetadata").cloned(),
            resource_metadata: d.get("resourceMetadata").cloned(),
        })
    });
    let discovered = match cached.filter(|c| c.metadata.is_some()) {
        Some(cached) => cached,
        None => {
            let found = flow::discover(&http, server_url, settings, resource_metadata_url).await?;
            if settings.auth_server_metadata_url.is_none() {
                state["discovery"] = found.to_state();
            }
            found
        }
    };
    let client = match &settings.client_id {
        Some(id) => Some(Client { id: id.clone(), secret: settings.secret()?, auth_method: None }),
        None => state.get("clientInformation").and_then(Client::from_information),
    };
    let client = match client {
        Some(client) => client,
        None => match discovered.client_document(server_url) {
            Some((id, _))
                if settings.client_registration.as_deref() != Some("dcr") && settings.client_name.is_none() =>
            {
                Client { id, secret: None, auth_method: Some("none".into()) }
            }
            _ => return Ok(false),
        },
    };
    let resource = discovered.resource(server_url)?;
    let params = vec![("grant_type".to_string(), "refresh_token".to_string()), ("refresh_token".to_string(), refresh)];
    let tokens = flow::token_request(&http, &discovered, &client, resource.as_deref(), params).await?;
    let previous = state.get("tokens").cloned();
    flow::saved_tokens(state, tokens, previous.as_ref(), None);
    Ok(true)
}

/// An HTTP client for rmcp's streamable-HTTP transport that authorizes its
/// requests with a [`TokenSource`].
#[derive(Clone)]
pub struct OAuthHttpClient {
    inner: crate::mcp::http_client::QuotingHttpClient,
    source: Arc<TokenSource>,
}

impl OAuthHttpClient {
    pub fn new(inner: crate::mcp::http_client::QuotingHttpClient, source: Arc<TokenSource>) -> OAuthHttpClient {
        OAuthHttpClient { inner, source }
    }

    /// Run `call` with the current token; after a 401, refresh and run it once more.
    async fn authorized<T, F, Fut>(&self, call: F) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let token = self.source.token().await;
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                if self.source.on_unauthorized(token.as_deref(), &challenge.www_authenticate_header).await.is_err() {
                    return Err(StreamableHttpError::AuthRequired(challenge));
                }
                let fresh = self.source.token().await;
                if fresh == token {
                    self.source.mark_needs_sign_in();
                    return Err(StreamableHttpError::AuthRequired(challenge));
                }
                let again = call(fresh).await;
                if let Err(StreamableHttpError::AuthRequired(AuthRequiredError { .. })) = &again {
                    self.source.mark_needs_sign_in();
                }
                again
            }
            Err(StreamableHttpError::InsufficientScope(scope)) => {
                let _ = self.source.on_unauthorized(token.as_deref(), &scope.www_authenticate_header).await;
                self.source.mark_needs_sign_in();
                Err(StreamableHttpError::InsufficientScope(scope))
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for OAuthHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            let (uri, message, session_id, headers) =
                (uri.clone(), message.clone(), session_id.clone(), custom_headers.clone());
            async move { self.inner.post_message(uri, message, session_id, token, headers).await }
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            let (uri, message, session_id, headers) =
                (uri.clone(), message.clone(), session_id.clone(), custom_headers.clone());
            async move {
                self.inner.post_message_with_response_limits(uri, message, session_id, token, headers, limits).await
            }
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            let (uri, session_id, headers) = (uri.clone(), session_id.clone(), custom_headers.clone());
            async move { self.inner.delete_session(uri, session_id, token, headers).await }
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            let (uri, session_id, last, headers) =
                (uri.clone(), session_id.clone(), last_event_id.clone(), custom_headers.clone());
            async move { self.inner.get_stream(uri, session_id, last, token, headers).await }
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            let (uri, session_id, last, headers) =
                (uri.clone(), session_id.clone(), last_event_id.clone(), custom_headers.clone());
            async move {
                self.inner
                    .get_stream_with_max_sse_event_size(uri, session_id, last, token, headers, max_sse_event_size)
                    .await
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_as_pi_reads_them() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://127.0.0.1:1/.well-known/x""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.resource_metadata_url.as_deref(), Some("http://127.0.0.1:1/.well-known/x"));
        assert_eq!(Challenge::parse("Basic realm=x"), Challenge::default());
    }
}
