//! Kimi Code (subscription): a device code against `auth.kimi.com`
//! (`KIMI_CODE_OAUTH_HOST` or `KIMI_OAUTH_HOST` move it); requests carry the
//! access token as `Authorization: Bearer`. A refresh is tried again on
//! network errors, 429 and 5xx (1 s, 2 s, 4 s); 401, 403 and `invalid_grant`
//! mean the login is gone.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::answer::Answer;
use super::device::{DEVICE_GRANT, Poll, Refusals, Timing, grant_answer, poll_until};
use super::{
    DEVICE_CODE, FlowInfo, LoginContext, LoginIo, Net, OAuthError, OAuthFlow, RequestAuth, access, expiry_in,
    require_refresh,
};

const CLIENT_ID: &str = "17e5f671-d194-4dfb-9706-5516cb48c098";
const DEFAULT_HOST: &str = "https://auth.kimi.com";
const DEVICE_CODE_SECONDS: f64 = 15.0 * 60.0;
const REFRESH_RETRIES: u32 = 3;
const REFUSALS: Refusals =
    Refusals { expired: "Kimi Code device authorization expired; log in again", denied: "Kimi Code login was denied" };

pub struct KimiCoding;

/// The OAuth host: `KIMI_CODE_OAUTH_HOST`, `KIMI_OAUTH_HOST`, else auth.kimi.com.
pub fn oauth_host() -> String {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let host = env("KIMI_CODE_OAUTH_HOST").or_else(|| env("KIMI_OAUTH_HOST")).unwrap_or_else(|| DEFAULT_HOST.into());
    host.trim_end_matches('/').to_string()
}

fn credential(body: &Value, operation: &str) -> Result<Value, OAuthError> {
    let a = Answer::of(body);
    match (a.access_token.filled(), a.refresh_token.filled(), a.expires_in.positive()) {
        (Some(access), Some(refresh), Some(seconds)) => {
            Ok(json!({"type": "oauth", "access": access, "refresh": refresh, "expires": expiry_in(seconds, 0)}))
        }
        _ => Err(OAuthError::transient(format!(
            "Kimi Code token {operation}: the response lacks fields: {}",
            super::clip(body)
        ))),
    }
}

async fn device_login(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let host = oauth_host();
    let r = net
        .post_form(&format!("{host}/api/oauth/device_authorization"), &[], vec![("client_id", CLIENT_ID.to_string())])
        .await?;
    if !r.ok() {
        return Err(r.error("Kimi Code device authorization"));
    }
    let (body, a) = (&r.json, r.answer());
    let (Some(device_code), Some(user_code), Some(_), Some(complete)) =
        (a.device_code.text(), a.user_code.text(), a.verification_uri.url(), a.verification_uri_complete.url())
    else {
        return Err(OAuthError::transient(format!(
            "invalid Kimi Code device authorization response: {}",
            super::clip(body)
        )));
    };
    let interval = a.interval.positive().unwrap_or(5.0);
    let expires_in = a.expires_in.positive().unwrap_or(DEVICE_CODE_SECONDS);
    let timing = Timing::announce(io, user_code, complete, Some(interval), Some(expires_in), true);
    let (device_code, token_url) = (device_code.to_string(), format!("{host}/api/oauth/token"));
    poll_until(net, timing, || {
        let fields = vec![
            ("client_id", CLIENT_ID.to_string()),
            ("device_code", device_code.clone()),
            ("grant_type", DEVICE_GRANT.to_string()),
        ];
        let url = token_url.clone();
        async move {
            let r = net.post_form(&url, &[], fields).await?;
            if r.status >= 500 {
                return Ok(Poll::Failed(r.error("Kimi Code device token request").message));
            }
            let a = r.answer();
            if r.ok() && a.access_token.text().is_some() {
                return Ok(match credential(&r.json, "poll") {
                    Ok(c) => Poll::Complete(c),
                    Err(e) => Poll::Failed(e.message),
                });
            }
            Ok(grant_answer(a.error.text(), a.interval.positive(), REFUSALS)
                .unwrap_or_else(|| Poll::Failed(r.error("Kimi Code device token request").message)))
        }
    })
    .await
}

const INFO: FlowInfo = FlowInfo { provider: "kimi-coding", methods: &[DEVICE_CODE] };

#[async_trait]
impl OAuthFlow for KimiCoding {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        device_login(ctx, io).await
    }

    async fn refresh(&self, net: &Net, credential_in: &Value) -> Result<Value, OAuthError> {
        let refresh = require_refresh(credential_in)?;
        let url = format!("{}/api/oauth/token", oauth_host());
        let mut last = OAuthError::transient("Kimi Code token refresh failed");
        for attempt in 0..=REFRESH_RETRIES {
            if attempt > 0 {
                net.sleep(Duration::from_secs(1 << (attempt - 1))).await?;
            }
            let fields = vec![
                ("client_id", CLIENT_ID.to_string()),
                ("grant_type", "refresh_token".to_string()),
                ("refresh_token", refresh.to_string()),
            ];
            let r = match net.post_form(&url, &[], fields).await {
                Ok(r) => r,
                Err(e) if e.message == super::CANCELLED => return Err(e),
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            if r.ok() {
                return credential(&r.json, "refresh");
            }
            let invalid_grant = r.answer().error.text() == Some("invalid_grant");
            if matches!(r.status, 401 | 403) || invalid_grant {
                return Err(OAuthError::refused(r.error("Kimi Code token refresh (unauthorized)").message));
            }
            last = r.error("Kimi Code token refresh");
            if !(r.status == 429 || r.status >= 500) {
                return Err(last);
            }
        }
        Err(last)
    }

    fn to_auth(&self, credential: &Value) -> RequestAuth {
        let headers = access(credential).map(|a| vec![("Authorization".to_string(), format!("Bearer {a}"))]);
        RequestAuth { api_key: None, headers: headers.unwrap_or_default(), base_url: None }
    }
}
