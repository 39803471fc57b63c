//! Keeping OAuth logins valid: the credential a request uses is read from
//! `auth.json` as of now, and refreshed when it has less than five minutes
//! left (pi's window) or when the provider rejected it (HTTP 401).
//!
//! One refresh for many requests: in a process, every request of a provider
//! waiting for a refresh joins the one in flight (one [`Broker`] per
//! `auth.json`, shared by all sessions); across processes, the refresh runs
//! under pi's lock on `auth.json` and first reads the file again, so a
//! credential another process (pi, or another pi-rpc) refreshed meanwhile is
//! used as it is. A refresh that has started finishes and is written even
//! if every request waiting for it is cancelled: the provider may already
//! have rotated the refresh token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use serde_json::Value;

use super::file::{AuthFile, FileError};
use super::oauth::{self, Net, OAuthError, RequestAuth};

/// pi's window: a token with less than this left is refreshed first.
pub const REFRESH_WINDOW_MS: i64 = 5 * 60 * 1000;

/// Longest a refresh call may take (pi's 15 s).
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(15);

/// Why no usable credential could be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AuthError {
    /// The provider refused the refresh: only a new login helps.
    #[error("OAuth refresh failed for {provider}: {cause}. Log in again with `pi login {provider}`.")]
    LoggedOut { provider: String, cause: String },
    /// The refresh could not be done now (network, server, lock); a later try may work.
    #[error("OAuth refresh failed for {provider}: {cause}")]
    RefreshFailed { provider: String, cause: String },
    #[error("{0}")]
    File(#[from] FileError),
}

impl AuthError {
    /// Whether trying again later may help.
    pub fn retryable(&self) -> bool {
        match self {
            AuthError::LoggedOut { .. } => false,
            AuthError::RefreshFailed { .. } => true,
            AuthError::File(e) => matches!(e, FileError::Lock(_) | FileError::Read { .. } | FileError::Write { .. }),
        }
    }

    fn of(provider: &str, e: OAuthError) -> AuthError {
        let provider = provider.to_string();
        if e.permanent {
            AuthError::LoggedOut { provider, cause: e.message }
        } else {
            AuthError::RefreshFailed { provider, cause: e.message }
        }
    }
}

type Flight = Shared<BoxFuture<'static, Result<Option<Value>, AuthError>>>;

/// The OAuth credentials of one `auth.json`.
pub struct Broker {
    file: AuthFile,
    net: Net,
    /// Refreshes in flight, by provider and the access token they replace
    /// (`None`: replace whatever expires soon).
    flights: Mutex<HashMap<(String, Option<String>), Flight>>,
}

/// The broker of an `auth.json`, shared by every session of the process.
pub fn broker_for(path: &Path) -> Arc<Broker> {
    static BROKERS: OnceLock<Mutex<HashMap<PathBuf, Weak<Broker>>>> = OnceLock::new();
    let key = canonical(path);
    let mut brokers = BROKERS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(live) = brokers.get(&key).and_then(Weak::upgrade) {
        return live;
    }
    brokers.retain(|_, b| b.strong_count() > 0);
    let broker = Arc::new(Broker::new(AuthFile::new(path.to_path_buf()), Net::new()));
    brokers.insert(key, Arc::downgrade(&broker));
    broker
}

fn canonical(path: &Path) -> PathBuf {
    let parent = path.parent().and_then(|p| std::fs::canonicalize(p).ok());
    match (parent, path.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// True when a credential has less than the refresh window left.
pub fn expires_soon(credential: &Value) -> bool {
    match oauth::expires(credential) {
        Some(at) => (oauth::now_ms() + REFRESH_WINDOW_MS) as f64 >= at,
        None => true,
    }
}

impl Broker {
    /// A broker of its own (tests, custom networks).
    pub fn new(file: AuthFile, net: Net) -> Broker {
        Broker { file, net, flights: Mutex::new(HashMap::new()) }
    }

    pub fn file(&self) -> &AuthFile {
        &self.file
    }

    /// The provider's OAuth credential, refreshed first if it expires soon;
    /// `None` when `auth.json` holds no OAuth credential for it.
    pub async fn credential(self: &Arc<Self>, provider: &str) -> Result<Option<Value>, AuthError> {
        let stored = self.file.get(provider).await?;
        match stored {
            Some(c) if oauth::is_oauth(&c) && !expires_soon(&c) => Ok(Some(c)),
            Some(c) if oauth::is_oauth(&c) && oauth::flow(provider).is_some() => self.fly(provider, None).await,
            Some(c) if oauth::is_oauth(&c) => Ok(Some(c)),
            _ => Ok(None),
        }
    }

    /// What a request to `provider` sends, with the access token it uses.
    pub async fn request_auth(self: &Arc<Self>, provider: &str) -> Result<Option<(RequestAuth, String)>, AuthError> {
        let Some(flow) = oauth::flow(provider) else { return Ok(None) };
        Ok(self.credential(provider).await?.map(|c| (flow.to_auth(&c), oauth::access(&c).unwrap_or("").to_string())))
    }

    /// The provider rejected `rejected_access`: a fresh credential (another
    /// process's, or a refresh's), or `None` when there is nothing newer.
    pub async fn after_rejection(
        self: &Arc<Self>,
        provider: &str,
        rejected_access: &str,
    ) -> Result<Option<(RequestAuth, String)>, AuthError> {
        let Some(flow) = oauth::flow(provider) else { return Ok(None) };
        let fresh = self.fly(provider, Some(rejected_access.to_string())).await?;
        Ok(fresh
            .filter(|c| oauth::access(c) != Some(rejected_access))
            .map(|c| (flow.to_auth(&c), oauth::access(&c).unwrap_or("").to_string())))
    }

    /// Join (or start) the refresh of `provider` replacing `rejected`.
    async fn fly(self: &Arc<Self>, provider: &str, rejected: Option<String>) -> Result<Option<Value>, AuthError> {
        let key = (provider.to_string(), rejected.clone());
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
            match flights.get(&key) {
                Some(f) => f.clone(),
                None => {
                    let task = tokio::spawn(self.clone().refresh_locked(provider.to_string(), rejected));
                    let (broker, done_key) = (Arc::downgrade(self), key.clone());
                    let flight = async move {
                        let result = task.await.unwrap_or_else(|e| {
                            Err(AuthError::RefreshFailed { provider: done_key.0.clone(), cause: e.to_string() })
                        });
                        if let Some(b) = broker.upgrade() {
                            b.flights.lock().unwrap_or_else(|p| p.into_inner()).remove(&done_key);
                        }
                        result
                    }
                    .boxed()
                    .shared();
                    flights.insert(key, flight.clone());
                    flight
                }
            }
        };
        flight.await
    }

    /// Under the lock: read the credential again, refresh it if it still
    /// needs it, write the result back.
    async fn refresh_locked(
        self: Arc<Self>,
        provider: String,
        rejected: Option<String>,
    ) -> Result<Option<Value>, AuthError> {
        let Some(flow) = oauth::flow(&provider) else { return Ok(None) };
        let net = self.net.clone();
        let outcome = self
            .file
            .modify(&provider, |current| async move {
                let Some(current) = current.filter(oauth::is_oauth) else { return Ok(None) };
                let needed = match &rejected {
                    Some(rejected) => oauth::access(&current) == Some(rejected.as_str()),
                    None => expires_soon(&current),
                };
                if !needed {
                    // Refreshed meanwhile, by another request or process.
                    return Ok(None);
                }
                tracing::debug!("refreshing the OAuth credential of {}", flow.provider());
                match tokio::time::timeout(REFRESH_TIMEOUT, flow.refresh(&net, &current)).await {
                    Ok(Ok(fresh)) => Ok(Some(fresh)),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(OAuthError::transient(format!("no answer within {}s", REFRESH_TIMEOUT.as_secs()))),
                }
            })
            .await?;
        match outcome {
            Ok(stored) => Ok(stored.filter(oauth::is_oauth)),
            Err(e) => {
                tracing::warn!("OAuth refresh for {provider} failed: {}", e.message);
                Err(AuthError::of(&provider, e))
            }
        }
    }
}

#[cfg(test)]
#[path = "broker_tests.rs"]
mod tests;
