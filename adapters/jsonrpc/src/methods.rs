//! The method table (JSON-RPC method ↔ native command type) and the decoding
//! of each method's params into a core `Op`.

use pi_core::op::{InitializeParams, Op, StreamingBehavior};
use pi_jsonl::fields::{FieldError, Fields};
use serde_json::{Map, Value};

/// Every JSON-RPC method with the native command it corresponds to (`None`:
/// JSON-RPC only). This is the table the README shows.
pub const METHOD_TABLE: &[(&str, Option<&str>)] = &[
    ("initialize", None),
    ("prompt", Some("prompt")),
    ("sendUserMessage", None),
    ("steer", Some("steer")),
    ("followUp", Some("follow_up")),
    ("abort", Some("abort")),
    ("setModel", Some("set_model")),
    ("cycleModel", Some("cycle_model")),
    ("getAvailableModels", Some("get_available_models")),
    ("setThinkingLevel", Some("set_thinking_level")),
    ("cycleThinkingLevel", Some("cycle_thinking_level")),
    ("getAvailableThinkingLevels", Some("get_available_thinking_levels")),
    ("setActiveTools", None),
    ("setSteeringMode", Some("set_steering_mode")),
    ("setFollowUpMode", Some("set_follow_up_mode")),
    ("compact", Some("compact")),
    ("setAutoCompaction", Some("set_auto_compaction")),
    ("setAutoRetry", Some("set_auto_retry")),
    ("abortRetry", Some("abort_retry")),
    ("bash", Some("bash")),
    ("abortBash", Some("abort_bash")),
    ("newSession", Some("new_session")),
    ("resumeSession", None),
    ("switchSession", Some("switch_session")),
    ("fork", Some("fork")),
    ("clone", Some("clone")),
    ("getForkMessages", Some("get_fork_messages")),
    ("getEntries", Some("get_entries")),
    ("getTree", Some("get_tree")),
    ("getState", Some("get_state")),
    ("getStatus", None),
    ("getMessages", Some("get_messages")),
    ("getSessionStats", Some("get_session_stats")),
    ("getLastAssistantText", Some("get_last_assistant_text")),
    ("exportHtml", Some("export_html")),
    ("setSessionName", Some("set_session_name")),
    ("getCommands", Some("get_commands")),
    ("clearQueue", Some("clear_queue")),
    ("shutdown", None),
    ("extension:response", Some("extension_ui_response")),
];

/// What a method call becomes.
#[derive(Debug, PartialEq)]
pub enum Call {
    Op(Op),
    /// `getStatus`: answered from a `GetState` snapshot.
    Status,
}

/// Decode `method` with its params. `Ok(None)`: no such method.
pub fn decode(method: &str, params: &Map<String, Value>) -> Result<Option<Call>, FieldError> {
    let f = Fields::new(params);
    let op = match method {
        "initialize" => Op::Initialize(InitializeParams {
            cwd: f.opt_str("cwd")?,
            model: f.opt_str("model")?,
            provider: f.opt_str("provider")?,
            api_key: f.opt_str("apiKey")?,
            thinking_level: match f.raw("thinkingLevel") {
                None | Some(Value::Null) => None,
                Some(_) => Some(f.thinking_level("thinkingLevel")?),
            },
            tools: f.opt_str_list("tools")?,
        }),
        "prompt" => Op::Prompt {
            message: content(&f)?,
            images: f.images("images")?,
            streaming_behavior: streaming_behavior(&f)?,
        },
        "sendUserMessage" => Op::SendUserMessage { message: content(&f)?, images: f.images("images")? },
        "steer" => Op::Steer { message: content(&f)?, images: f.images("images")? },
        "followUp" => Op::FollowUp { message: content(&f)?, images: f.images("images")? },
        "abort" => Op::Abort,
        "setModel" => {
            let model = match f.opt_str("model")? {
                Some(m) => m,
                None => f.opt_str("modelId")?.ok_or_else(|| FieldError::new("model", "'model' is required"))?,
            };
            Op::SetModel { provider: f.opt_str("provider")?, model_id: model }
        }
        "cycleModel" => Op::CycleModel,
        "getAvailableModels" => Op::GetAvailableModels,
        "setThinkingLevel" => Op::SetThinkingLevel { level: f.thinking_level("level")? },
        "cycleThinkingLevel" => Op::CycleThinkingLevel,
        "getAvailableThinkingLevels" => Op::GetAvailableThinkingLevels,
        "setActiveTools" => Op::SetActiveTools {
            tools: f.opt_str_list("tools")?.ok_or_else(|| FieldError::new("tools", "'tools' is required"))?,
        },
        "setSteeringMode" => Op::SetSteeringMode { mode: f.queue_mode("mode")? },
        "setFollowUpMode" => Op::SetFollowUpMode { mode: f.queue_mode("mode")? },
        "compact" => Op::Compact {
            custom_instructions: match f.opt_str("prompt")? {
                Some(p) => Some(p),
                None => f.opt_str("customInstructions")?,
            },
        },
        "setAutoCompaction" => Op::SetAutoCompaction { enabled: f.req_bool("enabled")? },
        "setAutoRetry" => Op::SetAutoRetry { enabled: f.req_bool("enabled")? },
        "abortRetry" => Op::AbortRetry,
        "bash" => Op::Bash {
            command: f.req_str("command")?,
            exclude_from_context: f.opt_bool("excludeFromContext")?.unwrap_or(false),
        },
        "abortBash" => Op::AbortBash,
        "newSession" => Op::NewSession { parent_session: f.opt_str("parentSession")? },
        "resumeSession" => {
            let reference = match f.opt_str("sessionId")? {
                Some(id) => id,
                None => {
                    f.opt_str("sessionPath")?.ok_or_else(|| FieldError::new("sessionId", "'sessionId' is required"))?
                }
            };
            Op::ResumeSession { reference }
        }
        "switchSession" => Op::SwitchSession { session_path: f.req_str("sessionPath")? },
        "fork" => Op::Fork { entry_id: f.req_str("entryId")? },
        "clone" => Op::Clone,
        "getForkMessages" => Op::GetForkMessages,
        "getEntries" => Op::GetEntries { since: f.opt_str("since")? },
        "getTree" => Op::GetTree,
        "getState" => Op::GetState,
        "getStatus" => return Ok(Some(Call::Status)),
        "getMessages" => Op::GetMessages,
        "getSessionStats" => Op::GetSessionStats,
        "getLastAssistantText" => Op::GetLastAssistantText,
        "exportHtml" => Op::ExportHtml { output_path: f.opt_str("outputPath")? },
        "setSessionName" => Op::SetSessionName { name: f.req_str("name")? },
        "getCommands" => Op::GetCommands,
        "clearQueue" => Op::ClearQueue,
        "shutdown" => Op::Shutdown { abort: true },
        crate::ui::RESPONSE_METHOD => crate::ui::response_op(params),
        _ => return Ok(None),
    };
    Ok(Some(Call::Op(op)))
}

/// `content` (the seed's name) or `message` (the native name).
fn content(f: &Fields<'_>) -> Result<String, FieldError> {
    match f.opt_str("content")? {
        Some(c) => Ok(c),
        None => f.opt_str("message")?.ok_or_else(|| FieldError::new("content", "'content' is required")),
    }
}

fn streaming_behavior(f: &Fields<'_>) -> Result<Option<StreamingBehavior>, FieldError> {
    match f.opt_str("streamingBehavior")?.as_deref() {
        None => Ok(None),
        Some("steer") => Ok(Some(StreamingBehavior::Steer)),
        Some("followUp") => Ok(Some(StreamingBehavior::FollowUp)),
        Some(other) => Err(FieldError::new(
            "streamingBehavior",
            format!("streamingBehavior must be \"steer\" or \"followUp\", got \"{other}\""),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_table_method_decodes() {
        let p = params(serde_json::json!({
            "content": "x", "model": "m", "level": "high", "tools": ["read"], "mode": "all", "enabled": true,
            "command": "ls", "sessionId": "s", "sessionPath": "p", "entryId": "e", "name": "n"
        }));
        for (method, _) in METHOD_TABLE {
            assert!(decode(method, &p).unwrap().is_some(), "{method}");
        }
        assert!(decode("nope", &p).unwrap().is_none());
    }

    #[test]
    fn missing_content_names_the_field() {
        let e = decode("prompt", &Map::new()).unwrap_err();
        assert_eq!(e.field, "content");
        assert_eq!(e.message, "'content' is required");
    }
}
