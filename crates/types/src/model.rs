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
        let cache_write = per(usage.cache_write, self.cost.cache_write);
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
    fn cost_is_per_million_tokens() {
        let m = model(false, None);
        let usage = Usage { input: 100, output: 50, ..Usage::default() };
        let c = m.cost_of(&usage);
        assert!((c.input - 0.0003).abs() < 1e-12);
        assert!((c.output - 0.00075).abs() < 1e-12);
        assert!((c.total - 0.00105).abs() < 1e-12);
    }
}
