//! The extension wire protocol (version 1): the messages exchanged with an
//! extension process over its stdin/stdout, one JSON object per LF-terminated
//! line. See `README-extensions.md` for the prose description.
//!
//! Host → extension: `hello`, `event`, `request` (hooks, commands, tools),
//! `response` (answers to the extension's requests), `cancel`.
//! Extension → host: `register`, `request` (UI calls, messages, state),
//! `response` (answers to the host's requests).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::event::{AgentEvent, AssistantStreamEvent, ToolResultPayload};

/// Version announced in `hello`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Events an extension may subscribe to as notifications (no reply expected).
pub const NOTIFICATION_EVENTS: &[&str] = &[
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    MESSAGE_STREAM,
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "queue_update",
    "session_start",
    "session_shutdown",
    "session_info_changed",
    "model_select",
    "thinking_level_select",
    "session_compact",
    "session_compact_failed",
    "session_tree",
    "ui_prompt_start",
    "ui_prompt_end",
    "mcp_servers_change",
    "bus",
];

/// Notifications pi 1.6.0 awaits: each handler runs to its end before the
/// event goes to the client and the agent goes on. An extension that says
/// so (`awaitEvents`) gets them as `event` requests and answers once its
/// handlers are done; the others get them as notifications.
pub const AWAITED_EVENTS: &[&str] = &[
    "agent_start",
    "turn_start",
    "message_start",
    "message_update",
    // A streaming reply's `message_start` / `message_update` with pi's streaming message.
    MESSAGE_STREAM,
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "model_select",
    "thinking_level_select",
    // Once its handlers ran, the run is over (every pi module's host subscribes for `ctx.waitForIdle()`).
    "agent_settled",
];

/// What an extension subscribes to when it has handlers of `agent_settled`
/// (pi modules' hosts subscribe to `agent_settled` itself whether or not:
/// they await it only when they have handlers).
pub const AGENT_SETTLED_HANDLERS: &str = "agent_settled_handlers";

/// The subscription that says an extension has handlers of `event` to await.
fn awaited_subscription(event: &str) -> &str {
    if event == "agent_settled" { AGENT_SETTLED_HANDLERS } else { event }
}

/// Hooks: requests whose reply can change what happens next.
pub const HOOK_EVENTS: &[&str] = &[
    "tool_call",
    "tool_result",
    "session_before_switch",
    "session_before_fork",
    "session_before_compact",
    "session_before_tree",
    "user_bash",
    "input",
    "before_agent_start",
    "context",
    "context_with_system",
    "before_provider_headers",
    "before_provider_request",
    "after_provider_response",
    "provider_stream_event",
    "agent_before_settle",
    "turn_end_boundary",
    "resources_discover",
    "message_end_hook",
    "agent_end_hook",
];

/// Whether `name` is an event or hook pi-rpc sends.
pub fn is_known_event(name: &str) -> bool {
    NOTIFICATION_EVENTS.contains(&name) || HOOK_EVENTS.contains(&name)
}

/// A command an extension registers (`/name args`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CommandSpec {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// A tool an extension registers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolSpecWire {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments; an empty object schema when absent.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// `false`: registered but not given to the model until activated.
    #[serde(default = "default_true")]
    pub active: bool,
    /// A one-line entry for the system prompt's tool list.
    #[serde(default, rename = "promptSnippet")]
    pub prompt_snippet: Option<String>,
    /// Rule bullets for the system prompt while the tool is active.
    #[serde(default, rename = "promptGuidelines")]
    pub prompt_guidelines: Vec<String>,
    /// pi's `exposure` (`direct` when absent): who may call it.
    #[serde(default)]
    pub exposure: Option<String>,
    /// pi's `executionMode`: `sequential` runs its calls one at a time.
    #[serde(default, rename = "executionMode")]
    pub execution_mode: Option<String>,
    /// pi's `outputSchema`: codemode scripts get the result's `structuredContent`.
    #[serde(default, rename = "outputSchema")]
    pub output_schema: Option<Value>,
    /// pi's `prepareArguments`: the extension has one, asked before validation.
    #[serde(default, rename = "prepareArguments")]
    pub prepare_arguments: bool,
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn default_true() -> bool {
    true
}

/// The `register` message: what the extension provides and listens to.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Registration {
    /// Display name (defaults to the file name).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub commands: Vec<CommandSpec>,
    #[serde(default)]
    pub tools: Vec<ToolSpecWire>,
    /// Event and hook names (see [`NOTIFICATION_EVENTS`], [`HOOK_EVENTS`]).
    #[serde(default)]
    pub events: Vec<String>,
    /// The start-up `session_start` is sent as a request, and client
    /// commands wait for its answer (pi awaits `session_start` handlers
    /// before it reads the first command). Without it, it is a notification.
    #[serde(default, rename = "awaitSessionStart")]
    pub await_session_start: bool,
    /// The notifications of [`AWAITED_EVENTS`] it subscribes to are sent as
    /// requests, answered once its handlers are done (a pi module's, as pi
    /// awaits them). Without it, they are notifications.
    #[serde(default, rename = "awaitEvents")]
    pub await_events: bool,
    /// Virtual models (pi's `registerVirtualModel`): catalog entries with
    /// `api: "pi-virtual"`; each request made with one is routed first
    /// (the `route_model` request).
    #[serde(default, rename = "virtualModels")]
    pub virtual_models: Vec<crate::model::Model>,
    /// Providers (pi's `registerProvider`), in registration order.
    #[serde(default)]
    pub providers: Vec<ProviderSpec>,
    /// Command-line flags (pi's `registerFlag`); `hello`'s `flags` gives
    /// the values the command line set.
    #[serde(default)]
    pub flags: Vec<FlagSpec>,
}

/// A command-line flag an extension registers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FlagSpec {
    pub name: String,
    /// `"boolean"` or `"string"`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

/// A provider an extension registers (pi's `registerProvider(name, config)`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ProviderSpec {
    pub name: String,
    /// pi's config form without its functions: `baseUrl`, `apiKey`, `api`,
    /// `headers`, `authHeader`, `models` (the fields of `models.json`).
    #[serde(default)]
    pub config: Value,
    /// The extension streams the requests of the config's `api` itself
    /// (`streamSimple`): pi-rpc asks it with `provider_stream`.
    #[serde(default)]
    pub stream: bool,
    /// The display name of its OAuth login, when it has one.
    #[serde(default)]
    pub oauth: Option<String>,
    /// A native `Provider` object (`registerProvider(provider)`): its config
    /// replaces what was registered under its id instead of being merged over it.
    #[serde(default)]
    pub native: bool,
    /// A native provider's `auth.apiKey.resolve`: its key is asked for each
    /// request (`provider_oauth` with action `resolve`), as pi-ai resolves it.
    #[serde(default)]
    pub key: bool,
    /// The config form: the fields of each `registerProvider(name, config)`
    /// call, in order (`config` is them merged). A call made after the
    /// registration went out is merged alone over the provider's config.
    #[serde(default)]
    pub calls: Vec<Value>,
    /// The APIs of its classifier models the extension implements
    /// (`classifiers`; `"*"`: a native provider's own `classify`): pi-rpc
    /// asks it with `provider_typed`.
    #[serde(default)]
    pub classifiers: Vec<String>,
    /// Likewise for its image models (`images`, `generateImages`).
    #[serde(default)]
    pub images: Vec<String>,
}

impl ProviderSpec {
    /// The fields of the calls made since `before` (this extension's earlier
    /// registration of the name), merged in order; `None` when `before` is
    /// not an earlier state of this config form (first registration, a
    /// native provider, an unregistration in between).
    pub fn calls_since(&self, before: &ProviderSpec) -> Option<Value> {
        let fresh = self.calls.len().checked_sub(before.calls.len())?;
        if self.native
            || before.native
            || before.calls.is_empty()
            || fresh == 0
            || !self.calls.starts_with(&before.calls)
        {
            return None;
        }
        let mut merged = serde_json::Map::new();
        for call in &self.calls[before.calls.len()..] {
            if let Value::Object(fields) = call {
                merged.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        Some(Value::Object(merged))
    }

    /// The API its stream serves (the config's `api`).
    pub fn api(&self) -> Option<&str> {
        self.config.get("api").and_then(Value::as_str).filter(|a| !a.is_empty())
    }
}

impl Registration {
    /// Check names: commands and tools need a non-empty name without
    /// whitespace; tool names are `[A-Za-z0-9_-]+` (what providers accept).
    pub fn validate(&self) -> Result<(), String> {
        for c in &self.commands {
            if c.name.is_empty() || c.name.chars().any(char::is_whitespace) || c.name.starts_with('/') {
                return Err(format!("invalid command name {:?}: no spaces, no leading '/'", c.name));
            }
        }
        for t in &self.tools {
            if t.name.is_empty() || !t.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(format!("invalid tool name {:?}: use letters, digits, '_' and '-'", t.name));
            }
            if !t.parameters.is_object() {
                return Err(format!("tool {}: parameters must be a JSON Schema object", t.name));
            }
        }
        Ok(())
    }

    pub fn subscribes(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }

    /// Whether `event` goes to it as a request, answered once its handlers are done.
    pub fn awaits(&self, event: &str) -> bool {
        self.await_events && AWAITED_EVENTS.contains(&event) && self.subscribes(awaited_subscription(event))
    }
}

/// One parsed line from an extension.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Register(Registration),
    /// A request to the host; `id: None` is a notification (no response).
    Request {
        id: Option<Value>,
        method: String,
        params: Value,
    },
    /// The answer to one of the host's requests.
    Response {
        id: String,
        outcome: Result<Value, String>,
    },
    /// The extension no longer waits for its request `id` (a dialog it dismissed).
    Cancel {
        id: String,
    },
}

/// Parse one line. Errors describe what is wrong, for `extension_error`.
pub fn parse_line(line: &str) -> Result<Incoming, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON ({e}): {}", excerpt(line)))?;
    let Value::Object(mut obj) = value else {
        return Err(format!("expected a JSON object: {}", excerpt(line)));
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
    match kind.as_str() {
        "register" => serde_json::from_value(Value::Object(obj))
            .map(Incoming::Register)
            .map_err(|e| format!("invalid register message: {e}")),
        "request" => {
            let method = match obj.get("method") {
                Some(Value::String(m)) if !m.is_empty() => m.clone(),
                _ => return Err("request without a \"method\" string".to_string()),
            };
            let id = obj.remove("id").filter(|v| !v.is_null());
            let params = obj.remove("params").unwrap_or(Value::Object(Map::new()));
            Ok(Incoming::Request { id, method, params })
        }
        "response" => {
            let id = match obj.get("id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err("response without an \"id\"".to_string()),
            };
            let outcome = match obj.remove("error") {
                Some(Value::Null) | None => Ok(obj.remove("result").unwrap_or(Value::Null)),
                Some(Value::String(e)) => Err(e),
                Some(other) => {
                    Err(other.get("message").and_then(Value::as_str).map_or_else(|| other.to_string(), str::to_string))
                }
            };
            Ok(Incoming::Response { id, outcome })
        }
        "cancel" => match obj.get("id") {
            Some(Value::String(s)) => Ok(Incoming::Cancel { id: s.clone() }),
            Some(Value::Number(n)) => Ok(Incoming::Cancel { id: n.to_string() }),
            _ => Err("cancel without an \"id\"".to_string()),
        },
        "" => Err(format!("message without a \"type\": {}", excerpt(line))),
        other => Err(format!("unknown message type \"{other}\"")),
    }
}

fn excerpt(line: &str) -> String {
    const MAX: usize = 120;
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// `hello`, the first line an extension receives.
pub fn hello(extension_path: &str, cwd: &str, session_id: &str, session_file: Option<&str>) -> Value {
    json!({
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "extensionPath": extension_path,
        "cwd": cwd,
        "mode": "rpc",
        "hasUI": true,
        "sessionId": session_id,
        "sessionFile": session_file,
    })
}

/// A request id as a map key (strings as they are, numbers as written).
pub fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A host request.
pub fn request(id: &str, method: &str, params: Value) -> Value {
    json!({ "type": "request", "id": id, "method": method, "params": params })
}

/// The host's answer to an extension request.
pub fn response(id: &Value, outcome: Result<Value, String>) -> Value {
    match outcome {
        Ok(result) => json!({ "type": "response", "id": id, "result": result }),
        Err(error) => json!({ "type": "response", "id": id, "error": error }),
    }
}

/// Tell the extension the host stopped waiting for request `id` (abort).
pub fn cancel(id: &str) -> Value {
    json!({ "type": "cancel", "id": id })
}

/// A notification: `{"type":"event","event":{"type":<name>,…}}`.
pub fn event_message(event: Value) -> Value {
    json!({ "type": "event", "event": event })
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn payload(p: &ToolResultPayload) -> Value {
    let mut obj = Map::new();
    obj.insert("content".into(), to_value(&p.content));
    if let Some(d) = &p.details {
        obj.insert("details".into(), d.clone());
    }
    // pi's `result.structuredContent` (bash's record, read's text), as the wire has it too.
    if let Some(structured) = &p.structured_content {
        obj.insert("structuredContent".into(), (**structured).clone());
    }
    if let Some(usage) = &p.usage {
        obj.insert("usage".into(), to_value(usage));
    }
    if p.is_error {
        obj.insert("isError".into(), Value::Bool(true));
    }
    if p.terminate {
        obj.insert("terminate".into(), Value::Bool(true));
    }
    Value::Object(obj)
}

/// `event` with `parentToolCallId` last, for a call another tool made.
fn with_parent(mut event: Value, parent: &Option<String>) -> Value {
    if let (Some(parent), Some(obj)) = (parent, event.as_object_mut()) {
        obj.insert("parentToolCallId".into(), json!(parent));
    }
    event
}

/// pi-ai's event (without `partial`) for one of the core's stream events.
pub fn stream_event(e: &AssistantStreamEvent) -> Value {
    match e {
        AssistantStreamEvent::TextStart { content_index } => {
            json!({"type": "text_start", "contentIndex": content_index})
        }
        AssistantStreamEvent::TextDelta { content_index, delta } => {
            json!({"type": "text_delta", "contentIndex": content_index, "delta": delta})
        }
        AssistantStreamEvent::TextEnd { content_index, content } => {
            json!({"type": "text_end", "contentIndex": content_index, "content": content})
        }
        AssistantStreamEvent::ThinkingStart { content_index } => {
            json!({"type": "thinking_start", "contentIndex": content_index})
        }
        AssistantStreamEvent::ThinkingDelta { content_index, delta } => {
            json!({"type": "thinking_delta", "contentIndex": content_index, "delta": delta})
        }
        AssistantStreamEvent::ThinkingEnd { content_index, content } => {
            json!({"type": "thinking_end", "contentIndex": content_index, "content": content})
        }
        AssistantStreamEvent::ToolCallStart { content_index, id, tool_name } => {
            json!({"type": "toolcall_start", "contentIndex": content_index, "id": id, "toolName": tool_name})
        }
        AssistantStreamEvent::ToolCallDelta { content_index, delta } => {
            json!({"type": "toolcall_delta", "contentIndex": content_index, "delta": delta})
        }
        AssistantStreamEvent::ToolCallEnd { content_index, tool_call } => {
            json!({"type": "toolcall_end", "contentIndex": content_index, "toolCall": to_value(tool_call)})
        }
    }
}

/// What an extension subscribes to that takes a streaming reply's
/// `message_start` / `message_update` events with its message's fields,
/// one message per read of the provider (`Extensions::notify_stream`).
pub const MESSAGE_STREAM: &str = "message_stream";

/// The request that hands an awaited event to a pi module's host (its
/// payload the event): answered once the event's handlers are done.
pub const AWAITED_EVENT: &str = "event";

/// The request that starts run `run` of the handlers of an event pi emits
/// without awaiting it (`thinking_level_select`): answered once they ran
/// up to their first wait.
pub const UNAWAITED_STARTED: &str = "event_started";

/// The request answered once run `run` of [`UNAWAITED_STARTED`] is done.
pub const UNAWAITED_FINISHED: &str = "event_finished";

/// The request that hands a [`MESSAGE_STREAM`] to a pi module's host
/// while the reply's body is read on: answered `{"done"}` once every
/// handler it could run did (the others wait on a timer or I/O).
pub const STREAM_DISPATCH: &str = "stream_dispatch";

/// The request answered once the handlers of the last [`STREAM_DISPATCH`] are done.
pub const STREAM_DRAIN: &str = "stream_drain";

/// The payload of a [`MESSAGE_STREAM`] notification: the streaming
/// events of one read of a reply, with its message's `fields` after it.
pub fn message_stream_payload(events: &[AgentEvent], fields: Value) -> Value {
    let payloads: Vec<Value> = events
        .iter()
        .filter(|e| streams_message(e))
        .filter_map(|e| event_payload(e).map(|(_, payload)| payload))
        .collect();
    serde_json::json!({"type": MESSAGE_STREAM, "events": payloads, "fields": fields})
}

/// Whether `event` is one of a streaming reply's that extensions get with
/// its message's fields (`Extensions::notify_stream`).
pub fn streams_message(event: &AgentEvent) -> bool {
    matches!(event, AgentEvent::MessageStart { .. } | AgentEvent::MessageUpdate { .. })
}

/// The extension event name of a core event; `None` for events extensions
/// do not receive.
pub fn event_name(event: &AgentEvent) -> Option<&'static str> {
    Some(match event {
        AgentEvent::AgentStart => "agent_start",
        AgentEvent::AgentEnd { .. } => "agent_end",
        AgentEvent::AgentSettled { .. } => "agent_settled",
        AgentEvent::TurnStart => "turn_start",
        AgentEvent::TurnEnd { .. } => "turn_end",
        AgentEvent::MessageStart { .. } => "message_start",
        AgentEvent::MessageUpdate { .. } => "message_update",
        AgentEvent::MessageEnd { .. } => "message_end",
        AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
        AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
        AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
        AgentEvent::QueueUpdate { .. } => "queue_update",
        AgentEvent::SessionInfoChanged { .. } => "session_info_changed",
        // `model_select` / `thinking_level_select`: sent by the agent (see `event_payload`).
        _ => return None,
    })
}

/// The notification payload of a core event, named as pi names the
/// extension event; `None` for events extensions do not receive.
pub fn event_payload(event: &AgentEvent) -> Option<(&'static str, Value)> {
    let (name, data) = match event {
        AgentEvent::AgentStart => ("agent_start", json!({})),
        AgentEvent::AgentEnd { messages, will_retry } => {
            ("agent_end", json!({"messages": to_value(messages), "willRetry": will_retry}))
        }
        AgentEvent::AgentSettled { aborted, .. } => ("agent_settled", json!({"aborted": aborted})),
        AgentEvent::TurnStart => ("turn_start", json!({})),
        AgentEvent::TurnEnd { message, tool_results } => {
            ("turn_end", json!({"message": to_value(message), "toolResults": to_value(tool_results)}))
        }
        AgentEvent::MessageStart { message } => ("message_start", json!({"message": to_value(message)})),
        AgentEvent::MessageUpdate { event, .. } => {
            ("message_update", json!({"assistantMessageEvent": stream_event(event)}))
        }
        AgentEvent::MessageEnd { message } => ("message_end", json!({"message": to_value(message)})),
        AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args, parent_tool_call_id } => (
            "tool_execution_start",
            with_parent(json!({"toolCallId": tool_call_id, "toolName": tool_name, "args": args}), parent_tool_call_id),
        ),
        AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name, args, partial_result, parent_tool_call_id } => (
            "tool_execution_update",
            with_parent(
                json!({"toolCallId": tool_call_id, "toolName": tool_name, "args": args, "partialResult": payload(partial_result)}),
                parent_tool_call_id,
            ),
        ),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result,
            is_error,
            duration_ms,
            parent_tool_call_id,
        } => {
            let mut end = json!({"toolCallId": tool_call_id, "toolName": tool_name, "result": payload(result), "isError": is_error});
            if let (Some(ms), Some(obj)) = (duration_ms, end.as_object_mut()) {
                obj.insert("durationMs".into(), json!(ms));
            }
            ("tool_execution_end", with_parent(end, parent_tool_call_id))
        }
        AgentEvent::QueueUpdate { steering, follow_up } => {
            ("queue_update", json!({"steering": steering, "followUp": follow_up}))
        }
        AgentEvent::SessionInfoChanged { name } => ("session_info_changed", json!({"name": name})),
        // `model_select` and `thinking_level_select` carry what came before
        // (and why), which the core event does not: the agent sends them.
        _ => return None,
    };
    let mut data = data;
    if let Value::Object(obj) = &mut data {
        let mut with_type = Map::new();
        with_type.insert("type".into(), Value::String(name.to_string()));
        with_type.extend(std::mem::take(obj));
        *obj = with_type;
    }
    Some((name, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(native: bool, calls: Vec<Value>) -> ProviderSpec {
        ProviderSpec {
            name: "acme".into(),
            config: Value::Null,
            stream: false,
            oauth: None,
            native,
            key: false,
            calls,
            classifiers: Vec::new(),
            images: Vec::new(),
        }
    }

    #[test]
    fn a_later_registration_is_the_fields_of_its_own_calls() {
        let first = json!({"baseUrl": "x", "headers": {"a": "1"}});
        let before = spec(false, vec![first.clone()]);
        let after = spec(false, vec![first.clone(), json!({"name": "n"}), json!({"apiKey": "k", "name": "m"})]);
        assert_eq!(after.calls_since(&before), Some(json!({"name": "m", "apiKey": "k"})));
        // Not a continuation: the whole config applies.
        assert_eq!(before.calls_since(&before), None);
        assert_eq!(spec(false, vec![json!({"name": "other"}), json!({})]).calls_since(&before), None);
        assert_eq!(after.calls_since(&spec(true, Vec::new())), None);
        assert_eq!(spec(true, Vec::new()).calls_since(&before), None);
    }

    #[test]
    fn lines_parse_into_messages() {
        let reg = parse_line(
            r#"{"type":"register","name":"demo","commands":[{"name":"hi","description":"Say hi"}],"tools":[{"name":"t","description":"d","parameters":{"type":"object"}}],"events":["turn_start"]}"#,
        )
        .unwrap();
        let Incoming::Register(reg) = reg else { panic!("{reg:?}") };
        assert_eq!(reg.commands[0].name, "hi");
        assert!(reg.tools[0].active);
        assert!(reg.subscribes("turn_start"));
        assert!(reg.validate().is_ok());

        assert_eq!(
            parse_line(r#"{"type":"request","id":3,"method":"notify","params":{"message":"x"}}"#).unwrap(),
            Incoming::Request { id: Some(json!(3)), method: "notify".into(), params: json!({"message": "x"}) }
        );
        assert_eq!(
            parse_line(r#"{"type":"request","method":"setStatus"}"#).unwrap(),
            Incoming::Request { id: None, method: "setStatus".into(), params: json!({}) }
        );
        assert_eq!(
            parse_line(r#"{"type":"response","id":"h1","result":{"block":true}}"#).unwrap(),
            Incoming::Response { id: "h1".into(), outcome: Ok(json!({"block": true})) }
        );
        assert_eq!(parse_line(r#"{"type":"cancel","id":"a4"}"#).unwrap(), Incoming::Cancel { id: "a4".into() });
        assert_eq!(
            parse_line(r#"{"type":"response","id":"h2","error":{"message":"boom"}}"#).unwrap(),
            Incoming::Response { id: "h2".into(), outcome: Err("boom".into()) }
        );
    }

    #[test]
    fn garbage_is_described() {
        assert!(parse_line("hello world").unwrap_err().starts_with("invalid JSON"));
        assert!(parse_line("[1]").unwrap_err().contains("JSON object"));
        assert!(parse_line(r#"{"x":1}"#).unwrap_err().contains("without a \"type\""));
        assert!(parse_line(r#"{"type":"nope"}"#).unwrap_err().contains("unknown message type"));
        assert!(parse_line(r#"{"type":"request"}"#).unwrap_err().contains("method"));
        let bad =
            Registration { tools: vec![serde_json::from_value(json!({"name": "a b"})).unwrap()], ..Default::default() };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn events_carry_their_type_first() {
        let (name, v) = event_payload(&AgentEvent::TurnStart).unwrap();
        assert_eq!((name, v), ("turn_start", json!({"type": "turn_start"})));
        let (_, v) = event_payload(&AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args: Box::new(json!({"command": "ls"})),
            parent_tool_call_id: None,
        })
        .unwrap();
        assert_eq!(v.as_object().unwrap().keys().next().map(String::as_str), Some("type"));
        assert_eq!(v["args"]["command"], "ls");
        assert!(event_payload(&AgentEvent::SummarizationRetryFinished).is_none());
        assert_eq!(event_name(&AgentEvent::AgentStart), Some("agent_start"));
        assert_eq!(event_name(&AgentEvent::SummarizationRetryFinished), None);
    }
}
