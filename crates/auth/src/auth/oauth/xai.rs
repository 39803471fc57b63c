//! xAI (SuperGrok / X Premium): a device code against `auth.x.ai`; tokens
//! expire five minutes early, and a refresh may keep the old refresh token.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::answer::{Answer, Field};
use super::device::{DEVICE_GRANT, Poll, Refusals, Timing, grant_answer, poll_until};
use super::http::Response;
use super::{
    DEVICE_CODE, FIVE_MINUTES_MS, FlowInfo, LoginContext, LoginIo, Net, OAuthError, OAuthFlow, expiry_in,
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
fn https_only(value: &Field) -> Result<String, OAuthError> {
    let url = value.text().and_then(|s| url::Url::parse(s).ok());
    match url {
        Some(url) if url.scheme() == "https" => Ok(url.to_string()),
        _ => Err(OAuthError::refused("untrusted verification URI in the xAI answer")),
    }
}

fn failure(what: &str, r: &Response) -> OAuthError {
    let a = r.answer();
    let detail: Vec<&str> = [a.error.text(), a.error_description.text()].into_iter().flatten().collect();
    let message = if detail.is_empty() {
        format!("xAI {what} failed (HTTP {})", r.status)
    } else {
        format!("xAI {what} failed (HTTP {}): {}", r.status, detail.join(": "))
    };
    OAuthError { message, permanent: r.refused() }
}

fn credential(body: &Value, previous_refresh: Option<&str>) -> Result<Value, OAuthError> {
    let a = Answer::of(body);
    let access = a.access_token.filled().ok_or_else(|| OAuthError::transient("invalid xAI answer: access_token"))?;
    let refresh = match (a.refresh_token.is_present(), previous_refresh) {
        (false, Some(previous)) => previous,
        _ => a.refresh_token.filled().ok_or_else(|| OAuthError::transient("invalid xAI answer: refresh_token"))?,
    };
    let seconds = match a.expires_in.is_present() {
        false => DEFAULT_LIFETIME_SECONDS,
        true => a.expires_in.positive().ok_or_else(|| OAuthError::transient("invalid xAI answer: expires_in"))?,
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
    let a = r.answer();
    let device_code = a.device_code.filled().ok_or_else(|| OAuthError::transient("invalid xAI answer: device_code"))?;
    let user_code = a.user_code.filled().ok_or_else(|| OAuthError::transient("invalid xAI answer: user_code"))?;
    let verification = https_only(&a.verification_uri)?;
    let complete = match a.verification_uri_complete.filled() {
        Some(_) => Some(https_only(&a.verification_uri_complete)?),
        None => None,
    };
    let expires_in = a.expires_in.positive().ok_or_else(|| OAuthError::transient("invalid xAI answer: expires_in"))?;
    let verification = complete.unwrap_or(verification);
    let timing = Timing::announce(io, user_code, verification, a.interval.positive(), Some(expires_in), true);
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
            let a = r.answer();
            let error = match a.error.text() {
                Some("authorization_denied") => Some("access_denied"),
                other => other,
            };
            Ok(grant_answer(error, a.interval.positive(), REFUSALS)
                .unwrap_or_else(|| Poll::Failed(failure("device token polling", &r).message)))
        }
    })
    .await
}

const INFO: FlowInfo = FlowInfo { provider: "xai", methods: &[DEVICE_CODE] };

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
