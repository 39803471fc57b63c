//! OpenAI Responses wire format of the fake server: turns a scripted
//! [`StreamReply`] into the SSE bytes the Responses API streams
//! (`response.created`, one output item per block with its
//! `output_item.added` / deltas / `output_item.done`, then
//! `response.completed` with usage, or `response.incomplete` for `length`
//! and `content_filter`, with the API's reason for each).
//!
//! Reasoning becomes a `reasoning` item with one summary part and an
//! `encrypted_content`, text a `message` item, each tool call a
//! `function_call` item (`call_id` from the script, item id `fc_<n>`).
//! `RawData` goes out as one event named after its JSON `type`.

use serde_json::{Value, json};

use super::openai::{CREATED, Frame};
use super::reply::{Ending, FakeUsage, Part, StreamReply};
pub use super::request_info::RequestInfo;

/// Where a Responses request carries its prompt ([`RequestInfo::of`]).
pub const PROMPT: &[&str] = &["input"];

/// The response id: the script's id, or `resp_fake` for the default OpenAI-style id.
pub fn response_id(reply: &StreamReply) -> String {
    if reply.id.starts_with("chatcmpl") { "resp_fake".to_string() } else { reply.id.clone() }
}

#[derive(Debug, Clone, PartialEq)]
enum Item {
    Reasoning,
    Message,
    Call(usize),
}

struct Open {
    output_index: usize,
    item: Item,
    id: String,
    call_id: String,
    name: String,
    text: String,
}

struct Writer {
    frames: Vec<Frame>,
    seq: u64,
    open: Option<Open>,
    done_items: Vec<Value>,
}

impl Writer {
    fn event(&mut self, mut data: Value, is_part: bool) {
        let name = data.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        if let Some(o) = data.as_object_mut() {
            o.insert("sequence_number".into(), json!(self.seq));
        }
        self.seq += 1;
        self.frames.push(Frame { bytes: format!("event: {name}\ndata: {data}\n\n").into_bytes(), is_part });
    }

    fn close(&mut self) {
        let Some(o) = self.open.take() else { return };
        let (index, id) = (o.output_index, o.id.clone());
        let item = match o.item {
            Item::Reasoning => {
                let part = json!({"type": "summary_text", "text": o.text});
                self.event(
                    json!({"type": "response.reasoning_summary_text.done", "item_id": id, "output_index": index,
                    "summary_index": 0, "text": o.text}),
                    false,
                );
                self.event(
                    json!({"type": "response.reasoning_summary_part.done", "item_id": id, "output_index": index,
                    "summary_index": 0, "part": part}),
                    false,
                );
                json!({"id": id, "type": "reasoning", "encrypted_content": format!("enc-{index}"), "summary": [part]})
            }
            Item::Message => {
                let part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": o.text});
                self.event(
                    json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
                    "content_index": 0, "text": o.text, "logprobs": []}),
                    false,
                );
                self.event(
                    json!({"type": "response.content_part.done", "item_id": id, "output_index": index,
                    "content_index": 0, "part": part}),
                    false,
                );
                json!({"id": id, "type": "message", "status": "completed", "content": [part], "role": "assistant"})
            }
            Item::Call(_) => {
                self.event(
                    json!({"type": "response.function_call_arguments.done", "item_id": id,
                    "output_index": index, "arguments": o.text}),
                    false,
                );
                json!({"id": id, "type": "function_call", "status": "completed", "arguments": o.text,
                    "call_id": o.call_id, "name": o.name})
            }
        };
        self.event(json!({"type": "response.output_item.done", "output_index": index, "item": item}), false);
        self.done_items.push(item);
    }

    fn open(&mut self, item: Item, part: &Part) {
        self.close();
        let index = self.done_items.len();
        let (id, call_id, name) = match (&item, part) {
            (Item::Reasoning, _) => (format!("rs_fake_{index}"), String::new(), String::new()),
            (Item::Message, _) => (format!("msg_fake_{index}"), String::new(), String::new()),
            (Item::Call(i), Part::ToolCallStart { id, name, .. }) => (format!("fc_{i}"), id.clone(), name.clone()),
            (Item::Call(i), _) => (format!("fc_{i}"), format!("call_{i}"), String::new()),
        };
        let added = match &item {
            Item::Reasoning => json!({"id": id, "type": "reasoning", "summary": []}),
            Item::Message => json!({"id": id, "type": "message", "status": "in_progress", "content": [],
                "role": "assistant"}),
            Item::Call(_) => json!({"id": id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": call_id, "name": name}),
        };
        self.event(json!({"type": "response.output_item.added", "output_index": index, "item": added}), false);
        match &item {
            Item::Reasoning => self.event(
                json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
                false,
            ),
            Item::Message => self.event(
                json!({"type": "response.content_part.added", "item_id": id,
                "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}}),
                false,
            ),
            Item::Call(_) => {}
        }
        self.open = Some(Open { output_index: index, item, id, call_id, name, text: String::new() });
    }
}

fn item_of(part: &Part) -> Option<Item> {
    match part {
        Part::Reasoning { .. } => Some(Item::Reasoning),
        Part::Text(_) => Some(Item::Message),
        Part::ToolCallStart { index, .. } | Part::ToolCallArgs { index, .. } => Some(Item::Call(*index)),
        Part::RawData(_) | Part::RawBytes(_) => None,
    }
}

fn response(reply: &StreamReply, info: &RequestInfo, status: &str, output: &[Value], usage: Option<Value>) -> Value {
    json!({"id": response_id(reply), "object": "response", "created_at": CREATED, "status": status,
        "model": info.model, "output": output, "usage": usage})
}

/// All frames of a streamed reply, in order. For [`Ending::Cut`] and
/// [`Ending::Hang`] only the frames up to the cut are returned; with
/// [`Ending::NoFinishReason`] no terminal response event is sent.
pub fn render(reply: &StreamReply, info: &RequestInfo) -> Vec<Frame> {
    let mut w = Writer { frames: Vec::new(), seq: 0, open: None, done_items: Vec::new() };
    w.event(json!({"type": "response.created", "response": response(reply, info, "in_progress", &[], None)}), false);
    let limit = match reply.ending {
        Ending::Cut | Ending::Hang => reply.cut_after.unwrap_or(reply.parts.len()),
        _ => reply.parts.len(),
    };
    for part in reply.parts.iter().take(limit) {
        match part {
            Part::RawBytes(b) => w.frames.push(Frame { bytes: b.clone(), is_part: true }),
            Part::RawData(d) => {
                let name = serde_json::from_str::<Value>(d)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| "response.output_text.delta".to_string());
                w.frames.push(Frame { bytes: format!("event: {name}\ndata: {d}\n\n").into_bytes(), is_part: true });
            }
            other => {
                let Some(item) = item_of(other) else { continue };
                let same = matches!(&w.open, Some(o) if o.item == item) && !matches!(other, Part::ToolCallStart { .. });
                if !same {
                    w.open(item, other);
                }
                let Some(o) = w.open.as_mut() else { continue };
                let (index, id) = (o.output_index, o.id.clone());
                let delta = match other {
                    Part::Reasoning { text, .. } => {
                        o.text.push_str(text);
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": index,
                            "summary_index": 0, "delta": text})
                    }
                    Part::Text(t) => {
                        o.text.push_str(t);
                        json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                            "content_index": 0, "delta": t, "logprobs": []})
                    }
                    Part::ToolCallArgs { fragment, .. } => {
                        o.text.push_str(fragment);
                        json!({"type": "response.function_call_arguments.delta", "item_id": id,
                            "output_index": index, "delta": fragment})
                    }
                    _ => continue,
                };
                w.event(delta, true);
            }
        }
    }
    if matches!(reply.ending, Ending::Cut | Ending::Hang) {
        return w.frames;
    }
    w.close();
    if reply.ending == Ending::NoFinishReason {
        return w.frames;
    }
    let u = reply.usage.unwrap_or(FakeUsage {
        prompt_tokens: info.prompt_estimate,
        completion_tokens: super::openai::output_chars(reply).div_ceil(4),
        cached_tokens: 0,
        reasoning_tokens: 0,
    });
    let usage = json!({"input_tokens": u.prompt_tokens, "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.completion_tokens, "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.prompt_tokens + u.completion_tokens});
    let items = std::mem::take(&mut w.done_items);
    let finished = match reply.finish_reason.as_deref() {
        Some(finish @ ("length" | "content_filter")) => {
            let mut r = response(reply, info, "incomplete", &items, Some(usage));
            let reason = if finish == "length" { "max_output_tokens" } else { finish };
            r["incomplete_details"] = json!({"reason": reason});
            json!({"type": "response.incomplete", "response": r})
        }
        _ => json!({"type": "response.completed", "response": response(reply, info, "completed", &items, Some(usage))}),
    };
    w.event(finished, false);
    w.frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::{FakeToolCall, Reply, stream};

    #[test]
    fn items_per_block_and_a_completed_response() {
        let reply = Reply::text("Hello").with_thinking("hmm").with_tool_call(FakeToolCall::new("call_1", "bash", "{}"));
        let frames = render(&stream(reply.usage(10, 4, 2)), &RequestInfo { model: "g".into(), prompt_estimate: 1 });
        let all = crate::openai::frames_text(&frames);
        assert!(all.starts_with("event: response.created\ndata: {\"type\":\"response.created\""));
        assert!(all.contains(r#""item":{"id":"rs_fake_0","type":"reasoning","encrypted_content":"enc-0","summary":[{"type":"summary_text","text":"hmm"}]}"#));
        assert!(all.contains(r#""item":{"id":"fc_0","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"bash"}"#));
        assert!(all.contains(r#""usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":2}"#));
        assert!(all.contains("event: response.completed\n"));
        let length = render(&stream(Reply::text("x").finish_reason("length")), &RequestInfo::default());
        let last = String::from_utf8_lossy(&length.last().unwrap().bytes).into_owned();
        assert!(last.contains(r#""incomplete_details":{"reason":"max_output_tokens"}"#), "{last}");
        let filtered = render(&stream(Reply::text("x").finish_reason("content_filter")), &RequestInfo::default());
        let last = String::from_utf8_lossy(&filtered.last().unwrap().bytes).into_owned();
        assert!(last.contains(r#""incomplete_details":{"reason":"content_filter"}"#), "{last}");
    }
}
