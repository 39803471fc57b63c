//! The `read` tool.

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};

/// The `read` tool.
pub struct ReadTool {
    parameters: Value,
}

impl ReadTool {
    pub fn new() -> Self {
        ReadTool { parameters: serde_json::json!({"type": "object", "properties": {}}) }
    }
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
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
