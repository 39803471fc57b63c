//! Tests of the faux provider.

use std::collections::HashMap;

use serde_json::{Map, json};

use super::*;
use crate::message::UserMessage;
use crate::model::ThinkingLevel;

fn request(text: &str) -> ProviderRequest {
    ProviderRequest {
        model: faux_model(),
        system_prompt: "sys".into(),
        messages: vec![AgentMessage::User(UserMessage {
            content: UserContent::Text(text.into()),
            timestamp: 0,
            extra: Map::new(),
        })],
        tools: vec![],
        thinking_level: ThinkingLevel::Off,
        api_key: None,
        headers: HashMap::new(),
        max_tokens: None,
        session_id: None,
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    }
}

async fn run(p: &FauxProvider, text: &str) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    let mut s = p.stream(request(text), CancellationToken::new());
    let mut events = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                assert!(s.next().await.is_none());
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

fn text_of(events: &[ProviderEvent], index: usize) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockDelta { index: i, delta } if *i == index => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn default_reply_echoes_the_user_in_several_deltas() {
    let p = FauxProvider::new();
    let (events, err) = run(&p, "hello there").await;
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::BlockStart { index: 0, kind: BlockKind::Text });
    let text = text_of(&events, 0);
    assert!(text.starts_with("You said: hello there\n\nThis is the offline faux model"), "{text}");
    let deltas = events.iter().filter(|e| matches!(e, ProviderEvent::BlockDelta { .. })).count();
    assert!(deltas > 3);
    let Some(ProviderEvent::Usage(u)) = events.iter().find(|e| matches!(e, ProviderEvent::Usage(_))) else {
        panic!("no usage")
    };
    assert_eq!(u.input, ("sys".len() + "hello there".len()).div_ceil(4) as u64);
    assert_eq!(u.output, text.chars().count().div_ceil(4) as u64);
    assert_eq!(u.total_tokens, u.input + u.output);
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::Stop, raw: None }));
    // Deterministic.
    assert_eq!(run(&p, "hello there").await.0, events);
}

#[tokio::test]
async fn scripted_text_thinking_and_tool_calls() {
    let script = r#"
{"thinking": "Let me look around.", "text": "Listing.", "toolCalls": [{"name": "bash", "arguments": {"command": "ls -la"}}, {"name": "read", "arguments": {"path": "a"}, "id": "mine"}], "usage": {"input": 9, "output": 3}}

{"toolCalls": [{"name": "bash", "arguments": {"command": "pwd"}}]}
"#;
    let p = FauxProvider::from_script(script).unwrap();
    assert_eq!(p.remaining(), 2);
    let (events, err) = run(&p, "go").await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events, 0), "Let me look around.");
    assert_eq!(events[0], ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking });
    assert_eq!(text_of(&events, 1), "Listing.");
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 2,
        kind: BlockKind::ToolCall { id: "faux_call_1".into(), name: "bash".into() }
    }));
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 3,
        kind: BlockKind::ToolCall { id: "mine".into(), name: "read".into() }
    }));
    let first_tool_delta = events.iter().find_map(|e| match e {
        ProviderEvent::BlockDelta { index: 2, delta } => Some(delta.clone()),
        _ => None,
    });
    assert_eq!(first_tool_delta.as_deref(), Some(""));
    assert_eq!(serde_json::from_str::<Value>(&text_of(&events, 2)).unwrap(), json!({"command": "ls -la"}));
    assert!(events.contains(&ProviderEvent::Usage(Box::new(Usage {
        input: 9,
        output: 3,
        total_tokens: 12,
        ..Usage::default()
    }))));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: None }));
    // The counter goes on across calls; then the script is exhausted.
    let (events, _) = run(&p, "again").await;
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 0,
        kind: BlockKind::ToolCall { id: "faux_call_2".into(), name: "bash".into() }
    }));
    let (events, _) = run(&p, "third").await;
    assert!(text_of(&events, 0).starts_with("You said: third"));
}

#[tokio::test]
async fn scripted_errors_are_classified() {
    let script = r#"{"error": "429 Too many requests"}
{"error": {"message": "context too big", "kind": "overflow"}}
{"error": {"message": "slow down", "kind": "rate_limit", "retryAfterMs": 1500}}
{"text": "partial answer", "error": {"message": "boom", "kind": "transient"}}
{"error": {"message": "nope", "kind": "auth"}}
{"error": {"message": "bad", "kind": "invalid"}}"#;
    let p = FauxProvider::from_script(script).unwrap();
    let kind = |r: (Vec<ProviderEvent>, Option<ProviderError>)| r.1.map(|e| e.kind);
    assert_eq!(kind(run(&p, "x").await), Some(ProviderErrorKind::RateLimited { retry_after: None }));
    assert_eq!(kind(run(&p, "x").await), Some(ProviderErrorKind::ContextOverflow));
    assert_eq!(
        kind(run(&p, "x").await),
        Some(ProviderErrorKind::RateLimited { retry_after: Some(Duration::from_millis(1500)) })
    );
    let (events, err) = run(&p, "x").await;
    assert_eq!(text_of(&events, 0), "partial answer");
    assert_eq!(err.map(|e| (e.kind, e.message)), Some((ProviderErrorKind::Transient, "boom".to_string())));
    assert_eq!(kind(run(&p, "x").await), Some(ProviderErrorKind::Auth));
    assert_eq!(kind(run(&p, "x").await), Some(ProviderErrorKind::InvalidRequest));
}

#[tokio::test]
async fn script_files_and_parse_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.jsonl");
    std::fs::write(&path, "{\"text\": \"from file\"}\n").unwrap();
    let p = FauxProvider::from_script_file(&path).unwrap();
    assert_eq!(text_of(&run(&p, "x").await.0, 0), "from file");
    let err = FauxProvider::from_script("{\"text\": \"ok\"}\n{\"txet\": 1}").err().unwrap();
    assert!(err.to_string().starts_with("faux script line 2:"), "{err}");
    assert!(FauxProvider::from_script_file(dir.path().join("missing")).is_err());
}

#[tokio::test]
async fn cancellation_between_delayed_deltas_aborts() {
    let p = FauxProvider::from_script(r#"{"text": "one two three four five six seven", "delayMs": 2000}"#).unwrap();
    let cancel = CancellationToken::new();
    let mut s = p.stream(request("x"), cancel.clone());
    assert!(matches!(s.next().await, Some(Ok(ProviderEvent::BlockStart { .. }))));
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        c.cancel();
    });
    let started = std::time::Instant::now();
    match s.next().await {
        Some(Err(e)) => assert_eq!(e.kind, ProviderErrorKind::Aborted),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_millis(1000));
    assert!(s.next().await.is_none());
}
