//! The loopback server a browser sign-in redirects to (axum on 127.0.0.1,
//! or `PI_OAUTH_CALLBACK_HOST`): it takes the first `GET <path>?code=…`
//! whose `state` matches, hands the code to the flow (which may exchange it
//! before answering, so that the browser page tells the outcome), and
//! answers every other request with an error page. A pasted code or
//! redirect URL can finish the sign-in instead ([`callback_or_pasted`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{LoginIo, OAuthError, Question, QuestionKind};

/// Turns the authorization code (and the callback's whole query) into the
/// sign-in's result.
pub type Complete =
    Arc<dyn Fn(String, Vec<(String, String)>) -> BoxFuture<'static, Result<Value, OAuthError>> + Send + Sync>;

/// A `complete` that returns the code itself.
pub fn code_itself() -> Complete {
    Arc::new(|code, _| Box::pin(async move { Ok(Value::String(code)) }))
}

/// Where and how the server listens.
#[derive(Debug, Clone)]
pub struct CallbackOptions {
    /// "Anthropic", "OpenRouter", … (in pages and errors).
    pub provider_name: &'static str,
    pub host: String,
    /// 0: any free port.
    pub port: u16,
    pub path: String,
    /// The host named in the redirect URI (`localhost` for Anthropic).
    pub redirect_host: Option<String>,
    /// The `state` the callback must carry, when the flow sends one.
    pub state: Option<String>,
    pub timeout: Option<Duration>,
}

/// The callback host: `PI_OAUTH_CALLBACK_HOST`, else 127.0.0.1.
pub fn callback_host() -> String {
    std::env::var("PI_OAUTH_CALLBACK_HOST").ok().filter(|h| !h.trim().is_empty()).unwrap_or_else(|| "127.0.0.1".into())
}

type Outcome = Result<Option<Value>, OAuthError>;

struct Shared {
    options: CallbackOptions,
    complete: Complete,
    claimed: Mutex<bool>,
    done: Mutex<Option<oneshot::Sender<Outcome>>>,
}

impl Shared {
    fn finish(&self, outcome: Outcome) {
        if let Some(tx) = self.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(outcome);
        }
    }

    fn settled(&self) -> bool {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }
}

/// A running callback server; dropping it stops the server.
pub struct CallbackServer {
    pub redirect_uri: String,
    shared: Arc<Shared>,
    result: Option<oneshot::Receiver<Outcome>>,
    stop: CancellationToken,
}

impl CallbackServer {
    /// Bind and serve. Fails when the address cannot be bound.
    pub async fn start(
        options: CallbackOptions,
        complete: Complete,
        cancel: CancellationToken,
    ) -> std::io::Result<CallbackServer> {
        let listener = tokio::net::TcpListener::bind((options.host.as_str(), options.port)).await?;
        let port = listener.local_addr()?.port();
        let host = options.redirect_host.clone().unwrap_or_else(|| options.host.clone());
        let host = if host.contains(':') { format!("[{host}]") } else { host };
        let redirect_uri = format!("http://{host}:{port}{}", options.path);
        let (tx, rx) = oneshot::channel();
        let timeout = options.timeout;
        let name = options.provider_name;
        let shared = Arc::new(Shared { options, complete, claimed: Mutex::new(false), done: Mutex::new(Some(tx)) });
        let stop = CancellationToken::new();
        let router = axum::Router::new().fallback(handle).with_state(shared.clone());
        let (server_stop, watcher) = (stop.clone(), shared.clone());
        tokio::spawn(async move {
            let serve = axum::serve(listener, router).with_graceful_shutdown(server_stop.clone().cancelled_owned());
            let expiry = async {
                match timeout {
                    Some(t) => tokio::time::sleep(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = serve => {}
                _ = cancel.cancelled() => watcher.finish(Err(OAuthError::cancelled())),
                _ = expiry => watcher.finish(Err(OAuthError::refused(format!("{name} sign-in timed out")))),
            }
        });
        Ok(CallbackServer { redirect_uri, shared, result: Some(rx), stop })
    }

    /// The sign-in's result; `None` when [`CallbackServer::cancel`] ended the wait.
    pub async fn wait(&mut self) -> Result<Option<Value>, OAuthError> {
        let Some(rx) = self.result.as_mut() else { return Ok(None) };
        let outcome = rx.await.unwrap_or_else(|_| Err(OAuthError::refused("the OAuth callback server closed")));
        self.result = None;
        outcome
    }

    /// End the wait with nothing, unless a callback is being handled.
    pub fn cancel(&self) {
        if !*self.shared.claimed.lock().unwrap_or_else(|p| p.into_inner()) {
            self.shared.finish(Ok(None));
        }
    }
}

impl Drop for CallbackServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: axum::http::Method,
    uri: Uri,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let options = &shared.options;
    let get = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    if method != axum::http::Method::GET || uri.path() != options.path {
        return page(StatusCode::NOT_FOUND, "Sign-in failed", "This address is not the sign-in callback.");
    }
    if options.state.is_some() && get("state") != options.state {
        return page(StatusCode::BAD_REQUEST, "Sign-in failed", "The sign-in's state does not match.");
    }
    if shared.settled() || std::mem::replace(&mut *shared.claimed.lock().unwrap_or_else(|p| p.into_inner()), true) {
        return page(StatusCode::CONFLICT, "Sign-in failed", "This sign-in was already handled.");
    }
    if let Some(error) = get("error") {
        let detail = get("error_description").unwrap_or(error);
        shared.finish(Err(OAuthError::refused(format!("{} authorization failed: {detail}", options.provider_name))));
        return page(
            StatusCode::BAD_REQUEST,
            "Sign-in failed",
            &format!("{} refused: {detail}", options.provider_name),
        );
    }
    let Some(code) = get("code") else {
        *shared.claimed.lock().unwrap_or_else(|p| p.into_inner()) = false;
        return page(StatusCode::BAD_REQUEST, "Sign-in failed", "The callback carries no authorization code.");
    };
    match (shared.complete)(code, query.clone()).await {
        Ok(value) => {
            shared.finish(Ok(Some(value)));
            let text = format!("You are signed in to {}. This page can be closed.", options.provider_name);
            page(StatusCode::OK, "Signed in", &text)
        }
        Err(e) => {
            let text = format!("{} sign-in failed: {}", options.provider_name, e.message);
            shared.finish(Err(e));
            page(StatusCode::BAD_GATEWAY, "Sign-in failed", &text)
        }
    }
}

fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let escape = |s: &str| html_escape::encode_text(s).into_owned();
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body style=\"font-family:sans-serif;margin:3em\"><h1>{t}</h1><p>{m}</p><p>pi</p></body></html>",
        t = escape(title),
        m = escape(text)
    );
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], body)
        .into_response()
}

/// How a browser sign-in ended.
pub enum Finished {
    /// The callback server's result.
    Callback(Value),
    /// What the user pasted.
    Pasted(String),
}

/// Wait for the callback, or for the user to paste the code or redirect URL
/// (when the browser cannot reach this machine). A callback already being
/// handled wins over a paste.
pub async fn callback_or_pasted(
    io: &dyn LoginIo,
    callback: Option<&mut CallbackServer>,
    question: Question,
) -> Result<Finished, OAuthError> {
    let question = Question { kind: QuestionKind::ManualCode, ..question };
    let Some(callback) = callback else {
        return match io.ask(question).await {
            Some(text) => Ok(Finished::Pasted(text)),
            None => Err(OAuthError::refused("no callback server and no way to paste the code")),
        };
    };
    let asked = async {
        match io.ask(question).await {
            Some(text) => text,
            // Nothing can be pasted: only the callback can finish.
            None => std::future::pending().await,
        }
    };
    tokio::pin!(asked);
    let pasted = {
        let waited = callback.wait();
        tokio::pin!(waited);
        tokio::select! {
            result = &mut waited => {
                return match result? {
                    Some(value) => Ok(Finished::Callback(value)),
                    None => Err(OAuthError::cancelled()),
                };
            }
            text = &mut asked => text,
        }
    };
    // Pasted: a callback being handled still wins.
    callback.cancel();
    match callback.wait().await? {
        Some(value) => Ok(Finished::Callback(value)),
        None => Ok(Finished::Pasted(pasted)),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    #[tokio::test]
    async fn the_page_shows_markup_in_its_texts_as_text() {
        let response = super::page(StatusCode::BAD_GATEWAY, "a<b", "x & 'y' \"z\" <i>");
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let body = std::str::from_utf8(&body).unwrap();
        assert!(body.contains("<title>a&lt;b</title>"), "{body}");
        assert!(body.contains("<h1>a&lt;b</h1><p>x &amp; 'y' \"z\" &lt;i&gt;</p>"), "{body}");
    }
}
