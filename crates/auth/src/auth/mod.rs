//! Subscription logins, shared with pi through `auth.json`: the OAuth flows
//! of pi-ai 1.6.0 ([`oauth`]), pi's lock on the file ([`lock`]) and its
//! format ([`file`]), refreshes that keep a login valid for every session of
//! the process ([`broker`], [`authed`]), and logging in and out ([`login`]).

use std::path::Path;
use std::sync::Arc;

pub mod authed;
pub mod background;
pub mod broker;
pub mod catalog_refreshes;
pub mod file;
pub mod lock;
pub mod login;
pub mod model_catalogs;
pub mod oauth;
mod openrouter_catalog;

pub use broker::{AuthError, Broker, broker_for};
pub use login::{LoginError, LoginRequest};

use crate::config::ModelRegistry;
use crate::model::Model;
use crate::provider::Provider;

/// The wire API to call `model` with: when the credential in effect for its
/// provider is an OAuth login stored in `auth.json`, the API wrapped so that
/// each call uses the login's current (refreshed) credential; when the
/// stored credential keeps an `env` (Cloudflare's account id, an AWS
/// profile), its calls read it before the process environment, as pi's do.
pub fn authorize(provider: Arc<dyn Provider>, models: &ModelRegistry, model: &Model) -> Arc<dyn Provider> {
    let provider = match models.oauth_login(&model.provider) {
        Some(path) if oauth::flow(&model.provider).is_some() => {
            Arc::new(authed::OAuthProvider::new(provider, broker_for(&path), &model.provider))
        }
        _ => provider,
    };
    let env = models.provider_env(&model.provider);
    if env.stored().is_empty() { provider } else { Arc::new(crate::provider::env::WithStoredEnv::new(provider, env)) }
}

/// The OAuth login in effect for `provider`, for calls made outside a chat
/// stream (codemode's classifier and image calls): `None` when the
/// provider's credential is not a login of pi-ai's flows (a key, or a key
/// set at run time over the login).
pub fn login_of(models: &ModelRegistry, provider: &str) -> Option<LoginAuth> {
    let path = models.oauth_login(provider)?;
    oauth::flow(provider)?;
    Some(LoginAuth { broker: broker_for(&path), provider: provider.to_string() })
}

/// A provider's login, asked for its request auth at each call.
pub struct LoginAuth {
    broker: Arc<Broker>,
    provider: String,
}

impl LoginAuth {
    /// What a request sends now (pi's `toAuth` of the current credential:
    /// key, headers, the account's base URL), refreshed first when it
    /// expires soon; `None` when it was logged out meanwhile.
    pub async fn current(&self) -> Result<Option<oauth::RequestAuth>, AuthError> {
        Ok(self.broker.request_auth(&self.provider).await?.map(|(auth, _)| auth))
    }
}

/// `<agent dir>/auth.json`.
pub fn auth_path(agent_dir: &Path) -> std::path::PathBuf {
    agent_dir.join("auth.json")
}

#[cfg(test)]
mod login_tests;
