//! Anthropic workload identity federation, as pi 1.6.0 has the Anthropic
//! SDK do it: for the `anthropic` provider with no key and no auth header,
//! `ANTHROPIC_FEDERATION_RULE_ID` + `ANTHROPIC_ORGANIZATION_ID` +
//! `ANTHROPIC_IDENTITY_TOKEN_FILE` (optional `ANTHROPIC_SERVICE_ACCOUNT_ID`,
//! `ANTHROPIC_WORKSPACE_ID`) trade the identity token (an OIDC JWT, read
//! from the file each time) for a short-lived access token at
//! `{baseUrl}/v1/oauth/token` (JWT bearer grant), sent as
//! `Authorization: Bearer` with the `oauth-2025-04-20` beta. The token is
//! kept until two minutes before it expires; a 401 drops it, so the next call
//! exchanges again.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

use super::ambient::is_placeholder;
use super::env::ProviderEnv;
use super::http::HttpClient;
use super::lenient;
use super::{ProviderError, ProviderErrorKind, ProviderRequest};

/// The `anthropic-beta` of requests made with a federated access token.
pub const OAUTH_BETA: &str = "oauth-2025-04-20";
/// The `anthropic-beta` of the token exchange (with [`OAUTH_BETA`]).
const FEDERATION_BETA: &str = "oidc-federation-2026-04-01";
const TOKEN_PATH: &str = "/v1/oauth/token";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// A cached token is exchanged again this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(120);

/// A federation configuration from the provider env.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Federation {
    rule_id: String,
    organization_id: String,
    token_file: String,
    service_account_id: Option<String>,
    workspace_id: Option<String>,
}

impl Federation {
    /// The configuration in `env`, when its three required variables are set.
    pub fn from_env(env: &ProviderEnv) -> Option<Federation> {
        Some(Federation {
            rule_id: env.get("ANTHROPIC_FEDERATION_RULE_ID")?,
            organization_id: env.get("ANTHROPIC_ORGANIZATION_ID")?,
            token_file: env.get("ANTHROPIC_IDENTITY_TOKEN_FILE")?,
            service_account_id: env.get("ANTHROPIC_SERVICE_ACCOUNT_ID"),
            workspace_id: env.get("ANTHROPIC_WORKSPACE_ID"),
        })
    }

    /// The federation a request authenticates with: the `anthropic`
    /// provider, no real key and no auth header of its own.
    pub fn for_request(request: &ProviderRequest) -> Option<Federation> {
        if request.model.provider != "anthropic" {
            return None;
        }
        if request.api_key.as_deref().is_some_and(|k| !k.is_empty() && !is_placeholder(k)) {
            return None;
        }
        let auth_header = |name: &str| {
            request.headers.keys().any(|k| k.eq_ignore_ascii_case(name))
                || request.model.headers.iter().flatten().any(|(k, _)| k.eq_ignore_ascii_case(name))
        };
        if auth_header("authorization") || auth_header("x-api-key") {
            return None;
        }
        Federation::from_env(&request.env)
    }

    fn cache_key(&self, base_url: &str) -> String {
        format!("{base_url}\0{self:?}")
    }

    /// An access token: the cached one, else a new exchange.
    pub async fn token(&self, base_url: &str, http: &HttpClient) -> Result<String, ProviderError> {
        let key = self.cache_key(base_url);
        if let Ok(cached) = cache().lock()
            && let Some((token, until)) = cached.get(&key)
            && *until > Instant::now() + RENEW_BEFORE
        {
            return Ok(token.clone());
        }
        let (token, lifetime) = self.exchange(base_url, http).await?;
        if let Ok(mut cached) = cache().lock() {
            cached.insert(key, (token.clone(), Instant::now() + lifetime));
        }
        Ok(token)
    }

    /// Forget the cached token (it was refused).
    pub fn invalidate(&self, base_url: &str) {
        if let Ok(mut cached) = cache().lock() {
            cached.remove(&self.cache_key(base_url));
        }
    }

    async fn exchange(&self, base_url: &str, http: &HttpClient) -> Result<(String, Duration), ProviderError> {
        let base = base_url.trim_end_matches('/');
        require_secure(base)?;
        let assertion = std::fs::read_to_string(&self.token_file)
            .map_err(|e| error(format!("Failed to read identity token file at {}: {e}", self.token_file)))?
            .trim()
            .to_string();
        if assertion.is_empty() {
            return Err(error(format!("Identity token file at {} is empty", self.token_file)));
        }
        let mut body = Map::new();
        body.insert("grant_type".into(), json!(JWT_BEARER));
        body.insert("assertion".into(), json!(assertion));
        body.insert("federation_rule_id".into(), json!(self.rule_id));
        body.insert("organization_id".into(), json!(self.organization_id));
        if let Some(id) = &self.service_account_id {
            body.insert("service_account_id".into(), json!(id));
        }
        if let Some(id) = &self.workspace_id {
            body.insert("workspace_id".into(), json!(id));
        }
        let url = format!("{base}{TOKEN_PATH}");
        let response = http
            .request(reqwest::Method::POST, &url)?
            .header("content-type", "application/json")
            .header("anthropic-beta", format!("{OAUTH_BETA},{FEDERATION_BETA}"))
            .body(Value::Object(body).to_string())
            .send()
            .await
            .map_err(|e| error(format!("Failed to reach token endpoint {url}: {}", super::http::error_chain(&e))))?;
        let status = response.status().as_u16();
        let request_id = response.headers().get("request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
        let text = response.text().await.unwrap_or_default();
        let id = request_id.map(|id| format!(" (request-id {id})")).unwrap_or_default();
        if !(200..300).contains(&status) {
            let hint = if status == 401 { " Ensure your federation rule matches your identity token." } else { "" };
            return Err(error(format!("Token exchange failed with status {status}{id}: {}{hint}", redacted(&text))));
        }
        let data: Value = serde_json::from_str(&text)
            .map_err(|_| error(format!("Token endpoint returned non-JSON response (status {status})")))?;
        let data: TokenResponse = lenient::event(data).unwrap_or_default();
        let Some(token) = data.access_token.filter(|t| !t.is_empty()) else {
            return Err(error("Token endpoint response missing access_token".to_string()));
        };
        if let Some(kind) = data.token_type
            && !kind.eq_ignore_ascii_case("bearer")
        {
            return Err(error(format!("Token endpoint response: unsupported token_type \"{kind}\" (want Bearer)")));
        }
        let Some(lifetime) = data.expires_in.filter(|s| s.is_finite() && *s >= 0.0) else {
            return Err(error("Token endpoint response missing required fields: expires_in".to_string()));
        };
        Ok((token, Duration::from_secs_f64(lifetime)))
    }
}

/// The token endpoint's answer (fields of another JSON type read as absent).
#[derive(Deserialize, Default)]
#[serde(default)]
struct TokenResponse {
    #[serde(deserialize_with = "lenient::string")]
    access_token: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    token_type: Option<String>,
    #[serde(deserialize_with = "seconds")]
    expires_in: Option<f64>,
}

/// Seconds as a number or a numeric string; anything else reads as absent.
fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Value::deserialize(d).map(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
}

fn cache() -> &'static Mutex<HashMap<String, (String, Instant)>> {
    static CACHE: OnceLock<Mutex<HashMap<String, (String, Instant)>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

fn error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, message)
}

/// The SDK sends an identity token over https only, or plain http to loopback.
fn require_secure(base: &str) -> Result<(), ProviderError> {
    let url =
        reqwest::Url::parse(base).map_err(|e| error(format!("Invalid token endpoint base URL \"{base}\": {e}")))?;
    let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    match url.scheme() {
        "https" => Ok(()),
        "http" if matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1") => Ok(()),
        _ => Err(error(format!("Refusing to send credential over non-https token endpoint \"{base}\""))),
    }
}

/// A token endpoint's error body without anything but the OAuth error fields.
fn redacted(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            let kept: Map<String, Value> = map
                .into_iter()
                .filter(|(k, _)| matches!(k.as_str(), "error" | "error_description" | "error_uri"))
                .collect();
            Value::Object(kept).to_string()
        }
        _ => text.chars().take(2000).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProviderEnv {
        ProviderEnv::new(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn configuration_needs_its_three_variables() {
        let full = [
            ("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_1"),
            ("ANTHROPIC_ORGANIZATION_ID", "org"),
            ("ANTHROPIC_IDENTITY_TOKEN_FILE", "/t"),
        ];
        assert!(Federation::from_env(&env(&full)).is_some());
        for skip in 0..3 {
            let partial: Vec<_> = full.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, v)| *v).collect();
            let mut e = partial.clone();
            e.push((full[skip].0, ""));
            assert!(Federation::from_env(&env(&e)).is_none());
        }
        assert!(require_secure("http://127.0.0.1:9").is_ok());
        assert!(require_secure("https://api.anthropic.com").is_ok());
        assert!(require_secure("http://example.com").is_err());
        assert_eq!(redacted(r#"{"error":"invalid_grant","assertion":"secret"}"#), r#"{"error":"invalid_grant"}"#);
    }

    #[test]
    fn token_answers_are_read_leniently() {
        let read = |v: Value| lenient::event::<TokenResponse>(v).unwrap_or_default();
        let t = read(json!({"access_token": "tok", "token_type": "Bearer", "expires_in": "3600", "scope": 1}));
        assert_eq!(
            (t.access_token.as_deref(), t.token_type.as_deref(), t.expires_in),
            (Some("tok"), Some("Bearer"), Some(3600.0))
        );
        let t = read(json!({"access_token": 5, "token_type": null, "expires_in": 90.5}));
        assert_eq!((t.access_token, t.token_type, t.expires_in), (None, None, Some(90.5)));
        for lifetime in [json!("soon"), json!([60]), json!(null), json!(true)] {
            assert_eq!(read(json!({"expires_in": lifetime})).expires_in, None, "{lifetime}");
        }
        assert!(lenient::event::<TokenResponse>(json!([{"access_token": "tok"}])).is_none());
    }
}
