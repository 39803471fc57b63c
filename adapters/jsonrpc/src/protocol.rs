//! JSON-RPC 2.0 message classification: requests, notifications, client
//! responses, batches, and the invalid shapes, with ids kept as raw tokens.

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
    /// By-position params (only `[]` is usable: our methods take named params).
    Positional(Vec<Value>),
}

/// The `null` id token.
pub fn null_id() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).unwrap_or_else(|_| Box::<RawValue>::default())
}

/// Read `id` as its raw token (any JSON type, `null` included).
fn raw_id(text: &str) -> Option<Box<RawValue>> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        id: Option<&'a RawValue>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
    }
    serde_json::from_str::<IdOnly<'_>>(text).ok()?.id.map(|r| r.to_owned())
}

fn valid_id(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Null)
}

/// Classify one message given its raw text and parsed value.
pub fn classify(text: &str, value: Value) -> Message {
    let Value::Object(obj) = value else {
        return Message::Invalid { id: null_id(), error: ErrorObject::invalid_request("expected a JSON object") };
    };
    let id_value = obj.get("id");
    let id_ok = id_value.is_none_or(valid_id);
    let id_token = || if id_ok { raw_id(text).unwrap_or_else(null_id) } else { null_id() };
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        let detail = match obj.get("jsonrpc") {
            None => "missing \"jsonrpc\": \"2.0\"".to_string(),
            Some(v) => format!("\"jsonrpc\" must be \"2.0\", got {v}"),
        };
        return Message::Invalid { id: id_token(), error: ErrorObject::invalid_request(&detail) };
    }
    if !id_ok {
        return Message::Invalid {
            id: null_id(),
            error: ErrorObject::invalid_request("\"id\" must be a string, a number or null"),
        };
    }
    match obj.get("method") {
        Some(Value::String(method)) => {
            let params = match obj.get("params") {
                None => Params::Named(Map::new()),
                Some(Value::Object(m)) => Params::Named(m.clone()),
                Some(Value::Array(a)) => Params::Positional(a.clone()),
                Some(other) => {
                    return Message::Invalid {
                        id: id_token(),
                        error: ErrorObject::invalid_request(&format!(
                            "\"params\" must be an object or an array, got {}",
                            pi_jsonl::fields::kind_of(other)
                        )),
                    };
                }
            };
            match id_value {
                Some(_) => Message::Request { id: id_token(), method: method.clone(), params },
                None => Message::Notification { method: method.clone(), params },
            }
        }
        Some(_) => {
            Message::Invalid { id: id_token(), error: ErrorObject::invalid_request("\"method\" must be a string") }
        }
        None if id_value.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            Message::ClientResponse { id: id_token() }
        }
        None => Message::Invalid { id: id_token(), error: ErrorObject::invalid_request("missing \"method\"") },
    }
}

/// A response object.
#[derive(Debug, Serialize)]
pub struct Response<'a> {
    pub jsonrpc: &'static str,
    pub id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<pi_jsonl::wire::ResponseData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// Serialize a success or error response.
pub fn response_bytes(id: &RawValue, outcome: Result<pi_jsonl::wire::ResponseData, ErrorObject>) -> Vec<u8> {
    let (result, error) = match outcome {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    serde_json::to_vec(&Response { jsonrpc: "2.0", id, result, error }).unwrap_or_default()
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
        classify(text, serde_json::from_str(text).unwrap())
    }

    #[test]
    fn ids_of_every_type_are_kept_raw() {
        for raw in ["1", "-1", "1.5", "18446744073709551616", "\"\"", "0", "null", "\"x\""] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"getState"}}"#);
            match cls(&text) {
                Message::Request { id, .. } => assert_eq!(id.get(), raw),
                other => panic!("{other:?}"),
            }
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
        let bytes = response_bytes(&id, Ok(pi_jsonl::wire::ResponseData::Value(serde_json::json!({"ok": true}))));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{"ok":true}}"#
        );
    }
}
