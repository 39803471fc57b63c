//! Meta (Muse subscription): a device code against `auth.meta.com` gives an
//! identity token, which cannot call models: it mints a Model API key that
//! lives a day. The identity token is stored as `refresh` and the key as
//! `access`, so a "refresh" mints a new key; a 401/403 from the mint means
//! the identity token is gone and only a new login helps.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::device::{DEVICE_GRANT, Poll, Refusals, Timing, grant_answer, poll_until};
use super::http::Response;
use super::{
    DEVICE_CODE, FlowInfo, LoginContext, LoginEvent, LoginIo, Net, OAuthError, OAuthFlow, expiry_in, require_refresh,
};

const CLIENT_ID: &str = "1031625952748946";
const DEVICE_AUTHORIZATION_URL: &str = "https://auth.meta.com/oidc/device/authorization/";
const DEVICE_TOKEN_URL: &str = "https://auth.meta.com/oidc/device/token/";
pub const MINT_URL: &str = "https://api.meta.ai/muse-code/key";
const KEY_LIFETIME_SECONDS: f64 = 24.0 * 60.0 * 60.0;
const REFUSALS: Refusals =
    Refusals { expired: "Meta device authorization expired; log in again", denied: "Meta login was denied" };

pub struct Meta;

fn detail(r: &Response) -> String {
    ["error_description", "detail", "message", "error"]
        .iter()
        .find_map(|k| r.json.get(*k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()))
        .map(|d| format!(": {d}"))
        .unwrap_or_default()
}

/// A Model API key for an identity token.
async fn mint(net: &Net, identity: &str) -> Result<Value, OAuthError> {
    let bearer = format!("Bearer {identity}");
    let headers = [("Authorization", bearer.as_str()), ("x-api-version", "1.0.0")];
    let r = net.post_json(MINT_URL, &headers, json!({})).await?;
    if matches!(r.status, 401 | 403) {
        return Err(OAuthError::refused(format!("the Meta session expired (HTTP {}){}", r.status, detail(&r))));
    }
    if !r.ok() {
        return Err(OAuthError::transient(format!("the Meta API key mint failed (HTTP {}){}", r.status, detail(&r))));
    }
    let a = r.answer();
    match a.api_key.filled() {
        Some(key) => Ok(
            json!({"type": "oauth", "refresh": identity, "access": key, "expires": expiry_in(KEY_LIFETIME_SECONDS, 0)}),
        ),
        None => {
            let action = a.action_url.url().map(|u| format!(" Complete the setup at {u}")).unwrap_or_default();
            Err(OAuthError::refused(format!("Meta issued no API key.{action}")))
        }
    }
}

async fn device_login(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let r = net.post_form(DEVICE_AUTHORIZATION_URL, &[], vec![("client_id", CLIENT_ID.to_string())]).await?;
    if !r.ok() {
        return Err(OAuthError {
            message: format!("Meta device authorization failed (HTTP {}){}", r.status, detail(&r)),
            permanent: r.refused(),
        });
    }
    let (body, a) = (&r.json, r.answer());
    let verification = a.verification_uri_complete.url().or_else(|| a.verification_uri.url());
    let (Some(device_code), Some(user_code), Some(verification)) =
        (a.device_code.filled(), a.user_code.filled(), verification)
    else {
        return Err(OAuthError::transient(format!(
            "invalid Meta device authorization response: {}",
            super::clip(body)
        )));
    };
    let (interval, expires_in) = (a.interval.positive(), a.expires_in.positive());
    let timing = Timing::announce(io, user_code, verification, interval, expires_in, true);
    let device_code = device_code.to_string();
    let identity = poll_until(net, timing, || {
        let fields = vec![
            ("grant_type", DEVICE_GRANT.to_string()),
            ("device_code", device_code.clone()),
            ("client_id", CLIENT_ID.to_string()),
        ];
        async move {
            let r = net.post_form(DEVICE_TOKEN_URL, &[], fields).await?;
            let a = r.answer();
            if let Some(token) = a.access_token.filled().filter(|_| r.ok()) {
                return Ok(Poll::Complete(token.to_string()));
            }
            Ok(grant_answer(a.error.text(), a.interval.positive(), REFUSALS).unwrap_or_else(|| {
                Poll::Failed(format!("Meta device token request failed (HTTP {}){}", r.status, detail(&r)))
            }))
        }
    })
    .await?;
    io.notify(LoginEvent::Progress("Enabling Meta Model API access…".into()));
    mint(net, &identity).await
}

const INFO: FlowInfo = FlowInfo { provider: "meta", methods: &[DEVICE_CODE] };

#[async_trait]
impl OAuthFlow for Meta {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        device_login(ctx, io).await
    }

    async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError> {
        mint(net, require_refresh(credential)?).await
    }
}
