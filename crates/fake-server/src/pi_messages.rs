//! pi's own message protocol (`pi-messages`, spoken by the Radius gateway)
//! in the fake server: a `POST …/messages` whose body is `{model, context,
//! options}` is answered with SSE `data:` lines, each a serialized assistant
//! message event without its `partial` (`start`, `text_start`/`_delta`/`_end`,
//! `thinking_*`, `toolcall_*`), then a terminal `done` with the usage.
//!
//! Consecutive parts of one kind form one block, as in the Anthropic
//! rendering; `RawData` goes out as one `data:` line as it is.

use serde_json::{Value, json};

use super::openai::Frame;
use super::reply::{Ending, FakeUsage, Part, StreamReply};
pub use super::request_info::RequestInfo;

/// True when a `…/messages` body is pi's protocol rather than Anthropic's.
pub fn is_pi_messages(body: &Value) -> bool {
    body.get("context").is_some_and(Value::is_object) && body.get("messages").is_none()
}

/// Where a pi-messages request carries its prompt ([`RequestInfo::of`]).
pub const PROMPT: &[&str] = &["context"];

fn data(value: &Value) -> Vec<u8> {
    format!("data: {value}\n\n").into_bytes()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Thinking,
    Text,
    Tool(usize),
}

/// The block being streamed: its content index, kind and what it holds so far.
struct Open {
    index: usize,
    kind: Kind,
    text: String,
    id: String,
    name: String,
}

struct Writer {
    frames: Vec<Frame>,
    open: Option<Open>,
    next_index: usize,
}

impl Writer {
    fn push(&mut self, value: Value, is_part: bool) {
        self.frames.push(Frame { bytes: data(&value), is_part });
    }

    fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        let index = open.index;
        let end = match open.kind {
            Kind::Text => json!({"type": "text_end", "contentIndex": index, "content": open.text}),
            Kind::Thinking => json!({"type": "thinking_end", "contentIndex": index, "content": open.text,
                "contentSignature": format!("sig-{index}")}),
            Kind::Tool(_) => {
                let arguments = serde_json::from_str::<Value>(&open.text).unwrap_or_else(|_| json!({}));
                json!({"type": "toolcall_end", "contentIndex": index, "toolCall":
                    {"type": "toolCall", "id": open.id, "name": open.name, "arguments": arguments}})
            }
        };
        self.push(end, false);
    }

    fn open(&mut self, kind: Kind, part: &Part) -> usize {
        self.close();
        let index = self.next_index;
        self.next_index += 1;
        let (id, name) = match part {
            Part::ToolCallStart { id, name, .. } => (id.clone(), name.clone()),
            _ => (format!("call_{index}"), String::new()),
        };
        let start = match kind {
            Kind::Thinking => json!({"type": "thinking_start", "contentIndex": index}),
            Kind::Text => json!({"type": "text_start", "contentIndex": index}),
            Kind::Tool(_) => json!({"type": "toolcall_start", "contentIndex": index, "id": id, "toolName": name}),
        };
        self.push(start, false);
        self.open = Some(Open { index, kind, text: String::new(), id, name });
        index
    }
}

fn kind_of(part: &Part) -> Option<Kind> {
    match part {
        Part::Reasoning { .. } => Some(Kind::Thinking),
        Part::Text(_) => Some(Kind::Text),
        Part::ToolCallStart { index, .. } | Part::ToolCallArgs { index, .. } => Some(Kind::Tool(*index)),
        Part::RawData(_) | Part::RawBytes(_) => None,
    }
}

/// pi's stop reason for a script's (OpenAI-style) finish reason.
fn stop_reason(reason: &str) -> &str {
    match reason {
        "tool_calls" => "toolUse",
        other => other,
    }
}

/// All frames of a streamed reply, in order (up to the cut for
/// [`Ending::Cut`] and [`Ending::Hang`]). Without a finish reason or a
/// terminal event the stream just ends.
pub fn render(reply: &StreamReply, info: &RequestInfo) -> Vec<Frame> {
    let u = reply.usage.unwrap_or(FakeUsage {
        prompt_tokens: info.prompt_estimate,
        completion_tokens: super::openai::output_chars(reply).div_ceil(4),
        cached_tokens: 0,
        reasoning_tokens: 0,
    });
    let mut w = Writer { frames: Vec::new(), open: None, next_index: 0 };
    w.push(json!({"type": "start"}), false);
    let limit = match reply.ending {
        Ending::Cut | Ending::Hang => reply.cut_after.unwrap_or(reply.parts.len()),
        _ => reply.parts.len(),
    };
    for part in reply.parts.iter().take(limit) {
        match part {
            Part::RawBytes(b) => w.frames.push(Frame { bytes: b.clone(), is_part: true }),
            Part::RawData(d) => w.frames.push(Frame { bytes: format!("data: {d}\n\n").into_bytes(), is_part: true }),
            other => {
                let Some(kind) = kind_of(other) else { continue };
                let same = w.open.as_ref().is_some_and(|o| o.kind == kind);
                let index = if same && !matches!(other, Part::ToolCallStart { .. }) {
                    w.open.as_ref().map_or(0, |o| o.index)
                } else {
                    w.open(kind, other)
                };
                let (name, delta) = match other {
                    Part::Reasoning { text, .. } => ("thinking_delta", text.clone()),
                    Part::Text(t) => ("text_delta", t.clone()),
                    Part::ToolCallArgs { fragment, .. } => ("toolcall_delta", fragment.clone()),
                    _ => continue,
                };
                if let Some(open) = &mut w.open {
                    open.text.push_str(&delta);
                }
                w.push(json!({"type": name, "contentIndex": index, "delta": delta}), true);
            }
        }
    }
    if matches!(reply.ending, Ending::Cut | Ending::Hang) {
        return w.frames;
    }
    w.close();
    if reply.ending == Ending::NoFinishReason || reply.ending == Ending::NoDone {
        return w.frames;
    }
    let has_tools = reply.parts.iter().any(|p| matches!(p, Part::ToolCallStart { .. }));
    let reason = reply.finish_reason.clone().unwrap_or_else(|| if has_tools { "tool_calls" } else { "stop" }.into());
    let input = u.prompt_tokens.saturating_sub(u.cached_tokens);
    let usage = json!({"input": input, "output": u.completion_tokens, "cacheRead": u.cached_tokens,
        "cacheWrite": 0, "totalTokens": input + u.cached_tokens + u.completion_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    w.push(json!({"type": "done", "reason": stop_reason(&reason), "usage": usage, "responseId": reply.id}), false);
    w.frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::{FakeToolCall, Reply, stream};

    fn events(frames: &[Frame]) -> Vec<Value> {
        frames
            .iter()
            .map(|f| {
                let text = String::from_utf8_lossy(&f.bytes).into_owned();
                serde_json::from_str(text.trim().strip_prefix("data: ").unwrap()).unwrap()
            })
            .collect()
    }

    #[test]
    fn blocks_deltas_and_the_terminal_event() {
        let reply = Reply::text("Hi there").with_thinking("hmm").with_tool_call(FakeToolCall::new("t1", "bash", "{}"));
        let all = events(&render(&stream(reply.usage(10, 5, 3)), &RequestInfo::default()));
        let types: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types[0], "start");
        assert_eq!(types[1], "thinking_start");
        assert!(types.contains(&"thinking_end") && types.contains(&"text_end"));
        let tool_end = all.iter().find(|e| e["type"] == "toolcall_end").unwrap();
        assert_eq!(tool_end["toolCall"], json!({"type": "toolCall", "id": "t1", "name": "bash", "arguments": {}}));
        let done = all.last().unwrap();
        assert_eq!(done["reason"], "toolUse");
        assert_eq!(done["usage"]["input"], 7);
        assert_eq!(done["usage"]["cacheRead"], 3);
        assert_eq!(done["usage"]["totalTokens"], 15);
        let text_end = all.iter().find(|e| e["type"] == "text_end").unwrap();
        assert_eq!(text_end["content"], "Hi there");
    }

    #[test]
    fn a_cut_stream_has_no_terminal_event() {
        let cut = events(&render(&stream(Reply::text_chunks(["a", "b"]).cut_after(1)), &RequestInfo::default()));
        assert!(cut.iter().all(|e| e["type"] != "done"), "{cut:?}");
        assert!(is_pi_messages(&json!({"model": "m", "context": {"messages": []}, "options": {}})));
        assert!(!is_pi_messages(&json!({"model": "m", "messages": []})));
    }
}
