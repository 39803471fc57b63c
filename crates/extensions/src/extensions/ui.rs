//! The extension UI sub-protocol on the host side: pending dialogs and how
//! their answers are routed back ([`UiBroker`]), and the UI calls an
//! extension can make, with the RPC-mode limits pi documents (no custom
//! components; `getEditorText` returns `""`; theme calls fail or return
//! nothing; TUI-only calls are no-ops).

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{HostSignal, Signals};
use crate::event::{AgentEvent, ExtensionUiKind, ExtensionUiRequest};
use crate::op::UiResponse;

/// A dialog waiting for the client's answer.
struct PendingDialog {
    id: String,
    /// The extension that asked.
    owner: usize,
    tx: oneshot::Sender<UiResponse>,
}

/// Where `ui_prompt_start` / `ui_prompt_end` payloads go (every subscribed extension).
pub type PromptListener = Box<dyn Fn(Value) + Send + Sync>;

/// The outer waiting span of the dialogs of a session: nested or
/// overlapping prompts, of any extension, are one span, as in pi.
#[derive(Default)]
struct PromptSpan {
    depth: usize,
    /// The prompt that opened the span: `(kind, title)`.
    first: Option<(String, Option<String>)>,
}

/// Open dialogs, in the order they were asked.
#[derive(Default)]
pub struct UiBroker {
    pending: Mutex<Vec<PendingDialog>>,
    /// Set once the client is gone: new dialogs are cancelled at once.
    closed: std::sync::atomic::AtomicBool,
    span: Mutex<PromptSpan>,
    prompt_listener: std::sync::OnceLock<PromptListener>,
}

/// pi's `ui_prompt_start` / `ui_prompt_end` payload.
fn prompt_event(name: &str, kind: &str, title: Option<&str>) -> Value {
    let mut event = json!({"type": name, "reason": "ui_prompt", "kind": kind});
    if let Some(title) = title.filter(|t| !t.is_empty()) {
        event["title"] = Value::String(title.to_string());
    }
    event
}

/// What routing a client's answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routed {
    /// It answered an open dialog.
    Resolved,
    /// No dialog has that id (or, without an id, not exactly one is open): ignored.
    Ignored,
}

impl UiBroker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PendingDialog>> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Open a dialog for extension `owner`: a fresh id and where the answer arrives.
    pub fn open(&self, owner: usize) -> (String, oneshot::Receiver<UiResponse>) {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tx.send(UiResponse::Cancelled);
        } else {
            self.lock().push(PendingDialog { id: id.clone(), owner, tx });
        }
        (id, rx)
    }

    /// Set where the prompt span's events go (once, when the extensions are started).
    pub fn set_prompt_listener(&self, listener: PromptListener) {
        let _ = self.prompt_listener.set(listener);
    }

    fn span(&self) -> std::sync::MutexGuard<'_, PromptSpan> {
        self.span.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A prompt starts waiting for the user: the first one opens the span (`ui_prompt_start`).
    pub fn prompt_started(&self, kind: &str, title: Option<&str>) {
        let opened = {
            let mut span = self.span();
            span.depth += 1;
            if span.depth == 1 {
                span.first = Some((kind.to_string(), title.map(str::to_string)));
            }
            span.depth == 1
        };
        if let (true, Some(listener)) = (opened, self.prompt_listener.get()) {
            listener(prompt_event("ui_prompt_start", kind, title));
        }
    }

    /// A prompt stopped waiting: the last one closes the span (`ui_prompt_end`,
    /// naming the prompt that opened it).
    pub fn prompt_ended(&self, kind: &str, title: Option<&str>) {
        let closed = {
            let mut span = self.span();
            span.depth = span.depth.saturating_sub(1);
            if span.depth > 0 { None } else { Some(span.first.take()) }
        };
        let Some(first) = closed else { return };
        let (kind, title) = first.unwrap_or_else(|| (kind.to_string(), title.map(str::to_string)));
        if let Some(listener) = self.prompt_listener.get() {
            listener(prompt_event("ui_prompt_end", &kind, title.as_deref()));
        }
    }

    /// Route a client's answer. With an id: the dialog with that id. Without
    /// one: the only open dialog, if exactly one is open.
    pub fn resolve(&self, id: Option<&str>, response: UiResponse) -> Routed {
        let dialog = {
            let mut pending = self.lock();
            let index = match id {
                Some(id) => pending.iter().position(|d| d.id == id),
                None if pending.len() == 1 => Some(0),
                None => None,
            };
            index.map(|i| pending.remove(i))
        };
        match dialog {
            Some(d) => {
                let _ = d.tx.send(response);
                Routed::Resolved
            }
            None => Routed::Ignored,
        }
    }

    /// Forget a dialog (its timeout fired).
    pub fn remove(&self, id: &str) {
        self.lock().retain(|d| d.id != id);
    }

    /// How many dialogs extension `owner` waits on.
    pub fn pending_for(&self, owner: usize) -> usize {
        self.lock().iter().filter(|d| d.owner == owner).count()
    }

    /// Ids of the open dialogs, oldest first.
    pub fn ids(&self) -> Vec<String> {
        self.lock().iter().map(|d| d.id.clone()).collect()
    }

    /// Number of open dialogs.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drop the dialogs of a dead extension (late answers are then ignored).
    pub fn drop_owner(&self, owner: usize) {
        self.lock().retain(|d| d.owner != owner);
    }

    /// Answer every open dialog, and every later one, with `cancelled`
    /// (the client is gone: nobody can answer any more).
    pub fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.cancel_all();
    }

    /// Answer every open dialog with `cancelled`.
    pub fn cancel_all(&self) {
        let all: Vec<PendingDialog> = std::mem::take(&mut *self.lock());
        for d in all {
            let _ = d.tx.send(UiResponse::Cancelled);
        }
    }
}

/// UI methods that do nothing in RPC mode (they need a terminal UI).
const NO_OPS: &[&str] = &[
    "setWorkingMessage",
    "setWorkingVisible",
    "setWorkingIndicator",
    "setHiddenThinkingLabel",
    "setFooter",
    "setHeader",
    "addAutocompleteProvider",
    "setEditorComponent",
    "setToolsExpanded",
    "onTerminalInput",
];

/// Whether `method` is a dialog (it waits for the user).
pub fn is_dialog_method(method: &str) -> bool {
    matches!(method, "select" | "confirm" | "input" | "editor")
}

/// Whether `method` is a UI call.
pub fn is_ui_method(method: &str) -> bool {
    matches!(
        method,
        "select"
            | "confirm"
            | "input"
            | "editor"
            | "notify"
            | "setStatus"
            | "setWidget"
            | "setTitle"
            | "setEditorText"
            | "set_editor_text"
            | "pasteToEditor"
            | "getEditorText"
            | "getEditorComponent"
            | "getToolsExpanded"
            | "getAllThemes"
            | "getTheme"
            | "setTheme"
            | "custom"
    ) || NO_OPS.contains(&method)
}

fn string(params: &Value, key: &str) -> Option<String> {
    match params.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    }
}

fn timeout(params: &Value) -> Option<u64> {
    params.get("timeout").and_then(Value::as_f64).filter(|t| *t > 0.0).map(|t| t.ceil() as u64)
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect())
}

/// The dialog or fire-and-forget request a UI call becomes; `Err` holds the
/// immediate result of calls that emit nothing.
fn ui_kind(method: &str, p: &Value) -> Result<ExtensionUiKind, Value> {
    let title = || string(p, "title").unwrap_or_default();
    Ok(match method {
        "select" => ExtensionUiKind::Select {
            title: title(),
            options: p.get("options").and_then(strings).unwrap_or_default(),
            timeout_ms: timeout(p),
        },
        "confirm" => ExtensionUiKind::Confirm {
            title: title(),
            message: string(p, "message").unwrap_or_default(),
            timeout_ms: timeout(p),
        },
        "input" => {
            ExtensionUiKind::Input { title: title(), placeholder: string(p, "placeholder"), timeout_ms: timeout(p) }
        }
        "editor" => ExtensionUiKind::Editor { title: title(), prefill: string(p, "prefill"), timeout_ms: timeout(p) },
        "notify" => ExtensionUiKind::Notify {
            message: string(p, "message").unwrap_or_default(),
            notify_type: string(p, "notifyType").or_else(|| string(p, "type")),
        },
        "setStatus" => ExtensionUiKind::SetStatus {
            status_key: string(p, "statusKey").or_else(|| string(p, "key")).unwrap_or_default(),
            status_text: string(p, "statusText").or_else(|| string(p, "text")),
        },
        "setWidget" => {
            let lines = p.get("widgetLines").or_else(|| p.get("lines")).filter(|v| !v.is_null());
            // Only string arrays are shown in RPC mode; anything else (a component) is ignored.
            let widget_lines = match lines {
                None => None,
                Some(v) => Some(strings(v).ok_or(Value::Null)?),
            };
            ExtensionUiKind::SetWidget {
                widget_key: string(p, "widgetKey").or_else(|| string(p, "key")).unwrap_or_default(),
                widget_lines,
                widget_placement: string(p, "widgetPlacement").or_else(|| string(p, "placement")),
            }
        }
        "setTitle" => ExtensionUiKind::SetTitle { title: title() },
        "setEditorText" | "set_editor_text" | "pasteToEditor" => {
            ExtensionUiKind::SetEditorText { text: string(p, "text").unwrap_or_default() }
        }
        "getEditorText" => return Err(json!("")),
        "getToolsExpanded" => return Err(json!(false)),
        "getAllThemes" => return Err(json!([])),
        "setTheme" => return Err(json!({"success": false, "error": "Theme switching not supported in RPC mode"})),
        // custom(), getTheme(), getEditorComponent() and the no-ops.
        _ => return Err(Value::Null),
    })
}

/// What a dialog returns to the extension: the value (select, input,
/// editor) or `true`/`false` (confirm); `null` / `false` when cancelled or timed out.
pub fn dialog_result(kind: &ExtensionUiKind, response: Option<UiResponse>) -> Value {
    let confirm = matches!(kind, ExtensionUiKind::Confirm { .. });
    match response {
        Some(UiResponse::Confirmed(b)) if confirm => Value::Bool(b),
        Some(UiResponse::Value(Value::Bool(b))) if confirm => Value::Bool(b),
        Some(UiResponse::Value(v)) if !confirm => v,
        _ if confirm => Value::Bool(false),
        _ => Value::Null,
    }
}

/// Perform UI call `method` for extension `owner` (named `extension`):
/// emit the request and, for a dialog, wait for the answer, its timeout or
/// the extension dismissing it (`dismissed`).
pub(super) async fn ui_call(
    broker: &UiBroker,
    signals: &Signals,
    owner: usize,
    extension: &str,
    method: &str,
    params: &Value,
    dismissed: &tokio_util::sync::CancellationToken,
) -> Value {
    if method == "custom" {
        // No custom components in RPC mode: it resolves at once, but is still a prompt span, as in pi.
        broker.prompt_started("custom", None);
        broker.prompt_ended("custom", None);
        return Value::Null;
    }
    let kind = match ui_kind(method, params) {
        Ok(kind) => kind,
        Err(result) => return result,
    };
    let emit = |id: String, kind: ExtensionUiKind| {
        HostSignal::Event(Box::new(AgentEvent::ExtensionUiRequest(Box::new(ExtensionUiRequest {
            id,
            extension: extension.to_string(),
            kind,
        }))))
    };
    if !kind.is_dialog() {
        signals.deliver(emit(uuid::Uuid::new_v4().to_string(), kind)).await;
        return Value::Null;
    }
    let timeout_ms = match &kind {
        ExtensionUiKind::Select { timeout_ms, .. }
        | ExtensionUiKind::Confirm { timeout_ms, .. }
        | ExtensionUiKind::Input { timeout_ms, .. }
        | ExtensionUiKind::Editor { timeout_ms, .. } => *timeout_ms,
        _ => None,
    };
    let (id, rx) = broker.open(owner);
    if !signals.deliver(emit(id.clone(), kind.clone())).await {
        broker.remove(&id);
        return dialog_result(&kind, None);
    }
    // After the request is out, as pi announces the prompt once it is shown.
    let title = string(params, "title");
    broker.prompt_started(method, title.as_deref());
    let expiry = async {
        match timeout_ms {
            Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            None => std::future::pending().await,
        }
    };
    let response = tokio::select! {
        answer = rx => answer.ok(),
        _ = expiry => None,
        _ = dismissed.cancelled() => None,
    };
    broker.remove(&id);
    broker.prompt_ended(method, title.as_deref());
    dialog_result(&kind, response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_route_by_id_or_to_the_only_dialog() {
        let broker = UiBroker::default();
        let (a, mut rx_a) = broker.open(0);
        assert_eq!(broker.resolve(None, UiResponse::Confirmed(true)), Routed::Resolved);
        assert_eq!(rx_a.try_recv().unwrap(), UiResponse::Confirmed(true));
        assert_eq!(broker.resolve(Some(&a), UiResponse::Cancelled), Routed::Ignored, "already answered");

        let (_b, _rx_b) = broker.open(0);
        let (c, mut rx_c) = broker.open(1);
        assert_eq!(broker.resolve(None, UiResponse::Cancelled), Routed::Ignored, "two open: an id is needed");
        assert_eq!(broker.pending_for(0), 1);
        assert_eq!(broker.resolve(Some(&c), UiResponse::Value(json!("x"))), Routed::Resolved);
        assert_eq!(rx_c.try_recv().unwrap(), UiResponse::Value(json!("x")));
        assert_eq!(broker.resolve(Some("nope"), UiResponse::Cancelled), Routed::Ignored);
        broker.drop_owner(0);
        assert!(broker.is_empty());

        let (_d, mut rx_d) = broker.open(2);
        broker.close();
        assert_eq!(rx_d.try_recv().unwrap(), UiResponse::Cancelled);
        let (_e, mut rx_e) = broker.open(2);
        assert_eq!(rx_e.try_recv().unwrap(), UiResponse::Cancelled, "closed: cancelled at once");
        assert!(broker.is_empty());
    }

    #[test]
    fn overlapping_prompts_are_one_span_named_by_the_first() {
        let broker = UiBroker::default();
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        broker.set_prompt_listener(Box::new(move |event| sink.lock().unwrap().push(event)));
        broker.prompt_started("select", Some("Pick"));
        broker.prompt_started("confirm", Some("Sure?"));
        broker.prompt_ended("select", Some("Pick"));
        assert_eq!(seen.lock().unwrap().len(), 1, "still waiting on the confirm");
        broker.prompt_ended("confirm", Some("Sure?"));
        broker.prompt_started("custom", None);
        broker.prompt_ended("custom", None);
        let start = json!({"type": "ui_prompt_start", "reason": "ui_prompt", "kind": "select", "title": "Pick"});
        let end = json!({"type": "ui_prompt_end", "reason": "ui_prompt", "kind": "select", "title": "Pick"});
        let custom_start = json!({"type": "ui_prompt_start", "reason": "ui_prompt", "kind": "custom"});
        let custom_end = json!({"type": "ui_prompt_end", "reason": "ui_prompt", "kind": "custom"});
        assert_eq!(*seen.lock().unwrap(), vec![start, end, custom_start, custom_end]);
    }

    #[test]
    fn dialog_results_follow_pi_defaults() {
        let select = ExtensionUiKind::Select { title: String::new(), options: vec![], timeout_ms: None };
        let confirm = ExtensionUiKind::Confirm { title: String::new(), message: String::new(), timeout_ms: None };
        assert_eq!(dialog_result(&select, Some(UiResponse::Value(json!("A")))), json!("A"));
        assert_eq!(dialog_result(&select, Some(UiResponse::Cancelled)), Value::Null);
        assert_eq!(dialog_result(&select, None), Value::Null);
        assert_eq!(dialog_result(&confirm, Some(UiResponse::Confirmed(true))), json!(true));
        assert_eq!(dialog_result(&confirm, Some(UiResponse::Cancelled)), json!(false));
        assert_eq!(dialog_result(&confirm, None), json!(false));
    }

    #[test]
    fn rpc_mode_limits() {
        assert_eq!(ui_kind("getEditorText", &json!({})).unwrap_err(), json!(""));
        assert_eq!(ui_kind("getToolsExpanded", &json!({})).unwrap_err(), json!(false));
        assert_eq!(ui_kind("getAllThemes", &json!({})).unwrap_err(), json!([]));
        assert_eq!(ui_kind("custom", &json!({})).unwrap_err(), Value::Null);
        assert_eq!(ui_kind("setFooter", &json!({})).unwrap_err(), Value::Null);
        assert_eq!(ui_kind("setTheme", &json!({"name": "x"})).unwrap_err()["success"], false);
        assert_eq!(
            ui_kind("pasteToEditor", &json!({"text": "t"})).unwrap(),
            ExtensionUiKind::SetEditorText { text: "t".into() }
        );
        assert_eq!(
            ui_kind("setWidget", &json!({"widgetKey": "k", "widgetLines": "component"})).unwrap_err(),
            Value::Null
        );
        assert!(is_ui_method("setHeader") && is_ui_method("select") && !is_ui_method("sendMessage"));
    }
}
