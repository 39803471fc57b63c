//! pi's `model_select` and `thinking_level_select`, for the extensions that
//! await notification handlers (pi modules): pi answers `set_model` /
//! `cycle_model` once the `model_select` handlers are done, and
//! `set_thinking_level` / `cycle_thinking_level` once the first
//! `thinking_level_select` handler ran up to its first wait (pi's emit does
//! not await them: the next extension's handlers start once the ones
//! before are done, beside whatever comes next). The op's answer waits for
//! them; later ops wait for a thinking level's answer, not for a model's
//! (pi runs each command as its own task: the model is already switched,
//! so a `get_state` or a `prompt` sent while the `model_select` handlers
//! run is answered at once and sees it). An extension's own `pi.setModel()`
//! resolves once the handlers are done, its own included; its own
//! `pi.setThinkingLevel()` returns once the first handler started (its own
//! run inside the call when they come first). The other extensions get the
//! events as notifications.

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use crate::error::CoreError;
use crate::extensions::Extensions;
use crate::model::ThinkingLevel;
use crate::op::{Reply, RequestTag};

/// The name of pi's event for a thinking level's change.
const THINKING_LEVEL_SELECT: &str = "thinking_level_select";

/// Extension `id`'s `pi.setThinkingLevel()`, waiting for its answer.
pub(super) struct ThinkingCaller {
    id: usize,
    reply: oneshot::Sender<Result<Value, String>>,
}

impl ThinkingCaller {
    /// Answer `caller` (if any) with `answer`.
    pub(super) fn answer(caller: Option<Self>, answer: Value) {
        if let Some(caller) = caller {
            let _ = caller.reply.send(Ok(answer));
        }
    }
}

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
        let (done, handled) = oneshot::channel();
        tokio::spawn(async move {
            if let Some(before) = before {
                let _ = before.await;
            }
            handle.deliver(name, payload).await;
            let _ = done.send(());
        });
        self.ext.set_selection(handled);
    }

    /// Send `thinking_level_select` (`payload`): notified to the extensions
    /// that do not await it, started for those that do as pi's emit starts
    /// it (see [`Extensions::deliver_unawaited`]); the selection counts as
    /// handled once the first handlers started. `caller` is answered then,
    /// or at once with the run to start when its own handlers come first.
    pub(super) fn announce_thinking(&mut self, payload: Value, caller: Option<ThinkingCaller>) {
        let handle = self.ext.handle().clone();
        handle.notify_raw(THINKING_LEVEL_SELECT, payload.clone());
        if !handle.awaits(THINKING_LEVEL_SELECT) {
            return ThinkingCaller::answer(caller, Value::Null);
        }
        let first = handle.first_awaiting(THINKING_LEVEL_SELECT);
        let (own, caller) = match caller {
            Some(caller) if first == Some(caller.id) => {
                let run = Extensions::new_unawaited_run();
                let own = (caller.id, run);
                ThinkingCaller::answer(Some(caller), json!({"run": run, "event": payload}));
                (Some(own), None)
            }
            caller => (None, caller),
        };
        let before = self.ext.take_selection();
        let (started, first_started) = oneshot::channel();
        let (done, handled) = oneshot::channel();
        tokio::spawn(async move { handle.deliver_unawaited(THINKING_LEVEL_SELECT, payload, own, started).await });
        tokio::spawn(async move {
            let _ = first_started.await;
            ThinkingCaller::answer(caller, Value::Null);
            if let Some(before) = before {
                let _ = before.await;
            }
            let _ = done.send(());
        });
        self.ext.set_selection(handled);
    }

    /// Extension `id`'s `pi.setThinkingLevel()` (`params` with its level).
    pub(super) async fn extension_set_thinking_level(
        &mut self,
        id: usize,
        params: &Value,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        let level = params.get("level").and_then(Value::as_str).unwrap_or_default();
        let Ok(level) = level.parse::<ThinkingLevel>() else {
            let _ = reply.send(Err(format!("Invalid thinking level: {level}")));
            return;
        };
        self.change_thinking_for(level, Some(ThinkingCaller { id, reply })).await;
    }

    /// Answer op `tag` with `result`, once the selection events it set off
    /// were handled (at once when there were none). `holds`: later ops wait
    /// for that answer (a thinking level's, whose handlers only start); a
    /// model's lets them go on meanwhile, as pi does.
    pub(super) async fn reply_after_selections(
        &mut self,
        tag: Option<RequestTag>,
        result: Result<Reply, CoreError>,
        holds: bool,
    ) {
        let Some(handled) = self.ext.take_selection() else { return self.reply(tag, result).await };
        if holds {
            self.ext.hook_started();
        } else {
            // In flight like a command: a shutdown waits for its answer.
            self.ext.command_started();
        }
        let internal = self.channels.internal();
        tokio::spawn(async move {
            let _ = handled.await;
            let signal = ExtSignal::SelectionsHandled { tag, result, held: holds };
            let _ = internal.send(Internal::Extension(Box::new(signal))).await;
        });
    }

    /// [`ExtSignal::SelectionsHandled`]: the op's answer, then the ops that waited (`held`).
    pub(super) async fn selections_handled(
        &mut self,
        tag: Option<RequestTag>,
        result: Result<Reply, CoreError>,
        held: bool,
    ) {
        if !held {
            self.ext.command_done();
            return self.reply(tag, result).await;
        }
        self.ext.hook_done();
        self.reply(tag, result).await;
        self.release_deferred().await;
    }

    /// Extension `id`'s `pi.setModel()`: the model switches now, the call
    /// resolves once the `model_select` handlers it set off are done (the
    /// calling extension's own too, so the actor does not wait for them).
    pub(super) async fn extension_set_model(&mut self, params: &Value, reply: oneshot::Sender<Result<Value, String>>) {
        let provider = params.get("provider").and_then(Value::as_str).map(str::to_string);
        let Some(model) = params.get("id").and_then(Value::as_str).map(str::to_string) else {
            let _ = reply.send(Err("\"id\" is required".to_string()));
            return;
        };
        let switched = Value::Bool(self.set_model(provider, model).await.is_ok());
        let handled = self.ext.take_selection();
        tokio::spawn(async move {
            if let Some(handled) = handled {
                let _ = handled.await;
            }
            let _ = reply.send(Ok(switched));
        });
    }
}
