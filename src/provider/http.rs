//! The shared HTTP client and HTTP error classification for providers.

/// A cheaply clonable HTTP client shared by all providers.
#[derive(Clone)]
pub struct HttpClient {
    pub inner: reqwest::Client,
}
