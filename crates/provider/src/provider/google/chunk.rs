//! A `streamGenerateContent` chunk as serde types, read leniently
//! (`provider::lenient`): a field of another JSON type reads as absent.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::lenient;

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Chunk {
    #[serde(deserialize_with = "lenient::string")]
    pub response_id: Option<String>,
    /// Only the first candidate is read; one that is no object reads as empty.
    #[serde(deserialize_with = "lenient::each")]
    pub candidates: Vec<Candidate>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage_metadata: Option<UsageMetadata>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Candidate {
    #[serde(deserialize_with = "lenient::object")]
    pub content: Content,
    #[serde(deserialize_with = "lenient::string")]
    pub finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Content {
    /// A part that is no object reads as empty (and does nothing).
    #[serde(deserialize_with = "lenient::each")]
    pub parts: Vec<Part>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Part {
    #[serde(deserialize_with = "lenient::string")]
    pub thought_signature: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub text: Option<String>,
    #[serde(deserialize_with = "lenient::bool")]
    pub thought: Option<bool>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub function_call: Option<FunctionCall>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct FunctionCall {
    #[serde(deserialize_with = "lenient::text")]
    pub name: String,
    #[serde(deserialize_with = "lenient::string")]
    pub id: Option<String>,
    /// The tool's arguments: free-form JSON, passed on as text.
    #[serde(deserialize_with = "lenient::any")]
    pub args: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    #[serde(deserialize_with = "lenient::u64")]
    pub prompt_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub candidates_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub thoughts_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub cached_content_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub total_token_count: Option<u64>,
}

/// A chunk that reports an error (the SDK's check of each chunk).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ErrorChunk {
    #[serde(deserialize_with = "lenient::some_object")]
    pub error: Option<ChunkError>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ChunkError {
    #[serde(deserialize_with = "lenient::u64")]
    pub code: Option<u64>,
    /// Worded as JavaScript would: the string, `undefined`, or JSON.
    #[serde(deserialize_with = "lenient::any")]
    pub status: Option<Value>,
}
