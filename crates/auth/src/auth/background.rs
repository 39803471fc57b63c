//! A login for a protocol front end (the JSON-RPC `login` method, ACP
//! `authenticate`): it runs in the background, the front end hears as soon
//! as the sign-in URL or device code is known, and the login completes on
//! its own (the callback arrives, the device code is granted) or ends after
//! [`LOGIN_TIMEOUT`]. Nobody can paste a code here: browser sign-ins finish
//! through the callback server. A new login to the same provider cancels
//! the one still waiting (it holds the provider's callback port).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::login::{self, LoginError, LoginRequest, LoginStarted};
use super::oauth::{LoginEvent, LoginIo, Net, Question, QuestionKind};

/// Longest a background login waits for the user.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The login's way to a front end: the first URL or code goes out, the
/// rest is logged; text questions get the request's answer.
struct FrontEnd {
    first: Mutex<Option<oneshot::Sender<LoginEvent>>>,
    answer: Option<String>,
    provider: String,
}

#[async_trait]
impl LoginIo for FrontEnd {
    fn notify(&self, event: LoginEvent) {
        match &event {
            LoginEvent::AuthUrl { url, .. } => tracing::info!("{} sign-in: open {url}", self.provider),
            LoginEvent::DeviceCode { user_code, verification_uri, .. } => {
                tracing::info!("{} sign-in: open {verification_uri} and enter {user_code}", self.provider)
            }
            LoginEvent::Progress(text) => tracing::info!("{} sign-in: {text}", self.provider),
        }
        if matches!(event, LoginEvent::AuthUrl { .. } | LoginEvent::DeviceCode { .. })
            && let Some(tx) = self.first.lock().unwrap_or_else(|p| p.into_inner()).take()
        {
            let _ = tx.send(event);
        }
    }

    async fn ask(&self, question: Question) -> Option<String> {
        match question.kind {
            QuestionKind::Text => self.answer.clone(),
            QuestionKind::ManualCode => None,
        }
    }
}

/// The logins waiting, by provider: (login number, its cancellation).
fn waiting() -> &'static Mutex<HashMap<String, (u64, CancellationToken)>> {
    static WAITING: OnceLock<Mutex<HashMap<String, (u64, CancellationToken)>>> = OnceLock::new();
    WAITING.get_or_init(Default::default)
}

/// The rest of a started login: its credential, once stored.
pub type Completion = BoxFuture<'static, Result<Value, LoginError>>;

/// Start a login; returns once the user has something to do (with the
/// completion to await), or with the login's error when it ended first.
pub async fn start(
    auth_path: PathBuf,
    request: LoginRequest,
    net: Net,
) -> Result<(LoginStarted, Completion), LoginError> {
    let (flow, method) = login::resolve(&request)?;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let cancel = CancellationToken::new();
    let entry = (number, cancel.clone());
    if let Some((_, previous)) =
        waiting().lock().unwrap_or_else(|p| p.into_inner()).insert(request.provider.clone(), entry)
    {
        previous.cancel();
    }
    let (tx, rx) = oneshot::channel();
    let io =
        FrontEnd { first: Mutex::new(Some(tx)), answer: request.answer.clone(), provider: request.provider.clone() };
    let provider = request.provider.clone();
    let task = tokio::spawn(async move {
        let run = login::login(&auth_path, &request, &net, &io, cancel.clone());
        let result = match tokio::time::timeout(LOGIN_TIMEOUT, run).await {
            Ok(result) => result,
            Err(_) => {
                cancel.cancel();
                Err(LoginError::Failed { name: flow.name().into(), message: "the sign-in timed out".into() })
            }
        };
        let mut waiting = waiting().lock().unwrap_or_else(|p| p.into_inner());
        if waiting.get(&provider).is_some_and(|(n, _)| *n == number) {
            waiting.remove(&provider);
        }
        result
    });
    let mut completion: Completion =
        task.map(|joined| joined.unwrap_or_else(|e| Err(LoginError::Store(e.to_string())))).boxed();
    let mut started = LoginStarted {
        provider: flow.provider().into(),
        name: flow.name().into(),
        method: method.into(),
        ..LoginStarted::default()
    };
    tokio::select! {
        first = rx => match first {
            Ok(LoginEvent::AuthUrl { url, instructions }) => {
                started.url = Some(url);
                started.instructions = instructions;
            }
            Ok(LoginEvent::DeviceCode { user_code, verification_uri, expires_in_seconds, .. }) => {
                started.user_code = Some(user_code);
                started.verification_uri = Some(verification_uri);
                started.expires_in_seconds = expires_in_seconds;
            }
            // The login ended before showing anything: its outcome says how.
            _ => {
                let credential = (&mut completion).await?;
                return Ok((started, futures::future::ready(Ok(credential)).boxed()));
            }
        },
        ended = &mut completion => {
            let credential = ended?;
            return Ok((started, futures::future::ready(Ok(credential)).boxed()));
        }
    }
    Ok((started, completion))
}

/// Cancel a provider's login that still waits; true when there was one.
pub fn cancel(provider: &str) -> bool {
    waiting().lock().unwrap_or_else(|p| p.into_inner()).remove(provider).is_some_and(|(_, c)| {
        c.cancel();
        true
    })
}
