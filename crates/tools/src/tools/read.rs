//! The `read` tool: a text file's lines (offset/limit, head truncation at 2000
//! lines or 50KB with pi's continuation notices), or an image as an image block.
//!
//! Text is streamed: only the lines that can be shown are kept in memory, the
//! rest are counted, so a huge file or a huge line costs no more than the limits.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::OnceLock;
use tokio::io::AsyncReadExt;

use super::image::{Limits as ImageLimits, detect_image_mime, process_image};
use super::operations::Ops;
use super::path::{node_fs_error, resolve_read_path};
use super::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, Truncation, format_size, truncate_head};
use super::validate::{coerce, js_number_string};
use super::{Tool, ToolContext, ToolOutput};
use crate::message::{ContentBlock, ImageContent};

const DESCRIPTION: &str = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.";

/// Bytes read at the start of a file to recognise an image.
const SNIFF_BYTES: usize = 4100;
const CHUNK: usize = 64 * 1024;

/// The `read` tool.
pub struct ReadTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
}

impl ReadTool {
    pub fn new() -> Self {
        ReadTool { parameters: OnceLock::new() }
    }
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

/// Lines selected from a file, with the counts pi reports.
#[derive(Debug)]
struct Selection {
    /// Lines of the file (`\n` count + 1).
    total_file_lines: usize,
    truncation: Truncation,
    /// Byte size of the first selected line (for the over-long first line notice).
    first_line_bytes: usize,
}

/// Streams a file's bytes and keeps the selected lines pi can show.
struct LineSelector {
    start: usize,
    end: Option<usize>,
    line: usize,
    stored: Vec<String>,
    stored_bytes: usize,
    stored_past_caps: bool,
    selected_lines: usize,
    selected_bytes: usize,
    first_line_bytes: usize,
    last_line_empty: bool,
    /// The selected line being read, while it is stored.
    current: Option<Vec<u8>>,
    current_bytes: usize,
}

impl LineSelector {
    fn new(start: usize, limit: Option<usize>) -> Self {
        LineSelector {
            start,
            end: limit.map(|l| start.saturating_add(l)),
            line: 0,
            stored: Vec::new(),
            stored_bytes: 0,
            stored_past_caps: false,
            selected_lines: 0,
            selected_bytes: 0,
            first_line_bytes: 0,
            last_line_empty: true,
            current: Some(Vec::new()),
            current_bytes: 0,
        }
    }

    fn selected(&self) -> bool {
        self.line >= self.start && self.end.is_none_or(|e| self.line < e)
    }

    fn append(&mut self, piece: &[u8]) {
        if let Some(cur) = self.current.as_mut() {
            // A line over the byte cap is never shown: store only enough to know that.
            if self.current_bytes <= DEFAULT_MAX_BYTES {
                cur.extend_from_slice(piece);
            }
        }
        self.current_bytes += piece.len();
    }

    fn finish_line(&mut self) {
        if let Some(cur) = self.current.take() {
            if self.selected_lines == 0 {
                self.first_line_bytes = self.current_bytes;
            }
            if self.stored.len() > DEFAULT_MAX_LINES || self.stored_bytes > DEFAULT_MAX_BYTES {
                self.stored_past_caps = true;
            }
            let text = String::from_utf8_lossy(&cur).into_owned();
            self.stored_bytes += text.len() + usize::from(!self.stored.is_empty());
            self.stored.push(text);
        }
        self.selected_bytes += self.current_bytes + usize::from(self.selected_lines > 0);
        self.last_line_empty = self.current_bytes == 0;
        self.selected_lines += 1;
        self.current = if self.stored_past_caps { None } else { Some(Vec::new()) };
        self.current_bytes = 0;
    }

    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let newline = data.iter().position(|b| *b == b'\n');
            let end = newline.unwrap_or(data.len());
            if self.selected() && end > 0 {
                self.append(&data[..end]);
            }
            let Some(nl) = newline else { break };
            if self.selected() {
                self.finish_line();
            }
            self.line += 1;
            data = &data[nl + 1..];
        }
    }

    fn finish(mut self) -> Selection {
        if self.selected() {
            self.finish_line();
        }
        let mut truncation = truncate_head(&self.stored.join("\n"), Limits::default());
        truncation.total_lines =
            if self.selected_bytes == 0 { 0 } else { self.selected_lines - usize::from(self.last_line_empty) };
        truncation.total_bytes = self.selected_bytes;
        Selection { total_file_lines: self.line + 1, truncation, first_line_bytes: self.first_line_bytes }
    }
}

/// Select lines JavaScript-`slice` style for a negative limit (pi's whole-file path).
fn select_with_negative_limit(text: &str, start: usize, limit: i64) -> Selection {
    let lines: Vec<&str> = text.split('\n').collect();
    let len = lines.len() as i64;
    let end = (start as i64 + limit).min(len);
    let end = if end < 0 { (len + end).max(0) } else { end } as usize;
    let slice = if start < end { &lines[start..end] } else { &[][..] };
    let truncation = truncate_head(&slice.join("\n"), Limits::default());
    let first_line_bytes = if truncation.first_line_exceeds_limit { slice.first().map_or(0, |l| l.len()) } else { 0 };
    Selection { total_file_lines: lines.len(), truncation, first_line_bytes }
}

enum ReadError {
    Aborted,
    Message(String),
}

async fn read_text(
    file: &mut tokio::fs::File,
    head: &[u8],
    start: usize,
    limit: Option<f64>,
    ctx: &ToolContext,
) -> Result<Selection, ReadError> {
    if let Some(l) = limit.filter(|l| *l < 0.0) {
        let mut all = head.to_vec();
        file.read_to_end(&mut all).await.map_err(|e| ReadError::Message(node_fs_error(&e, "read", None)))?;
        return Ok(select_with_negative_limit(&String::from_utf8_lossy(&all), start, l as i64));
    }
    let mut selector = LineSelector::new(start, limit.map(|l| l as usize));
    selector.feed(head);
    let mut buf = vec![0u8; CHUNK];
    loop {
        if ctx.cancel.is_cancelled() {
            return Err(ReadError::Aborted);
        }
        let n = file.read(&mut buf).await.map_err(|e| ReadError::Message(node_fs_error(&e, "read", None)))?;
        if n == 0 {
            break;
        }
        selector.feed(&buf[..n]);
    }
    Ok(selector.finish())
}

/// The text shown for a selection (pi's notices), and whether details carry the truncation.
fn format_selection(sel: &Selection, path: &str, start: usize, limit: Option<f64>) -> (String, Option<Value>) {
    let t = &sel.truncation;
    let start_display = start + 1;
    if t.first_line_exceeds_limit {
        let text = format!(
            "[Line {start_display} is {}, exceeds {} limit. Use bash: sed -n '{start_display}p' {path} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(sel.first_line_bytes),
            format_size(DEFAULT_MAX_BYTES)
        );
        return (text, Some(json!({ "truncation": t.to_value() })));
    }
    if t.truncated {
        let end_display = start_display + t.output_lines - 1;
        let next = end_display + 1;
        let total = sel.total_file_lines;
        let notice = if t.truncated_by == Some(super::truncate::TruncatedBy::Lines) {
            format!("[Showing lines {start_display}-{end_display} of {total}. Use offset={next} to continue.]")
        } else {
            format!(
                "[Showing lines {start_display}-{end_display} of {total} ({} limit). Use offset={next} to continue.]",
                format_size(DEFAULT_MAX_BYTES)
            )
        };
        return (format!("{}\n\n{notice}", t.content), Some(json!({ "truncation": t.to_value() })));
    }
    if let Some(limit) = limit {
        let total = sel.total_file_lines as i64;
        let start = start as i64;
        let user_limited = (start + limit as i64).min(total) - start;
        if start + user_limited < total {
            let remaining = total - (start + user_limited);
            let next = start + user_limited + 1;
            return (
                format!("{}\n\n[{remaining} more lines in file. Use offset={next} to continue.]", t.content),
                None,
            );
        }
    }
    (t.content.clone(), None)
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> &Value {
        self.parameters.get_or_init(schema)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Operation aborted");
        }
        let args = coerce(self.parameters(), args);
        let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
        let offset = args.get("offset").and_then(Value::as_f64);
        let limit = args.get("limit").and_then(Value::as_f64).map(f64::floor);
        let absolute = resolve_read_path(path, &ctx.cwd);
        if let Some(ops) = ctx.ops() {
            return read_through(&ops, path, &absolute, offset, limit, ctx.image_resize).await;
        }

        if let Some(client) = ctx.client_reads()
            && !is_image_file(&absolute).await
        {
            // The editor's text of the file, unsaved changes included.
            let text = match client.read_text_file(absolute.clone(), &ctx.cancel).await {
                Ok(text) => text,
                Err(crate::client::ClientFailure::Cancelled) => return ToolOutput::error("Operation aborted"),
                Err(e) => return ToolOutput::error(format!("Could not read {path} through the client: {e}")),
            };
            let start = start_line(offset);
            let selection = select_text(&text, start, limit);
            return text_result(&selection, path, offset, start, limit);
        }
        let mut file = match tokio::fs::File::open(&absolute).await {
            Ok(f) => f,
            Err(e) => return ToolOutput::error(node_fs_error(&e, "access", Some(&absolute))),
        };
        let mut head = Vec::with_capacity(SNIFF_BYTES);
        let mut buf = vec![0u8; SNIFF_BYTES];
        while head.len() < SNIFF_BYTES {
            match file.read(&mut buf[..SNIFF_BYTES - head.len()]).await {
                Ok(0) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
                Err(e) => return ToolOutput::error(node_fs_error(&e, "read", None)),
            }
        }

        if let Some(mime) = detect_image_mime(&head) {
            let mut bytes = head;
            if let Err(e) = file.read_to_end(&mut bytes).await {
                return ToolOutput::error(node_fs_error(&e, "read", None));
            }
            if ctx.cancel.is_cancelled() {
                return ToolOutput::error("Operation aborted");
            }
            return image_output(bytes, mime.to_string(), ctx.image_resize).await;
        }

        let start = start_line(offset);
        let selection = match read_text(&mut file, &head, start, limit, &ctx).await {
            Ok(s) => s,
            Err(ReadError::Aborted) => return ToolOutput::error("Operation aborted"),
            Err(ReadError::Message(m)) => return ToolOutput::error(m),
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Operation aborted");
        }
        text_result(&selection, path, offset, start, limit)
    }
}

/// The result of reading an image: resized (when `resize`) and re-encoded as pi does, with its note.
async fn image_output(bytes: Vec<u8>, mime: String, limits: Option<ImageLimits>) -> ToolOutput {
    let kind = mime.clone();
    let processed = tokio::task::spawn_blocking(move || process_image(&bytes, &kind, limits.as_ref())).await;
    match processed {
        Ok(Ok(img)) => {
            let mut note = format!("Read image file [{}]", img.mime_type);
            for hint in &img.hints {
                note.push('\n');
                note.push_str(hint);
            }
            let structured = json!({"type": "image", "data": img.data, "mimeType": img.mime_type, "note": note});
            ToolOutput {
                content: vec![
                    ContentBlock::text(note),
                    ContentBlock::Image(ImageContent { data: img.data, mime_type: img.mime_type }),
                ],
                ..Default::default()
            }
            .with_structured_content(structured)
        }
        Ok(Err(message)) => {
            let text = format!("Read image file [{mime}]\n{message}");
            ToolOutput::text(text.clone()).with_structured_content(Value::String(text))
        }
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// `read` through an extension's operations (pi's `ReadOperations`):
/// `access`, the image check when the extension detects images, then the
/// whole file, shown as a local read shows it.
async fn read_through(
    ops: &Ops<'_>,
    path: &str,
    absolute: &std::path::Path,
    offset: Option<f64>,
    limit: Option<f64>,
    resize: Option<ImageLimits>,
) -> ToolOutput {
    if let Err(e) = ops.access(absolute).await {
        return ToolOutput::error(e.message());
    }
    let mime = match ops.image_mime_type(absolute).await {
        Ok(m) => m,
        Err(e) => return ToolOutput::error(e.message()),
    };
    let bytes = match ops.read_file(absolute).await {
        Ok(b) => b,
        Err(e) => return ToolOutput::error(e.message()),
    };
    if ops.cancel.is_cancelled() {
        return ToolOutput::error("Operation aborted");
    }
    if let Some(mime) = mime {
        return image_output(bytes, mime, resize).await;
    }
    let text = String::from_utf8_lossy(&bytes);
    let start = start_line(offset);
    let selection = select_text(&text, start, limit);
    text_result(&selection, path, offset, start, limit)
}

/// The lines of a whole text that `offset`/`limit` select.
fn select_text(text: &str, start: usize, limit: Option<f64>) -> Selection {
    match limit.filter(|l| *l < 0.0) {
        Some(l) => select_with_negative_limit(text, start, l as i64),
        None => {
            let mut selector = LineSelector::new(start, limit.map(|l| l as usize));
            selector.feed(text.as_bytes());
            selector.finish()
        }
    }
}

/// The 0-based first line of an `offset` (1-based; 0 and NaN mean the start).
fn start_line(offset: Option<f64>) -> usize {
    match offset {
        Some(o) if o != 0.0 && !o.is_nan() => (o - 1.0).max(0.0).floor() as usize,
        _ => 0,
    }
}

/// The result of reading text lines: the selection with pi's notices.
fn text_result(selection: &Selection, path: &str, offset: Option<f64>, start: usize, limit: Option<f64>) -> ToolOutput {
    if start >= selection.total_file_lines {
        let shown = offset.map(js_number_string).unwrap_or_else(|| "undefined".into());
        return ToolOutput::error(format!(
            "Offset {shown} is beyond end of file ({} lines total)",
            selection.total_file_lines
        ));
    }
    let (text, details) = format_selection(selection, path, start, limit);
    let mut out = ToolOutput::text(text.clone()).with_structured_content(Value::String(text));
    out.details = details;
    out
}

/// Whether a local file at `path` holds an image (read from disk even when the client reads text).
async fn is_image_file(path: &std::path::Path) -> bool {
    let Ok(mut file) = tokio::fs::File::open(path).await else { return false };
    let mut head = vec![0u8; SNIFF_BYTES];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    detect_image_mime(&head[..filled]).is_some()
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["path"],
        "properties": {
            "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
            "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
            "limit": {"type": "number", "description": "Maximum number of lines to read"}
        }
    })
}

#[cfg(test)]
mod tests;
