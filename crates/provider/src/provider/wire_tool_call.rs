//! The streamed tool-call piece that OpenAI Chat Completions and Mistral spell
//! the same way (`{index, id, function: {name, arguments}}`), read leniently
//! (`provider::lenient`). Only the arguments differ: Chat Completions sends a
//! JSON text, Mistral a text or the arguments as JSON.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::provider::lenient;

/// A tool call's piece in a chunk's `delta.tool_calls`.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "A: Arguments"))]
pub struct ToolCall<A> {
    #[serde(deserialize_with = "lenient::u64")]
    pub index: Option<u64>,
    #[serde(deserialize_with = "lenient::string")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient::object")]
    pub function: Function<A>,
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "A: Arguments"))]
pub struct Function<A> {
    #[serde(deserialize_with = "lenient::text")]
    pub name: String,
    #[serde(deserialize_with = "arguments")]
    pub arguments: A,
}

/// How an API's `arguments` read from whatever JSON came.
pub trait Arguments: Default + Sized {
    fn read(value: Value) -> Self;
}

/// A JSON text; `""` when it is anything else (Chat Completions).
impl Arguments for String {
    fn read(value: Value) -> Self {
        match value {
            Value::String(text) => text,
            _ => String::new(),
        }
    }
}

/// The value as it came, `null` included (Mistral: a text or the arguments as JSON).
impl Arguments for Option<Value> {
    fn read(value: Value) -> Self {
        Some(value)
    }
}

fn arguments<'de, D: Deserializer<'de>, A: Arguments>(d: D) -> Result<A, D::Error> {
    Value::deserialize(d).map(A::read)
}
