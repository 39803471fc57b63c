//! The error table: JSON-RPC codes and the seed's string codes, produced by one
//! function from the core's error kinds (used for responses and the `error`
//! notification alike).

use pi_core::error::{CoreError, ErrorKind};
use serde::Serialize;
use serde_json::{Map, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const MODEL_ERROR: i64 = -32000;
pub const TOOL_ERROR: i64 = -32001;
pub const RATE_LIMIT: i64 = -32002;
pub const CONTEXT_LIMIT: i64 = -32003;

/// How a core error kind appears on the JSON-RPC wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireErrorClass {
    /// Numeric JSON-RPC error code.
    pub code: i64,
    /// String code of the `error` notification and of `data.kind`.
    pub name: &'static str,
    /// Whether trying again later may succeed.
    pub retryable: bool,
}

/// The one mapping from core error kinds to (code, string code, retryable).
pub fn classify(kind: ErrorKind) -> WireErrorClass {
    let (code, name, retryable) = match kind {
        ErrorKind::InvalidParams => (INVALID_PARAMS, "invalid_params", false),
        ErrorKind::NotFound => (INVALID_PARAMS, "not_found", false),
        ErrorKind::Busy => (INVALID_REQUEST, "busy", true),
        ErrorKind::Unsupported => (METHOD_NOT_FOUND, "unsupported", false),
        ErrorKind::Model => (MODEL_ERROR, "model_error", false),
        ErrorKind::Tool => (TOOL_ERROR, "tool_error", false),
        ErrorKind::RateLimit => (RATE_LIMIT, "rate_limit", true),
        ErrorKind::ContextLimit => (CONTEXT_LIMIT, "context_limit", false),
        ErrorKind::Aborted => (MODEL_ERROR, "aborted", false),
        ErrorKind::Internal => (INTERNAL_ERROR, "internal_error", false),
    };
    WireErrorClass { code, name, retryable }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// `data: {kind, retryable}` (the README promises both on every error).
    fn with_kind(mut self, kind: &str) -> Self {
        let mut data = match self.data.take() {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        data.insert("kind".into(), Value::String(kind.to_string()));
        data.insert("retryable".into(), Value::Bool(false));
        self.data = Some(Value::Object(data));
        self
    }

    pub fn parse_error(detail: &str) -> Self {
        ErrorObject::new(PARSE_ERROR, format!("Parse error: {detail}")).with_kind("parse_error")
    }

    pub fn invalid_request(detail: &str) -> Self {
        ErrorObject::new(INVALID_REQUEST, format!("Invalid request: {detail}")).with_kind("invalid_request")
    }

    pub fn method_not_found(method: &str) -> Self {
        let mut e = ErrorObject::new(METHOD_NOT_FOUND, format!("Method not found: {method}"));
        e.data = Some(serde_json::json!({ "method": method }));
        e.with_kind("unsupported")
    }

    /// `-32602` naming the field, as the seed's example does.
    pub fn invalid_params(field: &str, detail: &str) -> Self {
        let mut e = ErrorObject::new(INVALID_PARAMS, format!("Invalid params: {detail}"));
        e.data = Some(serde_json::json!({ "field": field, "kind": "invalid_params", "retryable": false }));
        e
    }

    /// Map a core error through the table.
    pub fn from_core(error: &CoreError) -> Self {
        let class = classify(error.kind);
        let message = if class.code == INVALID_PARAMS {
            format!("Invalid params: {}", error.message)
        } else {
            error.message.clone()
        };
        let mut data = Map::new();
        if let Some(field) = &error.field {
            data.insert("field".into(), Value::String(field.clone()));
        }
        data.insert("kind".into(), Value::String(class.name.to_string()));
        data.insert("retryable".into(), Value::Bool(error.retryable || class.retryable));
        ErrorObject { code: class.code, message, data: Some(Value::Object(data)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_codes_are_mapped() {
        assert_eq!(classify(ErrorKind::Model).code, -32000);
        assert_eq!(classify(ErrorKind::Tool).code, -32001);
        assert_eq!(
            classify(ErrorKind::RateLimit),
            WireErrorClass { code: -32002, name: "rate_limit", retryable: true }
        );
        assert_eq!(classify(ErrorKind::ContextLimit).code, -32003);
        assert_eq!(classify(ErrorKind::InvalidParams).code, -32602);
        assert_eq!(classify(ErrorKind::Internal).code, -32603);
    }

    #[test]
    fn every_error_has_kind_and_retryable() {
        let e = ErrorObject::method_not_found("nope");
        assert_eq!(e.data, Some(serde_json::json!({"method": "nope", "kind": "unsupported", "retryable": false})));
        for e in [ErrorObject::parse_error("x"), ErrorObject::invalid_request("x")] {
            let data = e.data.unwrap();
            assert!(data["kind"].is_string() && data["retryable"] == false, "{data}");
        }
    }

    #[test]
    fn field_errors_name_the_field() {
        let e = ErrorObject::from_core(&CoreError::invalid("content", "'content' is required"));
        assert_eq!(e.code, -32602);
        assert_eq!(e.message, "Invalid params: 'content' is required");
        assert_eq!(e.data.unwrap()["field"], "content");
    }
}
