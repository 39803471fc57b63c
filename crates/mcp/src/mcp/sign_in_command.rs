//! `/mcp login [server]` and `/mcp logout [server]`, as pi 1.6.0 runs them
//! outside its terminal UI: the server is the one named, the only OAuth
//! server, the only one that needs sign-in, or the one the user selects;
//! signing in shows the authorization URL in a notification (and opens it in
//! a browser), asks for a pasted redirect URL while the loopback callback
//! waits, then reconnects; signing out forgets the stored credentials.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::McpManager;
use super::command::Notice;
use super::connection::{Connection, Status};
use super::oauth::sign_in::{self, CANCELLED, SignInPrompt};

/// What the command needs from the front end.
#[async_trait::async_trait]
pub trait CommandUi: Send + Sync {
    fn notify(&self, text: &str, level: &'static str);
    /// The option chosen; None when dismissed.
    async fn select(&self, title: &str, options: Vec<String>) -> Option<String>;
    /// The text typed; None when dismissed. Dropping the future withdraws the question.
    async fn input(&self, title: &str, placeholder: &str) -> Option<String>;
    /// Open `url` in a browser (best effort).
    fn open_url(&self, url: &str);
}

/// pi's answer when no server signs in with OAuth.
const NO_OAUTH: &str = "No enabled MCP server uses OAuth. Only HTTP servers without an Authorization header do.";

struct Prompt<'a> {
    name: &'a str,
    ui: &'a dyn CommandUi,
}

#[async_trait::async_trait]
impl SignInPrompt for Prompt<'_> {
    fn show_authorization_url(&self, url: &str) {
        self.ui.notify(&format!("Sign in to MCP server \"{}\" in your browser:\n{url}", self.name), "info");
        self.ui.open_url(url);
    }

    async fn redirect_url(&self) -> Option<String> {
        let title = format!(
            "Waiting for sign-in to \"{}\". If the browser cannot reach this machine, paste the URL it was redirected to.",
            self.name
        );
        self.ui.input(&title, "http://127.0.0.1:.../callback?code=...").await
    }
}

impl McpManager {
    /// `/mcp login|logout [server]`: None when the answer was already given through `ui`.
    pub async fn sign_in_command(
        &self,
        action: &str,
        name: Option<&str>,
        ui: &dyn CommandUi,
        cancel: &CancellationToken,
    ) -> Option<Notice> {
        self.wait_for(None).await;
        let conn = self.pick_oauth_server(name, ui).await?;
        let server = conn.config.name.clone();
        let auth = conn.auth.clone()?;
        if action == "logout" {
            let removed = auth.store().remove(&server, &auth.url).await.unwrap_or(false);
            conn.signed_out().await;
            let text = if removed {
                format!("Signed out of MCP server \"{server}\".")
            } else {
                format!("No stored credentials for MCP server \"{server}\".")
            };
            return Some(Notice::new(text, "info"));
        }
        let prompt = Prompt { name: &server, ui };
        if let Err(failure) = sign_in::sign_in(&auth, &prompt, cancel).await {
            let level = if failure == CANCELLED { "info" } else { "error" };
            return Some(Notice::new(failure, level));
        }
        conn.connect().await;
        let state = conn.state();
        Some(match state.status {
            Status::Connected => {
                Notice::new(format!("Signed in to MCP server \"{server}\" ({} tools).", state.tools.len()), "info")
            }
            Status::Failed(e) | Status::Disconnected(e) => Notice::new(format!("Signed in, but {e}"), "error"),
            _ => Notice::new(format!("Signed in, but {}", super::oauth::sign_in_required(&server)), "error"),
        })
    }

    /// pi's `pickServer` for the OAuth servers.
    async fn pick_oauth_server(&self, name: Option<&str>, ui: &dyn CommandUi) -> Option<Arc<Connection>> {
        let conns = self.conns();
        if let Some(name) = name {
            let Some(conn) = conns.iter().find(|c| c.config.name == name) else {
                ui.notify(&format!("No MCP server named \"{name}\"."), "error");
                return None;
            };
            if conn.auth.is_none() {
                ui.notify(NO_OAUTH, "error");
                return None;
            }
            return Some(conn.clone());
        }
        let candidates: Vec<&Arc<Connection>> = conns.iter().filter(|c| c.auth.is_some()).collect();
        let waiting: Vec<&&Arc<Connection>> =
            candidates.iter().filter(|c| c.state().status == Status::NeedsAuth).collect();
        match (candidates.len(), waiting.len()) {
            (0, _) => {
                ui.notify(NO_OAUTH, "info");
                None
            }
            (1, _) => Some(candidates[0].clone()),
            (_, 1) => Some((*waiting[0]).clone()),
            _ => {
                let names: Vec<String> = candidates.iter().map(|c| c.config.name.clone()).collect();
                let choice = ui.select("MCP server", names).await?;
                candidates.iter().find(|c| c.config.name == choice).map(|c| (*c).clone())
            }
        }
    }
}
