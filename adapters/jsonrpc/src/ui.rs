//! The extension UI sub-protocol in the JSON-RPC dialect: `extension:ui`
//! notifications go out (see `notify`), and the client answers with
//! `extension:response`, as a notification or as a request (which then gets
//! a result, or an error when no open dialog matched).
//!
//! Params: `id` (the correlation id of `extension:ui`; may be left out when
//! exactly one dialog is open), then the answer as `result` (or `value`):
//! a string for select/input/editor, a boolean for confirm, `null` to
//! cancel, or an object `{value}` / `{confirmed}` / `{cancelled: true}`.
//! A top-level `cancelled: true` or `confirmed: <bool>` also works.

use pi_core::op::{Op, UiResponse};
use serde_json::{Map, Value};

/// The method name.
pub const RESPONSE_METHOD: &str = "extension:response";

/// Decode `extension:response` params into the core op.
pub fn response_op(p: &Map<String, Value>) -> Op {
    let id = match p.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let result = p.get("result").or_else(|| p.get("value"));
    let response = match result {
        _ if p.get("cancelled") == Some(&Value::Bool(true)) => UiResponse::Cancelled,
        None if p.contains_key("confirmed") => UiResponse::Confirmed(p.get("confirmed") == Some(&Value::Bool(true))),
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
    Op::ExtensionUiResponse { id, response }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(v: Value) -> Op {
        response_op(v.as_object().unwrap())
    }

    #[test]
    fn answers_decode() {
        let r = |id: Option<&str>, response| Op::ExtensionUiResponse { id: id.map(str::to_string), response };
        assert_eq!(op(json!({"id": "u1", "result": "Allow"})), r(Some("u1"), UiResponse::Value(json!("Allow"))));
        assert_eq!(op(json!({"id": "u2", "result": true})), r(Some("u2"), UiResponse::Confirmed(true)));
        assert_eq!(op(json!({"id": "u3", "result": null})), r(Some("u3"), UiResponse::Cancelled));
        assert_eq!(op(json!({"id": "u4", "cancelled": true})), r(Some("u4"), UiResponse::Cancelled));
        assert_eq!(op(json!({"confirmed": false})), r(None, UiResponse::Confirmed(false)));
        assert_eq!(op(json!({"result": {"value": "v"}})), r(None, UiResponse::Value(json!("v"))));
        assert_eq!(op(json!({"id": 7, "value": "x"})), r(Some("7"), UiResponse::Value(json!("x"))));
    }
}
