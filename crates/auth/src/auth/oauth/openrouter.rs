//! OpenRouter: a browser sign-in with PKCE whose code is exchanged for a
//! permanent API key (stored as an OAuth credential that never expires and
//! has nothing to refresh). The callback listens on a free port at a random
//! path, since OpenRouter sends no `state`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::callback::{CallbackOptions, CallbackServer, Complete, Finished, callback_host, callback_or_pasted};
use super::http::with_query;
use super::{
    BROWSER, FlowInfo, LoginContext, LoginEvent, LoginIo, Net, OAuthError, OAuthFlow, Question, QuestionKind, pkce,
};

const AUTHORIZE_URL: &str = "https://openrouter.ai/auth";
pub const TOKEN_URL: &str = "https://openrouter.ai/api/v1/auth/keys";
const LOGIN_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// JavaScript's `Number.MAX_SAFE_INTEGER`: pi's "never expires".
const NEVER: i64 = 9_007_199_254_740_991;

pub struct OpenRouter;

fn detail(body: &Value) -> Option<String> {
    ["error_description", "message", "error"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_str).map(str::to_string))
        .or_else(|| body.pointer("/error/message").and_then(Value::as_str).map(str::to_string))
}

async fn exchange(net: Net, code: String, verifier: String) -> Result<Value, OAuthError> {
    let body = json!({"code": code, "code_verifier": verifier, "code_challenge_method": "S256"});
    let r = net.post_json(TOKEN_URL, &[], body).await?;
    if !r.ok() {
        let suffix = detail(&r.json).map(|d| format!(": {d}")).unwrap_or_default();
        return Err(OAuthError {
            message: format!("OpenRouter OAuth key exchange failed (HTTP {}){suffix}", r.status),
            permanent: r.refused(),
        });
    }
    let key = r.answer().key.filled().map(str::to_string);
    let key = key.ok_or_else(|| OAuthError::transient("the OpenRouter answer carries no \"key\""))?;
    Ok(json!({"type": "oauth", "access": key, "refresh": "", "expires": NEVER}))
}

async fn browser(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let pkce = pkce::generate();
    let (net, verifier) = (ctx.net.clone(), pkce.verifier.clone());
    let complete: Complete = Arc::new(move |code, _| Box::pin(exchange(net.clone(), code, verifier.clone())));
    let options = CallbackOptions {
        provider_name: "OpenRouter",
        host: callback_host(),
        port: 0,
        path: format!("/oauth/callback/{}", uuid::Uuid::new_v4()),
        redirect_host: None,
        state: None,
        timeout: Some(LOGIN_TIMEOUT),
    };
    let mut callback = CallbackServer::start(options, complete, ctx.cancel.clone())
        .await
        .map_err(|e| OAuthError::refused(format!("cannot start the OAuth callback server: {e}")))?;
    let redirect = callback.redirect_uri.clone();
    let url = with_query(
        AUTHORIZE_URL,
        &[("callback_url", &redirect), ("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    io.notify(LoginEvent::Progress(format!("Listening for the OpenRouter callback on {redirect}")));
    io.notify(LoginEvent::AuthUrl {
        url,
        instructions: Some(
            "Sign in in the browser. If it runs on another machine, paste the final redirect URL here.".into(),
        ),
    });
    let question = Question {
        kind: QuestionKind::ManualCode,
        message: "Finish the sign-in in the browser, or paste the authorization code or redirect URL".into(),
        placeholder: Some(redirect.clone()),
    };
    match callback_or_pasted(io, Some(&mut callback), question).await? {
        Finished::Callback(credential) => Ok(credential),
        Finished::Pasted(text) => {
            drop(callback);
            let code = match super::parse_pasted(&text) {
                (Some(code), _) => code,
                _ => return Err(OAuthError::refused("Missing authorization code")),
            };
            io.notify(LoginEvent::Progress("Exchanging the authorization code for an API key…".into()));
            exchange(ctx.net.clone(), code, pkce.verifier.clone()).await
        }
    }
}

const INFO: FlowInfo = FlowInfo { provider: "openrouter", methods: &[BROWSER] };

#[async_trait]
impl OAuthFlow for OpenRouter {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        browser(ctx, io).await
    }

    /// The key does not expire: the credential stays as it is.
    async fn refresh(&self, _net: &Net, credential: &Value) -> Result<Value, OAuthError> {
        Ok(credential.clone())
    }
}
