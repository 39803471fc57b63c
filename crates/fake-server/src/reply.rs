//! Scripted replies of the fake model server: what one request gets back
//! (a stream of deltas, or an HTTP error), built in Rust or read from JSON.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// One streamed delta. Each part becomes one SSE event on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Reasoning text; `field` is the delta key (`reasoning_content`, `reasoning`, `reasoning_text`).
    Reasoning { field: String, text: String },
    /// Answer text (`delta.content`).
    Text(String),
    /// First delta of a tool call: id, name and `arguments: ""`, like OpenAI sends it.
    ToolCallStart { index: usize, id: String, name: String },
    /// A fragment of a tool call's JSON arguments.
    ToolCallArgs { index: usize, fragment: String },
    /// A `data:` payload sent verbatim (framed as one SSE event).
    RawData(String),
    /// Bytes written to the body verbatim, with no SSE framing added.
    RawBytes(Vec<u8>),
}

/// How a streamed reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Ending {
    /// Finish chunk, usage chunk, `data: [DONE]`, then the terminating HTTP chunk.
    #[default]
    Complete,
    /// No chunk with a `finish_reason`; `[DONE]` and a clean end of body still follow.
    NoFinishReason,
    /// Finish and usage chunks but no `[DONE]`; the body still ends cleanly.
    NoDone,
    /// The connection is closed abruptly after `cut_after` parts (mid-body).
    Cut,
    /// After `cut_after` parts the server stops writing and keeps the connection open
    /// until the client goes away or the server shuts down.
    Hang,
}

/// Token usage reported in the final chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FakeUsage {
    /// All prompt tokens, cached ones included (OpenAI semantics).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// A streamed (HTTP 200) reply.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamReply {
    /// Completion id put in every chunk (`chatcmpl-…`).
    pub id: String,
    pub parts: Vec<Part>,
    /// `None`: `tool_calls` when the reply has tool calls, else `stop`.
    pub finish_reason: Option<String>,
    /// `None`: an estimate is sent when the request asked for usage.
    pub usage: Option<FakeUsage>,
    pub ending: Ending,
    /// For [`Ending::Cut`] and [`Ending::Hang`]: how many parts go out first (default: all).
    pub cut_after: Option<usize>,
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyBody {
    Stream(StreamReply),
    /// A non-streaming error response.
    Error {
        status: u16,
        body: String,
    },
}

/// One scripted answer, with its timing and extra headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub body: ReplyBody,
    /// Pause before each streamed part (and before an error response).
    pub delay: Duration,
    /// With `delay`: pause before every frame of the stream, the ones that
    /// open and close it included, and before the body's end, so a client
    /// reads each frame on its own.
    pub delay_every_frame: bool,
    /// Extra response headers (e.g. `retry-after`).
    pub headers: Vec<(String, String)>,
}

/// A tool call to stream.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    pub id: String,
    pub name: String,
    /// The JSON arguments text, exactly as streamed.
    pub arguments: String,
    /// Number of fragments the arguments are split into (at least 1).
    pub pieces: usize,
}

impl FakeToolCall {
    /// A call whose arguments are streamed in three fragments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        FakeToolCall { id: id.into(), name: name.into(), arguments: arguments.into(), pieces: 3 }
    }

    /// Stream the arguments in `pieces` fragments.
    pub fn pieces(mut self, pieces: usize) -> Self {
        self.pieces = pieces.max(1);
        self
    }
}

/// Split `text` into at most `pieces` non-empty chunks of about equal size, on char boundaries.
pub fn split_text(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let pieces = pieces.clamp(1, chars.len());
    let size = chars.len().div_ceil(pieces);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Up to three deltas, none shorter than four chars (short texts stay whole).
fn delta_count(text: &str) -> usize {
    text.chars().count().div_ceil(4).clamp(1, 3)
}

impl Reply {
    fn stream(parts: Vec<Part>) -> Self {
        Reply {
            body: ReplyBody::Stream(StreamReply {
                id: "chatcmpl-fake".to_string(),
                parts,
                finish_reason: None,
                usage: None,
                ending: Ending::Complete,
                cut_after: None,
            }),
            delay: Duration::ZERO,
            delay_every_frame: false,
            headers: Vec::new(),
        }
    }

    /// A stream with no content at all.
    pub fn empty() -> Self {
        Reply::stream(Vec::new())
    }

    /// A text answer streamed in up to three deltas.
    pub fn text(text: &str) -> Self {
        Reply::empty().with_text(text)
    }

    /// A text answer streamed exactly in the given deltas.
    pub fn text_chunks<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Reply::stream(chunks.into_iter().map(|c| Part::Text(c.into())).collect())
    }

    /// Tool calls streamed one after another (index 0, 1, …), arguments split across chunks.
    pub fn tool_calls<I: IntoIterator<Item = FakeToolCall>>(calls: I) -> Self {
        calls.into_iter().fold(Reply::empty(), Reply::with_tool_call)
    }

    /// One tool call.
    pub fn tool_call(id: &str, name: &str, arguments: &str) -> Self {
        Reply::tool_calls([FakeToolCall::new(id, name, arguments)])
    }

    /// An HTTP error with a verbatim body.
    pub fn error(status: u16, body: impl Into<String>) -> Self {
        Reply {
            body: ReplyBody::Error { status, body: body.into() },
            delay: Duration::ZERO,
            delay_every_frame: false,
            headers: Vec::new(),
        }
    }

    /// An HTTP error with OpenAI's body shape:
    /// `{"error":{"message":…,"type":…,"param":null,"code":null}}`.
    pub fn openai_error(status: u16, message: &str, kind: &str) -> Self {
        let body = serde_json::json!({
            "error": {"message": message, "type": kind, "param": null, "code": null}
        });
        Reply::error(status, body.to_string())
    }

    /// An HTTP error with Anthropic's body shape:
    /// `{"type":"error","error":{"type":…,"message":…}}`.
    pub fn anthropic_error(status: u16, kind: &str, message: &str) -> Self {
        let body = serde_json::json!({"type": "error", "error": {"type": kind, "message": message}});
        Reply::error(status, body.to_string())
    }

    /// An HTTP error with Google's body shape:
    /// `{"error":{"code":…,"message":…,"status":…}}`.
    pub fn google_error(status: u16, code_status: &str, message: &str) -> Self {
        let body = serde_json::json!({"error": {"code": status, "message": message, "status": code_status}});
        Reply::error(status, body.to_string())
    }

    /// Access the stream script; errors have none, so builders on them are no-ops.
    fn stream_mut(&mut self) -> Option<&mut StreamReply> {
        match &mut self.body {
            ReplyBody::Stream(s) => Some(s),
            ReplyBody::Error { .. } => None,
        }
    }

    /// Append one part.
    pub fn with_part(mut self, part: Part) -> Self {
        if let Some(s) = self.stream_mut() {
            s.parts.push(part);
        }
        self
    }

    /// Append answer text in up to three deltas of at least four chars.
    pub fn with_text(self, text: &str) -> Self {
        split_text(text, delta_count(text)).into_iter().fold(self, |r, c| r.with_part(Part::Text(c)))
    }

    /// Insert reasoning (`reasoning_content`) before the existing parts, in up to three deltas.
    pub fn with_thinking(self, text: &str) -> Self {
        self.with_reasoning_field("reasoning_content", text)
    }

    /// Insert reasoning under another delta key (`reasoning`, `reasoning_text`).
    pub fn with_reasoning_field(mut self, field: &str, text: &str) -> Self {
        if let Some(s) = self.stream_mut() {
            let first_non_reasoning =
                s.parts.iter().position(|p| !matches!(p, Part::Reasoning { .. })).unwrap_or(s.parts.len());
            let new: Vec<Part> = split_text(text, delta_count(text))
                .into_iter()
                .map(|t| Part::Reasoning { field: field.to_string(), text: t })
                .collect();
            s.parts.splice(first_non_reasoning..first_non_reasoning, new);
        }
        self
    }

    /// Append a tool call at the next free index.
    pub fn with_tool_call(mut self, call: FakeToolCall) -> Self {
        if let Some(s) = self.stream_mut() {
            let index = s.parts.iter().filter(|p| matches!(p, Part::ToolCallStart { .. })).count();
            s.parts.push(Part::ToolCallStart { index, id: call.id, name: call.name });
            for fragment in split_text(&call.arguments, call.pieces) {
                s.parts.push(Part::ToolCallArgs { index, fragment });
            }
        }
        self
    }

    /// Report this usage in the final chunk.
    pub fn with_usage(mut self, usage: FakeUsage) -> Self {
        if let Some(s) = self.stream_mut() {
            s.usage = Some(usage);
        }
        self
    }

    /// Report `prompt` (cached included) and `completion` tokens, `cached` of them cache hits.
    pub fn usage(self, prompt: u64, completion: u64, cached: u64) -> Self {
        self.with_usage(FakeUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
            reasoning_tokens: 0,
        })
    }

    pub fn finish_reason(mut self, reason: &str) -> Self {
        if let Some(s) = self.stream_mut() {
            s.finish_reason = Some(reason.to_string());
        }
        self
    }

    /// Completion id sent in every chunk.
    pub fn id(mut self, id: &str) -> Self {
        if let Some(s) = self.stream_mut() {
            s.id = id.to_string();
        }
        self
    }

    /// Pause before each part.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub fn delay_ms(self, ms: u64) -> Self {
        self.delay(Duration::from_millis(ms))
    }

    /// Pause `ms` before every frame of the stream (not only its parts): a
    /// client then handles each frame before the next one arrives.
    pub fn paced_ms(mut self, ms: u64) -> Self {
        self.delay_every_frame = true;
        self.delay_ms(ms)
    }

    /// Add a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    fn ending(mut self, ending: Ending, after: Option<usize>) -> Self {
        if let Some(s) = self.stream_mut() {
            s.ending = ending;
            s.cut_after = after;
        }
        self
    }

    /// Close the connection abruptly after `parts` parts.
    pub fn cut_after(self, parts: usize) -> Self {
        self.ending(Ending::Cut, Some(parts))
    }

    /// Stop writing after `parts` parts and keep the connection open.
    pub fn hang_after(self, parts: usize) -> Self {
        self.ending(Ending::Hang, Some(parts))
    }

    /// End the body cleanly without any `finish_reason`.
    pub fn without_finish_reason(self) -> Self {
        self.ending(Ending::NoFinishReason, None)
    }

    /// End the body cleanly after the finish chunk, without `[DONE]`.
    pub fn without_done(self) -> Self {
        self.ending(Ending::NoDone, None)
    }

    /// Read a reply from its JSON script form (see [`ReplySpec`]).
    pub fn from_spec(spec: ReplySpec) -> Reply {
        spec.into_reply()
    }
}

/// JSON form of a [`Reply`], for script files. All fields are optional:
///
/// ```json
/// {"thinking": "…", "reasoningField": "reasoning_content",
///  "text": "…", "textChunks": ["He", "llo"],
///  "toolCalls": [{"id": "call_1", "name": "bash", "arguments": {"command": "ls"}, "pieces": 3}],
///  "usage": {"promptTokens": 10, "completionTokens": 5, "cachedTokens": 0},
///  "finishReason": "stop", "id": "chatcmpl-1", "delayMs": 20, "paceMs": 20,
///  "end": "complete|noFinishReason|noDone|cut|hang", "cutAfter": 2,
///  "headers": {"x-a": "b"},
///  "error": {"status": 500, "body": {"error": {"message": "boom"}}}}
/// ```
/// With `error` the reply is that HTTP error (`body` may be a string or JSON);
/// otherwise parts go out in the order thinking, text (or textChunks), tool calls.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplySpec {
    pub thinking: Option<String>,
    pub reasoning_field: Option<String>,
    pub text: Option<String>,
    pub text_chunks: Option<Vec<String>>,
    pub tool_calls: Vec<ToolCallSpec>,
    pub usage: Option<FakeUsage>,
    pub finish_reason: Option<String>,
    pub id: Option<String>,
    pub delay_ms: Option<u64>,
    /// A pause before every frame of the stream (`Reply::paced_ms`).
    pub pace_ms: Option<u64>,
    pub end: Option<Ending>,
    pub cut_after: Option<usize>,
    pub headers: BTreeMap<String, String>,
    pub error: Option<ErrorSpec>,
}

/// JSON form of a [`FakeToolCall`]; `arguments` may be a JSON string or a JSON value.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallSpec {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default)]
    pub pieces: Option<usize>,
}

/// JSON form of an error reply.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorSpec {
    pub status: u16,
    #[serde(default)]
    pub body: Value,
}

impl ReplySpec {
    fn into_reply(self) -> Reply {
        let mut reply = match self.error {
            Some(e) => {
                let body = match e.body {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                Reply::error(e.status, body)
            }
            None => Reply::empty(),
        };
        if let Some(chunks) = self.text_chunks {
            reply = chunks.into_iter().fold(reply, |r, c| r.with_part(Part::Text(c)));
        } else if let Some(text) = &self.text {
            reply = reply.with_text(text);
        }
        if let Some(thinking) = &self.thinking {
            let field = self.reasoning_field.as_deref().unwrap_or("reasoning_content");
            reply = reply.with_reasoning_field(field, thinking);
        }
        for call in self.tool_calls {
            let arguments = match call.arguments {
                Value::String(s) => s,
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            let mut fake = FakeToolCall::new(call.id, call.name, arguments);
            if let Some(p) = call.pieces {
                fake = fake.pieces(p);
            }
            reply = reply.with_tool_call(fake);
        }
        if let Some(usage) = self.usage {
            reply = reply.with_usage(usage);
        }
        if let Some(reason) = &self.finish_reason {
            reply = reply.finish_reason(reason);
        }
        if let Some(id) = &self.id {
            reply = reply.id(id);
        }
        if let Some(ms) = self.delay_ms {
            reply = reply.delay_ms(ms);
        }
        if let Some(ms) = self.pace_ms {
            reply = reply.paced_ms(ms);
        }
        if let Some(end) = self.end {
            reply = reply.ending(end, self.cut_after);
        }
        for (k, v) in &self.headers {
            reply = reply.header(k, v);
        }
        reply
    }
}

/// The script of a streamed reply (for the renderings' tests).
#[cfg(test)]
pub(crate) fn stream(reply: Reply) -> StreamReply {
    match reply.body {
        ReplyBody::Stream(s) => s,
        ReplyBody::Error { .. } => panic!("not a stream"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_text_keeps_chars_whole() {
        assert_eq!(split_text("héllo wörld", 3), vec!["héll", "o wö", "rld"]);
        assert_eq!(split_text("ab", 5), vec!["a", "b"]);
        assert!(split_text("", 3).is_empty());
    }

    #[test]
    fn builders_order_parts() {
        let r = Reply::text("hi").with_thinking("hmm").with_tool_call(FakeToolCall::new("c1", "bash", "{}").pieces(1));
        let ReplyBody::Stream(s) = r.body else { panic!("not a stream") };
        assert!(matches!(s.parts[0], Part::Reasoning { .. }));
        assert!(matches!(s.parts.last(), Some(Part::ToolCallArgs { index: 0, .. })));
    }

    #[test]
    fn spec_reads_json() {
        let spec: ReplySpec = serde_json::from_str(
            r#"{"text":"ok","toolCalls":[{"id":"c","name":"bash","arguments":{"command":"ls"},"pieces":1}],"end":"cut","cutAfter":1,"headers":{"x-a":"1"}}"#,
        )
        .unwrap();
        let r = Reply::from_spec(spec);
        assert_eq!(r.headers, vec![("x-a".to_string(), "1".to_string())]);
        let ReplyBody::Stream(s) = r.body else { panic!("not a stream") };
        assert_eq!(s.ending, Ending::Cut);
        assert_eq!(s.cut_after, Some(1));
        assert!(s.parts.contains(&Part::ToolCallArgs { index: 0, fragment: r#"{"command":"ls"}"#.into() }));
    }
}
