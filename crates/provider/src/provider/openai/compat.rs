//! Quirks of OpenAI-compatible servers (pi-ai's `compat` for
//! `openai-completions`): detected from the provider name and base URL, then
//! overridden field by field by the model's `compat` object.

use serde_json::{Map, Value};

use crate::model::Model;

/// Resolved compatibility settings for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiCompat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub supports_usage_in_streaming: bool,
    pub supports_finish_reason: bool,
    /// `max_completion_tokens` or `max_tokens`.
    pub max_tokens_field: String,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_non_null_assistant_content: bool,
    pub requires_tools_with_tool_history: bool,
    pub requires_thinking_as_text: bool,
    pub requires_reasoning_content_on_assistant_messages: bool,
    /// `openai`, `deepseek`, `zai`, `qwen`, `qwen-chat-template`, `openrouter`,
    /// `together`, `string-thinking`, `ant-ling` (others fall back to no thinking field).
    pub thinking_format: String,
    pub supports_strict_mode: bool,
    pub zai_tool_stream: bool,
    pub send_session_affinity_headers: bool,
    /// `openrouter` or `openai`.
    pub session_affinity_format: String,
    /// `auto` (default), `enabled`, or anything else for never.
    pub prompt_cache_key_mode: String,
    /// `provider` routing object for OpenRouter (only from an explicit model compat).
    pub open_router_routing: Option<Value>,
    /// `providerOptions.gateway` routing for Vercel's gateway (explicit only).
    pub vercel_gateway_routing: Option<Value>,
    pub vllm_priority: Option<Value>,
    /// `chat_template_kwargs` values for the `chat-template` thinking format.
    pub chat_template_kwargs: Map<String, Value>,
    /// `chat_template_args` values for the `baseten` thinking format.
    pub chat_template_args: Map<String, Value>,
    /// Top-level field capping the thinking tokens (`thinking_token_budget` when
    /// `supportsThinkingTokenBudget`).
    pub thinking_token_budget_field: Option<String>,
    /// `anthropic`: Claude models behind OpenRouter get Anthropic-style `cache_control` markers.
    pub cache_control_format: Option<String>,
    pub supports_long_cache_retention: bool,
}

fn detect(model: &Model) -> OpenAiCompat {
    let p = model.provider.as_str();
    let url = model.base_url.as_str();
    let is_zai = p == "zai" || p == "zai-coding-cn" || url.contains("api.z.ai") || url.contains("open.bigmodel.cn");
    let is_together = p == "together" || url.contains("api.together.ai") || url.contains("api.together.xyz");
    let is_moonshot = p == "moonshotai" || p == "moonshotai-cn" || url.contains("api.moonshot.");
    let is_openrouter = p == "openrouter" || url.contains("openrouter.ai");
    let is_cf_workers = p == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let is_cf_gateway = p == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let is_nvidia = p == "nvidia" || url.contains("integrate.api.nvidia.com");
    let is_ant_ling = p == "ant-ling" || url.contains("api.ant-ling.com");
    let is_cerebras = p == "cerebras" || url.contains("cerebras.ai");
    let is_deepseek = p == "deepseek" || url.to_lowercase().contains("deepseek.com");
    let is_grok = p == "xai" || url.contains("api.x.ai");
    let is_non_standard = is_nvidia
        || is_cerebras
        || is_grok
        || is_together
        || url.contains("chutes.ai")
        || is_deepseek
        || is_zai
        || is_moonshot
        || p == "opencode"
        || url.contains("opencode.ai")
        || is_cf_workers
        || is_cf_gateway
        || is_ant_ling;
    let use_max_tokens = url.contains("chutes.ai")
        || is_deepseek
        || is_moonshot
        || is_cf_gateway
        || is_together
        || is_nvidia
        || is_ant_ling
        || is_zai;
    let is_openai = p == "openai" || url.contains("api.openai.com");
    let anthropic_via_openrouter = p == "openrouter" && model.id.starts_with("anthropic/");
    let thinking_format = if is_deepseek {
        "deepseek"
    } else if is_zai {
        "zai"
    } else if is_together {
        "together"
    } else if is_ant_ling {
        "ant-ling"
    } else if is_openrouter {
        "openrouter"
    } else {
        "openai"
    };
    OpenAiCompat {
        supports_store: !is_non_standard,
        supports_developer_role: is_openai,
        supports_reasoning_effort: !is_grok
            && !is_zai
            && !is_moonshot
            && !is_together
            && !is_cf_gateway
            && !is_nvidia
            && !is_ant_ling,
        supports_usage_in_streaming: true,
        supports_finish_reason: true,
        max_tokens_field: if use_max_tokens { "max_tokens" } else { "max_completion_tokens" }.to_string(),
        requires_tool_result_name: false,
        requires_assistant_after_tool_result: false,
        requires_non_null_assistant_content: false,
        requires_tools_with_tool_history: false,
        requires_thinking_as_text: false,
        requires_reasoning_content_on_assistant_messages: is_deepseek,
        thinking_format: thinking_format.to_string(),
        supports_strict_mode: false,
        zai_tool_stream: false,
        send_session_affinity_headers: is_openrouter,
        session_affinity_format: if is_openrouter { "openrouter" } else { "openai" }.to_string(),
        prompt_cache_key_mode: "auto".to_string(),
        open_router_routing: None,
        vercel_gateway_routing: None,
        vllm_priority: None,
        chat_template_kwargs: Map::new(),
        chat_template_args: Map::new(),
        thinking_token_budget_field: None,
        cache_control_format: anthropic_via_openrouter.then(|| "anthropic".to_string()),
        supports_long_cache_retention: !(is_together || is_cf_workers || is_cf_gateway || is_nvidia || is_ant_ling),
    }
}

impl OpenAiCompat {
    /// Detected settings with the model's explicit `compat` entries applied.
    pub fn resolve(model: &Model) -> OpenAiCompat {
        let mut c = detect(model);
        let Some(o) = &model.compat else { return c };
        let flag = |key: &str, target: &mut bool| {
            if let Some(b) = o.get(key).and_then(Value::as_bool) {
                *target = b;
            }
        };
        flag("supportsStore", &mut c.supports_store);
        flag("supportsDeveloperRole", &mut c.supports_developer_role);
        flag("supportsReasoningEffort", &mut c.supports_reasoning_effort);
        flag("supportsUsageInStreaming", &mut c.supports_usage_in_streaming);
        flag("supportsFinishReason", &mut c.supports_finish_reason);
        flag("requiresToolResultName", &mut c.requires_tool_result_name);
        flag("requiresAssistantAfterToolResult", &mut c.requires_assistant_after_tool_result);
        flag("requiresNonNullAssistantContent", &mut c.requires_non_null_assistant_content);
        flag("requiresToolsWithToolHistory", &mut c.requires_tools_with_tool_history);
        flag("requiresThinkingAsText", &mut c.requires_thinking_as_text);
        flag("requiresReasoningContentOnAssistantMessages", &mut c.requires_reasoning_content_on_assistant_messages);
        flag("supportsStrictMode", &mut c.supports_strict_mode);
        flag("zaiToolStream", &mut c.zai_tool_stream);
        flag("sendSessionAffinityHeaders", &mut c.send_session_affinity_headers);
        let text = |key: &str, target: &mut String| {
            if let Some(s) = o.get(key).and_then(Value::as_str) {
                *target = s.to_string();
            }
        };
        text("maxTokensField", &mut c.max_tokens_field);
        text("thinkingFormat", &mut c.thinking_format);
        text("sessionAffinityFormat", &mut c.session_affinity_format);
        text("promptCacheKeyMode", &mut c.prompt_cache_key_mode);
        c.open_router_routing = o.get("openRouterRouting").filter(|v| !v.is_null()).cloned();
        c.vercel_gateway_routing = o.get("vercelGatewayRouting").filter(|v| !v.is_null()).cloned();
        c.vllm_priority = o.get("vllmPriority").filter(|v| !v.is_null()).cloned();
        flag("supportsLongCacheRetention", &mut c.supports_long_cache_retention);
        if let Some(kwargs) = o.get("chatTemplateKwargs").and_then(Value::as_object) {
            c.chat_template_kwargs = kwargs.clone();
        }
        if let Some(args) = o.get("chatTemplateArgs").and_then(Value::as_object) {
            c.chat_template_args = args.clone();
        }
        if let Some(f) = o.get("cacheControlFormat").and_then(Value::as_str) {
            c.cache_control_format = Some(f.to_string());
        }
        c.thinking_token_budget_field = match o.get("thinkingTokenBudgetField").and_then(Value::as_str) {
            Some(field) => Some(field.to_string()),
            None => (o.get("supportsThinkingTokenBudget").and_then(Value::as_bool) == Some(true))
                .then(|| "thinking_token_budget".to_string()),
        };
        c
    }
}

/// The model's value for a thinking level (`thinkingLevelMap[level]`):
/// `None` when absent, `Some(Value::Null)` when mapped to null.
pub fn level_map<'a>(model: &'a Model, level: &str) -> Option<&'a Value> {
    model.thinking_level_map.as_ref().and_then(|m: &Map<String, Value>| m.get(level))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::convert::tests::model;

    #[test]
    fn detection_and_overrides() {
        let mut m = model(false);
        let c = OpenAiCompat::resolve(&m);
        assert!(c.supports_store && c.supports_reasoning_effort && !c.supports_developer_role);
        assert_eq!(c.max_tokens_field, "max_completion_tokens");
        m.base_url = "https://api.openai.com/v1".into();
        assert!(OpenAiCompat::resolve(&m).supports_developer_role);
        m.base_url = "https://api.deepseek.com".into();
        let d = OpenAiCompat::resolve(&m);
        assert_eq!(
            (d.thinking_format.as_str(), d.max_tokens_field.as_str(), d.supports_store),
            ("deepseek", "max_tokens", false)
        );
        m.compat =
            serde_json::json!({"supportsStore": true, "maxTokensField": "max_completion_tokens"}).as_object().cloned();
        let o = OpenAiCompat::resolve(&m);
        assert!(o.supports_store);
        assert_eq!(o.max_tokens_field, "max_completion_tokens");
    }
}
