//! The OAuth login of a provider an extension registers (pi's
//! `registerProvider` with `oauth`): before each request made with one of
//! its models, the provider's OAuth credential in `auth.json` is refreshed
//! through the extension's `refreshToken` when it has less than pi's five
//! minutes left (under pi's lock on `auth.json`, reading it again first, and
//! stored back as `{..., "type": "oauth"}`), and the request's key is what
//! the extension's `getApiKey` makes of it. The extension is asked with
//! `provider_oauth` (`{provider, action: "refresh" | "apiKey", credential}`).
//! A native provider's API key ([`ExtensionKey`]) is asked the same way
//! (action `resolve`) before each request.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::broker::expires_soon;
use crate::auth::file::AuthFile;
use crate::auth::oauth::is_oauth;
use crate::extensions::{CallError, Extension};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRequest, ProviderStream};

/// `inner`, with the key of the extension's OAuth login of `provider`.
pub(crate) struct ExtensionLogin {
    inner: Arc<dyn Provider>,
    ext: Arc<Extension>,
    auth_file: PathBuf,
    provider: String,
}

impl ExtensionLogin {
    pub(crate) fn new(inner: Arc<dyn Provider>, ext: Arc<Extension>, auth_file: PathBuf, provider: &str) -> Self {
        ExtensionLogin { inner, ext, auth_file, provider: provider.to_string() }
    }
}

impl Provider for ExtensionLogin {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn stream(&self, mut request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let (inner, ext, provider) = (self.inner.clone(), self.ext.clone(), self.provider.clone());
        let file = AuthFile::new(self.auth_file.clone());
        let call = async move {
            let key = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ProviderError::aborted()),
                key = request_key(&ext, &file, &provider, &cancel) => key,
            };
            match key {
                Ok(Some(key)) => request.api_key = Some(key),
                // Logged out meanwhile: the request goes as configured.
                Ok(None) => {}
                Err(error) => return futures::stream::iter([Err(error)]).boxed(),
            }
            inner.stream(request, cancel)
        };
        futures::stream::once(call).flatten().boxed()
    }
}

fn auth_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, message)
}

/// The key of the stored credential (refreshed first when it expires soon);
/// `None` when `auth.json` holds no OAuth credential for the provider.
async fn request_key(
    ext: &Extension,
    file: &AuthFile,
    provider: &str,
    cancel: &CancellationToken,
) -> Result<Option<String>, ProviderError> {
    let stored = file.get(provider).await.map_err(|e| auth_error(e.to_string()))?;
    let Some(mut credential) = stored.filter(is_oauth) else { return Ok(None) };
    if expires_soon(&credential) {
        // A refresh that started finishes, whoever waits for it: the
        // provider may already have rotated the refresh token.
        let refreshed = file
            .modify(provider, |current| async move {
                match current {
                    Some(current) if is_oauth(&current) && expires_soon(&current) => {
                        let refresh = ask(ext, provider, "refresh", &current, &CancellationToken::new()).await?;
                        Ok(Some(refresh))
                    }
                    // Another request or process refreshed it, or it was logged out.
                    _ => Ok(None),
                }
            })
            .await
            .map_err(|e| auth_error(e.to_string()))?
            .map_err(|e: String| auth_error(format!("OAuth refresh failed for {provider}: {e}")))?;
        match refreshed {
            Some(fresh) if is_oauth(&fresh) => credential = fresh,
            _ => return Ok(None),
        }
    }
    let answer = ask(ext, provider, "apiKey", &credential, cancel)
        .await
        .map_err(|e| auth_error(format!("OAuth auth derivation failed for {provider}: {e}")))?;
    Ok(answer.get("apiKey").and_then(Value::as_str).map(str::to_string))
}

/// OpenRouter's key for pi's background catalog refresh when extension `ext`
/// logs in to `provider` (pi's provider then has the extension's OAuth): the
/// stored OAuth login, refreshed through the extension's `refreshToken` once
/// it has expired (pi's refresh of a catalog keeps no five-minute margin) under
/// pi's lock and stored, and its `access` (pi asks `/models/user` with it,
/// not with `getApiKey`'s answer). `None` without an OAuth login.
pub(crate) fn catalog_key(
    ext: Arc<Extension>,
    auth_file: PathBuf,
    provider: String,
) -> crate::auth::model_catalogs::KeySource {
    Box::pin(async move {
        let file = AuthFile::new(auth_file);
        let expired = |credential: &Value| {
            crate::auth::oauth::expires(credential).is_none_or(|at| crate::auth::oauth::now_ms() as f64 >= at)
        };
        let stored = file.get(&provider).await.map_err(|e| e.to_string())?;
        if !stored.as_ref().is_some_and(is_oauth) {
            return Ok(None);
        }
        if stored.as_ref().is_some_and(expired) {
            let (ext, provider) = (&ext, provider.as_str());
            file.modify(provider, |current| async move {
                match current {
                    Some(current) if is_oauth(&current) && expired(&current) => {
                        Ok(Some(ask(ext, provider, "refresh", &current, &CancellationToken::new()).await?))
                    }
                    // Refreshed meanwhile (by a request or by pi), or logged out.
                    _ => Ok(None),
                }
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e: String| format!("OAuth refresh failed for {provider}: {e}"))?;
        }
        let now = file.get(&provider).await.map_err(|e| e.to_string())?.filter(is_oauth);
        Ok(now.and_then(|c| c.get("access").and_then(Value::as_str).map(str::to_string)))
    })
}

async fn ask(
    ext: &Extension,
    provider: &str,
    action: &str,
    credential: &Value,
    cancel: &CancellationToken,
) -> Result<Value, String> {
    let params = json!({"provider": provider, "action": action, "credential": credential});
    match ext.call("provider_oauth", params, Some(cancel)).await {
        Ok(answer) => Ok(answer),
        Err(CallError::Failed(error) | CallError::Dead(error)) => Err(error),
        Err(CallError::Cancelled) => Err("Request was aborted".to_string()),
    }
}

/// `inner`, with the key of a native provider an extension registers
/// (pi's `Provider` with `auth.apiKey`): its `resolve` is asked before each
/// request (`provider_oauth` with action `resolve` and the stored key as
/// pi's credential), as pi-ai resolves a provider's auth per request; the
/// headers and base URL it gives go with the request. It resolving nothing
/// ends the request with pi's "Provider is not configured".
pub(crate) struct ExtensionKey {
    inner: Arc<dyn Provider>,
    ext: Arc<Extension>,
    provider: String,
    stored: Option<String>,
}

impl ExtensionKey {
    pub(crate) fn new(inner: Arc<dyn Provider>, ext: Arc<Extension>, provider: &str, stored: Option<String>) -> Self {
        ExtensionKey { inner, ext, provider: provider.to_string(), stored }
    }
}

impl Provider for ExtensionKey {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn stream(&self, mut request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let (inner, ext, provider) = (self.inner.clone(), self.ext.clone(), self.provider.clone());
        let credential = match &self.stored {
            Some(key) => json!({"type": "api_key", "key": key}),
            None => Value::Null,
        };
        let call = async move {
            let params = json!({"provider": provider, "action": "resolve", "credential": credential});
            let answer = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ProviderError::aborted()),
                answer = ext.call("provider_oauth", params, Some(&cancel)) => match answer {
                    Ok(answer) => Ok(answer),
                    Err(CallError::Cancelled) => Err(ProviderError::aborted()),
                    Err(CallError::Failed(error) | CallError::Dead(error)) => Err(auth_error(error)),
                },
            };
            let answer = match answer {
                Ok(answer) => answer,
                Err(error) => return futures::stream::iter([Err(error)]).boxed(),
            };
            let Some(key) = answer.get("apiKey").and_then(Value::as_str) else {
                let error = auth_error(format!("Provider is not configured: {provider}"));
                return futures::stream::iter([Err(error)]).boxed();
            };
            request.api_key = Some(key.to_string());
            if let Some(Value::Object(headers)) = answer.get("headers") {
                let given: HashMap<String, String> =
                    headers.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
                for (name, value) in given {
                    request.headers.retain(|k, _| !k.eq_ignore_ascii_case(&name));
                    request.headers.insert(name, value);
                }
            }
            if let Some(base_url) = answer.get("baseUrl").and_then(Value::as_str).filter(|u| !u.is_empty()) {
                request.model.base_url = base_url.to_string();
            }
            inner.stream(request, cancel)
        };
        futures::stream::once(call).flatten().boxed()
    }
}
