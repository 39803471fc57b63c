//! The front end `/mcp` reaches when it runs inside an SDK session, as pi's
//! MCP extension there reaches the command's `ctx.ui`: its notifications and
//! its `select` / `input` dialogs go to the UI the sub-session was bound
//! with, through `mcp_auth` calls to the extension that ran the command
//! (`op`: `ui.notify`, `ui.select`, `ui.input`, `ui.withdraw`, naming the
//! session; the shim keeps the command's `ctx.ui` under the session id,
//! session-builtins.cjs), sent in order; a question withdrawn (the loopback
//! callback came first) aborts the dialog's signal, as pi's does. A
//! sign-in's URL goes to the sub-session's `createMcpExtension({ openUrl })`,
//! else to the browser.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::extensions::{CallError, Extension};
use crate::mcp::factories::OpenUrl;
use crate::mcp::sign_in_command::CommandUi;

/// One call to the extension, answered to `reply` when given.
type Queued = (Value, Option<oneshot::Sender<Option<String>>>);

pub(super) struct SdkCommandUi {
    ext: Arc<Extension>,
    session: String,
    /// The calls in the order they were made.
    calls: mpsc::UnboundedSender<Queued>,
    open_url: Option<OpenUrl>,
    next_dialog: AtomicU64,
}

impl SdkCommandUi {
    pub(super) fn new(ext: Arc<Extension>, session: String, open_url: Option<OpenUrl>) -> SdkCommandUi {
        let (calls, mut queue) = mpsc::unbounded_channel::<Queued>();
        let (owner, named) = (ext.clone(), session.clone());
        tokio::spawn(async move {
            while let Some((params, reply)) = queue.recv().await {
                let answer = call(&owner, &named, params).await;
                if let Some(reply) = reply {
                    let _ = reply.send(answer);
                }
            }
        });
        SdkCommandUi { ext, session, calls, open_url, next_dialog: AtomicU64::new(1) }
    }

    async fn dialog(&self, mut params: Value) -> Option<String> {
        let dialog = self.next_dialog.fetch_add(1, Ordering::Relaxed);
        params["dialog"] = json!(dialog);
        let (reply, answer) = oneshot::channel();
        let _ = self.calls.send((params, Some(reply)));
        let withdraw = Withdraw { ui: self, dialog, answered: false };
        let answer = answer.await.ok().flatten();
        withdraw.answered();
        answer
    }
}

/// `op` of the command's UI in `ext`'s process, for SDK session `session`:
/// the text answered (a dialog's), None otherwise or when it failed.
async fn call(ext: &Extension, session: &str, mut params: Value) -> Option<String> {
    params["session"] = json!(session);
    match ext.call_streaming("mcp_auth", params, None).await {
        Ok(Value::String(text)) => Some(text),
        Ok(_) => None,
        Err(CallError::Failed(error) | CallError::Dead(error)) => {
            tracing::warn!("/mcp in an SDK session: its UI failed: {error}");
            None
        }
        Err(CallError::Cancelled) => None,
    }
}

/// Aborts a dialog whose question was dropped before it was answered (sent
/// at once, not after the calls queued behind the dialog).
struct Withdraw<'a> {
    ui: &'a SdkCommandUi,
    dialog: u64,
    answered: bool,
}

impl Withdraw<'_> {
    fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let (ext, session) = (self.ui.ext.clone(), self.ui.session.clone());
        let params = json!({"op": "ui.withdraw", "dialog": self.dialog});
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { call(&ext, &session, params).await });
        }
    }
}

#[async_trait::async_trait]
impl CommandUi for SdkCommandUi {
    fn notify(&self, text: &str, level: &'static str) {
        let _ = self.calls.send((json!({"op": "ui.notify", "text": text, "level": level}), None));
    }

    async fn select(&self, title: &str, options: Vec<String>) -> Option<String> {
        self.dialog(json!({"op": "ui.select", "title": title, "options": options})).await
    }

    async fn input(&self, title: &str, placeholder: &str) -> Option<String> {
        self.dialog(json!({"op": "ui.input", "title": title, "placeholder": placeholder})).await
    }

    /// The sub-session's `openUrl`, else the browser, as `pi login` opens it.
    fn open_url(&self, url: &str) {
        match &self.open_url {
            Some(open) => open(url),
            None => crate::auth::login::open_in_browser(url),
        }
    }
}
