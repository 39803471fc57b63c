//! Ops, replies and events survive a trip through serde (JSON): `pi serve
//! --cluster` carries them between workers and keeps events in its stream.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, json};

use crate::client::{ClientReply, ClientRequest, ClientRequestKind, PermissionAnswer, PermissionRequest};
use crate::error::{CoreError, ErrorKind};
use crate::event::{AgentEvent, AssistantStreamEvent, ExtensionUiKind, ExtensionUiRequest, ToolResultPayload};
use crate::message::{AgentMessage, AssistantMessage, ContentBlock, ImageContent, StopReason, Usage};
use crate::op::{Attachment, BashResult, InitializeParams, Op, Reply, Switched, UiResponse};

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: T) {
    let text = serde_json::to_string(&value).expect("serialize");
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(back, value, "{text}");
}

fn assistant(text: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        api: "faux".into(),
        provider: "faux".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Error,
        timestamp: 7,
        response_id: None,
        error_message: Some("boom".into()),
        raw_stop_reason: Some("end_turn".into()),
        duration_ms: Some(12),
        thinking_level: Some("off".into()),
        extra: Map::new(),
    })
}

#[test]
fn ops_round_trip() {
    round_trip(Op::Prompt {
        message: "hi".into(),
        images: vec![ImageContent { data: "AAAA".into(), mime_type: "image/png".into() }],
        streaming_behavior: None,
    });
    round_trip(Op::Initialize(InitializeParams { cwd: Some("/w".into()), ..Default::default() }));
    round_trip(Op::ExtensionUiResponse { id: Some("d1".into()), response: UiResponse::Value(json!("yes")) });
    round_trip(Op::ClientResponse {
        id: "c1".into(),
        result: Ok(ClientReply::ToolResult {
            content: vec![ContentBlock::text("out")],
            details: None,
            is_error: false,
        }),
    });
    round_trip(Op::ClientResponse { id: "c2".into(), result: Err("no".into()) });
    round_trip(Op::ResumeSession { reference: "abc".into(), after_seq: Some(42) });
    round_trip(Op::Abort);
    round_trip(Op::Login(crate::login::LoginRequest {
        provider: "anthropic".into(),
        method: Some("device_code".into()),
        no_browser: true,
        answer: None,
    }));
}

#[test]
fn replies_and_errors_round_trip() {
    round_trip(Reply::Ack);
    round_trip(Reply::Messages(vec![assistant("x")].into()));
    round_trip(Reply::Bash(BashResult {
        output: "o".into(),
        exit_code: Some(1),
        cancelled: false,
        truncated: false,
        full_output_path: None,
    }));
    round_trip(Reply::Switched(Switched {
        cancelled: false,
        attached: Some(Attachment { session_id: "s".into(), session_file: None, last_seq: 9, replayed: 1, gap: false }),
    }));
    round_trip(CoreError::invalid("sessionId", "bad").with_retryable(true));
    round_trip::<Result<Reply, CoreError>>(Err(CoreError::new(ErrorKind::Busy, "busy")));
    round_trip(Reply::LoginStarted(Box::new(crate::login::LoginStarted {
        provider: "openai-codex".into(),
        name: "ChatGPT Plus/Pro (Codex Subscription)".into(),
        method: "device_code".into(),
        user_code: Some("ABCD-1234".into()),
        verification_uri: Some("https://auth.openai.com/codex/device".into()),
        expires_in_seconds: Some(900.0),
        ..Default::default()
    })));
}

#[test]
fn events_round_trip() {
    round_trip(AgentEvent::MessageUpdate {
        event: AssistantStreamEvent::TextDelta { content_index: 0, delta: "Hel".into() },
        usage: std::sync::Arc::new(Usage::default()),
    });
    round_trip(AgentEvent::TurnEnd { message: Box::new(assistant("done")), tool_results: vec![] });
    round_trip(AgentEvent::ToolExecutionEnd {
        tool_call_id: "t".into(),
        tool_name: "read".into(),
        result: Box::new(ToolResultPayload {
            content: vec![ContentBlock::text("file")],
            details: Some(json!({"n": 1})),
            structured_content: Some(Box::new(json!({"rows": 2}))),
            is_error: true,
            usage: Some(Box::new(crate::message::Usage { input: 4, output: 1, ..Default::default() })),
            terminate: true,
        }),
        is_error: false,
        duration_ms: Some(3),
        parent_tool_call_id: Some("p".into()),
    });
    round_trip(AgentEvent::RunError { error: CoreError::internal("lost"), will_retry: false });
    round_trip(AgentEvent::ExtensionUiRequest(Box::new(ExtensionUiRequest {
        id: "u1".into(),
        extension: "ext".into(),
        kind: ExtensionUiKind::Confirm { title: "t".into(), message: "m".into(), timeout_ms: Some(5) },
    })));
    round_trip(AgentEvent::ClientRequest(Box::new(ClientRequest {
        id: "c1".into(),
        kind: ClientRequestKind::Permission(PermissionRequest {
            tool_call_id: "t".into(),
            tool_name: "bash".into(),
            args: json!({"command": "ls"}),
            title: "bash: ls".into(),
        }),
    })));
    round_trip(ClientReply::Permission(PermissionAnswer::AllowOnce));
    round_trip(AgentEvent::BashExecutionUpdate { request: Some(1 << 40), delta: "x".into() });
    round_trip(AgentEvent::AgentSettled { aborted: false, usage: Box::default() });
    round_trip(AgentEvent::LoginEnd { provider: "anthropic".into(), error: Some("refused".into()) });
}
