//! The token counts that several wire APIs spell the same way, read leniently
//! (`provider::lenient`: a count of another JSON type reads as absent). Each
//! API's own usage struct flattens or nests these and keeps only its own
//! spellings (Bedrock's camelCase counts, Mistral's six cached-token names).

use serde::Deserialize;

use crate::provider::lenient;

/// `prompt_tokens` and `completion_tokens`: OpenAI Chat Completions and
/// Mistral (`#[serde(flatten)]` into their usage).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct PromptCompletion {
    #[serde(deserialize_with = "lenient::u64")]
    pub prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub completion_tokens: Option<u64>,
}

/// `input_tokens` and `output_tokens`: OpenAI Responses and Anthropic
/// Messages (`#[serde(flatten)]` into their usage).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct InputOutput {
    #[serde(deserialize_with = "lenient::u64")]
    pub input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub output_tokens: Option<u64>,
}

/// The details of the prompt's tokens: Chat Completions'
/// `prompt_tokens_details`, Responses' `input_tokens_details`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct CachedDetails {
    #[serde(deserialize_with = "lenient::u64")]
    pub cached_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    pub cache_write_tokens: Option<u64>,
}

/// The details of the answer's tokens: Chat Completions'
/// `completion_tokens_details`, Responses' `output_tokens_details`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ReasoningDetails {
    #[serde(deserialize_with = "lenient::u64")]
    pub reasoning_tokens: Option<u64>,
}
