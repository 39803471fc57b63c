//! A wire API called with an OAuth login: each call first gets the login's
//! current credential from the [`Broker`] (refreshed when it expires soon),
//! and a call the provider answers with HTTP 401 is made once more with a
//! fresh credential. A login that cannot be refreshed ends the call with
//! one clear error naming the provider and `pi login <provider>`.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::broker::{AuthError, Broker};
use super::oauth::RequestAuth;
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream};

/// `inner`, authenticated by the OAuth login of `provider`.
pub struct OAuthProvider {
    inner: Arc<dyn Provider>,
    broker: Arc<Broker>,
    provider: String,
}

impl OAuthProvider {
    pub fn new(inner: Arc<dyn Provider>, broker: Arc<Broker>, provider: &str) -> OAuthProvider {
        OAuthProvider { inner, broker, provider: provider.to_string() }
    }
}

/// The request with the login's credential in it (pi's request auth: the
/// key, the headers on top of the configured ones, the account's base URL).
pub fn apply(mut request: ProviderRequest, auth: &RequestAuth) -> ProviderRequest {
    request.api_key = auth.api_key.clone();
    for (name, value) in &auth.headers {
        request.headers.retain(|k, _| !k.eq_ignore_ascii_case(name));
        request.headers.insert(name.clone(), value.clone());
    }
    if let Some(base) = &auth.base_url {
        request.model.base_url = base.clone();
    }
    request
}

impl From<AuthError> for ProviderError {
    fn from(e: AuthError) -> ProviderError {
        let kind = if e.retryable() { ProviderErrorKind::Transient } else { ProviderErrorKind::Auth };
        ProviderError::new(kind, e.to_string())
    }
}

fn failed(err: ProviderError) -> ProviderStream {
    futures::stream::iter([Err(err)]).boxed()
}

/// Hide a token the provider may echo back in an error.
fn hide(mut err: ProviderError, token: &str) -> ProviderError {
    if token.len() >= 8 {
        err.message = err.message.replace(token, "***");
    }
    err
}

impl Provider for OAuthProvider {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let (inner, broker, provider) = (self.inner.clone(), self.broker.clone(), self.provider.clone());
        let call = async move {
            let resolved = tokio::select! {
                biased;
                _ = cancel.cancelled() => return failed(ProviderError::aborted()),
                r = broker.request_auth(&provider) => r,
            };
            let (auth, used) = match resolved {
                Err(e) => return failed(e.into()),
                // Logged out meanwhile: the request goes as configured.
                Ok(None) => return inner.stream(request, cancel),
                Ok(Some(found)) => found,
            };
            let again = request.clone();
            let mut first = inner.stream(apply(request, &auth), cancel.clone());
            // Fields an API knows before its request (Codex's thinking level)
            // are not the answer: the first other item tells whether it was a 401.
            let mut known = Vec::new();
            let head = loop {
                match first.next().await {
                    Some(Ok(field @ ProviderEvent::MessageField { .. })) => known.push(Ok(field)),
                    other => break other,
                }
            };
            match head {
                Some(Err(e)) if e.status == Some(401) => {
                    let fresh = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return failed(ProviderError::aborted()),
                        r = broker.after_rejection(&provider, &used) => r,
                    };
                    match fresh {
                        Ok(Some((auth, _))) => {
                            tracing::debug!("{provider} rejected the access token: calling again with a fresh one");
                            inner.stream(apply(again, &auth), cancel)
                        }
                        Ok(None) => failed(hide(e, &used)),
                        Err(refresh) => failed(refresh.into()),
                    }
                }
                Some(item) => {
                    known.push(item.map_err(|e| hide(e, &used)));
                    futures::stream::iter(known).chain(first).boxed()
                }
                None => futures::stream::iter(known).boxed(),
            }
        };
        futures::stream::once(call).flatten().boxed()
    }
}

#[cfg(test)]
mod tests {
    use pi_fake_oauth::FakeOAuth;
    use pi_fake_server::{FakeServer, Reply};

    use super::*;
    use crate::auth::file::AuthFile;
    use crate::auth::oauth::{Net, now_ms};
    use crate::model::{Model, ModelCost};
    use crate::provider::anthropic::AnthropicMessages;
    use crate::provider::http::HttpClient;
    use crate::provider::{ProviderEvent, ToolSpec};

    /// Every event of a call, and the error that ended it.
    async fn collect(provider: &dyn Provider, request: ProviderRequest) -> (Vec<ProviderEvent>, Option<ProviderError>) {
        let mut stream = provider.stream(request, CancellationToken::new());
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => events.push(e),
                Err(e) => return (events, Some(e)),
            }
        }
        (events, None)
    }

    fn simple_request(model: Model, text: &str) -> ProviderRequest {
        let user = crate::message::AgentMessage::User(crate::message::UserMessage {
            content: crate::message::UserContent::Blocks(vec![crate::message::ContentBlock::text(text)]),
            timestamp: 1,
            extra: Default::default(),
        });
        ProviderRequest {
            model,
            system_prompt: "You are terse.".into(),
            messages: vec![user],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "Run a command".into(),
                parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            }],
            thinking_level: crate::model::ThinkingLevel::Off,
            api_key: Some("sk-test".into()),
            headers: Default::default(),
            max_tokens: None,
            session_id: None,
            credential: None,
            env: Default::default(),
            api_options: Default::default(),
        }
    }

    fn claude(base_url: &str) -> Model {
        Model {
            id: "claude-test".into(),
            name: "Claude Test".into(),
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            base_url: base_url.into(),
            reasoning: false,
            input: vec!["text".into()],
            context_window: 200_000,
            max_tokens: 8192,
            cost: ModelCost::default(),
            headers: None,
            thinking_level_map: None,
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            compat: None,
            extra: Default::default(),
        }
    }

    struct Setup {
        fake: FakeOAuth,
        server: FakeServer,
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        provider: OAuthProvider,
    }

    async fn setup(expires_in_ms: i64) -> Setup {
        let fake = FakeOAuth::start().await.unwrap();
        let server = FakeServer::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let cred = fake.credential("anthropic", now_ms() + expires_in_ms);
        std::fs::write(&path, serde_json::json!({"anthropic": cred}).to_string()).unwrap();
        let broker = Arc::new(Broker::new(AuthFile::new(path.clone()), Net::with_route(fake.router())));
        let inner: Arc<dyn Provider> = Arc::new(AnthropicMessages::new(HttpClient::new().unwrap()));
        let provider = OAuthProvider::new(inner, broker, "anthropic");
        Setup { fake, server, _dir: dir, path, provider }
    }

    fn stored_access(path: &std::path::Path) -> String {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v["anthropic"]["access"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn an_expired_login_is_refreshed_before_the_call() {
        let s = setup(-1).await;
        s.server.push(Reply::text("hello"));
        let mut request = simple_request(claude(&s.server.url()), "hi");
        request.api_key = Some("sk-ant-oat01-stale-from-start".into());
        let (_, err) = collect(&s.provider, request).await;
        assert_eq!(err, None);
        let sent = s.server.requests()[0].header("authorization").unwrap().to_string();
        assert_eq!(sent, format!("Bearer {}", stored_access(&s.path)));
        assert_eq!(s.fake.refreshes("anthropic"), 1);
    }

    #[tokio::test]
    async fn a_401_is_answered_by_one_refresh_and_one_more_call() {
        let s = setup(60 * 60 * 1000).await;
        let before = stored_access(&s.path);
        s.server.push(Reply::error(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ));
        s.server.push(Reply::text("hello again"));
        let (events, err) = collect(&s.provider, simple_request(claude(&s.server.url()), "hi")).await;
        assert_eq!(err, None, "{events:?}");
        let requests = s.server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {before}").as_str()));
        let after = stored_access(&s.path);
        assert_ne!(after, before);
        assert_eq!(requests[1].header("authorization"), Some(format!("Bearer {after}").as_str()));
        assert_eq!(s.fake.refreshes("anthropic"), 1);
    }

    #[tokio::test]
    async fn a_second_401_is_reported_and_a_revoked_login_says_to_log_in_again() {
        let s = setup(60 * 60 * 1000).await;
        for _ in 0..2 {
            s.server
                .push(Reply::error(401, r#"{"type":"error","error":{"type":"authentication_error","message":"no"}}"#));
        }
        let (_, err) = collect(&s.provider, simple_request(claude(&s.server.url()), "hi")).await;
        let err = err.expect("the second 401 ends the call");
        assert_eq!(err.status, Some(401));
        assert_eq!(s.server.requests().len(), 2, "called once more, not again and again");

        s.fake.revoke();
        s.server.push(Reply::error(401, r#"{"type":"error","error":{"type":"authentication_error","message":"no"}}"#));
        let (_, err) = collect(&s.provider, simple_request(claude(&s.server.url()), "hi")).await;
        let err = err.unwrap();
        assert_eq!(err.kind, ProviderErrorKind::Auth);
        assert!(err.message.contains("Log in again with `pi login anthropic`"), "{}", err.message);
    }
}
