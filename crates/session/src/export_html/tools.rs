//! Tool calls on the export page: the call (name, one-line summary, pretty JSON
//! arguments) and its result (text, images, edit diff, error state).

use serde_json::Value;

use super::markdown::escape;
use super::render::{Page, texts};
use crate::message::{ToolCall, ToolResultMessage};

/// Built-in tools whose summary line says what the arguments say, so the
/// JSON starts collapsed; other tools show their arguments open.
const SUMMARIZED: [&str; 7] = ["bash", "read", "write", "edit", "ls", "find", "grep"];

/// A tool call with its result (if the branch holds one) right below it.
pub(super) fn tool_call(page: &mut Page<'_>, call: &ToolCall, result: Option<&ToolResultMessage>) {
    let (status, badge) = match result {
        None => ("pending", "<span class=\"badge warn\">no result</span>"),
        Some(r) if r.is_error => ("error", "<span class=\"badge error\">error</span>"),
        Some(_) => ("ok", ""),
    };
    let out = &mut page.out;
    out.push_str(&format!(
        "<section class=\"tool {status}\" id=\"tool-{}\">\n<div class=\"tool-head\"><span class=\"tool-name\">{}</span>",
        escape(&call.id),
        escape(&call.name)
    ));
    if let Some(summary) = summary(&call.name, &call.arguments) {
        out.push_str(&format!("<code class=\"tool-summary\">{}</code>", escape(&summary)));
    }
    out.push_str(badge);
    out.push_str("</div>\n");

    if call.name == "bash"
        && let Some(command) = call.arguments.get("command").and_then(Value::as_str)
    {
        out.push_str(&format!("<pre class=\"cmd\">$ {}</pre>\n", escape(command)));
    }
    let json = serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|_| call.arguments.to_string());
    let open = if SUMMARIZED.contains(&call.name.as_str()) { "" } else { " open" };
    out.push_str(&format!(
        "<details class=\"args\"{open}><summary>Arguments</summary><pre class=\"json\">{}</pre></details>\n",
        escape(&json)
    ));
    if let Some(r) = result {
        result_body(page, r);
    }
    page.out.push_str("</section>\n");
}

/// The output of a tool: an edit diff when the tool reported one, else its
/// text; then its images.
pub(super) fn result_body(page: &mut Page<'_>, r: &ToolResultMessage) {
    let class = if r.is_error { "output error" } else { "output" };
    let diff = r.details.as_ref().and_then(|d| d.get("diff")).and_then(Value::as_str).filter(|d| !d.is_empty());
    let text = texts(&r.content).join("\n");
    let out = &mut page.out;
    if let Some(diff) = diff {
        if !text.trim().is_empty() {
            out.push_str(&format!("<div class=\"result-note\">{}</div>\n", escape(text.trim())));
        }
        out.push_str("<pre class=\"diff\">");
        for line in diff.lines() {
            let kind = match line.chars().next() {
                Some('+') => "add",
                Some('-') => "del",
                _ => "ctx",
            };
            // Block-level spans: no newline between them, or every line would double.
            out.push_str(&format!("<span class=\"{kind}\">{}</span>", escape(line)));
        }
        out.push_str("</pre>\n");
    } else if !text.trim().is_empty() {
        out.push_str(&format!("<pre class=\"{class}\">{}</pre>\n", escape(text.trim_end())));
    } else if !r.content.iter().any(|b| matches!(b, crate::message::ContentBlock::Image(_))) {
        out.push_str("<div class=\"muted small\">(no output)</div>\n");
    }
    page.images(&r.content, "tool-image");
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
