//! pi-ai 1.6.0's built-in providers, declared once: everything pi-rpc's
//! catalog, credentials and logins read of a provider, and what the
//! extension host makes pi-ai's provider object of (it gets this table as
//! JSON, [`builtin_provider_table_json`]).

use serde_json::{Value, json};

use super::auth::ANTHROPIC_AUTH_TOKEN_ENV;

/// A built-in provider's API-key auth: what pi-ai calls the key, and the
/// environment variables carrying it, in lookup order (`env-api-keys.js`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiKeyAuth {
    pub label: &'static str,
    pub env_vars: &'static [&'static str],
}

/// A built-in provider's OAuth login as pi-ai describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OAuthAuth {
    /// pi-ai's name of the login ("Anthropic (Claude Pro/Max)").
    pub name: &'static str,
    /// Whether it is a subscription (`isSubscription`).
    pub subscription: bool,
    /// The sign-in button's words (`loginLabel`), when pi-ai has them.
    pub login_label: Option<&'static str>,
}

/// How a built-in provider narrows its models to a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFilter {
    /// GitHub Copilot's `filterModels`: an OAuth login's `availableModelIds`.
    Account,
    /// OpenAI's `filterAllModels`: a ChatGPT login reaches no classifier.
    Subscription,
}

/// Where a built-in provider's remote catalog comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteCatalog {
    /// pi's catalog server, without the provider's login.
    Shared,
    /// OpenRouter's: narrowed to the user's key, replacing the shipped one.
    Personal,
    /// Radius's own: once stored, it replaces the shipped one.
    Radius,
}

/// A built-in provider of pi-ai 1.6.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinProvider {
    /// The provider id.
    pub name: &'static str,
    /// pi-ai's name of the provider (the only one pi 1.6.0 shows).
    pub display_name: &'static str,
    /// The wire API of its chat models (the main one when they use several).
    pub api: &'static str,
    /// The base URL its models default to (`models.json` entries may omit it).
    pub base_url: &'static str,
    /// The provider object's `baseUrl` (pi-ai's; none where it is the models' business).
    pub provider_base_url: Option<&'static str>,
    pub api_key: Option<ApiKeyAuth>,
    pub oauth: Option<OAuthAuth>,
    /// Whether it has chat models (TypeSafe has classifiers alone).
    pub chat: bool,
    /// Whether its calls go by each model's API (its catalog's APIs), else its one API for all.
    pub by_model: bool,
    pub classify: bool,
    pub images: bool,
    pub model_filter: Option<ModelFilter>,
    pub catalog: RemoteCatalog,
}

const fn p(
    name: &'static str,
    display_name: &'static str,
    api: &'static str,
    base_url: &'static str,
) -> BuiltinProvider {
    BuiltinProvider {
        name,
        display_name,
        api,
        base_url,
        provider_base_url: Some(base_url),
        api_key: None,
        oauth: None,
        chat: true,
        by_model: false,
        classify: false,
        images: false,
        model_filter: None,
        catalog: RemoteCatalog::Shared,
    }
}

impl BuiltinProvider {
    const fn key(self, label: &'static str, env_vars: &'static [&'static str]) -> BuiltinProvider {
        BuiltinProvider { api_key: Some(ApiKeyAuth { label, env_vars }), ..self }
    }

    const fn login(self, name: &'static str, subscription: bool, login_label: Option<&'static str>) -> BuiltinProvider {
        BuiltinProvider { oauth: Some(OAuthAuth { name, subscription, login_label }), ..self }
    }

    /// pi-ai's provider object has no `baseUrl` (or another one than its models').
    const fn provider_url(self, url: Option<&'static str>) -> BuiltinProvider {
        BuiltinProvider { provider_base_url: url, ..self }
    }

    const fn by_model(self) -> BuiltinProvider {
        BuiltinProvider { by_model: true, ..self }
    }

    const fn classifies(self) -> BuiltinProvider {
        BuiltinProvider { classify: true, ..self }
    }

    const fn filter(self, filter: ModelFilter) -> BuiltinProvider {
        BuiltinProvider { model_filter: Some(filter), ..self }
    }
}

const COMPLETIONS: &str = "openai-completions";
const RESPONSES: &str = "openai-responses";
const ANTHROPIC: &str = "anthropic-messages";
const SUBSCRIPTION: bool = true;

/// Every built-in provider of pi-ai 1.6.0, in its order.
pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    p("amazon-bedrock", "Amazon Bedrock", "bedrock-converse-stream", "https://bedrock-runtime.us-east-1.amazonaws.com")
        .provider_url(None)
        .key("AWS credentials or bearer token", &[]),
    p("ant-ling", "Ant Ling", COMPLETIONS, "https://api.ant-ling.com/v1")
        .key("Ant Ling API key", &["ANT_LING_API_KEY"]),
    p("anthropic", "Anthropic", ANTHROPIC, "https://api.anthropic.com")
        .key("Anthropic API key", &[ANTHROPIC_AUTH_TOKEN_ENV, "ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"])
        .login("Anthropic (Claude Pro/Max)", SUBSCRIPTION, None),
    // Azure's endpoint comes from AZURE_OPENAI_BASE_URL / AZURE_OPENAI_RESOURCE_NAME.
    p("azure", "Azure", "azure-openai-responses", "")
        .provider_url(None)
        .key("Azure OpenAI API key", &["AZURE_OPENAI_API_KEY"])
        .by_model(),
    p("baseten", "Baseten", COMPLETIONS, "https://inference.baseten.co/v1")
        .key("Baseten API key", &["BASETEN_API_KEY"]),
    p("cerebras", "Cerebras", COMPLETIONS, "https://api.cerebras.ai/v1").key("Cerebras API key", &["CEREBRAS_API_KEY"]),
    p(
        "cloudflare-ai-gateway",
        "Cloudflare AI Gateway",
        COMPLETIONS,
        "https://gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/compat",
    )
    .provider_url(None)
    .key("Cloudflare API key", &["CLOUDFLARE_API_KEY"])
    .by_model(),
    p(
        "cloudflare-workers-ai",
        "Cloudflare Workers AI",
        COMPLETIONS,
        "https://api.cloudflare.com/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1",
    )
    .provider_url(None)
    .key("Cloudflare API key", &["CLOUDFLARE_API_KEY"])
    .classifies(),
    p("deepseek", "DeepSeek", COMPLETIONS, "https://api.deepseek.com").key("DeepSeek API key", &["DEEPSEEK_API_KEY"]),
    p("fireworks", "Fireworks", COMPLETIONS, "https://api.fireworks.ai/inference/v1")
        .provider_url(Some("https://api.fireworks.ai/inference"))
        .key("Fireworks API key", &["FIREWORKS_API_KEY"])
        .by_model(),
    p("github-copilot", "GitHub Copilot", COMPLETIONS, "https://api.individual.githubcopilot.com")
        .key("GitHub Copilot token", &["COPILOT_GITHUB_TOKEN"])
        .login("GitHub Copilot", SUBSCRIPTION, None)
        .filter(ModelFilter::Account)
        .classifies()
        .by_model(),
    p("google", "Google", "google-generative-ai", "https://generativelanguage.googleapis.com/v1beta")
        .key("Gemini API key", &["GEMINI_API_KEY"]),
    p("google-vertex", "Google Vertex AI", "google-vertex", "https://{location}-aiplatform.googleapis.com")
        .provider_url(None)
        .key("Google Cloud credentials", &["GOOGLE_CLOUD_API_KEY"]),
    p("groq", "Groq", COMPLETIONS, "https://api.groq.com/openai/v1").key("Groq API key", &["GROQ_API_KEY"]),
    p("huggingface", "Hugging Face", COMPLETIONS, "https://router.huggingface.co/v1")
        .key("Hugging Face token", &["HF_TOKEN"]),
    p("kimi-coding", "Kimi For Coding", COMPLETIONS, "https://api.kimi.com/coding/v1")
        .key("Kimi API key", &["KIMI_API_KEY"])
        .login("Kimi Code (subscription)", SUBSCRIPTION, Some("Sign in with Kimi Code")),
    p("meta", "Meta", RESPONSES, "https://api.meta.ai/v1").key("Meta Model API key", &["META_API_KEY"]).login(
        "Meta (Muse subscription)",
        SUBSCRIPTION,
        Some("Sign in with Meta"),
    ),
    p("minimax", "MiniMax", ANTHROPIC, "https://api.minimax.io/anthropic").key("MiniMax API key", &["MINIMAX_API_KEY"]),
    p("minimax-cn", "MiniMax CN", ANTHROPIC, "https://api.minimaxi.com/anthropic")
        .key("MiniMax CN API key", &["MINIMAX_CN_API_KEY"]),
    p("mistral", "Mistral", "mistral-conversations", "https://api.mistral.ai")
        .key("Mistral API key", &["MISTRAL_API_KEY"]),
    p("moonshotai", "Moonshot AI", COMPLETIONS, "https://api.moonshot.ai/v1")
        .key("Moonshot AI API key", &["MOONSHOT_API_KEY"]),
    p("moonshotai-cn", "Moonshot AI CN", COMPLETIONS, "https://api.moonshot.cn/v1")
        .key("Moonshot AI API key", &["MOONSHOT_API_KEY"]),
    p("nvidia", "NVIDIA", COMPLETIONS, "https://integrate.api.nvidia.com/v1")
        .key("NVIDIA API key", &["NVIDIA_API_KEY"]),
    p("openai", "OpenAI", RESPONSES, "https://api.openai.com/v1")
        .key("OpenAI API key", &["OPENAI_API_KEY"])
        .login("OpenAI (ChatGPT subscription)", SUBSCRIPTION, Some("Sign in with ChatGPT"))
        .filter(ModelFilter::Subscription)
        .classifies(),
    // The ChatGPT subscription is an OAuth login only.
    p("openai-codex", "OpenAI Codex", "openai-codex-responses", "https://chatgpt.com/backend-api").login(
        "OpenAI (ChatGPT Plus/Pro)",
        SUBSCRIPTION,
        None,
    ),
    p("opencode", "OpenCode Zen", COMPLETIONS, "https://opencode.ai/inference/openai/v1")
        .provider_url(None)
        .key("OpenCode API key", &["OPENCODE_API_KEY"])
        .classifies()
        .by_model(),
    p("opencode-go", "OpenCode Go", COMPLETIONS, "https://opencode.ai/inference/go/openai/v1")
        .provider_url(None)
        .key("OpenCode API key", &["OPENCODE_API_KEY"])
        .by_model(),
    BuiltinProvider {
        images: true,
        catalog: RemoteCatalog::Personal,
        ..p("openrouter", "OpenRouter", COMPLETIONS, "https://openrouter.ai/api/v1")
            .key("OpenRouter API key", &["OPENROUTER_API_KEY"])
            .login("OpenRouter OAuth", false, Some("Sign in with OpenRouter"))
            .classifies()
            .by_model()
    },
    p(
        "qwen-token-plan",
        "Qwen Token Plan Team",
        COMPLETIONS,
        "https://token-plan.maas.qwencloudapi.com/compatible-mode/v1",
    )
    .key("Qwen Token Plan Team API key", &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"]),
    p(
        "qwen-token-plan-cn",
        "Qwen Token Plan Team CN",
        COMPLETIONS,
        "https://token-plan.maas.qianwenaiapi.com/compatible-mode/v1",
    )
    .key("Qwen Token Plan Team CN API key", &["QWEN_TOKEN_PLAN_TEAM_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY"]),
    p(
        "qwen-token-plan-individual",
        "Qwen Token Plan Individual",
        COMPLETIONS,
        "https://token-plan.maas.qwencloudapi.com/compatible-mode/v1",
    )
    .key("Qwen Token Plan Individual API key", &["QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"]),
    p(
        "qwen-token-plan-individual-cn",
        "Qwen Token Plan Individual CN",
        COMPLETIONS,
        "https://token-plan.maas.qianwenaiapi.com/compatible-mode/v1",
    )
    .key(
        "Qwen Token Plan Individual CN API key",
        &["QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY"],
    ),
    BuiltinProvider {
        catalog: RemoteCatalog::Radius,
        ..p("radius", "Radius", "pi-messages", "https://radius.pi.dev/v1")
            .provider_url(None)
            .key("Radius API key", &["RADIUS_API_KEY"])
            .login("Radius", false, None)
    },
    p("together", "Together", COMPLETIONS, "https://api.together.ai/v1").key("Together API key", &["TOGETHER_API_KEY"]),
    BuiltinProvider {
        chat: false,
        ..p("typesafe", "TypeSafe", "typesafe-system-one", "https://api.typesafe.ai/v1/")
            .provider_url(None)
            .key("TypeSafe API key", &["TYPESAFE_API_KEY"])
            .classifies()
            .by_model()
    },
    p("vercel-ai-gateway", "Vercel AI Gateway", ANTHROPIC, "https://ai-gateway.vercel.sh")
        .key("Vercel AI Gateway API key", &["AI_GATEWAY_API_KEY"])
        .classifies(),
    p("xai", "xAI", RESPONSES, "https://api.x.ai/v1").key("xAI API key", &["XAI_API_KEY"]).login(
        "xAI (Grok/X subscription)",
        SUBSCRIPTION,
        Some("Sign in with SuperGrok or X Premium"),
    ),
    p("xiaomi", "Xiaomi", COMPLETIONS, "https://api.xiaomimimo.com/v1").key("Xiaomi API key", &["XIAOMI_API_KEY"]),
    p("xiaomi-token-plan-ams", "Xiaomi Token Plan AMS", COMPLETIONS, "https://token-plan-ams.xiaomimimo.com/v1")
        .key("Xiaomi Token Plan AMS API key", &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"]),
    p("xiaomi-token-plan-cn", "Xiaomi Token Plan CN", COMPLETIONS, "https://token-plan-cn.xiaomimimo.com/v1")
        .key("Xiaomi Token Plan CN API key", &["XIAOMI_TOKEN_PLAN_CN_API_KEY"]),
    p("xiaomi-token-plan-sgp", "Xiaomi Token Plan SGP", COMPLETIONS, "https://token-plan-sgp.xiaomimimo.com/v1")
        .key("Xiaomi Token Plan SGP API key", &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"]),
    p("zai", "Z.AI", COMPLETIONS, "https://api.z.ai/api/coding/paas/v4").key("Z.AI API key", &["ZAI_API_KEY"]),
    p("zai-coding-cn", "Z.AI Coding CN", COMPLETIONS, "https://open.bigmodel.cn/api/coding/paas/v4")
        .key("Z.AI Coding CN API key", &["ZAI_CODING_CN_API_KEY"]),
];

/// The built-in provider of this id.
pub fn builtin_provider(provider: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS.iter().find(|p| p.name == provider)
}

/// The built-in providers with chat models, in pi-ai's order.
pub fn chat_providers() -> impl Iterator<Item = &'static BuiltinProvider> {
    BUILTIN_PROVIDERS.iter().filter(|p| p.chat)
}

/// The table as the extension host reads it (`shims/coding-agent/builtin-provider.cjs`):
/// each provider's id, pi-ai's name and `baseUrl`, its API-key and OAuth
/// auth, and how its calls, models and catalog behave.
pub fn builtin_provider_table_json() -> Value {
    Value::Array(BUILTIN_PROVIDERS.iter().map(provider_json).collect())
}

fn provider_json(p: &BuiltinProvider) -> Value {
    let mut out = json!({
        "id": p.name,
        "name": p.display_name,
        "baseUrl": p.provider_base_url,
        "byModel": p.by_model,
        "classify": p.classify,
        "images": p.images,
    });
    if let Some(key) = p.api_key {
        out["apiKey"] = json!({"name": key.label, "vars": key.env_vars});
    }
    if let Some(oauth) = p.oauth {
        let mut facts = json!({"name": oauth.name});
        if oauth.subscription {
            facts["isSubscription"] = json!(true);
        }
        if let Some(label) = oauth.login_label {
            facts["loginLabel"] = json!(label);
        }
        out["oauth"] = facts;
    }
    match p.model_filter {
        Some(ModelFilter::Account) => out["filterModels"] = json!("account"),
        Some(ModelFilter::Subscription) => out["filterAllModels"] = json!("subscription"),
        None => {}
    }
    match p.catalog {
        RemoteCatalog::Shared => {}
        RemoteCatalog::Personal => out["catalog"] = json!("personal"),
        RemoteCatalog::Radius => out["catalog"] = json!("radius"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_in_pi_ais_order() {
        let ids: Vec<&str> = BUILTIN_PROVIDERS.iter().map(|p| p.name).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(ids, sorted, "pi-ai lists its providers by id, each once");
    }

    /// The host's data is this table: every field the host reads, as declared here.
    #[test]
    fn the_hosts_table_is_this_one() {
        let table = builtin_provider_table_json();
        let rows = table.as_array().unwrap();
        assert_eq!(rows.len(), BUILTIN_PROVIDERS.len());
        for (row, p) in rows.iter().zip(BUILTIN_PROVIDERS) {
            assert_eq!(row["id"], p.name);
            assert_eq!(row["name"], p.display_name);
            assert_eq!(row["baseUrl"].as_str(), p.provider_base_url, "{}", p.name);
            assert_eq!(row["apiKey"]["name"].as_str(), p.api_key.map(|k| k.label), "{}", p.name);
            let vars: Vec<&str> = p.api_key.map_or(&[][..], |k| k.env_vars).to_vec();
            assert_eq!(row["apiKey"]["vars"].as_array().map_or(0, Vec::len), vars.len(), "{}", p.name);
            assert_eq!(row["oauth"]["name"].as_str(), p.oauth.map(|o| o.name), "{}", p.name);
            assert_eq!(row["oauth"]["loginLabel"].as_str(), p.oauth.and_then(|o| o.login_label), "{}", p.name);
            assert_eq!(row["oauth"]["isSubscription"] == true, p.oauth.is_some_and(|o| o.subscription), "{}", p.name);
            assert_eq!((row["byModel"] == true, row["classify"] == true), (p.by_model, p.classify), "{}", p.name);
        }
        let openrouter = rows.iter().find(|r| r["id"] == "openrouter").unwrap();
        assert_eq!((&openrouter["catalog"], &openrouter["images"]), (&json!("personal"), &json!(true)));
        let copilot = rows.iter().find(|r| r["id"] == "github-copilot").unwrap();
        assert_eq!(copilot["filterModels"], "account");
        assert!(rows.iter().find(|r| r["id"] == "openai-codex").unwrap().get("apiKey").is_none());
    }
}
