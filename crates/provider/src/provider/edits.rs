//! The provider-specific edits pi makes to a request, in one place below
//! both the wire APIs and the credential wrapper: before the call
//! ([`prepare`]) and on the final headers ([`finish_headers`]).

use super::{ProviderError, ProviderRequest};

/// Edits made once per call, before any wire API sees the request: the
/// Cloudflare account placeholders of the base URL ([`super::cloudflare::prepare`])
/// and Azure's Chat Completions model ([`super::openai::azure_resource::prepare_completions`]).
pub fn prepare(request: &mut ProviderRequest) -> Result<(), ProviderError> {
    super::cloudflare::prepare(request);
    super::openai::azure_resource::prepare_completions(request)
}

/// Edits to a request's final headers: Copilot's per-request headers
/// ([`super::copilot`]) and the Cloudflare AI Gateway's authentication
/// ([`super::cloudflare`]).
pub fn finish_headers(request: &ProviderRequest, headers: &mut Vec<(String, String)>) {
    super::copilot::finish_headers(request, headers);
    super::cloudflare::finish_headers(request, headers);
}
