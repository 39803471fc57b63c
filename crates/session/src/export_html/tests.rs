//! Tests of the HTML export: every entry kind, escaping, self-containment,
//! totals, output paths and errors; `writes_fixture` leaves a sample page
//! for `tests/browser/export_html.sh`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::*;
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, ContentBlock, Cost, ImageContent, StopReason,
    ThinkingContent, ToolCall, ToolResultMessage, Usage, UserContent,
};
use crate::session::entry::{KnownEntry, MessageEntry, StoredMessage};

const PNG_B64: &str = include_str!("testdata/sample.png.b64");

fn png() -> ImageContent {
    ImageContent { data: PNG_B64.trim().to_string(), mime_type: "image/png".into() }
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64, cost: f64) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: None,
        total_tokens: input + output + cache_read + cache_write,
        cost: Cost { total: cost, ..Cost::default() },
        extra: Map::new(),
    }
}

fn assistant_with(content: Vec<ContentBlock>, model: &str, u: Usage, stop: StopReason) -> AgentMessage {
    let (provider, model) = model.split_once('/').unwrap_or(("", model));
    AgentMessage::Assistant(AssistantMessage {
        content,
        api: "anthropic-messages".into(),
        provider: provider.into(),
        model: model.into(),
        usage: u,
        stop_reason: stop,
        timestamp: 1,
        response_id: None,
        error_message: (stop == StopReason::Error).then(|| "overloaded_error: try again later".to_string()),
        raw_stop_reason: None,
        duration_ms: None,
        thinking_level: None,
        extra: Map::new(),
    })
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::text(t)
}

fn thinking(t: &str) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent { thinking: t.into(), thinking_signature: None, redacted: false })
}

fn call(id: &str, name: &str, args: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        thought_signature: None,
        arguments_error: None,
    })
}

fn result(id: &str, name: &str, content: Vec<ContentBlock>, is_error: bool, details: Option<Value>) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content,
        details,
        usage: None,
        is_error,
        duration_ms: None,
        timestamp: 2,
        nested_calls: None,
        extra: Map::new(),
    })
}

fn bash(command: &str, output: &str, exit_code: Option<i32>, truncated: bool) -> AgentMessage {
    AgentMessage::BashExecution(BashExecutionMessage {
        command: command.into(),
        output: output.into(),
        exit_code,
        cancelled: exit_code.is_none(),
        truncated,
        full_output_path: truncated.then(|| "/tmp/pi-bash-0123456789abcdef.log".to_string()),
        exclude_from_context: false,
        timestamp: 3,
        extra: Map::new(),
    })
}

const SONNET: &str = "anthropic/claude-sonnet-4-5";

/// A persisted session holding every kind of entry the page shows, with an
/// abandoned branch (`approach A`) and a compaction.
fn rich_session(dir: &Path) -> Session {
    let mut s = Session::create(dir.join("sessions"), "/home/dev/parser", None).unwrap();
    s.append_model_change("anthropic", "claude-sonnet-4-5").unwrap();
    s.append_thinking_level_change("medium").unwrap();
    s.append_message(AgentMessage::user(
        "Why does `cargo test` fail in parser.rs?\nThe screenshot of the failure is attached.",
        &[png()],
    ))
    .unwrap();
    s.append_message(assistant_with(
        vec![
            thinking("The failure is probably the off-by-one in `parse_line`. Run the tests first."),
            text("Let me run the failing test and read the parser."),
            call("call_bash_1", "bash", json!({"command": "cargo test -p parser 2>&1 | tail -n 5"})),
            call("call_read_1", "read", json!({"path": "src/parser.rs", "offset": 40, "limit": 6})),
        ],
        SONNET,
        usage(1200, 180, 0, 1100, 0.0123),
        StopReason::ToolUse,
    ))
    .unwrap();
    s.append_message(result(
        "call_bash_1",
        "bash",
        vec![text("test tests::parses_last_line ... FAILED\n\nassertion `left == right` failed\n  left: 2\n right: 3")],
        false,
        None,
    ))
    .unwrap();
    s.append_message(result(
        "call_read_1",
        "read",
        vec![text("40\tfn parse_line(input: &str) -> usize {\n41\t    input.lines().count() - 1\n42\t}")],
        false,
        None,
    ))
    .unwrap();
    s.append_message(assistant_with(
        vec![
            text("The **bug**: `parse_line` subtracts one.\n\n```rust\ninput.lines().count()\n```"),
            call(
                "call_edit_1",
                "edit",
                json!({"path": "src/parser.rs", "edits": [{"oldText": "count() - 1", "newText": "count()"}]}),
            ),
            call("call_write_1", "write", json!({"path": "/root/notes.md", "content": "# Notes\n"})),
        ],
        SONNET,
        usage(1500, 240, 1100, 0, 0.0081),
        StopReason::ToolUse,
    ))
    .unwrap();
    let diff = " 40 fn parse_line(input: &str) -> usize {\n-41     input.lines().count() - 1\n+41     input.lines().count()\n 42 }";
    s.append_message(result(
        "call_edit_1",
        "edit",
        vec![text("Successfully replaced 1 block in src/parser.rs.")],
        false,
        Some(json!({"diff": diff, "firstChangedLine": 41})),
    ))
    .unwrap();
    s.append_message(result(
        "call_write_1",
        "write",
        vec![text("EACCES: permission denied, open '/root/notes.md'")],
        true,
        None,
    ))
    .unwrap();
    s.append_message(assistant_with(
        vec![text(
            "Fixed. Summary:\n\n1. `parse_line` no longer drops the last line\n2. Notes could not be written (permission denied)\n\n| test | before | after |\n|---|---|---|\n| parses_last_line | fail | pass |",
        )],
        SONNET,
        usage(1800, 95, 1100, 0, 0.0049),
        StopReason::Stop,
    ))
    .unwrap();
    s.append_message(bash("git status --short", " M src/parser.rs", Some(0), false)).unwrap();
    s.append_message(bash("sleep 100", "", None, false)).unwrap();
    s.append_message(bash("seq 1 100000", "99999\n100000", Some(1), true)).unwrap();
    s.append_compaction(
        "## Goal\nFix the failing parser test.\n\n## Done\n- removed the off-by-one in `parse_line`",
        None,
        45_210,
        None,
        Some(usage(9000, 600, 0, 0, 0.03)),
    )
    .unwrap();
    let pivot = s
        .append_message(AgentMessage::user("Now check escaping: <script>alert('x')</script> & \"quotes\"", &[]))
        .unwrap();
    // An abandoned branch whose usage still counts in the totals.
    s.append_message(AgentMessage::user("Try approach A (abandoned)", &[])).unwrap();
    s.append_message(assistant_with(
        vec![text("Approach A reply")],
        SONNET,
        usage(100, 10, 0, 0, 0.001),
        StopReason::Stop,
    ))
    .unwrap();
    s.branch_with_summary(Some(&pivot), "Approach A was **abandoned**: it broke `parse_block`.", None, None).unwrap();
    s.append_message(assistant_with(
        vec![text("Raw HTML stays text: <b>not bold</b> <img src=x onerror=alert(1)> and 1 < 2 && 3 > 2.")],
        SONNET,
        usage(2000, 60, 1500, 0, 0.002),
        StopReason::Stop,
    ))
    .unwrap();
    s.append_custom_message("reminder", UserContent::Text("Remember to run `cargo fmt`.".into()), true, None).unwrap();
    s.append_custom_message("telemetry", UserContent::Text("hidden bookkeeping".into()), false, None).unwrap();
    s.append_model_change("openai", "gpt-5").unwrap();
    s.append_message(AgentMessage::user("One more thing?", &[])).unwrap();
    s.append_message(assistant_with(vec![], "openai/gpt-5", usage(0, 0, 0, 0, 0.0), StopReason::Error)).unwrap();
    s.append_session_info("Fix the parser test & <friends>").unwrap();
    s
}

pub(super) fn fixture_options() -> ExportOptions {
    ExportOptions {
        system_prompt: Some("You are an expert coding assistant.\nBe concise.".into()),
        tools: vec![
            ExportTool { name: "read".into(), description: "Read the contents of a file.".into() },
            ExportTool { name: "bash".into(), description: "Execute a bash command.".into() },
        ],
    }
}

fn render_rich() -> (tempfile::TempDir, Session, String) {
    let dir = tempfile::tempdir().unwrap();
    let s = rich_session(dir.path());
    let html = render_session_html(&s, &fixture_options());
    (dir, s, html)
}

#[test]
fn renders_every_kind_of_entry() {
    let (_dir, s, html) = render_rich();
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(html.contains("<meta charset=\"utf-8\">"));
    // header
    assert!(html.contains(&format!("<code>{}</code>", s.session_id())));
    assert!(html.contains("<code>/home/dev/parser</code>"));
    assert!(html.contains("<code>anthropic/claude-sonnet-4-5</code> <code>openai/gpt-5</code>"), "models");
    // user text and image
    assert!(html.contains("Why does `cargo test` fail in parser.rs?\nThe screenshot"));
    assert!(html.contains(&format!("src=\"data:image/png;base64,{}\"", PNG_B64.trim())));
    // assistant: thinking folded, markdown rendered, tools with pretty JSON args and results
    assert!(html.contains("<details class=\"thinking\"><summary>Thinking</summary>"));
    assert!(html.contains("off-by-one in `parse_line`"));
    assert!(html.contains("The <strong>bug</strong>: <code>parse_line</code> subtracts one."));
    assert!(html.contains("<pre><code class=\"language-rust\">"));
    assert!(html.contains("<table>"));
    assert!(html.contains("<pre class=\"cmd\">$ cargo test -p parser 2&gt;&amp;1 | tail -n 5</pre>"));
    assert!(html.contains("left: 2\n right: 3"));
    assert!(html.contains("<code class=\"tool-summary\">src/parser.rs:40-45</code>"));
    assert!(html.contains("{\n  &quot;path&quot;: &quot;src/parser.rs&quot;,\n  &quot;edits&quot;: ["), "pretty JSON");
    assert!(html.contains("<span class=\"del\">-41     input.lines().count() - 1</span>"));
    assert!(html.contains("<span class=\"add\">+41     input.lines().count()</span>"));
    assert!(html.contains("<section class=\"tool error\" id=\"tool-call_write_1\">"));
    assert!(html.contains("<span class=\"badge error\">error</span>"));
    assert!(html.contains("<pre class=\"output error\">EACCES: permission denied"));
    // tool results are shown under their call, not again on their own
    assert_eq!(html.matches("right: 3").count(), 1);
    assert!(!html.contains("class=\"msg tool-result-msg\""));
    // RPC bash executions
    assert!(html.contains("<pre class=\"cmd\">$ git status --short</pre>"));
    assert!(html.contains("<span class=\"badge ok\">exit 0</span>"));
    assert!(html.contains("<span class=\"badge warn\">cancelled</span>"));
    assert!(html.contains("<span class=\"badge error\">exit 1</span><span class=\"badge warn\">truncated</span>"));
    assert!(html.contains("/tmp/pi-bash-0123456789abcdef.log"));
    // compaction, branch summary, custom messages, events, errors
    assert!(html.contains("context of 45,210 tokens summarized"));
    assert!(html.contains("<h2>Goal</h2>"));
    assert!(html.contains("Approach A was <strong>abandoned</strong>"));
    assert!(html.contains("Remember to run <code>cargo fmt</code>."));
    assert!(html.contains("class=\"msg custom hidden-msg\""));
    assert!(html.contains("hidden in the terminal"));
    assert!(html.contains("Model switched to <code>openai/gpt-5</code>"));
    assert!(html.contains("Thinking level set to <code>medium</code>"));
    assert!(html.contains("Error: overloaded_error: try again later"));
    // preamble from the options
    assert!(html.contains("You are an expert coding assistant.\nBe concise."));
    assert!(html.contains("<dt><code>read</code></dt><dd>Read the contents of a file.</dd>"));
    // every entry carries its time
    assert!(html.matches("<time datetime=").count() >= 20);
}

#[test]
fn shows_only_the_active_branch_but_totals_cover_the_session() {
    let (_dir, s, html) = render_rich();
    assert!(!html.contains("approach A (abandoned)"));
    assert!(!html.contains("Approach A reply"));
    let shown = s.branch().len();
    assert!(html.contains(&format!("the active branch ({shown} of {} entries)", s.entry_count())));
    // input 1200+1500+1800+9000(compaction)+100(abandoned)+2000 = 15600
    assert!(html.contains("<span class=\"total-label\">Input tokens</span><span class=\"total-value\">15,600</span>"));
    assert!(html.contains("<span class=\"total-label\">Output tokens</span><span class=\"total-value\">1,185</span>"));
    assert!(html.contains("<span class=\"total-label\">Cache read</span><span class=\"total-value\">3,700</span>"));
    assert!(html.contains("<span class=\"total-label\">Cache write</span><span class=\"total-value\">1,100</span>"));
    // 0.0123 + 0.0081 + 0.0049 + 0.03 + 0.001 + 0.002 = 0.0583
    assert!(html.contains("<span class=\"total-value\">$0.0583</span>"));
    assert!(html.contains(
        "4 user, 6 assistant, 4 tool results, 3 shell commands, 2 extension messages, 1 compaction, 1 branch summary"
    ));
}

#[test]
fn escapes_everything_from_the_session() {
    let (_dir, _s, html) = render_rich();
    // Our own script is the only one; user and model text come out as text.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(
        html.contains("Now check escaping: &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;")
    );
    assert!(!html.contains("<b>not bold</b>"));
    assert!(html.contains("&lt;b&gt;not bold&lt;/b&gt;"));
    assert!(!html.contains("<img src=x"));
    assert!(html.contains("1 &lt; 2 &amp;&amp; 3 &gt; 2"));
    assert!(html.contains("<title>Fix the parser test &amp; &lt;friends&gt; · pi session</title>"));
    assert!(html.contains("<h1>Fix the parser test &amp; &lt;friends&gt;</h1>"));
}

/// Markup in tool ids, names, arguments, results, image types and extension message types.
fn hostile_session(dir: &Path) -> Session {
    let mut s = Session::create(dir, "/w", None).unwrap();
    s.append_message(AgentMessage::user("hi", &[])).unwrap();
    let evil = "\"><script>alert(1)</script>";
    s.append_message(assistant_with(
        vec![call(evil, evil, json!({"k": evil}))],
        SONNET,
        Usage::default(),
        StopReason::ToolUse,
    ))
    .unwrap();
    s.append_message(result(evil, evil, vec![text(evil)], false, None)).unwrap();
    let bad_image = ImageContent { data: "AAAA\" onerror=\"alert(1)".into(), mime_type: "text/html".into() };
    s.append_message(AgentMessage::user("img", &[bad_image])).unwrap();
    s.append_custom_message(evil, UserContent::Text(evil.into()), true, None).unwrap();
    s
}

#[test]
fn hostile_tool_names_and_ids_stay_inert() {
    let dir = tempfile::tempdir().unwrap();
    let html = render_session_html(&hostile_session(dir.path()), &ExportOptions::default());
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(!html.contains("onerror=\""));
    assert!(html.contains("[image of unsupported type text/html]"));
}

#[test]
fn page_is_self_contained() {
    let (_dir, _s, html) = render_rich();
    for needle in ["http://", "https://", "src=\"//", "href=\"//", "url(", "@import"] {
        assert!(!html.contains(needle), "page must not reference {needle}");
    }
    // Every src is a data: URI.
    for (i, _) in html.match_indices("src=\"") {
        assert!(html[i + 5..].starts_with("data:image/"), "{}", &html[i..i + 40]);
    }
    assert!(html.contains("default-src 'none'; img-src data:;"));
    // The whole page is readable without the script: the script only localizes times and folds.
    assert!(html.contains("<nav id=\"toolbar\" class=\"toolbar\" hidden>"));
}

fn links_session(dir: &Path) -> Session {
    let mut s = Session::create(dir, "/w", None).unwrap();
    s.append_message(AgentMessage::user("links?", &[])).unwrap();
    s.append_message(assistant_with(
        vec![text(
            "See [docs](https://example.org/docs) ![chart](https://example.org/c.png) [bad](javascript:alert(1))",
        )],
        SONNET,
        Usage::default(),
        StopReason::Stop,
    ))
    .unwrap();
    s
}

#[test]
fn markdown_links_stay_links_and_images_are_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let html = render_session_html(&links_session(dir.path()), &ExportOptions::default());
    assert!(html.contains("<a href=\"https://example.org/docs\">docs</a>"));
    assert!(html.contains("<a href=\"https://example.org/c.png\">[image: chart]</a>"));
    assert!(!html.contains("<img src=\"https"));
    assert!(!html.contains("javascript:"));
}

/// A call without result, a result without call, a pi 1.6 system message and an unknown entry type.
fn odd_entries_session(dir: &Path) -> Session {
    let mut s = Session::create(dir, "/w", None).unwrap();
    s.append_entry(|base| {
        KnownEntry::Message(MessageEntry {
            base,
            message: StoredMessage::Other(json!({"role": "system", "content": "SYSTEM RULES", "sections": {"ctx": "PROJECT CONTEXT"}, "timestamp": 1})),
            extra: Map::new(),
        })
    })
    .unwrap();
    s.append_message(AgentMessage::user("go", &[])).unwrap();
    s.append_message(assistant_with(
        vec![call("c1", "custom_tool", json!({"q": 1}))],
        SONNET,
        Usage::default(),
        StopReason::Aborted,
    ))
    .unwrap();
    s.append_message(result("c9", "lost_tool", vec![text("orphan output")], true, None)).unwrap();
    s.append_raw("usage", Map::new()).unwrap();
    s
}

#[test]
fn pending_calls_orphan_results_system_and_unknown_entries() {
    let dir = tempfile::tempdir().unwrap();
    let html = render_session_html(&odd_entries_session(dir.path()), &ExportOptions::default());
    assert!(html.contains("<section class=\"tool pending\" id=\"tool-c1\">"));
    assert!(html.contains("<span class=\"badge warn\">no result</span>"));
    assert!(
        html.contains("<details class=\"args\" open><summary>Arguments</summary>"),
        "unknown tools show their args"
    );
    assert!(html.contains("<div class=\"notice warn\">Aborted</div>"));
    assert!(html.contains("class=\"msg tool-result-msg\""));
    assert!(html.contains("<code>lost_tool</code> · error"));
    assert!(html.contains("orphan output"));
    assert!(html.contains("SYSTEM RULES\n\nPROJECT CONTEXT"));
    assert!(html.contains("<title>pi session "));
}

fn skill_session(dir: &Path) -> Session {
    let mut s = Session::create(dir, "/w", None).unwrap();
    let msg = "<skill name=\"pdf\" location=\"/skills/pdf/SKILL.md\">\n# PDF skill\nUse pdftotext.\n</skill>\n\nSummarize report.pdf";
    s.append_message(AgentMessage::user(msg, &[])).unwrap();
    s
}

#[test]
fn skill_invocations_fold_away() {
    let dir = tempfile::tempdir().unwrap();
    let html = render_session_html(&skill_session(dir.path()), &ExportOptions::default());
    assert!(html.contains("<details class=\"skill\"><summary>Skill <code>pdf</code>"));
    assert!(html.contains("<h1>PDF skill</h1>"));
    assert!(html.contains("<div class=\"plain\">Summarize report.pdf</div>"));
}

/// `[tag]` followed by every character HTML escaping is about.
fn marked(tag: &str) -> String {
    format!("[{tag}]'\"<&>")
}

/// How [`marked`] text must read in the page outside markdown.
fn marked_escaped(tag: &str) -> String {
    format!("[{tag}]&#39;&quot;&lt;&amp;&gt;")
}

/// Every field the page shows, each holding quotes, apostrophes, `<`, `&` and `>`.
fn every_field_session(dir: &Path) -> Session {
    let m = |tag: &str| marked(tag);
    let mut s = Session::create(dir, format!("/{}", m("CWD")), Some(m("PARENT"))).unwrap();
    s.append_entry(|base| {
        KnownEntry::Message(MessageEntry {
            base,
            message: StoredMessage::Other(
                json!({"role": "system", "content": m("SYSTEMMSG"), "sections": {"s": m("SECTION")}, "timestamp": 1}),
            ),
            extra: Map::new(),
        })
    })
    .unwrap();
    s.append_model_change(&m("PROVIDER"), &m("MODEL")).unwrap();
    s.append_thinking_level_change(&m("LEVEL")).unwrap();
    s.append_message(AgentMessage::user(&m("USER"), &[])).unwrap();
    let skill = format!(
        "<skill name=\"{}\" location=\"{}\">\n{}\n</skill>\n\nand {}",
        m("SKILLNAME").replace('"', ""),
        m("SKILLLOC").replace('"', ""),
        m("SKILLMD"),
        m("USERAFTER")
    );
    s.append_message(AgentMessage::user(&skill, &[])).unwrap();
    let model = format!("{}/{}", m("AMODELP").replace('/', ""), m("AMODEL"));
    s.append_message(assistant_with(
        vec![
            thinking(&m("THINK")),
            text(&m("ANSWERMD")),
            call(&m("TOOLID"), "bash", json!({"command": m("CMD")})),
            call("c_edit", "edit", json!({"path": m("ARG")})),
            call("c_grep", "grep", json!({"pattern": m("PATTERN"), "path": m("GREPPATH")})),
            call("c_other", &m("TOOLNAME"), json!({m("KEY"): m("VALUE")})),
        ],
        &model,
        usage(1, 2, 3, 4, 0.5),
        StopReason::ToolUse,
    ))
    .unwrap();
    s.append_message(result(&m("TOOLID"), "bash", vec![text(&m("RESULT"))], false, None)).unwrap();
    let diff = format!("+{}\n-{}\n {}", m("DIFF"), m("DIFF"), m("DIFF"));
    s.append_message(result("c_edit", "edit", vec![text(&m("NOTE"))], false, Some(json!({"diff": diff})))).unwrap();
    s.append_message(result("c_grep", "grep", vec![text(&m("GREPOUT"))], true, None)).unwrap();
    s.append_message(result("c_lost", &m("ORPHAN"), vec![text(&m("ORPHANOUT"))], false, None)).unwrap();
    let mut failed = assistant_with(vec![], &model, Usage::default(), StopReason::Error);
    if let AgentMessage::Assistant(a) = &mut failed {
        a.error_message = Some(m("ERROR"));
    }
    s.append_message(failed).unwrap();
    let mut shell = bash(&m("SHELLCMD"), &m("SHELLOUT"), Some(2), true);
    if let AgentMessage::BashExecution(b) = &mut shell {
        b.full_output_path = Some(m("SAVED"));
    }
    s.append_message(shell).unwrap();
    let odd_image = ImageContent { data: "AAAA".into(), mime_type: m("MIME") };
    s.append_message(AgentMessage::user(&m("WITHIMAGE"), &[odd_image])).unwrap();
    s.append_compaction(&m("COMPACTMD"), None, 10, None, None).unwrap();
    s.append_custom_message(&m("CUSTOMTYPE"), UserContent::Text(m("CUSTOMMD")), false, None).unwrap();
    s.append_entry(|base| {
        KnownEntry::Message(MessageEntry {
            base,
            message: StoredMessage::Other(json!({"role": m("ROLE"), "content": m("RAW"), "timestamp": 1})),
            extra: Map::new(),
        })
    })
    .unwrap();
    s.append_session_info(&m("NAME")).unwrap();
    s
}

pub(super) fn every_field_options() -> ExportOptions {
    ExportOptions {
        system_prompt: Some(marked("PROMPT")),
        tools: vec![ExportTool { name: marked("TOOLLIST"), description: marked("TOOLDESC") }],
    }
}

#[test]
fn every_text_field_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let html = render_session_html(&every_field_session(dir.path()), &every_field_options());
    // Shown as text: every special character escaped, the apostrophe as `&#39;`.
    let text_fields = [
        "NAME",
        "CWD",
        "PARENT",
        "PROVIDER",
        "MODEL",
        "LEVEL",
        "USER",
        "USERAFTER",
        "AMODELP",
        "AMODEL",
        "THINK",
        "TOOLID",
        "TOOLNAME",
        "CMD",
        "ARG",
        "PATTERN",
        "GREPPATH",
        "RESULT",
        "DIFF",
        "NOTE",
        "GREPOUT",
        "ORPHAN",
        "ORPHANOUT",
        "ERROR",
        "SHELLCMD",
        "SHELLOUT",
        "SAVED",
        "WITHIMAGE",
        "MIME",
        "CUSTOMTYPE",
        "ROLE",
        "SYSTEMMSG",
        "SECTION",
        "PROMPT",
        "TOOLLIST",
        "TOOLDESC",
    ];
    for tag in text_fields {
        assert!(html.contains(&marked_escaped(tag)), "{tag} is not escaped as expected");
    }
    // Shown inside pretty JSON, where the quote is already `\"`.
    for tag in ["KEY", "VALUE", "RAW"] {
        assert!(html.contains(&format!("[{tag}]&#39;\\&quot;&lt;&amp;&gt;")), "{tag} in JSON");
    }
    // Skill names and locations cannot hold a quote.
    for tag in ["SKILLNAME", "SKILLLOC"] {
        assert!(html.contains(&format!("[{tag}]&#39;&lt;&amp;&gt;")), "{tag}");
    }
    // Markdown fields go through the markdown renderer's own escaping, which keeps quotes in text.
    for tag in ["SKILLMD", "ANSWERMD", "COMPACTMD", "CUSTOMMD"] {
        assert!(html.contains(&format!("[{tag}]'\"&lt;&amp;&gt;")), "{tag} in markdown");
    }
    assert!(!html.contains("\"<&>"), "nothing unescaped anywhere");
}

/// Rewrites the golden inputs `testdata/golden/*.jsonl` from the builders
/// above (new ids and times: every golden page then changes too, so run it
/// only with the renderer at a known-good commit and `UPDATE_GOLDEN=1` after).
#[test]
#[ignore = "rewrites testdata/golden/*.jsonl; run by hand"]
fn capture_golden_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = [
        ("rich", rich_session(&dir.path().join("1"))),
        ("hostile", hostile_session(&dir.path().join("2"))),
        ("links", links_session(&dir.path().join("3"))),
        ("odd-entries", odd_entries_session(&dir.path().join("4"))),
        ("skill", skill_session(&dir.path().join("5"))),
        ("saved", saved_session(&dir.path().join("6"))),
        ("every-field", every_field_session(&dir.path().join("7"))),
        ("empty", Session::in_memory("/w")),
    ];
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/export_html/testdata/golden");
    std::fs::create_dir_all(&golden).unwrap();
    for (name, session) in sessions {
        std::fs::write(golden.join(format!("{name}.jsonl")), session.file_text().unwrap()).unwrap();
    }
}

#[test]
fn empty_session_says_so() {
    let s = Session::in_memory("/w");
    let html = render_session_html(&s, &ExportOptions::default());
    assert!(html.contains("This session has no messages yet."));
    assert!(html.contains(&format!("<title>pi session {}</title>", s.session_id())));
    assert!(html.ends_with("</html>\n"));
}

// ----- writing ------------------------------------------------------------

fn saved_session(dir: &Path) -> Session {
    let mut s = Session::create(dir.join("sessions"), dir, None).unwrap();
    s.append_message(AgentMessage::user("hello export", &[])).unwrap();
    s
}

#[test]
fn default_path_is_relative_and_lands_in_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let s = saved_session(dir.path());
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let path = export_session_html(&s, None, &cwd, &ExportOptions::default()).unwrap();
    let stem = s.file_path().unwrap().file_stem().unwrap().to_string_lossy().into_owned();
    assert_eq!(path, PathBuf::from(format!("pi-session-{stem}.html")));
    assert!(path.is_relative());
    let written = std::fs::read_to_string(cwd.join(&path)).unwrap();
    assert!(written.contains("hello export"));
    // An empty outputPath means the default too, as in pi.
    assert_eq!(export_session_html(&s, Some(""), &cwd, &ExportOptions::default()).unwrap(), path);
    // No temporary files are left behind.
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 1);
}

#[test]
fn given_paths_are_returned_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let s = saved_session(dir.path());
    let rel = export_session_html(&s, Some("out/page.html"), dir.path(), &ExportOptions::default());
    assert!(matches!(&rel, Err(ExportError::Write { .. })), "out/ does not exist yet");
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let rel = export_session_html(&s, Some("out/page.html"), dir.path(), &ExportOptions::default()).unwrap();
    assert_eq!(rel, PathBuf::from("out/page.html"));
    assert!(dir.path().join("out/page.html").is_file());

    let abs = dir.path().join("abs.html");
    let got = export_session_html(&s, abs.to_str(), Path::new("/nonexistent"), &ExportOptions::default()).unwrap();
    assert_eq!(got, abs);
    // Overwriting an existing export replaces it whole.
    std::fs::write(&abs, "old contents that are longer than nothing").unwrap();
    export_session_html(&s, abs.to_str(), dir.path(), &ExportOptions::default()).unwrap();
    assert!(std::fs::read_to_string(&abs).unwrap().starts_with("<!DOCTYPE html>"));

    let url = format!("file://{}", dir.path().join("my%20page.html").display());
    let got = export_session_html(&s, Some(&url), dir.path(), &ExportOptions::default()).unwrap();
    assert_eq!(got, dir.path().join("my page.html"));
    assert!(got.is_file());
}

#[test]
fn errors_read_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExportOptions::default();

    let mem = Session::in_memory(dir.path());
    let err = export_session_html(&mem, None, dir.path(), &opts).unwrap_err();
    assert_eq!(err.to_string(), "Cannot export in-memory session to HTML");

    let unsaved = Session::create(dir.path().join("s2"), dir.path(), None).unwrap();
    let err = export_session_html(&unsaved, None, dir.path(), &opts).unwrap_err();
    assert_eq!(err.to_string(), "Nothing to export yet - start a conversation first");

    let s = saved_session(dir.path());
    let err = export_session_html(&s, Some("/nonexistent-dir/x.html"), dir.path(), &opts).unwrap_err();
    assert_eq!(err.to_string(), "ENOENT: no such file or directory, open '/nonexistent-dir/x.html'");
    let core: crate::error::CoreError = err.into();
    assert_eq!(core.kind, crate::error::ErrorKind::InvalidParams);
    assert_eq!(core.field.as_deref(), Some("outputPath"));

    let err = export_session_html(&s, Some("missing/x.html"), dir.path(), &opts).unwrap_err();
    assert_eq!(err.to_string(), "ENOENT: no such file or directory, open 'missing/x.html'");

    std::fs::create_dir(dir.path().join("adir")).unwrap();
    let err = export_session_html(&s, Some("adir"), dir.path(), &opts).unwrap_err();
    assert_eq!(err.to_string(), "EISDIR: illegal operation on a directory, open 'adir'");
}

#[test]
fn default_names_follow_node_basename() {
    assert_eq!(default_output_name(Path::new("/s/2025_abc.jsonl")), PathBuf::from("pi-session-2025_abc.html"));
    assert_eq!(default_output_name(Path::new("/s/plain")), PathBuf::from("pi-session-plain.html"));
    assert_eq!(default_output_name(Path::new("/s/.jsonl")), PathBuf::from("pi-session-.jsonl.html"));
    assert_eq!(default_output_name(Path::new("/s/a.jsonl.bak")), PathBuf::from("pi-session-a.jsonl.bak.html"));
}

#[test]
fn output_paths_are_normalized_like_pi() {
    if let Some(home) = std::env::var_os("HOME") {
        assert_eq!(normalize_output_path("~"), PathBuf::from(&home));
        assert_eq!(normalize_output_path("~/x.html"), PathBuf::from(&home).join("x.html"));
    }
    assert_eq!(normalize_output_path("~x.html"), PathBuf::from("~x.html"));
    assert_eq!(normalize_output_path("file:///tmp/a%20b.html"), PathBuf::from("/tmp/a b.html"));
    assert_eq!(normalize_output_path("rel/a.html"), PathBuf::from("rel/a.html"));
}

/// Writes the sample page `tests/browser/export_html.sh` screenshots:
/// `$EXPORT_FIXTURE`, else `<crate>/target/export-fixture.html`.
#[test]
fn writes_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let s = rich_session(dir.path());
    let target = match std::env::var_os("EXPORT_FIXTURE") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target").join("export-fixture.html"),
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let written = export_session_html(&s, target.to_str(), dir.path(), &fixture_options()).unwrap();
    assert_eq!(written, target);
    let html = std::fs::read_to_string(&target).unwrap();
    assert!(html.contains("parses_last_line"));
}

#[test]
fn nested_calls_are_listed_under_the_calling_tool() {
    use crate::message::{NestedCallStatus, NestedToolCallRecord, NestedToolCalls};
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/w", None).unwrap();
    s.append_message(AgentMessage::user("go", &[])).unwrap();
    let calls = vec![call("c1", "codemode", json!({"code": "await tools.bash({command: 'ls'})"}))];
    s.append_message(assistant_with(calls, SONNET, Usage::default(), StopReason::ToolUse)).unwrap();
    let record = |id: &str, name: &str, status, arguments, error: Option<&str>| NestedToolCallRecord {
        id: id.into(),
        name: name.into(),
        status,
        arguments,
        arguments_bytes: None,
        duration_ms: Some(3),
        error: error.map(str::to_string),
    };
    let AgentMessage::ToolResult(mut r) = result("c1", "codemode", vec![text("done")], false, None) else {
        unreachable!("a tool result")
    };
    r.nested_calls = Some(NestedToolCalls {
        calls: vec![
            record("c1/1", "bash", NestedCallStatus::Ok, Some(json!({"command": "ls"})), None),
            record(
                "c1/2",
                "<nope>",
                NestedCallStatus::Error,
                Some(json!({})),
                Some("Tool <nope> not found\nsecond line"),
            ),
        ],
        complete: false,
    });
    s.append_message(AgentMessage::ToolResult(r)).unwrap();
    let html = render_session_html(&s, &ExportOptions::default());
    assert!(html.contains("<summary>Nested calls: 2 (incomplete record)</summary>"), "{html}");
    assert!(html.contains("✓ bash {&quot;command&quot;:&quot;ls&quot;} 3ms\n✗ &lt;nope&gt; {} 3ms\n    Tool &lt;nope&gt; not found\n    second line"));
}
