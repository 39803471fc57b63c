//! What extensions asked of the built-ins through pi's factories
//! (`createCodemodeExtension`, `createMcpExtension`,
//! `createToolSearchExtension`): which extension owns each built-in (pi
//! then loads that extension's copy in place of its own) and the options
//! pi-rpc honours: codemode's `models` and `mode`, MCP's `startupWaitMs`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::DIRECT_WAIT;

/// The built-ins pi's factories stand for, by the name the host sends.
pub const BUILTINS: [&str; 3] = ["codemode", "mcp", "tool_search"];

/// The factories' effect on one session.
#[derive(Debug)]
pub struct FactoryState {
    /// (built-in name, path of the extension that applied its factory), in
    /// the order they were claimed (the first claim of a name counts).
    owners: Mutex<Vec<(String, String)>>,
    /// codemode's `models` option: scripts get the `models` global.
    codemode_models: AtomicBool,
    /// codemode's `mode: "only"`: while codemode is on, the model is offered
    /// codemode and not the tools scripts call (pi's hidden declarations).
    codemode_only: AtomicBool,
    /// MCP's `startupWaitMs`: how long the first prompt waits for `direct` servers.
    direct_wait_ms: AtomicU64,
    /// How many of its own commands the owner of `mcp` had registered when
    /// it applied the factory: pi lists `/mcp` right after them.
    mcp_command_slot: AtomicU64,
    /// The servers' log (MCP's `logPath`, else `<agent dir>/mcp.log`).
    pub server_log: std::sync::Arc<super::server_log::ServerLog>,
    /// Where OAuth credentials are kept (`mcp-auth.json`, or MCP's `credentials` store).
    credentials: Mutex<Option<CredentialSlot>>,
    /// MCP's `openUrl`: how a sign-in opens the authorization URL (else the platform browser).
    open_url: Mutex<Option<OpenUrlSlot>>,
}

/// A function opening a URL.
pub type OpenUrl = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Clone)]
struct OpenUrlSlot(OpenUrl);

impl std::fmt::Debug for OpenUrlSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("openUrl")
    }
}

/// A credentials store in the factory state (its `Debug` names only the kind).
#[derive(Clone)]
struct CredentialSlot {
    store: std::sync::Arc<dyn super::oauth::CredentialBackend>,
    /// Set by `createMcpExtension({ credentials })`; the file does not replace it.
    from_extension: bool,
}

impl std::fmt::Debug for CredentialSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.from_extension { "extension credentials" } else { "mcp-auth.json" })
    }
}

impl Default for FactoryState {
    fn default() -> Self {
        FactoryState {
            owners: Mutex::new(Vec::new()),
            codemode_models: AtomicBool::new(true),
            codemode_only: AtomicBool::new(false),
            direct_wait_ms: AtomicU64::new(DIRECT_WAIT.as_millis() as u64),
            mcp_command_slot: AtomicU64::new(0),
            server_log: std::sync::Arc::default(),
            credentials: Mutex::new(None),
            open_url: Mutex::new(None),
        }
    }
}

impl FactoryState {
    /// Where connections find OAuth credentials, if anywhere.
    pub fn credentials(&self) -> Option<std::sync::Arc<dyn super::oauth::CredentialBackend>> {
        self.credentials.lock().ok()?.as_ref().map(|slot| slot.store.clone())
    }

    /// `<agent_dir>/mcp-auth.json`, unless an extension's store is in use.
    pub fn use_credentials_file(&self, agent_dir: &std::path::Path) {
        if let Ok(mut slot) = self.credentials.lock()
            && !slot.as_ref().is_some_and(|s| s.from_extension)
        {
            let store = std::sync::Arc::new(super::oauth::McpAuthFile::in_agent_dir(agent_dir));
            *slot = Some(CredentialSlot { store, from_extension: false });
        }
    }

    /// `createMcpExtension({ openUrl })`.
    pub fn set_open_url(&self, open: OpenUrl) {
        if let Ok(mut slot) = self.open_url.lock() {
            *slot = Some(OpenUrlSlot(open));
        }
    }

    pub fn open_url(&self) -> Option<OpenUrl> {
        self.open_url.lock().ok()?.as_ref().map(|slot| slot.0.clone())
    }

    /// `createMcpExtension({ credentials })`: the extension's store replaces the file.
    pub fn use_extension_credentials(&self, store: std::sync::Arc<dyn super::oauth::CredentialBackend>) {
        if let Ok(mut slot) = self.credentials.lock() {
            *slot = Some(CredentialSlot { store, from_extension: true });
        }
    }

    /// Extension `path` applied the factory of `builtin` (one of
    /// [`BUILTINS`]). The first owner keeps it, as in pi, where a second
    /// copy of a tool or command is a conflict the first one wins.
    pub fn claim(&self, builtin: &str, path: &str) -> Result<(), String> {
        if !BUILTINS.contains(&builtin) {
            return Err(format!("pi has no built-in extension \"{builtin}\""));
        }
        let mut owners = self.owners.lock().map_err(|_| "factory state poisoned".to_string())?;
        if !owners.iter().any(|(name, _)| name == builtin) {
            owners.push((builtin.to_string(), path.to_string()));
        }
        Ok(())
    }

    /// The extension that owns `builtin`, if one applied its factory.
    pub fn owner(&self, builtin: &str) -> Option<String> {
        self.owners.lock().ok().and_then(|o| o.iter().find(|(name, _)| name == builtin).map(|(_, path)| path.clone()))
    }

    /// The built-ins extensions own, in the order their factories were applied.
    pub fn owned(&self) -> Vec<String> {
        self.owners.lock().map(|o| o.iter().map(|(name, _)| name.clone()).collect()).unwrap_or_default()
    }

    pub fn set_codemode_models(&self, on: bool) {
        self.codemode_models.store(on, Ordering::Relaxed);
    }

    /// Whether codemode scripts get the `models` global.
    pub fn codemode_models(&self) -> bool {
        self.codemode_models.load(Ordering::Relaxed)
    }

    pub fn set_codemode_only(&self, only: bool) {
        self.codemode_only.store(only, Ordering::Relaxed);
    }

    /// Whether codemode's `mode` is `"only"` (see [`FactoryState::set_codemode_only`]).
    pub fn codemode_only(&self) -> bool {
        self.codemode_only.load(Ordering::Relaxed)
    }

    pub fn set_direct_wait(&self, wait: Duration) {
        self.direct_wait_ms.store(wait.as_millis().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    pub fn set_mcp_command_slot(&self, commands_before: u64) {
        self.mcp_command_slot.store(commands_before, Ordering::Relaxed);
    }

    /// Where `/mcp` goes among its owner's commands (see [`FactoryState::owner`]).
    pub fn mcp_command_slot(&self) -> usize {
        usize::try_from(self.mcp_command_slot.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// How long the first prompt waits for servers with `direct` tools.
    pub fn direct_wait(&self) -> Duration {
        Duration::from_millis(self.direct_wait_ms.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_owner_keeps_a_builtin_and_options_default_to_pis() {
        let state = FactoryState::default();
        assert!(state.claim("llama", "/a.ts").is_err());
        state.claim("mcp", "/a.ts").unwrap();
        state.claim("mcp", "/b.ts").unwrap();
        assert_eq!(state.owner("mcp").as_deref(), Some("/a.ts"));
        assert_eq!(state.owner("codemode"), None);
        state.claim("codemode", "/b.ts").unwrap();
        assert_eq!(state.owned(), ["mcp", "codemode"]);
        assert!(state.codemode_models());
        assert!(!state.codemode_only(), "pi's default codemode mode is \"on\"");
        assert_eq!(state.direct_wait(), DIRECT_WAIT);
        state.set_codemode_models(false);
        state.set_direct_wait(Duration::from_millis(250));
        assert!(!state.codemode_models());
        assert_eq!(state.direct_wait(), Duration::from_millis(250));
    }
}
