//! The numbers of prompt-cache warming, as pi-ai 1.6.0 has them
//! (`cache-warming.js`): how long a request's cache entry lives (the
//! model's `promptCache` tier for the request's retention), when a refresh
//! is due, whether a request may be replayed, and whether a refresh pays
//! for itself. The host (the agent) owns the scheduling; this owns the policy.

use std::time::Duration;

use super::shared::CacheRetention;
use crate::message::Usage;
use crate::model::{Model, ThinkingLevel};

/// Warming while a run streams never goes on past this long after the request that started it.
pub const MAX_AGE: Duration = Duration::from_secs(60 * 60);
/// Warming between runs stops sooner: the continuation estimate ages badly.
pub const MAX_IDLE_AGE: Duration = Duration::from_secs(30 * 60);
/// A refresh is sent only when it is expected to save at least this many dollars.
pub const MINIMUM_EXPECTED_SAVINGS: f64 = 0.05;
/// pi's measured chance that a real request comes before an idle cache entry expires.
pub const IDLE_CONTINUATION_PROBABILITY: f64 = 0.15;

/// Whether the agent is in a run (`streaming`) or between runs (`idle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Streaming,
    Idle,
}

/// pi's own answer to "refresh now?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmAction {
    Warm,
    Stop,
}

impl WarmAction {
    pub fn as_str(self) -> &'static str {
        match self {
            WarmAction::Warm => "warm",
            WarmAction::Stop => "stop",
        }
    }
}

/// The economics of one refresh (pi's `evaluateCacheWarming`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub phase: Phase,
    /// Dollars the refresh costs (the prompt read from the cache, one output token).
    pub warm_cost: f64,
    /// Dollars a cache miss would cost over a hit.
    pub miss_cost: f64,
    pub continuation_probability: f64,
    pub expected_savings: f64,
    /// False when the prompt size or the model's prices are unknown.
    pub economics_available: bool,
    pub action: WarmAction,
}

/// The lifetime of the cache entry a request with `retention` writes
/// (`None`: the call's own option, else `PI_CACHE_RETENTION`): the model's
/// `promptCache` value for that tier, in seconds. None when caching is off
/// or the model declares no lifetime for the tier.
pub fn prompt_cache_ttl(model: &Model, retention: Option<CacheRetention>) -> Option<Duration> {
    let tier = match retention.unwrap_or_else(CacheRetention::from_env) {
        CacheRetention::None => return None,
        CacheRetention::Short => "short",
        CacheRetention::Long => "long",
    };
    let seconds = model.extra.get("promptCache")?.get(tier)?.as_f64().filter(|s| *s > 0.0)?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// When to refresh an entry living `ttl`: at 90% of it, keeping at least ten
/// seconds of margin; never for a lifetime of ten seconds or less.
pub fn warming_delay(ttl: Duration) -> Option<Duration> {
    let ttl_ms = ttl.as_millis() as f64;
    if ttl_ms <= 10_000.0 {
        return None;
    }
    let ms = (ttl_ms * 0.9).min(ttl_ms - 10_000.0).floor().max(1.0);
    Some(Duration::from_millis(ms as u64))
}

/// Whether replaying a request with a one-token cap leaves its cache entry
/// as it was: not for Anthropic's budget-based thinking, whose budget
/// follows the output cap (and keys the cache), unless the model forces
/// adaptive thinking.
pub fn replayable(model: &Model, thinking: ThinkingLevel) -> bool {
    if thinking == ThinkingLevel::Off || model.api != "anthropic-messages" {
        return true;
    }
    let forced = model.compat.as_ref().and_then(|c| c.get("forceAdaptiveThinking"));
    forced.and_then(serde_json::Value::as_bool) == Some(true)
}

/// Whether refreshing the cache entry of a `prompt_tokens`-token request on
/// `model` pays for itself in `phase`.
pub fn evaluate(model: &Model, prompt_tokens: u64, phase: Phase) -> Decision {
    let price = |usage: Usage| model.cost_of(&usage).total;
    let cache_hit = price(Usage { cache_read: prompt_tokens, ..Usage::default() });
    let cache_miss = price(if model.cost.cache_write > 0.0 {
        Usage { cache_write: prompt_tokens, ..Usage::default() }
    } else {
        Usage { input: prompt_tokens, ..Usage::default() }
    });
    let warm_cost = price(Usage { cache_read: prompt_tokens, output: 1, ..Usage::default() });
    let miss_cost = (cache_miss - cache_hit).max(0.0);
    let continuation_probability = match phase {
        Phase::Idle => IDLE_CONTINUATION_PROBABILITY,
        Phase::Streaming => 1.0,
    };
    let economics_available = prompt_tokens > 0 && (cache_hit > 0.0 || cache_miss > 0.0);
    let expected_savings = continuation_probability * miss_cost - warm_cost;
    let action = if expected_savings >= MINIMUM_EXPECTED_SAVINGS { WarmAction::Warm } else { WarmAction::Stop };
    Decision { phase, warm_cost, miss_cost, continuation_probability, expected_savings, economics_available, action }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn model(extra: serde_json::Value) -> Model {
        let mut m: Model = serde_json::from_value(json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": "p", "baseUrl": "http://x",
            "reasoning": false, "input": ["text"], "contextWindow": 1000, "maxTokens": 100,
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        }))
        .unwrap();
        if let serde_json::Value::Object(extra) = extra {
            m.extra = extra;
        }
        m
    }

    #[test]
    fn the_refresh_comes_at_ninety_percent_with_ten_seconds_to_spare() {
        assert_eq!(warming_delay(Duration::from_secs(10)), None);
        assert_eq!(warming_delay(Duration::from_secs(11)), Some(Duration::from_secs(1)));
        assert_eq!(warming_delay(Duration::from_secs(300)), Some(Duration::from_secs(270)));
        assert_eq!(warming_delay(Duration::from_secs(60)), Some(Duration::from_secs(50)));
    }

    #[test]
    fn the_lifetime_is_the_tier_of_the_retention() {
        let m = model(json!({"promptCache": {"short": 300, "long": 3600}}));
        assert_eq!(prompt_cache_ttl(&m, Some(CacheRetention::Short)), Some(Duration::from_secs(300)));
        assert_eq!(prompt_cache_ttl(&m, Some(CacheRetention::Long)), Some(Duration::from_secs(3600)));
        assert_eq!(prompt_cache_ttl(&m, Some(CacheRetention::None)), None);
        assert_eq!(prompt_cache_ttl(&model(json!({"promptCache": {"long": 3600}})), Some(CacheRetention::Short)), None);
        assert_eq!(prompt_cache_ttl(&model(json!({})), Some(CacheRetention::Short)), None);
    }

    #[test]
    fn savings_decide_as_pi_does() {
        let m = model(json!({}));
        // pi 1.6.0 printed these for a 1,000,000-token prompt on this model.
        let idle = evaluate(&m, 1_000_000, Phase::Idle);
        assert_eq!((idle.warm_cost, idle.miss_cost, idle.continuation_probability), (0.300015, 3.45, 0.15));
        assert_eq!(idle.action, WarmAction::Warm);
        let small = evaluate(&m, 1000, Phase::Idle);
        assert_eq!((small.action, small.economics_available), (WarmAction::Stop, true));
        let streaming = evaluate(&m, 100_000, Phase::Streaming);
        assert_eq!((streaming.continuation_probability, streaming.action), (1.0, WarmAction::Warm));
        let unknown = evaluate(&m, 0, Phase::Idle);
        assert_eq!((unknown.economics_available, unknown.action), (false, WarmAction::Stop));
        let mut free = m.clone();
        free.cost = Default::default();
        assert!(!evaluate(&free, 1_000_000, Phase::Idle).economics_available);
    }

    #[test]
    fn budget_thinking_on_anthropic_is_not_replayed() {
        let mut m = model(json!({}));
        assert!(replayable(&m, ThinkingLevel::High));
        m.api = "anthropic-messages".into();
        assert!(replayable(&m, ThinkingLevel::Off));
        assert!(!replayable(&m, ThinkingLevel::High));
        m.compat = Some(serde_json::from_value(json!({"forceAdaptiveThinking": true})).unwrap());
        assert!(replayable(&m, ThinkingLevel::High));
    }
}
