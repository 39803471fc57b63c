//! OpenAI (Sign in with ChatGPT, for the `openai` provider): a browser
//! sign-in that registers this installation as an agent host (its device id,
//! `deviceId` in settings.json) and gets a client id issued in the callback
//! on `127.0.0.1:1455`; the token must grant direct use of ChatGPT tokens on
//! the Responses API.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::answer::{Answer, Field, Stored};
use super::callback::{CallbackOptions, CallbackServer, Finished, callback_host, callback_or_pasted};
use super::http::with_query;
use super::{
    BROWSER, FlowInfo, LoginContext, LoginEvent, LoginIo, Net, OAuthError, OAuthFlow, Question, QuestionKind,
    expiry_in, pkce, require_refresh,
};

const DYNAMIC_CLIENT_ID: &str = "dynamic_agent_client";
const AUTHORIZE_URL: &str = "https://auth.openai.com/api/accounts/authorize";
pub const TOKEN_URL: &str = "https://auth.openai.com/api/accounts/oauth/token";
const RESOURCE: &str = "https://api.openai.com/v1";
const CALLBACK_PORT: u16 = 1455;
const CALLBACK_PATH: &str = "/auth/callback";
const REDIRECT_URI: &str = "http://127.0.0.1:1455/auth/callback";
const DIRECT_SCOPE: &str = "chatgpt.tokens.use.direct";
const SCOPE: &str = "openid profile email offline_access resource.invoke chatgpt.tokens.use.direct";
const EXPIRY_MARGIN_MS: i64 = 3 * 60 * 1000;

pub struct OpenAiChatGpt;

/// `code` and the issued client id from a callback's query.
fn from_callback(query: &[(String, String)], state: &str) -> Result<(String, String), OAuthError> {
    let get = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_string());
    if let Some(error) = get("error") {
        return Err(OAuthError::refused(format!("ChatGPT authorization failed: {error}")));
    }
    let code =
        get("code").filter(|c| !c.is_empty()).ok_or_else(|| OAuthError::refused("Missing authorization code"))?;
    let got_state = get("state").ok_or_else(|| OAuthError::refused("Missing OAuth state"))?;
    if got_state != state {
        return Err(OAuthError::refused("OAuth state mismatch"));
    }
    let client_id = get("client_id")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| OAuthError::refused("the OpenAI callback did not carry an issued client id"))?;
    Ok((code, client_id))
}

fn credential(body: &Value, client_id: &str) -> Result<Value, OAuthError> {
    let a = Answer::of(body);
    let field = |field: &Field, name: &str| {
        field
            .text()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
            .ok_or_else(|| OAuthError::transient(format!("the OpenAI token response has no valid {name}")))
    };
    let (access, refresh, scope) =
        (field(&a.access_token, "access_token")?, field(&a.refresh_token, "refresh_token")?, field(&a.scope, "scope")?);
    let seconds = a
        .expires_in
        .number()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| OAuthError::transient("the OpenAI token response has no valid expires_in"))?;
    let scopes: Vec<&str> = scope.split_whitespace().collect();
    if !scopes.contains(&DIRECT_SCOPE) {
        return Err(OAuthError::refused(format!("the OpenAI grant does not include {DIRECT_SCOPE}")));
    }
    Ok(json!({
        "type": "oauth",
        "access": access,
        "refresh": refresh,
        "expires": expiry_in(seconds, EXPIRY_MARGIN_MS),
        "clientId": client_id,
        "scopes": scopes,
    }))
}

async fn token(net: &Net, fields: Vec<(&'static str, String)>) -> Result<Value, OAuthError> {
    let response = net.post_form(TOKEN_URL, &[], fields).await?;
    if !response.ok() {
        return Err(response.error("OpenAI OAuth token request"));
    }
    if !response.json.is_object() {
        return Err(OAuthError::transient("the OpenAI OAuth token response is not an object"));
    }
    Ok(response.json)
}

/// The installation's agent host id, `urn:uuid:<device id>`.
fn agent_host_id(device_id: Option<&str>) -> Result<String, OAuthError> {
    let id = device_id.filter(|id| uuid::Uuid::parse_str(id).is_ok() && id.len() == 36).ok_or_else(|| {
        OAuthError::refused("Sign in with ChatGPT needs this installation's device id (a UUID in settings.json)")
    })?;
    Ok(format!("urn:uuid:{}", id.to_lowercase()))
}

async fn browser(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let host_id = agent_host_id(ctx.device_id.as_deref())?;
    let pkce = pkce::generate();
    let state = pkce::random_base64url(32);
    let nonce = pkce::random_base64url(32);
    let expected = state.clone();
    let complete: super::callback::Complete = std::sync::Arc::new(move |_code, query| {
        let result = from_callback(&query, &expected).map(|(code, client)| json!({"code": code, "clientId": client}));
        Box::pin(async move { result })
    });
    let options = CallbackOptions {
        provider_name: "ChatGPT",
        host: callback_host(),
        port: CALLBACK_PORT,
        path: CALLBACK_PATH.into(),
        redirect_host: Some("127.0.0.1".into()),
        state: Some(state.clone()),
        timeout: None,
    };
    let mut server = CallbackServer::start(options, complete, ctx.cancel.clone()).await.map_err(|e| {
        OAuthError::refused(format!(
            "port {CALLBACK_PORT} is in use ({e}), probably by an unfinished login elsewhere or by the Codex CLI; cancel it and try again"
        ))
    })?;
    let url = with_query(
        AUTHORIZE_URL,
        &[
            ("client_id", DYNAMIC_CLIENT_ID),
            ("agent_name_hint", "Pi"),
            ("ext_agent_host_id", &host_id),
            ("response_type", "code"),
            ("redirect_uri", REDIRECT_URI),
            ("resource", RESOURCE),
            ("scope", SCOPE),
            ("state", &state),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("nonce", &nonce),
        ],
    );
    io.notify(LoginEvent::AuthUrl {
        url,
        instructions: Some(
            "Sign in in the browser. If the callback does not arrive, paste the final redirect URL here.".into(),
        ),
    });
    let question = Question {
        kind: QuestionKind::ManualCode,
        message: "Finish the sign-in in the browser, or paste the final redirect URL".into(),
        placeholder: Some(REDIRECT_URI.into()),
    };
    let (code, client_id) = match callback_or_pasted(io, Some(&mut server), question).await? {
        Finished::Callback(found) => {
            let get = |k: &str| found.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            (get("code"), get("clientId"))
        }
        Finished::Pasted(text) => {
            let url = url::Url::parse(text.trim()).map_err(|_| OAuthError::refused("Paste the full callback URL"))?;
            if !text.trim().starts_with(REDIRECT_URI) {
                return Err(OAuthError::refused(format!("The pasted callback URL must start with {REDIRECT_URI}")));
            }
            let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
            from_callback(&pairs, &state)?
        }
    };
    drop(server);
    io.notify(LoginEvent::Progress("Exchanging the authorization code for tokens…".into()));
    let body = token(
        &ctx.net,
        vec![
            ("grant_type", "authorization_code".into()),
            ("client_id", client_id.clone()),
            ("code", code),
            ("code_verifier", pkce.verifier.clone()),
            ("redirect_uri", REDIRECT_URI.into()),
            ("resource", RESOURCE.into()),
        ],
    )
    .await?;
    if Answer::of(&body).id_token.text().is_none_or(|t| t.trim().is_empty()) {
        return Err(OAuthError::transient("the OpenAI token response has no ID token"));
    }
    credential(&body, &client_id)
}

const INFO: FlowInfo = FlowInfo { provider: "openai", methods: &[BROWSER] };

#[async_trait]
impl OAuthFlow for OpenAiChatGpt {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        browser(ctx, io).await
    }

    async fn refresh(&self, net: &Net, stored: &Value) -> Result<Value, OAuthError> {
        let fields = Stored::of(stored);
        let client_id = fields
            .client_id
            .text()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| OAuthError::refused("the stored OpenAI credential has no issued client id"))?;
        let body = token(
            net,
            vec![
                ("grant_type", "refresh_token".into()),
                ("client_id", client_id.to_string()),
                ("refresh_token", require_refresh(stored)?.to_string()),
                ("resource", RESOURCE.into()),
            ],
        )
        .await?;
        credential(&body, client_id)
    }
}
