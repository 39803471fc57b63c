//! The `openai-completions` wire API (Chat Completions with SSE streaming).

use tokio_util::sync::CancellationToken;

use super::http::HttpClient;
use super::{Provider, ProviderRequest, ProviderStream};

/// Chat Completions provider.
pub struct OpenAiCompletions {
    #[allow(dead_code)]
    http: HttpClient,
}

impl OpenAiCompletions {
    pub fn new(http: HttpClient) -> Self {
        OpenAiCompletions { http }
    }
}

impl Provider for OpenAiCompletions {
    fn api(&self) -> &'static str {
        "openai-completions"
    }

    fn stream(&self, _request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
        Box::pin(futures::stream::empty())
    }
}
