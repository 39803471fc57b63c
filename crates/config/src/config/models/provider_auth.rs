//! A provider's request auth as pi's `modelRegistry.getProviderAuth()` gives
//! it: the key, the configured headers, and where the key came from.

use std::collections::HashMap;

use serde_json::Value;

use super::{ModelRegistry, is_virtual};
use crate::config::auth::{config_env_names, env_bearer_token_for, provider_env_vars, resolve_config_value};
use crate::config::catalog;

/// pi-ai's `AuthResult` of a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderAuth {
    pub api_key: Option<String>,
    /// The provider's configured headers (`Authorization: Bearer` with `authHeader`).
    pub headers: HashMap<String, String>,
    /// pi's label: `"stored credential"`, `"OAuth"`, `"configured API key"`
    /// or the environment variable's name.
    pub source: String,
}

/// pi's `AuthStatus` of a provider (`modelRegistry.getProviderAuthStatus()`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthStatus {
    pub configured: bool,
    /// `"runtime"`, `"stored"`, `"environment"`, `"fallback"`,
    /// `"models_json_key"` or `"models_json_command"`.
    pub source: Option<&'static str>,
    /// For `"environment"`: the variables' names.
    pub label: Option<String>,
}

impl AuthStatus {
    fn configured(source: &'static str, label: Option<String>) -> AuthStatus {
        AuthStatus { configured: true, source: Some(source), label }
    }
}

fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty())
}

/// pi's display data of a provider (`modelRegistry.getProvider()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInfo {
    pub id: String,
    pub name: String,
    pub base_url: Option<String>,
    /// True when its credential is an OAuth login.
    pub oauth: bool,
    /// True when `models.json` or an extension's registration configures it
    /// (pi composes such a provider; a built-in one left alone is pi-ai's).
    pub configured: bool,
}

/// The logins pi offers for a provider (`login(provider, "api_key" | "oauth")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginMethods {
    pub api_key: bool,
    pub oauth: bool,
}

impl ModelRegistry {
    /// The logins pi offers for `provider`, `oauth` telling whether it signs
    /// in by OAuth: an API key unless OAuth is the only way in, as for a
    /// built-in provider without key auth (OpenAI Codex) to which neither
    /// `models.json` nor an extension's registration gives a key.
    pub fn login_methods(&self, provider: &str, oauth: bool) -> LoginMethods {
        let configured = self.providers.get(provider).is_some_and(|p| p.api_key.is_some())
            || self.extension_configs.get(provider).and_then(|c| c.get("apiKey")).is_some_and(Value::is_string);
        let inherited = crate::config::auth::builtin_api_key_login(provider);
        LoginMethods { api_key: !oauth || configured || inherited, oauth }
    }

    /// The auth a request to `provider` would carry; `None` when it is not
    /// configured (pi's `undefined`). The order is [`ModelRegistry::api_key`]'s.
    pub fn provider_auth(&self, provider: &str) -> Option<ProviderAuth> {
        let key = self.api_key(provider);
        let source = if self.runtime_keys.contains_key(provider) {
            "stored credential".to_string()
        } else if self.auth.has_oauth(provider) {
            "OAuth".to_string()
        } else if self.auth.has(provider) && key.is_some() {
            "stored credential".to_string()
        } else if let Some(configured) = self.providers.get(provider).and_then(|p| p.api_key.as_deref())
            && resolve_config_value(configured).is_some()
        {
            // A built-in provider takes a configured key as its credential.
            if catalog::builtin_provider(provider).is_some() { "stored credential" } else { "configured API key" }
                .to_string()
        } else if let Some(token) = env_bearer_token_for(provider) {
            let mut headers = self.provider_headers(provider);
            headers.insert("Authorization".to_string(), format!("Bearer {token}"));
            let source = crate::config::auth::ANTHROPIC_AUTH_TOKEN_ENV.to_string();
            return Some(ProviderAuth { api_key: None, headers, source });
        } else {
            let set = provider_env_vars(provider).iter().find(|n| std::env::var(n).is_ok_and(|v| !v.is_empty()));
            set?.to_string()
        };
        let key = key?;
        let mut headers = self.provider_headers(provider);
        if self.auth_header(provider) {
            headers.retain(|k, _| !k.eq_ignore_ascii_case("authorization"));
            headers.insert("Authorization".to_string(), format!("Bearer {key}"));
        }
        Some(ProviderAuth { api_key: Some(key), headers, source })
    }

    /// Whether `provider` has credentials, and where they are, as pi's
    /// model runtime tells it: a `--api-key` (`runtime`), an `auth.json`
    /// entry (`stored`), the key an extension's registration (`fallback`)
    /// or `models.json` configures (a `!command`, variables that are all
    /// set (`environment`, their names), or a literal), the provider's own
    /// variable; a provider of virtual models alone needs none.
    pub fn provider_auth_status(&self, provider: &str) -> AuthStatus {
        if self.runtime_keys.contains_key(provider) {
            return AuthStatus::configured("runtime", None);
        }
        if self.auth.has(provider) {
            return AuthStatus::configured("stored", None);
        }
        let registered = self.extension_configs.get(provider).and_then(|c| c.get("apiKey")).and_then(Value::as_str);
        // models.json's settings: those from before an extension's registration, if any.
        let json = match self.registered.get(provider) {
            Some(backup) => backup.settings.as_ref(),
            None => self.providers.get(provider),
        };
        if let Some(value) = registered.or_else(|| json.and_then(|s| s.api_key.as_deref())) {
            if value.starts_with('!') {
                return AuthStatus::configured("models_json_command", None);
            }
            let names = config_env_names(value);
            if !names.is_empty() {
                if !names.iter().all(|n| env_set(n)) {
                    return AuthStatus::default();
                }
                return AuthStatus::configured("environment", Some(names.join(", ")));
            }
            return AuthStatus::configured(if registered.is_some() { "fallback" } else { "models_json_key" }, None);
        }
        if let Some(name) = provider_env_vars(provider).iter().find(|n| env_set(n)) {
            return AuthStatus::configured("environment", Some(name.to_string()));
        }
        let of_provider = || self.models.iter().filter(|m| m.provider == provider);
        if of_provider().next().is_some() && of_provider().all(|m| is_virtual(m)) {
            return AuthStatus::configured("environment", Some("virtual".to_string()));
        }
        AuthStatus::default()
    }

    /// `provider` as pi describes it, when it has models or settings.
    pub fn provider_info(&mut self, provider: &str) -> Option<ProviderInfo> {
        self.ensure_provider(provider);
        let builtin = catalog::builtin_provider(provider);
        let known = builtin.is_some()
            || self.providers.contains_key(provider)
            || self.models.iter().any(|m| m.provider == provider);
        if !known {
            return None;
        }
        let base_url = self
            .provider_base_url(provider)
            .map(str::to_string)
            .or_else(|| builtin.map(|b| b.base_url.to_string()).filter(|u| !u.is_empty()));
        Some(ProviderInfo {
            id: provider.to_string(),
            name: self
                .providers
                .get(provider)
                .and_then(|p| p.name.clone())
                .unwrap_or_else(|| builtin.map_or(provider, |b| b.display_name).to_string()),
            base_url,
            oauth: self.oauth_login(provider).is_some(),
            configured: self.providers.contains_key(provider)
                || self.registered.contains_key(provider)
                || self.extension_configs.contains_key(provider)
                || self.json_overrides.contains_key(provider),
        })
    }

    /// The provider's own headers from `models.json` (or a registration), resolved.
    fn provider_headers(&self, provider: &str) -> HashMap<String, String> {
        let configured = self.providers.get(provider).map(|p| p.headers.iter());
        configured
            .into_iter()
            .flatten()
            .filter_map(|(name, value)| Some((name.clone(), value.as_str().and_then(resolve_config_value)?)))
            .collect()
    }
}
