//! Prompt-cache warming, the actor's side ([`CacheWarmer`] keeps the
//! state): each session request a run makes starts a warming run; its
//! timer fires shortly before the cache entry expires; pi's decision
//! (`warmCost`, `missCost`, `continuationProbability`, `action`) goes to
//! the extensions' `cache_warming_decision` handlers; a refresh (the
//! request again, capped at one output token, through the extensions'
//! provider events) is sent in its own task, and its usage is recorded as
//! a `usage` entry of kind `cache_warm` (counted in the session's totals,
//! outside the conversation) and announced with `entry_appended`, as pi
//! 1.6.0 does. Nothing here waits on the network or on an extension: each
//! step reports back as an [`Internal::CacheWarming`] message.
//!
//! [`CacheWarmer`]: crate::agent::cache_warmer::CacheWarmer

use std::time::Instant;

use serde_json::Value;

use super::Agent;
use crate::agent::cache_warmer::{Refresh, WarmMsg};
use crate::agent::current_session::{ConversationMark, CurrentSession};
use crate::agent::internal::Internal;
use crate::event::AgentEvent;
use crate::message::{AssistantMessage, StopReason};
use crate::model::Model;
use crate::provider::cache_warming::{self, Decision};

impl Agent {
    pub(super) async fn handle_warm_msg(&mut self, msg: WarmMsg) {
        let mode = self.prefs.settings().cache_warming;
        let now = Instant::now();
        match msg {
            WarmMsg::Requested(warmable) => {
                let mark = self.session.mark();
                let due = self.warmer.start(warmable, mark, mode, now);
                self.arm_warm_timer(due);
            }
            WarmMsg::Due { id } => {
                let current = still_fits(self.models.model(), &self.session);
                let Some(due) = self.warmer.due(id, mode, current, now) else { return };
                let decision = cache_warming::evaluate(&due.model, self.session.last_prompt_tokens(), due.phase);
                self.ask_warm_decision(id, decision);
            }
            WarmMsg::Decided { id, decision, action } => {
                let current = still_fits(self.models.model(), &self.session);
                if let Some(refresh) = self.warmer.decided(id, &decision, &action, mode, current, now) {
                    self.send_refresh(id, refresh);
                }
            }
            WarmMsg::Refreshed { id, message, note } => {
                let current = still_fits(self.models.model(), &self.session);
                if !self.warmer.refreshed(id, mode, current) {
                    return;
                }
                if let Some(message) = message {
                    self.record_cache_warm(&message, note).await;
                }
                let due = self.warmer.reschedule(id, Instant::now());
                self.arm_warm_timer(due);
            }
        }
    }

    /// The run settled: warming goes on idle, or stops (`streaming` mode).
    pub(super) fn warm_after_settle(&mut self) {
        self.warmer.on_agent_settled(self.prefs.settings().cache_warming, Instant::now());
    }

    /// A timer that reports run `id` due at `at`.
    fn arm_warm_timer(&mut self, due: Option<(u64, Instant)>) {
        let Some((id, at)) = due else { return };
        let tx = self.channels.internal();
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            let _ = tx.send(Internal::CacheWarming(Box::new(WarmMsg::Due { id }))).await;
        });
        self.warmer.set_timer(id, timer.abort_handle());
    }

    /// pi's decision through the extensions' handlers (in a task: a handler may take its time).
    fn ask_warm_decision(&mut self, id: u64, decision: Decision) {
        let tx = self.channels.internal();
        let extensions = self.ext.handle().clone();
        tokio::spawn(async move {
            let action = if extensions.listens("cache_warming_decision") {
                let (warm, miss, p) = (decision.warm_cost, decision.miss_cost, decision.continuation_probability);
                extensions.cache_warming_decision(warm, miss, p, decision.action.as_str()).await
            } else {
                Value::String(decision.action.as_str().to_string())
            };
            let _ = tx.send(Internal::CacheWarming(Box::new(WarmMsg::Decided { id, decision, action }))).await;
        });
    }

    /// Send a refresh in its own task, watched by the extensions' provider events like any request.
    fn send_refresh(&mut self, id: u64, refresh: Refresh) {
        let tx = self.channels.internal();
        let observer = self.ext.handle().request_observer(&refresh.request.model);
        tokio::spawn(async move {
            let Refresh { provider, request, cancel, note } = refresh;
            let model = request.model.clone();
            let api_key = request.api_key.clone();
            let call = crate::stream::stream_assistant(None, provider, request, cancel, &model, api_key.as_deref());
            let outcome = crate::provider::observe::observed(observer, call).await;
            let failed = matches!(outcome.message.stop_reason, StopReason::Error | StopReason::Aborted);
            let message = (outcome.error.is_none() && !failed).then(|| Box::new(outcome.message));
            let _ = tx.send(Internal::CacheWarming(Box::new(WarmMsg::Refreshed { id, message, note }))).await;
        });
    }

    /// The refresh's usage as a `usage` entry of kind `cache_warm`, announced.
    async fn record_cache_warm(&mut self, message: &AssistantMessage, note: Option<&str>) {
        let model = message.extra.get("responseModel").and_then(Value::as_str).unwrap_or(&message.model);
        match self.session.append_usage("cache_warm", &message.provider, model, &message.usage, note) {
            Ok(entry) => self.emit(AgentEvent::EntryAppended { entry: Box::new(entry) }).await,
            Err(e) => tracing::warn!("cannot record the cache refresh's usage: {e}"),
        }
    }
}

/// Whether a warmed request still fits: the model in use (`model`) is its
/// model and the conversation still starts with what the request held.
fn still_fits<'a>(model: &'a Model, session: &'a CurrentSession) -> impl Fn(&Model, &ConversationMark) -> bool + 'a {
    move |request_model: &Model, mark: &ConversationMark| {
        request_model.provider == model.provider && request_model.id == model.id && session.extends(mark)
    }
}
