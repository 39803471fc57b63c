//! A session replacement (`new_session`, `switch_session`, `fork`, `clone`
//! and their extension forms) as pi 1.6.0's `AgentSessionRuntime` does it:
//! the new session is made (its file known), then the old runtime is torn
//! down while the old session is still current, so what the old instances'
//! `session_shutdown` handlers read (`ctx.sessionManager`, `ctx.model`,
//! `pi.getActiveTools()`, …) is the old session's; only then is the new
//! session made current and its runtime built (`session_restart.rs`).
//! Client ops wait from the start of the shutdown until the new runtime
//! started.

use std::time::Duration;

use serde_json::json;

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use crate::agent::parked_switch::ParkedSwitch;
use crate::error::CoreError;
use crate::op::RequestTag;

impl Agent {
    /// Answer a session op that failed, or replace the session with the
    /// one it made once every old instance had its `session_shutdown`
    /// (reason and `targetSessionFile`, the new session's file), each
    /// awaited in load order with the old session current.
    pub(super) async fn switch_after_shutdown(
        &mut self,
        tag: Option<RequestTag>,
        made: Result<ParkedSwitch, CoreError>,
    ) {
        let mut switch = match made {
            Ok(switch) => switch,
            Err(error) => return self.reply(tag, Err(error)).await,
        };
        switch.tag = tag;
        // Ops wait from here until the new runtime's `session_start`s ran (`ReplacementStarted`).
        self.ext.restart_started();
        let old = super::runtime_phases::renewable(self.ext.handle());
        if old.is_empty() {
            return self.switch_now(switch).await;
        }
        let mut shutdown = json!({"reason": switch.reason});
        if let Some(file) = switch.session.file_path() {
            shutdown["targetSessionFile"] = json!(file.display().to_string());
        }
        let internal = self.channels.internal();
        tokio::spawn(async move {
            super::runtime_phases::shut_down_in_turn(&old, &shutdown).await;
            let _ = internal.send(Internal::Extension(Box::new(ExtSignal::OldRuntimeShutDown(Box::new(switch))))).await;
        });
    }

    /// The old instances had their `session_shutdown`: the new session
    /// becomes current, its runtime is built, and the op is answered. A run
    /// a shutdown handler started in the old session is cancelled first (as
    /// pi disposes the old session), the switch waiting for its end.
    pub(super) async fn switch_now(&mut self, switch: ParkedSwitch) {
        if !self.activity.work().is_idle() {
            self.activity.cancel_work();
            let internal = self.channels.internal();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let _ =
                    internal.send(Internal::Extension(Box::new(ExtSignal::OldRuntimeShutDown(Box::new(switch))))).await;
            });
            return;
        }
        let ParkedSwitch { tag, session, reason, setup, reply } = switch;
        match self.replace_session(session).await {
            Ok(previous) => {
                self.extensions_session_started(reason, previous, setup);
                self.reply(tag, Ok(reply)).await;
            }
            Err(error) => {
                self.ext.restart_done();
                self.reply(tag, Err(error)).await;
                // Boxed: releasing the held ops may lead back here.
                Box::pin(self.release_deferred()).await;
            }
        }
    }
}
