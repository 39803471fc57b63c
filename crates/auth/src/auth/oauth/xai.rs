//! xAI (SuperGrok / X Premium): a device code against `auth.x.ai`; tokens
//! expire five minutes early, and a refresh may keep the old refresh token.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::device::{DEVICE_GRANT, Poll, Refusals, Timing, grant_answer, poll_until};
use super::http::Response;
use super::{
    DEVICE_CODE, FIVE_MINUTES_MS, FlowInfo, LoginContext, LoginIo, Net, OAuthError, OAuthFlow, expiry_in, positive,
    require_refresh,
};

const CLIENT_ID: &str = "b1a00492-073a-47ea-816f-4c329264a828";
const SCOPE: &str = "openid profile email offline_access grok-cli:access api:access";
const DEVICE_CODE_URL: &str = "https://auth.x.ai/oauth2/device/code";
pub const TOKEN_URL: &str = "https://auth.x.ai/oauth2/token";
const DEFAULT_LIFETIME_SECONDS: f64 = 3600.0;
const REFUSALS: Refusals =
    Refusals { expired: "xAI device code expired", denied: "xAI device authorization was denied" };

pub struct Xai;

/// An `https:` verification URL (a server answer is never opened otherwise).
fn https_only(value: Option<&Value>) -> Result<String, OAuthError> {
    let url = value.and_then(Value::as_str).and_then(|s| url::Url::parse(s).ok());
    match url {
        Some(url) if url.scheme() == "https" => Ok(url.to_string()),
        _ => Err(OAuthError::refused("untrusted verification URI in the xAI answer")),
    }
}

fn failure(what: &str, r: &Response) -> OAuthError {
    let field = |k: &str| r.json.get(k).and_then(Value::as_str);
    let detail: Vec<&str> = [field("error"), field("error_description")].into_iter().flatten().collect();
    let message = if detail.is_empty() {
        format!("xAI {what} failed (HTTP {})", r.status)
    } else {
        format!("xAI {what} failed (HTTP {}): {}", r.status, detail.join(": "))
    };
    OAuthError { message, permanent: r.refused() }
}

fn credential(body: &Value, previous_refresh: Option<&str>) -> Result<Value, OAuthError> {
    let text = |k: &str| body.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let access = text("access_token").ok_or_else(|| OAuthError::transient("invalid xAI answer: access_token"))?;
    let refresh = match (body.get("refresh_token"), previous_refresh) {
        (None, Some(previous)) => previous,
        _ => text("refresh_token").ok_or_else(|| OAuthError::transient("invalid xAI answer: refresh_token"))?,
    };
    let seconds = match body.get("expires_in") {
        None => DEFAULT_LIFETIME_SECONDS,
        Some(_) => {
            positive(body, "expires_in").ok_or_else(|| OAuthError::transient("invalid xAI answer: expires_in"))?
        }
    };
    Ok(json!({"type": "oauth", "access": access, "refresh": refresh, "expires": expiry_in(seconds, FIVE_MINUTES_MS)}))
}

async fn device_login(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let fields =
        vec![("client_id", CLIENT_ID.to_string()), ("scope", SCOPE.to_string()), ("referrer", "pi".to_string())];
    let r = net.post_form(DEVICE_CODE_URL, &[], fields).await?;
    if !r.ok() {
        return Err(failure("device authorization", &r));
    }
    let body = &r.json;
    let text = |k: &str| body.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let device_code = text("device_code").ok_or_else(|| OAuthError::transient("invalid xAI answer: device_code"))?;
    let user_code = text("user_code").ok_or_else(|| OAuthError::transient("invalid xAI answer: user_code"))?;
    let verification = https_only(body.get("verification_uri"))?;
    let complete = match body.get("verification_uri_complete") {
        Some(Value::String(s)) if !s.is_empty() => Some(https_only(body.get("verification_uri_complete"))?),
        _ => None,
    };
    let expires_in =
        positive(body, "expires_in").ok_or_else(|| OAuthError::transient("invalid xAI answer: expires_in"))?;
    let verification = complete.unwrap_or(verification);
    let timing = Timing::announce(io, user_code, verification, positive(body, "interval"), Some(expires_in), true);
    let device_code = device_code.to_string();
    poll_until(net, timing, || {
        let fields = vec![
            ("grant_type", DEVICE_GRANT.to_string()),
            ("client_id", CLIENT_ID.to_string()),
            ("device_code", device_code.clone()),
        ];
        async move {
            let r = net.post_form(TOKEN_URL, &[], fields).await?;
            if r.ok() {
                return Ok(Poll::Complete(credential(&r.json, None)?));
            }
            let error = match r.json.get("error").and_then(Value::as_str) {
                Some("authorization_denied") => Some("access_denied"),
                other => other,
            };
            Ok(grant_answer(error, positive(&r.json, "interval"), REFUSALS)
                .unwrap_or_else(|| Poll::Failed(failure("device token polling", &r).message)))
        }
    })
    .await
}

const INFO: FlowInfo = FlowInfo { provider: "xai", name: "xAI (Grok/X subscription)", methods: &[DEVICE_CODE] };

#[async_trait]
impl OAuthFlow for Xai {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        device_login(ctx, io).await
    }

    async fn refresh(&self, net: &Net, credential_in: &Value) -> Result<Value, OAuthError> {
        let refresh = require_refresh(credential_in)?;
        let fields = vec![
            ("grant_type", "refresh_token".to_string()),
            ("client_id", CLIENT_ID.to_string()),
            ("refresh_token", refresh.to_string()),
        ];
        let r = net.post_form(TOKEN_URL, &[], fields).await?;
        if !r.ok() {
            return Err(failure("token refresh", &r));
        }
        credential(&r.json, Some(refresh))
    }
}
