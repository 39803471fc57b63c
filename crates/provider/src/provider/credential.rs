//! The hooks between credential resolution (logins, `auth.json`) and the
//! wire APIs:
//!
//! * [`CredentialSource`]: where a request's credential comes from when it
//!   can change during a session (OAuth access tokens). It is asked before
//!   every model call, and once more after a call answered 401, with the
//!   refused credential, so that it can refresh and the call is retried
//!   once ([`Authenticated`]).
//! * [`ProviderEnv`]: provider settings stored beside a credential (the
//!   `env` of an `auth.json` entry: `AWS_PROFILE`, `CLOUDFLARE_ACCOUNT_ID`,
//!   `GOOGLE_CLOUD_PROJECT`, …), read before the process environment, as pi
//!   reads its resolved provider env.
//!
//! The wire APIs only read `ProviderRequest::api_key` and `ProviderEnv`; the
//! credential side fills `ProviderRequest::credential`. The wrapper also
//! applies the per-provider request edits first (`edits::prepare`: the
//! Cloudflare account placeholders, Azure's Chat Completions model).

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub use super::env::ProviderEnv;
use super::{Provider, ProviderError, ProviderRequest, ProviderStream};

/// A credential that can change during a session.
#[async_trait::async_trait]
pub trait CredentialSource: Send + Sync + std::fmt::Debug {
    /// The credential the next call sends (refreshed first when it is about
    /// to expire). Its error ends the call without any request.
    async fn current(&self) -> Result<String, ProviderError>;

    /// `refused` was answered 401: refresh it (unless someone already did)
    /// and return the credential to retry with. An error (a refresh that
    /// failed for good) is the call's error.
    async fn refresh(&self, refused: &str) -> Result<String, ProviderError>;
}

/// Wraps a wire API: when the request has a [`CredentialSource`], its
/// current credential becomes the request's key, and a call answered 401
/// before any event is retried once with the refreshed credential.
pub struct Authenticated {
    inner: Arc<dyn Provider>,
}

impl Authenticated {
    pub fn new(inner: Arc<dyn Provider>) -> Authenticated {
        Authenticated { inner }
    }
}

impl Provider for Authenticated {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn stream(&self, mut request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        if let Err(e) = super::edits::prepare(&mut request) {
            return futures::stream::iter([Err(e)]).boxed();
        }
        let Some(source) = request.credential.clone() else {
            return self.inner.stream(request, cancel);
        };
        let inner = self.inner.clone();
        let stream = async move {
            let aborted = || futures::stream::iter([Err(ProviderError::aborted())]).boxed();
            let key = tokio::select! {
                biased;
                _ = cancel.cancelled() => return aborted(),
                key = source.current() => key,
            };
            let key = match key {
                Ok(key) => key,
                Err(e) => return futures::stream::iter([Err(e)]).boxed(),
            };
            let mut first = request.clone();
            first.api_key = Some(key.clone());
            let mut stream = inner.stream(first, cancel.clone());
            let head = stream.next().await;
            match head {
                Some(Err(e)) if e.status == Some(401) => {
                    let key = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return aborted(),
                        key = source.refresh(&key) => key,
                    };
                    match key {
                        Ok(key) => {
                            let mut again = request;
                            again.api_key = Some(key);
                            inner.stream(again, cancel)
                        }
                        Err(refresh_error) => futures::stream::iter([Err(refresh_error)]).boxed(),
                    }
                }
                Some(item) => futures::stream::iter([item]).chain(stream).boxed(),
                None => futures::stream::empty().boxed(),
            }
        };
        futures::stream::once(stream).flatten().boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_support::simple_request;
    use crate::provider::{ProviderErrorKind, ProviderEvent};
    use std::sync::Mutex;

    /// Answers 401 to any key but `good`.
    struct Gate;

    impl Provider for Gate {
        fn api(&self) -> &'static str {
            "gate"
        }
        fn stream(&self, request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
            let item = if request.api_key.as_deref() == Some("good") {
                Ok(ProviderEvent::ResponseId("ok".into()))
            } else {
                Err(ProviderError { status: Some(401), ..ProviderError::new(ProviderErrorKind::Auth, "401 expired") })
            };
            futures::stream::iter([item]).boxed()
        }
    }

    #[derive(Debug, Default)]
    struct Source {
        refreshed: Mutex<Vec<String>>,
        fail: bool,
    }

    #[async_trait::async_trait]
    impl CredentialSource for Source {
        async fn current(&self) -> Result<String, ProviderError> {
            Ok("stale".into())
        }
        async fn refresh(&self, refused: &str) -> Result<String, ProviderError> {
            self.refreshed.lock().unwrap().push(refused.to_string());
            if self.fail {
                return Err(ProviderError::new(ProviderErrorKind::Auth, "log in again"));
            }
            Ok("good".into())
        }
    }

    async fn run(source: Arc<Source>) -> Vec<Result<ProviderEvent, ProviderError>> {
        let mut request = simple_request(crate::provider::faux::faux_model(), "hi");
        request.credential = Some(source);
        Authenticated::new(Arc::new(Gate)).stream(request, CancellationToken::new()).collect().await
    }

    #[tokio::test]
    async fn a_401_refreshes_once_and_retries() {
        let source = Arc::new(Source::default());
        let items = run(source.clone()).await;
        assert_eq!(items, vec![Ok(ProviderEvent::ResponseId("ok".into()))]);
        assert_eq!(*source.refreshed.lock().unwrap(), vec!["stale".to_string()]);
    }

    #[tokio::test]
    async fn a_failed_refresh_is_the_error() {
        let source = Arc::new(Source { fail: true, ..Default::default() });
        let items = run(source).await;
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].as_ref().unwrap_err().message, "log in again");
    }

    #[tokio::test]
    async fn without_a_source_the_request_passes_through() {
        let request = simple_request(crate::provider::faux::faux_model(), "hi");
        let items: Vec<_> =
            Authenticated::new(Arc::new(Gate)).stream(request, CancellationToken::new()).collect().await;
        assert_eq!(items[0].as_ref().unwrap_err().status, Some(401));
    }

    #[test]
    fn stored_env_wins_over_the_process() {
        let env = ProviderEnv::new(std::collections::HashMap::from([("PATH".to_string(), "stored".to_string())]));
        assert_eq!(env.get("PATH").as_deref(), Some("stored"));
        assert_eq!(env.get("PI_RPC_SURELY_UNSET_VARIABLE"), None);
        assert!(ProviderEnv::default().get("PATH").is_some());
    }
}
