//! pi 1.6.0's refreshes of the built-in providers' model catalogs from the
//! CLI (see `pi_core::auth::model_catalogs`): RPC mode's, `pi serve`'s and
//! ACP's, in the background unless offline (a failure changes nothing and,
//! as in pi, shows nothing: a debug log line, seen with `--verbose` or
//! `RUST_LOG=debug`), and `pi update --models`'s, forced, whose outcome
//! is the command's (`Model catalogs refreshed`, or the failures and exit 1).

use std::sync::Arc;

use pi_core::auth::catalog_refreshes::CatalogRefreshes;
use pi_core::auth::model_catalogs::{self, Failures, REFRESH_TIMEOUT};
use pi_core::extensions::provider_refreshes::{ProviderRefreshes, RefreshRule};
use pi_core::provider::http::HttpClient;

use crate::args::Args;

/// The process's background refreshes (None offline): pi's RPC mode
/// refreshes once its session, extensions included, was made (fifteen
/// seconds at most); `pi serve` and ACP refresh at their start and then
/// for each session whose extensions need more (an OpenRouter login). The
/// sessions see a newer catalog once `models-store.json` has it (their
/// registry reads the file again when it changed).
pub(crate) fn background_refreshes(args: &Args) -> Option<Arc<CatalogRefreshes>> {
    (!crate::offline(args)).then(|| CatalogRefreshes::new(pi_core::config::default_agent_dir()))
}

/// How this process refreshes extension providers' catalogs, set once by
/// the front end before any session (`pi serve` leaves the default).
static EXTENSION_REFRESH_RULE: std::sync::OnceLock<RefreshRule> = std::sync::OnceLock::new();

/// The front end's rule for extension providers' refreshes: pi's RPC mode
/// refreshes once per process, its print mode never; ACP, like `pi serve`,
/// once per window for all its sessions.
pub(crate) fn set_extension_refresh_rule(rule: RefreshRule) {
    let _ = EXTENSION_REFRESH_RULE.set(rule);
}

/// The process's extension provider refreshes (None offline): an
/// extension provider's `refreshModels` with the network runs once per
/// process in pi's RPC mode (whatever its outcome, the time since or the
/// credential) and never in its print mode; `pi serve`'s and ACP's
/// sessions (each with its own extension host) share one refresh for each
/// extension, provider and credential within pi's window, as they share
/// the built-in catalogs'.
pub(crate) fn extension_provider_refreshes(args: &Args) -> Option<Arc<ProviderRefreshes>> {
    static PROCESS: std::sync::OnceLock<Arc<ProviderRefreshes>> = std::sync::OnceLock::new();
    let rule = || EXTENSION_REFRESH_RULE.get().copied().unwrap_or_default();
    (!crate::offline(args)).then(|| PROCESS.get_or_init(|| ProviderRefreshes::with_rule(rule())).clone())
}

/// One refresh of `default_agent_dir()`'s catalogs within pi's time limit.
async fn refresh(force: bool) -> Result<Failures, String> {
    let agent_dir = pi_core::config::default_agent_dir();
    let http = HttpClient::new().map_err(|e| e.message)?;
    tokio::time::timeout(REFRESH_TIMEOUT, model_catalogs::refresh(&agent_dir, &http, force))
        .await
        .map_err(|_| "Model catalog refresh timed out.".to_string())
}

/// `pi update --models`: every catalog asked again; pi's lines.
pub(crate) fn update_models() -> Result<(), Vec<String>> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| vec![format!("Error: {e}")])?;
    match runtime.block_on(refresh(true)) {
        Ok(failures) if failures.is_empty() => {
            crate::user_lines::out("Model catalogs refreshed");
            Ok(())
        }
        Ok(failures) => {
            Err(vec![format!("Error: Could not refresh model catalogs: {}", model_catalogs::describe(&failures))])
        }
        Err(message) => Err(vec![format!("Error: {message}")]),
    }
}
