//! pi 1.6's `_checkCompaction` decision as a plain function of a session
//! (its entries and the conversation the model sees), a model and the
//! compaction settings: whether to compact now, and why (threshold,
//! overflow), whether an overflow recovery (leave the failed answer out,
//! compact, retry) starts, or is exhausted. The main session's actor
//! (`actor/compacting.rs`) acts on it; an extension's SDK session asks for it
//! through the `lib` function `compactionDecision`.

use crate::agent::compaction_msg::CheckPoint;
use crate::compaction::Projection;
use crate::compaction::estimate::{estimate_context, should_compact};
use crate::event::CompactionReason;
use crate::message::{AgentMessage, AssistantMessage, StopReason};
use crate::model::Model;
use crate::provider::classify::is_context_overflow;
use crate::session::{Session, SessionEntry};

pub(crate) const OVERFLOW_RECOVERY_EXHAUSTED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";
pub(crate) const LENGTH_RECOVERY_EXHAUSTED: &str =
    "Truncated response recovery failed after one compact-and-retry attempt.";

/// What a session's state asks for at a check point.
pub(crate) struct DecisionInput<'a> {
    /// The session's entries (its current branch is read).
    pub record: &'a Session,
    /// The conversation as the model sees it.
    pub messages: &'a [AgentMessage],
    pub model: &'a Model,
    /// Automatic compaction is on.
    pub enabled: bool,
    /// The reserve of the settings for this model.
    pub reserve_tokens: u64,
    /// Estimated tokens of the system prompt and tool declarations.
    pub system_tokens: &'a dyn Fn() -> u64,
}

/// The decision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CompactionDecision {
    /// Nothing to do.
    Nothing,
    /// Compact (no retry follows): over the threshold, or a complete answer over the window.
    Compact(CompactionReason),
    /// Leave `answer` (and its tool results) out of the context, compact
    /// (`overflow`, `willRetry`), then retry.
    Recover(Box<AssistantMessage>),
    /// A recovery was already attempted: `compaction_end` with this error.
    Exhausted(&'static str),
}

fn iso_ms(timestamp: Option<&str>) -> Option<i64> {
    timestamp.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.timestamp_millis())
}

/// pi's `_checkCompaction` (and the between-turn threshold check) at `at`;
/// `last` is the run's last answer (else the conversation's latest);
/// `recovery_attempted` when this run already compacted to recover.
pub(crate) fn decide(
    input: &DecisionInput,
    at: CheckPoint,
    last: Option<AssistantMessage>,
    recovery_attempted: bool,
) -> CompactionDecision {
    use CompactionDecision::*;
    let window = input.model.context_window;
    if !input.enabled || window == 0 {
        return Nothing;
    }
    let reserve = input.reserve_tokens;
    let record = input.record;
    if at == CheckPoint::BetweenTurns {
        let tokens = Projection::of(record).estimate_tokens_with(input.system_tokens);
        return if should_compact(tokens, window, reserve) { Compact(CompactionReason::Threshold) } else { Nothing };
    }
    let last = last.or_else(|| input.messages.iter().rev().find_map(|m| m.as_assistant().cloned()));
    let Some(last) = last else { return Nothing };
    if at == CheckPoint::AfterRun && last.stop_reason == StopReason::Aborted {
        return Nothing;
    }
    // Only the latest compaction's body is read, not the whole branch.
    let path = record.branch_positions();
    let compaction_ms = path
        .iter()
        .rev()
        .find(|&&i| record.type_at(i) == "compaction")
        .map(|&i| iso_ms(record.entry_at(i).timestamp()).unwrap_or(i64::MAX));
    // pi skips answers from before the latest compaction (`<=`); we use `<`
    // so that a retry started in the same millisecond as the compaction
    // entry still counts as after it.
    if compaction_ms.is_some_and(|ms| last.timestamp < ms) {
        return Nothing;
    }
    let projection = Projection::of(record);
    match overflow_kind(input, &last, &projection) {
        // A complete answer over the window: compact, keep the answer.
        Some(_) if last.stop_reason == StopReason::Stop => return Compact(CompactionReason::Overflow),
        Some(overflow) if recovery_attempted => {
            return Exhausted(if overflow { OVERFLOW_RECOVERY_EXHAUSTED } else { LENGTH_RECOVERY_EXHAUSTED });
        }
        Some(_) => return Recover(Box::new(last)),
        None => {}
    }
    match threshold_tokens(input, &last, &projection, compaction_ms) {
        Some(tokens) if should_compact(tokens, window, reserve) => Compact(CompactionReason::Threshold),
        _ => Nothing,
    }
}

/// `Some(true)` for a context overflow, `Some(false)` for a recoverable
/// `length` stop, `None` otherwise (pi's overflow cases 1 and 2).
fn overflow_kind(input: &DecisionInput, last: &AssistantMessage, projection: &Projection) -> Option<bool> {
    let model = input.model;
    let record = input.record;
    if last.provider != model.provider || last.model != model.id {
        return None;
    }
    let window = model.context_window;
    let message = AgentMessage::Assistant(last.clone());
    let entry_id = record.entry_id_of_message(&message).map(str::to_string);
    let projected = entry_id.as_deref().is_none_or(|id| {
        projection
            .entries
            .iter()
            .any(|e| e.id.as_deref() == Some(id) && e.messages.iter().any(|m| matches!(m, AgentMessage::Assistant(_))))
    });
    // Entries after the answer on the branch: edits and compactions.
    let path = record.branch_positions();
    let start = entry_id.as_deref().and_then(|id| path.iter().position(|&i| record.id_at(i) == Some(id)));
    let mut has_edit = false;
    let mut has_compaction = false;
    let mut latest_edit_keeps = true;
    for entry in start.map_or(&[][..], |i| &path[i + 1..]).iter().map(|&i| record.entry_at(i)) {
        match entry {
            SessionEntry::Unknown(v) if entry.type_name() == "context_edit" => {
                has_edit = true;
                if v.get("targetId").and_then(|t| t.as_str()) == entry_id.as_deref() {
                    latest_edit_keeps = v.get("replacement").is_some_and(|r| !r.is_null());
                }
            }
            _ if entry.type_name() == "compaction" => has_compaction = true,
            _ => {}
        }
    }
    let retained = entry_id.is_none() || (!has_compaction && latest_edit_keeps);
    let usage_matches = projected && !has_edit;
    let explicit =
        last.stop_reason == StopReason::Error && last.error_message.as_deref().is_some_and(is_context_overflow);
    let input_tokens = last.usage.input + last.usage.cache_read;
    let silent = last.stop_reason == StopReason::Stop && input_tokens > window;
    let length_overflow =
        last.stop_reason == StopReason::Length && last.usage.output == 0 && input_tokens as f64 >= window as f64 * 0.99;
    let overflow = (explicit && retained) || (usage_matches && (explicit || silent || length_overflow));
    let max = model.max_tokens;
    let recoverable_length = projected && last.stop_reason == StopReason::Length && max > 0 && last.usage.output < max;
    if overflow {
        Some(true)
    } else if recoverable_length {
        Some(false)
    } else {
        None
    }
}

/// Context tokens for the threshold rule (pi's case 3); `None` when the
/// only usage predates the latest compaction.
fn threshold_tokens(
    input: &DecisionInput,
    last: &AssistantMessage,
    projection: &Projection,
    compaction_ms: Option<i64>,
) -> Option<u64> {
    let direct = last.usage.context_tokens();
    if projection.entries.iter().any(|e| e.kind == "context_edit") {
        return Some(projection.estimate_tokens_with(input.system_tokens));
    }
    if last.stop_reason == StopReason::Error || direct == 0 {
        let (tokens, usage_at) = estimate_context(input.messages);
        return match usage_at {
            Some(i) => {
                let stale = compaction_ms.is_some_and(|ms| input.messages[i].timestamp() < ms);
                (!stale).then_some(tokens)
            }
            None => Some(tokens + (input.system_tokens)()),
        };
    }
    Some(direct)
}

/// The `lib` function `compactionDecision` of an SDK session: `{entries,
/// leafId, model, settings: {enabled, reserveTokens}, systemPrompt, tools,
/// at: "beforePrompt" | "betweenTurns" | "afterRun", last,
/// recoveryAttempted}` answers `{action: "none"}`, `{action: "compact",
/// reason}`, `{action: "recover", reason: "overflow", willRetry: true}`
/// (leave `last` out, compact, retry) or `{action: "exhausted", errorMessage}`.
pub(crate) fn from_json(input: &serde_json::Value) -> Result<serde_json::Value, String> {
    use serde_json::{Value, json};
    let entries = input.get("entries").and_then(Value::as_array).cloned().unwrap_or_default();
    let header = serde_json::to_value(json!({"type": "session", "version": 3, "id": "", "cwd": ""}))
        .map_err(|e| e.to_string())?;
    let leaf = input.get("leafId").and_then(Value::as_str);
    let record = Session::of_header_and_entries(header, entries, None, leaf, "");
    let model: Model = serde_json::from_value(input.get("model").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("model: {e}"))?;
    let last: Option<AssistantMessage> = match input.get("last") {
        Some(v) if !v.is_null() => Some(serde_json::from_value(v.clone()).map_err(|e| format!("last: {e}"))?),
        _ => None,
    };
    let at = match input.get("at").and_then(Value::as_str) {
        Some("beforePrompt") => CheckPoint::BeforePrompt,
        Some("betweenTurns") => CheckPoint::BetweenTurns,
        Some("afterRun") => CheckPoint::AfterRun,
        other => return Err(format!("at: unknown check point {other:?}")),
    };
    let settings = input.get("settings").cloned().unwrap_or(Value::Null);
    let defaults = crate::config::settings::CompactionSettings::default();
    let tools: Vec<crate::provider::ToolSpec> = input
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| crate::provider::ToolSpec {
            name: t.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
            description: t.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
            parameters: t.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        })
        .collect();
    let prompt = input.get("systemPrompt").and_then(Value::as_str).unwrap_or_default();
    let system_tokens = || crate::compaction::estimate::estimate_system_prompt(prompt, &tools);
    let messages = record.context_messages();
    let decision_input = DecisionInput {
        record: &record,
        messages: &messages,
        model: &model,
        enabled: settings.get("enabled").and_then(Value::as_bool).unwrap_or(defaults.enabled),
        reserve_tokens: settings.get("reserveTokens").and_then(Value::as_u64).unwrap_or(defaults.reserve_tokens),
        system_tokens: &system_tokens,
    };
    let recovery_attempted = input.get("recoveryAttempted").and_then(Value::as_bool).unwrap_or(false);
    let reason = CompactionReason::as_str;
    Ok(match decide(&decision_input, at, last, recovery_attempted) {
        CompactionDecision::Nothing => json!({"action": "none"}),
        CompactionDecision::Compact(r) => json!({"action": "compact", "reason": reason(r), "willRetry": false}),
        CompactionDecision::Recover(_) => {
            json!({"action": "recover", "reason": reason(CompactionReason::Overflow), "willRetry": true})
        }
        CompactionDecision::Exhausted(error) => json!({"action": "exhausted", "errorMessage": error}),
    })
}
