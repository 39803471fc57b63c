//! The `bash` tool.

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};

/// The `bash` tool.
pub struct BashTool {
    parameters: Value,
}

impl BashTool {
    pub fn new() -> Self {
        BashTool { parameters: serde_json::json!({"type": "object", "properties": {}}) }
    }
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
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

/// Temporary until the bash tool lands.
pub async fn run_command(
    _command: &str,
    _cwd: &std::path::Path,
    _env: &[(String, String)],
    _temp_dir: &std::path::Path,
    _cancel: tokio_util::sync::CancellationToken,
    _on_chunk: impl FnMut(&str),
) -> crate::op::BashResult {
    crate::op::BashResult {
        output: String::new(),
        exit_code: None,
        cancelled: true,
        truncated: false,
        full_output_path: None,
    }
}
