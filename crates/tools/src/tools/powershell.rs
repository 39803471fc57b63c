//! pi's `powershell` tool: registered with the built-ins but inactive, the
//! `bash` tool's runner under PowerShell's name, description and temp-file
//! prefix. pi 1.6.0 finds PowerShell on Windows only; elsewhere (and pi-rpc
//! runs on Unix) running it fails with pi's reason, unless an extension gave
//! it operations of its own (pi's `PowerShellOperations`), which then run
//! the command as they run `bash`'s.

use super::bash::{BashTool, ShellFlavor};

/// Why the tool cannot run here: pi's words on a platform other than Windows.
pub const UNAVAILABLE: &str = "The powershell tool is only available on Windows.";

/// The `powershell` flavor of the shell tool.
pub const POWERSHELL: ShellFlavor = ShellFlavor {
    name: "powershell",
    description: "Execute a PowerShell command in the current working directory. Returns stdout and stderr. Output is \
                  truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to \
                  a temp file. Optionally provide a timeout in seconds.",
    temp_prefix: "pi-powershell",
    local_shell: |_| Err(UNAVAILABLE.to_string()),
    honours_shell_settings: false,
    client_terminal: false,
};

/// The `powershell` tool.
pub fn powershell_tool() -> BashTool {
    BashTool::flavored(&POWERSHELL)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::join_text;
    use crate::tools::{Tool, ToolContext, ToolRegistry};

    #[tokio::test]
    async fn it_is_a_built_in_after_bash_and_fails_with_pis_reason_without_operations() {
        let registry = ToolRegistry::builtin();
        assert_eq!(registry.names().take(3).collect::<Vec<_>>(), ["read", "bash", "powershell"]);
        let tool = powershell_tool();
        assert_eq!(tool.parameters(), BashTool::new().parameters());
        let dir = tempfile::tempdir().unwrap();
        let out =
            tool.execute(json!({"command": "Get-Date", "timeout": -1}), ToolContext::new(dir.path().into())).await;
        assert!(out.is_error && !out.result_is_error);
        assert_eq!(join_text(&out.content), UNAVAILABLE);
    }
}
