//! The export document: page skeleton, session header, and one block per entry of the active branch,
//! written as `maud` templates; every text from the session goes in through [`Esc`].

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use super::markdown::{Esc, render_markdown};
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
    let PageStamp { nonce, exported_at, version } = stamp;
    let name = session.name();
    let title = match &name {
        Some(name) => format!("{name} · pi session"),
        None => format!("pi session {}", session.session_id()),
    };
    let mut page = Page::new(&branch);
    let header = page.header(session, name.as_deref(), &totals, branch.len());
    let preamble = preamble(options);
    let empty = branch.iter().all(|e| !shows_up(e));
    // Belt and braces: even a rendering bug could not make the page load or run anything foreign.
    let csp = format!(
        "default-src 'none'; img-src data:; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; \
         base-uri 'none'; form-action 'none'"
    );
    let markup = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            "\n"
            head {
                "\n"
                meta charset="utf-8"; "\n"
                meta name="viewport" content="width=device-width, initial-scale=1"; "\n"
                meta http-equiv="Content-Security-Policy" content=(csp); "\n"
                meta name="color-scheme" content="light dark"; "\n"
                meta name="generator" content={ "pi-rpc " (version) }; "\n"
                title { (Esc(&title)) } "\n"
                style nonce=(nonce) { "\n" (PreEscaped(STYLE)) } "\n"
            }
            "\n"
            body {
                "\n"
                div class="page" {
                    "\n" (header) (preamble)
                    main class="transcript" {
                        "\n"
                        @if empty { p class="empty" { "This session has no messages yet." } "\n" }
                        @for entry in &branch { (page.entry(entry)) }
                    }
                    "\n"
                    footer class="page-foot" {
                        "Exported by pi-rpc " (version) " on "
                        time datetime=(exported_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)) data-fmt="datetime" {
                            (exported_at.format("%Y-%m-%d %H:%M:%S UTC").to_string())
                        }
                    }
                    "\n"
                }
                "\n"
                script nonce=(nonce) { "\n" (PreEscaped(SCRIPT)) }
                "\n"
            }
            "\n"
        }
        "\n"
    };
    markup.into_string()
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

/// The agent's system prompt and tools, folded above the transcript.
fn preamble(options: &ExportOptions) -> Markup {
    let prompt = options.system_prompt.as_deref().filter(|p| !p.trim().is_empty());
    html! {
        @if let Some(prompt) = prompt {
            details class="preamble" {
                summary { "System prompt " span class="muted" { "(" (prompt.lines().count()) " lines)" } }
                div class="plain" { (Esc(prompt)) }
            }
            "\n"
        }
        @if !options.tools.is_empty() {
            details class="preamble" {
                summary { "Available tools " span class="muted" { "(" (options.tools.len()) ")" } }
                dl class="tool-list" {
                    @for tool in &options.tools { dt { code { (Esc(&tool.name)) } } dd { (Esc(&tool.description)) } }
                }
            }
            "\n"
        }
    }
}

/// What rendering one entry needs to know about the others.
pub(super) struct Page<'a> {
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
        Page { results, shown_results: HashSet::new(), last_day: None }
    }

    // ----- header -------------------------------------------------------

    fn header(&mut self, session: &Session, name: Option<&str>, t: &SessionTotals, branch_len: usize) -> Markup {
        let header = session.header();
        let u = &t.usage;
        let totals = [
            ("Input tokens", group_digits(u.input)),
            ("Output tokens", group_digits(u.output)),
            ("Cache read", group_digits(u.cache_read)),
            ("Cache write", group_digits(u.cache_write)),
            ("Cost", format_cost(t.cost)),
        ];
        let all = session.entry_count();
        let models = html! {
            @if t.models.is_empty() { span class="muted" { "none recorded" } }
            @for (i, model) in t.models.iter().enumerate() { @if i > 0 { " " } code { (Esc(model)) } }
        };
        html! {
            header class="session-head" {
                "\n" p class="eyebrow" { "pi session export" } "\n"
                @match name {
                    Some(name) => { h1 { (Esc(name)) } }
                    None => { h1 { "Session " code { (Esc(session.session_id())) } } }
                }
                "\n"
                dl class="facts" {
                    "\n"
                    (fact("Session ID", html! { code { (Esc(session.session_id())) } }))
                    (fact("Working directory", html! { code { (Esc(session.cwd())) } }))
                    (fact("Created", full_time(&header.timestamp)))
                    @if let Some(parent) = &header.parent_session {
                        (fact("Forked from", html! { code { (Esc(parent)) } }))
                    }
                    (fact(if t.models.len() == 1 { "Model" } else { "Models" }, models))
                    (fact("Messages", html! { (Esc(&message_counts(t))) }))
                    (fact("Tool calls", html! { (group_digits(t.tool_calls as u64)) }))
                }
                "\n"
                div class="totals" {
                    "\n"
                    @for (label, value) in totals {
                        div class="total" { span class="total-label" { (label) } span class="total-value" { (value) } }
                        "\n"
                    }
                }
                "\n"
                p class="note" {
                    "Totals cover the whole session"
                    @if branch_len < all {
                        " (every branch); the transcript below is the active branch (" (branch_len) " of " (all) " entries)"
                    }
                    ", including tool-reported usage and compaction and branch summaries."
                }
                "\n"
                nav id="toolbar" class="toolbar" hidden {
                    button type="button" data-open="true" { "Expand all" }
                    button type="button" data-open="false" { "Collapse all" }
                }
                "\n"
            }
            "\n"
        }
    }

    // ----- entries ------------------------------------------------------

    fn entry(&mut self, entry: &SessionEntry) -> Markup {
        let SessionEntry::Known(known) = entry else { return html! {} };
        match known {
            KnownEntry::Message(m) => match &m.message {
                StoredMessage::Known(msg) => self.message(&m.base, msg),
                StoredMessage::Other(value) => self.other_message(&m.base, value),
            },
            KnownEntry::ModelChange(c) => {
                let model = format!("{}/{}", c.provider, c.model_id);
                self.event(&c.base, "Model switched to", &model)
            }
            KnownEntry::ThinkingLevelChange(t) => self.event(&t.base, "Thinking level set to", &t.thinking_level),
            KnownEntry::Compaction(c) => self.compaction(c),
            KnownEntry::BranchSummary(b) => self.summary_block(&b.base, &b.summary, b.usage.as_ref()),
            KnownEntry::CustomMessage(c) => self.custom(&c.base, &c.custom_type, &c.content, c.display),
            KnownEntry::Custom(_) | KnownEntry::Label(_) | KnownEntry::SessionInfo(_) => html! {},
        }
    }

    fn message(&mut self, base: &EntryBase, msg: &AgentMessage) -> Markup {
        match msg {
            AgentMessage::User(u) => self.user(base, &u.content),
            AgentMessage::Assistant(a) => self.assistant(base, a),
            AgentMessage::ToolResult(r) if self.shown_results.contains(&r.tool_call_id) => html! {},
            AgentMessage::ToolResult(r) => self.orphan_result(base, r),
            AgentMessage::BashExecution(b) => self.bash(base, b),
            AgentMessage::CompactionSummary(c) => {
                let meta = tokens_before(c.tokens_before);
                self.article(base, "compaction", "Compaction", meta, |_| {
                    html! { div class="md" { (PreEscaped(render_markdown(&c.summary))) } }
                })
            }
            AgentMessage::BranchSummary(b) => self.summary_block(base, &b.summary, None),
            AgentMessage::Custom(c) => self.custom(base, &c.custom_type, &c.content, c.display),
            // The export shows the current system prompt and tools at the top.
            AgentMessage::System(_) => html! {},
        }
    }

    /// `<article>` with its head line (role label, meta and time) above `body`.
    pub(super) fn article(
        &mut self,
        base: &EntryBase,
        class: &str,
        role: &str,
        meta: Markup,
        body: impl FnOnce(&mut Self) -> Markup,
    ) -> Markup {
        let stamp = self.stamp(&base.timestamp);
        let body = body(self);
        html! {
            article class={ "msg " (class) } id={ "entry-" (Esc(&base.id)) } {
                "\n"
                header class="msg-head" {
                    span class="role" { (Esc(role)) }
                    span class="meta" { (meta) }
                    a class="stamp" href={ "#entry-" (Esc(&base.id)) } { (stamp) }
                }
                "\n"
                (body)
            }
            "\n"
        }
    }

    fn event(&mut self, base: &EntryBase, what: &str, value: &str) -> Markup {
        let stamp = self.stamp(&base.timestamp);
        html! {
            div class="event" id={ "entry-" (Esc(&base.id)) } {
                (Esc(what)) " " code { (Esc(value)) } " " span class="stamp" { (stamp) }
            }
            "\n"
        }
    }

    fn user(&mut self, base: &EntryBase, content: &UserContent) -> Markup {
        let blocks = content.blocks();
        let text = texts(&blocks).join("\n");
        self.article(base, "user", "User", html! {}, |_| {
            html! {
                @match parse_skill_block(&text) {
                    Some(skill) => {
                        details class="skill" {
                            summary { "Skill " code { (Esc(skill.name)) } " " span class="muted" { (Esc(skill.location)) } }
                            div class="md" { (PreEscaped(render_markdown(skill.content))) }
                        }
                        "\n"
                        @if let Some(rest) = skill.user_text { (plain(rest)) }
                    }
                    None => { @if !text.trim().is_empty() { (plain(&text)) } }
                }
                (images(&blocks, "msg-image"))
            }
        })
    }

    fn assistant(&mut self, base: &EntryBase, a: &AssistantMessage) -> Markup {
        let model = if a.provider.is_empty() { a.model.clone() } else { format!("{}/{}", a.provider, a.model) };
        let meta = html! {
            @if !a.model.is_empty() { code { (Esc(&model)) } }
            (usage_meta(&a.usage))
        };
        self.article(base, "assistant", "Assistant", meta, |page| {
            html! {
                @for block in &a.content { (page.assistant_block(block)) }
                @match a.stop_reason {
                    StopReason::Error => {
                        div class="notice error" { "Error: " (Esc(a.error_message.as_deref().unwrap_or("Unknown error"))) }
                        "\n"
                    }
                    StopReason::Aborted => { div class="notice warn" { "Aborted" } "\n" }
                    StopReason::Length => {
                        div class="notice warn" { "Stopped: the output token limit was reached" } "\n"
                    }
                    StopReason::Stop | StopReason::ToolUse => {}
                }
            }
        })
    }

    fn assistant_block(&mut self, block: &ContentBlock) -> Markup {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                html! { div class="md" { (PreEscaped(render_markdown(&t.text))) } "\n" }
            }
            ContentBlock::Thinking(t) if t.redacted => {
                html! { div class="thinking redacted" { "Thinking (redacted by the provider)" } "\n" }
            }
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => html! {
                details class="thinking" { summary { "Thinking" } div class="plain" { (Esc(t.thinking.trim())) } }
                "\n"
            },
            ContentBlock::Image(img) => image(img, "msg-image"),
            ContentBlock::ToolCall(call) => {
                let result = self.results.get(call.id.as_str()).copied();
                if result.is_some() {
                    self.shown_results.insert(call.id.clone());
                }
                tools::tool_call(call, result)
            }
            ContentBlock::Text(_) | ContentBlock::Thinking(_) => html! {},
        }
    }

    fn orphan_result(&mut self, base: &EntryBase, r: &ToolResultMessage) -> Markup {
        let meta = html! { code { (Esc(&r.tool_name)) } @if r.is_error { " · error" } };
        self.article(base, "tool-result-msg", "Tool result", meta, |_| tools::result_body(r))
    }

    fn bash(&mut self, base: &EntryBase, b: &BashExecutionMessage) -> Markup {
        let meta = html! {
            @match (b.cancelled, b.exit_code) {
                (true, _) => { span class="badge warn" { "cancelled" } }
                (false, Some(0)) => { span class="badge ok" { "exit 0" } }
                (false, Some(code)) => { span class="badge error" { "exit " (code) } }
                (false, None) => {}
            }
            @if b.truncated { span class="badge warn" { "truncated" } }
            @if b.exclude_from_context { span class="badge" { "not sent to the model" } }
        };
        let saved_to = b.full_output_path.as_deref().filter(|_| b.truncated);
        self.article(base, "bash", "Shell command", meta, |_| {
            html! {
                pre class="cmd" { "$ " (Esc(&b.command)) } "\n"
                @if b.output.is_empty() {
                    div class="muted small" { "(no output)" } "\n"
                } @else {
                    pre class="output" { (Esc(&b.output)) } "\n"
                }
                @if let Some(path) = saved_to {
                    div class="muted small" { "Output truncated; the full output was saved to " code { (Esc(path)) } }
                    "\n"
                }
            }
        })
    }

    fn compaction(&mut self, c: &CompactionEntry) -> Markup {
        let meta = html! { (tokens_before(c.tokens_before)) @if let Some(u) = &c.usage { (usage_meta(u)) } };
        self.article(&c.base, "compaction", "Compaction", meta, |_| {
            html! {
                details class="summary" open {
                    summary { "Summary of the earlier conversation" }
                    div class="md" { (PreEscaped(render_markdown(&c.summary))) }
                }
                "\n"
            }
        })
    }

    fn summary_block(&mut self, base: &EntryBase, summary: &str, usage: Option<&Usage>) -> Markup {
        let meta = html! {
            span class="muted" { "what happened on an abandoned branch" }
            @if let Some(u) = usage { (usage_meta(u)) }
        };
        self.article(base, "branch-summary", "Branch summary", meta, |_| {
            html! { div class="md" { (PreEscaped(render_markdown(summary))) } "\n" }
        })
    }

    fn custom(&mut self, base: &EntryBase, custom_type: &str, content: &UserContent, display: bool) -> Markup {
        let meta = html! {
            code { (Esc(custom_type)) }
            @if !display { span class="badge" { "hidden in the terminal" } }
        };
        let class = if display { "custom" } else { "custom hidden-msg" };
        let blocks = content.blocks();
        let text = texts(&blocks).join("\n");
        self.article(base, class, "Extension message", meta, |_| {
            html! {
                @if !text.trim().is_empty() { div class="md" { (PreEscaped(render_markdown(&text))) } "\n" }
                (images(&blocks, "msg-image"))
            }
        })
    }

    /// A message of a role we do not model: pi 1.6 `system` messages become a
    /// collapsed prompt, anything else its JSON.
    fn other_message(&mut self, base: &EntryBase, value: &Value) -> Markup {
        let role = value.get("role").and_then(Value::as_str).unwrap_or("unknown");
        if role == "system" {
            let text = system_text(value);
            return self.article(base, "system", "System prompt", html! {}, |_| {
                html! {
                    @if !text.is_empty() {
                        details {
                            summary { "Prompt " span class="muted" { "(" (text.lines().count()) " lines)" } }
                            div class="plain" { (Esc(&text)) }
                        }
                        "\n"
                    }
                }
            });
        }
        // Old files may hold messages whose content is null; show them like pi repairs them.
        if matches!(role, "user" | "assistant" | "toolResult") && value.get("content").is_none_or(Value::is_null) {
            let mut fixed = value.clone();
            if let Some(obj) = fixed.as_object_mut() {
                obj.insert("content".into(), Value::Array(Vec::new()));
            }
            if let Ok(msg) = serde_json::from_value::<AgentMessage>(fixed) {
                return self.message(base, &msg);
            }
        }
        let json = serde_json::to_string_pretty(value).unwrap_or_default();
        self.article(base, "other", &format!("{role} message"), html! {}, |_| {
            html! { details { summary { "Raw message" } pre class="json" { (Esc(&json)) } } "\n" }
        })
    }

    /// A `<time>` for an ISO timestamp: the time of day, with the date when
    /// it differs from the previous one shown (UTC; the script localizes).
    fn stamp(&mut self, iso: &str) -> Markup {
        let Some(t) = parse_time(iso) else { return html! { (Esc(iso)) } };
        let day = t.date_naive();
        let new_day = self.last_day != Some(day);
        self.last_day = Some(day);
        let (fmt, text) = if new_day {
            ("datetime", t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        } else {
            ("time", t.format("%H:%M:%S").to_string())
        };
        html! {
            time datetime=(Esc(iso)) data-fmt=(fmt) title=(t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()) { (text) }
        }
    }
}

// ----- pieces -----------------------------------------------------------

fn fact(label: &str, value: Markup) -> Markup {
    html! { div { dt { (label) } dd { (value) } } "\n" }
}

fn full_time(iso: &str) -> Markup {
    html! {
        @match parse_time(iso) {
            Some(t) => {
                time datetime=(Esc(iso)) data-fmt="datetime" { (t.format("%Y-%m-%d %H:%M:%S UTC").to_string()) }
            }
            None if iso.is_empty() => { span class="muted" { "unknown" } }
            None => { (Esc(iso)) }
        }
    }
}

/// Text shown as is, line breaks kept by the style sheet.
pub(super) fn plain(text: &str) -> Markup {
    html! { div class="plain" { (Esc(text)) } "\n" }
}

/// The images among `blocks`, side by side (nothing when there are none).
pub(super) fn images(blocks: &[ContentBlock], class: &str) -> Markup {
    let images: Vec<&ImageContent> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    html! {
        @if !images.is_empty() {
            div class="images" { @for img in images { (image(img, class)) } }
            "\n"
        }
    }
}

fn image(img: &ImageContent, class: &str) -> Markup {
    html! {
        @match data_uri(img) {
            Some(uri) => { img class=(class) src=(uri) alt={ "image (" (Esc(&img.mime_type)) ")" }; }
            None => { span class="muted small" { "[image of unsupported type " (Esc(&img.mime_type)) "]" } }
        }
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

fn tokens_before(tokens: u64) -> Markup {
    html! { span class="muted" { "context of " (group_digits(tokens)) " tokens summarized" } }
}

/// ` · in 1,234 · out 56 · cache 10/0 · $0.0012` (nothing for zero usage).
fn usage_meta(u: &Usage) -> Markup {
    let used = u.input + u.output + u.cache_read + u.cache_write != 0 || u.cost.total != 0.0;
    let cost = if u.cost.total != 0.0 {
        u.cost.total
    } else {
        u.cost.input + u.cost.output + u.cost.cache_read + u.cost.cache_write
    };
    html! {
        @if used {
            span class="usage" {
                "in " (group_digits(u.input)) " · out " (group_digits(u.output))
                @if u.cache_read + u.cache_write > 0 {
                    " · cache r " (group_digits(u.cache_read)) " / w " (group_digits(u.cache_write))
                }
                @if cost != 0.0 { " · " (format_cost(cost)) }
            }
        }
    }
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
