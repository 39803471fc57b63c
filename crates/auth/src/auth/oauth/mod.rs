//! The subscription logins of pi-ai 1.6.0, one module per provider: how to
//! log in (a browser sign-in with PKCE and a callback server on 127.0.0.1,
//! or a device code), how to refresh the stored credential, and what a
//! request sends from it. Credentials are pi's JSON objects, kept as JSON so
//! that fields this code does not know survive a refresh-and-write.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

pub mod answer;
pub mod anthropic;
pub mod callback;
pub mod device;
pub mod github_copilot;
pub mod http;
pub mod kimi;
pub mod meta;
pub mod openai_chatgpt;
pub mod openai_codex;
pub mod openrouter;
pub mod pkce;
pub mod radius;
pub mod xai;

pub use http::Net;

/// What a model request sends from a credential (pi's `ModelAuth`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestAuth {
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// Replaces the model's base URL (GitHub Copilot's per-account endpoint).
    pub base_url: Option<String>,
}

impl RequestAuth {
    pub fn key(key: &str) -> RequestAuth {
        RequestAuth { api_key: Some(key.to_string()), ..RequestAuth::default() }
    }
}

/// A failed login or refresh. `permanent` when trying again cannot help
/// (the grant was refused: the user must log in again).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct OAuthError {
    pub message: String,
    pub permanent: bool,
}

impl OAuthError {
    /// A refusal: trying again will not help.
    pub fn refused(message: impl Into<String>) -> OAuthError {
        OAuthError { message: message.into(), permanent: true }
    }

    /// A failure worth trying again (network, server error).
    pub fn transient(message: impl Into<String>) -> OAuthError {
        OAuthError { message: message.into(), permanent: false }
    }

    pub fn cancelled() -> OAuthError {
        OAuthError::refused(CANCELLED)
    }
}

/// The text of a cancelled login.
pub const CANCELLED: &str = "Login cancelled";

/// One way to log in to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Method {
    /// `browser`, `device_code`, `copy_code`.
    pub id: &'static str,
    pub label: &'static str,
}

pub const BROWSER: Method = Method { id: "browser", label: "Browser sign-in" };
pub const DEVICE_CODE: Method = Method { id: "device_code", label: "Device code" };

/// What a login shows the user while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum LoginEvent {
    /// Open this URL in a browser.
    AuthUrl { url: String, instructions: Option<String> },
    /// Enter this code at this address.
    DeviceCode {
        user_code: String,
        verification_uri: String,
        interval_seconds: Option<f64>,
        expires_in_seconds: Option<f64>,
    },
    /// A step of the login.
    Progress(String),
}

/// A question a login may ask.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub kind: QuestionKind,
    pub message: String,
    pub placeholder: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionKind {
    /// A line of text (GitHub Enterprise domain).
    Text,
    /// The authorization code or redirect URL, pasted by hand when the
    /// browser cannot reach the callback server.
    ManualCode,
}

/// The login's way to the user: events out, answers in.
#[async_trait]
pub trait LoginIo: Send + Sync {
    fn notify(&self, event: LoginEvent);

    /// The user's answer; `None` when there is none to give (no terminal:
    /// a manual code is then never entered, a text question gets its default).
    async fn ask(&self, question: Question) -> Option<String>;
}

/// Inputs of a login beyond the user's answers.
#[derive(Clone)]
pub struct LoginContext {
    pub net: Net,
    /// `browser` or another of the flow's [`Method`]s.
    pub method: &'static str,
    /// The installation's id (a UUID), for logins that register it.
    pub device_id: Option<String>,
    /// Cancels the login.
    pub cancel: tokio_util::sync::CancellationToken,
}

/// Who a login is for and the ways it signs in.
#[derive(Debug, Clone, Copy)]
pub struct FlowInfo {
    /// The provider id (`anthropic`, `openai-codex`, …).
    pub provider: &'static str,
    /// The ways to log in, the default first.
    pub methods: &'static [Method],
}

/// A provider's OAuth login.
#[async_trait]
pub trait OAuthFlow: Send + Sync {
    fn info(&self) -> &'static FlowInfo;

    /// The provider id (`anthropic`, `openai-codex`, …).
    fn provider(&self) -> &'static str {
        self.info().provider
    }

    /// pi-ai's name of the login, e.g. "Anthropic (Claude Pro/Max)" (the
    /// built-in provider table's; the provider id for one it does not have).
    fn name(&self) -> &'static str {
        let provider = self.provider();
        crate::config::catalog::builtin_provider(provider).and_then(|p| p.oauth).map_or(provider, |oauth| oauth.name)
    }

    /// The ways to log in, the default first.
    fn methods(&self) -> &'static [Method] {
        self.info().methods
    }

    /// Log in; returns the credential to store.
    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError>;

    /// Exchange the stored credential for a fresh one.
    async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError>;

    /// What a request sends from a valid credential.
    fn to_auth(&self, credential: &Value) -> RequestAuth {
        RequestAuth { api_key: access(credential).map(str::to_string), ..RequestAuth::default() }
    }
}

/// Every OAuth login, in `pi login --list` order.
pub fn flows() -> &'static [&'static dyn OAuthFlow] {
    &[
        &anthropic::Anthropic,
        &openai_codex::OpenAiCodex,
        &openai_chatgpt::OpenAiChatGpt,
        &github_copilot::GitHubCopilot,
        &xai::Xai,
        &openrouter::OpenRouter,
        &kimi::KimiCoding,
        &meta::Meta,
        &radius::Radius,
    ]
}

/// The OAuth login of a provider.
pub fn flow(provider: &str) -> Option<&'static dyn OAuthFlow> {
    flows().iter().copied().find(|f| f.provider() == provider)
}

/// A shared flow (for tasks that outlive a borrow).
pub fn shared(provider: &str) -> Option<Arc<dyn OAuthFlow>> {
    struct Static(&'static dyn OAuthFlow);
    #[async_trait]
    impl OAuthFlow for Static {
        fn info(&self) -> &'static FlowInfo {
            self.0.info()
        }
        async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
            self.0.login(ctx, io).await
        }
        async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError> {
            self.0.refresh(net, credential).await
        }
        fn to_auth(&self, credential: &Value) -> RequestAuth {
            self.0.to_auth(credential)
        }
    }
    flow(provider).map(|f| Arc::new(Static(f)) as Arc<dyn OAuthFlow>)
}

/// A credential's access token.
pub fn access(credential: &Value) -> Option<&str> {
    credential.get("access").and_then(Value::as_str)
}

/// A credential's refresh token.
pub fn refresh_token(credential: &Value) -> Option<&str> {
    credential.get("refresh").and_then(Value::as_str)
}

/// A credential's expiry (ms since the epoch).
pub fn expires(credential: &Value) -> Option<f64> {
    credential.get("expires").and_then(Value::as_f64)
}

/// True for a stored OAuth credential (pi's `type: "oauth"`).
pub fn is_oauth(credential: &Value) -> bool {
    credential.get("type").and_then(Value::as_str) == Some("oauth")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `now + seconds - margin`, in ms, as a JSON integer.
pub fn expiry_in(seconds: f64, margin_ms: i64) -> Value {
    let at = now_ms() as f64 + seconds * 1000.0 - margin_ms as f64;
    serde_json::json!(at.round() as i64)
}

/// Five minutes, the margin most logins take off a token's lifetime.
pub const FIVE_MINUTES_MS: i64 = 5 * 60 * 1000;

/// The refresh token of a stored credential, or a refusal.
pub(crate) fn require_refresh(credential: &Value) -> Result<&str, OAuthError> {
    refresh_token(credential).ok_or_else(|| OAuthError::refused("the stored credential has no refresh token"))
}

/// A response body shortened for an error message.
pub(crate) fn clip(body: &Value) -> String {
    let text = body.to_string();
    match text.char_indices().nth(400) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// An `http:`/`https:` URL from a server, normalised; `None` for anything
/// else (a login never opens a `file:` or custom-scheme URL).
pub fn trusted_url(value: Option<&Value>) -> Option<String> {
    let url = url::Url::parse(value?.as_str()?).ok()?;
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

/// The payload of a JWT (unverified).
pub fn jwt_payload(token: &str) -> Option<Value> {
    use base64::Engine;
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(payload))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// pi's parsing of a pasted authorization: a redirect URL, `code#state`,
/// a query string, or the bare code.
pub fn parse_pasted(input: &str) -> (Option<String>, Option<String>) {
    let value = input.trim();
    if value.is_empty() {
        return (None, None);
    }
    if let Ok(url) = url::Url::parse(value) {
        let get = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
        return (get("code"), get("state"));
    }
    if let Some((code, state)) = value.split_once('#') {
        return (Some(code.to_string()), Some(state.to_string()));
    }
    if value.contains("code=") {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(value.as_bytes()).into_owned().collect();
        let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        return (get("code"), get("state"));
    }
    (Some(value.to_string()), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_codes_parse_like_pi() {
        let p = |s: &str| parse_pasted(s);
        assert_eq!(p("http://localhost:1/cb?code=c1&state=s1"), (Some("c1".into()), Some("s1".into())));
        assert_eq!(p(" c2#s2 "), (Some("c2".into()), Some("s2".into())));
        assert_eq!(p("code=c3&state=s3"), (Some("c3".into()), Some("s3".into())));
        assert_eq!(p("c4"), (Some("c4".into()), None));
        assert_eq!(p("  "), (None, None));
    }

    #[test]
    fn jwt_claims_and_trusted_urls() {
        use base64::Engine;
        let claims = serde_json::json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acc-1"}});
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
        let token = format!("h.{payload}.s");
        assert_eq!(jwt_payload(&token).unwrap(), claims);
        assert!(jwt_payload("nope").is_none());
        assert_eq!(trusted_url(Some(&Value::from("https://x.test/a b"))).as_deref(), Some("https://x.test/a%20b"));
        assert!(trusted_url(Some(&Value::from("file:///etc/passwd"))).is_none());
    }

    #[test]
    fn every_login_provider_has_one_flow() {
        let mut ids: Vec<&str> = flows().iter().map(|f| f.provider()).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
        for id in [
            "anthropic",
            "openai-codex",
            "openai",
            "github-copilot",
            "xai",
            "openrouter",
            "kimi-coding",
            "meta",
            "radius",
        ] {
            assert!(flow(id).is_some(), "{id}");
        }
        assert!(flows().iter().all(|f| !f.methods().is_empty()));
    }
}
