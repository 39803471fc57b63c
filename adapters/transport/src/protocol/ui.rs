//! The fields of an extension UI request, shared by the dialects (native
//! `extension_ui_request`, JSON-RPC `extension:ui` `data`).

use pi_core::event::ExtensionUiKind;
use schemars::JsonSchema;
use serde::Serialize;

/// The fields of an extension UI request, per method. Shared by both
/// dialects (native `extension_ui_request`, JSON-RPC `extension:ui` `data`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UiFields {
    /// Dialog or window title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `select`: the choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// `confirm`, `notify`: the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `input`: placeholder text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// `editor`: initial text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill: Option<String>,
    /// `notify`: `info`, `warning` or `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify_type: Option<String>,
    /// `setStatus`: the status entry's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_key: Option<String>,
    /// `setStatus`: the text; absent clears the entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_text: Option<String>,
    /// `setWidget`: the widget's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_key: Option<String>,
    /// `setWidget`: the lines; absent clears the widget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_lines: Option<Vec<String>>,
    /// `setWidget`: `aboveEditor` (default) or `belowEditor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_placement: Option<String>,
    /// `set_editor_text`: the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Dialogs: milliseconds after which the agent resolves the dialog with its default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// The extension name approval dialogs show as their sender (seed dialects).
pub const APPROVAL_SENDER: &str = "pi-rpc";

impl UiFields {
    /// The approval dialog of a tool call in the seed dialects: a `select`
    /// (`Allow`, `Block`, `Always allow`, `Always block`), as seed 000's example.
    pub fn approval(request: &pi_core::client::PermissionRequest) -> UiFields {
        UiFields {
            title: Some(format!("Allow {}?", request.title)),
            options: Some(pi_core::client::approval_choices()),
            ..UiFields::default()
        }
    }

    /// The fields of one request kind.
    pub fn of(kind: ExtensionUiKind) -> UiFields {
        let mut f = UiFields::default();
        match kind {
            ExtensionUiKind::Select { title, options, timeout_ms } => {
                f.title = Some(title);
                f.options = Some(options);
                f.timeout = timeout_ms;
            }
            ExtensionUiKind::Confirm { title, message, timeout_ms } => {
                f.title = Some(title);
                f.message = Some(message);
                f.timeout = timeout_ms;
            }
            ExtensionUiKind::Input { title, placeholder, timeout_ms } => {
                f.title = Some(title);
                f.placeholder = placeholder;
                f.timeout = timeout_ms;
            }
            ExtensionUiKind::Editor { title, prefill, timeout_ms } => {
                f.title = Some(title);
                f.prefill = prefill;
                f.timeout = timeout_ms;
            }
            ExtensionUiKind::Notify { message, notify_type } => {
                f.message = Some(message);
                f.notify_type = notify_type;
            }
            ExtensionUiKind::SetStatus { status_key, status_text } => {
                f.status_key = Some(status_key);
                f.status_text = status_text;
            }
            ExtensionUiKind::SetWidget { widget_key, widget_lines, widget_placement } => {
                f.widget_key = Some(widget_key);
                f.widget_lines = widget_lines;
                f.widget_placement = widget_placement;
            }
            ExtensionUiKind::SetTitle { title } => f.title = Some(title),
            ExtensionUiKind::SetEditorText { text } => f.text = Some(text),
        }
        f
    }
}
