//! The network refreshes of extension providers' model catalogs (a
//! registered provider's `refreshModels` with `allowNetwork: true`) for
//! every session of one process, by the process's [`RefreshRule`]. pi
//! 1.6.0's RPC mode runs them once per process, after its session's
//! extensions loaded, and its print mode never; `pi serve` and ACP run many
//! sessions, each with its own extension host, and would run them once per
//! session. There a refresh is run once for each extension (its file),
//! provider id and credential within pi's catalog window (four hours, as
//! the built-in catalogs' `catalog_refreshes`). In both, the first session
//! to ask runs it, a session asking while it runs waits for it, and the
//! others read what it stored (`models-store.json`, the provider's offline
//! phase). A refresh whose extension goes before it ends is left to the
//! next session to ask, and so, in a server, is one that failed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// pi's window for catalog refreshes (its remote catalogs' four hours).
const WINDOW: Duration = Duration::from_secs(4 * 60 * 60);

/// Longest a refresh holds its turn: the host gives the network phase fifteen seconds.
const LONGEST: Duration = Duration::from_secs(60);

/// How a process refreshes its extension providers' catalogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefreshRule {
    /// pi's RPC mode: once per process for each extension and provider,
    /// whatever its outcome: never again, after any time or with another
    /// credential (pi refreshes once, at start), and only for the
    /// extensions' first instances: those made again for a later session
    /// (after `new_session`) refresh offline only, as pi's later runtimes do.
    OncePerProcess,
    /// `pi serve` and ACP: once for each extension, provider and credential
    /// within pi's four-hour window; a failure is left to the next session.
    #[default]
    PerWindow,
    /// pi's print mode (`-p`, `--mode json`): never (the offline phase only).
    Never,
}

/// What a refresh is for: the extension's file, the provider id, and a
/// digest of the credential it refreshes with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefreshKey {
    pub extension: PathBuf,
    pub provider: String,
    pub credential: String,
}

/// The answer to a session's extension asking to refresh.
#[derive(Debug, PartialEq, Eq)]
pub enum RefreshTurn {
    /// Refresh, and say how it ended with [`ProviderRefreshes::end`] and this ticket.
    Run(u64),
    /// Refreshed within the window: read the stored catalog.
    Done,
}

/// The process's extension provider refreshes, shared by its sessions.
#[derive(Default)]
pub struct ProviderRefreshes {
    rule: RefreshRule,
    /// When each finished refresh finished.
    done: Mutex<HashMap<RefreshKey, Instant>>,
    /// One turn for each key: a refresh holds it while it runs.
    turns: Mutex<HashMap<RefreshKey, Arc<tokio::sync::Mutex<()>>>>,
    /// The refreshes under way, by ticket: how each ended.
    running: Mutex<HashMap<u64, oneshot::Sender<bool>>>,
    next_ticket: AtomicU64,
}

impl std::fmt::Debug for ProviderRefreshes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderRefreshes").finish_non_exhaustive()
    }
}

/// One process's refreshes are one value: options holding them compare equal when they hold the same.
impl PartialEq for ProviderRefreshes {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl ProviderRefreshes {
    /// A server's refreshes ([`RefreshRule::PerWindow`]).
    pub fn new() -> Arc<ProviderRefreshes> {
        ProviderRefreshes::with_rule(RefreshRule::default())
    }

    pub fn with_rule(rule: RefreshRule) -> Arc<ProviderRefreshes> {
        Arc::new(ProviderRefreshes { rule, ..ProviderRefreshes::default() })
    }

    /// Whether a network refresh may run at all (not in print mode).
    pub fn uses_network(&self) -> bool {
        self.rule != RefreshRule::Never
    }

    /// Whether only an extension's first instance may run a network
    /// refresh (pi's RPC mode: none made again for a later session).
    pub fn network_for_first_instances_only(&self) -> bool {
        self.rule == RefreshRule::OncePerProcess
    }

    /// A session's extension asks to refresh `key`: it waits while another
    /// session refreshes it, and is told to run it unless that (or an
    /// earlier) refresh of the window succeeded. `gone` is cancelled when the
    /// asking extension goes: a refresh it was told to run then ends failed.
    pub async fn begin(self: &Arc<Self>, mut key: RefreshKey, gone: CancellationToken) -> RefreshTurn {
        match self.rule {
            RefreshRule::Never => return RefreshTurn::Done,
            // Once, whatever the credential.
            RefreshRule::OncePerProcess => key.credential.clear(),
            RefreshRule::PerWindow => {}
        }
        let turn = self.turn_of(&key);
        let held = turn.lock_owned().await;
        if self.is_done(&key) {
            tracing::debug!("catalog of {} ({}): already refreshed", key.provider, key.extension.display());
            return RefreshTurn::Done;
        }
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst) + 1;
        let (ended, outcome) = oneshot::channel();
        lock(&self.running).insert(ticket, ended);
        let refreshes = self.clone();
        tokio::spawn(async move {
            // What the extension said (`None`: it went, or never said).
            let told = tokio::select! {
                outcome = outcome => outcome.ok(),
                () = gone.cancelled() => None,
                () = tokio::time::sleep(LONGEST) => None,
            };
            lock(&refreshes.running).remove(&ticket);
            let (provider, extension) = (&key.provider, key.extension.display());
            if told == Some(true) {
                tracing::debug!("catalog of {provider} ({extension}): refreshed");
            } else {
                tracing::debug!("catalog of {provider} ({extension}): not refreshed");
            }
            // pi's one refresh per process is not tried again when it failed.
            let once = refreshes.rule == RefreshRule::OncePerProcess;
            if told == Some(true) || (once && told.is_some()) {
                lock(&refreshes.done).insert(key, Instant::now());
            }
            drop(held);
        });
        RefreshTurn::Run(ticket)
    }

    /// The refresh of `ticket` ended: `succeeded` or not.
    pub fn end(&self, ticket: u64, succeeded: bool) {
        if let Some(ended) = lock(&self.running).remove(&ticket) {
            let _ = ended.send(succeeded);
        }
    }

    fn is_done(&self, key: &RefreshKey) -> bool {
        let once = self.rule == RefreshRule::OncePerProcess;
        lock(&self.done).get(key).is_some_and(|at| once || at.elapsed() < WINDOW)
    }

    fn turn_of(&self, key: &RefreshKey) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.turns).entry(key.clone()).or_default().clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(credential: &str) -> RefreshKey {
        RefreshKey {
            extension: PathBuf::from("/ext.ts"),
            provider: "p".to_string(),
            credential: credential.to_string(),
        }
    }

    async fn ticket(refreshes: &Arc<ProviderRefreshes>, key: RefreshKey) -> u64 {
        match refreshes.begin(key, CancellationToken::new()).await {
            RefreshTurn::Run(ticket) => ticket,
            RefreshTurn::Done => panic!("told it was done"),
        }
    }

    #[tokio::test]
    async fn a_refresh_that_succeeded_is_not_run_again_for_the_same_credential() {
        let refreshes = ProviderRefreshes::new();
        let first = ticket(&refreshes, key("a")).await;
        // Asked while it runs: the answer waits for it.
        let waiting = tokio::spawn({
            let refreshes = refreshes.clone();
            async move { refreshes.begin(key("a"), CancellationToken::new()).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        refreshes.end(first, true);
        assert_eq!(waiting.await.ok(), Some(RefreshTurn::Done));
        // Another credential is refreshed on its own.
        ticket(&refreshes, key("b")).await;
    }

    #[tokio::test]
    async fn a_failed_refresh_or_one_whose_extension_went_is_left_to_the_next() {
        let refreshes = ProviderRefreshes::new();
        let first = ticket(&refreshes, key("a")).await;
        refreshes.end(first, false);
        let gone = CancellationToken::new();
        let second = refreshes.begin(key("a"), gone.clone()).await;
        assert!(matches!(second, RefreshTurn::Run(_)));
        gone.cancel();
        ticket(&refreshes, key("a")).await;
    }

    #[tokio::test]
    async fn rpc_mode_refreshes_once_whatever_the_outcome_or_credential() {
        let refreshes = ProviderRefreshes::with_rule(RefreshRule::OncePerProcess);
        let first = ticket(&refreshes, key("a")).await;
        refreshes.end(first, false);
        tokio::task::yield_now().await;
        for credential in ["a", "b"] {
            assert_eq!(refreshes.begin(key(credential), CancellationToken::new()).await, RefreshTurn::Done);
        }
        // No window: a done refresh stays done.
        let done = lock(&refreshes.done).values().next().copied();
        assert!(done.is_some());
        let long_ago = Instant::now().checked_sub(WINDOW + Duration::from_secs(1));
        if let Some(at) = long_ago {
            lock(&refreshes.done).values_mut().for_each(|when| *when = at);
            assert_eq!(refreshes.begin(key("a"), CancellationToken::new()).await, RefreshTurn::Done);
        }
    }

    #[tokio::test]
    async fn rpc_mode_leaves_a_refresh_whose_extension_went_to_the_next_session() {
        let refreshes = ProviderRefreshes::with_rule(RefreshRule::OncePerProcess);
        let gone = CancellationToken::new();
        assert!(matches!(refreshes.begin(key("a"), gone.clone()).await, RefreshTurn::Run(_)));
        gone.cancel();
        ticket(&refreshes, key("b")).await;
    }

    #[tokio::test]
    async fn a_server_refreshes_again_after_the_window() {
        let refreshes = ProviderRefreshes::new();
        let first = ticket(&refreshes, key("a")).await;
        refreshes.end(first, true);
        assert_eq!(refreshes.begin(key("a"), CancellationToken::new()).await, RefreshTurn::Done);
        if let Some(at) = Instant::now().checked_sub(WINDOW + Duration::from_secs(1)) {
            lock(&refreshes.done).values_mut().for_each(|when| *when = at);
            ticket(&refreshes, key("a")).await;
        }
    }

    #[test]
    fn rpc_mode_alone_gives_the_network_to_first_instances_only() {
        assert!(ProviderRefreshes::with_rule(RefreshRule::OncePerProcess).network_for_first_instances_only());
        assert!(!ProviderRefreshes::new().network_for_first_instances_only());
    }

    #[tokio::test]
    async fn print_mode_never_refreshes() {
        let refreshes = ProviderRefreshes::with_rule(RefreshRule::Never);
        assert!(!refreshes.uses_network());
        assert_eq!(refreshes.begin(key("a"), CancellationToken::new()).await, RefreshTurn::Done);
    }
}
