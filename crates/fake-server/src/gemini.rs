//! Gemini `streamGenerateContent?alt=sse` wire format of the fake server:
//! turns a scripted [`StreamReply`] into the `data:` chunks Gemini streams
//! (`\r\n\r\n`-separated), each with `candidates[0].content.parts`.
//!
//! Reasoning parts become `{"text", "thought": true}` parts, text parts
//! `{"text"}`, and each tool call one `functionCall` part with its complete
//! `args` and a `thoughtSignature` (Gemini never splits arguments). The last
//! chunk carries `finishReason` and `usageMetadata`. `RawData` goes out as one
//! `data:` chunk.

use serde_json::{Map, Value, json};

use super::openai::Frame;
use super::reply::{Ending, FakeUsage, Part, StreamReply};
pub use super::request_info::RequestInfo;

/// Where a Gemini request carries its prompt ([`RequestInfo::of`]).
pub const PROMPT: &[&str] = &["contents"];

fn chunk(data: &Value) -> Vec<u8> {
    format!("data: {data}\r\n\r\n").into_bytes()
}

fn response_id(reply: &StreamReply) -> String {
    if reply.id.starts_with("chatcmpl") { "fake-response".to_string() } else { reply.id.clone() }
}

fn candidate_chunk(reply: &StreamReply, parts: Vec<Value>, extra: Option<(&str, Value)>) -> Value {
    let mut candidate = Map::new();
    candidate.insert("content".into(), json!({"parts": parts, "role": "model"}));
    let mut usage = None;
    if let Some((reason, u)) = extra {
        candidate.insert("finishReason".into(), json!(reason));
        usage = Some(u);
    }
    candidate.insert("index".into(), json!(0));
    let mut out = Map::new();
    out.insert("candidates".into(), json!([candidate]));
    if let Some(u) = usage {
        out.insert("usageMetadata".into(), u);
    }
    out.insert("modelVersion".into(), json!("fake-gemini"));
    out.insert("responseId".into(), json!(response_id(reply)));
    Value::Object(out)
}

fn finish_reason(reason: &str) -> String {
    match reason {
        "stop" | "tool_calls" => "STOP".to_string(),
        "length" => "MAX_TOKENS".to_string(),
        other => other.to_uppercase(),
    }
}

/// All frames of a streamed reply, in order. For [`Ending::Cut`] and
/// [`Ending::Hang`] only the frames up to the cut are returned; with
/// [`Ending::NoFinishReason`] the last chunk has no `finishReason`.
pub fn render(reply: &StreamReply, info: &RequestInfo) -> Vec<Frame> {
    let mut frames = Vec::new();
    let limit = match reply.ending {
        Ending::Cut | Ending::Hang => reply.cut_after.unwrap_or(reply.parts.len()),
        _ => reply.parts.len(),
    };
    let parts: Vec<&Part> = reply.parts.iter().take(limit).collect();
    let mut i = 0;
    while i < parts.len() {
        let bytes = match parts[i] {
            Part::RawBytes(b) => b.clone(),
            Part::RawData(d) => format!("data: {d}\r\n\r\n").into_bytes(),
            Part::Reasoning { text, .. } => {
                chunk(&candidate_chunk(reply, vec![json!({"text": text, "thought": true})], None))
            }
            Part::Text(t) => chunk(&candidate_chunk(reply, vec![json!({"text": t})], None)),
            Part::ToolCallStart { index, id, name } => {
                let mut args = String::new();
                while let Some(Part::ToolCallArgs { index: j, fragment }) = parts.get(i + 1) {
                    if j != index {
                        break;
                    }
                    args.push_str(fragment);
                    i += 1;
                }
                let args: Value = serde_json::from_str(&args).unwrap_or_else(|_| json!({}));
                let part = json!({"functionCall": {"id": id, "name": name, "args": args},
                    "thoughtSignature": format!("c2lnLXt7{index:04}")});
                chunk(&candidate_chunk(reply, vec![part], None))
            }
            Part::ToolCallArgs { .. } => {
                i += 1;
                continue;
            }
        };
        frames.push(Frame { bytes, is_part: true });
        i += 1;
    }
    if matches!(reply.ending, Ending::Cut | Ending::Hang) {
        return frames;
    }
    let u = reply.usage.unwrap_or(FakeUsage {
        prompt_tokens: info.prompt_estimate,
        completion_tokens: super::openai::output_chars(reply).div_ceil(4),
        cached_tokens: 0,
        reasoning_tokens: 0,
    });
    let mut usage = Map::new();
    usage.insert("promptTokenCount".into(), json!(u.prompt_tokens));
    usage.insert("candidatesTokenCount".into(), json!(u.completion_tokens));
    usage.insert("totalTokenCount".into(), json!(u.prompt_tokens + u.completion_tokens + u.reasoning_tokens));
    if u.cached_tokens > 0 {
        usage.insert("cachedContentTokenCount".into(), json!(u.cached_tokens));
    }
    if u.reasoning_tokens > 0 {
        usage.insert("thoughtsTokenCount".into(), json!(u.reasoning_tokens));
    }
    let last = match reply.ending {
        Ending::NoFinishReason => {
            let mut c = candidate_chunk(reply, vec![json!({"text": ""})], None);
            c["usageMetadata"] = Value::Object(usage);
            c
        }
        _ => {
            let has_tools = reply.parts.iter().any(|p| matches!(p, Part::ToolCallStart { .. }));
            let reason =
                reply.finish_reason.clone().unwrap_or_else(|| if has_tools { "tool_calls" } else { "stop" }.into());
            candidate_chunk(reply, vec![json!({"text": ""})], Some((&finish_reason(&reason), Value::Object(usage))))
        }
    };
    frames.push(Frame { bytes: chunk(&last), is_part: false });
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::{FakeToolCall, Reply, stream};

    #[test]
    fn parts_thoughts_and_whole_function_calls() {
        let reply =
            Reply::text("Hi").with_thinking("hmm").with_tool_call(FakeToolCall::new("c1", "bash", r#"{"a":1}"#));
        let frames = render(&stream(reply.usage(10, 3, 0)), &RequestInfo::default());
        let all = crate::openai::frames_text(&frames);
        assert!(all.starts_with(
            r#"data: {"candidates":[{"content":{"parts":[{"text":"hmm","thought":true}],"role":"model"},"index":0}]"#
        ));
        assert!(all.contains(
            r#"{"functionCall":{"id":"c1","name":"bash","args":{"a":1}},"thoughtSignature":"c2lnLXt70000"}"#
        ));
        assert!(all.contains(r#""finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10"#));
        assert!(all.ends_with("\r\n\r\n"));
    }
}
