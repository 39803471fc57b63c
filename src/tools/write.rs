//! The `write` tool.

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};

/// The `write` tool.
pub struct WriteTool {
    parameters: Value,
}

impl WriteTool {
    pub fn new() -> Self {
        WriteTool { parameters: serde_json::json!({"type": "object", "properties": {}}) }
    }
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        ""
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    async fn execute(&self, _args: Value, _ctx: ToolContext) -> ToolOutput {
        ToolOutput::error("not implemented yet")
    }
}
