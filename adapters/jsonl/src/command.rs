//! Decoding one input record of the native dialect into a core `Op`, through
//! the protocol table, or into the exact error response the record deserves.

use pi_core::op::{Op, UiResponse};
use pi_transport::protocol::{self, Binding};
use pi_transport::raw::RawJson;
use pi_transport::{FrameError, Record};
use serde_json::value::RawValue;

/// What one input record asks for.
#[derive(Debug)]
pub enum Incoming {
    /// A command to run; its response echoes `id` and names the command.
    Command { id: Option<Box<RawValue>>, command: &'static Binding, op: Op },
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
    let obj = match RawJson::parse(line) {
        Ok(RawJson::Object(obj)) => obj,
        Ok(RawJson::Array(_)) => return not_an_object("an array"),
        Ok(RawJson::Scalar(kind)) => return not_an_object(kind),
        Err(e) => {
            let detail = if line.trim().is_empty() { "empty line".to_string() } else { e.to_string() };
            return parse_error(detail);
        }
    };
    let id = obj.get("id").map(|raw| raw.to_owned());
    let command = match obj.str("type") {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Incoming::Reject { id, command: None, error: "Invalid command: missing \"type\" field".into() };
        }
        Err(kind) => {
            return Incoming::Reject {
                id,
                command: None,
                error: format!("Invalid command: \"type\" must be a string, got {kind}"),
            };
        }
    };
    let Some(binding) = protocol::native(&command) else {
        return Incoming::Reject {
            id,
            error: format!("Unknown command: {command}"),
            command: Some(command.into_owned()),
        };
    };
    // A dialog answer's `id` is the dialog's: it is one of its params.
    let skip: &[&str] = if command == UI_RESPONSE { &["type"] } else { &["type", "id"] };
    let decoded = match obj.to_map(skip) {
        Ok(params) => binding.decode(&params).map_err(|e| e.message),
        Err((name, e)) => Err(format!("field \"{name}\": {e}")),
    };
    match decoded {
        Ok(Op::ExtensionUiResponse { id, response }) => Incoming::UiResponse { id, response },
        Ok(op) => Incoming::Command { id, command: binding, op },
        Err(message) => Incoming::Reject {
            id,
            error: format!("Invalid {command} command: {message}"),
            command: Some(command.into_owned()),
        },
    }
}

/// The native command that answers a dialog.
const UI_RESPONSE: &str = "extension_ui_response";

fn not_an_object(kind: &str) -> Incoming {
    Incoming::Reject { id: None, command: None, error: format!("Invalid command: expected a JSON object, got {kind}") }
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
                    assert_eq!(command.name, "get_state");
                    assert_eq!(op, Op::GetState);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn ids_survive_duplicates_and_huge_numbers() {
        for (line, raw) in [
            (r#"{"id":1e400,"type":"get_state"}"#, "1e400"),
            (r#"{"id":1,"type":"get_state","id":2}"#, "2"),
            (r#"{"id":"a","id":"b","type":"nope"}"#, "\"b\""),
        ] {
            let id = match decode_line(line) {
                Incoming::Command { id, .. } | Incoming::Reject { id, .. } => id,
                other => panic!("{other:?}"),
            };
            assert_eq!(id.map(|r| r.get().to_string()).as_deref(), Some(raw), "{line}");
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
