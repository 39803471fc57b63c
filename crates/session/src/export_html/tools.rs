//! Tool calls on the export page: the call (name, one-line summary, pretty JSON
//! arguments) and its result (text, images, edit diff, error state, and the
//! calls the tool made to other tools, as pi's export lists them).

use maud::{Markup, html};
use serde_json::Value;

use super::markdown::Esc;
use super::render::{images, texts};
use crate::message::{ContentBlock, NestedCallStatus, NestedToolCalls, ToolCall, ToolResultMessage};

/// Built-in tools whose summary line says what the arguments say, so the
/// JSON starts collapsed; other tools show their arguments open.
const SUMMARIZED: [&str; 7] = ["bash", "read", "write", "edit", "ls", "find", "grep"];

/// A tool call with its result (if the branch holds one) right below it.
pub(super) fn tool_call(call: &ToolCall, result: Option<&ToolResultMessage>) -> Markup {
    let status = match result {
        None => "pending",
        Some(r) if r.is_error => "error",
        Some(_) => "ok",
    };
    let command = call.arguments.get("command").and_then(Value::as_str).filter(|_| call.name == "bash");
    let json = serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|_| call.arguments.to_string());
    let summarized = SUMMARIZED.contains(&call.name.as_str());
    html! {
        section class={ "tool " (status) } id={ "tool-" (Esc(&call.id)) } {
            "\n"
            div class="tool-head" {
                span class="tool-name" { (Esc(&call.name)) }
                @if let Some(summary) = summary(&call.name, &call.arguments) {
                    code class="tool-summary" { (Esc(&summary)) }
                }
                @match result {
                    None => { span class="badge warn" { "no result" } }
                    Some(r) if r.is_error => { span class="badge error" { "error" } }
                    Some(_) => {}
                }
            }
            "\n"
            @if let Some(command) = command { pre class="cmd" { "$ " (Esc(command)) } "\n" }
            details class="args" open[!summarized] { summary { "Arguments" } pre class="json" { (Esc(&json)) } }
            "\n"
            @if let Some(r) = result { (result_body(r)) }
            @if let Some(nested) = result.and_then(|r| r.nested_calls.as_ref()).filter(|n| !n.calls.is_empty()) {
                (nested_calls(nested))
            }
        }
        "\n"
    }
}

/// The calls a tool made to other tools (a codemode script's, an extension
/// tool's `executeTool()`), recorded without their results: one line each
/// with its status, arguments (or their size when left out), duration and
/// the start of its error, under "Nested calls: N", collapsed.
fn nested_calls(nested: &NestedToolCalls) -> Markup {
    let lines: Vec<String> = nested
        .calls
        .iter()
        .map(|c| {
            let icon = match c.status {
                NestedCallStatus::Ok => "✓",
                NestedCallStatus::Error => "✗",
                NestedCallStatus::Unfinished => "…",
            };
            let args = match (&c.arguments, c.arguments_bytes) {
                (Some(args), _) => args.to_string(),
                (None, bytes) => format!("[arguments omitted, {} bytes]", bytes.unwrap_or(0)),
            };
            let duration = c.duration_ms.map(|ms| format!(" {ms}ms")).unwrap_or_default();
            let error = c.error.as_deref().map(|e| format!("\n    {}", e.replace('\n', "\n    "))).unwrap_or_default();
            format!("{icon} {} {args}{duration}{error}", c.name)
        })
        .collect();
    let incomplete = if nested.complete { "" } else { " (incomplete record)" };
    html! {
        details class="nested-calls" {
            summary { "Nested calls: " (nested.calls.len()) (incomplete) }
            pre class="nested" { (Esc(&lines.join("\n"))) }
        }
        "\n"
    }
}

/// The output of a tool: an edit diff when the tool reported one, else its
/// text; then its images.
pub(super) fn result_body(r: &ToolResultMessage) -> Markup {
    let class = if r.is_error { "output error" } else { "output" };
    let diff = r.details.as_ref().and_then(|d| d.get("diff")).and_then(Value::as_str).filter(|d| !d.is_empty());
    let text = texts(&r.content).join("\n");
    let has_images = r.content.iter().any(|b| matches!(b, ContentBlock::Image(_)));
    html! {
        @if let Some(diff) = diff {
            @if !text.trim().is_empty() { div class="result-note" { (Esc(text.trim())) } "\n" }
            pre class="diff" {
                // Block-level spans: no newline between them, or every line would double.
                @for line in diff.lines() { span class=(diff_line_kind(line)) { (Esc(line)) } }
            }
            "\n"
        } @else if !text.trim().is_empty() {
            pre class=(class) { (Esc(text.trim_end())) } "\n"
        } @else if !has_images {
            div class="muted small" { "(no output)" } "\n"
        }
        (images(&r.content, "tool-image"))
    }
}

/// The class of a diff line: added, deleted or context.
fn diff_line_kind(line: &str) -> &'static str {
    match line.chars().next() {
        Some('+') => "add",
        Some('-') => "del",
        _ => "ctx",
    }
}

/// One line saying what a built-in tool was asked to do.
fn summary(name: &str, args: &Value) -> Option<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = || text("path").or_else(|| text("file_path"));
    match name {
        "read" => {
            let path = path()?;
            let start = args.get("offset").and_then(Value::as_u64);
            let limit = args.get("limit").and_then(Value::as_u64);
            Some(match (start, limit) {
                (None, None) => path.to_string(),
                (start, None) => format!("{path}:{}", start.unwrap_or(1)),
                (start, Some(limit)) => {
                    let start = start.unwrap_or(1);
                    format!("{path}:{start}-{}", (start + limit).saturating_sub(1))
                }
            })
        }
        "write" | "edit" => path().map(str::to_string),
        "ls" => Some(path().unwrap_or(".").to_string()),
        "find" | "grep" => {
            let pattern = text("pattern")?;
            Some(format!("{pattern} in {}", path().unwrap_or(".")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_of_builtin_tools() {
        // bash shows its whole command below the head instead.
        assert_eq!(summary("bash", &json!({"command": "ls"})), None);
        assert_eq!(summary("read", &json!({"path": "a.rs"})).as_deref(), Some("a.rs"));
        assert_eq!(summary("read", &json!({"path": "a.rs", "offset": 10, "limit": 5})).as_deref(), Some("a.rs:10-14"));
        assert_eq!(summary("read", &json!({"path": "a.rs", "offset": 10})).as_deref(), Some("a.rs:10"));
        assert_eq!(summary("edit", &json!({"file_path": "b.rs"})).as_deref(), Some("b.rs"));
        assert_eq!(summary("ls", &json!({})).as_deref(), Some("."));
        assert_eq!(summary("grep", &json!({"pattern": "fn", "path": "src"})).as_deref(), Some("fn in src"));
        assert_eq!(summary("custom", &json!({"x": 1})), None);
    }
}
