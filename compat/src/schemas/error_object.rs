//! The JSON-RPC error object's schema: the code table of the dialect (JSON-RPC
//! 2.0's codes and the seed's -32000…-32003) and the machine-readable `data`.

use pi_jsonrpc::errors as codes;
use pi_jsonrpc::wire::WireErrorKind;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;

/// `error.data`: which field or method was at fault, and how to treat the error.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[allow(dead_code)]
pub struct ErrorData {
    /// The request field at fault (`-32602`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The unknown method (`-32601`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The error's class, as in the `error` notification's `code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<WireErrorKind>,
    /// Whether trying again later may succeed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

/// Every error code of the dialect with its meaning.
pub const CODE_TABLE: &[(i64, &str)] = &[
    (codes::PARSE_ERROR, "Parse error: the message is not JSON (or not UTF-8, or too long)."),
    (
        codes::INVALID_REQUEST,
        "Invalid request: not a JSON-RPC 2.0 request object; also a duplicate id in flight or a busy agent.",
    ),
    (codes::METHOD_NOT_FOUND, "Method not found (also `rpc.*` names, and unsupported operations)."),
    (
        codes::INVALID_PARAMS,
        "Invalid params: a missing or mistyped field (named in `data.field`), or an unknown entry, model or session.",
    ),
    (codes::INTERNAL_ERROR, "Internal error."),
    (codes::MODEL_ERROR, "Model error: the provider failed, or no credentials."),
    (codes::TOOL_ERROR, "Tool error: a tool failed outside the model's turn."),
    (codes::RATE_LIMIT, "Rate limit: the provider rate-limited the request."),
    (codes::CONTEXT_LIMIT, "Context limit: the conversation does not fit the model's context window."),
];

/// Schema-only description of the JSON-RPC error object.
pub struct ErrorObjectSchema;

impl JsonSchema for ErrorObjectSchema {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorObject".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let data = generator.subschema_for::<ErrorData>();
        let code_branches: Vec<serde_json::Value> = CODE_TABLE
            .iter()
            .map(|(code, meaning)| serde_json::json!({ "const": code, "description": meaning }))
            .collect();
        json_schema!({
            "description": "A JSON-RPC error: `{code, message, data?}`.",
            "type": "object",
            "properties": {
                "code": { "description": "The error code.", "oneOf": code_branches },
                "message": { "description": "Readable text.", "type": "string" },
                "data": data
            },
            "required": ["code", "message"]
        })
    }
}
