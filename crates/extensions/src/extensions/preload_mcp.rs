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
                let config = pi_mcp::mcp::registration::with_current_exposure_names(&config);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(answer: &Result<Value, String>) -> Vec<String> {
        let servers = answer.as_ref().ok().and_then(|a| a["servers"].as_array().cloned()).unwrap_or_default();
        servers.iter().filter_map(|s| s["name"].as_str().map(String::from)).collect()
    }

    #[test]
    fn registrations_count_once_their_extension_has_loaded_and_names_stay_their_owners() {
        let dir = tempfile::tempdir().expect("dir");
        let mcp = PreSessionMcp::new(dir.path().to_path_buf(), dir.path().to_path_buf());
        let server = json!({"command": "node"});
        let register = |id: usize, path: &str, name: &str, loaded: &dyn Fn(usize) -> bool| {
            mcp.answer(id, path, "registerMcpServer", &json!({"name": name, "config": server}), loaded)
        };
        // Extension 0 loading: its registration is not listed yet, nor does it take the name.
        let loading = |_: usize| false;
        assert!(names(&register(0, "/a.ts", "early", &loading)).is_empty());
        assert!(register(1, "/b.ts", "early", &loading).is_ok());
        // Once 0 has loaded (1 has not), its server is listed and its name is taken.
        let first_loaded = |id: usize| id == 0;
        assert_eq!(names(&mcp.answer(2, "/c.ts", "getMcpServers", &Value::Null, first_loaded)), ["early"]);
        let taken = register(2, "/c.ts", "early", &first_loaded).expect_err("taken");
        assert_eq!(taken, "MCP server \"early\" is already registered by extension \"/a.ts\"");
        assert!(register(0, "/a.ts", "my-srv", &first_loaded).is_ok());
        let clash = register(2, "/c.ts", "my_srv", &first_loaded).expect_err("one namespace");
        assert_eq!(clash, "MCP server \"my_srv\" conflicts with registered server \"my-srv\"");
        let bad = register(0, "/a.ts", "no spaces", &first_loaded).expect_err("bad name");
        assert!(bad.starts_with("Invalid MCP server registered by extension \"/a.ts\": invalid server name"), "{bad}");
        // Unregistering another extension's server changes nothing; the owner's removes it.
        let unregister = |id: usize, path: &str| {
            mcp.answer(id, path, "unregisterMcpServer", &json!({"name": "early"}), |id: usize| id == 0)
        };
        assert_eq!(names(&unregister(2, "/c.ts")), ["early", "my-srv"]);
        assert!(!names(&unregister(0, "/a.ts")).contains(&"early".to_string()));
    }
}
