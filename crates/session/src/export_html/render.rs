//! The export document: page skeleton, session header, and one block per entry of the active branch.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use super::markdown::{escape, push_escaped, render_markdown};
use super::stats::{SessionTotals, format_cost, group_digits, session_totals};
use super::{ExportOptions, tools};
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, ContentBlock, ImageContent, StopReason, ToolResultMessage,
    Usage, UserContent,
};
use crate::session::Session;
use crate::session::entry::{CompactionEntry, EntryBase, KnownEntry, SessionEntry, StoredMessage};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// The whole page for `session`: header, optional system prompt and tools,
/// then the active branch (root to leaf) in order.
pub fn render_session_html(session: &Session, options: &ExportOptions) -> String {
    let stamp = PageStamp {
        nonce: uuid::Uuid::new_v4().simple().to_string(),
        exported_at: Utc::now(),
        version: env!("CARGO_PKG_VERSION"),
    };
    render_page(session, options, &stamp)
}

/// What makes two exports of the same session differ: the CSP nonce, the
/// export time and the exporting version. Fixed by the golden tests.
pub(super) struct PageStamp {
    pub(super) nonce: String,
    pub(super) exported_at: DateTime<Utc>,
    pub(super) version: &'static str,
}

/// [`render_session_html`] with the page's varying parts given.
pub(super) fn render_page(session: &Session, options: &ExportOptions, stamp: &PageStamp) -> String {
    let branch = session.branch();
    let totals = session_totals(session);
    let nonce = &stamp.nonce;
    let version = stamp.version;
    let name = session.name();
    let title = match &name {
        Some(name) => format!("{name} · pi session"),
        None => format!("pi session {}", session.session_id()),
    };

    let mut page = Page::new(&branch);
    let out = &mut page.out;
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // Belt and braces: even a rendering bug could not make the page load or run anything foreign.
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; \
         style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'\">\n"
    ));
    out.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    out.push_str(&format!("<meta name=\"generator\" content=\"pi-rpc {version}\">\n"));
    out.push_str(&format!("<title>{}</title>\n", escape(&title)));
    out.push_str(&format!("<style nonce=\"{nonce}\">\n{STYLE}</style>\n</head>\n<body>\n<div class=\"page\">\n"));

    page.header(session, name.as_deref(), &totals, branch.len());
    page.preamble(options);
    page.out.push_str("<main class=\"transcript\">\n");
    if branch.iter().all(|e| !shows_up(e)) {
        page.out.push_str("<p class=\"empty\">This session has no messages yet.</p>\n");
    }
    for entry in &branch {
        page.entry(entry);
    }
    page.out.push_str("</main>\n");
    let now = stamp.exported_at;
    page.out.push_str(&format!(
        "<footer class=\"page-foot\">Exported by pi-rpc {version} on <time datetime=\"{}\" data-fmt=\"datetime\">{}</time></footer>\n",
        now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        now.format("%Y-%m-%d %H:%M:%S UTC"),
    ));
    page.out.push_str(&format!("</div>\n<script nonce=\"{nonce}\">\n{SCRIPT}</script>\n</body>\n</html>\n"));
    page.out
}

/// Whether an entry renders as something in the transcript.
fn shows_up(entry: &SessionEntry) -> bool {
    matches!(
        entry,
        SessionEntry::Known(
            KnownEntry::Message(_)
                | KnownEntry::ModelChange(_)
                | KnownEntry::ThinkingLevelChange(_)
                | KnownEntry::Compaction(_)
                | KnownEntry::BranchSummary(_)
                | KnownEntry::CustomMessage(_)
        )
    )
}

/// The document being written, plus what rendering one entry needs to know about the others.
pub(super) struct Page<'a> {
    pub(super) out: String,
    /// Tool results on the branch, by tool call id (the first one wins).
    results: HashMap<&'a str, &'a ToolResultMessage>,
    /// Tool call ids whose result was shown under their call.
    shown_results: HashSet<String>,
    /// Day of the last timestamp shown, to print the date only when it changes.
    last_day: Option<NaiveDate>,
}

impl<'a> Page<'a> {
    fn new(branch: &[&'a SessionEntry]) -> Self {
        let mut results = HashMap::new();
        for entry in branch {
            if let Some(AgentMessage::ToolResult(r)) = entry.message() {
                results.entry(r.tool_call_id.as_str()).or_insert(r);
            }
        }
        Page { out: String::with_capacity(64 * 1024), results, shown_results: HashSet::new(), last_day: None }
    }

    // ----- header and preamble ------------------------------------------

    fn header(&mut self, session: &Session, name: Option<&str>, t: &SessionTotals, branch_len: usize) {
        let header = session.header();
        let out = &mut self.out;
        out.push_str("<header class=\"session-head\">\n<p class=\"eyebrow\">pi session export</p>\n");
        match name {
            Some(name) => out.push_str(&format!("<h1>{}</h1>\n", escape(name))),
            None => out.push_str(&format!("<h1>Session <code>{}</code></h1>\n", escape(session.session_id()))),
        }
        out.push_str("<dl class=\"facts\">\n");
        fact(out, "Session ID", &format!("<code>{}</code>", escape(session.session_id())));
        fact(out, "Working directory", &format!("<code>{}</code>", escape(session.cwd())));
        fact(out, "Created", &full_time(&header.timestamp));
        if let Some(parent) = &header.parent_session {
            fact(out, "Forked from", &format!("<code>{}</code>", escape(parent)));
        }
        let models = if t.models.is_empty() {
            "<span class=\"muted\">none recorded</span>".to_string()
        } else {
            t.models.iter().map(|m| format!("<code>{}</code>", escape(m))).collect::<Vec<_>>().join(" ")
        };
        fact(out, if t.models.len() == 1 { "Model" } else { "Models" }, &models);
        fact(out, "Messages", &escape(&message_counts(t)));
        fact(out, "Tool calls", &group_digits(t.tool_calls as u64));
        out.push_str("</dl>\n<div class=\"totals\">\n");
        let u = &t.usage;
        for (label, value) in [
            ("Input tokens", group_digits(u.input)),
            ("Output tokens", group_digits(u.output)),
            ("Cache read", group_digits(u.cache_read)),
            ("Cache write", group_digits(u.cache_write)),
            ("Cost", format_cost(t.cost)),
        ] {
            out.push_str(&format!(
                "<div class=\"total\"><span class=\"total-label\">{label}</span><span class=\"total-value\">{value}</span></div>\n"
            ));
        }
        out.push_str("</div>\n<p class=\"note\">Totals cover the whole session");
        let all = session.entry_count();
        if branch_len < all {
            out.push_str(&format!(
                " (every branch); the transcript below is the active branch ({branch_len} of {all} entries)"
            ));
        }
        out.push_str(", including tool-reported usage and compaction and branch summaries.</p>\n");
        out.push_str("<nav id=\"toolbar\" class=\"toolbar\" hidden>");
        out.push_str("<button type=\"button\" data-open=\"true\">Expand all</button>");
        out.push_str("<button type=\"button\" data-open=\"false\">Collapse all</button></nav>\n</header>\n");
    }

    fn preamble(&mut self, options: &ExportOptions) {
        let out = &mut self.out;
        if let Some(prompt) = options.system_prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            let lines = prompt.lines().count();
            out.push_str(&format!(
                "<details class=\"preamble\"><summary>System prompt <span class=\"muted\">({lines} lines)</span></summary><div class=\"plain\">{}</div></details>\n",
                escape(prompt)
            ));
        }
        if !options.tools.is_empty() {
            out.push_str(&format!(
                "<details class=\"preamble\"><summary>Available tools <span class=\"muted\">({})</span></summary><dl class=\"tool-list\">",
                options.tools.len()
            ));
            for tool in &options.tools {
                out.push_str(&format!(
                    "<dt><code>{}</code></dt><dd>{}</dd>",
                    escape(&tool.name),
                    escape(&tool.description)
                ));
            }
            out.push_str("</dl></details>\n");
        }
    }

    // ----- entries ------------------------------------------------------

    fn entry(&mut self, entry: &SessionEntry) {
        let SessionEntry::Known(known) = entry else { return };
        match known {
            KnownEntry::Message(m) => match &m.message {
                StoredMessage::Known(msg) => self.message(&m.base, msg),
                StoredMessage::Other(value) => self.other_message(&m.base, value),
            },
            KnownEntry::ModelChange(c) => {
                let model = format!("{}/{}", c.provider, c.model_id);
                self.event(&c.base, "Model switched to", &model);
            }
            KnownEntry::ThinkingLevelChange(t) => self.event(&t.base, "Thinking level set to", &t.thinking_level),
            KnownEntry::Compaction(c) => self.compaction(c),
            KnownEntry::BranchSummary(b) => self.summary_block(&b.base, &b.summary, b.usage.as_ref()),
            KnownEntry::CustomMessage(c) => self.custom(&c.base, &c.custom_type, &c.content, c.display),
            KnownEntry::Custom(_) | KnownEntry::Label(_) | KnownEntry::SessionInfo(_) => {}
        }
    }

    fn message(&mut self, base: &EntryBase, msg: &AgentMessage) {
        match msg {
            AgentMessage::User(u) => self.user(base, &u.content),
            AgentMessage::Assistant(a) => self.assistant(base, a),
            AgentMessage::ToolResult(r) => {
                if !self.shown_results.contains(&r.tool_call_id) {
                    self.orphan_result(base, r);
                }
            }
            AgentMessage::BashExecution(b) => self.bash(base, b),
            AgentMessage::CompactionSummary(c) => {
                self.open(base, "compaction", "Compaction", &tokens_before(c.tokens_before));
                self.out.push_str(&format!("<div class=\"md\">{}</div>", render_markdown(&c.summary)));
                self.close();
            }
            AgentMessage::BranchSummary(b) => self.summary_block(base, &b.summary, None),
            AgentMessage::Custom(c) => self.custom(base, &c.custom_type, &c.content, c.display),
            // The export shows the current system prompt and tools at the top.
            AgentMessage::System(_) => {}
        }
    }

    /// `<article>` with its head line: role label, meta (already HTML) and time.
    pub(super) fn open(&mut self, base: &EntryBase, class: &str, role: &str, meta_html: &str) {
        let stamp = self.stamp(&base.timestamp);
        let id = escape(&base.id);
        self.out.push_str(&format!(
            "<article class=\"msg {class}\" id=\"entry-{id}\">\n<header class=\"msg-head\"><span class=\"role\">{}</span>\
             <span class=\"meta\">{meta_html}</span><a class=\"stamp\" href=\"#entry-{id}\">{stamp}</a></header>\n",
            escape(role)
        ));
    }

    pub(super) fn close(&mut self) {
        self.out.push_str("</article>\n");
    }

    fn event(&mut self, base: &EntryBase, what: &str, value: &str) {
        let stamp = self.stamp(&base.timestamp);
        self.out.push_str(&format!(
            "<div class=\"event\" id=\"entry-{}\">{} <code>{}</code> <span class=\"stamp\">{stamp}</span></div>\n",
            escape(&base.id),
            escape(what),
            escape(value)
        ));
    }

    fn user(&mut self, base: &EntryBase, content: &UserContent) {
        self.open(base, "user", "User", "");
        let blocks = content.blocks();
        let text = texts(&blocks).join("\n");
        match parse_skill_block(&text) {
            Some(skill) => {
                self.out.push_str(&format!(
                    "<details class=\"skill\"><summary>Skill <code>{}</code> <span class=\"muted\">{}</span></summary><div class=\"md\">{}</div></details>\n",
                    escape(skill.name),
                    escape(skill.location),
                    render_markdown(skill.content)
                ));
                if let Some(rest) = skill.user_text {
                    self.plain(rest);
                }
            }
            None if !text.trim().is_empty() => self.plain(&text),
            None => {}
        }
        self.images(&blocks, "msg-image");
        self.close();
    }

    fn assistant(&mut self, base: &EntryBase, a: &AssistantMessage) {
        let mut meta = String::new();
        if !a.model.is_empty() {
            let model = if a.provider.is_empty() { a.model.clone() } else { format!("{}/{}", a.provider, a.model) };
            meta.push_str(&format!("<code>{}</code>", escape(&model)));
        }
        meta.push_str(&usage_meta(&a.usage));
        self.open(base, "assistant", "Assistant", &meta);
        for block in &a.content {
            match block {
                ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                    self.out.push_str(&format!("<div class=\"md\">{}</div>\n", render_markdown(&t.text)));
                }
                ContentBlock::Thinking(t) if t.redacted => {
                    self.out.push_str("<div class=\"thinking redacted\">Thinking (redacted by the provider)</div>\n");
                }
                ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                    self.out.push_str(&format!(
                        "<details class=\"thinking\"><summary>Thinking</summary><div class=\"plain\">{}</div></details>\n",
                        escape(t.thinking.trim())
                    ));
                }
                ContentBlock::Image(img) => self.image(img, "msg-image"),
                ContentBlock::ToolCall(call) => {
                    let result = self.results.get(call.id.as_str()).copied();
                    if result.is_some() {
                        self.shown_results.insert(call.id.clone());
                    }
                    tools::tool_call(self, call, result);
                }
                ContentBlock::Text(_) | ContentBlock::Thinking(_) => {}
            }
        }
        match a.stop_reason {
            StopReason::Error => {
                let text = a.error_message.as_deref().unwrap_or("Unknown error");
                self.out.push_str(&format!("<div class=\"notice error\">Error: {}</div>\n", escape(text)));
            }
            StopReason::Aborted => self.out.push_str("<div class=\"notice warn\">Aborted</div>\n"),
            StopReason::Length => {
                self.out.push_str("<div class=\"notice warn\">Stopped: the output token limit was reached</div>\n")
            }
            StopReason::Stop | StopReason::ToolUse => {}
        }
        self.close();
    }

    fn orphan_result(&mut self, base: &EntryBase, r: &ToolResultMessage) {
        let meta = format!("<code>{}</code>{}", escape(&r.tool_name), if r.is_error { " · error" } else { "" });
        self.open(base, "tool-result-msg", "Tool result", &meta);
        tools::result_body(self, r);
        self.close();
    }

    fn bash(&mut self, base: &EntryBase, b: &BashExecutionMessage) {
        let mut meta = String::new();
        match (b.cancelled, b.exit_code) {
            (true, _) => meta.push_str("<span class=\"badge warn\">cancelled</span>"),
            (false, Some(0)) => meta.push_str("<span class=\"badge ok\">exit 0</span>"),
            (false, Some(code)) => meta.push_str(&format!("<span class=\"badge error\">exit {code}</span>")),
            (false, None) => {}
        }
        if b.truncated {
            meta.push_str("<span class=\"badge warn\">truncated</span>");
        }
        if b.exclude_from_context {
            meta.push_str("<span class=\"badge\">not sent to the model</span>");
        }
        self.open(base, "bash", "Shell command", &meta);
        self.out.push_str(&format!("<pre class=\"cmd\">$ {}</pre>\n", escape(&b.command)));
        if b.output.is_empty() {
            self.out.push_str("<div class=\"muted small\">(no output)</div>\n");
        } else {
            self.out.push_str(&format!("<pre class=\"output\">{}</pre>\n", escape(&b.output)));
        }
        if b.truncated
            && let Some(path) = &b.full_output_path
        {
            self.out.push_str(&format!(
                "<div class=\"muted small\">Output truncated; the full output was saved to <code>{}</code></div>\n",
                escape(path)
            ));
        }
        self.close();
    }

    fn compaction(&mut self, c: &CompactionEntry) {
        let mut meta = tokens_before(c.tokens_before);
        if let Some(u) = &c.usage {
            meta.push_str(&usage_meta(u));
        }
        self.open(&c.base, "compaction", "Compaction", &meta);
        self.out.push_str(&format!(
            "<details class=\"summary\" open><summary>Summary of the earlier conversation</summary><div class=\"md\">{}</div></details>\n",
            render_markdown(&c.summary)
        ));
        self.close();
    }

    fn summary_block(&mut self, base: &EntryBase, summary: &str, usage: Option<&Usage>) {
        let mut meta = "<span class=\"muted\">what happened on an abandoned branch</span>".to_string();
        if let Some(u) = usage {
            meta.push_str(&usage_meta(u));
        }
        self.open(base, "branch-summary", "Branch summary", &meta);
        self.out.push_str(&format!("<div class=\"md\">{}</div>\n", render_markdown(summary)));
        self.close();
    }

    fn custom(&mut self, base: &EntryBase, custom_type: &str, content: &UserContent, display: bool) {
        let mut meta = format!("<code>{}</code>", escape(custom_type));
        if !display {
            meta.push_str("<span class=\"badge\">hidden in the terminal</span>");
        }
        self.open(base, if display { "custom" } else { "custom hidden-msg" }, "Extension message", &meta);
        let blocks = content.blocks();
        let text = texts(&blocks).join("\n");
        if !text.trim().is_empty() {
            self.out.push_str(&format!("<div class=\"md\">{}</div>\n", render_markdown(&text)));
        }
        self.images(&blocks, "msg-image");
        self.close();
    }

    /// A message of a role we do not model: pi 1.6 `system` messages become a
    /// collapsed prompt, anything else its JSON.
    fn other_message(&mut self, base: &EntryBase, value: &Value) {
        let role = value.get("role").and_then(Value::as_str).unwrap_or("unknown");
        if role == "system" {
            let text = system_text(value);
            self.open(base, "system", "System prompt", "");
            if !text.is_empty() {
                self.out.push_str(&format!(
                    "<details><summary>Prompt <span class=\"muted\">({} lines)</span></summary><div class=\"plain\">{}</div></details>\n",
                    text.lines().count(),
                    escape(&text)
                ));
            }
            self.close();
            return;
        }
        // Old files may hold messages whose content is null; show them like pi repairs them.
        if matches!(role, "user" | "assistant" | "toolResult") && value.get("content").is_none_or(Value::is_null) {
            let mut fixed = value.clone();
            if let Some(obj) = fixed.as_object_mut() {
                obj.insert("content".into(), Value::Array(Vec::new()));
            }
            if let Ok(msg) = serde_json::from_value::<AgentMessage>(fixed) {
                self.message(base, &msg);
                return;
            }
        }
        self.open(base, "other", &format!("{role} message"), "");
        let json = serde_json::to_string_pretty(value).unwrap_or_default();
        self.out.push_str(&format!(
            "<details><summary>Raw message</summary><pre class=\"json\">{}</pre></details>\n",
            escape(&json)
        ));
        self.close();
    }

    // ----- pieces -------------------------------------------------------

    pub(super) fn plain(&mut self, text: &str) {
        self.out.push_str("<div class=\"plain\">");
        push_escaped(&mut self.out, text);
        self.out.push_str("</div>\n");
    }

    pub(super) fn images(&mut self, blocks: &[ContentBlock], class: &str) {
        let images: Vec<&ImageContent> = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Image(i) => Some(i),
                _ => None,
            })
            .collect();
        if images.is_empty() {
            return;
        }
        self.out.push_str("<div class=\"images\">");
        for img in images {
            self.image(img, class);
        }
        self.out.push_str("</div>\n");
    }

    fn image(&mut self, img: &ImageContent, class: &str) {
        match data_uri(img) {
            Some(uri) => self
                .out
                .push_str(&format!("<img class=\"{class}\" src=\"{uri}\" alt=\"image ({})\">", escape(&img.mime_type))),
            None => self.out.push_str(&format!(
                "<span class=\"muted small\">[image of unsupported type {}]</span>",
                escape(&img.mime_type)
            )),
        }
    }

    /// A `<time>` for an ISO timestamp: the time of day, with the date when
    /// it differs from the previous one shown (UTC; the script localizes).
    pub(super) fn stamp(&mut self, iso: &str) -> String {
        let Some(t) = parse_time(iso) else { return escape(iso) };
        let day = t.date_naive();
        let new_day = self.last_day != Some(day);
        self.last_day = Some(day);
        let (fmt, text) = if new_day {
            ("datetime", t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        } else {
            ("time", t.format("%H:%M:%S").to_string())
        };
        format!(
            "<time datetime=\"{}\" data-fmt=\"{fmt}\" title=\"{}\">{text}</time>",
            escape(iso),
            t.format("%Y-%m-%d %H:%M:%S%.3f UTC")
        )
    }
}

fn fact(out: &mut String, label: &str, value_html: &str) {
    out.push_str(&format!("<div><dt>{label}</dt><dd>{value_html}</dd></div>\n"));
}

fn full_time(iso: &str) -> String {
    match parse_time(iso) {
        Some(t) => format!(
            "<time datetime=\"{}\" data-fmt=\"datetime\">{}</time>",
            escape(iso),
            t.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        None if iso.is_empty() => "<span class=\"muted\">unknown</span>".to_string(),
        None => escape(iso),
    }
}

fn parse_time(iso: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(iso).ok().map(|t| t.with_timezone(&Utc))
}

fn message_counts(t: &SessionTotals) -> String {
    let parts: Vec<String> = [
        (t.user_messages, "user", "user"),
        (t.assistant_messages, "assistant", "assistant"),
        (t.tool_results, "tool result", "tool results"),
        (t.bash_executions, "shell command", "shell commands"),
        (t.custom_messages, "extension message", "extension messages"),
        (t.compactions, "compaction", "compactions"),
        (t.branch_summaries, "branch summary", "branch summaries"),
    ]
    .iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| format!("{n} {}", if *n == 1 { one } else { many }))
    .collect();
    if parts.is_empty() { "none".to_string() } else { parts.join(", ") }
}

fn tokens_before(tokens: u64) -> String {
    format!("<span class=\"muted\">context of {} tokens summarized</span>", group_digits(tokens))
}

/// ` · in 1,234 · out 56 · cache 10/0 · $0.0012` (empty for zero usage).
fn usage_meta(u: &Usage) -> String {
    if u.input + u.output + u.cache_read + u.cache_write == 0 && u.cost.total == 0.0 {
        return String::new();
    }
    let mut s = format!("<span class=\"usage\">in {} · out {}", group_digits(u.input), group_digits(u.output));
    if u.cache_read + u.cache_write > 0 {
        s.push_str(&format!(" · cache r {} / w {}", group_digits(u.cache_read), group_digits(u.cache_write)));
    }
    let cost = if u.cost.total != 0.0 {
        u.cost.total
    } else {
        u.cost.input + u.cost.output + u.cost.cache_read + u.cost.cache_write
    };
    if cost != 0.0 {
        s.push_str(&format!(" · {}", format_cost(cost)));
    }
    s.push_str("</span>");
    s
}

/// The text blocks of a content list.
pub(super) fn texts(blocks: &[ContentBlock]) -> Vec<&str> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// `data:` URI of an image, when its MIME type is a plain `image/…` and its
/// data looks like base64 (so nothing odd ends up in the attribute).
pub(super) fn data_uri(img: &ImageContent) -> Option<String> {
    let mime = img.mime_type.trim().to_ascii_lowercase();
    let subtype = mime.strip_prefix("image/")?;
    if subtype.is_empty() || !subtype.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)) {
        return None;
    }
    let data: String = img.data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if data.is_empty() || !data.chars().all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)) {
        return None;
    }
    Some(format!("data:{mime};base64,{data}"))
}

/// The prompt text of a pi 1.6 `system` message: its content then its named sections.
fn system_text(value: &Value) -> String {
    let content = match value.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    };
    let mut parts = vec![content];
    if let Some(Value::Object(sections)) = value.get("sections") {
        parts.extend(sections.values().filter_map(Value::as_str).map(str::to_string));
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// A skill invocation pi puts in a user message:
/// `<skill name="…" location="…">\n…\n</skill>` optionally followed by `\n\n<user text>`.
struct SkillBlock<'t> {
    name: &'t str,
    location: &'t str,
    content: &'t str,
    user_text: Option<&'t str>,
}

fn parse_skill_block(text: &str) -> Option<SkillBlock<'_>> {
    let rest = text.strip_prefix("<skill name=\"")?;
    let (name, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(" location=\"")?;
    let (location, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(">\n")?;
    let (content, after) = rest.split_once("\n</skill>")?;
    let user_text = match after {
        "" => None,
        other => Some(other.strip_prefix("\n\n")?).filter(|t| !t.is_empty()),
    };
    if name.is_empty() || location.is_empty() {
        return None;
    }
    Some(SkillBlock { name, location, content, user_text })
}
