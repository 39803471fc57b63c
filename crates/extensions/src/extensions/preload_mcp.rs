//! MCP servers registered before the session (pi's `registerMcpServer` /
//! `unregisterMcpServer` / `getMcpServers` of the extensions asked about
//! project trust). pi keeps them in the extension runtime that the session
//! takes over; pi-rpc sets its MCP client up once trust is decided, so the
//! calls are answered here as pi answers them then, and kept to be made
//! again on the session's registry when it adopts the extensions.
//!
//! As in pi, what an extension registers while it loads counts once it has
//! loaded (pi applies a loading extension's registrations when its factory
//! returns): until then `getMcpServers()` and the name checks leave it out,
//! and an extension that fails to load leaves nothing.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

/// One registration: the extension's id and path, the name, the config as given.
struct Entry {
    id: usize,
    path: String,
    name: String,
    config: Value,
}

/// The servers the extensions asked about trust registered.
pub(super) struct PreSessionMcp {
    agent_dir: PathBuf,
    cwd: PathBuf,
    entries: Mutex<Vec<Entry>>,
}

/// Whether `method` is one of the registrations answered here.
pub(super) fn is_registration(method: &str) -> bool {
    matches!(method, "registerMcpServer" | "unregisterMcpServer" | "getMcpServers")
}

impl PreSessionMcp {
    pub(super) fn new(agent_dir: PathBuf, cwd: PathBuf) -> PreSessionMcp {
        PreSessionMcp { agent_dir, cwd, entries: Mutex::new(Vec::new()) }
    }

    /// Answer extension `id`'s (at `path`) `method`, `{servers}` as the
    /// session's registry answers; `loaded`: whether an extension has
    /// finished loading (its registrations count).
    pub(super) fn answer(
        &self,
        id: usize,
        path: &str,
        method: &str,
        params: &Value,
        loaded: impl Fn(usize) -> bool,
    ) -> Result<Value, String> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match method {
            "registerMcpServer" => {
                let config = params.get("config").cloned().unwrap_or(Value::Null);
                let sources = pi_mcp::mcp::ConfigSources {
                    agent_dir: &self.agent_dir,
                    cwd: &self.cwd,
                    project_trusted: false,
                    env: None,
                };
                let counted = entries.iter().filter(|e| loaded(e.id)).map(|e| (e.name.as_str(), e.path.as_str()));
                pi_mcp::mcp::registration::check_registration(name, &config, path, &sources, counted)?;
                let entry = Entry { id, path: path.to_string(), name: name.to_string(), config };
                match entries.iter().position(|e| e.name == name && e.path == path) {
                    Some(i) => entries[i] = entry,
                    None => entries.push(entry),
                }
            }
            "unregisterMcpServer" => entries.retain(|e| !(e.name == name && e.path == path)),
            _ => {}
        }
        let servers: Vec<Value> = entries
            .iter()
            .filter(|e| loaded(e.id))
            .map(|e| json!({"name": e.name, "config": e.config, "extensionPath": e.path}))
            .collect();
        Ok(json!({ "servers": servers }))
    }
}
