//! [`ProviderEnv`]: provider settings stored beside a credential (the `env`
//! of an `auth.json` entry: `AWS_PROFILE`, `CLOUDFLARE_ACCOUNT_ID`,
//! `GOOGLE_CLOUD_PROJECT`, …), read before the process environment, as pi
//! reads its resolved provider env.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Provider, ProviderRequest, ProviderStream};

/// Provider variables stored with the credential, over the process environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderEnv {
    stored: Arc<HashMap<String, String>>,
}

impl ProviderEnv {
    pub fn new(stored: HashMap<String, String>) -> ProviderEnv {
        ProviderEnv { stored: Arc::new(stored) }
    }

    /// The stored value, else the process environment's; empty values count as unset.
    pub fn get(&self, name: &str) -> Option<String> {
        match self.stored.get(name) {
            Some(v) => Some(v.clone()),
            None => std::env::var(name).ok(),
        }
        .filter(|v| !v.is_empty())
    }

    /// The stored variables.
    pub fn stored(&self) -> &HashMap<String, String> {
        &self.stored
    }
}

/// A wire API whose requests carry a stored credential's variables (its
/// `auth.json` `env`), unless the request brings its own.
pub struct WithStoredEnv {
    inner: Arc<dyn Provider>,
    env: ProviderEnv,
}

impl WithStoredEnv {
    pub fn new(inner: Arc<dyn Provider>, env: ProviderEnv) -> WithStoredEnv {
        WithStoredEnv { inner, env }
    }
}

impl Provider for WithStoredEnv {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn stream(&self, mut request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        if request.env.stored().is_empty() {
            request.env = self.env.clone();
        }
        self.inner.stream(request, cancel)
    }
}
