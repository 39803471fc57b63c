//! The JSON-RPC 2.0 envelope of ACP messages: what a record is (request,
//! notification, response) with its id kept raw, and the bytes of what we send.

use agent_client_protocol_schema::v1 as acp;
use pi_transport::raw::{RawJson, null_id};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// One message from the client.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Box<RawValue>,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// The answer to one of our requests.
    Response {
        id: Box<RawValue>,
        result: Result<Value, acp::Error>,
    },
    /// Not a JSON-RPC message: answered with this error.
    Invalid {
        id: Box<RawValue>,
        error: acp::Error,
    },
}

fn invalid(id: Box<RawValue>, detail: &str) -> Incoming {
    Incoming::Invalid { id, error: acp::Error::invalid_request().data(Value::String(detail.to_string())) }
}

/// Classify one record's text.
pub fn classify(text: &str) -> Incoming {
    let object = match RawJson::parse(text) {
        Ok(RawJson::Object(object)) => object,
        Ok(_) => return invalid(null_id(), "expected a JSON object"),
        Err(e) => {
            return Incoming::Invalid {
                id: null_id(),
                error: acp::Error::parse_error().data(Value::String(e.to_string())),
            };
        }
    };
    let id = object.get("id").map(|raw| raw.to_owned());
    let valid_id = id
        .as_deref()
        .map(|raw| raw.get().starts_with(['"', '-']) || raw.get().starts_with(|c: char| c.is_ascii_digit()));
    // An id that is not a string or a number is not echoed: JSON-RPC 2.0
    // answers with `id: null` when the id cannot be read.
    let error_id = || match (&id, valid_id) {
        (Some(id), Some(true)) => id.clone(),
        _ => null_id(),
    };
    if object.get("jsonrpc").map(RawValue::get) != Some("\"2.0\"") {
        return invalid(error_id(), "\"jsonrpc\" must be \"2.0\"");
    }
    let params = match object.get("params").map(|raw| serde_json::from_str::<Value>(raw.get())) {
        None => Value::Null,
        Some(Ok(params)) => params,
        Some(Err(e)) => return invalid(error_id(), &e.to_string()),
    };
    let method = match object.string("method") {
        Ok(method) => method,
        Err(_) => return invalid(error_id(), "\"method\" must be a string"),
    };
    match (method, id) {
        (Some(_), Some(_)) if valid_id == Some(false) => invalid(null_id(), "\"id\" must be a string or a number"),
        (Some(method), Some(id)) => Incoming::Request { id, method, params },
        (Some(method), None) => Incoming::Notification { method, params },
        (None, Some(id)) => {
            if let Some(error) = object.get("error") {
                let error = serde_json::from_str::<acp::Error>(error.get())
                    .unwrap_or_else(|_| acp::Error::internal_error().data(Value::String(error.get().to_string())));
                return Incoming::Response { id, result: Err(error) };
            }
            match object.get("result").map(|raw| serde_json::from_str::<Value>(raw.get())) {
                Some(Ok(result)) => Incoming::Response { id, result: Ok(result) },
                _ => invalid(id, "a response needs \"result\" or \"error\""),
            }
        }
        (None, None) => invalid(null_id(), "a request needs \"method\""),
    }
}

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a acp::Error>,
}

impl<'a, T: Serialize> Envelope<'a, T> {
    fn empty() -> Self {
        Envelope { jsonrpc: "2.0", id: None, method: None, params: None, result: None, error: None }
    }
}

fn bytes<T: Serialize>(envelope: &Envelope<'_, T>) -> Vec<u8> {
    serde_json::to_vec(envelope).unwrap_or_else(|e| {
        tracing::error!("cannot serialize an ACP message: {e}");
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#.to_vec()
    })
}

/// The result of request `id`.
pub fn response<T: Serialize>(id: &RawValue, result: &T) -> Vec<u8> {
    bytes(&Envelope { id: Some(id), result: Some(result), ..Envelope::empty() })
}

/// The error answering request `id`.
pub fn error_response(id: &RawValue, error: &acp::Error) -> Vec<u8> {
    bytes(&Envelope::<()> { id: Some(id), error: Some(error), ..Envelope::empty() })
}

/// A notification.
pub fn notification<T: Serialize>(method: &str, params: &T) -> Vec<u8> {
    bytes(&Envelope { method: Some(method), params: Some(params), ..Envelope::empty() })
}

/// A request of ours, with the id of the outbound table.
pub fn request<T: Serialize>(id: u64, method: &str, params: &T) -> Vec<u8> {
    let id = RawValue::from_string(id.to_string()).unwrap_or_else(|_| null_id());
    bytes(&Envelope { id: Some(&id), method: Some(method), params: Some(params), ..Envelope::empty() })
}

/// A `session/update` notification.
pub fn session_update(session_id: &str, update: acp::SessionUpdate) -> Vec<u8> {
    notification("session/update", &acp::SessionNotification::new(session_id.to_string(), update))
}

/// `-32602` with the reason.
pub fn invalid_params(detail: impl Into<String>) -> acp::Error {
    let detail = detail.into();
    acp::Error::invalid_params().data(Value::String(detail))
}

/// `-32603` with the reason.
pub fn internal(detail: impl Into<String>) -> acp::Error {
    acp::Error::internal_error().data(Value::String(detail.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_and_ids_kept_as_sent() {
        match classify(r#"{"jsonrpc":"2.0","id":7.0,"method":"session/new","params":{"cwd":"/"}}"#) {
            Incoming::Request { id, method, .. } => assert_eq!((id.get(), method.as_str()), ("7.0", "session/new")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#), Incoming::Notification { .. }));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":3,"result":null}"#),
            Incoming::Response { result: Ok(Value::Null), .. }
        ));
        match classify(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"Request cancelled"}}"#) {
            Incoming::Response { result: Err(e), .. } => assert_eq!(i32::from(e.code), -32800),
            other => panic!("{other:?}"),
        }
        for bad in ["[1]", "{", r#"{"id":1,"method":"x"}"#, r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#] {
            assert!(matches!(classify(bad), Incoming::Invalid { .. }), "{bad}");
        }
        for id in ["{}", "true", "[1]", "null", r#"{"a":1}"#] {
            for text in [
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"}}"#),
                format!(r#"{{"jsonrpc":"1.0","id":{id},"method":"x"}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":7}}"#),
            ] {
                match classify(&text) {
                    Incoming::Invalid { id, error } => {
                        assert_eq!((id.get(), i32::from(error.code)), ("null", -32600), "{text}")
                    }
                    other => panic!("{text}: {other:?}"),
                }
            }
        }
        match classify(r#"{"jsonrpc":"1.0","id":"k","method":"x"}"#) {
            Incoming::Invalid { id, .. } => assert_eq!(id.get(), "\"k\"", "a readable id is kept"),
            other => panic!("{other:?}"),
        }
        let sent = response(&RawValue::from_string("\"a\"".into()).unwrap(), &serde_json::json!({}));
        assert_eq!(String::from_utf8(sent).unwrap(), r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
    }
}
