//! The OAuth requests of MCP sign-in and refresh: discovery of the
//! authorization server through the MCP server's protected resource metadata
//! (RFC 9728) and the authorization server's metadata (RFC 8414, issuer
//! checked), dynamic client registration (RFC 7591), and the token endpoint
//! (authorization code with PKCE, refresh token), as pi-mcp does them.
//! Credentials are only sent over HTTPS or to a loopback host.

use std::time::Duration;

use serde_json::{Value, json};

use super::OAuthSettings;

/// Each request to the authorization server is bounded by this (pi's value).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// pi's Client ID Metadata Documents.
pub const CLIENT_DOCUMENTS: &str = "https://pi.dev/oauth";

/// Why an OAuth step failed.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowError {
    /// The token endpoint answered with an OAuth error (`invalid_grant`, …).
    OAuth {
        code: String,
        description: String,
    },
    Other(String),
}

impl std::fmt::Display for FlowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowError::OAuth { description, .. } => f.write_str(description),
            FlowError::Other(message) => f.write_str(message),
        }
    }
}

impl From<String> for FlowError {
    fn from(message: String) -> Self {
        FlowError::Other(message)
    }
}

/// An HTTP client for the authorization server.
pub fn http_client() -> Result<reqwest::Client, String> {
    crate::provider::http::install_crypto_provider();
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
}

/// Refuse to send credentials anywhere but HTTPS or loopback.
fn secure(url: &str) -> Result<url::Url, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("invalid URL {url}: {e}"))?;
    if parsed.scheme() != "https" && !parsed.host_str().is_some_and(is_loopback) {
        return Err(format!("Refusing to send OAuth credentials to non-HTTPS endpoint {parsed}"));
    }
    Ok(parsed)
}

/// What discovery found out about a server's authorization server.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    pub authorization_server_url: String,
    pub metadata: Option<Value>,
    pub resource_metadata: Option<Value>,
}

impl Discovered {
    /// pi-mcp's `OAuthDiscoveryState`, as stored in `mcp-auth.json`.
    pub fn to_state(&self) -> Value {
        let mut state = json!({"authorizationServerUrl": self.authorization_server_url});
        if let Some(m) = &self.metadata {
            state["authorizationServerMetadata"] = m.clone();
        }
        if let Some(r) = &self.resource_metadata {
            state["resourceMetadata"] = r.clone();
        }
        state
    }

    fn endpoint(&self, field: &str, fallback: &str) -> String {
        self.metadata
            .as_ref()
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .map_or_else(|| join(&self.authorization_server_url, fallback), str::to_string)
    }

    pub fn token_endpoint(&self) -> String {
        self.endpoint("token_endpoint", "/token")
    }

    pub fn authorization_endpoint(&self) -> String {
        self.endpoint("authorization_endpoint", "/authorize")
    }

    fn list(&self, field: &str) -> Vec<String> {
        let items = self.metadata.as_ref().and_then(|m| m.get(field)).and_then(Value::as_array);
        items.map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
    }

    fn flag(&self, field: &str) -> bool {
        self.metadata.as_ref().and_then(|m| m.get(field)).and_then(Value::as_bool) == Some(true)
    }

    /// The `resource` parameter: the protected resource, when it matches the server.
    pub fn resource(&self, server_url: &str) -> Result<Option<String>, String> {
        let Some(resource) = self.resource_metadata.as_ref().and_then(|r| r.get("resource")).and_then(Value::as_str)
        else {
            return Ok(None);
        };
        let requested = url::Url::parse(server_url).map_err(|e| e.to_string())?;
        let configured = url::Url::parse(resource).map_err(|e| e.to_string())?;
        let with_slash = |p: &str| if p.ends_with('/') { p.to_string() } else { format!("{p}/") };
        if requested.origin() != configured.origin()
            || !with_slash(requested.path()).starts_with(&with_slash(configured.path()))
        {
            return Err(format!("Protected resource {resource} does not match MCP server {requested}"));
        }
        Ok(Some(resource.to_string()))
    }

    /// The scope to ask for: the configured one, else the advertised one.
    pub fn scope(&self, settings: &OAuthSettings, extra: Option<&str>) -> Option<String> {
        let advertised = self
            .resource_metadata
            .as_ref()
            .and_then(|r| r.get("scopes_supported"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
            .filter(|s| !s.is_empty());
        let base = settings.scope.clone().filter(|s| !s.is_empty()).or(advertised);
        let mut scopes: Vec<String> = Vec::new();
        for s in [base.as_deref(), extra].into_iter().flatten().flat_map(|s| s.split_whitespace()) {
            if !scopes.iter().any(|x| x == s) {
                scopes.push(s.to_string());
            }
        }
        (!scopes.is_empty()).then(|| scopes.join(" "))
    }

    /// The Client ID Metadata Document pi identifies with, when the
    /// authorization server supports documents for public clients.
    pub fn client_document(&self, server_url: &str) -> Option<(String, Option<String>)> {
        if !self.flag("client_id_metadata_document_supported")
            || !self.list("token_endpoint_auth_methods_supported").iter().any(|m| m == "none")
        {
            return None;
        }
        if self.flag("authorization_response_iss_parameter_supported") {
            return Some((format!("{CLIENT_DOCUMENTS}/client.json"), None));
        }
        let id = callback_id(server_url);
        Some((format!("{CLIENT_DOCUMENTS}/{id}/client.json"), Some(id)))
    }
}

/// 12 characters naming an MCP server URL in pi's server-specific callback paths.
pub fn callback_id(server_url: &str) -> String {
    use base64::Engine;
    let mut url = url::Url::parse(server_url).map_or_else(|_| server_url.to_string(), |u| u.to_string());
    if let Some(i) = url.find('#') {
        url.truncate(i);
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest.as_ref()[..9])
}

fn join(base: &str, path: &str) -> String {
    url::Url::parse(base).and_then(|b| b.join(path)).map_or_else(|_| format!("{base}{path}"), |u| u.to_string())
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<(u16, Option<Value>), String> {
    let response = http
        .get(url)
        .header("Accept", "application/json")
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status().as_u16();
    let body = if response.status().is_success() { response.json::<Value>().await.ok() } else { None };
    Ok((status, body))
}

/// 4xx and 502 mean "not here": discovery tries the next URL.
fn is_miss(status: u16) -> bool {
    (400..500).contains(&status) || status == 502
}

fn path_suffix(url: &url::Url) -> String {
    url.path().trim_end_matches('/').to_string()
}

/// Find the authorization server of `server_url` (`resource_metadata_url`
/// from a 401's challenge, when it named one).
pub async fn discover(
    http: &reqwest::Client,
    server_url: &str,
    settings: &OAuthSettings,
    resource_metadata_url: Option<&str>,
) -> Result<Discovered, String> {
    let server = url::Url::parse(server_url).map_err(|e| format!("invalid MCP server URL: {e}"))?;
    let origin = server.origin().ascii_serialization();
    let mut resource_metadata = None;
    let first = resource_metadata_url.map_or_else(
        || format!("{origin}/.well-known/oauth-protected-resource{}", path_suffix(&server)),
        str::to_string,
    );
    if let Ok((status, body)) = get_json(http, &first).await {
        resource_metadata = body;
        if resource_metadata.is_none() && resource_metadata_url.is_none() && server.path() != "/" && is_miss(status) {
            resource_metadata = get_json(http, &format!("{origin}/.well-known/oauth-protected-resource"))
                .await
                .ok()
                .and_then(|(_, body)| body);
        }
    }
    if let Some(url) = &settings.auth_server_metadata_url {
        let url = secure(url)?;
        let (status, body) = get_json(http, url.as_str()).await?;
        let metadata = body.ok_or(format!("HTTP {status} loading authorization server metadata from {url}"))?;
        let issuer = metadata.get("issuer").and_then(Value::as_str).unwrap_or_default().to_string();
        return Ok(Discovered { authorization_server_url: issuer, metadata: Some(metadata), resource_metadata });
    }
    let authorization_server_url = resource_metadata
        .as_ref()
        .and_then(|r| r.get("authorization_servers"))
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .map_or_else(|| format!("{origin}/"), str::to_string);
    let metadata = authorization_server_metadata(http, &authorization_server_url).await?;
    Ok(Discovered { authorization_server_url, metadata, resource_metadata })
}

/// RFC 8414 (then OpenID) metadata of an authorization server, its issuer checked.
async fn authorization_server_metadata(http: &reqwest::Client, issuer: &str) -> Result<Option<Value>, String> {
    let url = url::Url::parse(issuer).map_err(|e| format!("invalid authorization server URL {issuer}: {e}"))?;
    let origin = url.origin().ascii_serialization();
    let path = path_suffix(&url);
    let mut candidates = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
    ];
    if !path.is_empty() {
        candidates.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    for candidate in candidates {
        let (status, body) = get_json(http, &candidate).await?;
        let Some(metadata) = body else {
            if is_miss(status) {
                continue;
            }
            return Err(format!("HTTP {status} loading authorization server metadata from {candidate}"));
        };
        let found = metadata.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if found.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(format!("OAuth issuer mismatch: expected \"{issuer}\", received \"{found}\""));
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// The client the token endpoint is called as: its id and secret, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    pub id: String,
    pub secret: Option<String>,
    /// The registration's `token_endpoint_auth_method`, if it named one.
    pub auth_method: Option<String>,
}

impl Client {
    /// From pi-mcp's stored `clientInformation`.
    pub fn from_information(info: &Value) -> Option<Client> {
        Some(Client {
            id: info.get("client_id")?.as_str()?.to_string(),
            secret: info.get("client_secret").and_then(Value::as_str).map(str::to_string),
            auth_method: info.get("token_endpoint_auth_method").and_then(Value::as_str).map(str::to_string),
        })
    }
}

/// Call the token endpoint with `params`; the token response, or the OAuth error.
pub async fn token_request(
    http: &reqwest::Client,
    discovered: &Discovered,
    client: &Client,
    resource: Option<&str>,
    mut params: Vec<(String, String)>,
) -> Result<Value, FlowError> {
    let endpoint = secure(&discovered.token_endpoint())?;
    if let Some(resource) = resource {
        params.push(("resource".into(), resource.into()));
    }
    let supported = discovered.list("token_endpoint_auth_methods_supported");
    let method = match (&client.auth_method, &client.secret) {
        (Some(m), _)
            if ["client_secret_basic", "client_secret_post", "none"].contains(&m.as_str())
                && (supported.is_empty() || supported.contains(m)) =>
        {
            m.clone()
        }
        (_, Some(_)) if supported.is_empty() || supported.iter().any(|m| m == "client_secret_basic") => {
            "client_secret_basic".into()
        }
        (_, Some(_)) => "client_secret_post".into(),
        (_, None) => "none".into(),
    };
    let mut request = http.post(endpoint.as_str()).header("Accept", "application/json");
    if method == "client_secret_basic" {
        request = request.basic_auth(&client.id, client.secret.as_deref());
    } else {
        params.push(("client_id".into(), client.id.clone()));
        if method == "client_secret_post"
            && let Some(secret) = &client.secret
        {
            params.push(("client_secret".into(), secret.clone()));
        }
    }
    let response = request.form(&params).send().await.map_err(|e| format!("POST {endpoint}: {e}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let value: Option<Value> = serde_json::from_str(&text).ok();
    if let Some(code) = value.as_ref().and_then(|v| v.get("error")).and_then(Value::as_str) {
        let description =
            value.as_ref().and_then(|v| v.get("error_description")).and_then(Value::as_str).unwrap_or(code).to_string();
        return Err(FlowError::OAuth { code: code.to_string(), description });
    }
    if !status.is_success() {
        return Err(FlowError::OAuth { code: "server_error".into(), description: format!("HTTP {status}: {text}") });
    }
    match value {
        Some(tokens) if tokens.get("access_token").and_then(Value::as_str).is_some() => Ok(tokens),
        _ => Err(FlowError::Other(format!("invalid token response: {text}"))),
    }
}

/// Register a client dynamically (RFC 7591) for `redirect_uri`.
pub async fn register(
    http: &reqwest::Client,
    discovered: &Discovered,
    settings: &OAuthSettings,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Value, String> {
    let endpoint = match discovered.metadata.as_ref().map(|m| m.get("registration_endpoint").and_then(Value::as_str)) {
        Some(Some(endpoint)) => endpoint.to_string(),
        Some(None) => return Err("Authorization server does not support dynamic client registration".into()),
        None => join(&discovered.authorization_server_url, "/register"),
    };
    let mut body = json!({
        "redirect_uris": [redirect_uri],
        "client_name": settings.client_name.as_deref().unwrap_or("pi"),
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    let response = http
        .post(&endpoint)
        .header("Accept", "application/json")
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!("OAuth dynamic client registration failed with status {}: {text}", status.as_u16()));
    }
    let info: Value = serde_json::from_str(&text).map_err(|e| format!("invalid registration response: {e}"))?;
    if info.get("client_id").and_then(Value::as_str).is_none() {
        return Err("invalid registration response: no client_id".into());
    }
    Ok(info)
}

/// New tokens as pi-mcp saves them: the refresh token and scope kept when
/// the answer leaves them out, and when the access token expires.
pub fn saved_tokens(state: &mut Value, mut tokens: Value, previous: Option<&Value>, requested_scope: Option<&str>) {
    for key in ["refresh_token", "scope"] {
        if tokens.get(key).is_none() {
            let kept = previous.and_then(|p| p.get(key)).cloned();
            let kept = kept.or_else(|| (key == "scope").then(|| requested_scope.map(|s| json!(s))).flatten());
            if let Some(value) = kept {
                tokens[key] = value;
            }
        }
    }
    let expires_at = tokens.get("expires_in").and_then(Value::as_f64).map(|s| super::now_ms() + (s * 1000.0) as i64);
    state["tokens"] = tokens;
    match expires_at {
        Some(at) => state["tokensExpireAt"] = json!(at),
        None => {
            if let Some(map) = state.as_object_mut() {
                map.remove("tokensExpireAt");
            }
        }
    }
}
