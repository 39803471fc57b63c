//! A provider's request auth as pi's `modelRegistry.getProviderAuth()` gives
//! it: the key, the configured headers, and where the key came from.

use std::collections::HashMap;

use super::ModelRegistry;
use crate::config::auth::{env_bearer_token_for, provider_env_vars, resolve_config_value};
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

/// pi's display data of a provider (`modelRegistry.getProvider()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInfo {
    pub id: String,
    pub name: String,
    pub base_url: Option<String>,
    /// True when its credential is an OAuth login.
    pub oauth: bool,
}

impl ModelRegistry {
    /// The auth a request to `provider` would carry; `None` when it is not
    /// configured (pi's `undefined`). The order is [`ModelRegistry::api_key`]'s.
    pub fn provider_auth(&self, provider: &str) -> Option<ProviderAuth> {
        let key = self.api_key(provider);
        let source = if self.runtime_keys.contains_key(provider) {
            "stored credential".to_string()
        } else if self.auth.oauth_file(provider).is_some() {
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
            name: builtin.map_or(provider, |b| b.display_name).to_string(),
            base_url,
            oauth: self.oauth_login(provider).is_some(),
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
