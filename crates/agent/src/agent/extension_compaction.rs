//! pi's compaction functions for the extension host's stand-in of pi's SDK
//! (`prepareCompaction`, the summary prompts, branch summaries' included, the file lists), computed with
//! pi-rpc's own compaction code so that an SDK session compacts as pi-rpc
//! does. The model calls themselves are made by the host, with the caller's
//! model and stream function, as pi's `compact` makes them.

use serde_json::{Value, json};

use crate::compaction::branch::branch_prompt;
use crate::compaction::prompt::{
    BRANCH_SUMMARY_PREAMBLE, NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR, SUMMARIZATION_SYSTEM_PROMPT,
    format_file_operations, history_prompt, turn_prefix_prompt,
};
use crate::compaction::{FileOps, Projection, prepare};
use crate::message::AgentMessage;
use crate::session::Session;

fn messages_at(args: &[Value], index: usize) -> Result<Vec<AgentMessage>, String> {
    serde_json::from_value(args.get(index).cloned().unwrap_or(Value::Null)).map_err(|e| format!("messages: {e}"))
}

fn text_at(args: &[Value], index: usize) -> Option<&str> {
    args.get(index).and_then(Value::as_str).filter(|t| !t.is_empty())
}

fn names(value: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string)
}

/// pi's `FileOperations` as JSON lists (`read`, `written`, `edited`).
fn file_ops_of(value: &Value) -> FileOps {
    FileOps {
        read: names(value.get("read")).collect(),
        written: names(value.get("written")).collect(),
        edited: names(value.get("edited")).collect(),
    }
}

/// pi's `prepareCompaction(pathEntries, settings)`: `null` when nothing can be compacted.
fn prepare_compaction(args: &[Value]) -> Result<Value, String> {
    let entries: Vec<Value> = serde_json::from_value(args.first().cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("pathEntries: {e}"))?;
    let settings = args.get(1).cloned().unwrap_or(Value::Null);
    let keep = settings.get("keepRecentTokens").and_then(Value::as_u64).unwrap_or(20_000);
    let session = Session::of_entries("", entries);
    let Ok(p) = prepare(&Projection::of(&session), keep, 0) else { return Ok(Value::Null) };
    Ok(json!({
        "firstKeptEntryId": p.first_kept_entry_id,
        "messagesToSummarize": p.messages_to_summarize,
        "turnPrefixMessages": p.turn_prefix_messages,
        "isSplitTurn": p.is_split_turn,
        "tokensBefore": p.tokens_before,
        "previousSummary": p.previous_summary,
        "fileOps": {"read": p.file_ops.read, "written": p.file_ops.written, "edited": p.file_ops.edited},
        "settings": settings,
    }))
}

/// Compute the compaction function `name(args…)`; `None` when `name` is not one.
pub(crate) fn call(name: &str, args: &[Value]) -> Option<Result<Value, String>> {
    Some(match name {
        "prepareCompaction" => prepare_compaction(args),
        // pi's `_checkCompaction` decision for an SDK session (compaction_decision.rs).
        "compactionDecision" => crate::agent::compaction_decision::from_json(args.first().unwrap_or(&Value::Null)),
        // pi's `estimateProjectedContextTokens` of a branch given as entries: `{tokens}`.
        "estimateProjectedContextTokens" => {
            serde_json::from_value::<Vec<Value>>(args.first().cloned().unwrap_or(Value::Null))
                .map_err(|e| format!("branchEntries: {e}"))
                .map(
                    |entries| json!({ "tokens": Projection::of(&Session::of_entries("", entries)).estimate_tokens(0) }),
                )
        }
        // The user message asking for a history summary (messages, previousSummary, customInstructions).
        "summaryPrompt" => {
            messages_at(args, 0).map(|m| Value::String(history_prompt(&m, text_at(args, 1), text_at(args, 2))))
        }
        // The user message asking for a split turn's prefix summary (messages, customInstructions).
        "turnPrefixPrompt" => messages_at(args, 0).map(|m| Value::String(turn_prefix_prompt(&m, text_at(args, 1)))),
        // The user message asking for a branch summary (messages, customInstructions, replaceInstructions).
        "branchSummaryPrompt" => messages_at(args, 0).map(|m| {
            let replace = args.get(2).and_then(Value::as_bool).unwrap_or(false);
            Value::String(branch_prompt(&m, text_at(args, 1), replace))
        }),
        "summaryTexts" => Ok(json!({
            "branchPreamble": BRANCH_SUMMARY_PREAMBLE,
            "systemPrompt": SUMMARIZATION_SYSTEM_PROMPT,
            "noPriorHistory": NO_PRIOR_HISTORY,
            "splitTurnSeparator": SPLIT_TURN_SEPARATOR,
        })),
        // pi's `computeFileLists(fileOps)`.
        "computeFileLists" => {
            let (read, modified) = file_ops_of(args.first().unwrap_or(&Value::Null)).lists();
            Ok(json!({"readFiles": read, "modifiedFiles": modified}))
        }
        "formatFileOperations" => {
            let read: Vec<String> = names(args.first()).collect();
            let modified: Vec<String> = names(args.get(1)).collect();
            Ok(Value::String(format_file_operations(&read, &modified)))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, parent: Option<&str>, message: Value) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", "message": message})
    }

    #[test]
    fn prepare_compaction_cuts_a_branch_given_as_entries() {
        let user = |t: &str| json!({"role": "user", "content": [{"type": "text", "text": t}], "timestamp": 1});
        let reply = |t: &str| {
            json!({"role": "assistant", "content": [{"type": "text", "text": t}], "api": "x",
            "provider": "p", "model": "m", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 2})
        };
        let long = "word ".repeat(200);
        let entries = json!([
            entry("a", None, user(&long)),
            entry("b", Some("a"), reply(&long)),
            entry("c", Some("b"), user("again")),
            entry("d", Some("c"), reply("ok")),
        ]);
        let p = call("prepareCompaction", &[entries, json!({"keepRecentTokens": 10})]).unwrap().unwrap();
        // The long reply alone passes the budget: the cut is at it, splitting its turn.
        assert_eq!(p["firstKeptEntryId"], "b", "{p}");
        assert_eq!(p["messagesToSummarize"], json!([]), "{p}");
        assert_eq!(p["turnPrefixMessages"].as_array().map(Vec::len), Some(1), "{p}");
        assert_eq!(p["isSplitTurn"], true, "{p}");
        let none = call("prepareCompaction", &[json!([entry("a", None, user("hi"))]), json!({})]).unwrap().unwrap();
        assert_eq!(none, Value::Null);
        let prompt = call("summaryPrompt", &[p["turnPrefixMessages"].clone(), Value::Null, json!("files")]);
        let prompt = prompt.unwrap().unwrap();
        assert!(prompt.as_str().unwrap().starts_with("<conversation>\n[User]: word"), "{prompt}");
        assert!(prompt.as_str().unwrap().ends_with("Additional focus: files"), "{prompt}");
        let lists = call("computeFileLists", &[json!({"read": ["a", "b"], "written": ["b"], "edited": []})]);
        assert_eq!(lists.unwrap().unwrap(), json!({"readFiles": ["a"], "modifiedFiles": ["b"]}));
    }

    #[test]
    fn projected_context_tokens_start_from_the_last_usage_until_a_context_edit() {
        let user = json!({"role": "user", "content": [{"type": "text", "text": "x".repeat(35)}], "timestamp": 1});
        let reply = json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "x",
            "provider": "p", "model": "m", "usage": {"input": 900, "output": 100, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": 1000, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 2});
        let mut entries =
            vec![entry("a", None, user.clone()), entry("b", Some("a"), reply), entry("c", Some("b"), user)];
        let tokens = |entries: &[Value]| call("estimateProjectedContextTokens", &[json!(entries)]).unwrap().unwrap();
        // The reply's usage, then the trailing user message's estimate (35 chars, 4 a token: 9).
        assert_eq!(tokens(&entries), json!({"tokens": 1009}));
        // A context edit after the usage (dropping the first message): the rest estimated, 1 + 9.
        entries
            .push(json!({"type": "context_edit", "id": "d", "parentId": "c", "timestamp": "2026-01-01T00:00:00.000Z",
            "targetId": "a", "replacement": null}));
        assert_eq!(tokens(&entries), json!({"tokens": 10}));
    }
}
