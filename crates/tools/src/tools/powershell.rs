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
    local_shell: || Err(UNAVAILABLE.to_string()),
    client_terminal: false,
};

/// The `powershell` tool.
pub fn powershell_tool() -> BashTool {
    BashTool::flavored(&POWERSHELL)
}
