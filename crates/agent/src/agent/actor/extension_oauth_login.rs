//! pi's `ModelRuntime.login(provider, "oauth", interaction)` inside an
//! extension (the `models` request `{op: "login", args: [provider,
//! authPath, login]}`): pi-rpc's own OAuth flow of the provider (the one
//! `pi login` and the JSON-RPC `login` run; the device code when the flow
//! has one, as there is no browser to return to), its credential stored in
//! that `auth.json` under pi's lock. The flow's events and questions go to
//! the extension as `login_interaction` calls (`{login, event}`: pi's
//! `AuthEvent`, in order; `{login, prompt}`: pi's `AuthPrompt`, answered
//! with the text), which the host hands to the caller's `interaction`
//! (`notify`, `prompt`). The login runs aside from the actor; the answer is
//! `{value: credential}`.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::auth::oauth::{LoginEvent, LoginIo, Net, Question, QuestionKind};
use crate::extensions::Extension;

impl Agent {
    /// Start extension `id`'s login; `reply` gets `{value: credential}` or the login's error.
    pub(super) fn start_extension_login(
        &self,
        id: usize,
        params: &Value,
        cancel: CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        let ext = match self.live_extension(id) {
            Ok(ext) => ext,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        let args = params.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
        let text = |i: usize| args.get(i).and_then(Value::as_str).unwrap_or_default().to_string();
        let (provider, auth_path, login) = (text(0), PathBuf::from(text(1)), text(2));
        tokio::spawn(async move {
            let request = crate::auth::LoginRequest { provider, method: None, no_browser: true, answer: None };
            let interaction = HostInteraction::new(ext.clone(), login);
            let net = Net::new();
            let run = crate::auth::login::login(&auth_path, &request, &net, &interaction, cancel);
            tokio::pin!(run);
            // The extension waits on the user's sign-in, which may take longer than a call may be silent.
            let mut alive = tokio::time::interval(std::time::Duration::from_secs(1));
            let result = loop {
                tokio::select! {
                    result = &mut run => break result,
                    _ = alive.tick() => ext.keep_alive(),
                }
            };
            let _ = reply.send(result.map(|credential| json!({ "value": credential })).map_err(|e| e.to_string()));
        });
    }
}

/// The caller's `interaction`, reached through the extension.
struct HostInteraction {
    ext: Arc<Extension>,
    login: String,
    /// Events, delivered one after the other by one task.
    events: mpsc::UnboundedSender<Value>,
}

impl HostInteraction {
    fn new(ext: Arc<Extension>, login: String) -> HostInteraction {
        let (events, mut queue) = mpsc::unbounded_channel::<Value>();
        let (to, id) = (ext.clone(), login.clone());
        tokio::spawn(async move {
            while let Some(event) = queue.recv().await {
                if let Err(error) = to.call("login_interaction", json!({"login": id, "event": event}), None).await {
                    tracing::debug!("login event not delivered: {error:?}");
                }
            }
        });
        HostInteraction { ext, login, events }
    }
}

/// pi-ai's `AuthEvent` of a login event.
fn auth_event(event: LoginEvent) -> Value {
    match event {
        LoginEvent::AuthUrl { url, instructions } => {
            let mut out = json!({"type": "auth_url", "url": url});
            if let Some(text) = instructions {
                out["instructions"] = json!(text);
            }
            out
        }
        LoginEvent::DeviceCode { user_code, verification_uri, interval_seconds, expires_in_seconds } => {
            let mut out = json!({"type": "device_code", "userCode": user_code, "verificationUri": verification_uri});
            if let Some(seconds) = interval_seconds {
                out["intervalSeconds"] = json!(seconds);
            }
            if let Some(seconds) = expires_in_seconds {
                out["expiresInSeconds"] = json!(seconds);
            }
            out
        }
        LoginEvent::Progress(message) => json!({"type": "progress", "message": message}),
    }
}

#[async_trait]
impl LoginIo for HostInteraction {
    fn notify(&self, event: LoginEvent) {
        let _ = self.events.send(auth_event(event));
    }

    async fn ask(&self, question: Question) -> Option<String> {
        let kind = match question.kind {
            QuestionKind::Text => "text",
            QuestionKind::ManualCode => "manual_code",
        };
        let mut prompt = json!({"type": kind, "message": question.message});
        if let Some(placeholder) = question.placeholder {
            prompt["placeholder"] = json!(placeholder);
        }
        // A person may take long to answer: no call timeout.
        let asked =
            self.ext.call_streaming("login_interaction", json!({"login": self.login, "prompt": prompt}), None).await;
        match asked {
            Ok(Value::String(answer)) => Some(answer),
            _ => None,
        }
    }
}
