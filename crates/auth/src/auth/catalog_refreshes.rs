//! The background refreshes of the built-in providers' model catalogs
//! ([`super::model_catalogs`]) for every session of one process: RPC mode's
//! one session, `pi serve`'s and ACP's many. pi 1.6.0 refreshes once its
//! session, extensions included, is made; a process running many sessions
//! refreshes once at its start (no extensions yet) and then, once a
//! session's extensions loaded, only what that session's credentials need
//! and no earlier refresh did: a provider with credentials the process has
//! not refreshed yet (a login made since), and OpenRouter's list narrowed to
//! a key no refresh used yet (an extension's OpenRouter login, refreshed
//! through the extension when expired). One refresh for each provider and
//! credential, not one for each session: a provider's refreshes run one
//! after the other, each checks what is already done (or being done), and
//! every session reads the stored result (`models-store.json`). What was
//! done is done again after pi's four-hour window, and a failure (logged at
//! debug level, as pi shows none) leaves it to the next session. No
//! session waits for a refresh.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;

use super::file::AuthFile;
use super::model_catalogs::{KeySource, REFRESH_INTERVAL_MS, REFRESH_TIMEOUT, refresh_one, usable_providers};
use crate::config::ModelRegistry;
use crate::config::stored_catalogs::{PERSONALIZED, store_path};
use crate::provider::http::HttpClient;

/// What a refresh was done for: the provider, and for OpenRouter (whose list
/// depends on the key) the key it was narrowed with.
type Done = (String, Option<String>);

/// The catalog refreshes of one agent directory, shared by the process's sessions.
pub struct CatalogRefreshes {
    agent_dir: PathBuf,
    /// What was refreshed (or is being refreshed), and when it started.
    done: Mutex<HashMap<Done, Instant>>,
    /// One lock for each provider: its refreshes run one after the other.
    running: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl CatalogRefreshes {
    pub fn new(agent_dir: PathBuf) -> Arc<CatalogRefreshes> {
        Arc::new(CatalogRefreshes { agent_dir, done: Default::default(), running: Default::default() })
    }

    /// The process's start (`pi serve`, ACP), before any session: every
    /// provider with credentials, in the background.
    pub fn start(self: &Arc<Self>) {
        let refreshes = self.clone();
        tokio::spawn(async move { refreshes.run(None).await });
    }

    /// A session's extensions loaded: refresh, in the background, what its
    /// credentials need and no refresh did. `registry` is the session's (its
    /// providers with credentials, OpenRouter's stored key); `openrouter_key`
    /// is given when an extension runs OpenRouter's login (its key is
    /// resolved first: nothing is known to be done for it until then).
    pub fn after_extensions(self: &Arc<Self>, registry: &mut ModelRegistry, openrouter_key: Option<KeySource>) {
        // The credentials as they are now (a login made since the session's registry was read).
        registry.sync_auth(&self.agent_dir);
        if openrouter_key.is_none() {
            let due = usable_providers(registry).into_iter().any(|provider| {
                let key = PERSONALIZED.contains(&provider).then(|| registry.api_key(provider)).flatten();
                !self.is_done(&(provider.to_string(), key))
            });
            if !due {
                return tracing::debug!("model catalogs: nothing new to refresh for this session");
            }
        }
        let refreshes = self.clone();
        tokio::spawn(async move { refreshes.run(openrouter_key).await });
    }

    /// Refresh every provider with credentials that is due.
    async fn run(&self, openrouter_key: Option<KeySource>) {
        let http = match HttpClient::new() {
            Ok(http) => http,
            Err(e) => return tracing::debug!("model catalogs not refreshed: {}", e.message),
        };
        let registry = match ModelRegistry::load(&self.agent_dir) {
            Ok(registry) => registry,
            Err(e) => return tracing::debug!("model catalogs not refreshed: auth.json: {e}"),
        };
        let store = AuthFile::new(store_path(&self.agent_dir));
        let mut openrouter_key = openrouter_key;
        let providers = usable_providers(&registry).into_iter().map(|provider| {
            let source = if PERSONALIZED.contains(&provider) { openrouter_key.take() } else { None };
            self.refresh(provider, &store, &registry, &http, source)
        });
        join_all(providers).await;
    }

    /// `provider`'s refresh, unless done for the same credential; OpenRouter's
    /// key from `source` when an extension logs in to it, else the stored one.
    async fn refresh(
        &self,
        provider: &str,
        store: &AuthFile,
        registry: &ModelRegistry,
        http: &HttpClient,
        source: Option<KeySource>,
    ) {
        let lock = self.lock_of(provider);
        let _running = lock.lock().await;
        let key = match (PERSONALIZED.contains(&provider), source) {
            (true, Some(source)) => match tokio::time::timeout(REFRESH_TIMEOUT, source).await {
                Ok(Ok(Some(key))) => Some(key),
                Ok(Ok(None)) => stored_key(&self.agent_dir, provider),
                Ok(Err(e)) => return tracing::debug!("model catalog of {provider}: not refreshed: {e}"),
                Err(_) => {
                    return tracing::debug!(
                        "model catalog of {provider}: not refreshed: the login's refresh timed out"
                    );
                }
            },
            // Read again: a refresh that ran meanwhile may have renewed the login.
            (true, None) => stored_key(&self.agent_dir, provider),
            (false, _) => None,
        };
        let done = (provider.to_string(), key.clone());
        if self.is_done(&done) {
            return tracing::debug!("model catalog of {provider}: already refreshed for this credential");
        }
        self.lock_done().insert(done.clone(), Instant::now());
        let refreshed = tokio::time::timeout(REFRESH_TIMEOUT, refresh_one(provider, store, registry, http, false, key));
        let failure = match refreshed.await {
            Ok(Ok(())) => return tracing::debug!("model catalog of {provider}: refreshed"),
            Ok(Err((_, e))) => e,
            Err(_) => "Model catalog refresh timed out.".to_string(),
        };
        // Left to the next session.
        self.lock_done().remove(&done);
        tracing::debug!("model catalog of {provider}: not refreshed: {failure}");
    }

    /// Whether `done` was refreshed (or is being refreshed) within pi's window.
    fn is_done(&self, done: &Done) -> bool {
        let window = Duration::from_millis(REFRESH_INTERVAL_MS as u64);
        self.lock_done().get(done).is_some_and(|at| at.elapsed() < window)
    }

    fn lock_done(&self) -> std::sync::MutexGuard<'_, HashMap<Done, Instant>> {
        self.done.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_of(&self, provider: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut running = self.running.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        running.entry(provider.to_string()).or_default().clone()
    }
}

/// `provider`'s key as `auth.json` (and the environment, `models.json`) has it now.
fn stored_key(agent_dir: &std::path::Path, provider: &str) -> Option<String> {
    ModelRegistry::load(agent_dir).ok()?.api_key(provider)
}
