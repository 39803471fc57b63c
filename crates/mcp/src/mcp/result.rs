//! MCP results as the model sees them (pi 1.6.0's mapping): text and images
//! kept, resource links named with the tool that reads them, binary resources
//! saved to temp files, and text over 20 KB cut in the middle with the full
//! text in a temp file. Scripts get the whole `CallToolResult` instead.

use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::message::{ContentBlock, ImageContent};
use crate::tools::ToolOutput;

/// Model-facing text beyond this is cut in the middle.
pub const OUTPUT_MAX_BYTES: usize = 20 * 1024;

/// Name of the tool that reads resources (named by resource links).
pub const READ_RESOURCE_TOOL: &str = "read_mcp_resource";

/// Write `data` to a new temp file `pi-mcp-<random><ext>`; its path.
pub fn save_temp(temp_dir: &Path, data: &[u8], ext: &str) -> std::io::Result<String> {
    std::fs::create_dir_all(temp_dir)?;
    let path = temp_dir.join(format!("pi-mcp-{}{ext}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, data)?;
    Ok(path.display().to_string())
}

fn is_text_mime(mime: Option<&str>) -> bool {
    let Some(mime) = mime else { return false };
    let t = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    t.starts_with("text/") || t == "application/json" || t.ends_with("+json") || t.ends_with("+xml")
}

fn extension_of(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let last = path.rsplit('/').next().unwrap_or(path);
    match last.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() && ext.len() <= 8 && ext.chars().all(|c| c.is_ascii_alphanumeric()) => {
            format!(".{ext}")
        }
        _ => ".bin".to_string(),
    }
}

pub fn size_text(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn image(data: &str, mime: &str) -> ContentBlock {
    ContentBlock::Image(ImageContent { data: data.to_string(), mime_type: mime.to_string() })
}

/// One MCP content block as model content.
fn block_content(server: &str, block: &Value, readable: bool, temp_dir: &Path) -> ContentBlock {
    let s = |k: &str| block.get(k).and_then(Value::as_str);
    match s("type").unwrap_or("") {
        "text" => ContentBlock::text(s("text").unwrap_or("")),
        "image" => image(s("data").unwrap_or(""), s("mimeType").unwrap_or("image/png")),
        "audio" => ContentBlock::text(format!("[audio {} omitted]", s("mimeType").unwrap_or("unknown type"))),
        "resource_link" => {
            let mut details = Vec::new();
            if let Some(m) = s("mimeType") {
                details.push(m.to_string());
            }
            if let Some(size) = block.get("size").and_then(Value::as_u64) {
                details.push(size_text(size as usize));
            }
            let title = s("title").or(s("name")).unwrap_or("");
            let details = if details.is_empty() { String::new() } else { format!(" ({})", details.join(", ")) };
            let description = s("description").map(|d| format!(": {d}")).unwrap_or_default();
            let read = if readable {
                format!(". Read it with {READ_RESOURCE_TOOL} (server \"{server}\")")
            } else {
                String::new()
            };
            ContentBlock::text(format!("[Resource {} \"{title}\"{details}{description}{read}]", s("uri").unwrap_or("")))
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            resource_content(&resource, temp_dir)
        }
        other => ContentBlock::text(format!("[unsupported MCP content {other}]")),
    }
}

/// A resource's contents (`{uri, mimeType?, text | blob}`) as model content.
pub fn resource_content(resource: &Value, temp_dir: &Path) -> ContentBlock {
    let s = |k: &str| resource.get(k).and_then(Value::as_str);
    let uri = s("uri").unwrap_or("");
    let mime = s("mimeType");
    if let Some(text) = s("text") {
        return ContentBlock::text(text);
    }
    let blob = s("blob").unwrap_or("");
    if mime.is_some_and(|m| m.starts_with("image/")) {
        return image(blob, mime.unwrap_or("image/png"));
    }
    let data = base64::engine::general_purpose::STANDARD.decode(blob).unwrap_or_default();
    if is_text_mime(mime) {
        return ContentBlock::text(String::from_utf8_lossy(&data).into_owned());
    }
    let kind = format!("{}, {}", mime.unwrap_or("unknown type"), size_text(data.len()));
    match save_temp(temp_dir, &data, &extension_of(uri)) {
        Ok(path) => ContentBlock::text(format!("[Binary resource {uri} ({kind}) saved to {path}]")),
        Err(e) => ContentBlock::text(format!("[Binary resource {uri} ({kind}) could not be saved: {e}]")),
    }
}

/// Keep the start and end of `text` (half of `max` bytes each) around a
/// `…N chars truncated…` marker; None when it fits.
pub fn truncate_middle(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut head = max / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (max - max / 2);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let removed = text[head..tail].chars().count();
    Some(format!("{}…{removed} chars truncated…{}", &text[..head], &text[tail..]))
}

/// Apply the 20 KB limit to model content: over it, one text block (the
/// truncated text, a header and the full-output path) followed by the images.
pub fn limit_content(content: Vec<ContentBlock>, temp_dir: &Path) -> (Vec<ContentBlock>, Option<String>) {
    let combined: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let combined = combined.join("\n");
    let Some(cut) = truncate_middle(&combined, OUTPUT_MAX_BYTES) else { return (content, None) };
    let (path, where_) = match save_temp(temp_dir, combined.as_bytes(), ".txt") {
        Ok(p) => (Some(p.clone()), format!("\n\n[Full output: {p} (read it with offset/limit)]")),
        Err(e) => (None, format!("\n\n[Could not save the full output: {e}]")),
    };
    let lines = combined.split('\n').count() - usize::from(combined.ends_with('\n'));
    let tokens = combined.len().div_ceil(4);
    let text = format!(
        "Warning: truncated output (original token count: {tokens})\nTotal output lines: {lines}\n\n{cut}{where_}"
    );
    let mut out = vec![ContentBlock::text(text)];
    out.extend(content.into_iter().filter(|b| matches!(b, ContentBlock::Image(_))));
    (out, path)
}

/// A `CallToolResult` (JSON) of `server`'s `tool` as a tool output; the
/// result without `_meta` is the output's structured content.
pub fn call_result_output(server: &str, tool: &str, result: &Value, readable: bool, temp_dir: &Path) -> ToolOutput {
    let blocks = result.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut content: Vec<ContentBlock> = blocks.iter().map(|b| block_content(server, b, readable, temp_dir)).collect();
    if content.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        content.push(ContentBlock::text(serde_json::to_string_pretty(structured).unwrap_or_default()));
    }
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let has_text = content.iter().any(|b| matches!(b, ContentBlock::Text(t) if !t.text.is_empty()));
    if is_error && !has_text {
        content.push(ContentBlock::text(format!("MCP tool {server}/{tool} returned an error")));
    }
    let (content, full_path) = limit_content(content, temp_dir);
    let mut details = json!({"server": server, "tool": tool});
    if let Some(p) = full_path {
        details["fullOutputPath"] = json!(p);
    }
    let mut script_result = result.clone();
    if let Some(obj) = script_result.as_object_mut() {
        obj.remove("_meta");
    }
    ToolOutput {
        content,
        details: Some(details),
        is_error,
        result_is_error: is_error,
        usage: None,
        structured_content: Some(script_result),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_images_links_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let result = json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "demo://x/1", "name": "one", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "demo://b/2.gz", "mimeType": "application/gzip", "blob": "AAEC"}}
        ], "_meta": {"k": 1}});
        let out = call_result_output("srv", "t", &result, true, dir.path());
        assert!(!out.is_error);
        assert_eq!(out.content[0], ContentBlock::text("a"));
        assert!(matches!(&out.content[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
        let ContentBlock::Text(link) = &out.content[2] else { panic!() };
        assert_eq!(
            link.text,
            "[Resource demo://x/1 \"one\" (text/plain). Read it with read_mcp_resource (server \"srv\")]"
        );
        let ContentBlock::Text(bin) = &out.content[3] else { panic!() };
        assert!(
            bin.text.starts_with("[Binary resource demo://b/2.gz (application/gzip, 3B) saved to "),
            "{}",
            bin.text
        );
        assert!(bin.text.ends_with(".gz]"));
        assert_eq!(out.details, Some(json!({"server": "srv", "tool": "t"})));
        assert!(out.structured_content.unwrap().get("_meta").is_none());

        let err = call_result_output("srv", "t", &json!({"content": [], "isError": true}), false, dir.path());
        assert!(err.is_error && err.result_is_error);
        assert_eq!(err.content, vec![ContentBlock::text("MCP tool srv/t returned an error")]);
        let structured =
            call_result_output("s", "t", &json!({"content": [], "structuredContent": {"a": 1}}), false, dir.path());
        assert_eq!(structured.content, vec![ContentBlock::text("{\n  \"a\": 1\n}")]);
    }

    #[test]
    fn long_text_is_cut_in_the_middle_and_saved() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("{}é{}", "a".repeat(15000), "b".repeat(15000));
        let out =
            call_result_output("s", "t", &json!({"content": [{"type": "text", "text": long}]}), false, dir.path());
        let ContentBlock::Text(t) = &out.content[0] else { panic!() };
        assert!(
            t.text.starts_with("Warning: truncated output (original token count: 7501)\nTotal output lines: 1\n\naaa")
        );
        assert!(t.text.contains("chars truncated…bbb"));
        let path = out.details.as_ref().unwrap()["fullOutputPath"].as_str().unwrap().to_string();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), long);
        assert!(t.text.ends_with(&format!("[Full output: {path} (read it with offset/limit)]")));
        assert!(t.text.len() < OUTPUT_MAX_BYTES + 300);
        assert_eq!(truncate_middle("short", 10), None);
    }
}
