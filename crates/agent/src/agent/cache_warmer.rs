//! [`CacheWarmer`]: keeps the prompt cache entry of the session's last model
//! request alive, as pi 1.6.0's `CacheWarmer` does, by re-sending that
//! request with a one-token output cap shortly before the entry expires
//! (the model's `promptCache` lifetime). Each session request replaces the
//! warmed one; warming stops when the conversation or the model moves on,
//! when `cacheWarming` forbids it (`off`; `streaming` once the run is
//! over), when a refresh is not worth it (or an extension says `stop`),
//! and after fixed safety windows (an hour from the request during a run,
//! 30 minutes once idle). This part keeps the state and the clock; the
//! actor (`actor/cache_warming.rs`) runs the timers, the decision and the
//! refresh requests, and tells it what happened. The same rules keep an
//! extension's SDK session warm (extension_cache_warming.rs): what is
//! warmed is then the host's request, told by its model and options.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::current_session::ConversationMark;
use crate::config::settings::CacheWarmingMode;
use crate::message::AssistantMessage;
use crate::model::{Model, ThinkingLevel};
use crate::provider::cache_warming::{self, Decision, Phase};
use crate::provider::shared::CacheRetention;
use crate::provider::{Provider, ProviderRequest};

/// What warming needs to know of a request it keeps warm.
pub(crate) trait Warmable {
    fn model(&self) -> &Model;
    fn thinking_level(&self) -> ThinkingLevel;
    /// The request's own cache retention (none: `PI_CACHE_RETENTION`'s).
    fn cache_retention(&self) -> Option<CacheRetention>;
}

/// A session request that may be warmed, as its run made it.
pub(crate) struct WarmableRequest {
    pub provider: Arc<dyn Provider>,
    pub request: ProviderRequest,
}

impl Warmable for WarmableRequest {
    fn model(&self) -> &Model {
        &self.request.model
    }
    fn thinking_level(&self) -> ThinkingLevel {
        self.request.thinking_level
    }
    fn cache_retention(&self) -> Option<CacheRetention> {
        self.request.api_options.cache_retention
    }
}

impl std::fmt::Debug for WarmableRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmableRequest").field("model", &self.request.model.full_id()).finish()
    }
}

/// News of cache warming, from a run or a warming task to the actor.
#[derive(Debug)]
pub(crate) enum WarmMsg {
    /// A run sends a session request: warm it (`None`: it cannot be warmed,
    /// its model declares no cache lifetime) instead of the last one.
    Requested(Option<Box<WarmableRequest>>),
    /// The timer of warming run `id` fired.
    Due { id: u64 },
    /// The extensions' handlers left `action` for pi's `decision`.
    Decided { id: u64, decision: Decision, action: Value },
    /// The refresh of run `id` ended (`None`: it failed or was aborted).
    Refreshed { id: u64, message: Option<Box<AssistantMessage>>, note: Option<&'static str> },
}

/// The request being kept warm.
struct WarmRun<W> {
    /// Tells this run's timers and refreshes from a later run's.
    id: u64,
    warmable: Box<W>,
    /// The conversation when the request was made.
    mark: ConversationMark,
    ttl: Duration,
    delay: Duration,
    started_at: Instant,
    phase: Phase,
    next_warm_at: Instant,
    /// Past this, a refresh would likely come after the entry expired.
    refresh_deadline: Instant,
    /// The pending timer; none while a refresh is decided or sent.
    timer: Option<AbortHandle>,
    /// Aborts a refresh in flight when the run ends.
    cancel: CancellationToken,
}

/// A refresh that is due: what the decision needs.
pub(crate) struct DueRefresh {
    pub model: Model,
    pub phase: Phase,
}

/// A refresh to send: the request (capped at one output token) and what to note.
pub(crate) struct Refresh {
    pub provider: Arc<dyn Provider>,
    pub request: ProviderRequest,
    pub cancel: CancellationToken,
    /// `extension override` when an extension's action was not pi's.
    pub note: Option<&'static str>,
}

/// The warming state of a session (see the module docs).
pub(crate) struct CacheWarmer<W = WarmableRequest> {
    run: Option<WarmRun<W>>,
    last_id: u64,
    /// Why warming is not running (pi's status reason), for the logs.
    inactive_reason: String,
}

impl<W> Default for CacheWarmer<W> {
    fn default() -> Self {
        CacheWarmer { run: None, last_id: 0, inactive_reason: "waiting for first request".to_string() }
    }
}

impl CacheWarmer<WarmableRequest> {
    /// The decision of run `id`'s refresh came back with `action` (pi's,
    /// or an extension's): the refresh to send, or none (stopped).
    pub(crate) fn decided(
        &mut self,
        id: u64,
        decision: &Decision,
        action: &Value,
        mode: CacheWarmingMode,
        current: impl Fn(&Model, &ConversationMark) -> bool,
        now: Instant,
    ) -> Option<Refresh> {
        let note = self.approve(id, decision, action, mode, current, now)?;
        let run = self.run.as_ref()?;
        let mut request = run.warmable.request.clone();
        request.max_tokens = Some(1);
        Some(Refresh { provider: run.warmable.provider.clone(), request, cancel: run.cancel.clone(), note })
    }
}

impl<W: Warmable> CacheWarmer<W> {
    /// Why warming is not running (pi's status reason).
    pub(crate) fn inactive_reason(&self) -> &str {
        &self.inactive_reason
    }

    /// Keep `warmable` (none: a request whose model declares no cache
    /// lifetime) warm from `now` while the conversation extends
    /// `mark`; replaces any earlier run. The run's id and when its first
    /// refresh is due, or none when it cannot be warmed.
    pub(crate) fn start(
        &mut self,
        warmable: Option<Box<W>>,
        mark: ConversationMark,
        mode: CacheWarmingMode,
        now: Instant,
    ) -> Option<(u64, Instant)> {
        self.clear();
        if mode == CacheWarmingMode::Off {
            return self.stopped("cache warming disabled");
        }
        let Some(warmable) = warmable else {
            return self.stopped("cache lifetime unavailable");
        };
        if !cache_warming::replayable(warmable.model(), warmable.thinking_level()) {
            return self.stopped("request cannot be replayed safely");
        }
        let retention = warmable.cache_retention();
        let Some(ttl) = cache_warming::prompt_cache_ttl(warmable.model(), retention) else {
            let none = retention == Some(crate::provider::shared::CacheRetention::None);
            return self.stopped(if none { "request disabled prompt caching" } else { "cache lifetime unavailable" });
        };
        let Some(delay) = cache_warming::warming_delay(ttl) else {
            return self.stopped("cache lifetime unavailable");
        };
        self.last_id += 1;
        self.run = Some(WarmRun {
            id: self.last_id,
            warmable,
            mark,
            ttl,
            delay,
            started_at: now,
            phase: Phase::Streaming,
            next_warm_at: now,
            refresh_deadline: now,
            timer: None,
            cancel: CancellationToken::new(),
        });
        self.schedule(now)
    }

    /// The timer of run `id` (dropped at once when the run is gone).
    pub(crate) fn set_timer(&mut self, id: u64, timer: AbortHandle) {
        match self.run.as_mut().filter(|r| r.id == id) {
            Some(run) => run.timer = Some(timer),
            None => timer.abort(),
        }
    }

    /// The run the agent settled in goes on idle (`idle` mode) or stops.
    pub(crate) fn on_agent_settled(&mut self, mode: CacheWarmingMode, now: Instant) {
        let Some(run) = &mut self.run else { return };
        if mode == CacheWarmingMode::Streaming {
            self.stop("agent run settled");
            return;
        }
        run.phase = Phase::Idle;
        let deadline = run.started_at + cache_warming::MAX_IDLE_AGE;
        if run.next_warm_at > deadline || now >= deadline {
            self.stop("30-minute idle safety limit reached");
        }
    }

    /// The `cacheWarming` mode changed: a run it no longer allows stops
    /// (pi's `onModeChanged`). Whether a run goes on.
    pub(crate) fn on_mode_changed(&mut self, mode: CacheWarmingMode) -> bool {
        let Some(run) = &self.run else { return false };
        match mode {
            CacheWarmingMode::Off => self.stop("cache warming disabled"),
            CacheWarmingMode::Streaming if run.phase == Phase::Idle => self.stop("agent run settled"),
            _ => return true,
        }
        false
    }

    /// The request being warmed and its phase, or why none is (pi's status).
    pub(crate) fn state(&self) -> Result<(&W, Phase), &str> {
        self.run.as_ref().map(|r| (&*r.warmable, r.phase)).ok_or(&self.inactive_reason)
    }

    /// Stop warming (the session is replaced or closed).
    pub(crate) fn cancel(&mut self) {
        self.stop("inactive");
    }

    /// The timer of run `id` fired: the refresh to decide, when the run is
    /// still current (`current` tells whether the conversation extends the
    /// mark and the model is the request's) and on time.
    pub(crate) fn due(
        &mut self,
        id: u64,
        mode: CacheWarmingMode,
        current: impl Fn(&Model, &ConversationMark) -> bool,
        now: Instant,
    ) -> Option<DueRefresh> {
        let run = self.run.as_mut().filter(|r| r.id == id)?;
        run.timer = None;
        if !self.validate(mode, &current) || self.deadline_missed(now) {
            return None;
        }
        let run = self.run.as_ref()?;
        Some(DueRefresh { model: run.warmable.model().clone(), phase: run.phase })
    }

    /// The decision of run `id`'s refresh came back with `action` (pi's,
    /// or an extension's): the refresh may be sent (with the note to
    /// record, `extension override` when the action was not pi's), or
    /// none (stopped).
    pub(crate) fn approve(
        &mut self,
        id: u64,
        decision: &Decision,
        action: &Value,
        mode: CacheWarmingMode,
        current: impl Fn(&Model, &ConversationMark) -> bool,
        now: Instant,
    ) -> Option<Option<&'static str>> {
        self.run.as_ref().filter(|r| r.id == id)?;
        if !self.validate(mode, &current) || self.deadline_missed(now) {
            return None;
        }
        let overridden = action.as_str() != Some(decision.action.as_str());
        if action.as_str() == Some("stop") {
            let reason = if overridden {
                "stopped by extension"
            } else if decision.economics_available {
                "expected savings below threshold"
            } else {
                "cache economics unavailable"
            };
            self.stop(reason);
            return None;
        }
        Some(overridden.then_some("extension override"))
    }

    /// Whether run `id`'s refresh may still be recorded (the run is current).
    pub(crate) fn refreshed(
        &mut self,
        id: u64,
        mode: CacheWarmingMode,
        current: impl Fn(&Model, &ConversationMark) -> bool,
    ) -> bool {
        self.run.as_ref().is_some_and(|r| r.id == id) && self.validate(mode, &current)
    }

    /// After run `id`'s refresh: when the next one is due, unless the run stopped.
    pub(crate) fn reschedule(&mut self, id: u64, now: Instant) -> Option<(u64, Instant)> {
        self.run.as_ref().filter(|r| r.id == id)?;
        self.schedule(now)
    }

    /// Plan the run's next refresh, unless a safety window is over.
    fn schedule(&mut self, now: Instant) -> Option<(u64, Instant)> {
        let run = self.run.as_mut()?;
        run.next_warm_at = now + run.delay;
        // A timer may fire late (sleep, a busy machine): half of the margin
        // before expiry is left for that; later, the refresh would likely
        // write the entry anew at full price instead of keeping it.
        let margin_ms = (run.ttl.saturating_sub(run.delay).as_millis() / 2) as u64;
        run.refresh_deadline = run.next_warm_at + Duration::from_millis(margin_ms);
        let (limit, reason) = match run.phase {
            Phase::Idle => (cache_warming::MAX_IDLE_AGE, "30-minute idle safety limit reached"),
            Phase::Streaming => (cache_warming::MAX_AGE, "one-hour safety limit reached"),
        };
        let deadline = run.started_at + limit;
        if run.next_warm_at > deadline || now >= deadline {
            return self.stopped(reason);
        }
        Some((run.id, run.next_warm_at))
    }

    fn validate(&mut self, mode: CacheWarmingMode, current: &impl Fn(&Model, &ConversationMark) -> bool) -> bool {
        let Some(run) = &self.run else { return false };
        let reason = match mode {
            CacheWarmingMode::Off => Some("cache warming disabled"),
            CacheWarmingMode::Streaming if run.phase == Phase::Idle => Some("agent run settled"),
            _ if !current(run.warmable.model(), &run.mark) => Some("conversation context changed"),
            _ => None,
        };
        match reason {
            Some(reason) => {
                self.stop(reason);
                false
            }
            None => true,
        }
    }

    fn deadline_missed(&mut self, now: Instant) -> bool {
        let missed = self.run.as_ref().is_some_and(|r| now > r.refresh_deadline);
        if missed {
            self.stop("cache refresh deadline missed");
        }
        missed
    }

    fn clear(&mut self) {
        if let Some(run) = self.run.take() {
            if let Some(timer) = run.timer {
                timer.abort();
            }
            run.cancel.cancel();
        }
    }

    fn stop(&mut self, reason: &str) {
        self.clear();
        if self.inactive_reason != reason {
            tracing::debug!("cache warming inactive: {reason}");
        }
        self.inactive_reason = reason.to_string();
    }

    /// [`CacheWarmer::stop`], for a caller that answers "no refresh".
    fn stopped<T>(&mut self, reason: &str) -> Option<T> {
        self.stop(reason);
        None
    }
}

#[cfg(test)]
#[path = "cache_warmer_tests.rs"]
mod tests;
