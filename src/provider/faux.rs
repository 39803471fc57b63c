//! The offline `faux` provider: deterministic, scriptable replies.

use tokio_util::sync::CancellationToken;

use super::{Provider, ProviderRequest, ProviderStream};

/// The offline provider.
#[derive(Clone, Default)]
pub struct FauxProvider {}

impl Provider for FauxProvider {
    fn api(&self) -> &'static str {
        "faux"
    }

    fn stream(&self, _request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
        Box::pin(futures::stream::empty())
    }
}
