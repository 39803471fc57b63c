//! Decoding one input record of the native dialect into a core `Op`, or into
//! the exact error response the record deserves.

use pi_core::op::{Op, StreamingBehavior, UiResponse};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::fields::{FieldError, Fields, kind_of};
use crate::framing::{FrameError, Record};

/// What one input record asks for.
#[derive(Debug)]
pub enum Incoming {
    /// A command to run; its response echoes `id` and names `command`.
    Command { id: Option<Box<RawValue>>, command: String, op: Op },
    /// An answer to an extension dialog: consumed without a response.
    UiResponse { id: Option<String>, response: UiResponse },
    /// A record that gets an error response at once.
    Reject { id: Option<Box<RawValue>>, command: Option<String>, error: String },
}

/// Decode one framed record.
pub fn decode_record(record: Record) -> Incoming {
    let line = match record {
        Ok(line) => line,
        Err(FrameError::TooLong { len, limit }) => {
            return parse_error(format!("line of {len} bytes exceeds the {limit}-byte limit"));
        }
        Err(FrameError::InvalidUtf8 { offset }) => return parse_error(format!("invalid UTF-8 at byte {offset}")),
        Err(FrameError::Header(detail)) => return parse_error(detail),
    };
    decode_line(&line)
}

fn parse_error(detail: String) -> Incoming {
    Incoming::Reject {
        id: None,
        command: Some("parse".to_string()),
        error: format!("Failed to parse command: {detail}"),
    }
}

/// Decode one line of text.
pub fn decode_line(line: &str) -> Incoming {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            let detail = if line.trim().is_empty() { "empty line".to_string() } else { e.to_string() };
            return parse_error(detail);
        }
    };
    let Value::Object(obj) = value else {
        return Incoming::Reject {
            id: None,
            command: None,
            error: format!("Invalid command: expected a JSON object, got {}", kind_of(&value)),
        };
    };
    let id = raw_id(line);
    let command = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        None => {
            return Incoming::Reject { id, command: None, error: "Invalid command: missing \"type\" field".into() };
        }
        Some(other) => {
            return Incoming::Reject {
                id,
                command: None,
                error: format!("Invalid command: \"type\" must be a string, got {}", kind_of(other)),
            };
        }
    };
    if command == "extension_ui_response" {
        return ui_response(&obj);
    }
    match build_op(&command, &obj) {
        Ok(Some(op)) => Incoming::Command { id, command, op },
        Ok(None) => Incoming::Reject { id, error: format!("Unknown command: {command}"), command: Some(command) },
        Err(e) => {
            Incoming::Reject { id, error: format!("Invalid {command} command: {}", e.message), command: Some(command) }
        }
    }
}

/// The `id` member exactly as written (any JSON type, `null` included), if present.
fn raw_id(line: &str) -> Option<Box<RawValue>> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        id: Option<&'a RawValue>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
    }
    let parsed: IdOnly<'_> = serde_json::from_str(line).ok()?;
    parsed.id.map(|r| r.to_owned())
}

fn ui_response(obj: &Map<String, Value>) -> Incoming {
    let id = match obj.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let response = if obj.get("cancelled") == Some(&Value::Bool(true)) {
        UiResponse::Cancelled
    } else if let Some(Value::Bool(b)) = obj.get("confirmed") {
        UiResponse::Confirmed(*b)
    } else if let Some(v) = obj.get("value") {
        UiResponse::Value(v.clone())
    } else {
        UiResponse::Cancelled
    };
    Incoming::UiResponse { id, response }
}

fn build_op(command: &str, obj: &Map<String, Value>) -> Result<Option<Op>, FieldError> {
    let f = Fields::new(obj);
    let op = match command {
        "prompt" => Op::Prompt {
            message: f.req_str("message")?,
            images: f.images("images")?,
            streaming_behavior: match f.opt_str("streamingBehavior")?.as_deref() {
                None => None,
                Some("steer") => Some(StreamingBehavior::Steer),
                Some("followUp") => Some(StreamingBehavior::FollowUp),
                Some(other) => {
                    return Err(FieldError::new(
                        "streamingBehavior",
                        format!("invalid streamingBehavior \"{other}\": expected \"steer\" or \"followUp\""),
                    ));
                }
            },
        },
        "steer" => Op::Steer { message: f.req_str("message")?, images: f.images("images")? },
        "follow_up" => Op::FollowUp { message: f.req_str("message")?, images: f.images("images")? },
        "abort" => Op::Abort,
        "new_session" => Op::NewSession { parent_session: f.opt_str("parentSession")? },
        "get_state" => Op::GetState,
        "get_messages" => Op::GetMessages,
        "set_model" => Op::SetModel { provider: f.opt_str("provider")?, model_id: f.req_str("modelId")? },
        "cycle_model" => Op::CycleModel,
        "get_available_models" => Op::GetAvailableModels,
        "set_thinking_level" => Op::SetThinkingLevel { level: f.thinking_level("level")? },
        "cycle_thinking_level" => Op::CycleThinkingLevel,
        "get_available_thinking_levels" => Op::GetAvailableThinkingLevels,
        "set_steering_mode" => Op::SetSteeringMode { mode: f.queue_mode("mode")? },
        "set_follow_up_mode" => Op::SetFollowUpMode { mode: f.queue_mode("mode")? },
        "compact" => Op::Compact { custom_instructions: f.opt_str("customInstructions")? },
        "set_auto_compaction" => Op::SetAutoCompaction { enabled: f.req_bool("enabled")? },
        "set_auto_retry" => Op::SetAutoRetry { enabled: f.req_bool("enabled")? },
        "abort_retry" => Op::AbortRetry,
        "bash" => Op::Bash {
            command: f.req_str("command")?,
            exclude_from_context: f.opt_bool("excludeFromContext")?.unwrap_or(false),
        },
        "abort_bash" => Op::AbortBash,
        "get_session_stats" => Op::GetSessionStats,
        "export_html" => Op::ExportHtml { output_path: f.opt_str("outputPath")? },
        "switch_session" => Op::SwitchSession { session_path: f.req_str("sessionPath")? },
        "fork" => Op::Fork { entry_id: f.req_str("entryId")? },
        "clone" => Op::Clone,
        "get_fork_messages" => Op::GetForkMessages,
        "get_entries" => Op::GetEntries { since: f.opt_str("since")? },
        "get_tree" => Op::GetTree,
        "get_last_assistant_text" => Op::GetLastAssistantText,
        "set_session_name" => Op::SetSessionName { name: f.req_str("name")? },
        "get_commands" => Op::GetCommands,
        "clear_queue" => Op::ClearQueue,
        _ => return Ok(None),
    };
    Ok(Some(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reject(line: &str) -> (Option<String>, Option<String>, String) {
        match decode_line(line) {
            Incoming::Reject { id, command, error } => (id.map(|r| r.get().to_string()), command, error),
            other => panic!("expected a rejection for {line}, got {other:?}"),
        }
    }

    #[test]
    fn ids_are_kept_verbatim() {
        for raw in ["\"a\"", "42", "-1", "1.5", "18446744073709551616", "{\"nested\":[1]}", "null", "0", "\"\""] {
            let line = format!("{{\"id\":{raw},\"type\":\"get_state\"}}");
            match decode_line(&line) {
                Incoming::Command { id, command, op } => {
                    assert_eq!(id.unwrap().get(), raw);
                    assert_eq!(command, "get_state");
                    assert_eq!(op, Op::GetState);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn bad_input_gets_clear_errors() {
        let (id, cmd, err) = reject("this is not json");
        assert_eq!((id, cmd.as_deref()), (None, Some("parse")));
        assert!(err.starts_with("Failed to parse command: "), "{err}");
        assert_eq!(reject("").2, "Failed to parse command: empty line");
        assert!(reject("null").2.contains("got null"));
        assert!(reject("[1,2]").2.contains("got an array"));
        assert!(reject("42").2.contains("got a number"));
        let (id, cmd, err) = reject(r#"{"id":"u2"}"#);
        assert_eq!((id.as_deref(), cmd), (Some("\"u2\""), None));
        assert!(err.contains("missing \"type\""));
        let (id, cmd, err) = reject(r#"{"id":"u1","type":"no_such_command"}"#);
        assert_eq!((id.as_deref(), cmd.as_deref()), (Some("\"u1\""), Some("no_such_command")));
        assert_eq!(err, "Unknown command: no_such_command");
        let (_, _, err) = reject(r#"{"type":"prompt"}"#);
        assert_eq!(err, "Invalid prompt command: missing required field \"message\" (a string)");
        let (_, _, err) = reject(r#"{"type":"set_auto_retry","enabled":"yes"}"#);
        assert_eq!(err, "Invalid set_auto_retry command: field \"enabled\" must be a boolean, got a string");
        let (_, _, err) = reject(r#"{"type":"set_thinking_level","level":"bogus"}"#);
        assert!(err.contains("Invalid thinking level: bogus"), "{err}");
        let (_, _, err) = reject(r#"{"type":"set_steering_mode","mode":"bogus"}"#);
        assert!(err.contains("Invalid mode: bogus"), "{err}");
    }

    #[test]
    fn framing_errors_become_parse_errors() {
        match decode_record(Err(FrameError::InvalidUtf8 { offset: 3 })) {
            Incoming::Reject { command, error, .. } => {
                assert_eq!(command.as_deref(), Some("parse"));
                assert_eq!(error, "Failed to parse command: invalid UTF-8 at byte 3");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ui_responses_are_recognised() {
        match decode_line(r#"{"type":"extension_ui_response","id":"u-1","confirmed":true}"#) {
            Incoming::UiResponse { id, response } => {
                assert_eq!(id.as_deref(), Some("u-1"));
                assert_eq!(response, UiResponse::Confirmed(true));
            }
            other => panic!("{other:?}"),
        }
    }
}
