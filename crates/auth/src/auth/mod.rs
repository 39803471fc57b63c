//! Subscription logins, shared with pi through `auth.json`: the OAuth flows
//! of pi-ai 1.6.0 ([`oauth`]), pi's lock on the file ([`lock`]) and its
//! format ([`file`]), refreshes that keep a login valid for every session of
//! the process ([`broker`], [`authed`]), and logging in and out ([`login`]).

use std::path::Path;
use std::sync::Arc;

pub mod authed;
pub mod background;
pub mod broker;
pub mod file;
pub mod lock;
pub mod login;
pub mod oauth;

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

/// `<agent dir>/auth.json`.
pub fn auth_path(agent_dir: &Path) -> std::path::PathBuf {
    agent_dir.join("auth.json")
}

#[cfg(test)]
mod login_tests;
