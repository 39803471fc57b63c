//! pi's `model_select` and `thinking_level_select`, for the extensions that
//! await notification handlers (pi modules): pi answers `set_model` /
//! `cycle_model` once the `model_select` handlers are done, and
//! `set_thinking_level` / `cycle_thinking_level` once the
//! `thinking_level_select` handlers started (it does not await them, so
//! what a handler does after its first wait comes after the answer). The
//! op's answer waits for them, and later ops wait for that answer. The
//! other extensions get the events as notifications.

use serde_json::Value;

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use crate::error::CoreError;
use crate::op::{Reply, RequestTag};

impl Agent {
    /// Send selection event `name` (`payload` with its `type`): notified to
    /// the extensions that do not await it, delivered to those that do once
    /// the selection events before it were.
    pub(super) fn announce_selection(&mut self, name: &'static str, payload: Value) {
        let handle = self.ext.handle().clone();
        handle.notify_raw(name, payload.clone());
        if !handle.awaits(name) {
            return;
        }
        let before = self.ext.take_selection();
        let (done, handled) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            if let Some(before) = before {
                let _ = before.await;
            }
            handle.deliver(name, payload).await;
            let _ = done.send(());
        });
        self.ext.set_selection(handled);
    }

    /// Answer op `tag` with `result`, once the selection events it set off
    /// were handled (at once when there were none); later ops wait.
    pub(super) async fn reply_after_selections(&mut self, tag: Option<RequestTag>, result: Result<Reply, CoreError>) {
        let Some(handled) = self.ext.take_selection() else { return self.reply(tag, result).await };
        self.ext.hook_started();
        let internal = self.channels.internal();
        tokio::spawn(async move {
            let _ = handled.await;
            let signal = ExtSignal::SelectionsHandled { tag, result };
            let _ = internal.send(Internal::Extension(Box::new(signal))).await;
        });
    }

    /// [`ExtSignal::SelectionsHandled`]: the op's answer, then the ops that waited.
    pub(super) async fn selections_handled(&mut self, tag: Option<RequestTag>, result: Result<Reply, CoreError>) {
        self.ext.hook_done();
        self.reply(tag, result).await;
        self.release_deferred().await;
    }
}
