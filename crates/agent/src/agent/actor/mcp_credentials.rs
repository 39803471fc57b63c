//! `createMcpExtension({ credentials })`: the extension's store (pi's
//! `McpOAuthCredentialStore` shape) holds the MCP servers' OAuth state in
//! place of `mcp-auth.json`. pi-rpc's MCP client reaches it with
//! `mcp_auth` calls to the extension (`load`, `save`, `remove`, and `lock` /
//! `unlock` around a refresh, which run inside the store's
//! `withRefreshLock`); `openUrl` is called the same way. The calls for an SDK
//! session's connections name it (`session`): they go to that session's
//! `createMcpExtension`, not the running session's.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::extensions::{CallError, Extension};
use crate::mcp::oauth::CredentialBackend;
use crate::mcp::oauth::store::RefreshGuard;

pub(super) struct ExtensionCredentials {
    ext: Arc<Extension>,
    /// The SDK session whose store this is (None: the running session's).
    session: Option<String>,
}

impl ExtensionCredentials {
    pub(super) fn new(ext: Arc<Extension>, session: Option<String>) -> ExtensionCredentials {
        ExtensionCredentials { ext, session }
    }

    async fn call(&self, params: Value) -> Result<Value, String> {
        call(&self.ext, for_session(params, &self.session)).await
    }
}

/// `params`, naming SDK session `session` when there is one.
fn for_session(mut params: Value, session: &Option<String>) -> Value {
    if let Some(session) = session {
        params["session"] = json!(session);
    }
    params
}

async fn call(ext: &Extension, params: Value) -> Result<Value, String> {
    match ext.call_streaming("mcp_auth", params, None).await {
        Ok(answer) => Ok(answer),
        Err(CallError::Failed(error) | CallError::Dead(error)) => Err(error),
        Err(CallError::Cancelled) => Err("cancelled".to_string()),
    }
}

/// `openUrl(url)` of extension `ext` (of its SDK session `session`'s factory when given).
pub(super) fn open_url_of(ext: Arc<Extension>, session: Option<String>) -> crate::mcp::factories::OpenUrl {
    Arc::new(move |url: &str| {
        let (ext, params) = (ext.clone(), for_session(json!({"op": "openUrl", "url": url}), &session));
        tokio::spawn(async move {
            if let Err(error) = call(&ext, params).await {
                tracing::warn!("createMcpExtension's openUrl failed: {error}");
            }
        });
    })
}

/// The store's refresh lock, released (`unlock`) when dropped.
struct HeldLock {
    ext: Arc<Extension>,
    session: Option<String>,
    id: Value,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let (ext, params) = (self.ext.clone(), for_session(json!({"op": "unlock", "lock": self.id}), &self.session));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = call(&ext, params).await;
            });
        }
    }
}

#[async_trait::async_trait]
impl CredentialBackend for ExtensionCredentials {
    async fn load(&self, name: &str, url: &str) -> Result<Option<Value>, String> {
        let state = self.call(json!({"op": "load", "name": name, "url": url})).await?;
        Ok(Some(state).filter(|s| !s.is_null()))
    }

    async fn save(&self, name: &str, url: &str, state: Value) -> Result<(), String> {
        self.call(json!({"op": "save", "name": name, "url": url, "state": state})).await.map(|_| ())
    }

    async fn remove(&self, name: &str, url: &str) -> Result<bool, String> {
        Ok(self.call(json!({"op": "remove", "name": name, "url": url})).await?.as_bool() == Some(true))
    }

    async fn refresh_lock(&self, name: &str, url: &str) -> Result<RefreshGuard, String> {
        let id = self.call(json!({"op": "lock", "name": name, "url": url})).await?;
        Ok(Box::new(HeldLock { ext: self.ext.clone(), session: self.session.clone(), id }))
    }
}
