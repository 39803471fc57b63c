//! Which items of the two seeds the scenarios exercise (commands and methods
//! they send, events and notifications their rules name, error codes they
//! expect), and which commands of pi-rpc's own protocol table they send.

use std::collections::BTreeMap;

use serde_json::Value;

use super::expect::rule_literals;
use super::pattern::literal_values;
use super::scenario::Scenario;

/// Native commands of seed 000. Written from the seed, not taken from
/// pi-jsonl's `WIRE_COMMAND_TYPES`: the kit judges implementations, ours
/// included, so it must not learn the contract from one of them (pi 1.6's
/// `clear_queue`, which the seed lacks, is not here).
pub const NATIVE_COMMANDS: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "new_session",
    "get_state",
    "get_messages",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_entries",
    "get_tree",
    "get_last_assistant_text",
    "set_session_name",
    "get_commands",
    "extension_ui_response",
];

/// Native events of seed 000 (and the `assistantMessageEvent` types).
pub const NATIVE_EVENTS: &[&str] = &[
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "bash_execution_update",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "queue_update",
    "compaction_start",
    "compaction_end",
    "auto_retry_start",
    "auto_retry_end",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "extension_error",
    "extension_ui_request",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
];

/// JSON-RPC methods of seed 004 (and the client notification `extension:response`).
pub const RPC_METHODS: &[&str] = &[
    "initialize",
    "prompt",
    "sendUserMessage",
    "abort",
    "setModel",
    "setThinkingLevel",
    "setActiveTools",
    "compact",
    "newSession",
    "resumeSession",
    "shutdown",
    "getStatus",
    "extension:response",
];

/// JSON-RPC notifications of seed 004 (`modelChanged` is in its diagram).
pub const RPC_NOTIFICATIONS: &[&str] = &[
    "initialized",
    "assistantMessage",
    "toolCall",
    "toolResult",
    "turnEnd",
    "error",
    "contextUsage",
    "extension:ui",
    "modelChanged",
];

/// Error codes of seed 004.
pub const RPC_CODES: &[i64] = &[-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002, -32003];

/// Commands of pi-rpc's protocol table for one dialect, as `send:` items:
/// the commands this implementation takes, seed or not (pi 1.6's
/// `clear_queue`, our `getStatus`, …), derived from the table itself.
pub fn table_items(jsonrpc: bool) -> Vec<String> {
    pi_transport::protocol::COMMANDS
        .iter()
        .filter_map(|c| if jsonrpc { c.jsonrpc.as_ref() } else { c.native.as_ref() })
        .map(|b| format!("send:{}", b.name))
        .collect()
}

/// Seed item → scenarios that cover it, for one dialect.
pub fn coverage(scenarios: &[Scenario], jsonrpc: bool) -> Vec<(String, Vec<String>)> {
    let items: Vec<String> = if jsonrpc {
        RPC_METHODS
            .iter()
            .map(|m| format!("send:{m}"))
            .chain(RPC_NOTIFICATIONS.iter().map(|n| format!("see:{n}")))
            .chain(RPC_CODES.iter().map(|c| format!("code:{c}")))
            .collect()
    } else {
        NATIVE_COMMANDS
            .iter()
            .map(|c| format!("send:{c}"))
            .chain(NATIVE_EVENTS.iter().map(|e| format!("see:{e}")))
            .collect()
    };
    coverage_of(scenarios, &items)
}

/// Item (`send:x`, `see:x`, `code:n`) → scenarios that cover it.
pub fn coverage_of(scenarios: &[Scenario], items: &[String]) -> Vec<(String, Vec<String>)> {
    let mut covered: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in scenarios {
        let mut sent = Vec::new();
        for step in &s.steps {
            if let Some(v) = &step.send {
                let items = match v {
                    Value::Array(a) => a.clone(),
                    other => vec![other.clone()],
                };
                for item in items {
                    for key in ["type", "method"] {
                        if let Some(Value::String(t)) = item.get(key) {
                            sent.push(t.clone());
                        }
                    }
                }
            }
        }
        let mut named = Vec::new();
        for rule in &s.expect {
            for key in ["type", "method", "code"] {
                rule_literals(rule, key, &mut named);
            }
        }
        for step in &s.steps {
            if let Some(p) = &step.wait_for {
                for key in ["type", "method", "code"] {
                    literal_values(p, key, &mut named);
                }
            }
        }
        let mut add = |item: String| {
            let list = covered.entry(item).or_default();
            if !list.contains(&s.name) {
                list.push(s.name.clone());
            }
        };
        sent.into_iter().for_each(|t| add(format!("send:{t}")));
        for v in named {
            match v {
                Value::String(t) => add(format!("see:{t}")),
                Value::Number(n) => add(format!("code:{n}")),
                _ => {}
            }
        }
    }
    items.iter().map(|i| (i.clone(), covered.get(i).cloned().unwrap_or_default())).collect()
}
