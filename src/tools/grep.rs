//! The `grep` tool.

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};

/// The `grep` tool.
pub struct GrepTool {
    parameters: Value,
}

impl GrepTool {
    pub fn new() -> Self {
        GrepTool { parameters: serde_json::json!({"type": "object", "properties": {}}) }
    }
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
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
