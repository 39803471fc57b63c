//! [`ApiOptions`]: the pi-ai call options an extension's model call gives
//! beyond what the agent's own requests set, read once from the call's
//! options and applied by each wire API as pi-ai's `dist/api/*` applies them.

use serde_json::{Map, Number, Value};

use super::shared::CacheRetention;
use crate::model::{Model, ThinkingBudgets, ThinkingLevel};

/// pi-ai's call options beyond the request's model, messages and level; the
/// agent's own requests set `thinking_budgets` (settings' `thinkingBudgets`)
/// alone. Which wire API takes which (as pi-ai's APIs do):
///
/// | field | APIs |
/// |---|---|
/// | `temperature`, `tool_choice` | openai-completions, openai-responses, azure-openai-responses, openai-codex-responses, anthropic-messages, google-generative-ai, mistral-conversations, bedrock-converse-stream |
/// | `thinking_budget` | anthropic-messages (`thinkingBudgetTokens`), google-generative-ai (`thinking.budgetTokens`) |
/// | `thinking_budgets` | anthropic-messages and bedrock-converse-stream (budget-based Claude), openai-completions (the compat's budget field), google-generative-ai / google-vertex (Gemini 2.5 budgets) |
/// | `max_tokens_as_given` | every API: a provider-specific `stream()` call's output cap is the caller's `maxTokens` alone, not fitted to the window |
/// | `thinking_unsaid` | anthropic-messages, google-generative-ai: such a call says nothing of thinking and sends no thinking setting |
/// | `effort_unsaid` | anthropic-messages: `thinkingEnabled` without `effort` (adaptive thinking sends no effort) |
/// | `thinking_display` | anthropic-messages (`thinking.display`) |
/// | `metadata` | anthropic-messages (its string `user_id` only) |
/// | `service_tier` | openai-responses, openai-codex-responses |
/// | `reasoning_summary` | openai-responses, azure-openai-responses, openai-codex-responses |
/// | `cache_retention` | openai-completions, openai-responses, anthropic-messages, mistral-conversations, bedrock-converse-stream |
/// | `sampling_params` | openai-completions, openai-responses, azure-openai-responses (over the model's own, merged over the body last) |
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiOptions {
    /// As the caller wrote it (`0` goes as `0`, not `0.0`).
    pub temperature: Option<Number>,
    /// The API's own `toolChoice` value, as the caller wrote it.
    pub tool_choice: Option<Value>,
    pub thinking_budget: Option<u64>,
    /// pi's `thinkingBudgets`: the budget of each level, over pi's defaults.
    pub thinking_budgets: ThinkingBudgets,
    pub max_tokens_as_given: bool,
    pub thinking_unsaid: bool,
    pub effort_unsaid: bool,
    pub thinking_display: Option<String>,
    pub metadata: Option<Value>,
    pub service_tier: Option<Value>,
    pub reasoning_summary: Option<String>,
    /// The caller's `cacheRetention`, over `PI_CACHE_RETENTION`.
    pub cache_retention: Option<CacheRetention>,
    pub sampling_params: Option<Map<String, Value>>,
}

impl ApiOptions {
    /// The options of an extension's `modelStream` call (the host's names:
    /// pi-ai's own, plus `thinkingBudget`, `maxTokensAsGiven`,
    /// `thinkingUnsaid`, `effortUnsaid` it derives from the API's options).
    /// A value of the wrong type is left out, as pi-ai ignores it.
    pub fn from_call(options: &Value) -> ApiOptions {
        let flag = |key: &str| options.get(key).and_then(Value::as_bool) == Some(true);
        let text = |key: &str| options.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        let given = |key: &str| options.get(key).filter(|v| !v.is_null()).cloned();
        ApiOptions {
            temperature: match options.get("temperature") {
                Some(Value::Number(n)) => Some(n.clone()),
                _ => None,
            },
            tool_choice: given("toolChoice"),
            thinking_budget: options.get("thinkingBudget").and_then(Value::as_u64),
            thinking_budgets: options.get("thinkingBudgets").map(ThinkingBudgets::from_value).unwrap_or_default(),
            max_tokens_as_given: flag("maxTokensAsGiven"),
            thinking_unsaid: flag("thinkingUnsaid"),
            effort_unsaid: flag("effortUnsaid"),
            thinking_display: text("thinkingDisplay"),
            metadata: given("metadata"),
            service_tier: given("serviceTier"),
            reasoning_summary: text("reasoningSummary"),
            cache_retention: options.get("cacheRetention").and_then(Value::as_str).and_then(CacheRetention::named),
            sampling_params: options.get("samplingParams").and_then(Value::as_object).cloned(),
        }
    }

    /// Claude's `thinking.display` (pi-ai's default `summarized`).
    pub fn display(&self) -> &str {
        self.thinking_display.as_deref().unwrap_or("summarized")
    }

    /// Merge the sampling parameters over `body`, last, as pi-ai does: the
    /// model's own (`samplingParams`, then those of `level`), then the caller's.
    pub fn apply_sampling(&self, model: &Model, level: ThinkingLevel, body: &mut Map<String, Value>) {
        for (k, v) in model.sampling_for(level, self.sampling_params.as_ref()).into_iter().flatten() {
            body.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_call_options_and_skips_wrong_types() {
        let o = ApiOptions::from_call(&json!({
            "temperature": 0.5, "toolChoice": "any", "cacheRetention": "none", "serviceTier": "flex",
            "reasoningSummary": "detailed", "thinkingDisplay": "omitted", "metadata": {"user_id": "u"},
            "samplingParams": {"top_p": 0.9}, "effortUnsaid": true
        }));
        assert_eq!(o.temperature.as_ref().and_then(Number::as_f64), Some(0.5));
        assert_eq!(ApiOptions::from_call(&json!({"temperature": 0})).temperature.map(Value::Number), Some(json!(0)));
        assert_eq!(o.cache_retention, Some(CacheRetention::None));
        assert_eq!(o.display(), "omitted");
        assert!(o.effort_unsaid);
        let mut body = Map::new();
        body.insert("top_p".into(), json!(1));
        let model: Model = serde_json::from_value(json!({"id": "m", "name": "m", "api": "openai-completions",
            "provider": "p", "baseUrl": "", "reasoning": true, "input": ["text"], "cost": {}, "contextWindow": 1,
            "maxTokens": 1, "samplingParams": {"top_p": 0.7, "top_k": 3}}))
        .unwrap();
        o.apply_sampling(&model, ThinkingLevel::Off, &mut body);
        assert_eq!(Value::Object(body), json!({"top_p": 0.9, "top_k": 3}));
        let budgets = ApiOptions::from_call(&json!({"thinkingBudgets": {"low": 100, "high": "x"}})).thinking_budgets;
        assert_eq!(budgets, ThinkingBudgets { low: Some(100), ..Default::default() });
        let o = ApiOptions::from_call(&json!({"temperature": "hot", "samplingParams": [1], "cacheRetention": 3}));
        assert_eq!(o, ApiOptions::default());
        assert_eq!(o.display(), "summarized");
    }
}
