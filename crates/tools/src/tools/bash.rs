//! The `bash` tool (streamed partial output, timeout, abort, tail truncation
//! with the full log in a temp file) and [`run_command`], the executor of the
//! RPC `bash` command; both run through [`super::shell::exec`].

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::shell::{
    ExecError, ExecSink, ShellSettings, Utf8Stream, create_output_file, exec_with, resolve_timeout,
    sanitize_binary_output, split_incomplete_ansi_suffix, strip_ansi, write_quietly,
};
use super::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, TruncatedBy, Truncation, format_size, truncate_tail,
};
use super::validate::{coerce, js_number_string, number_value};
use super::{Tool, ToolContext, ToolOutput, ToolUpdate};
use crate::message::ContentBlock;
use crate::op::BashResult;

const DESCRIPTION: &str = "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.";
/// Prefix of full-output temp files.
pub const TEMP_FILE_PREFIX: &str = "pi-bash";
/// Minimum time between two partial results.
const UPDATE_THROTTLE: Duration = Duration::from_millis(100);
/// Size limit of `structuredContent.output`.
const STRUCTURED_OUTPUT_MAX_BYTES: u64 = 1024 * 1024;

/// A display snapshot of accumulated output.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub content: String,
    pub truncation: Truncation,
    pub full_output_path: Option<PathBuf>,
}

/// Streaming output of a command with bounded memory: a decoded tail for
/// display, line/byte totals, and a temp file with the raw output once it
/// exceeds the limits.
pub struct OutputAccumulator {
    max_lines: usize,
    max_bytes: usize,
    max_rolling_bytes: usize,
    temp_dir: PathBuf,
    decoder: Utf8Stream,
    raw_chunks: Vec<Vec<u8>>,
    tail_text: String,
    tail_starts_at_line_boundary: bool,
    total_raw_bytes: usize,
    total_decoded_bytes: usize,
    completed_lines: usize,
    total_lines: usize,
    current_line_bytes: usize,
    has_open_line: bool,
    finished: bool,
    temp_path: Option<PathBuf>,
    temp_file: Option<std::fs::File>,
    /// Prefix of its full-output temp file.
    temp_prefix: &'static str,
}

impl OutputAccumulator {
    pub fn new(temp_dir: &Path) -> Self {
        Self::with_temp_prefix(temp_dir, TEMP_FILE_PREFIX)
    }

    /// An accumulator whose full-output file is `<temp_dir>/<prefix>-….log`.
    pub fn with_temp_prefix(temp_dir: &Path, temp_prefix: &'static str) -> Self {
        OutputAccumulator {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
            max_rolling_bytes: DEFAULT_MAX_BYTES * 2,
            temp_dir: temp_dir.to_path_buf(),
            decoder: Utf8Stream::default(),
            raw_chunks: Vec::new(),
            tail_text: String::new(),
            tail_starts_at_line_boundary: true,
            total_raw_bytes: 0,
            total_decoded_bytes: 0,
            completed_lines: 0,
            total_lines: 0,
            current_line_bytes: 0,
            has_open_line: false,
            finished: false,
            temp_path: None,
            temp_file: None,
            temp_prefix,
        }
    }

    pub fn append(&mut self, data: &[u8]) {
        if self.finished {
            return;
        }
        self.total_raw_bytes += data.len();
        let text = self.decoder.decode(data);
        self.append_decoded(&text);
        if self.temp_file.is_some() || self.should_use_temp_file() {
            self.ensure_temp_file();
            write_quietly(&mut self.temp_file, data);
        } else if !data.is_empty() {
            self.raw_chunks.push(data.to_vec());
        }
    }

    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let rest = self.decoder.finish();
        self.append_decoded(&rest);
        if self.should_use_temp_file() {
            self.ensure_temp_file();
        }
    }

    /// Bytes of the last (unterminated) line.
    pub fn last_line_bytes(&self) -> usize {
        self.current_line_bytes
    }

    pub fn snapshot(&mut self, persist_if_truncated: bool) -> Snapshot {
        let text = self.snapshot_text();
        let text = if text.is_empty() { self.tail_text.as_str() } else { text };
        let mut t = truncate_tail(text, Limits { max_lines: self.max_lines, max_bytes: self.max_bytes });
        let truncated = self.total_lines > self.max_lines || self.total_decoded_bytes > self.max_bytes;
        t.truncated_by = if !truncated {
            None
        } else if t.truncated_by.is_some() {
            t.truncated_by
        } else if self.total_decoded_bytes > self.max_bytes {
            Some(TruncatedBy::Bytes)
        } else {
            Some(TruncatedBy::Lines)
        };
        t.truncated = truncated;
        t.total_lines = self.total_lines;
        t.total_bytes = self.total_decoded_bytes;
        if persist_if_truncated && truncated {
            self.ensure_temp_file();
        }
        Snapshot { content: t.content.clone(), truncation: t, full_output_path: self.temp_path.clone() }
    }

    /// Flush and close the temp file.
    pub fn close_temp_file(&mut self) {
        if let Some(mut f) = self.temp_file.take() {
            use std::io::Write;
            let _ = f.flush();
        }
    }

    /// The complete output (after [`Self::finish`]); longer than `max` bytes
    /// keeps its first and last halves around an omission marker. The flag
    /// tells whether it was cut.
    pub fn read_full_output(&self, max: u64) -> (String, bool) {
        let Some(path) = &self.temp_path else {
            return (String::from_utf8_lossy(&self.raw_chunks.concat()).into_owned(), false);
        };
        let Ok(bytes) = std::fs::read(path) else { return (String::new(), false) };
        let size = bytes.len() as u64;
        if size <= max {
            return (String::from_utf8_lossy(&bytes).into_owned(), false);
        }
        let head_len = (max / 2) as usize;
        let tail_len = (max as usize) - head_len;
        let head = Utf8Stream::default().decode(&bytes[..head_len]);
        let tail = &bytes[bytes.len() - tail_len..];
        let skip = tail.iter().take_while(|b| (**b & 0xc0) == 0x80).count();
        let tail = String::from_utf8_lossy(&tail[skip..]);
        let omitted = size as usize - head_len - tail_len;
        (format!("{head}\n\n[... {omitted} bytes omitted ...]\n\n{tail}"), true)
    }

    fn append_decoded(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total_decoded_bytes += text.len();
        self.tail_text.push_str(text);
        if self.tail_text.len() > self.max_rolling_bytes * 2 {
            self.trim_tail();
        }
        match text.rfind('\n') {
            None => {
                self.current_line_bytes += text.len();
                self.has_open_line = true;
            }
            Some(last) => {
                self.completed_lines += text.bytes().filter(|b| *b == b'\n').count();
                self.current_line_bytes = text.len() - last - 1;
                self.has_open_line = last + 1 < text.len();
            }
        }
        self.total_lines = self.completed_lines + usize::from(self.has_open_line);
    }

    fn trim_tail(&mut self) {
        let len = self.tail_text.len();
        if len <= self.max_rolling_bytes {
            return;
        }
        let mut start = len - self.max_rolling_bytes;
        while !self.tail_text.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line_boundary = self.tail_text.as_bytes()[start - 1] == b'\n';
        }
        self.tail_text = self.tail_text[start..].to_string();
    }

    fn snapshot_text(&self) -> &str {
        if self.tail_starts_at_line_boundary {
            return &self.tail_text;
        }
        match self.tail_text.find('\n') {
            Some(i) => &self.tail_text[i + 1..],
            None => &self.tail_text,
        }
    }

    fn should_use_temp_file(&self) -> bool {
        self.total_raw_bytes > self.max_bytes
            || self.total_decoded_bytes > self.max_bytes
            || self.total_lines > self.max_lines
    }

    fn ensure_temp_file(&mut self) {
        if self.temp_path.is_some() {
            return;
        }
        if let Ok((path, file)) = create_output_file(&self.temp_dir, self.temp_prefix) {
            self.temp_path = Some(path);
            self.temp_file = Some(file);
            for chunk in std::mem::take(&mut self.raw_chunks) {
                write_quietly(&mut self.temp_file, &chunk);
            }
        }
    }
}

fn path_text(p: &Option<PathBuf>) -> String {
    p.as_ref().map_or_else(|| "undefined".to_string(), |p| p.display().to_string())
}

/// Details of a truncated output: `{truncation, fullOutputPath}`.
fn truncation_details(s: &Snapshot) -> Value {
    let mut d = Map::new();
    d.insert("truncation".into(), s.truncation.to_value());
    if let Some(p) = &s.full_output_path {
        d.insert("fullOutputPath".into(), Value::String(p.display().to_string()));
    }
    Value::Object(d)
}

/// The text of a finished run with pi's truncation notice, and the details.
pub(crate) fn format_output(s: &Snapshot, acc: &OutputAccumulator, empty: &str) -> (String, Option<Value>) {
    let t = &s.truncation;
    let mut text = if s.content.is_empty() { empty.to_string() } else { s.content.clone() };
    if !t.truncated {
        return (text, None);
    }
    let start = (t.total_lines + 1).saturating_sub(t.output_lines);
    let end = t.total_lines;
    let full = path_text(&s.full_output_path);
    if t.last_line_partial {
        let line = format_size(acc.last_line_bytes());
        text.push_str(&format!(
            "\n\n[Showing last {} of line {end} (line is {line}). Full output: {full}]",
            format_size(t.output_bytes)
        ));
    } else if t.truncated_by == Some(TruncatedBy::Lines) {
        text.push_str(&format!("\n\n[Showing lines {start}-{end} of {}. Full output: {full}]", t.total_lines));
    } else {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {} ({} limit). Full output: {full}]",
            t.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        ));
    }
    (text, Some(truncation_details(s)))
}

pub(crate) fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() { status.to_string() } else { format!("{text}\n\n{status}") }
}

/// The tool's sink: accumulates output and sends throttled partial results.
struct ToolSink<'a> {
    acc: OutputAccumulator,
    ctx: &'a ToolContext,
    dirty: bool,
    last_update: Option<Instant>,
    timer: Option<Instant>,
}

impl ToolSink<'_> {
    fn emit(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let snap = self.acc.snapshot(true);
        let mut details = Map::new();
        if snap.truncation.truncated {
            details.insert("truncation".into(), snap.truncation.to_value());
        }
        if let Some(p) = &snap.full_output_path {
            details.insert("fullOutputPath".into(), Value::String(p.display().to_string()));
        }
        self.ctx.update(ToolUpdate {
            content: vec![ContentBlock::text(snap.content)],
            details: Some(Value::Object(details)),
        });
    }
}

impl ExecSink for ToolSink<'_> {
    fn data(&mut self, chunk: &[u8]) {
        self.acc.append(chunk);
        self.dirty = true;
        let now = Instant::now();
        match self.last_update {
            Some(last) if now < last + UPDATE_THROTTLE => {
                self.timer.get_or_insert(last + UPDATE_THROTTLE);
            }
            _ => {
                self.timer = None;
                self.emit();
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.timer
    }

    fn tick(&mut self) {
        self.timer = None;
        self.emit();
    }
}

/// What tells one shell tool from another (pi's `ShellToolConfig`): its
/// name, description, temp-file prefix and the local shell it runs.
pub struct ShellFlavor {
    pub name: &'static str,
    pub description: &'static str,
    pub temp_prefix: &'static str,
    /// Without an extension's operations: the shell to run the command
    /// with (given the session's shell settings), or the failure pi gives
    /// (no such shell here).
    pub local_shell: fn(&ShellSettings) -> Result<PathBuf, String>,
    /// Whether the session's `shellPath` and `shellCommandPrefix` apply (pi's `bash` only).
    pub honours_shell_settings: bool,
    /// Runs in the client's terminal when the client offers one.
    pub client_terminal: bool,
}

/// The `bash` tool's flavor.
pub const BASH: ShellFlavor = ShellFlavor {
    name: "bash",
    description: DESCRIPTION,
    temp_prefix: TEMP_FILE_PREFIX,
    local_shell: ShellSettings::program,
    honours_shell_settings: true,
    client_terminal: true,
};

/// The `bash` tool, and the shell tools made on it ([`ShellFlavor`]).
pub struct BashTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
    flavor: &'static ShellFlavor,
}

impl BashTool {
    pub fn new() -> Self {
        Self::flavored(&BASH)
    }

    /// A shell tool of `flavor`, run as `bash` runs.
    pub fn flavored(flavor: &'static ShellFlavor) -> Self {
        BashTool { parameters: OnceLock::new(), flavor }
    }
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        self.flavor.name
    }

    fn description(&self) -> &str {
        self.flavor.description
    }

    fn parameters(&self) -> &Value {
        self.parameters.get_or_init(schema)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let args = coerce(self.parameters(), args);
        let unset = ShellSettings::default();
        let settings = if self.flavor.honours_shell_settings { &ctx.shell } else { &unset };
        let command = settings.prefixed(args.get("command").and_then(Value::as_str).unwrap_or_default());
        let timeout = args.get("timeout").and_then(Value::as_f64);
        if let Some(client) = ctx.client.clone().filter(|c| c.capabilities.terminal && self.flavor.client_terminal) {
            return crate::client::terminal::run_in_client_terminal(&client, &command, timeout, &ctx).await;
        }
        ctx.update(ToolUpdate { content: Vec::new(), details: None });
        let started = Instant::now();
        let mut sink = ToolSink {
            acc: OutputAccumulator::with_temp_prefix(&ctx.temp_dir, self.flavor.temp_prefix),
            ctx: &ctx,
            dirty: false,
            last_update: None,
            timer: None,
        };
        // pi resolves the local shell before anything else (PowerShell's absence first).
        let local_shell = ctx.operations.is_none().then(|| (self.flavor.local_shell)(settings)).transpose();
        let result = match (local_shell, resolve_timeout(timeout), ctx.operations.clone()) {
            (Err(message), _, _) | (_, Err(message), _) => Err(ExecError::Failed(message)),
            (Ok(_), Ok(_), Some(ops)) => exec_through(ops.as_ref(), &command, &ctx, timeout, &mut sink).await,
            (Ok(shell), Ok(limit), None) => {
                let shell = shell.unwrap_or_else(super::shell::shell_program);
                exec_with(&shell, &command, &ctx.cwd, &ctx.env, &ctx.cancel, limit, &mut sink).await.map(Some)
            }
        };
        sink.acc.finish();
        sink.timer = None;
        sink.emit();
        let snap = sink.acc.snapshot(true);
        sink.acc.close_temp_file();
        let exit_code = match result {
            Ok(Some(code)) => code,
            Ok(None) => {
                let (text, _) = format_output(&snap, &sink.acc, "(no output)");
                return ToolOutput::error(append_status(&text, "Command terminated without an exit code"));
            }
            Err(ExecError::Failed(message)) => return ToolOutput::error(message),
            Err(ExecError::Aborted) => {
                let (text, _) = format_output(&snap, &sink.acc, "");
                return ToolOutput::error(append_status(&text, "Command aborted"));
            }
            Err(ExecError::Timeout { shell_exit }) => {
                let (text, _) = format_output(&snap, &sink.acc, "");
                let secs = timeout.map(js_number_string).unwrap_or_default();
                let mut status = format!("Command timed out after {secs} seconds");
                if let Some((code, after)) = shell_exit {
                    status.push_str(&format!(
                        ". The shell exited with code {code} after {} seconds, but background processes it started kept writing output until the timeout.",
                        js_number_string(after)
                    ));
                }
                return ToolOutput::error(append_status(&text, &status));
            }
        };
        let (text, details) = format_output(&snap, &sink.acc, "(no output)");
        let wall = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
        let (full, full_truncated) = sink.acc.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES);
        let mut structured = Map::new();
        structured.insert("output".into(), Value::String(full));
        structured.insert("truncated".into(), Value::Bool(full_truncated));
        if let (true, Some(p)) = (full_truncated, &snap.full_output_path) {
            structured.insert("full_output_path".into(), Value::String(p.display().to_string()));
        }
        structured.insert("exit_code".into(), json!(exit_code));
        structured.insert("wall_time_seconds".into(), number_value(wall));
        let text =
            if exit_code != 0 { append_status(&text, &format!("Command exited with code {exit_code}")) } else { text };
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details,
            is_error: exit_code != 0,
            result_is_error: exit_code != 0,
            usage: None,
            structured_content: Some(Value::Object(structured)),
            ..Default::default()
        }
    }
}

/// Run the command through an extension's `exec` operation (pi's
/// `BashOperations`), with pi's reading of its failures: `aborted`, and
/// `timeout:<seconds>`.
async fn exec_through(
    ops: &dyn super::operations::ToolOperations,
    command: &str,
    ctx: &ToolContext,
    timeout: Option<f64>,
    sink: &mut (dyn ExecSink + '_),
) -> Result<Option<i32>, ExecError> {
    use super::operations::OperationError;
    match ops.exec(command, &ctx.cwd, &ctx.env, timeout, sink, &ctx.cancel).await {
        Ok(code) => Ok(code.map(|c| i32::try_from(c).unwrap_or(i32::MAX))),
        Err(OperationError::Aborted) => Err(ExecError::Aborted),
        Err(OperationError::Failed(m)) if m == "aborted" => Err(ExecError::Aborted),
        Err(OperationError::Failed(m)) if m.starts_with("timeout:") => Err(ExecError::Timeout { shell_exit: None }),
        Err(OperationError::Failed(m)) => Err(ExecError::Failed(m)),
    }
}

/// The sink of the RPC `bash` command: sanitized text chunks, a rolling
/// buffer of ~100K characters, and the full (sanitized) output in a temp file
/// once more than 50KB arrived.
struct RpcSink<'a, F: FnMut(&str) + Send> {
    on_chunk: &'a mut F,
    decoder: Utf8Stream,
    pending_ansi: String,
    chunks: VecDeque<String>,
    chunk_units: usize,
    discarded: bool,
    total_raw: usize,
    temp_dir: &'a Path,
    temp_path: Option<PathBuf>,
    temp_file: Option<std::fs::File>,
}

impl<F: FnMut(&str) + Send> RpcSink<'_, F> {
    fn ensure_temp_file(&mut self) {
        if self.temp_path.is_some() {
            return;
        }
        if let Ok((path, file)) = create_output_file(self.temp_dir, TEMP_FILE_PREFIX) {
            self.temp_path = Some(path);
            self.temp_file = Some(file);
            for chunk in &self.chunks {
                write_quietly(&mut self.temp_file, chunk.as_bytes());
            }
        }
    }

    fn append_text(&mut self, raw: &str) {
        let text = sanitize_binary_output(&strip_ansi(raw)).replace('\r', "");
        if text.is_empty() {
            return;
        }
        if self.total_raw > DEFAULT_MAX_BYTES {
            self.ensure_temp_file();
        }
        write_quietly(&mut self.temp_file, text.as_bytes());
        self.chunk_units += super::truncate::utf16_len(&text);
        self.chunks.push_back(text.clone());
        while self.chunk_units > DEFAULT_MAX_BYTES * 2 && self.chunks.len() > 1 {
            if let Some(removed) = self.chunks.pop_front() {
                self.chunk_units -= super::truncate::utf16_len(&removed);
                self.discarded = true;
            }
        }
        (self.on_chunk)(&text);
    }

    fn flush(&mut self) {
        let rest = format!("{}{}", std::mem::take(&mut self.pending_ansi), self.decoder.finish());
        self.append_text(&rest);
    }
}

impl<F: FnMut(&str) + Send> ExecSink for RpcSink<'_, F> {
    fn data(&mut self, chunk: &[u8]) {
        self.total_raw += chunk.len();
        let decoded = format!("{}{}", std::mem::take(&mut self.pending_ansi), self.decoder.decode(chunk));
        let (complete, pending) = split_incomplete_ansi_suffix(&decoded);
        self.pending_ansi = pending;
        self.append_text(&complete);
    }
}

/// Run a command for the RPC `bash` command: output is streamed to
/// `on_chunk` as sanitized text (ANSI escapes, control characters and CR
/// removed; partial lines as they arrive), and the result keeps the last 2000
/// lines / 50KB, with the full output in `<temp_dir>/pi-bash-<16 hex>.log`
/// when truncated. A cancelled run returns what it produced with
/// `exit_code: None`. `Err` is pi's text for a command that could not run.
pub async fn run_command(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    temp_dir: &Path,
    cancel: CancellationToken,
    on_chunk: impl FnMut(&str) + Send,
) -> Result<BashResult, String> {
    let runner = CommandRunner { shell: &ShellSettings::default(), ops: None };
    run_command_with(command, cwd, env, temp_dir, cancel, runner, on_chunk).await
}

/// What runs an RPC `bash` command: the session's shell settings (its
/// `shellCommandPrefix` applied in every case), and an extension's `exec`
/// operation (pi's `user_bash` `{operations}`) in place of the local shell.
#[derive(Clone, Copy)]
pub struct CommandRunner<'a> {
    pub shell: &'a ShellSettings,
    pub ops: Option<&'a dyn super::operations::ToolOperations>,
}

/// [`run_command`] as `runner` says.
pub async fn run_command_with(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    temp_dir: &Path,
    cancel: CancellationToken,
    runner: CommandRunner<'_>,
    mut on_chunk: impl FnMut(&str) + Send,
) -> Result<BashResult, String> {
    let command = &runner.shell.prefixed(command);
    let mut sink = RpcSink {
        on_chunk: &mut on_chunk,
        decoder: Utf8Stream::default(),
        pending_ansi: String::new(),
        chunks: VecDeque::new(),
        chunk_units: 0,
        discarded: false,
        total_raw: 0,
        temp_dir,
        temp_path: None,
        temp_file: None,
    };
    let ran = match runner.ops {
        Some(ops) => match ops.exec(command, cwd, env, None, &mut sink, &cancel).await {
            Ok(code) => Ok(code.map(|c| i32::try_from(c).unwrap_or(i32::MAX))),
            Err(super::operations::OperationError::Aborted) => Err(ExecError::Aborted),
            Err(super::operations::OperationError::Failed(m)) => Err(ExecError::Failed(m)),
        },
        None => match runner.shell.program() {
            Ok(shell) => exec_with(&shell, command, cwd, env, &cancel, None, &mut sink).await.map(Some),
            Err(message) => Err(ExecError::Failed(message)),
        },
    };
    let exit_code = match ran {
        Ok(code) => code,
        Err(_) if cancel.is_cancelled() => None,
        Err(ExecError::Failed(message)) => return Err(message),
        Err(other) => return Err(format!("{other:?}")),
    };
    sink.flush();
    let full: String = sink.chunks.iter().map(String::as_str).collect();
    let t = truncate_tail(&full, Limits::default());
    if t.truncated {
        sink.ensure_temp_file();
    }
    if let Some(mut f) = sink.temp_file.take() {
        use std::io::Write;
        let _ = f.flush();
    }
    let cancelled = cancel.is_cancelled();
    Ok(BashResult {
        output: if t.truncated { t.content } else { full },
        exit_code: if cancelled { None } else { exit_code },
        cancelled,
        truncated: sink.discarded || t.truncated,
        full_output_path: sink.temp_path.map(|p| p.display().to_string()),
    })
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "description": "Shell command to execute"},
            "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}
        }
    })
}

#[cfg(test)]
mod tests;
