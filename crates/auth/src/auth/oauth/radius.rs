//! Radius (pi's gateway, `https://radius.pi.dev`): OAuth on the gateway
//! itself, by a browser sign-in with PKCE (callback on 127.0.0.1:1456, the
//! authorization page found at `/v1/oauth`) or a device code; tokens expire
//! a minute early.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::callback::{CallbackOptions, CallbackServer, Complete};
use super::device::{DEVICE_GRANT, Poll, Refusals, Timing, grant_answer, poll_until};
use super::http::{Response, with_query};
use super::{
    BROWSER, DEVICE_CODE, FlowInfo, LoginContext, LoginEvent, LoginIo, Net, OAuthError, OAuthFlow, expiry_in, pkce,
    require_refresh,
};

pub const GATEWAY: &str = "https://radius.pi.dev";
const CALLBACK_PORT: u16 = 1456;
const REDIRECT_URI: &str = "http://127.0.0.1:1456/oauth/callback";
const CLIENT_ID: &str = "pi-gateway";
const SCOPE: &str = "gateway offline_access";
const EXPIRY_MARGIN_MS: i64 = 60_000;
const REFUSALS: Refusals =
    Refusals { expired: "Device authorization expired.", denied: "Device authorization was denied." };

pub struct Radius;

fn oauth_error(r: &Response, what: &str) -> (Option<String>, OAuthError) {
    let a = r.answer();
    let code = a.error.text().map(str::to_string);
    let description = a.error_description.text().map(str::to_string);
    let detail = match (&code, &description) {
        (Some(c), Some(d)) => format!("{c}: {d}"),
        (Some(c), None) => c.clone(),
        (None, Some(d)) => d.clone(),
        (None, None) if !r.text.trim().is_empty() => r.text.trim().to_string(),
        (None, None) => r.status.to_string(),
    };
    (code, OAuthError { message: format!("{what}: {detail}"), permanent: r.refused() })
}

/// A token request; on failure, the OAuth error code with the error.
async fn token(net: &Net, fields: Vec<(&'static str, String)>) -> Result<Value, (Option<String>, OAuthError)> {
    let r = net.post_form(&format!("{GATEWAY}/v1/oauth/token"), &[], fields).await.map_err(|e| (None, e))?;
    if !r.ok() {
        return Err(oauth_error(&r, "Radius OAuth token request failed"));
    }
    let (b, a) = (&r.json, r.answer());
    match (a.access_token.text(), a.refresh_token.text(), a.expires_in.positive()) {
        (Some(access), Some(refresh), Some(seconds)) => {
            let mut cred = json!({"type": "oauth", "access": access, "refresh": refresh, "expires": expiry_in(seconds, EXPIRY_MARGIN_MS)});
            if let Some(scope) = a.scope.value() {
                cred["scope"] = scope.clone();
            }
            Ok(cred)
        }
        _ => Err((None, OAuthError::transient(format!("invalid Radius token response: {}", super::clip(b))))),
    }
}

async fn browser(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let r = net.get(&format!("{GATEWAY}/v1/oauth"), &[("accept", "application/json")]).await?;
    if !r.ok() {
        return Err(r.error(&format!("loading the Radius OAuth configuration from {GATEWAY}")));
    }
    let endpoint = r
        .answer()
        .authorization_endpoint
        .url()
        .ok_or_else(|| OAuthError::transient(format!("invalid Radius OAuth configuration from {GATEWAY}")))?;
    let pkce = pkce::generate();
    let state = uuid::Uuid::new_v4().to_string();
    let (exchange_net, verifier) = (net.clone(), pkce.verifier.clone());
    let complete: Complete = Arc::new(move |code, _| {
        let (net, verifier) = (exchange_net.clone(), verifier.clone());
        Box::pin(async move {
            let fields = vec![
                ("grant_type", "authorization_code".to_string()),
                ("client_id", CLIENT_ID.to_string()),
                ("redirect_uri", REDIRECT_URI.to_string()),
                ("code", code),
                ("code_verifier", verifier),
            ];
            token(&net, fields).await.map_err(|(_, e)| e)
        })
    });
    let options = CallbackOptions {
        provider_name: "Radius",
        host: "127.0.0.1".into(),
        port: CALLBACK_PORT,
        path: "/oauth/callback".into(),
        redirect_host: None,
        state: Some(state.clone()),
        timeout: None,
    };
    let mut callback = CallbackServer::start(options, complete, ctx.cancel.clone())
        .await
        .map_err(|e| OAuthError::refused(format!("cannot listen on {REDIRECT_URI}: {e}")))?;
    let url = with_query(
        &endpoint,
        &[
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", REDIRECT_URI),
            ("scope", SCOPE),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("handoff", "url"),
            ("state", &state),
        ],
    );
    io.notify(LoginEvent::Progress(format!("Listening for the OAuth callback on {REDIRECT_URI}")));
    io.notify(LoginEvent::AuthUrl { url, instructions: Some("Continue in the browser.".into()) });
    callback.wait().await?.ok_or_else(|| OAuthError::refused("the OAuth callback did not complete"))
}

async fn device_login(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let fields = vec![("client_id", CLIENT_ID.to_string()), ("scope", SCOPE.to_string())];
    let r = net.post_form(&format!("{GATEWAY}/v1/oauth/device"), &[], fields).await?;
    if !r.ok() {
        return Err(oauth_error(&r, "Radius OAuth device authorization failed").1);
    }
    let a = r.answer();
    let (Some(device_code), Some(user_code), Some(expires_in)) =
        (a.device_code.text(), a.user_code.text(), a.expires_in.positive())
    else {
        return Err(OAuthError::transient("the Radius device authorization response lacks fields"));
    };
    let verification = a
        .verification_uri
        .url()
        .ok_or_else(|| OAuthError::refused("untrusted verification_uri in the Radius answer"))?;
    let interval = a.interval.number();
    let timing = Timing::announce(io, user_code, verification, interval, Some(expires_in), false);
    let device_code = device_code.to_string();
    poll_until(net, timing, || {
        let fields = vec![
            ("grant_type", DEVICE_GRANT.to_string()),
            ("client_id", CLIENT_ID.to_string()),
            ("device_code", device_code.clone()),
        ];
        async move {
            match token(net, fields).await {
                Ok(cred) => Ok(Poll::Complete(cred)),
                Err((code, e)) => grant_answer(code.as_deref(), None, REFUSALS).ok_or(e),
            }
        }
    })
    .await
}

const INFO: FlowInfo = FlowInfo { provider: "radius", methods: &[BROWSER, DEVICE_CODE] };

#[async_trait]
impl OAuthFlow for Radius {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        match ctx.method {
            "device_code" => device_login(ctx, io).await,
            _ => browser(ctx, io).await,
        }
    }

    async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError> {
        let fields = vec![
            ("grant_type", "refresh_token".to_string()),
            ("client_id", CLIENT_ID.to_string()),
            ("refresh_token", require_refresh(credential)?.to_string()),
        ];
        token(net, fields).await.map_err(|(_, e)| e)
    }
}
