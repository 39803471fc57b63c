//! `createMcpExtension({ credentials })`: the extension's store (pi's
//! `McpOAuthCredentialStore` shape) holds the MCP servers' OAuth state in
//! place of `mcp-auth.json`. pi-rpc's MCP client reaches it with
//! `mcp_auth` calls to the extension (`load`, `save`, `remove`, and `lock` /
//! `unlock` around a refresh, which run inside the store's
//! `withRefreshLock`); `openUrl` is called the same way.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::extensions::{CallError, Extension};
use crate::mcp::oauth::CredentialBackend;
use crate::mcp::oauth::store::RefreshGuard;

pub(super) struct ExtensionCredentials {
    ext: Arc<Extension>,
}

impl ExtensionCredentials {
    pub(super) fn new(ext: Arc<Extension>) -> ExtensionCredentials {
        ExtensionCredentials { ext }
    }
}

async fn call(ext: &Extension, params: Value) -> Result<Value, String> {
    match ext.call_streaming("mcp_auth", params, None).await {
        Ok(answer) => Ok(answer),
        Err(CallError::Failed(error) | CallError::Dead(error)) => Err(error),
        Err(CallError::Cancelled) => Err("cancelled".to_string()),
    }
}

/// `openUrl(url)` of extension `ext`.
pub(super) fn open_url_of(ext: Arc<Extension>) -> crate::mcp::factories::OpenUrl {
    Arc::new(move |url: &str| {
        let (ext, url) = (ext.clone(), url.to_string());
        tokio::spawn(async move {
            if let Err(error) = call(&ext, json!({"op": "openUrl", "url": url})).await {
                tracing::warn!("createMcpExtension's openUrl failed: {error}");
            }
        });
    })
}

/// The store's refresh lock, released (`unlock`) when dropped.
struct HeldLock {
    ext: Arc<Extension>,
    id: Value,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let (ext, id) = (self.ext.clone(), self.id.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = call(&ext, json!({"op": "unlock", "lock": id})).await;
            });
        }
    }
}

#[async_trait::async_trait]
impl CredentialBackend for ExtensionCredentials {
    async fn load(&self, name: &str, url: &str) -> Result<Option<Value>, String> {
        let state = call(&self.ext, json!({"op": "load", "name": name, "url": url})).await?;
        Ok(Some(state).filter(|s| !s.is_null()))
    }

    async fn save(&self, name: &str, url: &str, state: Value) -> Result<(), String> {
        call(&self.ext, json!({"op": "save", "name": name, "url": url, "state": state})).await.map(|_| ())
    }

    async fn remove(&self, name: &str, url: &str) -> Result<bool, String> {
        Ok(call(&self.ext, json!({"op": "remove", "name": name, "url": url})).await?.as_bool() == Some(true))
    }

    async fn refresh_lock(&self, name: &str, url: &str) -> Result<RefreshGuard, String> {
        let id = call(&self.ext, json!({"op": "lock", "name": name, "url": url})).await?;
        Ok(Box::new(HeldLock { ext: self.ext.clone(), id }))
    }
}
