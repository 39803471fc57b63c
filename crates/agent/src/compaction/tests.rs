//! Unit tests of compaction: estimates, serialization, prompts, cut points,
//! preparation, and the summarisation calls against a scripted provider.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::estimate::{estimate_system_value, estimate_tokens, js_len, should_compact};
use super::prepare::{NotCompactable, prepare};
use super::projection::Projection;
use super::prompt::{
    SUMMARIZATION_PROMPT, TURN_PREFIX_SUMMARIZATION_PROMPT, format_file_operations, history_prompt,
    serialize_conversation, truncate_for_summary, turn_prefix_prompt, update_summarization_prompt,
};
use super::summarize::{Summarizer, SummaryError, summarize};
use crate::config::settings::RetrySettings;
use crate::error::ErrorKind;
use crate::event::{AgentEvent, CompactionReason, SummarizationSource};
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, ContentBlock, ImageContent, StopReason, ThinkingContent,
    ToolCall, ToolResultMessage, Usage,
};
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::{BlockKind, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream};
use crate::session::Session;

fn user(text: &str) -> AgentMessage {
    AgentMessage::user(text, &[])
}

fn assistant_blocks(content: Vec<ContentBlock>, usage: Usage) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "fake".into(),
        model: "fake-model".into(),
        usage,
        stop_reason: StopReason::Stop,
        timestamp: 1,
        response_id: None,
        error_message: None,
        raw_stop_reason: None,
        duration_ms: None,
        thinking_level: None,
        extra: Map::new(),
    })
}

fn assistant(text: &str) -> AgentMessage {
    assistant_blocks(vec![ContentBlock::text(text)], Usage::default())
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

fn tool_result(id: &str, name: &str, text: &str) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![ContentBlock::text(text)],
        details: None,
        usage: None,
        is_error: false,
        duration_ms: None,
        timestamp: 2,
        nested_calls: None,
        extra: Map::new(),
    })
}

/// `n` characters of filler.
fn chars(n: usize) -> String {
    "x".repeat(n)
}

fn session_with(messages: Vec<AgentMessage>) -> (Session, Vec<String>) {
    let mut s = Session::in_memory("/tmp");
    s.append_model_change("fake", "fake-model").unwrap();
    s.append_thinking_level_change("off").unwrap();
    let ids = messages.into_iter().map(|m| s.append_message(m).unwrap()).collect();
    (s, ids)
}

#[test]
fn estimates_count_utf16_units_and_images() {
    assert_eq!(js_len("héllo"), 5);
    assert_eq!(js_len("😀"), 2);
    assert_eq!(estimate_tokens(&user("abcde")), 2);
    let with_image = AgentMessage::user("ab", &[ImageContent { data: "zz".into(), mime_type: "image/png".into() }]);
    assert_eq!(estimate_tokens(&with_image), (2 + 4800u64).div_ceil(4));
    let a = assistant_blocks(
        vec![
            ContentBlock::text("1234"),
            ContentBlock::Thinking(ThinkingContent {
                thinking: "5678".into(),
                thinking_signature: None,
                redacted: false,
            }),
            call("c", "read", json!({"path": "a"})),
        ],
        Usage::default(),
    );
    // 4 + 4 + "read" (4) + {"path":"a"} (12)
    assert_eq!(estimate_tokens(&a), 6);
    let bash = AgentMessage::BashExecution(BashExecutionMessage {
        command: "ls".into(),
        output: "abcdef".into(),
        exit_code: Some(0),
        cancelled: false,
        truncated: false,
        full_output_path: None,
        exclude_from_context: false,
        timestamp: 0,
        extra: Map::new(),
    });
    assert_eq!(estimate_tokens(&bash), 2);
    let system = json!({"role": "system", "content": "", "sections": {"a": "1234", "b": "5678"}, "toolsAdded": []});
    assert_eq!(estimate_system_value(&system), 3); // 8 + "[]"
    assert!(should_compact(120_000, 128_000, 16_384));
    assert!(!should_compact(100_000, 128_000, 16_384));
    assert!(should_compact(1, 1000, 2000));
}

#[test]
fn conversation_serialization_matches_pi() {
    let messages = vec![
        user("Fix the bug"),
        assistant_blocks(
            vec![
                ContentBlock::Thinking(ThinkingContent {
                    thinking: "hidden".into(),
                    thinking_signature: None,
                    redacted: false,
                }),
                ContentBlock::text("Looking."),
                ContentBlock::text("Second block."),
                call("c1", "bash", json!({"command": "echo hi", "timeout": 5})),
                call("c2", "read", json!({"path": "src/a.rs"})),
            ],
            Usage::default(),
        ),
        tool_result("c1", "bash", "hi\n"),
        tool_result("c2", "read", ""),
        assistant_blocks(vec![call("c3", "ls", json!({}))], Usage::default()),
    ];
    assert_eq!(
        serialize_conversation(&messages),
        "[User]: Fix the bug\n\n[Assistant]: Looking.\nSecond block.\n\n\
         [Assistant tool calls]: bash(command=\"echo hi\", timeout=5); read(path=\"src/a.rs\")\n\n\
         [Tool result]: hi\n\n\n[Assistant tool calls]: ls()"
    );
}

#[test]
fn long_tool_results_are_cut_like_pi() {
    let text = chars(2005);
    assert_eq!(truncate_for_summary(&text, 2000), format!("{}\n\n[... 5 more characters truncated]", chars(2000)));
    // A surrogate pair straddling the cut is left out whole.
    let emoji = format!("{}😀", chars(1999));
    assert_eq!(truncate_for_summary(&emoji, 2000), format!("{}\n\n[... 1 more characters truncated]", chars(1999)));
}

#[test]
fn prompts_have_pi_structure() {
    let msgs = vec![user("hello")];
    let first = history_prompt(&msgs, None, Some("Focus on tests"));
    assert_eq!(
        first,
        format!(
            "<conversation>\n[User]: hello\n</conversation>\n\n{SUMMARIZATION_PROMPT}\n\nAdditional focus: Focus on tests"
        )
    );
    let update = history_prompt(&msgs, Some("OLD"), None);
    assert_eq!(
        update,
        format!(
            "<conversation>\n[User]: hello\n</conversation>\n\n<previous-summary>\nOLD\n</previous-summary>\n\n{}",
            update_summarization_prompt()
        )
    );
    assert!(update_summarization_prompt().starts_with("The messages above are NEW conversation messages"));
    let prefix = turn_prefix_prompt(&msgs, Some("x"));
    assert_eq!(
        prefix,
        format!(
            "# Conversation\n[User]: hello\n\n# Instructions\n{TURN_PREFIX_SUMMARIZATION_PROMPT}\n\nAdditional focus: x"
        )
    );
    assert_eq!(format_file_operations(&[], &[]), "");
    assert_eq!(
        format_file_operations(&["a".into()], &["b".into(), "c".into()]),
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\nc\n</modified-files>"
    );
}

#[test]
fn small_sessions_have_nothing_to_compact() {
    let (s, _) = session_with(vec![user("hi"), assistant("hello")]);
    let err = prepare(&Projection::of(&s), 20_000, 0).unwrap_err();
    assert_eq!(err, NotCompactable::TooSmall);
    assert_eq!(err.message(), "Nothing to compact (session too small)");
    let empty = Session::in_memory("/tmp");
    assert_eq!(prepare(&Projection::of(&empty), 20_000, 0).unwrap_err(), NotCompactable::TooSmall);
}

#[test]
fn the_cut_keeps_recent_turns_and_never_orphans_tool_results() {
    // Four turns of ~250 tokens each (1000 chars).
    let (s, ids) = session_with(vec![
        user(&chars(1000)),
        assistant(&chars(1000)),
        user(&chars(1000)),
        assistant_blocks(vec![call("c1", "read", json!({"path": "notes.md"}))], Usage::default()),
        tool_result("c1", "read", &chars(1000)),
        assistant(&chars(1000)),
        user(&chars(1000)),
        assistant(&chars(1000)),
    ]);
    // keep 600 tokens: walking back 250 (a) + 250 (u) + 250 (a) >= 600 at ids[5]: an assistant.
    let prep = prepare(&Projection::of(&s), 600, 0).unwrap();
    assert_eq!(prep.first_kept_entry_id, ids[5]);
    assert!(prep.is_split_turn, "cut inside the second turn");
    assert_eq!(prep.messages_to_summarize.len(), 2, "first turn");
    assert_eq!(prep.turn_prefix_messages.len(), 3, "user, tool call, tool result");
    assert_eq!(prep.file_ops.lists(), (vec!["notes.md".to_string()], Vec::new()));
    // keep 260 tokens: the cut lands on the last assistant... which is a cut point.
    let prep = prepare(&Projection::of(&s), 260, 0).unwrap();
    assert_eq!(prep.first_kept_entry_id, ids[6], "the user message starting the last turn");
    assert!(!prep.is_split_turn);
    // A tool result is never the first kept entry: the cut moves to a later cut point.
    let prep = prepare(&Projection::of(&s), 760, 0).unwrap();
    assert_ne!(prep.first_kept_entry_id, ids[4]);
    assert_eq!(prep.first_kept_entry_id, ids[5]);
}

#[test]
fn recompaction_builds_on_the_previous_summary() {
    let (mut s, ids) = session_with(vec![
        user(&chars(1000)),
        assistant_blocks(vec![call("c1", "edit", json!({"path": "b.rs"}))], Usage::default()),
        tool_result("c1", "edit", "ok"),
        assistant(&chars(1000)),
        user(&chars(1000)),
        assistant(&chars(1000)),
    ]);
    let details = json!({"readFiles": ["a.rs"], "modifiedFiles": ["old.rs"]});
    s.append_compaction("FIRST SUMMARY", Some(&ids[3]), 1234, Some(details), None).unwrap();
    assert_eq!(prepare(&Projection::of(&s), 100, 0).unwrap_err(), NotCompactable::AlreadyCompacted);
    let later = s.append_message(user(&chars(1000))).unwrap();
    s.append_message(assistant(&chars(1000))).unwrap();
    let prep = prepare(&Projection::of(&s), 300, 0).unwrap();
    assert_eq!(prep.previous_summary.as_deref(), Some("FIRST SUMMARY"));
    assert_eq!(prep.first_kept_entry_id, later);
    // Summarised again: the messages kept by the first compaction, not the summary.
    assert_eq!(prep.messages_to_summarize.len(), 3);
    assert!(matches!(prep.messages_to_summarize[0], AgentMessage::Assistant(_)));
    let (read, modified) = prep.file_ops.lists();
    assert_eq!(read, ["a.rs"]);
    assert_eq!(modified, ["old.rs"]);
}

#[test]
fn token_estimates_trust_usage_only_after_edits_and_compactions() {
    let usage = Usage { input: 900, output: 100, total_tokens: 1000, ..Usage::default() };
    let (mut s, ids) = session_with(vec![user("abcd"), assistant_blocks(vec![ContentBlock::text("ok")], usage)]);
    s.append_message(user("12345678")).unwrap();
    assert_eq!(Projection::of(&s).estimate_tokens(50), 1000 + 2);
    s.append_context_edit(&ids[0], None).unwrap();
    // After an edit the usage is stale: estimate everything plus the system prompt.
    assert_eq!(Projection::of(&s).estimate_tokens(50), 50 + 1 + 2);
    assert!(!super::awaiting_usage(&s));
    s.append_compaction("S", Some(&ids[1]), 10, None, None).unwrap();
    assert!(super::awaiting_usage(&s));
    s.append_message(assistant_blocks(vec![ContentBlock::text("new")], Usage { total_tokens: 5, ..Usage::default() }))
        .unwrap();
    assert!(!super::awaiting_usage(&s));
}

// ----- summarisation calls ---------------------------------------------------

/// One scripted answer of the fake provider.
#[derive(Clone)]
pub(super) enum Script {
    Text(&'static str),
    Error(&'static str),
    Length,
    ToolCall,
}

#[derive(Clone, Default)]
pub(super) struct Scripted {
    pub(super) script: Arc<Mutex<Vec<Script>>>,
    pub(super) requests: Arc<Mutex<Vec<ProviderRequest>>>,
}

impl Provider for Scripted {
    fn api(&self) -> &'static str {
        "scripted"
    }

    fn stream(&self, request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
        self.requests.lock().unwrap().push(request);
        let next = {
            let mut script = self.script.lock().unwrap();
            if script.is_empty() { Script::Text("default") } else { script.remove(0) }
        };
        let usage = Usage { input: 100, output: 10, ..Usage::default() };
        let events: Vec<Result<ProviderEvent, ProviderError>> = match next {
            Script::Text(t) => vec![
                Ok(ProviderEvent::BlockStart { index: 0, kind: BlockKind::Text }),
                Ok(ProviderEvent::BlockDelta { index: 0, delta: t.into() }),
                Ok(ProviderEvent::Usage(Box::new(usage))),
                Ok(ProviderEvent::Stop { reason: StopReason::Stop, raw: None }),
            ],
            Script::Error(e) => vec![Err(crate::provider::classify::error_from(None, e.into(), None))],
            Script::Length => vec![
                Ok(ProviderEvent::BlockStart { index: 0, kind: BlockKind::Text }),
                Ok(ProviderEvent::BlockDelta { index: 0, delta: "partial".into() }),
                Ok(ProviderEvent::Stop { reason: StopReason::Length, raw: None }),
            ],
            Script::ToolCall => vec![
                Ok(ProviderEvent::BlockStart {
                    index: 0,
                    kind: BlockKind::ToolCall { id: "x".into(), name: "bash".into() },
                }),
                Ok(ProviderEvent::Stop { reason: StopReason::ToolUse, raw: None }),
            ],
        };
        futures::stream::iter(events).boxed()
    }
}

#[derive(Default)]
pub(super) struct Events(Mutex<Vec<AgentEvent>>);

#[async_trait::async_trait]
impl crate::event::EventSink for Events {
    async fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

fn test_model() -> Model {
    Model {
        id: "fake-model".into(),
        name: "Fake".into(),
        api: "scripted".into(),
        provider: "fake".into(),
        base_url: String::new(),
        reasoning: false,
        input: vec!["text".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        cost: ModelCost { input: 1.0, output: 2.0, cache_read: 0.0, cache_write: 0.0 },
        headers: None,
        thinking_level_map: None,
        sampling_params: None,
        sampling_params_by_thinking_level: None,
        compat: None,
        extra: Default::default(),
    }
}

pub(super) fn summarizer(provider: &Scripted, max_retries: u32) -> Summarizer {
    Summarizer {
        provider: Arc::new(provider.clone()),
        model: test_model(),
        thinking: ThinkingLevel::High,
        api_key: Some("k".into()),
        headers: Default::default(),
        retry: RetrySettings { enabled: true, max_retries, base_delay_ms: 1, max_delay_ms: 60_000 },
        retry_enabled: true,
        observer: None,
    }
}

const SOURCE: SummarizationSource = SummarizationSource::Compaction(CompactionReason::Manual);

fn split_session() -> Session {
    session_with(vec![
        user(&chars(1000)),
        assistant(&chars(1000)),
        user(&chars(1000)),
        assistant_blocks(vec![call("c1", "write", json!({"path": "out.txt"}))], Usage::default()),
        tool_result("c1", "write", &chars(1000)),
        assistant(&chars(1000)),
    ])
    .0
}

#[tokio::test]
async fn a_split_turn_makes_two_requests_joined_with_pis_text() {
    let s = split_session();
    let prep = prepare(&Projection::of(&s), 250, 0).unwrap();
    assert!(prep.is_split_turn);
    let provider = Scripted::default();
    provider.script.lock().unwrap().extend([Script::Text("HISTORY"), Script::Text("PREFIX")]);
    let events = Events::default();
    let out = summarize(&prep, Some("focus"), &summarizer(&provider, 3), SOURCE, &events, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.summary,
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<modified-files>\nout.txt\n</modified-files>"
    );
    assert_eq!(out.details, json!({"readFiles": [], "modifiedFiles": ["out.txt"]}));
    let usage = out.usage.unwrap();
    assert_eq!((usage.input, usage.output), (200, 20));
    assert!((usage.cost.total - 240.0 / 1_000_000.0).abs() < 1e-12);
    let requests = provider.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].system_prompt.starts_with("You are a context summarization assistant."));
    assert!(requests[0].tools.is_empty());
    assert_eq!(requests[0].session_id, None);
    assert_eq!(requests[0].max_tokens, None, "the model's output limit, fitted to the window by the provider");
    assert_eq!(requests[0].thinking_level, ThinkingLevel::Off, "non-reasoning model");
    let first = requests[0].messages[0].clone();
    let AgentMessage::User(u) = first else { panic!("user message expected") };
    assert!(u.content.text().starts_with("<conversation>\n[User]: "));
    assert!(u.content.text().ends_with("Additional focus: focus"));
    let AgentMessage::User(u) = requests[1].messages[0].clone() else { panic!("user message expected") };
    assert!(u.content.text().starts_with("# Conversation\n[User]: "));
    assert!(events.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn transient_failures_are_retried_with_events() {
    let (s, _) = session_with(vec![user(&chars(1000)), assistant(&chars(1000)), user(&chars(400)), assistant("x")]);
    let prep = prepare(&Projection::of(&s), 50, 0).unwrap();
    let provider = Scripted::default();
    provider.script.lock().unwrap().extend([Script::Error("500: server error"), Script::Text("SUMMARY")]);
    let events = Events::default();
    let out =
        summarize(&prep, None, &summarizer(&provider, 3), SOURCE, &events, &CancellationToken::new()).await.unwrap();
    assert_eq!(out.summary, "SUMMARY");
    let events = events.0.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            AgentEvent::SummarizationRetryScheduled {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 1,
                error_message: "500: server error".into()
            },
            AgentEvent::SummarizationRetryAttemptStart { source: SOURCE },
            AgentEvent::SummarizationRetryFinished,
        ]
    );
}

fn failed(kind: ErrorKind, message: &str) -> SummaryError {
    SummaryError::Failed(crate::error::CoreError::new(kind, message))
}

#[tokio::test]
async fn failures_carry_pis_texts() {
    let (s, _) = session_with(vec![user(&chars(1000)), assistant(&chars(1000)), user(&chars(400)), assistant("x")]);
    let prep = prepare(&Projection::of(&s), 50, 0).unwrap();
    let run = |script: Vec<Script>, retries: u32| {
        let prep = prep.clone();
        async move {
            let provider = Scripted::default();
            provider.script.lock().unwrap().extend(script);
            let events = Events::default();
            let r = summarize(&prep, None, &summarizer(&provider, retries), SOURCE, &events, &CancellationToken::new())
                .await;
            (r, events.0.lock().unwrap().len())
        }
    };
    let (r, n) = run(vec![Script::Error("400: bad request")], 3).await;
    assert_eq!(r.unwrap_err(), failed(ErrorKind::Model, "Summarization failed: 400: bad request"));
    assert_eq!(n, 0, "not retryable: no retry events");
    let (r, n) = run(vec![Script::Error("503: busy"), Script::Error("503: busy")], 1).await;
    assert_eq!(r.unwrap_err(), failed(ErrorKind::Model, "Summarization failed: 503: busy"));
    assert_eq!(n, 3, "scheduled, attempt start, finished");
    let (r, _) = run(vec![Script::Length], 3).await;
    assert_eq!(
        r.unwrap_err(),
        failed(ErrorKind::Model, "Summarization failed: generation hit the token cap and the summary is incomplete")
    );
    let (r, _) = run(vec![Script::ToolCall], 3).await;
    assert_eq!(r.unwrap_err(), failed(ErrorKind::Model, "Summarization attempted to call a tool"));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let provider = Scripted::default();
    let r = summarize(&prep, None, &summarizer(&provider, 3), SOURCE, &Events::default(), &cancel).await;
    assert_eq!(r.unwrap_err(), SummaryError::Aborted);
}

#[test]
fn file_lists_count_the_calls_a_tool_made_to_other_tools() {
    let mut result = tool_result("c1", "orchestrate", "done");
    let AgentMessage::ToolResult(r) = &mut result else { unreachable!() };
    let record = |id: &str, name: &str, args: Option<Value>| crate::message::NestedToolCallRecord {
        id: id.into(),
        name: name.into(),
        status: crate::message::NestedCallStatus::Ok,
        arguments: args,
        arguments_bytes: None,
        duration_ms: Some(1),
        error: None,
    };
    r.nested_calls = Some(crate::message::NestedToolCalls {
        calls: vec![
            record("c1/1", "read", Some(json!({"path": "a.txt"}))),
            record("c1/2", "edit", Some(json!({"path": "b.txt"}))),
            record("c1/3", "write", None),
        ],
        complete: false,
    });
    let mut ops = super::FileOps::default();
    ops.add_message(&assistant_blocks(vec![call("c1", "orchestrate", json!({}))], Usage::default()));
    ops.add_message(&result);
    assert_eq!(ops.lists(), (vec!["a.txt".to_string()], vec!["b.txt".to_string()]));
}
