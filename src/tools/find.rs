//! The `find` tool.

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};

/// The `find` tool.
pub struct FindTool {
    parameters: Value,
}

impl FindTool {
    pub fn new() -> Self {
        FindTool { parameters: serde_json::json!({"type": "object", "properties": {}}) }
    }
}

impl Default for FindTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for FindTool {
    fn name(&self) -> &str {
        "find"
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
