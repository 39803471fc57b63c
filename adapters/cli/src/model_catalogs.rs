//! pi 1.6.0's refreshes of the built-in providers' model catalogs from the
//! CLI (see `pi_core::auth::model_catalogs`): RPC mode's, in the background
//! at start unless offline (a failure changes nothing and, as in pi, shows
//! nothing: a debug log line, seen with `--verbose` or `RUST_LOG=debug`),
//! and `pi update --models`'s, forced, whose outcome
//! is the command's (`Model catalogs refreshed`, or the failures and exit 1).

use pi_core::auth::model_catalogs::{self, Failures, REFRESH_TIMEOUT};
use pi_core::provider::http::HttpClient;

/// pi's RPC mode refreshes the catalogs in the background at start (fifteen
/// seconds at most); sessions see a newer catalog once `models-store.json`
/// has it (their registry reads the file again when it changed). The agent
/// of an RPC session starts its own once its extensions loaded (one may log
/// in to OpenRouter); this one is `pi serve`'s and ACP's.
pub(crate) async fn refresh_in_background() {
    model_catalogs::refresh_quietly(&pi_core::config::default_agent_dir(), None).await;
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
