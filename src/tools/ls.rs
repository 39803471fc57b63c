//! The `ls` tool.

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};

/// The `ls` tool.
pub struct LsTool {
    parameters: Value,
}

impl LsTool {
    pub fn new() -> Self {
        LsTool { parameters: serde_json::json!({"type": "object", "properties": {}}) }
    }
}

impl Default for LsTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for LsTool {
    fn name(&self) -> &str {
        "ls"
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
