//! Test helpers shared by the wire-API tests: pi-captured request fixtures
//! (`testdata/pi_*.json`, see `testdata/README.md`), event collection, and
//! small message builders.

use std::collections::HashMap;

use futures::StreamExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ToolSpec};
use crate::message::{AgentMessage, ContentBlock, Usage, UserContent, UserMessage};
use crate::model::{Model, ThinkingLevel};

/// A request pi 1.6.0 sent, with the conversation that produced it.
pub(crate) struct Fixture {
    pub request: ProviderRequest,
    /// Path and query pi requested.
    pub url: String,
    /// The request headers pi sent that matter for the API (lowercased names).
    pub headers: Map<String, Value>,
    pub body: Value,
}

/// Load `testdata/pi_<name>.json`, pointing the model at `base_url`.
pub(crate) fn fixture(name: &str, base_url: &str) -> Fixture {
    let path = format!("{}/src/provider/testdata/pi_{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let root: Value = serde_json::from_str(&text).unwrap();
    let input = &root["input"];
    let mut model: Model = serde_json::from_value(input["model"].clone()).unwrap();
    model.base_url = model.base_url.replacen("BASE", base_url, 1);
    let messages: Vec<AgentMessage> = serde_json::from_value(input["messages"].clone()).unwrap();
    let tools = input["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| ToolSpec {
            name: t["name"].as_str().unwrap().into(),
            description: t["description"].as_str().unwrap().into(),
            parameters: t["parameters"].clone(),
        })
        .collect();
    let request = ProviderRequest {
        model,
        system_prompt: input["systemPrompt"].as_str().unwrap().into(),
        messages,
        tools,
        thinking_level: input["level"].as_str().unwrap().parse::<ThinkingLevel>().unwrap(),
        api_key: input["apiKey"].as_str().map(str::to_string),
        headers: HashMap::new(),
        max_tokens: None,
        session_id: input["sessionId"].as_str().map(str::to_string),
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    };
    Fixture {
        request,
        url: root["url"].as_str().unwrap().into(),
        headers: root["headers"].as_object().unwrap().clone(),
        body: root["body"].clone(),
    }
}

/// Every event of a stream but [`ProviderEvent::Opened`], and the error
/// that ended it (the stream must end there).
pub(crate) async fn collect(
    provider: &dyn Provider,
    request: ProviderRequest,
    cancel: CancellationToken,
) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    let mut stream = provider.stream(request, cancel);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ProviderEvent::Opened) => {}
            Ok(ev) => events.push(ev),
            Err(e) => {
                assert!(stream.next().await.is_none(), "the stream must end after an error");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

/// The deltas of one block, in order.
pub(crate) fn deltas(events: &[ProviderEvent], index: usize) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockDelta { index: i, delta } if *i == index => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

/// The last usage reported.
pub(crate) fn last_usage(events: &[ProviderEvent]) -> Usage {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            ProviderEvent::Usage(u) => Some((**u).clone()),
            _ => None,
        })
        .expect("a usage event")
}

pub(crate) fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp: 1,
        extra: Map::new(),
    })
}

pub(crate) fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a command".into(),
        parameters: serde_json::json!({"type": "object", "required": ["command"],
            "properties": {"command": {"type": "string"}}}),
    }
}

/// A request with one user message and the bash tool.
pub(crate) fn simple_request(model: Model, text: &str) -> ProviderRequest {
    ProviderRequest {
        model,
        system_prompt: "You are terse.".into(),
        messages: vec![user(text)],
        tools: vec![bash_tool()],
        thinking_level: ThinkingLevel::Off,
        api_key: Some("sk-test".into()),
        headers: HashMap::new(),
        max_tokens: None,
        session_id: None,
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    }
}

/// Keys of a JSON object, in order.
pub(crate) fn keys(v: &Value) -> Vec<String> {
    v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}
