//! MCP servers that extensions register for the session (pi's
//! `pi.registerMcpServer()` / `unregisterMcpServer()` / `getMcpServers()`):
//! kept in registration order beside the `mcp.json` servers, connected as
//! they are (with them at start-up, at once afterwards), closed when
//! unregistered or replaced. A configured server of the same name wins.

use std::sync::Arc;

use serde_json::{Value, json};

use super::McpManager;
use super::config::{ConfigSources, same_server_name};
use super::connection::Connection;

/// One extension's registration.
pub(super) struct Registered {
    name: String,
    /// The config as the extension gave it (what `getMcpServers()` returns).
    config: Value,
    extension_path: String,
    /// None: disabled (`enabled: false`, MCP off) or shadowed by an `mcp.json` server.
    pub(super) conn: Option<Arc<Connection>>,
}

impl McpManager {
    fn registry(&self) -> std::sync::MutexGuard<'_, Vec<Registered>> {
        self.registered.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Connections of the registered servers that are in use.
    pub(super) fn registered_conns(&self) -> Vec<Arc<Connection>> {
        self.registry().iter().filter_map(|r| r.conn.clone()).collect()
    }

    /// Register (or replace the same extension's) server `name`. Errors are
    /// what the extension's call throws: an invalid name or config, or a name
    /// another extension registered. The registrations of the extensions
    /// `unapplied` (still loading: pi applies them when their factory
    /// returns) are not checked against.
    pub fn register_server(
        &self,
        name: &str,
        config: &Value,
        extension_path: &str,
        sources: &ConfigSources<'_>,
        unapplied: &[String],
    ) -> Result<(), String> {
        let registered: Vec<(String, String)> = self
            .registry()
            .iter()
            .filter(|r| !unapplied.contains(&r.extension_path))
            .map(|r| (r.name.clone(), r.extension_path.clone()))
            .collect();
        let taken = registered.iter().map(|(name, path)| (name.as_str(), path.as_str()));
        let server = super::registration::check_registration(name, config, extension_path, sources, taken)?;
        let shadowed = self.configured.iter().any(|c| same_server_name(&c.config.name, name));
        let conn = server.filter(|_| !shadowed && !self.disabled).map(|server| self.connection(server));
        if let Some(conn) = &conn {
            // With the mcp.json servers at start-up, at once once they started.
            let (conn, go, gate) = (conn.clone(), self.go.clone(), self.gate.clone());
            tokio::spawn(async move {
                super::start_signal(&go, gate.as_ref()).await;
                conn.connect().await;
            });
        }
        let entry = Registered {
            name: name.to_string(),
            config: super::registration::with_current_exposure_names(config),
            extension_path: extension_path.to_string(),
            conn,
        };
        let replaced = {
            let mut registry = self.registry();
            match registry.iter().position(|r| r.name == name) {
                Some(i) => Some(std::mem::replace(&mut registry[i], entry)),
                None => {
                    registry.push(entry);
                    None
                }
            }
        };
        if let Some(conn) = replaced.and_then(|r| r.conn) {
            tokio::spawn(async move { conn.shutdown().await });
        }
        Ok(())
    }

    /// Remove `name` if `extension_path` registered it (its connection is
    /// closed, its tools unreachable); whether anything changed.
    pub fn unregister_server(&self, name: &str, extension_path: &str) -> bool {
        let removed = {
            let mut registry = self.registry();
            let index = registry.iter().position(|r| r.name == name && r.extension_path == extension_path);
            index.map(|i| registry.remove(i))
        };
        let Some(removed) = removed else { return false };
        if let Some(conn) = removed.conn {
            tokio::spawn(async move { conn.shutdown().await });
        }
        true
    }

    /// pi's `RegisteredMcpServer`s, in registration order: `{name, config, extensionPath}`.
    pub fn registered_servers(&self) -> Vec<Value> {
        self.registry()
            .iter()
            .map(|r| json!({"name": r.name, "config": r.config, "extensionPath": r.extension_path}))
            .collect()
    }
}
