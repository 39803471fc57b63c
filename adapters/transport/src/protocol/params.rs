//! The params types of the commands: serde decodes them (see [`super::decode`])
//! and schemars documents them; the doc comments are the schema descriptions.
//! A type is shared by every command (and dialect) whose params have its shape.
//! Unknown members are ignored, and `null` counts as absent for optional ones.

use pi_core::message::ImageContent;
use pi_core::model::ThinkingLevel;
use pi_core::op::{InitializeParams, QueueMode, StreamingBehavior, UiResponse, ops};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::decode::{FieldError, parse_opt_str, parse_str};

/// Queue delivery mode (schema helper for string fields).
#[derive(Debug, Clone, Copy, serde::Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WireQueueMode {
    /// Deliver everything queued at once.
    All,
    /// Deliver one queued message per turn (or per completion for follow-ups).
    OneAtATime,
}

/// An image attached to a prompt (`{"type":"image","data","mimeType"}`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum WireImage {
    /// Base64 image content.
    Image(ImageContent),
}

/// How a prompt sent during a run is queued.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WireStreamingBehavior {
    /// Deliver after the current turn's tool calls, before the next model call.
    Steer,
    /// Deliver when the agent would otherwise stop.
    FollowUp,
}

/// `streamingBehavior`, read with pi's wording of a bad value.
struct Behavior(StreamingBehavior);

impl std::str::FromStr for Behavior {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "steer" => Ok(Behavior(StreamingBehavior::Steer)),
            "followUp" => Ok(Behavior(StreamingBehavior::FollowUp)),
            other => Err(format!("invalid streamingBehavior \"{other}\": expected \"steer\" or \"followUp\"")),
        }
    }
}

/// An image as read: `data` and `mimeType` (the `type` tag is not checked).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageParam {
    data: String,
    mime_type: String,
}

fn images<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ImageContent>, D::Error> {
    let images: Option<Vec<ImageParam>> = Option::deserialize(d)?;
    Ok(images.unwrap_or_default().into_iter().map(|i| ImageContent { data: i.data, mime_type: i.mime_type }).collect())
}

fn behavior<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<StreamingBehavior>, D::Error> {
    Ok(parse_opt_str::<D, Behavior>(d)?.map(|b| b.0))
}

/// No params (send `{}` or leave them out).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NoParams {}

/// Native `prompt`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    /// The prompt text (`/template args` and `/skill:name` are expanded).
    pub message: String,
    /// Images to attach.
    #[serde(default, deserialize_with = "images")]
    #[schemars(with = "Option<Vec<WireImage>>")]
    pub images: Vec<ImageContent>,
    /// Required while the agent is streaming: how to queue the prompt.
    #[serde(default, deserialize_with = "behavior")]
    #[schemars(with = "Option<WireStreamingBehavior>")]
    pub streaming_behavior: Option<StreamingBehavior>,
}

/// Native `steer`, `follow_up`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MessageParams {
    /// The message text.
    pub message: String,
    /// Images to attach.
    #[serde(default, deserialize_with = "images")]
    #[schemars(with = "Option<Vec<WireImage>>")]
    pub images: Vec<ImageContent>,
}

/// JSON-RPC `prompt`: `content` (or the native name `message`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [{"required": ["content"]}, {"required": ["message"]}]))]
pub struct ContentPromptParams {
    /// The prompt text.
    pub content: Option<String>,
    /// Alias of `content`.
    pub message: Option<String>,
    /// Images to attach.
    #[serde(default, deserialize_with = "images")]
    #[schemars(with = "Option<Vec<WireImage>>")]
    pub images: Vec<ImageContent>,
    /// How to queue the prompt while the agent is streaming.
    #[serde(default, deserialize_with = "behavior")]
    #[schemars(with = "Option<WireStreamingBehavior>")]
    pub streaming_behavior: Option<StreamingBehavior>,
}

/// JSON-RPC `sendUserMessage`, `steer`, `followUp`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(extend("anyOf" = [{"required": ["content"]}, {"required": ["message"]}]))]
pub struct ContentParams {
    /// The message text.
    pub content: Option<String>,
    /// Alias of `content`.
    pub message: Option<String>,
    /// Images to attach.
    #[serde(default, deserialize_with = "images")]
    #[schemars(with = "Option<Vec<WireImage>>")]
    pub images: Vec<ImageContent>,
}

fn content(content: Option<String>, message: Option<String>) -> Result<String, FieldError> {
    content.or(message).ok_or_else(|| FieldError::new("content", "'content' is required"))
}

impl ContentPromptParams {
    pub fn op(self) -> Result<ops::Prompt, FieldError> {
        let message = content(self.content, self.message)?;
        Ok(ops::Prompt { message, images: self.images, streaming_behavior: self.streaming_behavior })
    }
}

impl ContentParams {
    /// The text and images.
    pub fn take(self) -> Result<(String, Vec<ImageContent>), FieldError> {
        Ok((content(self.content, self.message)?, self.images))
    }
}

/// `new_session` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    /// Session file to record as the parent.
    pub parent_session: Option<String>,
}

/// Native `set_model`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetModelParams {
    /// Provider name.
    pub provider: Option<String>,
    /// Model id.
    pub model_id: String,
}

/// JSON-RPC `setModel`: `model` (or `modelId`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [{"required": ["model"]}, {"required": ["modelId"]}]))]
pub struct ModelParams {
    /// Model id or `provider/id`.
    pub model: Option<String>,
    /// Alias of `model`.
    pub model_id: Option<String>,
    /// Provider to search.
    pub provider: Option<String>,
}

impl ModelParams {
    pub fn op(self) -> Result<ops::SetModel, FieldError> {
        let model_id = self.model.or(self.model_id).ok_or_else(|| FieldError::new("model", "'model' is required"))?;
        Ok(ops::SetModel { provider: self.provider, model_id })
    }
}

/// `set_thinking_level` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct LevelParams {
    /// The level.
    #[serde(deserialize_with = "parse_str")]
    pub level: ThinkingLevel,
}

/// `set_steering_mode`, `set_follow_up_mode` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ModeParams {
    /// `all` or `one-at-a-time`.
    #[serde(deserialize_with = "parse_str")]
    #[schemars(with = "WireQueueMode")]
    pub mode: QueueMode,
}

/// Native `compact`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactParams {
    /// Extra instructions for the summary.
    pub custom_instructions: Option<String>,
}

/// JSON-RPC `compact`: `prompt` (or `customInstructions`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptCompactParams {
    /// Extra instructions for the summary.
    pub prompt: Option<String>,
    /// Alias of `prompt`.
    pub custom_instructions: Option<String>,
}

/// `set_auto_compaction`, `set_auto_retry` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EnabledParams {
    /// On or off.
    pub enabled: bool,
}

/// `bash` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashParams {
    /// The command line.
    pub command: String,
    /// Keep the output out of the model's context.
    pub exclude_from_context: Option<bool>,
}

/// `export_html` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportHtmlParams {
    /// Where to write (default: `pi-session-<session file name>.html` in the cwd).
    pub output_path: Option<String>,
}

/// `switch_session` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwitchSessionParams {
    /// Path of the session file.
    pub session_path: String,
    /// `pi serve`: re-send the session's events after this sequence number.
    pub after_seq: Option<u64>,
}

/// JSON-RPC `resumeSession`: `sessionId` (or `sessionPath`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [{"required": ["sessionId"]}, {"required": ["sessionPath"]}]))]
pub struct ResumeSessionParams {
    /// Session id or a unique prefix.
    pub session_id: Option<String>,
    /// Path of a session file.
    pub session_path: Option<String>,
    /// `pi serve`: re-send the session's events after this sequence number.
    pub after_seq: Option<u64>,
}

impl ResumeSessionParams {
    pub fn op(self) -> Result<ops::ResumeSession, FieldError> {
        let reference = self
            .session_id
            .or(self.session_path)
            .ok_or_else(|| FieldError::new("sessionId", "'sessionId' is required"))?;
        Ok(ops::ResumeSession { reference, after_seq: self.after_seq })
    }
}

/// `fork` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkParams {
    /// The user message's entry id (see `get_fork_messages`).
    pub entry_id: String,
}

/// `get_entries` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct EntriesParams {
    /// Only entries strictly after this entry id.
    pub since: Option<String>,
}

/// `set_session_name` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct NameParams {
    /// The name (trimmed; must not be empty).
    pub name: String,
}

/// `setActiveTools` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolsParams {
    /// Tool names.
    pub tools: Vec<String>,
}

/// `login` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginParams {
    /// The provider to log in to: anthropic, openai-codex, openai, github-copilot, xai, openrouter, kimi-coding, meta, radius.
    pub provider: String,
    /// The sign-in method: `browser` (a URL to open) or `device_code` (a code to enter); default: the provider's first. `copy_code` needs a terminal (`pi login`).
    pub method: Option<String>,
    /// GitHub Copilot: the GitHub Enterprise domain (default: github.com).
    pub enterprise_domain: Option<String>,
}

impl LoginParams {
    pub fn op(self) -> ops::Login {
        ops::Login(pi_core::auth::LoginRequest {
            provider: self.provider,
            method: self.method,
            no_browser: false,
            answer: self.enterprise_domain,
        })
    }
}

/// `initialize` params (all optional).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitParams {
    /// Working directory of the session.
    pub cwd: Option<String>,
    /// Model id or `provider/id`.
    pub model: Option<String>,
    /// Provider of the model.
    pub provider: Option<String>,
    /// API key for the provider.
    pub api_key: Option<String>,
    /// Thinking level.
    #[serde(default, deserialize_with = "parse_opt_str")]
    pub thinking_level: Option<ThinkingLevel>,
    /// Active tools.
    pub tools: Option<Vec<String>>,
    /// Tools the client runs itself (pi-rpc's extension of seed 004).
    pub client_tools: Option<Vec<super::client_params::ClientToolParam>>,
}

impl InitParams {
    pub fn op(self) -> ops::Initialize {
        ops::Initialize(InitializeParams {
            cwd: self.cwd,
            model: self.model,
            provider: self.provider,
            api_key: self.api_key,
            thinking_level: self.thinking_level,
            tools: self.tools,
            client_tools: self.client_tools.unwrap_or_default().into_iter().map(|t| t.spec()).collect(),
        })
    }
}

/// The documented members of a native `extension_ui_response`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct NativeUiResponseSchema {
    /// The request's id.
    id: String,
    /// `select`, `input`, `editor`: the chosen or typed text.
    value: Option<Value>,
    /// `confirm`: the answer.
    confirmed: Option<bool>,
    /// True when the user dismissed the dialog.
    cancelled: Option<bool>,
}

/// The documented members of JSON-RPC `extension:response`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct RpcUiResponseSchema {
    /// The `id` of the `extension:ui` request.
    id: Option<String>,
    /// The extension's name (informational).
    extension: Option<String>,
    /// The answer: a string (select, input, editor), a boolean (confirm), or null to cancel.
    result: Option<Value>,
    /// True to dismiss the dialog.
    cancelled: Option<bool>,
}

/// An answer to an extension dialog, read leniently (every documented form,
/// and no type errors: a malformed answer cancels the dialog).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct UiAnswer(Map<String, Value>);

/// The same, as JSON-RPC documents it.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct RpcUiAnswer(Map<String, Value>);

impl JsonSchema for UiAnswer {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExtensionUiResponse".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        NativeUiResponseSchema::json_schema(g)
    }
}

impl JsonSchema for RpcUiAnswer {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExtensionResponseParams".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        RpcUiResponseSchema::json_schema(g)
    }
}

fn dialog_id(p: &Map<String, Value>) -> Option<String> {
    match p.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

impl UiAnswer {
    /// `cancelled: true`, else `confirmed: <bool>`, else `value`, else cancelled.
    pub fn op(self) -> ops::ExtensionUiResponse {
        let p = self.0;
        let response = if p.get("cancelled") == Some(&Value::Bool(true)) {
            UiResponse::Cancelled
        } else if let Some(Value::Bool(b)) = p.get("confirmed") {
            UiResponse::Confirmed(*b)
        } else if let Some(v) = p.get("value") {
            UiResponse::Value(v.clone())
        } else {
            UiResponse::Cancelled
        };
        ops::ExtensionUiResponse { id: dialog_id(&p), response }
    }
}

impl RpcUiAnswer {
    /// `id` (may be left out when exactly one dialog is open), then the
    /// answer as `result` (or `value`): a string for select/input/editor, a
    /// boolean for confirm, `null` to cancel, or an object `{value}` /
    /// `{confirmed}` / `{cancelled: true}`. A top-level `cancelled: true` or
    /// `confirmed: <bool>` also works.
    pub fn op(self) -> ops::ExtensionUiResponse {
        let p = self.0;
        let result = p.get("result").or_else(|| p.get("value"));
        let response = match result {
            _ if p.get("cancelled") == Some(&Value::Bool(true)) => UiResponse::Cancelled,
            None if p.contains_key("confirmed") => {
                UiResponse::Confirmed(p.get("confirmed") == Some(&Value::Bool(true)))
            }
            Some(Value::Bool(b)) => UiResponse::Confirmed(*b),
            Some(Value::Null) | None => UiResponse::Cancelled,
            Some(Value::Object(o)) if o.get("cancelled") == Some(&Value::Bool(true)) => UiResponse::Cancelled,
            Some(Value::Object(o)) if o.contains_key("confirmed") => {
                UiResponse::Confirmed(o.get("confirmed") == Some(&Value::Bool(true)))
            }
            Some(Value::Object(o)) if o.contains_key("value") => {
                UiResponse::Value(o.get("value").cloned().unwrap_or(Value::Null))
            }
            Some(other) => UiResponse::Value(other.clone()),
        };
        ops::ExtensionUiResponse { id: dialog_id(&p), response }
    }
}
