//! Model descriptions and thinking levels.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Cost, Usage};

/// Price per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    #[serde(default, serialize_with = "crate::message::js_number")]
    pub input: f64,
    #[serde(default, serialize_with = "crate::message::js_number")]
    pub output: f64,
    #[serde(default, serialize_with = "crate::message::js_number")]
    pub cache_read: f64,
    #[serde(default, serialize_with = "crate::message::js_number")]
    pub cache_write: f64,
}

/// A model the agent can talk to (pi's `Model` object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    pub name: String,
    /// Wire API: `openai-completions`, `anthropic-messages`, `openai-responses`,
    /// `google-generative-ai`, `faux`.
    pub api: String,
    pub provider: String,
    pub base_url: String,
    pub reasoning: bool,
    /// Input modalities: `text`, `image`.
    pub input: Vec<String>,
    pub cost: ModelCost,
    pub context_window: u64,
    pub max_tokens: u64,
    /// `samplingParams` of `models.json`: fields merged into the OpenAI-style request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params: Option<Map<String, Value>>,
    /// `samplingParamsByThinkingLevel`: per pi thinking level, merged over `samplingParams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params_by_thinking_level: Option<Map<String, Value>>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// Per-level provider values; a `null` entry removes that level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<Map<String, Value>>,
    /// Provider quirks (see README, "Custom providers").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Map<String, Value>>,
    /// The other members of pi's catalog entry, which pi-rpc does not read
    /// (`type: "chat"`, `promptCache`, `inputLimits`, …), kept so that a
    /// built-in model is the object pi gives; none for a `models.json`
    /// model, as in pi.
    #[serde(flatten, default)]
    pub extra: Map<String, Value>,
}

impl Model {
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|m| m == "image")
    }

    /// `provider/id`.
    pub fn full_id(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// Cost of a usage record under this model's prices.
    pub fn cost_of(&self, usage: &Usage) -> Cost {
        let per = |tokens: u64, price: f64| price / 1_000_000.0 * tokens as f64;
        let input = per(usage.input, self.cost.input);
        let output = per(usage.output, self.cost.output);
        let cache_read = per(usage.cache_read, self.cost.cache_read);
        // pi-ai's arithmetic: 1-hour cache writes (`cacheWrite1h`, Anthropic)
        // are billed at twice the input price, the others at the write price.
        let long_write = usage.extra.get("cacheWrite1h").and_then(Value::as_u64).unwrap_or(0).min(usage.cache_write);
        let short_write = usage.cache_write - long_write;
        let cache_write =
            (self.cost.cache_write * short_write as f64 + self.cost.input * 2.0 * long_write as f64) / 1_000_000.0;
        Cost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
            total_from_provider: Some(false),
            extra: Default::default(),
        }
    }

    /// Thinking levels this model accepts, in cycling order.
    pub fn thinking_levels(&self) -> Vec<ThinkingLevel> {
        if !self.reasoning {
            return vec![ThinkingLevel::Off];
        }
        let map = self.thinking_level_map.as_ref();
        let mut levels = Vec::new();
        for level in ThinkingLevel::ALL {
            let entry = map.and_then(|m| m.get(level.as_str()));
            let allowed = match level {
                ThinkingLevel::Xhigh | ThinkingLevel::Max => matches!(entry, Some(v) if !v.is_null()),
                _ => !matches!(entry, Some(Value::Null)),
            };
            if allowed {
                levels.push(level);
            }
        }
        levels
    }

    /// pi's `resolveSamplingParams`: the model's `samplingParams`, then those
    /// of the level (clamped to the model's first), then the caller's, later
    /// keys winning; none when none of the three is given.
    pub fn sampling_for(
        &self,
        level: ThinkingLevel,
        caller: Option<&Map<String, Value>>,
    ) -> Option<Map<String, Value>> {
        let by_level = self.sampling_params_by_thinking_level.as_ref();
        let of_level = by_level.and_then(|m| m.get(self.clamp_thinking(level).as_str())).and_then(Value::as_object);
        if self.sampling_params.is_none() && of_level.is_none() && caller.is_none() {
            return None;
        }
        let mut merged = Map::new();
        for part in [self.sampling_params.as_ref(), of_level, caller].into_iter().flatten() {
            merged.extend(part.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Some(merged)
    }

    /// The supported level closest to `wanted` (higher first, then lower).
    pub fn clamp_thinking(&self, wanted: ThinkingLevel) -> ThinkingLevel {
        let levels = self.thinking_levels();
        if levels.contains(&wanted) {
            return wanted;
        }
        if wanted == ThinkingLevel::Off {
            return ThinkingLevel::Off;
        }
        let rank = wanted.rank();
        if let Some(up) =
            levels.iter().filter(|l| l.rank() > rank && **l != ThinkingLevel::Off).min_by_key(|l| l.rank())
            && wanted.rank() < ThinkingLevel::High.rank()
        {
            return *up;
        }
        levels.iter().filter(|l| l.rank() < rank).max_by_key(|l| l.rank()).copied().unwrap_or(ThinkingLevel::Off)
    }
}

/// pi's `thinkingBudgets` (settings, or a `streamSimple()` call's options):
/// the thinking token budget of each level up to `high`; a level left out
/// keeps the API's own default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinkingBudgets {
    pub minimal: Option<u64>,
    pub low: Option<u64>,
    pub medium: Option<u64>,
    pub high: Option<u64>,
}

impl ThinkingBudgets {
    /// Read leniently: a level whose value is no token count is left out.
    pub fn from_value(value: &Value) -> ThinkingBudgets {
        let level = |key: &str| value.get(key).and_then(Value::as_u64);
        ThinkingBudgets { minimal: level("minimal"), low: level("low"), medium: level("medium"), high: level("high") }
    }

    /// The budget given for `level` (pi's `clampReasoning`: `xhigh` and
    /// `max` take `high`'s), if any.
    pub fn for_level(&self, level: ThinkingLevel) -> Option<u64> {
        match level {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => self.minimal,
            ThinkingLevel::Low => self.low,
            ThinkingLevel::Medium => self.medium,
            ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => self.high,
        }
    }
}

/// Reasoning effort requested from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ThinkingLevel {
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    fn rank(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for a string that names no thinking level.
#[derive(Debug, Clone, thiserror::Error)]
#[error("Invalid thinking level: {0}. Valid levels: off, minimal, low, medium, high, xhigh, max")]
pub struct ParseThinkingLevelError(pub String);

impl FromStr for ThinkingLevel {
    type Err = ParseThinkingLevelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThinkingLevel::ALL.into_iter().find(|l| l.as_str() == s).ok_or_else(|| ParseThinkingLevelError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(reasoning: bool, map: Option<Value>) -> Model {
        Model {
            id: "m".into(),
            name: "m".into(),
            api: "openai-completions".into(),
            provider: "p".into(),
            base_url: String::new(),
            reasoning,
            input: vec!["text".into()],
            context_window: 1000,
            max_tokens: 100,
            cost: ModelCost { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 },
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            headers: None,
            thinking_level_map: map.and_then(|v| v.as_object().cloned()),
            compat: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn levels_follow_the_model() {
        assert_eq!(model(false, None).thinking_levels(), vec![ThinkingLevel::Off]);
        assert_eq!(model(true, None).thinking_levels().len(), 5);
        let m = model(true, Some(serde_json::json!({"xhigh": "xhigh", "max": "max", "minimal": null})));
        let names: Vec<_> = m.thinking_levels().iter().map(|l| l.as_str()).collect();
        assert_eq!(names, ["off", "low", "medium", "high", "xhigh", "max"]);
    }

    #[test]
    fn clamping_picks_the_nearest_supported_level() {
        let plain = model(true, None);
        assert_eq!(plain.clamp_thinking(ThinkingLevel::Max), ThinkingLevel::High);
        assert_eq!(plain.clamp_thinking(ThinkingLevel::Xhigh), ThinkingLevel::High);
        let no_minimal = model(true, Some(serde_json::json!({"minimal": null})));
        assert_eq!(no_minimal.clamp_thinking(ThinkingLevel::Minimal), ThinkingLevel::Low);
        assert_eq!(model(false, None).clamp_thinking(ThinkingLevel::High), ThinkingLevel::Off);
    }

    #[test]
    fn sampling_merges_model_level_and_caller_in_that_order() {
        let mut m = model(true, Some(serde_json::json!({"minimal": null})));
        assert_eq!(m.sampling_for(ThinkingLevel::High, None), None);
        m.sampling_params = serde_json::json!({"temperature": 1.0, "top_p": 0.95}).as_object().cloned();
        m.sampling_params_by_thinking_level =
            serde_json::json!({"off": {"temperature": 0.7}, "low": {"top_k": 20}}).as_object().cloned();
        let caller = serde_json::json!({"top_p": 0.5}).as_object().cloned();
        let merged = |level, caller: Option<&Map<String, Value>>| m.sampling_for(level, caller).map(Value::Object);
        assert_eq!(merged(ThinkingLevel::Off, None), Some(serde_json::json!({"temperature": 0.7, "top_p": 0.95})));
        // `minimal` is not supported: it clamps to `low` first.
        assert_eq!(
            merged(ThinkingLevel::Minimal, caller.as_ref()),
            Some(serde_json::json!({"temperature": 1.0, "top_p": 0.5, "top_k": 20}))
        );
    }

    #[test]
    fn budgets_are_read_leniently_and_extended_levels_take_high() {
        let b = ThinkingBudgets::from_value(&serde_json::json!({"low": 3000, "high": 9000, "medium": "lots"}));
        assert_eq!((b.for_level(ThinkingLevel::Low), b.for_level(ThinkingLevel::Medium)), (Some(3000), None));
        assert_eq!(b.for_level(ThinkingLevel::Max), Some(9000));
        assert_eq!(b.for_level(ThinkingLevel::Off), None);
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let m = model(false, None);
        let usage = Usage { input: 100, output: 50, ..Usage::default() };
        let c = m.cost_of(&usage);
        assert!((c.input - 0.0003).abs() < 1e-12);
        assert!((c.output - 0.00075).abs() < 1e-12);
        assert!((c.total - 0.00105).abs() < 1e-12);
        // Cache writes as pi-ai prices them: 1-hour writes at twice the input price.
        let mut usage = Usage { cache_write: 400_000, ..Usage::default() };
        let mut priced = m.clone();
        priced.cost.cache_write = 3.75;
        assert_eq!(priced.cost_of(&usage).cache_write, 1.5);
        usage.extra.insert("cacheWrite1h".into(), 100_000.into());
        assert_eq!(priced.cost_of(&usage).cache_write, (3.75 * 300_000.0 + priced.cost.input * 2.0 * 100_000.0) / 1e6);
    }
}
