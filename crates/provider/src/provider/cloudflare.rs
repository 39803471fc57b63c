//! Cloudflare Workers AI and AI Gateway, as pi 1.6.0 reaches them through
//! the Chat Completions, Responses and Messages APIs:
//!
//! * their catalog base URLs hold `{CLOUDFLARE_ACCOUNT_ID}` (and, for the
//!   gateway, `{CLOUDFLARE_GATEWAY_ID}`) placeholders, filled from the
//!   credential's stored `env`, else the process environment, before the
//!   call (a `models.json` `baseUrl` may use them too);
//! * the credential counts only with its account id (and gateway id);
//! * the AI Gateway authenticates with `cf-aig-authorization: Bearer <key>`
//!   and sends neither `Authorization` nor `x-api-key`.

use super::ProviderRequest;
use super::env::ProviderEnv;
use super::shared::{has_header, set_header};

pub const WORKERS_AI: &str = "cloudflare-workers-ai";
pub const AI_GATEWAY: &str = "cloudflare-ai-gateway";
const ACCOUNT_ID: &str = "CLOUDFLARE_ACCOUNT_ID";
const GATEWAY_ID: &str = "CLOUDFLARE_GATEWAY_ID";

/// The variables a Cloudflare provider's credential needs besides the key.
pub fn required_env(provider: &str) -> &'static [&'static str] {
    match provider {
        WORKERS_AI => &[ACCOUNT_ID],
        AI_GATEWAY => &[ACCOUNT_ID, GATEWAY_ID],
        _ => &[],
    }
}

/// True when the provider's extra variables are all set (always for other providers).
pub fn env_complete(provider: &str, env: &ProviderEnv) -> bool {
    required_env(provider).iter().all(|name| env.get(name).is_some())
}

/// `base_url` with the account and gateway placeholders filled where known.
pub fn fill_placeholders(base_url: &str, env: &ProviderEnv) -> String {
    let mut out = base_url.to_string();
    for name in [ACCOUNT_ID, GATEWAY_ID] {
        let placeholder = format!("{{{name}}}");
        if out.contains(&placeholder)
            && let Some(value) = env.get(name)
        {
            out = out.replace(&placeholder, &value);
        }
    }
    out
}

/// Fill the placeholders of the request's base URL.
pub fn prepare(request: &mut ProviderRequest) {
    if request.model.base_url.contains("{CLOUDFLARE_") {
        request.model.base_url = fill_placeholders(&request.model.base_url, &request.env);
    }
}

/// The AI Gateway's authentication: the key as `cf-aig-authorization`
/// (unless configured), no `Authorization` or `x-api-key`.
pub fn finish_headers(request: &ProviderRequest, headers: &mut Vec<(String, String)>) {
    if request.model.provider != AI_GATEWAY {
        return;
    }
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization") && !k.eq_ignore_ascii_case("x-api-key"));
    if !has_header(headers, "cf-aig-authorization")
        && let Some(key) = request.api_key.as_deref().filter(|k| !k.is_empty())
    {
        set_header(headers, "cf-aig-authorization", format!("Bearer {key}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn placeholders_fill_from_the_stored_env_first() {
        let env = ProviderEnv::new(HashMap::from([
            (ACCOUNT_ID.to_string(), "acc".to_string()),
            (GATEWAY_ID.to_string(), "gw".to_string()),
        ]));
        assert_eq!(
            fill_placeholders(
                "https://gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/compat",
                &env
            ),
            "https://gateway.ai.cloudflare.com/v1/acc/gw/compat"
        );
        let empty = ProviderEnv::new(HashMap::from([(ACCOUNT_ID.to_string(), String::new())]));
        assert!(fill_placeholders("x/{CLOUDFLARE_ACCOUNT_ID}", &empty).contains("{CLOUDFLARE_ACCOUNT_ID}"));
        assert!(env_complete(AI_GATEWAY, &env));
        assert!(env_complete("openai", &ProviderEnv::default()));
    }

    #[test]
    fn the_gateway_authenticates_with_its_own_header() {
        let mut request = crate::provider::test_support::simple_request(crate::provider::faux::faux_model(), "hi");
        request.model.provider = AI_GATEWAY.into();
        request.api_key = Some("cfkey".into());
        let mut headers = vec![("authorization".to_string(), "Bearer cfkey".to_string()), ("x-a".into(), "1".into())];
        finish_headers(&request, &mut headers);
        assert_eq!(
            headers,
            vec![("x-a".to_string(), "1".to_string()), ("cf-aig-authorization".into(), "Bearer cfkey".into())]
        );
    }
}
