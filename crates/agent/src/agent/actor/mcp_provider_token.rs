//! pi's `auth.provider` on pi-rpc's own MCP HTTP connection: a server with
//! `auth: {provider}` and no extension transport sends the provider's
//! current credential as its bearer token, read at each request as pi reads
//! it (`modelRegistry.getApiKeyForProvider`): an OAuth login's access token,
//! refreshed first when it expires soon, else the provider's API key; none
//! (or a failed refresh) sends no `Authorization` header.

use tokio::sync::{mpsc, oneshot};

use super::Agent;
use crate::agent::internal::Internal;
use crate::mcp::factories::ProviderToken;

/// How the MCP connections ask the actor for a provider's token. Holds the
/// actor's inbox weakly: a connection outliving the session gets none.
pub(super) fn reader(internal: &mpsc::Sender<Internal>) -> ProviderToken {
    let internal = internal.downgrade();
    std::sync::Arc::new(move |provider: String| {
        let internal = internal.clone();
        Box::pin(async move {
            let internal = internal.upgrade()?;
            let (reply, answer) = oneshot::channel();
            internal.send(Internal::ProviderToken { provider, reply }).await.ok()?;
            answer.await.ok().flatten()
        })
    })
}

impl Agent {
    /// Answer an [`Internal::ProviderToken`] without holding the actor up:
    /// an OAuth login is resolved (and refreshed) on its own task.
    pub(super) fn answer_provider_token(&self, provider: &str, reply: oneshot::Sender<Option<String>>) {
        let registry = self.models.registry();
        match crate::auth::login_of(registry, provider) {
            Some(login) => {
                tokio::spawn(async move {
                    let key = match login.current().await {
                        Ok(auth) => auth.and_then(|auth| auth.api_key),
                        Err(error) => {
                            tracing::warn!("MCP auth.provider token: {error}");
                            None
                        }
                    };
                    let _ = reply.send(key);
                });
            }
            None => {
                let _ = reply.send(registry.provider_auth(provider).and_then(|auth| auth.api_key));
            }
        }
    }
}
