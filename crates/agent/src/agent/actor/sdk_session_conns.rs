//! The MCP connections of SDK sessions. pi 1.6.0's MCP extension loaded in
//! a session an extension made with `createAgentSession` connects the
//! servers again for that session: `mcp.json` as the sub-session reads it
//! (its `cwd`, its project trust) and the servers its own extensions
//! register, each server process its own. pi-rpc does the same with one
//! [`McpManager`] per SDK session, opened by the session's first `mcpTools`
//! request (`open: {cwd, projectTrusted}`, at its `session_start`) and shut
//! down, its server processes reaped, when the session is disposed or shut
//! down (`close`), or when pi-rpc stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::mcp::{ConfigSources, McpConfig, McpManager, McpOptions};

/// Every open SDK session's MCP manager, by the id its shim chose.
#[derive(Default)]
pub(crate) struct SdkSessionConns(Mutex<HashMap<String, Arc<McpManager>>>);

/// Where an SDK session reads `mcp.json` from, and what its servers are given.
pub(super) struct SessionPlace<'a> {
    pub agent_dir: &'a std::path::Path,
    pub cwd: std::path::PathBuf,
    pub project_trusted: bool,
    /// The shim's `open`: what the sub-session's `createMcpExtension(options)`
    /// asks (`loaded`: its `loadConfig(ctx)` answer, which replaces
    /// `mcp.json`; `startupWaitMs`; `logPath`).
    pub opening: Option<&'a Value>,
}

impl SdkSessionConns {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<McpManager>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Session `id`'s manager, started for `place` (connecting at once,
    /// once `hosted` gave it what its `createMcpExtension`'s functions do:
    /// `createTransport`, `credentials`, `openUrl`) when it has none yet.
    pub(super) fn open(&self, id: &str, place: &SessionPlace<'_>, hosted: impl FnOnce(&McpManager)) -> Arc<McpManager> {
        let mut map = self.map();
        if let Some(manager) = map.get(id) {
            return manager.clone();
        }
        let sources = ConfigSources {
            agent_dir: place.agent_dir,
            cwd: &place.cwd,
            project_trusted: place.project_trusted,
            env: None,
        };
        let option = |key: &str| place.opening.and_then(|open| open.get(key));
        let config = match option("loaded") {
            Some(loaded) => McpConfig::from_loaded(loaded, &sources),
            None => McpConfig::load(&sources),
        };
        let log_path = option("logPath").and_then(Value::as_str).map(|path| place.cwd.join(path));
        let options = McpOptions {
            config,
            root: Some(place.cwd.clone()),
            log_path: Some(log_path.unwrap_or_else(|| place.agent_dir.join("mcp.log"))),
            credentials_dir: Some(place.agent_dir.to_path_buf()),
            ..McpOptions::default()
        };
        let manager = McpManager::start(options);
        if let Some(ms) = option("startupWaitMs").and_then(Value::as_f64).filter(|ms| ms.is_finite() && *ms >= 0.0) {
            manager.factories.set_direct_wait(std::time::Duration::from_millis(ms as u64));
        }
        hosted(&manager);
        manager.begin();
        map.insert(id.to_string(), manager.clone());
        manager
    }

    /// Session `id`'s manager, while it is open.
    pub(super) fn get(&self, id: &str) -> Option<Arc<McpManager>> {
        self.map().get(id).cloned()
    }

    /// Session `id` is gone: its servers stopped (children reaped).
    pub(super) async fn close(&self, id: &str) {
        let closed = self.map().remove(id);
        if let Some(manager) = closed {
            manager.shutdown().await;
        }
    }

    /// pi-rpc stops: every SDK session's servers stopped.
    pub(super) async fn close_all(&self) {
        let all: Vec<Arc<McpManager>> = self.map().drain().map(|(_, manager)| manager).collect();
        futures::future::join_all(all.iter().map(|manager| manager.shutdown())).await;
    }
}

/// Make `manager`'s registered servers the SDK session's (`registered`:
/// pi's `getMcpServers()` there, `[{name, config, extensionPath}]`): new or
/// changed ones registered (they connect at once), the others unregistered
/// (closed). An invalid registration is left out, as its `registerMcpServer`
/// threw already.
pub(super) fn sync_registered(manager: &McpManager, registered: &[Value], place: &SessionPlace<'_>) {
    let sources = ConfigSources { agent_dir: place.agent_dir, cwd: &place.cwd, project_trusted: false, env: None };
    let owner = |server: &Value| server.get("extensionPath").and_then(Value::as_str).unwrap_or("<inline>").to_string();
    let name = |server: &Value| server.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let before = manager.registered_servers();
    // Checked by the SDK session's registry already (two of one factory may share a namespace, as in pi).
    let checked: Vec<String> = registered.iter().map(owner).collect();
    for old in &before {
        if !registered.iter().any(|new| name(new) == name(old) && owner(new) == owner(old)) {
            manager.unregister_server(&name(old), &owner(old));
        }
    }
    for new in registered {
        let same = before.iter().any(|old| old == new || (name(old) == name(new) && old["config"] == new["config"]));
        if !same {
            let config = new.get("config").cloned().unwrap_or(Value::Null);
            if let Err(error) = manager.register_server(&name(new), &config, &owner(new), &sources, &checked) {
                tracing::warn!("an SDK session's MCP server \"{}\": {error}", name(new));
            }
        }
    }
}
