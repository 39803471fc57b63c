//! Typed description of the native dialect's input lines, for the JSON
//! Schema of commands. The decoder (`command.rs`) reads fields by hand so that
//! it can word its errors like pi; a unit test keeps this enum and the
//! decoder's command list in step.
//!
//! Every command may also carry an `id` of any JSON type, echoed verbatim on
//! its response (the schema generator adds it to every variant).

use pi_core::message::ImageContent;
use pi_core::model::ThinkingLevel;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::wire_data::WireQueueMode;

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

/// A command line of the native dialect (`{"type": …, "id"?: …, …}`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WireCommand {
    /// Send a user prompt. Answered once the prompt is accepted, queued or handled;
    /// failures after acceptance show up in the event stream.
    Prompt {
        /// The prompt text (`/template args` and `/skill:name` are expanded).
        message: String,
        /// Images to attach.
        #[serde(default)]
        images: Option<Vec<WireImage>>,
        /// Required while the agent is streaming: how to queue the prompt.
        #[serde(default)]
        streaming_behavior: Option<WireStreamingBehavior>,
    },
    /// Queue a steering message, delivered after the current turn's tool calls.
    Steer {
        /// The message text.
        message: String,
        /// Images to attach.
        #[serde(default)]
        images: Option<Vec<WireImage>>,
    },
    /// Queue a follow-up message, delivered when the agent would stop.
    FollowUp {
        /// The message text.
        message: String,
        /// Images to attach.
        #[serde(default)]
        images: Option<Vec<WireImage>>,
    },
    /// Abort the current operation.
    Abort,
    /// Start a new session.
    NewSession {
        /// Session file to record as the parent.
        #[serde(default)]
        parent_session: Option<String>,
    },
    /// Get the session state.
    GetState,
    /// Get the conversation's messages.
    GetMessages,
    /// Switch to a model.
    SetModel {
        /// Provider name.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// Switch to the next available model.
    CycleModel,
    /// List the models with usable credentials.
    GetAvailableModels,
    /// Set the thinking level.
    SetThinkingLevel {
        /// The level.
        level: ThinkingLevel,
    },
    /// Switch to the next thinking level the model supports.
    CycleThinkingLevel,
    /// List the thinking levels the model supports.
    GetAvailableThinkingLevels,
    /// Set how steering messages are delivered.
    SetSteeringMode {
        /// `all` or `one-at-a-time`.
        mode: WireQueueMode,
    },
    /// Set how follow-up messages are delivered.
    SetFollowUpMode {
        /// `all` or `one-at-a-time`.
        mode: WireQueueMode,
    },
    /// Compact the conversation now.
    Compact {
        /// Extra instructions for the summary.
        #[serde(default)]
        custom_instructions: Option<String>,
    },
    /// Turn automatic compaction on or off.
    SetAutoCompaction {
        /// On or off.
        enabled: bool,
    },
    /// Turn automatic retries on or off.
    SetAutoRetry {
        /// On or off.
        enabled: bool,
    },
    /// Cancel a pending automatic retry.
    AbortRetry,
    /// Run a shell command; its output is streamed as `bash_execution_update`
    /// and added to the context at the next prompt.
    Bash {
        /// The command line.
        command: String,
        /// Keep the output out of the model's context.
        #[serde(default)]
        exclude_from_context: Option<bool>,
    },
    /// Abort the running `bash` command.
    AbortBash,
    /// Token, cost and context statistics.
    GetSessionStats,
    /// Export the session as a self-contained HTML file.
    ExportHtml {
        /// Where to write (default: `pi-session-<session file name>.html` in the cwd).
        #[serde(default)]
        output_path: Option<String>,
    },
    /// Load another session file.
    SwitchSession {
        /// Path of the session file.
        session_path: String,
    },
    /// Fork a new session from a user message of the active branch.
    Fork {
        /// The user message's entry id (see `get_fork_messages`).
        entry_id: String,
    },
    /// Copy the active branch into a new session.
    Clone,
    /// List the user messages one can fork from.
    GetForkMessages,
    /// Session entries in append order.
    GetEntries {
        /// Only entries strictly after this entry id.
        #[serde(default)]
        since: Option<String>,
    },
    /// The session as a tree of entries.
    GetTree,
    /// Text of the last assistant message.
    GetLastAssistantText,
    /// Set the session's display name.
    SetSessionName {
        /// The name (trimmed; must not be empty).
        name: String,
    },
    /// Extension commands, prompt templates and skills.
    GetCommands,
    /// Empty both message queues and return what they held.
    ClearQueue,
    /// The answer to an extension dialog (no response is sent for it).
    ExtensionUiResponse {
        /// The request's id.
        id: String,
        /// `select`, `input`, `editor`: the chosen or typed text.
        #[serde(default)]
        value: Option<Value>,
        /// `confirm`: the answer.
        #[serde(default)]
        confirmed: Option<bool>,
        /// True when the user dismissed the dialog.
        #[serde(default)]
        cancelled: Option<bool>,
    },
}

/// The `type` of every variant of [`WireCommand`], in declaration order.
pub const WIRE_COMMAND_TYPES: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "new_session",
    "get_state",
    "get_messages",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_entries",
    "get_tree",
    "get_last_assistant_text",
    "set_session_name",
    "get_commands",
    "clear_queue",
    "extension_ui_response",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Incoming, decode_line};

    #[test]
    fn the_typed_commands_match_the_decoder() {
        // Every typed command is one the decoder knows, and nothing else is.
        for t in WIRE_COMMAND_TYPES.iter().chain(["no_such_command"].iter()) {
            let known = !matches!(
                decode_line(&format!("{{\"type\":\"{t}\"}}")),
                Incoming::Reject { ref error, .. } if error.starts_with("Unknown command")
            );
            assert_eq!(known, *t != "no_such_command", "{t}");
        }
        let schema = schemars::schema_for!(WireCommand);
        let text = serde_json::to_string(&schema).unwrap();
        for t in WIRE_COMMAND_TYPES {
            assert!(text.contains(&format!("\"const\":\"{t}\"")), "{t} missing from the schema");
        }
    }

    #[test]
    fn typed_commands_parse_seed_examples() {
        for line in [
            r#"{"type":"prompt","message":"Hi","images":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"type":"prompt","message":"New instruction","streamingBehavior":"steer"}"#,
            r#"{"type":"set_model","provider":"anthropic","modelId":"claude-sonnet-4-20250514"}"#,
            r#"{"type":"set_steering_mode","mode":"one-at-a-time"}"#,
            r#"{"type":"set_thinking_level","level":"xhigh"}"#,
            r#"{"type":"extension_ui_response","id":"uuid-2","confirmed":true}"#,
        ] {
            let parsed: Result<WireCommand, _> = serde_json::from_str(line);
            assert!(parsed.is_ok(), "{line}: {parsed:?}");
        }
    }
}
