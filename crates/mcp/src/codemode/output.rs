//! The codemode tool result: a `Script completed`/`Script failed` header with
//! the wall time, then the script's text and image items in order (numbered
//! when there are several texts), its console lines, and on failure the error
//! and which tool calls were made.

use std::path::Path;
use std::time::Instant;

use base64::Engine;
use serde_json::{Value, json};

use super::CallRecord;
use super::engine::ScriptOutcome;
use crate::mcp::result::{size_text, truncate_middle};
use crate::message::{ContentBlock, ImageContent};
use crate::tools::ToolOutput;

fn header(started: Instant, ok: bool) -> ContentBlock {
    let status = if ok { "Script completed" } else { "Script failed" };
    ContentBlock::text(format!("{status}\nWall time {:.1} seconds\nOutput:\n", started.elapsed().as_secs_f64()))
}

/// A script that failed before it ran.
pub fn not_started(started: Instant, why: &str) -> ToolOutput {
    ToolOutput {
        content: vec![
            header(started, false),
            ContentBlock::text(format!("Script error:\n{why}\n\nThe script did not start.")),
        ],
        details: Some(json!({"calls": []})),
        is_error: true,
        result_is_error: true,
        ..Default::default()
    }
}

fn push_text(current: &mut Option<String>, piece: &str) {
    match current {
        Some(c) => {
            c.push('\n');
            c.push_str(piece);
        }
        None => *current = Some(piece.to_string()),
    }
}

fn save_image(temp_dir: &Path, data: &str, mime: &str) -> String {
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap_or_default();
    let ext = match mime {
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "png",
    };
    let path = temp_dir.join(format!("pi-codemode-{}.{ext}", &uuid::Uuid::new_v4().simple().to_string()[..16]));
    match std::fs::create_dir_all(temp_dir).and_then(|()| std::fs::write(&path, &bytes)) {
        Ok(()) => format!("[Image saved to {} ({mime}, {})]", path.display(), size_text(bytes.len())),
        Err(e) => format!("[Image could not be saved: {e}]"),
    }
}

/// The tool output of a script run.
pub fn finish(
    started: Instant,
    outcome: ScriptOutcome,
    calls: &[CallRecord],
    max_chars: usize,
    temp_dir: &Path,
    note: Option<&str>,
) -> ToolOutput {
    let ok = outcome.error.is_none();
    let texts = outcome.items.iter().filter(|i| i.get("type").and_then(Value::as_str) == Some("text")).count();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    let mut n = 0;
    for item in &outcome.items {
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
        if s("type") == "image" {
            push_text(&mut current, &save_image(temp_dir, s("data"), s("mimeType")));
            if let Some(text) = current.take() {
                blocks.push(ContentBlock::text(text));
            }
            blocks.push(ContentBlock::Image(ImageContent {
                data: s("data").to_string(),
                mime_type: s("mimeType").to_string(),
            }));
            continue;
        }
        n += 1;
        let piece = if texts > 1 { format!("==> text {n}/{texts} <==\n{}", s("text")) } else { s("text").to_string() };
        push_text(&mut current, &piece);
    }
    if !outcome.console.is_empty() {
        push_text(&mut current, &format!("<console_output>\n{}\n</console_output>", outcome.console.join("\n")));
    }
    if let Some(error) = &outcome.error {
        let made = if calls.is_empty() {
            "No tool calls were made.".to_string()
        } else {
            let list: Vec<String> = calls.iter().map(|c| format!("{} ({})", c.name, c.status)).collect();
            format!("Tool calls made before the failure (they are not undone): {}", list.join(", "))
        };
        push_text(&mut current, &format!("Script error:\n{error}\n\n{made}"));
    }
    if let Some(note) = note {
        push_text(&mut current, note);
    }
    if let Some(text) = current.take() {
        blocks.push(ContentBlock::text(text));
    }
    let blocks = limit_output(blocks, max_chars, temp_dir);
    let mut content = vec![header(started, ok)];
    content.extend(blocks);
    let calls: Vec<Value> = calls.iter().map(CallRecord::to_json).collect();
    ToolOutput {
        content,
        details: Some(json!({"calls": calls})),
        is_error: !ok,
        result_is_error: !ok,
        ..Default::default()
    }
}

/// Output over the limit keeps its start and end; the full text goes to a temp file.
fn limit_output(blocks: Vec<ContentBlock>, max_chars: usize, temp_dir: &Path) -> Vec<ContentBlock> {
    let text: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = text.join("\n");
    let Some(cut) = truncate_middle(&text, max_chars) else { return blocks };
    let note = match crate::mcp::result::save_temp(temp_dir, text.as_bytes(), ".txt") {
        Ok(path) => format!("\n\n[Output truncated to about {} tokens; full output: {path}]", max_chars / 4),
        Err(e) => format!("\n\n[Output truncated; the full output could not be saved: {e}]"),
    };
    let mut out = vec![ContentBlock::text(format!("{cut}{note}"))];
    out.extend(blocks.into_iter().filter(|b| matches!(b, ContentBlock::Image(_))));
    out
}
