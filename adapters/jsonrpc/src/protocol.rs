//! JSON-RPC 2.0 message classification: requests, notifications, client
//! responses, batches, and the invalid shapes, with ids kept as raw tokens.

use pi_transport::raw::{RawJson, RawObject, kind_of_raw};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::errors::ErrorObject;

/// One incoming message after classification.
#[derive(Debug)]
pub enum Message {
    Request {
        id: Box<RawValue>,
        method: String,
        params: Params,
    },
    Notification {
        method: String,
        params: Params,
    },
    /// A response object (to a server→client request).
    ClientResponse {
        id: Box<RawValue>,
    },
    /// Invalid: answer with this error (id is `null` when it cannot be read).
    Invalid {
        id: Box<RawValue>,
        error: ErrorObject,
    },
}

/// Request params.
#[derive(Debug)]
pub enum Params {
    Named(Map<String, Value>),
    /// By-position params, by count (only `[]` is usable: our methods take named params).
    Positional(usize),
}

pub use pi_transport::raw::null_id;

fn valid_id(raw: &RawValue) -> bool {
    matches!(kind_of_raw(raw), "a string" | "a number" | "null")
}

/// Classify one message object (ids stay raw tokens).
pub fn classify(obj: &RawObject<'_>) -> Message {
    let id_raw = obj.get("id");
    let id_ok = id_raw.is_none_or(valid_id);
    let id_token = || match id_raw {
        Some(raw) if id_ok => raw.to_owned(),
        _ => null_id(),
    };
    if obj.str("jsonrpc").ok().flatten().as_deref() != Some("2.0") {
        let detail = match obj.get("jsonrpc") {
            None => "missing \"jsonrpc\": \"2.0\"".to_string(),
            Some(v) => format!("\"jsonrpc\" must be \"2.0\", got {}", v.get()),
        };
        return Message::Invalid { id: id_token(), error: ErrorObject::invalid_request(&detail) };
    }
    if !id_ok {
        return Message::Invalid {
            id: null_id(),
            error: ErrorObject::invalid_request("\"id\" must be a string, a number or null"),
        };
    }
    match obj.string("method") {
        Ok(Some(method)) => {
            let params = match obj.get("params") {
                None => Params::Named(Map::new()),
                Some(raw) => match RawJson::parse(raw.get()) {
                    Ok(RawJson::Object(_)) => match serde_json::from_str(raw.get()) {
                        Ok(map) => Params::Named(map),
                        Err(e) => {
                            let error = ErrorObject::invalid_params("params", &e.to_string());
                            return Message::Invalid { id: id_token(), error };
                        }
                    },
                    Ok(RawJson::Array(items)) => Params::Positional(items.len()),
                    _ => {
                        return Message::Invalid {
                            id: id_token(),
                            error: ErrorObject::invalid_request(&format!(
                                "\"params\" must be an object or an array, got {}",
                                kind_of_raw(raw)
                            )),
                        };
                    }
                },
            };
            match id_raw {
                Some(_) => Message::Request { id: id_token(), method, params },
                None => Message::Notification { method, params },
            }
        }
        Err(_) => {
            Message::Invalid { id: id_token(), error: ErrorObject::invalid_request("\"method\" must be a string") }
        }
        Ok(None) if id_raw.is_some() && (obj.contains("result") || obj.contains("error")) => {
            Message::ClientResponse { id: id_token() }
        }
        Ok(None) => Message::Invalid { id: id_token(), error: ErrorObject::invalid_request("missing \"method\"") },
    }
}

/// A response object.
#[derive(Debug, Serialize)]
pub struct Response<'a> {
    pub jsonrpc: &'static str,
    pub id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// Serialize a success or error response.
pub fn response_bytes(id: &RawValue, outcome: Result<Box<RawValue>, ErrorObject>) -> Vec<u8> {
    let (result, error) = match outcome {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    serde_json::to_vec(&Response { jsonrpc: "2.0", id, result, error }).unwrap_or_default()
}

/// A success response up to its result, `{"jsonrpc":"2.0","id":…,"result":`
/// (the result and a closing `}` follow): the head [`response_bytes`] writes.
pub fn response_head(id: &RawValue) -> Option<Vec<u8>> {
    let mut head = serde_json::to_vec(&Response { jsonrpc: "2.0", id, result: None, error: None }).ok()?;
    head.pop_if(|last| *last == b'}')?;
    head.extend_from_slice(b",\"result\":");
    Some(head)
}

/// Serialize a notification: `{"jsonrpc":"2.0","method":…,"params":…}`.
pub fn notification_bytes(notification: &crate::wire::ServerNotification) -> Vec<u8> {
    #[derive(Serialize)]
    struct Line<'a> {
        jsonrpc: &'static str,
        #[serde(flatten)]
        notification: &'a crate::wire::ServerNotification,
    }
    serde_json::to_vec(&Line { jsonrpc: "2.0", notification }).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cls(text: &str) -> Message {
        match RawJson::parse(text).unwrap() {
            RawJson::Object(obj) => classify(&obj),
            _ => Message::Invalid { id: null_id(), error: ErrorObject::invalid_request("expected a JSON object") },
        }
    }

    #[test]
    fn ids_of_every_type_are_kept_raw() {
        for raw in ["1", "-1", "1.5", "18446744073709551616", "1e400", "\"\"", "0", "null", "\"x\""] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"getState"}}"#);
            match cls(&text) {
                Message::Request { id, .. } => assert_eq!(id.get(), raw),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_repeated_id_keeps_the_last_value() {
        match cls(r#"{"jsonrpc":"2.0","id":1,"method":"getState","id":"b"}"#) {
            Message::Request { id, .. } => assert_eq!(id.get(), r#""b""#),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_shapes() {
        assert!(matches!(cls(r#"{"id":1,"method":"x"}"#), Message::Invalid { ref id, .. } if id.get() == "1"));
        assert!(matches!(cls(r#"{"jsonrpc":"1.0","id":2,"method":"x"}"#), Message::Invalid { .. }));
        assert!(
            matches!(cls(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#), Message::Invalid { ref id, .. } if id.get() == "null")
        );
        assert!(matches!(cls(r#"{"jsonrpc":"2.0","id":3,"method":1}"#), Message::Invalid { .. }));
        assert!(matches!(cls(r#"{"jsonrpc":"2.0","id":3,"method":"x","params":"bar"}"#), Message::Invalid { .. }));
        assert!(matches!(cls("42"), Message::Invalid { .. }));
        assert!(matches!(
            cls(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#),
            Message::Notification { .. }
        ));
        assert!(matches!(cls(r#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#), Message::ClientResponse { .. }));
    }

    #[test]
    fn responses_serialize_with_the_raw_id() {
        let id = RawValue::from_string("18446744073709551616".into()).unwrap();
        let bytes = response_bytes(&id, Ok(serde_json::value::to_raw_value(&serde_json::json!({"ok": true})).unwrap()));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{"ok":true}}"#
        );
    }
}
