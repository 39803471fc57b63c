//! Anthropic Messages wire format of the fake server: turns a scripted
//! [`StreamReply`] into the SSE bytes the Messages API streams
//! (`message_start`, one `content_block_*` run per block, `message_delta`,
//! `message_stop`), with a `ping` after the first block starts.
//!
//! Consecutive parts of one kind form one block: reasoning becomes a
//! `thinking` block closed by a `signature_delta`, text a `text` block, a tool
//! call a `tool_use` block fed by `input_json_delta`s. `RawData` goes out as
//! one event named after its JSON `type` (else `content_block_delta`).

use serde_json::{Value, json};

use super::openai::Frame;
use super::reply::{Ending, FakeUsage, Part, StreamReply};
pub use super::request_info::RequestInfo;

/// Where a Messages API request carries its prompt ([`RequestInfo::of`]).
pub const PROMPT: &[&str] = &["messages", "system"];

fn event(name: &str, data: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
}

/// The message id: the script's id, or `msg_fake` for the default OpenAI-style id.
pub fn message_id(reply: &StreamReply) -> String {
    if reply.id.starts_with("chatcmpl") { "msg_fake".to_string() } else { reply.id.clone() }
}

/// Anthropic's stop reason for a script's (OpenAI-style) finish reason.
fn stop_reason(reason: &str) -> &str {
    match reason {
        "stop" => "end_turn",
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        other => other,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Thinking,
    Text,
    Tool(usize),
}

fn block_of(part: &Part) -> Option<Block> {
    match part {
        Part::Reasoning { .. } => Some(Block::Thinking),
        Part::Text(_) => Some(Block::Text),
        Part::ToolCallStart { index, .. } | Part::ToolCallArgs { index, .. } => Some(Block::Tool(*index)),
        Part::RawData(_) | Part::RawBytes(_) => None,
    }
}

fn usage(reply: &StreamReply, info: &RequestInfo) -> FakeUsage {
    reply.usage.unwrap_or(FakeUsage {
        prompt_tokens: info.prompt_estimate,
        completion_tokens: super::openai::output_chars(reply).div_ceil(4),
        cached_tokens: 0,
        reasoning_tokens: 0,
    })
}

struct Writer {
    frames: Vec<Frame>,
    open: Option<(usize, Block)>,
    next_index: usize,
    pinged: bool,
}

impl Writer {
    fn push(&mut self, bytes: Vec<u8>, is_part: bool) {
        self.frames.push(Frame { bytes, is_part });
    }

    fn close(&mut self) {
        if let Some((index, block)) = self.open.take() {
            if block == Block::Thinking {
                let sig = json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "signature_delta", "signature": format!("sig-{index}")}});
                self.push(event("content_block_delta", &sig), false);
            }
            self.push(event("content_block_stop", &json!({"type": "content_block_stop", "index": index})), false);
        }
    }

    fn open(&mut self, block: Block, part: &Part) -> usize {
        self.close();
        let index = self.next_index;
        self.next_index += 1;
        let content = match (&block, part) {
            (Block::Thinking, _) => json!({"type": "thinking", "thinking": "", "signature": ""}),
            (Block::Text, _) => json!({"type": "text", "text": ""}),
            (Block::Tool(_), Part::ToolCallStart { id, name, .. }) => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
            (Block::Tool(i), _) => json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "", "input": {}}),
        };
        let start = json!({"type": "content_block_start", "index": index, "content_block": content});
        self.push(event("content_block_start", &start), false);
        if !self.pinged {
            self.pinged = true;
            self.push(event("ping", &json!({"type": "ping"})), false);
        }
        self.open = Some((index, block));
        index
    }
}

/// All frames of a streamed reply, in order. For [`Ending::Cut`] and
/// [`Ending::Hang`] only the frames up to the cut are returned.
pub fn render(reply: &StreamReply, info: &RequestInfo) -> Vec<Frame> {
    let u = usage(reply, info);
    let mut w = Writer { frames: Vec::new(), open: None, next_index: 0, pinged: false };
    let start = json!({"type": "message_start", "message": {
        "id": message_id(reply), "type": "message", "role": "assistant", "model": info.model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": u.prompt_tokens.saturating_sub(u.cached_tokens),
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.cached_tokens, "output_tokens": 1}}});
    w.push(event("message_start", &start), false);
    let limit = match reply.ending {
        Ending::Cut | Ending::Hang => reply.cut_after.unwrap_or(reply.parts.len()),
        _ => reply.parts.len(),
    };
    for part in reply.parts.iter().take(limit) {
        let bytes = match part {
            Part::RawBytes(b) => b.clone(),
            Part::RawData(d) => {
                let name = serde_json::from_str::<Value>(d)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| "content_block_delta".to_string());
                format!("event: {name}\ndata: {d}\n\n").into_bytes()
            }
            other => {
                let Some(block) = block_of(other) else { continue };
                let index = match &w.open {
                    Some((i, b)) if *b == block && !matches!(other, Part::ToolCallStart { .. }) => *i,
                    _ => w.open(block, other),
                };
                let delta = match other {
                    Part::Reasoning { text, .. } => json!({"type": "thinking_delta", "thinking": text}),
                    Part::Text(t) => json!({"type": "text_delta", "text": t}),
                    Part::ToolCallStart { .. } => json!({"type": "input_json_delta", "partial_json": ""}),
                    Part::ToolCallArgs { fragment, .. } => {
                        json!({"type": "input_json_delta", "partial_json": fragment})
                    }
                    Part::RawData(_) | Part::RawBytes(_) => continue,
                };
                event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": delta}))
            }
        };
        w.push(bytes, true);
    }
    if matches!(reply.ending, Ending::Cut | Ending::Hang) {
        return w.frames;
    }
    w.close();
    let has_tools = reply.parts.iter().any(|p| matches!(p, Part::ToolCallStart { .. }));
    let reason = match reply.ending {
        Ending::NoFinishReason => Value::Null,
        _ => {
            let r = reply.finish_reason.clone().unwrap_or_else(|| if has_tools { "tool_calls" } else { "stop" }.into());
            json!(stop_reason(&r))
        }
    };
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
        "usage": {"output_tokens": u.completion_tokens}});
    w.push(event("message_delta", &delta), false);
    if reply.ending != Ending::NoDone {
        w.push(event("message_stop", &json!({"type": "message_stop"})), false);
    }
    w.frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::frames_text as text;
    use crate::reply::{FakeToolCall, Reply, stream};

    #[test]
    fn thinking_text_and_tools_are_blocks() {
        let reply = Reply::text("Hi there").with_thinking("hmm").with_tool_call(FakeToolCall::new("t1", "bash", "{}"));
        let all = text(&render(&stream(reply.usage(10, 5, 3)), &RequestInfo { model: "c".into(), prompt_estimate: 1 }));
        assert!(
            all.starts_with("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_fake\"")
        );
        assert!(
            all.contains(r#""usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":3"#)
        );
        assert!(all.contains(r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking""#));
        assert!(all.contains(r#""delta":{"type":"signature_delta","signature":"sig-0"}"#));
        assert!(all.contains(r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#));
        assert!(all.contains(r#""content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}"#));
        assert!(all.contains(r#""delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}"#));
        assert!(all.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        assert_eq!(all.matches("event: ping").count(), 1);
    }

    #[test]
    fn endings() {
        let cut = render(&stream(Reply::text_chunks(["a", "b"]).cut_after(1)), &RequestInfo::default());
        assert!(!text(&cut).contains("message_delta"));
        let no_stop = text(&render(&stream(Reply::text("x").without_done()), &RequestInfo::default()));
        assert!(no_stop.contains("message_delta") && !no_stop.contains("message_stop"));
        let no_reason = text(&render(&stream(Reply::text("x").without_finish_reason()), &RequestInfo::default()));
        assert!(no_reason.contains(r#""stop_reason":null"#));
    }
}
