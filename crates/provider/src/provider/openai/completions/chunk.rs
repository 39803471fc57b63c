//! A Chat Completions chunk as serde types, read leniently
//! (`provider::lenient`): a field of another JSON type reads as absent.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::lenient;
use crate::provider::wire_usage::{CachedDetails, PromptCompletion, ReasoningDetails};

/// One chunk of the stream (the general reading; see `PlainChunk` for the common one).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Chunk {
    #[serde(deserialize_with = "lenient::string")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<ChunkUsage>,
    /// Only the first choice is read; one that is no object reads as empty.
    #[serde(deserialize_with = "lenient::each")]
    pub choices: Vec<Choice>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Choice {
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<ChunkUsage>,
    #[serde(deserialize_with = "lenient::string")]
    pub finish_reason: Option<String>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub delta: Option<Delta>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Delta {
    #[serde(deserialize_with = "lenient::string")]
    pub reasoning_content: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub reasoning: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub reasoning_text: Option<String>,
    /// OpenRouter's reasoning details, kept as sent: they are merged and
    /// replayed as the thinking signature.
    #[serde(deserialize_with = "lenient::any")]
    pub reasoning_details: Option<Value>,
    #[serde(deserialize_with = "lenient::string")]
    pub content: Option<String>,
    /// `None` when absent or no array; a call that is no object reads as empty.
    #[serde(deserialize_with = "lenient::some_each")]
    pub tool_calls: Option<Vec<ToolCall>>,
}

impl Delta {
    /// The first non-empty reasoning text, with the field it came in.
    pub fn reasoning(&self) -> Option<(&'static str, &str)> {
        [
            ("reasoning_content", &self.reasoning_content),
            ("reasoning", &self.reasoning),
            ("reasoning_text", &self.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, text)| text.as_deref().filter(|s| !s.is_empty()).map(|s| (field, s)))
    }
}

/// A tool call's piece (the shape Chat Completions and Mistral share).
pub(super) type ToolCall = crate::provider::wire_tool_call::ToolCall<String>;

/// A `usage` object (of the chunk or of its choice).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ChunkUsage {
    #[serde(flatten)]
    pub counts: PromptCompletion,
    #[serde(deserialize_with = "lenient::object")]
    pub prompt_tokens_details: CachedDetails,
    #[serde(deserialize_with = "lenient::u64")]
    pub prompt_cache_hit_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub cached_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::object")]
    pub completion_tokens_details: ReasoningDetails,
    #[serde(deserialize_with = "lenient::u64")]
    pub reasoning_tokens: Option<u64>,
}
