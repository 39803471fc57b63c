//! Params of what a client sends about the requests the core made of it:
//! the tools it declares in JSON-RPC `initialize` and the `toolResult` of
//! such a tool (extensions of seed 004, documented in the README).

use pi_core::client::{ClientReply, ClientToolSpec};
use pi_core::message::ContentBlock;
use pi_core::op::ops;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A tool the client runs itself: the model sees it like any tool; its
/// calls arrive as `toolCall` notifications and are answered with `toolResult`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ClientToolParam {
    /// The tool's name (must not clash with the agent's own tools).
    pub name: String,
    /// What the tool does (the model reads it).
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments (an object schema; default: no arguments).
    #[serde(default)]
    pub parameters: Option<Value>,
}

impl ClientToolParam {
    pub fn spec(self) -> ClientToolSpec {
        ClientToolSpec {
            name: self.name,
            description: self.description,
            parameters: self.parameters.unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
        }
    }
}

/// The output of a client tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolResultOutput {
    /// Content blocks (`text`, `image`) the model gets.
    pub content: Vec<ContentBlock>,
}

/// `toolResult` params: the result of a client tool's call.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultParams {
    /// The `toolCallId` of the `toolCall` notification it answers.
    pub tool_call_id: String,
    /// The result.
    pub output: ToolResultOutput,
    /// The call failed (the model sees an error result).
    #[serde(default)]
    pub is_error: Option<bool>,
    /// Tool-specific data kept with the result (not shown to the model).
    #[serde(default)]
    pub details: Option<Value>,
}

impl ToolResultParams {
    pub fn op(self) -> ops::ClientResponse {
        ops::ClientResponse {
            id: self.tool_call_id,
            result: Ok(ClientReply::ToolResult {
                content: self.output.content,
                details: self.details.filter(|d| !d.is_null()),
                is_error: self.is_error.unwrap_or(false),
            }),
        }
    }
}
