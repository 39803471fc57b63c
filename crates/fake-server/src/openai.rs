//! OpenAI Chat Completions wire format of the fake server: turns a scripted
//! [`StreamReply`] into the exact SSE bytes OpenAI streams.

use serde_json::{Value, json};

use super::reply::{Ending, FakeUsage, Part, StreamReply};

/// Fixed `created` timestamp, so that streams are byte-for-byte reproducible.
pub const CREATED: u64 = 1_700_000_000;

/// One write on the wire: an SSE event (or raw bytes) of the response body.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub bytes: Vec<u8>,
    /// True for frames made from the reply's parts (they count for `cut_after`).
    pub is_part: bool,
}

/// The request facts the rendering depends on.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    pub model: String,
    pub include_usage: bool,
    /// Estimated prompt tokens, used when the reply scripts no usage.
    pub prompt_estimate: u64,
}

impl RequestInfo {
    /// Read what matters from an OpenAI request body.
    pub fn from_body(body: &Value) -> Self {
        let model = body.get("model").and_then(Value::as_str).unwrap_or("fake-model").to_string();
        let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
        let messages_len = body.get("messages").map(|m| m.to_string().len() as u64).unwrap_or(0);
        RequestInfo { model, include_usage, prompt_estimate: messages_len.div_ceil(4) }
    }
}

fn sse(data: &str) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// The text of a `chat.completion.chunk` around its `delta`: everything but
/// the delta is the same for every chunk of a reply, so it is written once
/// (a stream of 100,000 deltas must not cost the server more than the client).
struct ChunkTemplate {
    /// `{"id":…,…,"choices":[{"index":0,"delta":`
    head: String,
    /// Whether each chunk ends with `"usage":null` (`stream_options.include_usage`).
    include_usage: bool,
}

impl ChunkTemplate {
    fn new(reply: &StreamReply, info: &RequestInfo) -> Self {
        let head = json!({
            "id": reply.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": info.model,
            "system_fingerprint": null,
        })
        .to_string();
        // `{…}` → `{…,"choices":[{"index":0,"delta":`
        let mut head = head[..head.len() - 1].to_string();
        head.push_str(r#","choices":[{"index":0,"delta":"#);
        ChunkTemplate { head, include_usage: info.include_usage }
    }

    fn chunk(&self, delta: &str, finish_reason: Option<&str>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + delta.len() + 80);
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(delta.as_bytes());
        out.extend_from_slice(br#","logprobs":null,"finish_reason":"#);
        match finish_reason {
            Some(reason) => out.extend_from_slice(Value::from(reason).to_string().as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"}]");
        if self.include_usage {
            out.extend_from_slice(br#","usage":null"#);
        }
        out.extend_from_slice(b"}\n\n");
        out
    }
}

fn usage_json(u: &FakeUsage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": u.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    })
}

fn part_delta(part: &Part) -> Option<String> {
    Some(match part {
        Part::Reasoning { field, text } => {
            let mut m = serde_json::Map::new();
            m.insert(field.clone(), Value::String(text.clone()));
            Value::Object(m).to_string()
        }
        // The common case, written without building a `Value`.
        Part::Text(t) => format!(r#"{{"content":{}}}"#, Value::from(t.as_str())),
        Part::ToolCallStart { index, id, name } => json!({"tool_calls": [{
            "index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}
        }]})
        .to_string(),
        Part::ToolCallArgs { index, fragment } => json!({"tool_calls": [{
            "index": index, "function": {"arguments": fragment}
        }]})
        .to_string(),
        Part::RawData(_) | Part::RawBytes(_) => return None,
    })
}

/// Characters of streamed output, for a usage estimate.
pub fn output_chars(reply: &StreamReply) -> u64 {
    reply
        .parts
        .iter()
        .map(|p| match p {
            Part::Reasoning { text, .. } | Part::Text(text) => text.chars().count(),
            Part::ToolCallStart { name, .. } => name.chars().count(),
            Part::ToolCallArgs { fragment, .. } => fragment.chars().count(),
            Part::RawData(_) | Part::RawBytes(_) => 0,
        })
        .sum::<usize>() as u64
}

/// All frames of a streamed reply, in order. For [`Ending::Cut`] and [`Ending::Hang`]
/// only the frames up to the cut are returned; the caller then closes or stalls.
pub fn render(reply: &StreamReply, info: &RequestInfo) -> Vec<Frame> {
    let template = ChunkTemplate::new(reply, info);
    let mut frames = Vec::with_capacity(reply.parts.len() + 4);
    frames.push(Frame {
        bytes: template.chunk(r#"{"role":"assistant","content":"","refusal":null}"#, None),
        is_part: false,
    });
    let limit = match reply.ending {
        Ending::Cut | Ending::Hang => reply.cut_after.unwrap_or(reply.parts.len()),
        _ => reply.parts.len(),
    };
    for part in reply.parts.iter().take(limit) {
        let bytes = match part {
            Part::RawData(d) => sse(d),
            Part::RawBytes(b) => b.clone(),
            other => match part_delta(other) {
                Some(delta) => template.chunk(&delta, None),
                None => continue,
            },
        };
        frames.push(Frame { bytes, is_part: true });
    }
    if matches!(reply.ending, Ending::Cut | Ending::Hang) {
        return frames;
    }
    if reply.ending != Ending::NoFinishReason {
        let has_tools = reply.parts.iter().any(|p| matches!(p, Part::ToolCallStart { .. }));
        let reason =
            reply.finish_reason.clone().unwrap_or_else(|| if has_tools { "tool_calls" } else { "stop" }.into());
        frames.push(Frame { bytes: template.chunk("{}", Some(&reason)), is_part: false });
    }
    let usage = reply.usage.or_else(|| {
        info.include_usage.then(|| FakeUsage {
            prompt_tokens: info.prompt_estimate,
            completion_tokens: output_chars(reply).div_ceil(4),
            cached_tokens: 0,
            reasoning_tokens: 0,
        })
    });
    if let Some(u) = usage {
        let obj = json!({
            "id": reply.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": info.model,
            "system_fingerprint": null,
            "choices": [],
            "usage": usage_json(&u),
        });
        frames.push(Frame { bytes: sse(&obj.to_string()), is_part: false });
    }
    if reply.ending != Ending::NoDone {
        frames.push(Frame { bytes: sse("[DONE]"), is_part: false });
    }
    frames
}

/// The frames' bytes as text (for the renderings' tests).
#[cfg(test)]
pub(crate) fn frames_text(frames: &[Frame]) -> String {
    frames.iter().map(|f| String::from_utf8_lossy(&f.bytes).into_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::frames_text as text;
    use crate::reply::{Reply, stream};

    #[test]
    fn text_stream_is_openai_shaped() {
        let info = RequestInfo { model: "m".into(), include_usage: true, prompt_estimate: 7 };
        let frames = render(&stream(Reply::text_chunks(["Hel", "lo"]).usage(10, 2, 4)), &info);
        let all = text(&frames);
        assert!(all.starts_with(
            r#"data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#
        ));
        assert!(all.contains(r#""delta":{"content":"Hel"}"#));
        assert!(all.contains(r#""delta":{},"logprobs":null,"finish_reason":"stop"}"#));
        assert!(all.contains(r#""prompt_tokens_details":{"cached_tokens":4"#));
        assert!(all.ends_with("data: [DONE]\n\n"));
    }

    #[test]
    fn cut_keeps_only_the_first_parts() {
        let frames = render(&stream(Reply::text_chunks(["a", "b", "c"]).cut_after(1)), &RequestInfo::default());
        assert_eq!(frames.len(), 2);
        assert!(!text(&frames).contains("[DONE]"));
    }

    #[test]
    fn tool_calls_finish_with_tool_calls() {
        let frames = render(&stream(Reply::tool_call("c1", "bash", r#"{"a":1}"#)), &RequestInfo::default());
        let all = text(&frames);
        assert!(all.contains(
            r#"{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":""}}]}"#
        ));
        assert!(all.contains(r#""finish_reason":"tool_calls""#));
    }
}
