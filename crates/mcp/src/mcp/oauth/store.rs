//! Where MCP OAuth state lives: pi's `mcp-auth.json` (one object keyed by
//! `mcp__<server>|<url>`, each value pi-mcp's `McpOAuthState`), written under
//! pi's file lock, with one refresh lock file per server in the agent
//! directory (`mcp-auth-refresh-<hash>`, taken as `proper-lockfile` does), so
//! that pi and pi-rpc share the file both ways and never refresh the same
//! rotating refresh token twice. An extension's credentials store object
//! (`createMcpExtension({ credentials })`) is another [`CredentialBackend`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_auth::auth::lock::{FileLock, LockOptions};
use serde_json::{Map, Value};

use super::super::naming;
use super::normalized_url;

/// A held refresh lock; dropping it releases the lock.
pub type RefreshGuard = Box<dyn std::any::Any + Send + Sync>;

/// Per-server OAuth state (pi's `McpOAuthServerStore` for one server).
#[async_trait::async_trait]
pub trait CredentialBackend: Send + Sync {
    /// The stored state of the server, if any.
    async fn load(&self, name: &str, url: &str) -> Result<Option<Value>, String>;
    async fn save(&self, name: &str, url: &str, state: Value) -> Result<(), String>;
    /// Forget the server's credentials; whether there were any (sign-out).
    async fn remove(&self, name: &str, url: &str) -> Result<bool, String>;
    /// Hold the server's refresh lock: other processes do not refresh meanwhile.
    async fn refresh_lock(&self, name: &str, url: &str) -> Result<RefreshGuard, String>;
}

/// A refresh lock its holder stopped renewing is taken over after this (pi's value).
const REFRESH_LOCK_STALE: Duration = Duration::from_secs(20);
/// How long to wait for another process's refresh (pi's value).
const REFRESH_LOCK_WAIT: Duration = Duration::from_secs(25);

/// The key of a server's state and the legacy key older pi versions wrote (the URL alone).
pub fn keys(name: &str, url: &str) -> (String, String) {
    let legacy = normalized_url(url);
    (format!("{}|{legacy}", naming::namespace(name)), legacy)
}

/// `<agent dir>/mcp-auth.json`.
#[derive(Debug, Clone)]
pub struct McpAuthFile {
    path: PathBuf,
    /// Where the refresh lock files go.
    lock_dir: PathBuf,
}

impl McpAuthFile {
    pub fn in_agent_dir(agent_dir: &Path) -> McpAuthFile {
        McpAuthFile { path: agent_dir.join("mcp-auth.json"), lock_dir: agent_dir.to_path_buf() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Under the file's lock: read every state, let `change` decide (it may
    /// edit them), write them back when it says so.
    async fn with_lock<T>(&self, change: impl FnOnce(&mut Map<String, Value>) -> (T, bool)) -> Result<T, String> {
        let err = |e: std::io::Error| format!("{}: {e}", self.path.display());
        if let Some(dir) = self.path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(err)?;
        }
        if !self.path.exists() {
            write_private(&self.path, b"{}").map_err(err)?;
        }
        let lock = FileLock::acquire(&self.path, LockOptions::default()).await.map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&self.path).map_err(err)?;
        let mut states = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            _ if text.trim().is_empty() => Map::new(),
            Ok(_) => Map::new(),
            Err(e) => return Err(format!("invalid {}: {e}", self.path.display())),
        };
        let (result, write) = change(&mut states);
        if write {
            lock.check().map_err(|e| e.to_string())?;
            let mut text = pi_auth::auth::file::to_pi_json(&states);
            text.push('\n');
            write_private(&self.path, text.as_bytes()).map_err(err)?;
        }
        Ok(result)
    }
}

/// Write the whole file in place (mode 0600 when created).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.write_all(bytes)
}

#[async_trait::async_trait]
impl CredentialBackend for McpAuthFile {
    /// The first server to load legacy state takes it over, as pi does. As
    /// pi's file backend, a missing file is created first (`{}`, mode 0600).
    async fn load(&self, name: &str, url: &str) -> Result<Option<Value>, String> {
        let (key, legacy) = keys(name, url);
        self.with_lock(|states| {
            if let Some(state) = states.get(&key) {
                return (Some(state.clone()), false);
            }
            match states.shift_remove(&legacy) {
                Some(state) => {
                    states.insert(key, state.clone());
                    (Some(state), true)
                }
                None => (None, false),
            }
        })
        .await
    }

    async fn save(&self, name: &str, url: &str, state: Value) -> Result<(), String> {
        let (key, _) = keys(name, url);
        self.with_lock(|states| {
            states.insert(key, state);
            ((), true)
        })
        .await
    }

    async fn remove(&self, name: &str, url: &str) -> Result<bool, String> {
        let (key, legacy) = keys(name, url);
        self.with_lock(|states| {
            let removed = states.shift_remove(&key).is_some() || states.shift_remove(&legacy).is_some();
            (removed, removed)
        })
        .await
    }

    async fn refresh_lock(&self, name: &str, url: &str) -> Result<RefreshGuard, String> {
        use std::os::unix::fs::DirBuilderExt;
        let (key, _) = keys(name, url);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.lock_dir)
            .map_err(|e| format!("{}: {e}", self.lock_dir.display()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
        let hash: String = digest.as_ref().iter().take(8).map(|b| format!("{b:02x}")).collect();
        let file = self.lock_dir.join(format!("mcp-auth-refresh-{hash}"));
        let mut dir = file.clone().into_os_string();
        dir.push(".lock");
        let options = LockOptions { wait: REFRESH_LOCK_WAIT, stale: REFRESH_LOCK_STALE };
        let lock = FileLock::acquire_dir(&file, PathBuf::from(dir), options).await.map_err(|e| match e {
            pi_auth::auth::lock::LockError::Busy { .. } => {
                "Another process is refreshing the MCP server's tokens".into()
            }
            other => other.to_string(),
        })?;
        Ok(Box::new(lock))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn states_are_keyed_by_name_and_url_and_legacy_state_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let file = McpAuthFile::in_agent_dir(dir.path());
        let url = "http://127.0.0.1:9/mcp";
        std::fs::write(file.path(), json!({url: {"serverUrl": url, "tokens": {"access_token": "old"}}}).to_string())
            .unwrap();
        let state = file.load("my-docs", url).await.unwrap().unwrap();
        assert_eq!(state["tokens"]["access_token"], "old");
        let written: Value = serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap();
        assert_eq!(
            written.as_object().unwrap().keys().collect::<Vec<_>>(),
            vec!["mcp__my_docs|http://127.0.0.1:9/mcp"]
        );
        assert_eq!(file.load("other", url).await.unwrap(), None, "another name signs in separately");
        let fresh = tempfile::tempdir().unwrap();
        let missing = McpAuthFile::in_agent_dir(&fresh.path().join("agent"));
        assert_eq!(missing.load("docs", url).await.unwrap(), None);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(missing.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!((std::fs::read_to_string(missing.path()).unwrap(), mode), ("{}".to_string(), 0o600), "as pi's");
        file.save("other", url, json!({"serverUrl": url})).await.unwrap();
        assert!(file.remove("my-docs", url).await.unwrap());
        assert!(!file.remove("my-docs", url).await.unwrap());
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text.ends_with("}\n") && text.contains("\n  \"mcp__other|"), "{text}");
        let _held = file.refresh_lock("other", url).await.unwrap();
        let locks: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|n| n.starts_with("mcp-auth-refresh-"))
            .collect();
        assert!(locks.len() == 1 && locks[0].len() == "mcp-auth-refresh-".len() + 16 + ".lock".len(), "{locks:?}");
    }
}
