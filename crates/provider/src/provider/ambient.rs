//! Credentials found in the environment beyond a provider's key variable,
//! by pi 1.6.0's rules (`env-api-keys.js` and the providers' `resolve`):
//!
//! * `google-vertex`: an ADC file (`GOOGLE_APPLICATION_CREDENTIALS`, else
//!   gcloud's default file) with `GOOGLE_CLOUD_PROJECT` (or `GCLOUD_PROJECT`)
//!   and `GOOGLE_CLOUD_LOCATION`;
//! * `amazon-bedrock`: `AWS_PROFILE`, access keys, `AWS_BEARER_TOKEN_BEDROCK`,
//!   container credentials or a web-identity token file;
//! * `anthropic`: workload identity federation (`ANTHROPIC_FEDERATION_RULE_ID`,
//!   `ANTHROPIC_ORGANIZATION_ID`, `ANTHROPIC_IDENTITY_TOKEN_FILE`), last;
//! * Cloudflare: the key counts only with the account (and gateway) id.
//!
//! Ambient credentials stand in as the key `<authenticated>` (pi's value);
//! the APIs never send it and resolve the real credentials themselves.

use super::anthropic_federation::Federation;
use super::cloudflare;
use super::env::ProviderEnv;

/// The stand-in key of ambient credentials.
pub const AUTHENTICATED: &str = "<authenticated>";

/// True for pi's placeholder keys (`<authenticated>`), which are never sent.
pub fn is_placeholder(key: &str) -> bool {
    key.len() > 2 && key.starts_with('<') && key.ends_with('>')
}

/// The key a provider has from the environment: `key` (its key variable's
/// value, if set) under the provider's extra conditions, else its ambient
/// credentials' stand-in.
pub fn env_credential(provider: &str, key: Option<String>, env: &ProviderEnv) -> Option<String> {
    match provider {
        cloudflare::WORKERS_AI | cloudflare::AI_GATEWAY => key.filter(|_| cloudflare::env_complete(provider, env)),
        "google-vertex" => key.or_else(|| vertex_adc(env).then(|| AUTHENTICATED.to_string())),
        "amazon-bedrock" => key.or_else(|| aws_configured(env).then(|| AUTHENTICATED.to_string())),
        "anthropic" => key.or_else(|| Federation::from_env(env).map(|_| AUTHENTICATED.to_string())),
        _ => key,
    }
}

fn vertex_adc(env: &ProviderEnv) -> bool {
    let file = match env.get("GOOGLE_APPLICATION_CREDENTIALS") {
        Some(path) => std::path::PathBuf::from(path),
        None => super::shared::home_dir().join(".config/gcloud/application_default_credentials.json"),
    };
    let project = env.get("GOOGLE_CLOUD_PROJECT").or_else(|| env.get("GCLOUD_PROJECT"));
    file.exists() && project.is_some() && env.get("GOOGLE_CLOUD_LOCATION").is_some()
}

fn aws_configured(env: &ProviderEnv) -> bool {
    let set = |name: &str| env.get(name).is_some();
    set("AWS_PROFILE")
        || (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
        || set("AWS_BEARER_TOKEN_BEDROCK")
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || set("AWS_WEB_IDENTITY_TOKEN_FILE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> ProviderEnv {
        ProviderEnv::new(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>())
    }

    #[test]
    fn ambient_credentials_follow_pi() {
        let key = || Some("k".to_string());
        assert_eq!(env_credential("cloudflare-workers-ai", key(), &env(&[])), None);
        let cf = env(&[("CLOUDFLARE_ACCOUNT_ID", "a")]);
        assert_eq!(env_credential("cloudflare-workers-ai", key(), &cf).as_deref(), Some("k"));
        assert_eq!(env_credential("cloudflare-ai-gateway", key(), &cf), None);
        let aws = env(&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")]);
        assert_eq!(env_credential("amazon-bedrock", None, &aws).as_deref(), Some(AUTHENTICATED));
        assert_eq!(env_credential("amazon-bedrock", None, &env(&[("AWS_ACCESS_KEY_ID", "a")])), None);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sa.json");
        std::fs::write(&file, "{}").unwrap();
        let file = file.to_str().unwrap();
        let vertex = env(&[
            ("GOOGLE_APPLICATION_CREDENTIALS", file),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "l"),
        ]);
        assert_eq!(env_credential("google-vertex", None, &vertex).as_deref(), Some(AUTHENTICATED));
        let no_location = env(&[("GOOGLE_APPLICATION_CREDENTIALS", file), ("GOOGLE_CLOUD_PROJECT", "p")]);
        assert_eq!(env_credential("google-vertex", None, &no_location), None);
        assert!(is_placeholder(AUTHENTICATED) && !is_placeholder("<") && !is_placeholder("sk-x"));
    }
}
