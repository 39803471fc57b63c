//! The typed shapes the non-chat APIs read: the catalog entry, the script's
//! context, and what each server answers. Every field is read leniently (see
//! [`lenient`]): one of another JSON type reads as absent, as pi's `typeof`
//! checks treat it. Values kept as `Value` are passed on as they are (the
//! script's `state`, a question as the script wrote it, numbers echoed in the
//! result with their own JSON form).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::provider::lenient;

/// The fields of a catalog entry these APIs read.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Entry {
    #[serde(deserialize_with = "lenient::text")]
    pub id: String,
    #[serde(deserialize_with = "lenient::text")]
    pub api: String,
    #[serde(deserialize_with = "lenient::text")]
    pub provider: String,
    #[serde(deserialize_with = "lenient::text")]
    pub base_url: String,
    #[serde(deserialize_with = "lenient::strings")]
    pub input: Vec<String>,
    #[serde(deserialize_with = "lenient::strings")]
    pub output: Vec<String>,
    #[serde(deserialize_with = "lenient::object")]
    pub compat: Compat,
    #[serde(deserialize_with = "lenient::object")]
    pub cost: Cost,
}

/// `compat` settings of a classifier entry.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Compat {
    #[serde(deserialize_with = "lenient::string")]
    pub image_input: Option<String>,
    #[serde(deserialize_with = "lenient::bool")]
    pub send_image_opt_in_header: Option<bool>,
}

/// Prices per million tokens.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default, rename_all = "camelCase")]
pub struct Rates {
    #[serde(deserialize_with = "lenient::f64")]
    pub input: Option<f64>,
    #[serde(deserialize_with = "lenient::f64")]
    pub output: Option<f64>,
    #[serde(deserialize_with = "lenient::f64")]
    pub cache_read: Option<f64>,
    #[serde(deserialize_with = "lenient::f64")]
    pub cache_write: Option<f64>,
}

/// An entry's `cost`: its rates and the price tiers above some input size.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Cost {
    #[serde(flatten)]
    pub rates: Rates,
    #[serde(deserialize_with = "lenient::each")]
    pub tiers: Vec<Tier>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Tier {
    #[serde(deserialize_with = "lenient::f64")]
    pub input_tokens_above: Option<f64>,
    #[serde(flatten)]
    pub rates: Rates,
}

/// A `classify()` context (pi's `ClassifierContext`).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ClassifyContext {
    /// The script's own JSON, sent as it is (`None`: absent).
    #[serde(deserialize_with = "lenient::any")]
    pub state: Option<Value>,
    /// In the script's order.
    #[serde(deserialize_with = "questions")]
    pub questions: Vec<(String, Question)>,
    /// Items that are no object count, with no MIME type or data.
    #[serde(deserialize_with = "lenient::each")]
    pub images: Vec<Image>,
}

impl ClassifyContext {
    pub fn read(context: &Value) -> ClassifyContext {
        lenient::event_ref(context).unwrap_or_default()
    }
}

/// An image of the context.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Image {
    #[serde(deserialize_with = "lenient::text")]
    pub mime_type: String,
    /// Sent as it is in System One's assets.
    #[serde(deserialize_with = "lenient::any")]
    pub data: Option<Value>,
}

impl Image {
    /// `data:<mime>;base64,<data>` (`""` for either when it is no string).
    pub fn data_url(&self) -> String {
        let data = self.data.as_ref().and_then(Value::as_str).unwrap_or_default();
        format!("data:{};base64,{data}", self.mime_type)
    }
}

/// One question of the context.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Question {
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    pub kind: Option<String>,
    /// Sent as it is to OpenAI Decisions.
    #[serde(deserialize_with = "lenient::any")]
    pub instructions: Option<Value>,
    #[serde(deserialize_with = "criteria")]
    pub criteria: Criteria,
    /// The question as the script wrote it (System One sends it on).
    #[serde(skip)]
    pub raw: Value,
}

impl Question {
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }

    /// The instructions, `""` when they are no string.
    pub fn instructions_text(&self) -> &str {
        self.instructions.as_ref().and_then(Value::as_str).unwrap_or_default()
    }

    /// A choice question's options: each key with its description (`None`
    /// when it is empty or no string).
    pub fn options(&self) -> &[(String, Option<String>)] {
        match &self.criteria {
            Criteria::Named(options) => options,
            _ => &[],
        }
    }

    /// A score question's levels, as the script gave them.
    pub fn levels(&self) -> &[Value] {
        match &self.criteria {
            Criteria::Levels(levels) => levels,
            _ => &[],
        }
    }

    /// A bool question's meaning of `true` or `false`, when it is a non-empty string.
    pub fn meaning(&self, of: bool) -> Option<&str> {
        let key = if of { "true" } else { "false" };
        self.options().iter().find(|(k, _)| k == key).and_then(|(_, m)| m.as_deref())
    }
}

/// A question's `criteria`: an object (choice options, bool meanings), a
/// list (score levels), or anything else (none).
#[derive(Default)]
pub enum Criteria {
    Named(Vec<(String, Option<String>)>),
    Levels(Vec<Value>),
    #[default]
    None,
}

fn criteria<'de, D: Deserializer<'de>>(d: D) -> Result<Criteria, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Object(members) => Criteria::Named(
            members
                .into_iter()
                .map(|(key, text)| {
                    let text = match text {
                        Value::String(s) if !s.is_empty() => Some(s),
                        _ => None,
                    };
                    (key, text)
                })
                .collect(),
        ),
        Value::Array(levels) => Criteria::Levels(levels),
        _ => Criteria::None,
    })
}

/// The `questions` object in its order; a question that is no object reads as an empty one.
fn questions<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Question)>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Object(members) => members
            .into_iter()
            .map(|(id, raw)| {
                let mut question: Question = lenient::event_ref(&raw).unwrap_or_default();
                question.raw = raw;
                (id, question)
            })
            .collect(),
        _ => Vec::new(),
    })
}

/// A classifier answer's `usage` (pi's `parseClassifierUsage` input).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ClassifierUsage {
    /// Present (`null` included) or not.
    #[serde(deserialize_with = "lenient::any")]
    pub input_tokens: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    pub output_tokens: Option<Value>,
}

/// System One's answer (inside Cloudflare's envelope for Cloudflare).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct SystemOneOutput {
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<ClassifierUsage>,
    /// Each question's answer, `None` when it is no object; `None` when `answers` is no object.
    #[serde(deserialize_with = "some_map")]
    pub answers: Option<BTreeMap<String, Option<SystemOneAnswer>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct SystemOneAnswer {
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub choice: Option<String>,
    /// Label → probability, checked one by one.
    #[serde(deserialize_with = "lenient::some_object")]
    pub probabilities: Option<Map<String, Value>>,
    /// Numbers are echoed in their own JSON form, so these stay values.
    #[serde(deserialize_with = "lenient::any")]
    pub confidence: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    pub score: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    pub noul: Option<Value>,
}

/// An object's members each read as an object `T` (`None` for a member that
/// is no object); `None` when the field is no object.
fn some_map<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Option<BTreeMap<String, Option<T>>>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Object(members) => Some(members.into_iter().map(|(k, v)| (k, lenient::event(v))).collect()),
        _ => None,
    })
}

/// Cloudflare's answer envelope.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Envelope {
    #[serde(deserialize_with = "lenient::bool")]
    pub success: Option<bool>,
    #[serde(deserialize_with = "lenient::items")]
    pub errors: Vec<CloudflareError>,
    /// The answer, or a run record around it; read again as one of them.
    #[serde(deserialize_with = "lenient::any")]
    pub result: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct CloudflareError {
    #[serde(deserialize_with = "lenient::string")]
    pub message: Option<String>,
}

/// A Cloudflare run record (`result` when it holds no `answers`).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct RunRecord {
    /// Present (even `null`): the record is the answer itself.
    #[serde(deserialize_with = "lenient::any")]
    pub answers: Option<Value>,
    /// Shown as it is when the run did not complete.
    #[serde(deserialize_with = "lenient::any")]
    pub state: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    pub result: Option<Value>,
}

/// OpenAI Decisions' answer.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct DecisionsOutput {
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<ClassifierUsage>,
    /// Items that are no object read as empty (they match no question).
    #[serde(deserialize_with = "lenient::some_each")]
    pub answers: Option<Vec<DecisionAnswer>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct DecisionAnswer {
    #[serde(deserialize_with = "lenient::string")]
    pub name: Option<String>,
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub choice: Option<String>,
    #[serde(deserialize_with = "lenient::some_each")]
    pub probabilities: Option<Vec<DecisionProbability>>,
    #[serde(deserialize_with = "lenient::any")]
    pub confidence: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    pub score: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    pub probability: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct DecisionProbability {
    #[serde(deserialize_with = "lenient::string")]
    pub value: Option<String>,
    #[serde(deserialize_with = "lenient::any")]
    pub probability: Option<Value>,
}

/// llama-server's `/tokenize` answer.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Tokenized {
    /// `None` unless it is a list whose every token reads.
    #[serde(deserialize_with = "token_ids")]
    pub tokens: Option<Vec<i64>>,
}

/// A token given with its piece (`with_pieces`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Piece {
    #[serde(deserialize_with = "lenient::i64")]
    id: Option<i64>,
}

/// Each token: an integer, or an object with an integer `id`.
fn token_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<i64>>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Array(items) => {
            items.iter().map(|t| lenient::event_ref::<Piece>(t).map_or_else(|| t.as_i64(), |p| p.id)).collect()
        }
        _ => None,
    })
}

/// llama-server's `/apply-template` answer.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Template {
    #[serde(deserialize_with = "lenient::string")]
    pub prompt: Option<String>,
}

/// llama-server's `/completion` answer: the first token's candidates.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Completion {
    #[serde(deserialize_with = "lenient::first")]
    pub completion_probabilities: Option<TokenProbabilities>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct TokenProbabilities {
    #[serde(deserialize_with = "lenient::some_each")]
    pub top_logprobs: Option<Vec<Candidate>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Candidate {
    #[serde(deserialize_with = "lenient::i64")]
    pub id: Option<i64>,
    #[serde(deserialize_with = "lenient::f64")]
    pub logprob: Option<f64>,
}

/// An item of a `generateImages()` context's `input`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct InputPart {
    #[serde(rename = "type", deserialize_with = "lenient::text")]
    pub kind: String,
    #[serde(deserialize_with = "lenient::text")]
    pub text: String,
    #[serde(deserialize_with = "lenient::text")]
    pub mime_type: String,
    #[serde(deserialize_with = "lenient::text")]
    pub data: String,
}

/// A `generateImages()` context.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ImagesContext {
    #[serde(deserialize_with = "lenient::each")]
    pub input: Vec<InputPart>,
}

/// OpenRouter's Chat Completions answer to an image request.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ImagesOutput {
    /// Echoed as it is unless `null`.
    #[serde(deserialize_with = "lenient::any")]
    pub id: Option<Value>,
    #[serde(deserialize_with = "lenient::some_object")]
    pub usage: Option<ImagesUsage>,
    #[serde(deserialize_with = "lenient::first")]
    pub choices: Option<Choice>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ImagesUsage {
    #[serde(deserialize_with = "lenient::f64")]
    pub prompt_tokens: Option<f64>,
    #[serde(deserialize_with = "lenient::f64")]
    pub completion_tokens: Option<f64>,
    #[serde(deserialize_with = "lenient::object")]
    pub prompt_tokens_details: PromptDetails,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct PromptDetails {
    #[serde(deserialize_with = "lenient::f64")]
    pub cached_tokens: Option<f64>,
    #[serde(deserialize_with = "lenient::f64")]
    pub cache_write_tokens: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Choice {
    #[serde(deserialize_with = "lenient::object")]
    pub message: ImageMessage,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ImageMessage {
    #[serde(deserialize_with = "lenient::string")]
    pub content: Option<String>,
    #[serde(deserialize_with = "lenient::each")]
    pub images: Vec<ImagePart>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ImagePart {
    /// A URL, or `{url}`; `""` for anything else.
    #[serde(deserialize_with = "image_url")]
    pub image_url: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UrlObject {
    #[serde(deserialize_with = "lenient::text")]
    url: String,
}

fn image_url<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::String(url) => url,
        other => lenient::event::<UrlObject>(other).map(|o| o.url).unwrap_or_default(),
    })
}
