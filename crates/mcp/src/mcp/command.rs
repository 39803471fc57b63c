//! The built-in `/mcp` command, as pi 1.6.0 offers it in RPC mode: the state
//! of each configured server, and reconnecting one. Its answer is one
//! notification (text and level); signing in is not part of pi-rpc.

use std::path::Path;

use super::McpManager;
use super::connection::Status;

/// The command's name (`/mcp`).
pub const NAME: &str = "mcp";
/// Shown by `get_commands`.
pub const DESCRIPTION: &str = "MCP servers: show their state, or reconnect one (/mcp reconnect [server])";
/// `get_commands`' `path` of a built-in command (pi names its source `builtin:mcp`).
pub const PATH: &str = "builtin:mcp";

const USAGE: &str = "Usage: /mcp (the state of each server), /mcp reconnect [server]";

/// What the command tells the user: a `notify` text and its level.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    /// `info`, `warning` or `error`.
    pub level: &'static str,
}

impl Notice {
    fn new(text: impl Into<String>, level: &'static str) -> Self {
        Notice { text: text.into(), level }
    }
}

/// The arguments when `message` invokes `/mcp` (`/mcp` alone, or followed by
/// whitespace), `None` otherwise.
pub fn invocation(message: &str) -> Option<&str> {
    let rest = message.trim_start().strip_prefix('/')?.strip_prefix(NAME)?;
    if rest.is_empty() || rest.starts_with(char::is_whitespace) { Some(rest.trim()) } else { None }
}

impl McpManager {
    /// Whether the session offers `/mcp` (not with `--no-mcp` or `--no-tools`).
    pub fn command_available(&self) -> bool {
        !self.disabled
    }

    /// Run `/mcp <args>`; `agent_dir` is where the user's `mcp.json` lives.
    pub async fn command(&self, args: &str, agent_dir: &Path) -> Notice {
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] => {
                self.wait_for(None).await;
                self.status(agent_dir)
            }
            ["reconnect", rest @ ..] if rest.len() <= 1 => self.reconnect(rest.first().copied()).await,
            ["login" | "logout", ..] => Notice::new(
                "pi-rpc does not sign in to MCP servers: give an HTTP server its credentials in the \"headers\" \
                 of its mcp.json entry (for example \"Authorization\": \"Bearer ${TOKEN}\")",
                "error",
            ),
            _ => Notice::new(USAGE, "warning"),
        }
    }

    /// One line per server (`name: state, N tools (exposure)`, the error
    /// indented below), then the configuration errors.
    fn status(&self, agent_dir: &Path) -> Notice {
        let conns = self.conns();
        if conns.is_empty() && self.errors.is_empty() {
            let file = agent_dir.join("mcp.json");
            return Notice::new(
                format!("No MCP servers are configured; add them to {} or to .pi/mcp.json.", file.display()),
                "info",
            );
        }
        let mut lines = Vec::new();
        for conn in &conns {
            let state = conn.state();
            let exposure = conn.config.exposure.as_str();
            let (word, error) = match &state.status {
                Status::Connected => (format!("connected, {} tools", state.tools.len()), None),
                Status::Connecting => ("starting".to_string(), None),
                Status::Failed(e) => ("failed".to_string(), Some(e.clone())),
                Status::Disconnected(e) => ("disconnected, reconnects at the next call".to_string(), Some(e.clone())),
                Status::Stopped => ("stopped".to_string(), None),
                Status::NeedsAuth => {
                    let name = &conn.config.name;
                    lines.push(format!("{name}: needs sign-in, run /mcp login {name} ({exposure})"));
                    continue;
                }
            };
            lines.push(format!("{}: {word} ({exposure})", conn.config.name));
            if let Some(error) = error {
                lines.extend(error.lines().map(|l| format!("    {l}")));
            }
        }
        lines.extend(self.errors.iter().map(|e| format!("configuration error: {e}")));
        Notice::new(lines.join("\n"), "info")
    }

    /// Reconnect the named server, or the one that needs it when the name is
    /// left out and the choice is clear.
    async fn reconnect(&self, name: Option<&str>) -> Notice {
        let conns = self.conns();
        let chosen = match name {
            Some(name) => conns.iter().find(|c| c.config.name == name),
            None if conns.len() == 1 => conns.first(),
            None => {
                let broken: Vec<_> = conns
                    .iter()
                    .filter(|c| matches!(c.state().status, Status::Failed(_) | Status::Disconnected(_)))
                    .collect();
                if broken.len() == 1 { broken.first().copied() } else { None }
            }
        };
        let Some(conn) = chosen else {
            let names: Vec<&str> = conns.iter().map(|c| c.config.name.as_str()).collect();
            return match (name, names.is_empty()) {
                (_, true) => Notice::new("No MCP server to reconnect.", "warning"),
                (Some(name), false) => Notice::new(
                    format!("No MCP server named \"{name}\" (configured: {}).", names.join(", ")),
                    "warning",
                ),
                (None, false) => Notice::new(
                    format!("Which server? /mcp reconnect <server>, one of: {}", names.join(", ")),
                    "warning",
                ),
            };
        };
        self.begin();
        conn.connect().await;
        let state = conn.state();
        match state.status {
            Status::Connected => Notice::new(
                format!("Reconnected to MCP server \"{}\" ({} tools).", conn.config.name, state.tools.len()),
                "info",
            ),
            Status::Failed(e) | Status::Disconnected(e) => {
                Notice::new(format!("MCP server \"{}\" did not reconnect: {e}", conn.config.name), "error")
            }
            Status::NeedsAuth => Notice::new(super::oauth::sign_in_required(&conn.config.name), "error"),
            Status::Connecting | Status::Stopped => {
                Notice::new(format!("MCP server \"{}\" is not connected.", conn.config.name), "warning")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_word_mcp_invokes_it() {
        assert_eq!(invocation("/mcp"), Some(""));
        assert_eq!(invocation("/mcp  reconnect  fs "), Some("reconnect  fs"));
        assert_eq!(invocation("/mcpx"), None);
        assert_eq!(invocation("mcp"), None);
        assert_eq!(invocation("/mc"), None);
    }

    #[tokio::test]
    async fn status_without_servers_names_the_config_file() {
        let mcp = McpManager::start(Default::default());
        let notice = mcp.command("", Path::new("/agent")).await;
        assert_eq!(notice.level, "info");
        assert!(notice.text.contains("/agent/mcp.json"), "{}", notice.text);
        assert_eq!(mcp.command("frobnicate", Path::new("/agent")).await.level, "warning");
        assert_eq!(mcp.command("login fs", Path::new("/agent")).await.level, "error");
        assert_eq!(mcp.command("reconnect", Path::new("/agent")).await.text, "No MCP server to reconnect.");
    }
}
