//! The built-in `/mcp` command, as pi 1.6.0 offers it in RPC mode: the state
//! of each configured server, reconnecting one, and signing in to or out of
//! an OAuth server ([`super::sign_in_command`]). Its answer is a notification
//! (text and level); signing in also asks through the front end's dialogs.

use std::path::Path;

use super::McpManager;
use super::connection::Status;

/// The command's name (`/mcp`).
pub const NAME: &str = "mcp";
/// Shown by `get_commands`.
pub const DESCRIPTION: &str =
    "MCP servers: show their state, sign in or out, or reconnect one (/mcp login|logout|reconnect [server])";
/// `get_commands`' `path` of a built-in command (pi names its source `builtin:mcp`).
pub const PATH: &str = "builtin:mcp";

const USAGE: &str = "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]";

/// What the command tells the user: a `notify` text and its level.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    /// `info`, `warning` or `error`.
    pub level: &'static str,
}

impl Notice {
    pub fn new(text: impl Into<String>, level: &'static str) -> Self {
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
    /// None when the answer was already given through `ui`.
    pub async fn command(
        &self,
        args: &str,
        agent_dir: &Path,
        ui: &dyn super::sign_in_command::CommandUi,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Notice> {
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] => {
                self.wait_for(None).await;
                Some(self.status(agent_dir))
            }
            ["reconnect", rest @ ..] if rest.len() <= 1 => Some(self.reconnect(rest.first().copied()).await),
            [action @ ("login" | "logout"), rest @ ..] if rest.len() <= 1 => {
                self.sign_in_command(action, rest.first().copied(), ui, cancel).await
            }
            _ => Some(Notice::new(USAGE, "warning")),
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

    /// Notifications are recorded; dialogs are dismissed.
    #[derive(Default)]
    struct Recorded(std::sync::Mutex<Vec<(String, &'static str)>>);

    #[async_trait::async_trait]
    impl super::super::sign_in_command::CommandUi for Recorded {
        fn notify(&self, text: &str, level: &'static str) {
            self.0.lock().unwrap().push((text.to_string(), level));
        }
        async fn select(&self, _title: &str, _options: Vec<String>) -> Option<String> {
            None
        }
        async fn input(&self, _title: &str, _placeholder: &str) -> Option<String> {
            None
        }
        fn open_url(&self, _url: &str) {}
    }

    #[tokio::test]
    async fn status_without_servers_names_the_config_file() {
        let mcp = McpManager::start(Default::default());
        let ui = Recorded::default();
        let cancel = tokio_util::sync::CancellationToken::new();
        let run = |args: &'static str| mcp.command(args, Path::new("/agent"), &ui, &cancel);
        let notice = run("").await.unwrap();
        assert_eq!(notice.level, "info");
        assert!(notice.text.contains("/agent/mcp.json"), "{}", notice.text);
        assert_eq!(run("frobnicate").await.unwrap().level, "warning");
        assert_eq!(run("reconnect").await.unwrap().text, "No MCP server to reconnect.");
        assert_eq!(run("login fs").await, None);
        assert_eq!(
            ui.0.lock().unwrap().clone(),
            vec![("No MCP server named \"fs\".".to_string(), "error")],
            "the answer went through the UI"
        );
    }
}
