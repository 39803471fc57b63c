//! The `ConverseStream` events (named by the event-stream message, not by a
//! field) and AWS error payloads as serde types, read leniently
//! (`provider::lenient`): a field of another JSON type reads as absent.

use serde::Deserialize;

use crate::provider::lenient;

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct MessageStart {
    #[serde(deserialize_with = "lenient::string")]
    pub role: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct BlockStart {
    #[serde(deserialize_with = "lenient::u64")]
    pub content_block_index: Option<u64>,
    #[serde(deserialize_with = "lenient::object")]
    pub start: Start,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Start {
    /// There whenever the key is (a tool block), whatever it holds.
    #[serde(deserialize_with = "lenient::present")]
    pub tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ToolUseStart {
    #[serde(deserialize_with = "lenient::text")]
    pub tool_use_id: String,
    #[serde(deserialize_with = "lenient::text")]
    pub name: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct BlockDelta {
    #[serde(deserialize_with = "lenient::u64")]
    pub content_block_index: Option<u64>,
    #[serde(deserialize_with = "lenient::present")]
    pub delta: Option<Delta>,
}

/// A block delta: a text, else a tool input, else reasoning (by which key is there).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Delta {
    #[serde(deserialize_with = "lenient::string")]
    pub text: Option<String>,
    #[serde(deserialize_with = "lenient::present")]
    pub tool_use: Option<ToolUseDelta>,
    #[serde(deserialize_with = "lenient::present")]
    pub reasoning_content: Option<Reasoning>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ToolUseDelta {
    #[serde(deserialize_with = "lenient::text")]
    pub input: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Reasoning {
    #[serde(deserialize_with = "lenient::string")]
    pub text: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub signature: Option<String>,
    /// Base64.
    #[serde(deserialize_with = "lenient::string")]
    pub redacted_content: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct BlockStop {
    #[serde(deserialize_with = "lenient::u64")]
    pub content_block_index: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct MessageStop {
    #[serde(deserialize_with = "lenient::text")]
    pub stop_reason: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Metadata {
    #[serde(deserialize_with = "lenient::present")]
    pub usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(deserialize_with = "lenient::u64")]
    pub input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub output_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub cache_write_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub total_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::some_each")]
    pub cache_details: Option<Vec<CacheDetail>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct CacheDetail {
    #[serde(deserialize_with = "lenient::string")]
    pub ttl: Option<String>,
    #[serde(deserialize_with = "lenient::u64")]
    pub input_tokens: Option<u64>,
}

/// An AWS JSON error payload (a non-2xx body or an exception in the stream).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct AwsError {
    #[serde(deserialize_with = "lenient::string")]
    pub message: Option<String>,
    #[serde(rename = "Message", deserialize_with = "lenient::string")]
    pub message_capital: Option<String>,
    #[serde(rename = "__type", deserialize_with = "lenient::string")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub code: Option<String>,
}

impl AwsError {
    /// The payload of `text`, if it is a JSON object.
    pub fn parse(text: &str) -> Option<AwsError> {
        lenient::event(serde_json::from_str(text).ok()?)
    }
}
