//! Anthropic (Claude Pro/Max): a browser sign-in with PKCE whose callback
//! server prefers port 53692 (any free port otherwise), or a "copy code"
//! sign-in for headless machines; tokens come from a JSON token endpoint and
//! expire five minutes early.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::answer::{Answer, Field};
use super::callback::{CallbackOptions, CallbackServer, Finished, callback_host, callback_or_pasted, code_itself};
use super::http::with_query;
use super::{
    BROWSER, FIVE_MINUTES_MS, FlowInfo, LoginContext, LoginEvent, LoginIo, Method, Net, OAuthError, OAuthFlow,
    Question, QuestionKind, expiry_in, parse_pasted, pkce, require_refresh,
};

const CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
const AUTHORIZE_URL: &str = "https://claude.ai/oauth/authorize";
pub const TOKEN_URL: &str = "https://platform.claude.com/v1/oauth/token";
const CALLBACK_PORT: u16 = 53692;
const CALLBACK_PATH: &str = "/callback";
const COPY_CODE_REDIRECT: &str = "https://platform.claude.com/oauth/code/callback";
const SCOPES: &str =
    "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload";

const COPY_CODE: Method = Method { id: "copy_code", label: "Copy code (headless)" };

pub struct Anthropic;

fn authorize_url(redirect_uri: &str, challenge: &str, state: &str) -> String {
    with_query(
        AUTHORIZE_URL,
        &[
            ("code", "true"),
            ("client_id", CLIENT_ID),
            ("response_type", "code"),
            ("redirect_uri", redirect_uri),
            ("scope", SCOPES),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("state", state),
        ],
    )
}

/// `{type, refresh, access, expires}` from a token response.
fn credential(body: &Value) -> Result<Value, OAuthError> {
    let (what, a) = ("Anthropic token response", Answer::of(body));
    let seconds = a
        .expires_in
        .positive()
        .ok_or_else(|| OAuthError::transient(format!("{what}: no `expires_in`: {}", super::clip(body))))?;
    let required = |field: &Field, name: &str| {
        field.filled().map(str::to_string).ok_or_else(|| {
            OAuthError::transient(format!("{what}: the response has no `{name}`: {}", super::clip(body)))
        })
    };
    Ok(json!({
        "type": "oauth",
        "refresh": required(&a.refresh_token, "refresh_token")?,
        "access": required(&a.access_token, "access_token")?,
        "expires": expiry_in(seconds, FIVE_MINUTES_MS),
    }))
}

async fn token(net: &Net, body: Value, what: &str) -> Result<Value, OAuthError> {
    let response = net.post_json(TOKEN_URL, &[], body).await?;
    if !response.ok() {
        return Err(response.error(what));
    }
    if response.json.is_null() {
        return Err(OAuthError::transient(format!("{what}: the answer is not JSON: {}", response.text)));
    }
    credential(&response.json)
}

async fn exchange(net: &Net, code: &str, state: &str, verifier: &str, redirect_uri: &str) -> Result<Value, OAuthError> {
    let body = json!({
        "grant_type": "authorization_code",
        "client_id": CLIENT_ID,
        "code": code,
        "state": state,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    });
    token(net, body, "Anthropic token exchange").await
}

async fn browser(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let pkce = pkce::generate();
    let options = |port| CallbackOptions {
        provider_name: "Anthropic",
        host: callback_host(),
        port,
        path: CALLBACK_PATH.into(),
        redirect_host: Some("localhost".into()),
        state: Some(pkce.verifier.clone()),
        timeout: None,
    };
    let mut callback = match CallbackServer::start(options(CALLBACK_PORT), code_itself(), ctx.cancel.clone()).await {
        Ok(server) => Some(server),
        Err(_) => CallbackServer::start(options(0), code_itself(), ctx.cancel.clone()).await.ok(),
    };
    let redirect_uri = callback
        .as_ref()
        .map_or_else(|| format!("http://localhost:{CALLBACK_PORT}{CALLBACK_PATH}"), |c| c.redirect_uri.clone());
    io.notify(LoginEvent::AuthUrl {
        url: authorize_url(&redirect_uri, &pkce.challenge, &pkce.verifier),
        instructions: Some(
            "Sign in in the browser. If it runs on another machine, paste the final redirect URL here.".into(),
        ),
    });
    let question = Question {
        kind: QuestionKind::ManualCode,
        message: "Finish the sign-in in the browser, or paste the authorization code or redirect URL".into(),
        placeholder: Some(redirect_uri.clone()),
    };
    let (code, state) = match callback_or_pasted(io, callback.as_mut(), question).await? {
        Finished::Callback(Value::String(code)) => (code, pkce.verifier.clone()),
        Finished::Callback(_) => return Err(OAuthError::refused("the callback carried no code")),
        Finished::Pasted(text) => {
            let (code, state) = parse_pasted(&text);
            if state.as_deref().is_some_and(|s| s != pkce.verifier) {
                return Err(OAuthError::refused("OAuth state mismatch"));
            }
            let code = code.ok_or_else(|| OAuthError::refused("Missing authorization code"))?;
            (code, state.unwrap_or_else(|| pkce.verifier.clone()))
        }
    };
    drop(callback);
    io.notify(LoginEvent::Progress("Exchanging the authorization code for tokens…".into()));
    exchange(&ctx.net, &code, &state, &pkce.verifier, &redirect_uri).await
}

async fn copy_code(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let pkce = pkce::generate();
    io.notify(LoginEvent::AuthUrl {
        url: authorize_url(COPY_CODE_REDIRECT, &pkce.challenge, &pkce.verifier),
        instructions: Some("Sign in in the browser, then paste the code Anthropic shows here.".into()),
    });
    let question = Question {
        kind: QuestionKind::ManualCode,
        message: "The code Anthropic shows after the sign-in".into(),
        placeholder: Some("code#state".into()),
    };
    let text = io.ask(question).await.ok_or_else(|| OAuthError::refused("no code was entered"))?;
    let (code, state) = parse_pasted(&text);
    if state.as_deref().is_some_and(|s| s != pkce.verifier) {
        return Err(OAuthError::refused("OAuth state mismatch"));
    }
    let code = code.ok_or_else(|| OAuthError::refused("Missing authorization code"))?;
    let state = state.unwrap_or_else(|| pkce.verifier.clone());
    io.notify(LoginEvent::Progress("Exchanging the authorization code for tokens…".into()));
    exchange(&ctx.net, &code, &state, &pkce.verifier, COPY_CODE_REDIRECT).await
}

const INFO: FlowInfo = FlowInfo { provider: "anthropic", methods: &[BROWSER, COPY_CODE] };

#[async_trait]
impl OAuthFlow for Anthropic {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        match ctx.method {
            "copy_code" => copy_code(ctx, io).await,
            _ => browser(ctx, io).await,
        }
    }

    async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError> {
        let body = json!({
            "grant_type": "refresh_token",
            "client_id": CLIENT_ID,
            "refresh_token": require_refresh(credential)?,
        });
        token(net, body, "Anthropic token refresh").await
    }
}
