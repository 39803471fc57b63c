//! pi's `project_trust` event, as its RPC mode sends it: before a project's
//! resources load, the user-level and command-line extensions are started
//! alone and asked whether to trust the project (`ctx.hasUI` false). The
//! first `yes` / `no` decides; those extensions are then kept for the
//! session (`preload`), which starts with the decision.

use std::path::Path;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::preload::{PreloadedExtensions, Relay, SessionlessRequests};
use super::preload_mcp::PreSessionMcp;
use super::{ExtensionOptions, Extensions, HostSignal, StartContext};

/// What the extensions answered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TrustAnswer {
    /// `(trusted, remember)` of the first handler that decided.
    pub decision: Option<(bool, bool)>,
    /// pi's warning for each handler that threw or extension that failed:
    /// `Extension "<path>" project_trust error: <message>`.
    pub errors: Vec<String>,
    /// What the handlers `notify`, in order (pi prints them on stderr).
    pub notes: Vec<String>,
}

impl Extensions {
    /// Start the extensions of `options`, ask each that listens to
    /// `project_trust` in load order until one decides, and keep them for
    /// the session (pi keeps the one instance). Requests they make before
    /// the session adopts them are answered by `sessionless` when they need
    /// no session (pi's library functions), else refused (no session runs yet).
    pub async fn ask_project_trust(
        options: &ExtensionOptions,
        cwd: &Path,
        temp_dir: &Path,
        sessionless: Option<SessionlessRequests>,
    ) -> (TrustAnswer, PreloadedExtensions) {
        let (tx, mut rx) = mpsc::channel::<HostSignal>(64);
        let ctx = StartContext { cwd, temp_dir, session_id: "", session_file: None };
        let mcp = PreSessionMcp::new(options.agent_dir.clone(), cwd.to_path_buf());
        let relay = Relay::new(std::sync::Arc::new(tx), sessionless, mcp);
        let extensions = Extensions::start(options, &ctx, relay.clone());
        relay.serve(&extensions);
        let mut answer = TrustAnswer::default();
        let settled = |list: &[std::sync::Arc<super::Extension>]| list.iter().all(|e| e.is_ready() || e.is_dead());
        while !settled(&extensions.list()) {
            let Some(signal) = rx.recv().await else { break };
            match signal {
                HostSignal::Died { id, error, .. } => {
                    let path = extensions.get(id).map(|e| e.path_string()).unwrap_or_default();
                    tracing::debug!("extension {path} failed before the trust decision: {error}");
                }
                signal @ (HostSignal::Request { .. } | HostSignal::ModelStream { .. }) => {
                    relay.answer_unbound(signal);
                }
                HostSignal::Registered { .. } | HostSignal::Error { .. } | HostSignal::Event(_) => {}
            }
            // An extension loaded or failed: MCP calls of those loaded after it may be answered.
            relay.release_parked();
        }
        relay.release_parked();
        // Until the session adopts them: requests answered without a session or refused, nothing queued.
        relay.point_at(None);
        drop(rx);
        let params = json!({"cwd": cwd.display().to_string()});
        for ext in extensions.list().iter().filter(|e| e.subscribes("project_trust")) {
            let result = match ext.call("project_trust", params.clone(), None).await {
                Ok(result) => result,
                Err(super::CallError::Failed(error) | super::CallError::Dead(error)) => {
                    answer.errors.push(format!("Extension \"{}\" project_trust error: {error}", ext.path_string()));
                    continue;
                }
                Err(super::CallError::Cancelled) => continue,
            };
            answer
                .notes
                .extend(result["notes"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from));
            for error in result["errors"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                answer.errors.push(format!("Extension \"{}\" project_trust error: {error}", ext.path_string()));
            }
            if let Some(trusted) = result["trusted"].as_bool() {
                answer.decision = Some((trusted, result["remember"] == true));
                break;
            }
        }
        (answer, PreloadedExtensions::new(extensions, relay))
    }
}
