//! The ACP shapes of what the core reports: tool calls (kind, title,
//! locations, raw input, diffs, terminals), content blocks, the replay of a
//! stored conversation, and prompts turned into the core's user message.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use pi_core::client::approval::title;
use pi_core::message::{AgentMessage, ContentBlock, ImageContent, UserContent};
use serde_json::Value;

/// The ACP kind of a tool (icons and grouping in the editor).
pub fn tool_kind(name: &str) -> acp::ToolKind {
    match name {
        "read" | "ls" | "read_mcp_resource" | "list_mcp_resources" | "list_mcp_resource_templates" => {
            acp::ToolKind::Read
        }
        "write" | "edit" => acp::ToolKind::Edit,
        "bash" | "codemode" => acp::ToolKind::Execute,
        "grep" | "find" | "tool_search" => acp::ToolKind::Search,
        _ => acp::ToolKind::Other,
    }
}

fn absolute(path: &str, cwd: &Path) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) }
}

/// The files a call touches (the editor can follow along).
pub fn locations(name: &str, args: &Value, cwd: &Path) -> Vec<acp::ToolCallLocation> {
    let Some(path) = args.get("path").and_then(Value::as_str) else { return Vec::new() };
    if !matches!(name, "read" | "write" | "edit" | "ls" | "grep" | "find") {
        return Vec::new();
    }
    let mut location = acp::ToolCallLocation::new(absolute(path, cwd));
    if name == "read"
        && let Some(line) = args.get("offset").and_then(Value::as_u64)
    {
        location = location.line(line as u32);
    }
    vec![location]
}

/// The `tool_call` announcing a call (pending: it may still wait for approval).
pub fn tool_call(id: &str, name: &str, args: &Value, cwd: &Path) -> acp::ToolCall {
    acp::ToolCall::new(id.to_string(), title(name, args))
        .kind(tool_kind(name))
        .status(acp::ToolCallStatus::Pending)
        .locations(locations(name, args, cwd))
        .raw_input(args.clone())
}

/// The same fields as an update (the `toolCall` of a permission request).
pub fn tool_call_fields(name: &str, args: &Value, cwd: &Path) -> acp::ToolCallUpdateFields {
    acp::ToolCallUpdateFields::new()
        .title(title(name, args))
        .kind(tool_kind(name))
        .status(acp::ToolCallStatus::Pending)
        .locations(locations(name, args, cwd))
        .raw_input(args.clone())
}

/// A content block of the core as ACP content (thinking and tool calls have their own updates).
pub fn content_block(block: &ContentBlock) -> Option<acp::ContentBlock> {
    match block {
        ContentBlock::Text(t) => Some(acp::ContentBlock::Text(acp::TextContent::new(t.text.clone()))),
        ContentBlock::Image(i) => {
            Some(acp::ContentBlock::Image(acp::ImageContent::new(i.data.clone(), i.mime_type.clone())))
        }
        ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
    }
}

/// The diffs of a successful `edit` or `write` (the edit as the editor shows it).
fn diffs(name: &str, args: &Value, cwd: &Path) -> Vec<acp::ToolCallContent> {
    let Some(path) = args.get("path").and_then(Value::as_str).map(|p| absolute(p, cwd)) else { return Vec::new() };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match name {
        "write" => {
            let content = text(args, "content").unwrap_or_default();
            vec![acp::ToolCallContent::Diff(acp::Diff::new(path, content))]
        }
        "edit" => {
            let edits: Vec<&Value> = match args.get("edits").and_then(Value::as_array) {
                Some(list) => list.iter().collect(),
                None => vec![args],
            };
            edits
                .into_iter()
                .filter_map(|e| {
                    let new = text(e, "newText")?;
                    Some(acp::ToolCallContent::Diff(acp::Diff::new(path.clone(), new).old_text(text(e, "oldText"))))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The final update of a call: status, content (diffs for edits, the
/// client terminal for `bash`), and the raw details.
pub fn tool_result(
    name: &str,
    args: &Value,
    content: &[ContentBlock],
    details: Option<&Value>,
    is_error: bool,
    cwd: &Path,
    terminal_id: Option<&str>,
) -> acp::ToolCallUpdateFields {
    let mut out: Vec<acp::ToolCallContent> = Vec::new();
    if !is_error {
        out.extend(diffs(name, args, cwd));
    }
    if let Some(id) = terminal_id {
        out.push(acp::ToolCallContent::Terminal(acp::Terminal::new(id.to_string())));
    }
    out.extend(content.iter().filter_map(content_block).map(|c| acp::ToolCallContent::Content(acp::Content::new(c))));
    let status = if is_error { acp::ToolCallStatus::Failed } else { acp::ToolCallStatus::Completed };
    let mut fields = acp::ToolCallUpdateFields::new().status(status).content(out);
    if let Some(details) = details.filter(|d| !d.is_null()) {
        fields = fields.raw_output(details.clone());
    }
    fields
}

fn chunk(block: acp::ContentBlock, message_id: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(block).message_id(message_id)
}

/// The stored conversation as updates, in order (`session/load`).
pub fn replay(messages: &[AgentMessage], cwd: &Path) -> Vec<acp::SessionUpdate> {
    let mut updates = Vec::new();
    let mut calls: std::collections::HashMap<String, (String, Value)> = Default::default();
    for (n, message) in messages.iter().enumerate() {
        let message_id = format!("m{n}");
        match message {
            AgentMessage::User(u) => {
                let blocks: Vec<ContentBlock> = match &u.content {
                    UserContent::Text(t) => vec![ContentBlock::text(t.clone())],
                    UserContent::Blocks(b) => b.clone(),
                };
                for block in blocks.iter().filter_map(content_block) {
                    updates.push(acp::SessionUpdate::UserMessageChunk(chunk(block, &message_id)));
                }
            }
            AgentMessage::Assistant(a) => {
                for block in &a.content {
                    match block {
                        ContentBlock::Thinking(t) if !t.thinking.is_empty() => {
                            let text = acp::ContentBlock::Text(acp::TextContent::new(t.thinking.clone()));
                            updates.push(acp::SessionUpdate::AgentThoughtChunk(chunk(text, &message_id)));
                        }
                        ContentBlock::ToolCall(call) => {
                            calls.insert(call.id.clone(), (call.name.clone(), call.arguments.clone()));
                            updates.push(acp::SessionUpdate::ToolCall(tool_call(
                                &call.id,
                                &call.name,
                                &call.arguments,
                                cwd,
                            )));
                        }
                        other => {
                            if let Some(block) = content_block(other) {
                                updates.push(acp::SessionUpdate::AgentMessageChunk(chunk(block, &message_id)));
                            }
                        }
                    }
                }
            }
            AgentMessage::ToolResult(r) => {
                let (name, args) = calls.remove(&r.tool_call_id).unwrap_or_else(|| (r.tool_name.clone(), Value::Null));
                let fields = tool_result(&name, &args, &r.content, r.details.as_ref(), r.is_error, cwd, None);
                updates
                    .push(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(r.tool_call_id.clone(), fields)));
            }
            _ => {}
        }
    }
    updates
}

/// A prompt as the core's user message: text (resource links as `@path`,
/// embedded resources as fenced blocks) and images.
pub fn prompt_message(prompt: &[acp::ContentBlock]) -> (String, Vec<ImageContent>) {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in prompt {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::Image(i) => {
                images.push(ImageContent { data: i.data.clone(), mime_type: i.mime_type.clone() })
            }
            acp::ContentBlock::ResourceLink(link) => parts.push(format!("@{}", file_path(&link.uri))),
            acp::ContentBlock::Resource(resource) => match &resource.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("<file path=\"{}\">\n{}\n</file>", file_path(&t.uri), t.text));
                }
                acp::EmbeddedResourceResource::BlobResourceContents(b) => {
                    parts.push(format!("@{}", file_path(&b.uri)));
                }
                _ => {}
            },
            _ => {}
        }
    }
    (parts.join("\n"), images)
}

/// `file:///a/b` → `/a/b` (other URIs stay as they are).
fn file_path(uri: &str) -> String {
    uri.strip_prefix("file://").unwrap_or(uri).to_string()
}
