//! Real replies for the dialects' tests of streamed writing (feature
//! `testing`): a pi session file (branches, labels, orphans, compaction)
//! grown with message bodies of several hundred KiB — non-ASCII, escapes,
//! control characters, U+2028/U+2029 — opened by the core, and the
//! `get_messages`, `get_entries`, `get_tree` and `get_fork_messages` replies
//! made from it; the stdio writer over an output that takes small writes; and
//! an event of each kind, for the dialects' checks of their wire names.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_core::op::{EntryList, Reply, TreeWithLeaf};
use pi_core::session::Session;
use serde_json::json;

use crate::streamed::Outgoing;
use crate::writer::spawn_writer;

/// Text that needs every kind of JSON escape and multi-byte UTF-8, about `len` bytes.
pub fn awkward_text(len: usize) -> String {
    const PARTS: [&str; 8] = [
        "plain ascii ",
        "é à ü ",
        "日本語 ",
        "🦀🚀 ",
        "quote \" backslash \\ ",
        "\n\t\r\u{1}\u{1f} ",
        "\u{2028}\u{2029} ",
        "x",
    ];
    let mut text = String::with_capacity(len + 32);
    let mut i = 0;
    while text.len() < len {
        text.push_str(PARTS[i % PARTS.len()]);
        // Uneven steps, so multi-byte characters straddle piece boundaries at varied offsets.
        i += 1 + i % 3;
    }
    text
}

fn entry_line(id: &str, parent: &str, message: serde_json::Value) -> String {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-02T03:05:00.000Z", "message": message})
        .to_string()
}

/// The session (`crafted.jsonl` of the core's tests, with big messages on
/// its main branch and on a side branch), written to a temporary file and opened.
pub fn big_session() -> Session {
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crates/session/src/session/testdata/crafted.jsonl");
    let mut text = std::fs::read_to_string(fixture).unwrap_or_default();
    let big = |n: usize| awkward_text(150_000 + 7_919 * n);
    let lines = [
        entry_line("f0000001", "e0000019", json!({"role": "user", "content": big(1), "timestamp": 1767323100000_i64})),
        entry_line(
            "f0000002",
            "f0000001",
            json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
                   "content": [{"type": "text", "text": big(2)}], "isError": false, "timestamp": 1767323101000_i64}),
        ),
        entry_line(
            "f0000003",
            "f0000002",
            json!({"role": "user", "content": [{"type": "text", "text": big(3)}], "timestamp": 1767323102000_i64}),
        ),
        // A big side branch from an early entry.
        entry_line("f0000004", "e0000007", json!({"role": "user", "content": big(4), "timestamp": 1767323103000_i64})),
        entry_line(
            "f0000005",
            "f0000003",
            json!({"role": "user", "content": "the leaf", "timestamp": 1767323104000_i64}),
        ),
    ];
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    let n = FILES.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("pi-streamed-{}-{n}.jsonl", std::process::id()));
    let opened = std::fs::write(&path, text).map_err(|e| e.to_string()).and_then(|()| {
        Session::open(&path, std::env::temp_dir()).map(|(session, _)| session).map_err(|e| e.to_string())
    });
    let _ = std::fs::remove_file(&path);
    match opened {
        Ok(session) => session,
        Err(e) => panic!("cannot open the test session: {e}"),
    }
}

/// Each big command's native `type` with its reply from [`big_session`].
pub fn big_replies() -> Vec<(&'static str, Reply)> {
    let session = big_session();
    let leaf_id = session.leaf_id().map(str::to_string);
    vec![
        ("get_messages", Reply::Messages(session.context().messages.into())),
        (
            "get_entries",
            Reply::Entries(EntryList { entries: session.entries().cloned().collect(), leaf_id: leaf_id.clone() }),
        ),
        ("get_tree", Reply::Tree(TreeWithLeaf { tree: session.tree(), leaf_id })),
        ("get_fork_messages", Reply::ForkMessages(session.fork_messages())),
    ]
}

/// The result of a big reply serialised whole into a `RawValue`, as both
/// dialects always did before writing it as it is serialised.
pub fn whole_result(reply: Reply) -> Box<serde_json::value::RawValue> {
    use crate::protocol::FromReply;
    use crate::protocol::results::{EntriesData, ForkMessagesData, MessagesData, TreeData};
    use serde_json::value::to_raw_value;
    let raw = match reply {
        Reply::Messages(r) => to_raw_value(&MessagesData::from_reply(r)),
        Reply::Entries(r) => to_raw_value(&EntriesData::from_reply(r)),
        Reply::Tree(r) => to_raw_value(&TreeData::from_reply(r)),
        Reply::ForkMessages(r) => to_raw_value(&ForkMessagesData::from_reply(r)),
        other => panic!("not a big reply: {other:?}"),
    };
    match raw {
        Ok(raw) => raw,
        Err(e) => panic!("cannot serialize the reply: {e}"),
    }
}

/// An output that takes at most 1,000 bytes per write (so every piece is
/// written in several calls) and keeps what it got.
#[derive(Clone, Default)]
pub struct SmallWrites(pub Arc<Mutex<Vec<u8>>>);

impl Write for SmallWrites {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1_000);
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes the stdio writer puts out for these messages, in order (a `\n` after each).
pub async fn written(messages: Vec<Outgoing>) -> Vec<u8> {
    let out = SmallWrites::default();
    let (lines, writer) = spawn_writer(out.clone());
    for message in messages {
        let sent = match message {
            Outgoing::Bytes(bytes) => lines.send(bytes).await,
            Outgoing::Streamed(message) => lines.send_streamed(message).await,
        };
        assert!(sent, "the writer refused a message");
    }
    drop(lines);
    assert!(writer.finish().await.is_ok(), "the writer failed");
    std::mem::take(&mut *out.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
}

/// A `get_state` reply of the session above (names with non-ASCII and separators).
pub fn state_reply() -> Reply {
    let session = big_session();
    let mut model = pi_core::provider::faux::faux_model();
    model.name = "modèle \u{2028} \"faux\"".to_string();
    Reply::State(Box::new(pi_core::op::StateSnapshot {
        model: Some(std::sync::Arc::new(model)),
        thinking_level: pi_core::model::ThinkingLevel::Low,
        is_streaming: false,
        is_compacting: false,
        is_bash_running: false,
        steering_mode: pi_core::op::QueueMode::All,
        follow_up_mode: pi_core::op::QueueMode::OneAtATime,
        session_file: Some("/tmp/sessions/é.jsonl".to_string()),
        session_id: session.session_id().to_string(),
        session_name: session.name(),
        auto_compaction_enabled: true,
        auto_retry_enabled: true,
        message_count: 12,
        pending_message_count: 1,
        active_tools: std::sync::Arc::new(vec!["read".into(), "bash".into()]),
        context_usage: Some(pi_core::op::ContextUsageStats {
            tokens: Some(10),
            context_window: 100,
            percent: Some(10.0),
        }),
        session_header: session.shared_header(),
    }))
}

/// Events of every kind (and, where what a dialect makes of an event depends
/// on its data, of each case): the dialects' tests check that the names they
/// write are those the event table gives (`pi_core::event::NATIVE`, `JSONRPC`).
pub fn sample_events() -> Vec<pi_core::event::AgentEvent> {
    use pi_core::client::{ClientRequest, ClientRequestKind, PermissionRequest};
    use pi_core::error::{CoreError, ErrorKind};
    use pi_core::event::{
        AgentEvent as E, AssistantStreamEvent, CompactionReason, ContextUsage, ExtensionUiKind, ExtensionUiRequest,
        SummarizationSource, ToolResultPayload,
    };
    use pi_core::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason, Usage};
    use pi_core::model::ThinkingLevel;
    let user = AgentMessage::user("hi", &[]);
    let assistant = AgentMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::text("hello")],
        api: "openai-completions".into(),
        provider: "p".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 1,
        response_id: None,
        error_message: None,
        raw_stop_reason: Some("stop".into()),
        duration_ms: Some(5),
        thinking_level: Some("off".into()),
        extra: Default::default(),
    });
    let payload = || {
        Box::new(ToolResultPayload {
            content: vec![ContentBlock::text("out")],
            details: None,
            structured_content: None,
            is_error: false,
            usage: None,
            terminate: false,
        })
    };
    let usage = || std::sync::Arc::new(Usage::default());
    let request = |kind| E::ClientRequest(Box::new(ClientRequest { id: "c1".into(), kind }));
    vec![
        E::AgentStart,
        E::AgentEnd { messages: vec![user.clone()], will_retry: false },
        E::AgentSettled { aborted: false, usage: Box::default() },
        E::TurnStart,
        E::TurnEnd { message: Box::new(assistant.clone()), tool_results: Vec::new() },
        E::MessageStart { message: Box::new(user.clone()) },
        E::MessageUpdate { event: AssistantStreamEvent::TextStart { content_index: 0 }, usage: usage() },
        E::MessageUpdate {
            event: AssistantStreamEvent::TextDelta { content_index: 0, delta: "he".into() },
            usage: usage(),
        },
        E::MessageUpdate {
            event: AssistantStreamEvent::ThinkingDelta { content_index: 0, delta: "hm".into() },
            usage: usage(),
        },
        E::MessageEnd { message: Box::new(user) },
        E::MessageEnd { message: Box::new(assistant) },
        E::ToolExecutionStart {
            tool_call_id: "t1".into(),
            tool_name: "ls".into(),
            args: Box::new(json!({})),
            parent_tool_call_id: None,
        },
        E::ToolExecutionUpdate {
            tool_call_id: "t1".into(),
            tool_name: "ls".into(),
            args: Box::new(json!({})),
            partial_result: payload(),
            parent_tool_call_id: None,
        },
        E::ToolExecutionEnd {
            tool_call_id: "t1".into(),
            tool_name: "ls".into(),
            result: payload(),
            is_error: false,
            duration_ms: Some(3),
            parent_tool_call_id: None,
        },
        E::QueueUpdate { steering: vec!["s".into()], follow_up: Vec::new() },
        E::CompactionStart { reason: CompactionReason::Manual },
        E::CompactionEnd {
            reason: CompactionReason::Manual,
            result: None,
            aborted: true,
            will_retry: false,
            error_message: None,
        },
        E::AutoRetryStart { attempt: 1, max_attempts: 3, delay_ms: 10, error_message: "busy".into() },
        E::AutoRetryEnd { success: true, attempt: 1, final_error: None },
        E::SummarizationRetryScheduled { attempt: 1, max_attempts: 3, delay_ms: 10, error_message: "busy".into() },
        E::SummarizationRetryAttemptStart { source: SummarizationSource::Compaction(CompactionReason::Overflow) },
        E::SummarizationRetryAttemptStart { source: SummarizationSource::BranchSummary },
        E::SummarizationRetryFinished,
        E::BashExecutionUpdate { request: None, delta: "x".into() },
        E::ThinkingLevelChanged { level: ThinkingLevel::High },
        E::ModelChanged { model: Box::new(pi_core::provider::faux::faux_model()), thinking_level: ThinkingLevel::Off },
        E::SessionInfoChanged { name: "n".into() },
        E::EntryAppended {
            entry: Box::new(json!({"type": "context_edit", "id": "e1", "targetId": "a1", "replacement": null})),
        },
        E::ContextUsage(ContextUsage { tokens: 10, context_window: 100 }),
        E::RunError { error: CoreError::new(ErrorKind::Internal, "boom"), will_retry: false },
        E::ExtensionError { extension_path: "/e.ts".into(), event: "load".into(), error: "boom".into() },
        E::ExtensionUiRequest(Box::new(ExtensionUiRequest {
            id: "u1".into(),
            extension: "demo".into(),
            kind: ExtensionUiKind::Notify { message: "hi".into(), notify_type: None },
        })),
        request(ClientRequestKind::Permission(PermissionRequest {
            tool_call_id: "t1".into(),
            tool_name: "bash".into(),
            args: json!({"command": "ls"}),
            title: "bash: ls".into(),
        })),
        request(ClientRequestKind::ToolCall { tool_call_id: "t2".into(), tool_name: "mine".into(), args: json!({}) }),
        request(ClientRequestKind::ReadTextFile { path: "/a".into() }),
        E::ClientRequestEnded { id: "c1".into() },
        E::LoginEnd { provider: "anthropic".into(), error: None },
    ]
}
