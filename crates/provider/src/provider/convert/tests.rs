//! Tests of the context preparation rules (convert.rs).

use super::*;
use crate::message::{
    BashExecutionMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, ImageContent, ThinkingContent,
    ToolCall, Usage, UserMessage,
};
use crate::model::ModelCost;
use serde_json::json;

pub(crate) fn model(images: bool) -> Model {
    Model {
        id: "m".into(),
        name: "m".into(),
        api: "openai-completions".into(),
        provider: "p".into(),
        base_url: "http://127.0.0.1:1/v1".into(),
        reasoning: false,
        input: if images { vec!["text".into(), "image".into()] } else { vec!["text".into()] },
        context_window: 128_000,
        max_tokens: 16_384,
        cost: ModelCost::default(),
        headers: None,
        thinking_level_map: None,
        sampling_params: None,
        sampling_params_by_thinking_level: None,
        compat: None,
        extra: Default::default(),
    }
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage { content: UserContent::Text(text.into()), timestamp: 1, extra: Map::new() })
}

pub(crate) fn assistant(content: Vec<ContentBlock>, stop: StopReason, model_id: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "p".into(),
        model: model_id.into(),
        usage: Usage::default(),
        stop_reason: stop,
        timestamp: 2,
        response_id: None,
        error_message: None,
        raw_stop_reason: None,
        duration_ms: None,
        thinking_level: None,
        extra: Map::new(),
    })
}

pub(crate) fn call(id: &str, name: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({"a": 1}),
        thought_signature: None,
        arguments_error: None,
    })
}

pub(crate) fn result(id: &str, content: Vec<ContentBlock>) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content,
        details: None,
        usage: None,
        is_error: false,
        duration_ms: None,
        timestamp: 3,
        nested_calls: None,
        extra: Map::new(),
    })
}

fn image() -> ContentBlock {
    ContentBlock::Image(ImageContent { data: "AAAA".into(), mime_type: "image/png".into() })
}

fn first_text(m: &LlmMessage) -> String {
    match m {
        LlmMessage::User { content, .. } => content.text(),
        LlmMessage::ToolResult(t) => crate::message::join_text(&t.content),
        LlmMessage::Assistant(a) => a.text(),
    }
}

#[test]
fn special_messages_become_user_text() {
    let bash = |exclude| {
        AgentMessage::BashExecution(BashExecutionMessage {
            command: "echo hi".into(),
            output: "hi".into(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: exclude,
            timestamp: 5,
            extra: Map::new(),
        })
    };
    let msgs = vec![
        bash(false),
        bash(true),
        AgentMessage::CompactionSummary(CompactionSummaryMessage {
            summary: "S".into(),
            tokens_before: 9,
            timestamp: 6,
            extra: Map::new(),
        }),
        AgentMessage::BranchSummary(BranchSummaryMessage {
            summary: "B".into(),
            from_id: "x".into(),
            timestamp: 7,
            extra: Map::new(),
        }),
        AgentMessage::Custom(CustomMessage {
            custom_type: "note".into(),
            content: UserContent::Text("custom text".into()),
            display: true,
            details: None,
            timestamp: 8,
            extra: Map::new(),
        }),
    ];
    let llm = to_llm(&msgs);
    assert_eq!(llm.len(), 4);
    assert_eq!(first_text(&llm[0]), "Ran `echo hi`\n```\nhi\n```");
    assert_eq!(
        first_text(&llm[1]),
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\nS\n</summary>"
    );
    assert_eq!(
        first_text(&llm[2]),
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB</summary>"
    );
    match &llm[3] {
        LlmMessage::User { content: UserContent::Blocks(b), timestamp } => {
            assert_eq!(b, &vec![ContentBlock::text("custom text")]);
            assert_eq!(*timestamp, 8);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errored_and_aborted_assistants_are_dropped() {
    let msgs = vec![
        user("a"),
        assistant(vec![ContentBlock::text("partial")], StopReason::Aborted, "m"),
        user("b"),
        assistant(vec![], StopReason::Error, "m"),
        assistant(vec![ContentBlock::text("ok")], StopReason::Stop, "m"),
    ];
    let out = prepare(&msgs, &model(true));
    let texts: Vec<String> = out.iter().map(first_text).collect();
    assert_eq!(texts, vec!["a", "b", "ok"]);
}

#[test]
fn orphaned_tool_calls_get_synthetic_results() {
    let msgs = vec![
        user("go"),
        assistant(vec![call("c1", "bash"), call("c2", "read")], StopReason::ToolUse, "m"),
        result("c1", vec![ContentBlock::text("done")]),
        user("interrupt"),
        assistant(vec![call("c3", "bash")], StopReason::ToolUse, "m"),
    ];
    let out = prepare(&msgs, &model(true));
    let shape: Vec<String> = out
        .iter()
        .map(|m| match m {
            LlmMessage::User { content, .. } => format!("user:{}", content.text()),
            LlmMessage::Assistant(_) => "assistant".into(),
            LlmMessage::ToolResult(t) => format!("result:{}:{}:{}", t.tool_call_id, t.is_error, first_text(m)),
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            "user:go",
            "assistant",
            "result:c1:false:done",
            "result:c2:true:No result provided",
            "user:interrupt",
            "assistant",
            "result:c3:true:No result provided",
        ]
    );
}

#[test]
fn images_become_placeholders_on_text_only_models() {
    let msgs = vec![
        AgentMessage::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("look"), image(), image()]),
            timestamp: 1,
            extra: Map::new(),
        }),
        assistant(vec![call("c1", "read")], StopReason::ToolUse, "m"),
        result("c1", vec![image()]),
    ];
    let out = prepare(&msgs, &model(false));
    match &out[0] {
        LlmMessage::User { content: UserContent::Blocks(b), .. } => {
            assert_eq!(b, &vec![ContentBlock::text("look"), ContentBlock::text(USER_IMAGE_PLACEHOLDER)]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(first_text(&out[2]), TOOL_IMAGE_PLACEHOLDER);
    // A vision model keeps them.
    let kept = prepare(&msgs, &model(true));
    assert!(matches!(&kept[0], LlmMessage::User { content: UserContent::Blocks(b), .. } if b.len() == 3));
}

#[test]
fn content_from_another_model_loses_thinking_and_signatures() {
    let thinking = ContentBlock::Thinking(ThinkingContent {
        thinking: "hmm".into(),
        thinking_signature: Some("sig".into()),
        redacted: false,
    });
    let signed_text = ContentBlock::Text(TextContent { text: "hi".into(), text_signature: Some("t".into()) });
    let msgs = vec![
        user("q"),
        assistant(vec![thinking.clone(), signed_text.clone(), call("a|b", "bash")], StopReason::ToolUse, "other"),
        result("a|b", vec![ContentBlock::text("r")]),
    ];
    let normalize = |id: &str| id.replace('|', "_");
    let out = transform(to_llm(&msgs), &model(true), Some(&normalize));
    let LlmMessage::Assistant(a) = &out[1] else { panic!("not an assistant") };
    assert_eq!(a.content.len(), 2);
    assert_eq!(a.content[0], ContentBlock::text("hi"));
    assert!(matches!(&a.content[1], ContentBlock::ToolCall(c) if c.id == "a_b"));
    let LlmMessage::ToolResult(r) = &out[2] else { panic!("not a result") };
    assert_eq!(r.tool_call_id, "a_b");
    // Same model: kept as is; empty unsigned thinking dropped.
    let empty =
        ContentBlock::Thinking(ThinkingContent { thinking: "  ".into(), thinking_signature: None, redacted: false });
    let same =
        prepare(&[assistant(vec![thinking.clone(), empty, signed_text.clone()], StopReason::Stop, "m")], &model(true));
    let LlmMessage::Assistant(a) = &same[0] else { panic!("not an assistant") };
    assert_eq!(a.content, vec![thinking, signed_text]);
}

#[test]
fn output_cap_fits_the_context() {
    assert_eq!(clamp_max_tokens(128_000, 1_000, 16_384), 16_384);
    assert_eq!(clamp_max_tokens(32_000, 20_000, 16_384), 7_904);
    assert_eq!(clamp_max_tokens(32_000, 40_000, 16_384), 1);
    assert_eq!(clamp_max_tokens(0, 40_000, 0), 1);
    // 200k window, 150k input: 15% margin (22500) leaves 27500 < 32768, so the fixed margin applies.
    assert_eq!(clamp_max_tokens(200_000, 150_000, 64_000), 32_768);
}

#[test]
fn estimate_uses_the_last_usage_plus_what_follows() {
    let mut with_usage = assistant(vec![ContentBlock::text("x")], StopReason::Stop, "m");
    if let AgentMessage::Assistant(a) = &mut with_usage {
        a.usage = Usage { input: 100, output: 20, total_tokens: 120, ..Usage::default() };
    }
    let msgs = to_llm(&[user("q"), with_usage, user(&"y".repeat(35))]);
    assert_eq!(estimate_context_tokens("sys", &[], &msgs), 130);
    // Without usage: everything, the system prompt included (7 chars -> 2 tokens).
    let fresh = to_llm(&[user("1234567")]);
    assert_eq!(estimate_context_tokens("abcdefg", &[], &fresh), 4);
}
