//! What extensions asked of the built-ins through pi's factories
//! (`createCodemodeExtension`, `createMcpExtension`,
//! `createToolSearchExtension`): which extension owns each built-in (pi
//! then loads that extension's copy in place of its own) and the options
//! pi-rpc honours: codemode's `models`, `mode` and `inlineBudget` (over the
//! `codemode.mode` / `codemode.inlineBudget` settings), MCP's `startupWaitMs`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::DIRECT_WAIT;

/// The built-ins pi's factories stand for, by the name the host sends.
pub const BUILTINS: [&str; 3] = ["codemode", "mcp", "tool_search"];

/// pi's default `codemode.inlineBudget`, in estimated tokens.
pub const DEFAULT_INLINE_BUDGET: f64 = 3000.0;

/// How codemode presents the tools it can call (pi's `codemode.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodemodeMode {
    /// Declared tools stay declared, their descriptions say how scripts call
    /// them; codemode's description lists the tools that are not declared.
    On,
    /// Declared tools scripts call are hidden from the model and listed in
    /// codemode's description.
    Only,
    /// Another `mode` given to the factory: pi then neither notes nor hides.
    Neither,
}

/// codemode's `mode` and `inlineBudget`: the factory's options over the settings.
#[derive(Debug, Default)]
struct CodemodeChoice {
    option_mode: Option<String>,
    option_budget: Option<f64>,
    setting_only: bool,
    setting_budget: Option<f64>,
}

/// The factories' effect on one session.
#[derive(Debug)]
pub struct FactoryState {
    /// (built-in name, path of the extension that applied its factory), in
    /// the order they were claimed (the first claim of a name counts).
    owners: Mutex<Vec<(String, String)>>,
    /// codemode's `models` option: scripts get the `models` global.
    codemode_models: AtomicBool,
    /// codemode's `mode` and `inlineBudget`, from the factory and the settings.
    codemode: Mutex<CodemodeChoice>,
    /// MCP's `startupWaitMs`: how long the first prompt waits for `direct` servers.
    direct_wait_ms: AtomicU64,
    /// How many of its own commands the owner of `mcp` had registered when
    /// it applied the factory: pi lists `/mcp` right after them.
    mcp_command_slot: AtomicU64,
    /// The servers' log (MCP's `logPath`, else `<agent dir>/mcp.log`).
    pub server_log: std::sync::Arc<super::server_log::ServerLog>,
    /// pi's built-in extensions pi would load (`codemode`, `tool-search`,
    /// `mcp`): a factory's copy replaces one of them with a warning.
    loaded_builtins: Mutex<Vec<String>>,
    /// MCP's `createTransport`: the servers connect through the owner's transports.
    transport_host: Mutex<Option<std::sync::Arc<dyn super::host_transport::TransportHost>>>,
    /// Where OAuth credentials are kept (`mcp-auth.json`, or MCP's `credentials` store).
    credentials: Mutex<Option<CredentialSlot>>,
    /// MCP's `openUrl`: how a sign-in opens the authorization URL (else the platform browser).
    open_url: Mutex<Option<OpenUrlSlot>>,
    /// How an `auth.provider` server's token is read: the provider's
    /// credential as the session's model registry resolves it.
    provider_token: Mutex<Option<ProviderTokenSlot>>,
}

/// The current credential (API key or OAuth access token) of a model
/// provider, by its id; None when it has none. Read at each request.
pub type ProviderToken =
    std::sync::Arc<dyn Fn(String) -> futures::future::BoxFuture<'static, Option<String>> + Send + Sync>;

#[derive(Clone)]
struct ProviderTokenSlot(ProviderToken);

impl std::fmt::Debug for ProviderTokenSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("providerToken")
    }
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

impl std::fmt::Debug for dyn super::host_transport::TransportHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TransportHost")
    }
}

impl Default for FactoryState {
    fn default() -> Self {
        FactoryState {
            owners: Mutex::new(Vec::new()),
            codemode_models: AtomicBool::new(true),
            codemode: Mutex::new(CodemodeChoice::default()),
            direct_wait_ms: AtomicU64::new(DIRECT_WAIT.as_millis() as u64),
            mcp_command_slot: AtomicU64::new(0),
            server_log: std::sync::Arc::default(),
            loaded_builtins: Mutex::new(Vec::new()),
            transport_host: Mutex::new(None),
            credentials: Mutex::new(None),
            open_url: Mutex::new(None),
            provider_token: Mutex::new(None),
        }
    }
}

impl FactoryState {
    /// Where connections find OAuth credentials, if anywhere.
    pub fn credentials(&self) -> Option<std::sync::Arc<dyn super::oauth::CredentialBackend>> {
        self.credentials.lock().ok()?.as_ref().map(|slot| slot.store.clone())
    }

    /// Where `auth.provider` servers' tokens come from (the session's model registry).
    pub fn set_provider_token(&self, read: ProviderToken) {
        if let Ok(mut slot) = self.provider_token.lock() {
            *slot = Some(ProviderTokenSlot(read));
        }
    }

    pub fn provider_token(&self) -> Option<ProviderToken> {
        self.provider_token.lock().ok()?.as_ref().map(|slot| slot.0.clone())
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

    /// MCP's `createTransport`: connect every server through `host` from now on.
    pub fn set_transport_host(&self, host: std::sync::Arc<dyn super::host_transport::TransportHost>) {
        if let Ok(mut slot) = self.transport_host.lock() {
            *slot = Some(host);
        }
    }

    /// The extension's transports servers connect through, if it gave a factory.
    pub fn transport_host(&self) -> Option<std::sync::Arc<dyn super::host_transport::TransportHost>> {
        self.transport_host.lock().ok().and_then(|slot| slot.clone())
    }

    /// pi's built-in extensions (by pi's names: `codemode`, `tool-search`,
    /// `mcp`) that pi would load in this session.
    pub fn set_loaded_builtins(&self, names: &[String]) {
        if let Ok(mut loaded) = self.loaded_builtins.lock() {
            *loaded = names.to_vec();
        }
    }

    /// Whether pi loads its built-in extension `extension` (`codemode`,
    /// `tool-search`, `mcp`) in this session.
    pub fn builtin_loaded(&self, extension: &str) -> bool {
        self.loaded_builtins.lock().is_ok_and(|loaded| loaded.iter().any(|name| name == extension))
    }

    /// The warning pi writes to stderr at start-up when extension `path`'s
    /// copy of `builtin` (one of [`BUILTINS`]) replaces pi's own built-in
    /// extension (None when pi would not have loaded that one).
    pub fn replacement_warning(&self, builtin: &str, path: &str) -> Option<String> {
        let (extension, registers) = match builtin {
            "codemode" => ("codemode", "tool `codemode`"),
            "tool_search" => ("tool-search", "tool `tool_search`"),
            "mcp" => ("mcp", "command `/mcp`"),
            _ => return None,
        };
        self.builtin_loaded(extension).then(|| {
            format!(
                "Extension package \"builtin:{extension}\": Extension {path} registers {registers}, so built-in \
                 extension `{extension}` was not loaded. To use `{extension}`, run `pi config` and make sure it is \
                 enabled under Built-in extensions, then disable or remove the existing extension. We recommend \
                 only having one or the other loaded at a time."
            )
        })
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

    /// `createCodemodeExtension`'s `mode` and `inlineBudget` (`None`: not given).
    pub fn set_codemode_options(&self, mode: Option<String>, inline_budget: Option<f64>) {
        if let Ok(mut choice) = self.codemode.lock() {
            choice.option_mode = mode;
            choice.option_budget = inline_budget;
        }
    }

    /// The `codemode.mode` and `codemode.inlineBudget` settings (user and
    /// project settings merged), read at start and on reload.
    pub fn set_codemode_settings(&self, mode: Option<&str>, inline_budget: Option<f64>) {
        if let Ok(mut choice) = self.codemode.lock() {
            // pi: a setting other than "only" is the default, "on".
            choice.setting_only = mode == Some("only");
            choice.setting_budget = inline_budget.filter(|b| b.is_finite() && *b >= 0.0);
        }
    }

    /// How codemode presents the other tools: the factory's `mode`, else the setting's.
    pub fn codemode_mode(&self) -> CodemodeMode {
        let Ok(choice) = self.codemode.lock() else { return CodemodeMode::On };
        match choice.option_mode.as_deref() {
            Some("on") => CodemodeMode::On,
            Some("only") => CodemodeMode::Only,
            Some(_) => CodemodeMode::Neither,
            None if choice.setting_only => CodemodeMode::Only,
            None => CodemodeMode::On,
        }
    }

    /// Whether codemode's `mode` is `"only"` (see [`FactoryState::codemode_mode`]).
    pub fn codemode_only(&self) -> bool {
        self.codemode_mode() == CodemodeMode::Only
    }

    /// The estimated tokens codemode's description may spend on tool
    /// declarations: the factory's `inlineBudget`, else the setting, else 3000.
    pub fn codemode_inline_budget(&self) -> f64 {
        self.codemode.lock().ok().and_then(|c| c.option_budget.or(c.setting_budget)).unwrap_or(DEFAULT_INLINE_BUDGET)
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
        assert_eq!(state.codemode_mode(), CodemodeMode::On, "pi's default codemode mode is \"on\"");
        assert_eq!(state.codemode_inline_budget(), 3000.0);
        state.set_codemode_settings(Some("only"), Some(-1.0));
        assert_eq!(state.codemode_mode(), CodemodeMode::Only);
        assert_eq!(state.codemode_inline_budget(), 3000.0, "a negative budget setting is ignored");
        state.set_codemode_settings(Some("off"), Some(200.0));
        assert_eq!(state.codemode_mode(), CodemodeMode::On, "a setting other than \"only\" is \"on\"");
        assert_eq!(state.codemode_inline_budget(), 200.0);
        state.set_codemode_options(Some("off".into()), Some(0.0));
        assert_eq!(state.codemode_mode(), CodemodeMode::Neither, "the factory's mode goes over the setting");
        assert_eq!(state.codemode_inline_budget(), 0.0);
        assert_eq!(state.direct_wait(), DIRECT_WAIT);
        state.set_codemode_models(false);
        state.set_direct_wait(Duration::from_millis(250));
        assert!(!state.codemode_models());
        assert_eq!(state.direct_wait(), Duration::from_millis(250));
    }

    #[test]
    fn a_replaced_builtin_is_named_as_pi_warns_only_when_pi_would_load_it() {
        let state = FactoryState::default();
        assert_eq!(state.replacement_warning("mcp", "/x/a.ts"), None, "nothing loaded, nothing replaced");
        state.set_loaded_builtins(&["codemode".to_string(), "tool-search".to_string()]);
        assert_eq!(state.replacement_warning("mcp", "/x/a.ts"), None, "--no-mcp: pi's MCP extension is not loaded");
        let warning = state.replacement_warning("tool_search", "/x/a.ts").unwrap();
        assert!(
            warning.starts_with(
                "Extension package \"builtin:tool-search\": Extension /x/a.ts registers tool `tool_search`, so \
                 built-in extension `tool-search` was not loaded. To use `tool-search`, run `pi config`"
            ),
            "{warning}"
        );
        state.set_loaded_builtins(&["mcp".to_string()]);
        assert!(state.replacement_warning("mcp", "/x/a.ts").unwrap().contains("registers command `/mcp`, so"));
    }
}
