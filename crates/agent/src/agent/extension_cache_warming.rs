//! `lib("cacheWarmer", {op, warmer, …})`: pi-rpc's prompt-cache warming
//! rules ([`CacheWarmer`]) for an extension's SDK session, as pi 1.6.0's
//! SDK session warms its requests. The host keeps the timers and sends the
//! refreshes (the session's own stream, capped at one output token); every
//! decision is made here, by the main session's warmer, one per `warmer`
//! name. Ops, each with the session's `mode` (`cacheWarming`) where it
//! matters and `current` (the model and conversation still the request's):
//! - `start {model, reasoning?, cacheRetention?}`: a session request to
//!   keep warm, replacing the last: `{run, dueInMs}`, or `{stopped}`;
//! - `settled`: the session's run settled (idle phase, or stop);
//! - `due {run, usage}` (the branch's last answer's usage): pi's decision
//!   `{warmCost, missCost, continuationProbability, action}` for the
//!   extensions' `cache_warming_decision`, or null (stopped);
//! - `decided {run, action}`: `{note}` (send the refresh), or null;
//! - `refreshed {run}`: whether the refresh may be recorded;
//! - `reschedule {run}`: `{dueInMs}` of the next refresh, or null;
//! - `modeChanged`: the mode changed; whether the run goes on;
//! - `status {usage}`: pi's `evaluateCacheWarming` of the run now
//!   (`{decision}`), or `{reason}` when none runs;
//! - `cancel`: forget the warmer (the session was disposed).
//!
//! [`CacheWarmer`]: crate::agent::cache_warmer::CacheWarmer

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde_json::{Value, json};

use crate::agent::cache_warmer::{CacheWarmer, Warmable};
use crate::agent::current_session::ConversationMark;
use crate::config::settings::CacheWarmingMode;
use crate::model::{Model, ThinkingLevel};
use crate::provider::cache_warming::{self, Decision, Phase};
use crate::provider::shared::CacheRetention;

/// A host request's part that warming looks at.
struct HostRequest {
    model: Model,
    thinking: ThinkingLevel,
    retention: Option<CacheRetention>,
}

impl Warmable for HostRequest {
    fn model(&self) -> &Model {
        &self.model
    }
    fn thinking_level(&self) -> ThinkingLevel {
        self.thinking
    }
    fn cache_retention(&self) -> Option<CacheRetention> {
        self.retention
    }
}

/// One SDK session's warmer and the decision its handlers are asked about.
#[derive(Default)]
struct HostWarmer {
    warmer: CacheWarmer<HostRequest>,
    decision: Option<(u64, Decision)>,
}

static WARMERS: Mutex<Option<HashMap<String, HostWarmer>>> = Mutex::new(None);

fn ms_from(now: Instant, due: Option<(u64, Instant)>) -> Option<Value> {
    due.map(|(run, at)| json!({ "run": run, "dueInMs": at.saturating_duration_since(now).as_millis() as u64 }))
}

fn retention(value: &Value) -> Option<CacheRetention> {
    match value.as_str()? {
        "none" => Some(CacheRetention::None),
        "long" => Some(CacheRetention::Long),
        "short" => Some(CacheRetention::Short),
        _ => None,
    }
}

/// pi's `reasoning` option: a thinking level, absent when thinking is off.
fn thinking(value: &Value) -> ThinkingLevel {
    match value {
        Value::Null => ThinkingLevel::Off,
        other => serde_json::from_value(other.clone()).unwrap_or(ThinkingLevel::High),
    }
}

/// The prompt size of the last answer: its input, cache reads and writes.
fn prompt_tokens(usage: &Value) -> u64 {
    ["input", "cacheRead", "cacheWrite"].iter().filter_map(|k| usage.get(*k).and_then(Value::as_u64)).sum()
}

/// pi's `CacheWarmingDecision`, as its status shows it.
fn decision_json(decision: &Decision) -> Value {
    json!({
        "phase": match decision.phase { Phase::Streaming => "streaming", Phase::Idle => "idle" },
        "warmCost": decision.warm_cost,
        "missCost": decision.miss_cost,
        "continuationProbability": decision.continuation_probability,
        "expectedSavings": decision.expected_savings,
        "economicsAvailable": decision.economics_available,
        "action": decision.action.as_str(),
    })
}

/// Run one op (see the module docs).
pub(crate) fn call(args: &Value) -> Result<Value, String> {
    let name = args.get("warmer").and_then(Value::as_str).ok_or("cacheWarmer: no warmer named")?.to_string();
    let op = args.get("op").and_then(Value::as_str).unwrap_or_default();
    let mode = CacheWarmingMode::from_value(args.get("mode"));
    let current = args.get("current").and_then(Value::as_bool).unwrap_or(false);
    let fits = |_: &Model, _: &ConversationMark| current;
    let run = args.get("run").and_then(Value::as_u64).unwrap_or(0);
    let now = Instant::now();
    let mut warmers = WARMERS.lock().unwrap_or_else(PoisonError::into_inner);
    let warmers = warmers.get_or_insert_with(HashMap::new);
    if op == "cancel" {
        if let Some(mut gone) = warmers.remove(&name) {
            gone.warmer.cancel();
        }
        return Ok(Value::Null);
    }
    let host = warmers.entry(name).or_default();
    let warmer = &mut host.warmer;
    Ok(match op {
        "start" => {
            let request = match args.get("model").cloned().map(serde_json::from_value::<Model>) {
                Some(Ok(model)) => Some(Box::new(HostRequest {
                    model,
                    thinking: thinking(args.get("reasoning").unwrap_or(&Value::Null)),
                    retention: args.get("cacheRetention").and_then(retention),
                })),
                Some(Err(e)) => return Err(format!("cacheWarmer: invalid model: {e}")),
                None => None,
            };
            let due = warmer.start(request, ConversationMark::unchecked(), mode, now);
            ms_from(now, due).unwrap_or_else(|| json!({ "stopped": warmer.inactive_reason() }))
        }
        "settled" => {
            warmer.on_agent_settled(mode, now);
            Value::Null
        }
        "due" => match warmer.due(run, mode, fits, now) {
            Some(due) => {
                let tokens = prompt_tokens(args.get("usage").unwrap_or(&Value::Null));
                let decision = cache_warming::evaluate(&due.model, tokens, due.phase);
                let event = json!({
                    "warmCost": decision.warm_cost,
                    "missCost": decision.miss_cost,
                    "continuationProbability": decision.continuation_probability,
                    "action": decision.action.as_str(),
                });
                host.decision = Some((run, decision));
                json!({ "event": event, "decision": decision_json(&decision) })
            }
            None => Value::Null,
        },
        "decided" => {
            let Some((_, decision)) = host.decision.take().filter(|(id, _)| *id == run) else {
                return Ok(Value::Null);
            };
            let action = args.get("action").cloned().unwrap_or(Value::Null);
            match warmer.approve(run, &decision, &action, mode, fits, now) {
                Some(note) => json!({ "note": note }),
                None => Value::Null,
            }
        }
        "modeChanged" => Value::Bool(warmer.on_mode_changed(mode)),
        "status" => match warmer.state() {
            Ok((request, phase)) => {
                let tokens = prompt_tokens(args.get("usage").unwrap_or(&Value::Null));
                json!({ "decision": decision_json(&cache_warming::evaluate(request.model(), tokens, phase)) })
            }
            Err(reason) => json!({ "reason": reason }),
        },
        "refreshed" => Value::Bool(warmer.refreshed(run, mode, fits)),
        "reschedule" => ms_from(now, warmer.reschedule(run, now)).unwrap_or(Value::Null),
        other => return Err(format!("cacheWarmer: unknown op {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(prompt_cache: Value) -> Value {
        json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": "p", "baseUrl": "http://x",
            "reasoning": false, "input": ["text"], "contextWindow": 1000000, "maxTokens": 100,
            "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75},
            "promptCache": prompt_cache,
        })
    }

    #[test]
    fn an_sdk_sessions_request_is_warmed_by_the_main_sessions_rules() {
        let op = |args: Value| call(&args).unwrap();
        // No lifetime, or warming off: pi's reasons.
        let none = op(json!({"warmer": "t1", "op": "start", "model": model(Value::Null), "mode": "idle"}));
        assert_eq!(none, json!({"stopped": "cache lifetime unavailable"}));
        let off = op(json!({"warmer": "t1", "op": "start", "model": model(json!({"short": 15})), "mode": "off"}));
        assert_eq!(off, json!({"stopped": "cache warming disabled"}));
        // A 15 s lifetime: due 5 s after the request.
        let started = op(json!({"warmer": "t1", "op": "start", "model": model(json!({"short": 15})), "mode": "idle"}));
        let run = started["run"].as_u64().unwrap();
        assert!((4_900..=5_000).contains(&started["dueInMs"].as_u64().unwrap()), "{started}");
        op(json!({"warmer": "t1", "op": "settled", "mode": "idle"}));
        // Due now is early but on time for the deadline: pi's idle decision.
        let usage = json!({"input": 0, "cacheRead": 400000, "cacheWrite": 0});
        let decision =
            op(json!({"warmer": "t1", "op": "due", "run": run, "mode": "idle", "current": true, "usage": usage}));
        assert_eq!(decision["event"]["continuationProbability"], 0.15);
        assert_eq!(decision["event"]["action"], "warm");
        assert_eq!(decision["decision"]["phase"], "idle");
        let approved =
            op(json!({"warmer": "t1", "op": "decided", "run": run, "action": "warm", "mode": "idle", "current": true}));
        assert_eq!(approved, json!({"note": null}));
        assert_eq!(op(json!({"warmer": "t1", "op": "refreshed", "run": run, "mode": "idle", "current": true})), true);
        assert!(op(json!({"warmer": "t1", "op": "reschedule", "run": run}))["dueInMs"].is_u64());
        // The conversation moved on: stopped, nothing more due.
        let moved =
            op(json!({"warmer": "t1", "op": "due", "run": run, "mode": "idle", "current": false, "usage": usage}));
        assert_eq!(moved, Value::Null);
        let status = op(json!({"warmer": "t1", "op": "status"}));
        assert_eq!(status, json!({"reason": "conversation context changed"}));
        assert_eq!(op(json!({"warmer": "t1", "op": "cancel"})), Value::Null);
    }
}
