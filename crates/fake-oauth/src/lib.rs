//! The fake OAuth server (crate pi-fake-oauth): every login endpoint of pi-ai 1.6.0's providers
//! on one 127.0.0.1 port, each provider's origin under its own path prefix
//! (see [`PREFIXES`] and [`FakeOAuth::overrides`], the value for
//! `PI_RPC_ORIGIN_OVERRIDES`). It behaves like the real servers where the
//! tests need it to:
//!
//! - authorization pages redirect to the `redirect_uri` with a code, and the
//!   token exchange checks that code's PKCE verifier (S256) and redirect URI;
//! - device codes are pending on their first poll and granted on the next;
//! - refresh tokens rotate: a refresh token works once, so two parties
//!   refreshing with the same token make the second fail with
//!   `invalid_grant`, as a lost write would in real life;
//! - [`FakeOAuth::revoke`] makes every refresh fail with `invalid_grant`;
//! - Radius's gateway gives its configuration (`GET /v1/config`) to a
//!   bearer token, with a model named after the token;
//! - every request is recorded, refreshes are counted per provider.

pub mod flaky;
mod mcp;
mod routes;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

/// Origins of the providers' OAuth endpoints and the prefix each gets here.
pub const PREFIXES: &[(&str, &str)] = &[
    ("https://claude.ai", "/claude-ai"),
    ("https://platform.claude.com", "/anthropic"),
    ("https://auth.openai.com", "/openai"),
    ("https://github.com", "/github"),
    ("https://api.github.com", "/github-api"),
    ("https://api.individual.githubcopilot.com", "/copilot"),
    ("https://auth.x.ai", "/xai"),
    ("https://openrouter.ai", "/openrouter"),
    ("https://auth.kimi.com", "/kimi"),
    ("https://auth.meta.com", "/meta-auth"),
    ("https://api.meta.ai", "/meta-api"),
    ("https://radius.pi.dev", "/radius"),
];

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct OAuthRequest {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// Form fields or JSON fields, as strings.
    pub fields: HashMap<String, String>,
}

impl OAuthRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
pub(crate) struct State {
    pub next: u64,
    /// `expires_in` of new access tokens, seconds.
    pub lifetime: i64,
    /// Access tokens issued → provider (the guarded MCP endpoint accepts the `mcp` ones).
    pub access_tokens: HashMap<String, String>,
    /// Where the guarded MCP endpoint forwards accepted requests.
    pub mcp_upstream: Option<String>,
    /// Valid refresh tokens → provider.
    pub refresh_tokens: HashMap<String, String>,
    /// Authorization codes → (PKCE challenge, redirect URI, provider).
    pub codes: HashMap<String, (String, String, String)>,
    /// Polls seen per device code.
    pub polls: HashMap<String, u32>,
    pub revoked: bool,
    pub refresh_delay: Duration,
    pub refreshes: HashMap<String, usize>,
    pub requests: Vec<OAuthRequest>,
}

/// The running server.
pub struct FakeOAuth {
    addr: SocketAddr,
    pub(crate) state: Arc<Mutex<State>>,
    stop: Option<oneshot::Sender<()>>,
}

impl FakeOAuth {
    /// Start on 127.0.0.1 with a free port; access tokens live an hour.
    pub async fn start() -> std::io::Result<FakeOAuth> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State { lifetime: 3600, ..State::default() }));
        let (stop, stopped) = oneshot::channel::<()>();
        let app = routes::router(state.clone(), addr);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(FakeOAuth { addr, state, stop: Some(stop) })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `PI_RPC_ORIGIN_OVERRIDES` sending every provider origin here.
    pub fn overrides(&self) -> String {
        let origin = self.origin();
        PREFIXES.iter().map(|(from, prefix)| format!("{from}={origin}{prefix}")).collect::<Vec<_>>().join(",")
    }

    /// `KIMI_CODE_OAUTH_HOST` for this server.
    pub fn kimi_host(&self) -> String {
        format!("{}/kimi", self.origin())
    }

    /// Where a request for `url` goes (the overrides applied).
    pub fn route(&self, url: &str) -> String {
        route_with(&self.origin(), url)
    }

    /// A function doing [`FakeOAuth::route`], for clients built in tests.
    pub fn router(&self) -> impl Fn(&str) -> String + Send + Sync + 'static + use<> {
        let origin = self.origin();
        move |url: &str| route_with(&origin, url)
    }

    /// New access tokens live this many seconds.
    pub fn set_lifetime(&self, seconds: i64) {
        self.lock().lifetime = seconds;
    }

    /// Every refresh fails from now on with `invalid_grant`.
    pub fn revoke(&self) {
        self.lock().revoked = true;
    }

    /// Refreshes answer after this delay (to make races).
    pub fn set_refresh_delay(&self, delay: Duration) {
        self.lock().refresh_delay = delay;
    }

    /// Refreshes served so far for a provider (successful or not).
    pub fn refreshes(&self, provider: &str) -> usize {
        self.lock().refreshes.get(provider).copied().unwrap_or(0)
    }

    pub fn requests(&self) -> Vec<OAuthRequest> {
        self.lock().requests.clone()
    }

    /// A valid stored credential for `provider` in pi's format, expiring at
    /// `expires` (ms since the epoch), registered here so that its refresh works.
    pub fn credential(&self, provider: &str, expires: i64) -> Value {
        let mut state = self.lock();
        let (access, refresh) = routes::mint(&mut state, provider);
        let mut cred = json!({"type": "oauth", "refresh": refresh, "access": access, "expires": expires});
        if provider == "openai-codex" {
            cred["accountId"] = json!(routes::ACCOUNT_ID);
        }
        if provider == "openai" {
            cred["clientId"] = json!("issued-client");
        }
        cred
    }

    /// Guard a real MCP server: `/mcp` here forwards requests that carry an
    /// access token issued for `mcp` to `upstream` (its streamable-HTTP URL).
    pub fn guard_mcp(&self, upstream: &str) {
        self.lock().mcp_upstream = Some(upstream.to_string());
    }

    /// The guarded MCP server's URL.
    pub fn mcp_url(&self) -> String {
        format!("{}{}", self.origin(), mcp::RESOURCE_PATH)
    }

    /// Every access token issued so far stops working (as if they expired
    /// at the server): the next MCP request gets a 401.
    pub fn reject_access_tokens(&self) {
        self.lock().access_tokens.clear();
    }

    /// A signed-in state of the MCP server as pi keeps it in `mcp-auth.json`
    /// (a registered client and valid tokens whose refresh works here), with
    /// the access token expiring at `expires_at` (ms since the epoch).
    pub fn mcp_state(&self, expires_at: i64) -> Value {
        let url = self.mcp_url();
        let mut state = self.lock();
        let (access, refresh) = routes::mint(&mut state, mcp::PROVIDER);
        json!({
            "serverUrl": url,
            "clientInformation": {"client_id": "mcp-client-0", "redirect_uris": ["http://127.0.0.1/callback"],
                                   "token_endpoint_auth_method": "none"},
            "tokens": {"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "scope": "mcp"},
            "tokensExpireAt": expires_at,
        })
    }

    /// Act as the user's browser: open `url` (a provider's authorization
    /// page, routed here) and follow its redirects to the login's callback.
    /// Returns the final page's status.
    pub async fn browse(&self, url: &str) -> Result<u16, String> {
        browse(&self.origin(), url).await
    }

    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for FakeOAuth {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// [`FakeOAuth::browse`] for the server at `origin`.
pub async fn browse(origin: &str, url: &str) -> Result<u16, String> {
    let target = route_with(origin, url);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().build().map_err(|e| e.to_string())?;
    let response = client.get(&target).send().await.map_err(|e| format!("GET {target}: {e}"))?;
    Ok(response.status().as_u16())
}

/// `url` with a known origin replaced by `origin` + its prefix.
pub fn route_with(origin: &str, url: &str) -> String {
    for (from, prefix) in PREFIXES {
        if let Some(rest) = url.strip_prefix(from)
            && (rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'))
        {
            return format!("{origin}{prefix}{rest}");
        }
    }
    url.to_string()
}
