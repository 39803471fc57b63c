//! Typed params of every JSON-RPC method, for the JSON Schema of requests.
//! `methods.rs` decodes params by hand (to name the offending field in
//! `-32602` errors); a unit test keeps this enum and the method table in step.
//! Params may be omitted when a method needs none (`{}` is assumed).

use pi_core::model::ThinkingLevel;
use pi_jsonl::wire_command::{WireImage, WireStreamingBehavior};
use pi_jsonl::wire_data::WireQueueMode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A method call of the client, by `method`, with its `params`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params", rename_all = "camelCase")]
pub enum ClientRequest {
    /// Initialize the session (send it first). Answered, then followed by the `initialized` notification.
    Initialize(InitializeParams),
    /// Send a prompt; answered at once with `{accepted:true}`, output follows as notifications.
    Prompt(PromptParams),
    /// Send a user message: steers a running agent, else starts a run.
    SendUserMessage(MessageParams),
    /// Queue a steering message.
    Steer(MessageParams),
    /// Queue a follow-up message.
    FollowUp(MessageParams),
    /// Abort the current operation.
    Abort(NoParams),
    /// Change the model (`model` may be `provider/id`).
    SetModel(SetModelParams),
    /// Switch to the next available model.
    CycleModel(NoParams),
    /// List the models with usable credentials.
    GetAvailableModels(NoParams),
    /// Change the thinking level.
    SetThinkingLevel(LevelParams),
    /// Switch to the next thinking level.
    CycleThinkingLevel(NoParams),
    /// List the thinking levels of the model.
    GetAvailableThinkingLevels(NoParams),
    /// Set the active tool set.
    SetActiveTools(ToolsParams),
    /// Set how steering messages are delivered.
    SetSteeringMode(ModeParams),
    /// Set how follow-up messages are delivered.
    SetFollowUpMode(ModeParams),
    /// Compact the context now.
    Compact(CompactParams),
    /// Automatic compaction on or off.
    SetAutoCompaction(EnabledParams),
    /// Automatic retry on or off.
    SetAutoRetry(EnabledParams),
    /// Cancel a pending automatic retry.
    AbortRetry(NoParams),
    /// Run a shell command; output streams as `bashOutput`.
    Bash(BashParams),
    /// Abort the running `bash` request.
    AbortBash(NoParams),
    /// Start a new session.
    NewSession(NewSessionParams),
    /// Resume a session by id, id prefix or path.
    ResumeSession(ResumeSessionParams),
    /// Load a session file.
    SwitchSession(SwitchSessionParams),
    /// Fork from a user message.
    Fork(ForkParams),
    /// Copy the active branch into a new session.
    Clone(NoParams),
    /// User messages one can fork from.
    GetForkMessages(NoParams),
    /// Session entries in append order.
    GetEntries(EntriesParams),
    /// The session tree.
    GetTree(NoParams),
    /// The full session state (native `get_state` data).
    GetState(NoParams),
    /// A short status.
    GetStatus(NoParams),
    /// The conversation's messages.
    GetMessages(NoParams),
    /// Token, cost and context statistics.
    GetSessionStats(NoParams),
    /// Text of the last assistant message.
    GetLastAssistantText(NoParams),
    /// Export the session as HTML.
    ExportHtml(ExportHtmlParams),
    /// Set the session's display name.
    SetSessionName(NameParams),
    /// Extension commands, templates and skills.
    GetCommands(NoParams),
    /// Empty both queues.
    ClearQueue(NoParams),
    /// Abort everything, answer, and exit.
    Shutdown(NoParams),
    /// The answer to an `extension:ui` dialog (also accepted as a notification).
    #[serde(rename = "extension:response")]
    ExtensionResponse(ExtensionResponseParams),
}

/// No params (send `{}` or leave `params` out).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NoParams {}

/// `initialize` params (all optional).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Working directory of the session.
    pub cwd: Option<String>,
    /// Model id or `provider/id`.
    pub model: Option<String>,
    /// Provider of the model.
    pub provider: Option<String>,
    /// API key for the provider.
    pub api_key: Option<String>,
    /// Thinking level.
    pub thinking_level: Option<ThinkingLevel>,
    /// Active tools.
    pub tools: Option<Vec<String>>,
}

/// `prompt` params: `content` (or the native name `message`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [{"required": ["content"]}, {"required": ["message"]}]))]
pub struct PromptParams {
    /// The prompt text.
    pub content: Option<String>,
    /// Alias of `content`.
    pub message: Option<String>,
    /// Images to attach.
    pub images: Option<Vec<WireImage>>,
    /// How to queue the prompt while the agent is streaming.
    pub streaming_behavior: Option<WireStreamingBehavior>,
}

/// `sendUserMessage`, `steer`, `followUp` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(extend("anyOf" = [{"required": ["content"]}, {"required": ["message"]}]))]
pub struct MessageParams {
    /// The message text.
    pub content: Option<String>,
    /// Alias of `content`.
    pub message: Option<String>,
    /// Images to attach.
    pub images: Option<Vec<WireImage>>,
}

/// `setModel` params: `model` (or `modelId`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [{"required": ["model"]}, {"required": ["modelId"]}]))]
pub struct SetModelParams {
    /// Model id or `provider/id`.
    pub model: Option<String>,
    /// Alias of `model`.
    pub model_id: Option<String>,
    /// Provider to search.
    pub provider: Option<String>,
}

/// `setThinkingLevel` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct LevelParams {
    /// The level.
    pub level: ThinkingLevel,
}

/// `setActiveTools` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolsParams {
    /// Tool names.
    pub tools: Vec<String>,
}

/// `setSteeringMode`, `setFollowUpMode` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ModeParams {
    /// `all` or `one-at-a-time`.
    pub mode: WireQueueMode,
}

/// `compact` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactParams {
    /// Extra instructions for the summary.
    pub prompt: Option<String>,
    /// Alias of `prompt`.
    pub custom_instructions: Option<String>,
}

/// `setAutoCompaction`, `setAutoRetry` params.
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

/// `newSession` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    /// Session file to record as the parent.
    pub parent_session: Option<String>,
}

/// `resumeSession` params: `sessionId` (or `sessionPath`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [{"required": ["sessionId"]}, {"required": ["sessionPath"]}]))]
pub struct ResumeSessionParams {
    /// Session id or a unique prefix.
    pub session_id: Option<String>,
    /// Path of a session file.
    pub session_path: Option<String>,
}

/// `switchSession` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwitchSessionParams {
    /// Path of the session file.
    pub session_path: String,
}

/// `fork` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkParams {
    /// Entry id of a user message.
    pub entry_id: String,
}

/// `getEntries` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct EntriesParams {
    /// Only entries strictly after this entry id.
    pub since: Option<String>,
}

/// `exportHtml` params.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportHtmlParams {
    /// Where to write.
    pub output_path: Option<String>,
}

/// `setSessionName` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct NameParams {
    /// The name.
    pub name: String,
}

/// `extension:response` notification params (client → server).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ExtensionResponseParams {
    /// The `id` of the `extension:ui` request.
    pub id: Option<String>,
    /// The extension's name (informational).
    pub extension: Option<String>,
    /// The answer: a string (select, input, editor), a boolean (confirm), or null to cancel.
    pub result: Option<Value>,
    /// True to dismiss the dialog.
    pub cancelled: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::METHOD_TABLE;

    #[test]
    fn every_method_has_typed_params() {
        let schema = serde_json::to_value(schemars::schema_for!(ClientRequest)).unwrap();
        let consts: Vec<String> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["properties"]["method"]["const"].as_str().unwrap().to_string())
            .collect();
        let table: Vec<String> = METHOD_TABLE.iter().map(|(m, _)| m.to_string()).collect();
        assert_eq!(consts, table);
    }
}
