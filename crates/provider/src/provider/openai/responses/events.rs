//! The Responses API's stream events and output items as serde types, read
//! leniently (`provider::lenient`): a field of another JSON type reads as
//! absent, an unknown event or item type is the catch-all.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::lenient;
use crate::provider::wire_usage::{CachedDetails, InputOutput, ReasoningDetails};

/// One stream event, by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type")]
pub(super) enum Event {
    #[serde(rename = "response.created")]
    Created {
        #[serde(default, deserialize_with = "lenient::object")]
        response: Created,
    },
    #[serde(rename = "response.output_item.added")]
    ItemAdded(ItemEvent),
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryDelta(Change),
    #[serde(rename = "response.reasoning_summary_part.done")]
    SummaryPartDone(Change),
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningDelta(Change),
    #[serde(rename = "response.output_text.delta", alias = "response.refusal.delta")]
    TextDelta(Change),
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta(Change),
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone(Change),
    #[serde(rename = "response.output_item.done")]
    ItemDone(ItemEvent),
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Completed(WithResponse),
    #[serde(rename = "error")]
    Error {
        #[serde(default, deserialize_with = "lenient::any")]
        code: Option<Value>,
        #[serde(default, deserialize_with = "lenient::any")]
        message: Option<Value>,
    },
    #[serde(rename = "response.failed")]
    Failed(WithResponse),
    #[serde(other)]
    Other,
}

/// An event that carries the final (or failed) response.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct WithResponse {
    #[serde(deserialize_with = "lenient::object")]
    pub response: Response,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Created {
    #[serde(deserialize_with = "lenient::string")]
    pub id: Option<String>,
}

/// A delta (or the final arguments) of the output item at `output_index`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Change {
    #[serde(deserialize_with = "lenient::u64")]
    pub output_index: Option<u64>,
    #[serde(deserialize_with = "lenient::text")]
    pub delta: String,
    #[serde(deserialize_with = "lenient::text")]
    pub arguments: String,
}

/// `response.output_item.added` / `.done`: the item as sent (a reasoning item
/// is kept whole as its block's signature) and read.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ItemEvent {
    #[serde(deserialize_with = "lenient::u64")]
    pub output_index: Option<u64>,
    #[serde(deserialize_with = "lenient::any")]
    pub item: Option<Value>,
}

impl ItemEvent {
    /// The raw item (`null` when absent) and its typed reading.
    pub fn item(self) -> (Value, Item) {
        let raw = self.item.unwrap_or(Value::Null);
        let item = if raw.is_object() { Item::deserialize(&raw).unwrap_or_default() } else { Item::Other };
        (raw, item)
    }
}

/// An output item, by its `type`.
#[derive(Deserialize, Default)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item {
    Reasoning {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::any")]
        encrypted_content: Option<Value>,
        #[serde(default, deserialize_with = "lenient::each")]
        summary: Vec<Part>,
        #[serde(default, deserialize_with = "lenient::each")]
        content: Vec<Part>,
    },
    Message {
        #[serde(default, deserialize_with = "lenient::text")]
        id: String,
        #[serde(default, deserialize_with = "lenient::string")]
        phase: Option<String>,
        #[serde(default, deserialize_with = "lenient::each")]
        content: Vec<Part>,
    },
    FunctionCall {
        #[serde(default, deserialize_with = "lenient::text")]
        call_id: String,
        #[serde(default, deserialize_with = "lenient::text")]
        id: String,
        #[serde(default, deserialize_with = "lenient::text")]
        name: String,
        #[serde(default, deserialize_with = "lenient::text")]
        arguments: String,
    },
    #[default]
    #[serde(other)]
    Other,
}

/// A part of a reasoning summary, reasoning content or message content.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Part {
    #[serde(rename = "type", deserialize_with = "lenient::text")]
    pub kind: String,
    #[serde(deserialize_with = "lenient::text")]
    pub text: String,
    #[serde(deserialize_with = "lenient::text")]
    pub refusal: String,
}

/// The final (or failed) response.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Response {
    #[serde(deserialize_with = "lenient::each")]
    pub output: Vec<OutputItem>,
    #[serde(deserialize_with = "lenient::string")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<WireUsage>,
    #[serde(deserialize_with = "lenient::string")]
    pub status: Option<String>,
    #[serde(deserialize_with = "lenient::object")]
    pub incomplete_details: IncompleteDetails,
    #[serde(deserialize_with = "lenient::some_object")]
    pub error: Option<ResponseError>,
}

/// An item of the final response's `output` (only reasoning items are read).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct OutputItem {
    #[serde(rename = "type", deserialize_with = "lenient::text")]
    pub kind: String,
    #[serde(deserialize_with = "lenient::text")]
    pub id: String,
    #[serde(deserialize_with = "lenient::any")]
    pub encrypted_content: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct WireUsage {
    #[serde(flatten)]
    pub counts: InputOutput,
    #[serde(deserialize_with = "lenient::u64")]
    pub total_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::object")]
    pub input_tokens_details: CachedDetails,
    #[serde(deserialize_with = "lenient::object")]
    pub output_tokens_details: ReasoningDetails,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct IncompleteDetails {
    #[serde(deserialize_with = "lenient::string")]
    pub reason: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ResponseError {
    #[serde(deserialize_with = "lenient::string")]
    pub code: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub message: Option<String>,
}

/// An event of the Codex backend as its mapping reads it before the Responses
/// decoder (pi's `mapCodexEvents`); every other type goes to [`Event`].
#[derive(Deserialize)]
#[serde(tag = "type")]
pub(super) enum CodexEvent {
    #[serde(rename = "error")]
    Error(CodexError),
    #[serde(rename = "response.failed")]
    Failed(WithResponse),
    /// `response.done` and `response.incomplete` read as `response.completed`.
    #[serde(rename = "response.done", alias = "response.completed", alias = "response.incomplete")]
    Done(WithResponse),
    #[serde(other)]
    Other,
}

/// A Codex `error` event: its `message` / `code`, at the top or in `error`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct CodexError {
    #[serde(deserialize_with = "lenient::string")]
    pub message: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub code: Option<String>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub error: Option<ResponseError>,
}

impl CodexError {
    /// What pi's wording shows: the `message`, else the `code`; each read at
    /// the top when it is a string there (even an empty one), else in `error`,
    /// and `None` when empty.
    pub fn detail(&self) -> Option<String> {
        let nested = self.error.as_ref();
        let pick = |top: &Option<String>, inner: Option<&Option<String>>| {
            top.as_ref().or(inner.and_then(Option::as_ref)).filter(|s| !s.is_empty()).cloned()
        };
        pick(&self.message, nested.map(|n| &n.message)).or_else(|| pick(&self.code, nested.map(|n| &n.code)))
    }
}
