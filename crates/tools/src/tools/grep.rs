//! The `grep` tool: search file contents with ripgrep's engine (the `ignore`
//! walker honouring .gitignore/.ignore/.rgignore and including hidden files,
//! `grep-searcher`/`grep-regex` for matching), with pi's output format
//! (`path:line: text`, context as `path-line- text`), match limit, 50KB cap
//! and long-line cuts.

use std::path::PathBuf;
use std::sync::OnceLock;

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::listing::Notices;
use super::path::resolve_to_cwd;
use super::truncate::{DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, Limits, truncate_head, truncate_line};
use super::validate::coerce;
use super::{Tool, ToolContext, ToolOutput};

const DESCRIPTION: &str = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.";
const DEFAULT_LIMIT: f64 = 100.0;

/// The `grep` tool.
pub struct GrepTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
}

impl GrepTool {
    pub fn new() -> Self {
        GrepTool { parameters: OnceLock::new() }
    }
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

/// A search request, resolved.
struct Request {
    pattern: String,
    search_path: PathBuf,
    is_dir: bool,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    context: u64,
    limit: u64,
}

/// Collected output lines and pi's limit bookkeeping.
#[derive(Default)]
struct Collector {
    lines: Vec<String>,
    output_bytes: usize,
    output_line_count: usize,
    match_count: u64,
    match_limit_reached: bool,
    lines_truncated: bool,
    limit_hit: bool,
    trailing_context_end: u64,
    last_file: Option<String>,
    done: bool,
}

impl Collector {
    fn push_line(&mut self, file: &str, shown: &str, line_number: u64, bytes: &[u8], is_match: bool) {
        self.last_file = Some(file.to_string());
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
        self.lines_truncated |= cut;
        let line =
            if is_match { format!("{shown}:{line_number}: {text}") } else { format!("{shown}-{line_number}- {text}") };
        if self.output_bytes.saturating_sub(1) <= DEFAULT_MAX_BYTES {
            self.lines.push(line.clone());
        }
        self.output_bytes += line.len() + 1;
        self.output_line_count += 1;
    }

    /// One searcher event (pi's handling of rg's `match`/`context` events).
    fn event(&mut self, file: &str, shown: &str, line_number: u64, bytes: &[u8], is_match: bool, req: &Request) {
        if self.done {
            return;
        }
        if !self.limit_hit {
            self.push_line(file, shown, line_number, bytes, is_match);
            if is_match {
                self.match_count += 1;
                if self.match_count >= req.limit {
                    self.limit_hit = true;
                    self.trailing_context_end = line_number + req.context;
                }
            }
            return;
        }
        let in_window = self.last_file.as_deref() == Some(file) && line_number <= self.trailing_context_end;
        if in_window {
            self.push_line(file, shown, line_number, bytes, false);
        }
        if is_match {
            self.match_limit_reached = true;
        }
        if self.match_limit_reached && !(in_window && line_number < self.trailing_context_end) {
            self.done = true;
        }
    }
}

struct FileSink<'a> {
    collector: &'a mut Collector,
    req: &'a Request,
    file: String,
    shown: String,
    cancel: &'a CancellationToken,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let n = m.line_number().unwrap_or(0);
        self.collector.event(&self.file, &self.shown, n, m.bytes(), true, self.req);
        Ok(!self.collector.done && !self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let n = c.line_number().unwrap_or(0);
        self.collector.event(&self.file, &self.shown, n, c.bytes(), false, self.req);
        Ok(!self.collector.done && !self.cancel.is_cancelled())
    }
}

fn build_matcher(req: &Request) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .case_insensitive(req.ignore_case)
        .fixed_strings(req.literal)
        .multi_line(true)
        .line_terminator(Some(b'\n'))
        .build(&req.pattern)
        .map_err(|e| {
            let text = e.to_string();
            if text.contains("is not allowed in a regex") {
                format!(
                    "{text}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."
                )
            } else {
                text
            }
        })
}

/// Run the search synchronously (on a blocking thread).
fn search(req: &Request, cancel: &CancellationToken) -> Result<Collector, String> {
    let matcher = build_matcher(req)?;
    let mut collector = Collector::default();
    let builder = |binary: BinaryDetection| {
        SearcherBuilder::new()
            .line_number(true)
            .before_context(req.context as usize)
            .after_context(req.context as usize)
            .binary_detection(binary)
            .build()
    };
    if !req.is_dir {
        let shown = req.search_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file = req.search_path.display().to_string();
        let mut searcher = builder(BinaryDetection::convert(b'\0'));
        let sink = FileSink { collector: &mut collector, req, file, shown, cancel };
        let _ = searcher.search_path(&matcher, &req.search_path, sink);
        return Ok(collector);
    }
    let mut walk = WalkBuilder::new(&req.search_path);
    walk.hidden(false).add_custom_ignore_filename(".rgignore").sort_by_file_name(|a, b| a.cmp(b));
    if let Some(glob) = &req.glob {
        let mut ov = OverrideBuilder::new(&req.search_path);
        ov.add(glob).map_err(|e| e.to_string())?;
        walk.overrides(ov.build().map_err(|e| e.to_string())?);
    }
    let mut searcher = builder(BinaryDetection::quit(b'\0'));
    for entry in walk.build() {
        if collector.done || cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let rel = path.strip_prefix(&req.search_path).unwrap_or(path);
        let shown = rel.to_string_lossy().replace('\\', "/");
        let file = path.display().to_string();
        let sink = FileSink { collector: &mut collector, req, file, shown, cancel };
        let _ = searcher.search_path(&matcher, path, sink);
    }
    Ok(collector)
}

fn format_result(c: Collector, limit: u64) -> ToolOutput {
    if c.match_count == 0 {
        return ToolOutput::text("No matches found");
    }
    let mut t = truncate_head(&c.lines.join("\n"), Limits::bytes_only());
    t.total_lines = c.output_line_count;
    t.total_bytes = c.output_bytes.saturating_sub(1);
    let mut notices = Notices::default();
    if c.match_limit_reached {
        let notice = format!("{limit} matches limit reached. Use limit={} for more, or refine pattern", limit * 2);
        notices.add(notice, "matchLimitReached", json!(limit));
    }
    notices.add_truncation(&t);
    if c.lines_truncated {
        let notice = format!("Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines");
        notices.add(notice, "linesTruncated", Value::Bool(true));
    }
    notices.finish(t.content)
}

/// rg never matches a leading `./` in a glob; drop it (keeping a `!`).
fn clean_glob(glob: &str) -> String {
    let (neg, mut rest) = match glob.strip_prefix('!') {
        Some(r) => ("!", r),
        None => ("", glob),
    };
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    format!("{neg}{rest}")
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
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
        let text = |k: &str| args.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let flag = |k: &str| args.get(k).and_then(Value::as_bool).unwrap_or(false);
        let search_path = resolve_to_cwd(text("path").unwrap_or("."), &ctx.cwd);
        // An extension's operations (pi's `GrepOperations`) only say whether
        // the path is a directory; the search itself stays local, as in pi.
        let is_dir = match ctx.ops() {
            Some(ops) => match ops.is_directory(&search_path).await {
                Ok(d) => d,
                Err(_) => return ToolOutput::error(format!("Path not found: {}", search_path.display())),
            },
            None => match std::fs::metadata(&search_path) {
                Ok(m) => m.is_dir(),
                Err(_) => return ToolOutput::error(format!("Path not found: {}", search_path.display())),
            },
        };
        let context = args.get("context").and_then(Value::as_f64).filter(|c| *c > 0.0).map_or(0, |c| c.floor() as u64);
        let limit = args.get("limit").and_then(Value::as_f64).unwrap_or(DEFAULT_LIMIT).floor().max(1.0) as u64;
        let req = Request {
            pattern: args.get("pattern").and_then(Value::as_str).unwrap_or_default().to_string(),
            search_path,
            is_dir,
            glob: text("glob").map(clean_glob),
            ignore_case: flag("ignoreCase"),
            literal: flag("literal"),
            context,
            limit,
        };
        let cancel = ctx.cancel.clone();
        let result = tokio::task::spawn_blocking(move || search(&req, &cancel).map(|c| (c, req.limit))).await;
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Operation aborted");
        }
        match result {
            Ok(Ok((collector, limit))) => format_result(collector, limit),
            Ok(Err(message)) => ToolOutput::error(message),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
            "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
            "glob": {"type": "string", "description": "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
            "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
            "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
            "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
        }
    })
}

#[cfg(test)]
mod tests;
