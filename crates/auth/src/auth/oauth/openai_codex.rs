//! OpenAI Codex (ChatGPT Plus/Pro): a browser sign-in with PKCE on the
//! Codex CLI's callback (`localhost:1455`, shared with the Codex CLI: when
//! the port is taken, the redirect URL is pasted instead), or a device code.
//! The credential carries the ChatGPT account id read from the access token.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::callback::{CallbackOptions, CallbackServer, Finished, callback_host, callback_or_pasted, code_itself};
use super::device::{Poll, Timing, poll_until};
use super::http::with_query;
use super::{
    BROWSER, DEVICE_CODE, FlowInfo, LoginContext, LoginEvent, LoginIo, Net, OAuthError, OAuthFlow, Question,
    QuestionKind, expiry_in, jwt_payload, parse_pasted, pkce, require_refresh,
};

const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
const AUTHORIZE_URL: &str = "https://auth.openai.com/oauth/authorize";
pub const TOKEN_URL: &str = "https://auth.openai.com/oauth/token";
const REDIRECT_URI: &str = "http://localhost:1455/auth/callback";
const DEVICE_USER_CODE_URL: &str = "https://auth.openai.com/api/accounts/deviceauth/usercode";
const DEVICE_TOKEN_URL: &str = "https://auth.openai.com/api/accounts/deviceauth/token";
const DEVICE_VERIFICATION_URI: &str = "https://auth.openai.com/codex/device";
const DEVICE_REDIRECT_URI: &str = "https://auth.openai.com/deviceauth/callback";
const DEVICE_CODE_SECONDS: f64 = 15.0 * 60.0;
const SCOPE: &str = "openid profile email offline_access";

pub struct OpenAiCodex;

/// The ChatGPT account id in an access token's claims.
pub fn account_id(access: &str) -> Option<String> {
    crate::provider::openai::codex::chatgpt_account_id(jwt_payload(access)?)
}

async fn token(net: &Net, fields: Vec<(&'static str, String)>, operation: &str) -> Result<Value, OAuthError> {
    let response = net.post_form(TOKEN_URL, &[], fields).await?;
    if !response.ok() {
        return Err(response.error(&format!("OpenAI Codex token {operation}")));
    }
    let (body, a) = (&response.json, response.answer());
    let (Some(access), Some(refresh), Some(seconds)) =
        (a.access_token.filled(), a.refresh_token.filled(), a.expires_in.number())
    else {
        return Err(OAuthError::transient(format!(
            "OpenAI Codex token {operation}: the response lacks fields: {}",
            super::clip(body)
        )));
    };
    let account =
        account_id(access).ok_or_else(|| OAuthError::refused("the access token carries no ChatGPT account id"))?;
    Ok(json!({
        "type": "oauth",
        "access": access,
        "refresh": refresh,
        "expires": expiry_in(seconds, 0),
        "accountId": account,
    }))
}

async fn exchange(net: &Net, code: &str, verifier: &str, redirect_uri: &str) -> Result<Value, OAuthError> {
    let fields = vec![
        ("grant_type", "authorization_code".to_string()),
        ("client_id", CLIENT_ID.to_string()),
        ("code", code.to_string()),
        ("code_verifier", verifier.to_string()),
        ("redirect_uri", redirect_uri.to_string()),
    ];
    token(net, fields, "exchange").await
}

async fn browser(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let pkce = pkce::generate();
    let state = pkce::random_hex(16);
    let url = with_query(
        AUTHORIZE_URL,
        &[
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", REDIRECT_URI),
            ("scope", SCOPE),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("id_token_add_organizations", "true"),
            ("codex_cli_simplified_flow", "true"),
            ("originator", "pi"),
        ],
    );
    let options = CallbackOptions {
        provider_name: "OpenAI",
        host: callback_host(),
        port: 1455,
        path: "/auth/callback".into(),
        redirect_host: None,
        state: Some(state.clone()),
        timeout: None,
    };
    let mut callback = CallbackServer::start(options, code_itself(), ctx.cancel.clone()).await.ok();
    io.notify(LoginEvent::AuthUrl { url, instructions: Some("Sign in in the browser to finish.".into()) });
    let question = Question {
        kind: QuestionKind::ManualCode,
        message: "Finish the sign-in in the browser, or paste the authorization code or redirect URL".into(),
        placeholder: Some(REDIRECT_URI.into()),
    };
    let code = match callback_or_pasted(io, callback.as_mut(), question).await? {
        Finished::Callback(Value::String(code)) => code,
        Finished::Callback(_) => return Err(OAuthError::refused("the callback carried no code")),
        Finished::Pasted(text) => {
            let (code, pasted_state) = parse_pasted(&text);
            if pasted_state.is_some_and(|s| s != state) {
                return Err(OAuthError::refused("State mismatch"));
            }
            code.ok_or_else(|| OAuthError::refused("Missing authorization code"))?
        }
    };
    drop(callback);
    exchange(&ctx.net, &code, &pkce.verifier, REDIRECT_URI).await
}

async fn device_code(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let response = net.post_json(DEVICE_USER_CODE_URL, &[], json!({"client_id": CLIENT_ID})).await?;
    if response.status == 404 {
        return Err(OAuthError::refused(
            "OpenAI Codex device code login is not enabled for this server; use the browser sign-in",
        ));
    }
    if !response.ok() {
        return Err(response.error("OpenAI Codex device code request"));
    }
    let (body, a) = (&response.json, response.answer());
    let interval = match a.interval.value() {
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => a.interval.number(),
    };
    let (Some(device_auth_id), Some(user_code), Some(interval)) =
        (a.device_auth_id.text(), a.user_code.text(), interval.filter(|i| i.is_finite() && *i >= 0.0))
    else {
        return Err(OAuthError::transient(format!("invalid OpenAI Codex device code response: {}", super::clip(body))));
    };
    let timing = Timing::announce(
        io,
        user_code,
        DEVICE_VERIFICATION_URI.to_string(),
        Some(interval),
        Some(DEVICE_CODE_SECONDS),
        false,
    );
    let poll_body = json!({"device_auth_id": device_auth_id, "user_code": user_code});
    let (code, verifier) = poll_until(net, timing, || async {
        let r = net.post_json(DEVICE_TOKEN_URL, &[], poll_body.clone()).await?;
        let a = r.answer();
        if r.ok() {
            return Ok(match (a.authorization_code.text(), a.code_verifier.text()) {
                (Some(c), Some(v)) => Poll::Complete((c.to_string(), v.to_string())),
                _ => Poll::Failed(format!("invalid OpenAI Codex device token response: {}", super::clip(&r.json))),
            });
        }
        if matches!(r.status, 403 | 404) {
            return Ok(Poll::Pending);
        }
        Ok(match a.error_code().as_deref() {
            Some("deviceauth_authorization_pending") => Poll::Pending,
            Some("slow_down") => Poll::SlowDown(None),
            _ => Poll::Failed(r.error("OpenAI Codex device authorization").message),
        })
    })
    .await?;
    exchange(net, &code, &verifier, DEVICE_REDIRECT_URI).await
}

const INFO: FlowInfo = FlowInfo { provider: "openai-codex", methods: &[BROWSER, DEVICE_CODE] };

#[async_trait]
impl OAuthFlow for OpenAiCodex {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        match ctx.method {
            "device_code" => device_code(ctx, io).await,
            _ => browser(ctx, io).await,
        }
    }

    async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError> {
        let fields = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", require_refresh(credential)?.to_string()),
            ("client_id", CLIENT_ID.to_string()),
        ];
        token(net, fields, "refresh").await
    }
}
