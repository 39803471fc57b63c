//! OpenAI's wire APIs: Chat Completions (`openai-completions`, also what most
//! OpenAI-compatible servers speak), Responses (`openai-responses`) and the
//! APIs built on it (`azure-openai-responses`, `openai-codex-responses`),
//! with the compatibility flags, reasoning options and request builders they
//! share.

pub mod azure;
pub mod azure_resource;
pub mod codex;
pub mod codex_transport;
pub mod codex_ws;
pub mod compat;
pub mod completions;
pub mod reasoning;
pub mod request;
pub mod responses;
pub mod responses_request;
