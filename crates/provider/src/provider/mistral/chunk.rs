//! A Mistral Conversations chunk as serde types, read leniently
//! (`provider::lenient`): a field of another JSON type reads as absent.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::lenient;
use crate::provider::wire_usage::PromptCompletion;

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Chunk {
    #[serde(deserialize_with = "lenient::string")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<ChunkUsage>,
    /// `None` when there is no array (the chunk is invalid); only the first
    /// choice is read, and one that is no object reads as empty.
    #[serde(deserialize_with = "lenient::some_each")]
    pub choices: Option<Vec<Choice>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Choice {
    #[serde(deserialize_with = "lenient::string")]
    pub finish_reason: Option<String>,
    #[serde(deserialize_with = "lenient::object")]
    pub delta: Delta,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Delta {
    #[serde(deserialize_with = "content")]
    pub content: Vec<Content>,
    #[serde(deserialize_with = "lenient::each")]
    pub tool_calls: Vec<ToolCall>,
}

/// A piece of a delta's `content`, which is a string or an array of strings
/// and `text` / `thinking` chunks; other items are left out.
pub(super) enum Content {
    Text(String),
    Thinking(String),
}

/// A typed item of a `content` array.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentItem {
    Text {
        #[serde(default, deserialize_with = "lenient::text")]
        text: String,
    },
    Thinking {
        /// The texts of its parts, joined (parts without a text are left out).
        #[serde(default, deserialize_with = "lenient::items")]
        thinking: Vec<ThinkingPart>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ThinkingPart {
    #[serde(deserialize_with = "lenient::string")]
    text: Option<String>,
}

fn content<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Content>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::String(s) => vec![Content::Text(s)],
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| match item {
                Value::String(s) => Some(Content::Text(s)),
                item => match lenient::event(item)? {
                    ContentItem::Text { text } => Some(Content::Text(text)),
                    ContentItem::Thinking { thinking } => {
                        Some(Content::Thinking(thinking.into_iter().filter_map(|p| p.text).collect()))
                    }
                    ContentItem::Other => None,
                },
            })
            .collect(),
        _ => Vec::new(),
    })
}

/// A tool call's piece (the shape Chat Completions and Mistral share).
pub(super) type ToolCall = crate::provider::wire_tool_call::ToolCall<Option<Value>>;

/// The usage counts; the cached tokens come under any of six names.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ChunkUsage {
    #[serde(flatten)]
    pub counts: PromptCompletion,
    #[serde(deserialize_with = "lenient::u64")]
    pub total_tokens: Option<u64>,
    #[serde(rename = "promptTokensDetails", deserialize_with = "lenient::object")]
    prompt_tokens_details_camel: CachedCamel,
    #[serde(rename = "prompt_tokens_details", deserialize_with = "lenient::object")]
    prompt_tokens_details: CachedSnake,
    #[serde(rename = "promptTokenDetails", deserialize_with = "lenient::object")]
    prompt_token_details_camel: CachedCamel,
    #[serde(rename = "prompt_token_details", deserialize_with = "lenient::object")]
    prompt_token_details: CachedSnake,
    #[serde(rename = "numCachedTokens", deserialize_with = "lenient::any")]
    num_cached_tokens_camel: Option<Value>,
    #[serde(rename = "num_cached_tokens", deserialize_with = "lenient::any")]
    num_cached_tokens: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CachedCamel {
    #[serde(rename = "cachedTokens", deserialize_with = "lenient::any")]
    cached_tokens: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CachedSnake {
    #[serde(deserialize_with = "lenient::any")]
    cached_tokens: Option<Value>,
}

impl ChunkUsage {
    /// The first of the six cached counts that is present and not `null`, if it is a count.
    pub fn cached(&self) -> Option<u64> {
        [
            &self.prompt_tokens_details_camel.cached_tokens,
            &self.prompt_tokens_details.cached_tokens,
            &self.prompt_token_details_camel.cached_tokens,
            &self.prompt_token_details.cached_tokens,
            &self.num_cached_tokens_camel,
            &self.num_cached_tokens,
        ]
        .into_iter()
        .find_map(|v| v.as_ref().filter(|v| !v.is_null()))
        .and_then(Value::as_u64)
    }
}
