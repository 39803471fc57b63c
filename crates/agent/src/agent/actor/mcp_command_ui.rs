//! The front end as `/mcp login` reaches it: notifications and the
//! `select`/`input` dialogs of pi's RPC mode (`extension_ui_request`,
//! answered with `extension_ui_response` through the extensions' dialog
//! broker), sent in order; a question withdrawn (the loopback callback came
//! first) is forgotten, as pi's aborted dialog is, with nothing on the wire.

use serde_json::Value;
use tokio::sync::mpsc;

use crate::agent::internal::Internal;
use crate::event::{AgentEvent, ExtensionUiKind, ExtensionUiRequest};
use crate::extensions::Extensions;
use crate::mcp::command::{NAME, Notice};
use crate::mcp::sign_in_command::CommandUi;
use crate::op::UiResponse;

/// The owner id the broker knows the built-in `/mcp`'s dialogs by.
const BUILTIN_OWNER: usize = usize::MAX;

pub(super) struct McpCommandUi {
    extensions: Extensions,
    /// Events in the order they were made, and markers that say all before went.
    events: mpsc::UnboundedSender<Queued>,
    /// `createMcpExtension({ openUrl })`, else the platform browser.
    open_url: Option<crate::mcp::factories::OpenUrl>,
}

enum Queued {
    Event(AgentEvent),
    Flushed(tokio::sync::oneshot::Sender<()>),
}

impl McpCommandUi {
    pub(super) fn new(
        extensions: Extensions,
        internal: mpsc::Sender<Internal>,
        open_url: Option<crate::mcp::factories::OpenUrl>,
    ) -> McpCommandUi {
        let (events, mut queue) = mpsc::unbounded_channel::<Queued>();
        tokio::spawn(async move {
            while let Some(item) = queue.recv().await {
                match item {
                    Queued::Event(event) => {
                        if internal.send(Internal::Event(Box::new(event))).await.is_err() {
                            break;
                        }
                    }
                    Queued::Flushed(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        McpCommandUi { extensions, events, open_url }
    }

    fn send(&self, event: AgentEvent) {
        let _ = self.events.send(Queued::Event(event));
    }

    /// Send `event` after every earlier one, and wait until it is handed on.
    pub(super) async fn notify_now(&self, event: AgentEvent) {
        self.send(event);
        let (done, sent) = tokio::sync::oneshot::channel();
        let _ = self.events.send(Queued::Flushed(done));
        let _ = sent.await;
    }

    fn request(&self, id: String, kind: ExtensionUiKind) {
        let request = ExtensionUiRequest { id, extension: NAME.to_string(), kind };
        self.send(AgentEvent::ExtensionUiRequest(Box::new(request)));
    }

    async fn dialog(&self, kind: ExtensionUiKind) -> Option<String> {
        let broker = self.extensions.ui();
        let (id, answer) = broker.open(BUILTIN_OWNER);
        let _withdrawn = Withdraw { extensions: &self.extensions, id: id.clone() };
        self.request(id, kind);
        match answer.await {
            Ok(UiResponse::Value(Value::String(text))) => Some(text),
            _ => None,
        }
    }
}

/// Forgets a dialog whose question was dropped before it was answered.
struct Withdraw<'a> {
    extensions: &'a Extensions,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.extensions.ui().remove(&self.id);
    }
}

#[async_trait::async_trait]
impl CommandUi for McpCommandUi {
    fn notify(&self, text: &str, level: &'static str) {
        self.send(super::mcp_ops::notice_event(Notice::new(text, level)));
    }

    async fn select(&self, title: &str, options: Vec<String>) -> Option<String> {
        self.dialog(ExtensionUiKind::Select { title: title.to_string(), options, timeout_ms: None }).await
    }

    async fn input(&self, title: &str, placeholder: &str) -> Option<String> {
        let kind = ExtensionUiKind::Input {
            title: title.to_string(),
            placeholder: Some(placeholder.to_string()),
            timeout_ms: None,
        };
        self.dialog(kind).await
    }

    /// The extension's `openUrl`, else the browser, as `pi login` opens it.
    fn open_url(&self, url: &str) {
        match &self.open_url {
            Some(open) => open(url),
            None => crate::auth::login::open_in_browser(url),
        }
    }
}
