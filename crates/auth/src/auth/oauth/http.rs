//! HTTP for the logins: form and JSON requests to the providers' OAuth
//! endpoints, each with a timeout, through one lazily built client that
//! honours the proxy variables. Every URL passes through the origin
//! overrides first, so that tests point the hard-coded endpoints at
//! 127.0.0.1.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::OAuthError;

/// How long one OAuth request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

type Route = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// The logins' way to the network.
#[derive(Clone, Default)]
pub struct Net {
    route: Option<Route>,
    cancel: CancellationToken,
}

/// A request body.
pub enum Body {
    None,
    /// `application/x-www-form-urlencoded`, fields in this order.
    Form(Vec<(&'static str, String)>),
    Json(Value),
}

/// A response, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub text: String,
    /// The body as JSON (`Null` when it is not JSON).
    pub json: Value,
    pub retry_after: Option<String>,
}

impl Response {
    /// The body's fields the logins read (all absent when it is no JSON object).
    pub fn answer(&self) -> super::answer::Answer {
        super::answer::Answer::of(&self.json)
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A 4xx other than 408/429: the server refused, asking again won't help.
    pub fn refused(&self) -> bool {
        (400..500).contains(&self.status) && !matches!(self.status, 408 | 429)
    }

    /// This failed response as an error: `<what> failed (HTTP <status>): <body>`.
    pub fn error(&self, what: &str) -> OAuthError {
        let body = self.text.trim();
        let body = match body.char_indices().nth(500) {
            Some((cut, _)) => format!("{}…", &body[..cut]),
            None => body.to_string(),
        };
        let message = if body.is_empty() {
            format!("{what} failed (HTTP {})", self.status)
        } else {
            format!("{what} failed (HTTP {}): {body}", self.status)
        };
        OAuthError { message, permanent: self.refused() }
    }
}

fn client() -> Result<&'static reqwest::Client, OAuthError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let built = CLIENT.get_or_init(|| {
        crate::provider::http::install_crypto_provider();
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| crate::provider::http::error_chain(&e))
    });
    built.as_ref().map_err(|e| OAuthError::transient(format!("HTTP client: {e}")))
}

impl Net {
    /// The real endpoints (with the process's origin overrides).
    pub fn new() -> Net {
        Net::default()
    }

    /// Endpoints rewritten by `route` (tests).
    pub fn with_route(route: impl Fn(&str) -> String + Send + Sync + 'static) -> Net {
        Net { route: Some(Arc::new(route)), cancel: CancellationToken::new() }
    }

    /// The same network, cancelled by `cancel`.
    pub fn cancelled_by(&self, cancel: CancellationToken) -> Net {
        Net { route: self.route.clone(), cancel }
    }

    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Where a request for `url` goes.
    pub fn url(&self, url: &str) -> String {
        match &self.route {
            Some(route) => route(url),
            None => default_route(url),
        }
    }

    /// Send one request and read its answer (whatever its status).
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Body,
    ) -> Result<Response, OAuthError> {
        let target = self.url(url);
        let mut request = client()?.request(method, &target).timeout(REQUEST_TIMEOUT);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request = match body {
            Body::None => request,
            Body::Form(fields) => {
                let mut form = url::form_urlencoded::Serializer::new(String::new());
                for (k, v) in &fields {
                    form.append_pair(k, v);
                }
                request.header("content-type", "application/x-www-form-urlencoded").body(form.finish())
            }
            Body::Json(value) => request.header("content-type", "application/json").body(value.to_string()),
        };
        let exchange = async {
            let response = request.send().await.map_err(|e| transport(url, &e))?;
            let status = response.status().as_u16();
            let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
            let text = response.text().await.map_err(|e| transport(url, &e))?;
            let json = serde_json::from_str(&text).unwrap_or(Value::Null);
            Ok(Response { status, text, json, retry_after })
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(OAuthError::cancelled()),
            r = exchange => r,
        }
    }

    pub async fn post_form(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        fields: Vec<(&'static str, String)>,
    ) -> Result<Response, OAuthError> {
        let mut all = vec![("accept", "application/json")];
        all.extend_from_slice(headers);
        self.send(reqwest::Method::POST, url, &all, Body::Form(fields)).await
    }

    pub async fn post_json(&self, url: &str, headers: &[(&str, &str)], body: Value) -> Result<Response, OAuthError> {
        let mut all = vec![("accept", "application/json")];
        all.extend_from_slice(headers);
        self.send(reqwest::Method::POST, url, &all, Body::Json(body)).await
    }

    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Response, OAuthError> {
        self.send(reqwest::Method::GET, url, headers, Body::None).await
    }

    /// Sleep, unless cancelled first.
    pub async fn sleep(&self, duration: Duration) -> Result<(), OAuthError> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(OAuthError::cancelled()),
            _ = tokio::time::sleep(duration) => Ok(()),
        }
    }
}

fn transport(url: &str, e: &reqwest::Error) -> OAuthError {
    let what = if e.is_timeout() { "timed out" } else { "failed" };
    OAuthError::transient(format!("request to {url} {what}: {}", crate::provider::http::error_chain(e)))
}

/// The origin overrides of the process (`PI_RPC_ORIGIN_OVERRIDES`, the
/// test hook every request of pi-rpc follows).
fn default_route(url: &str) -> String {
    crate::provider::http::route_url(url).into_owned()
}

/// A URL with its query built from `params`, in order.
pub fn with_query(base: &str, params: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        query.append_pair(k, v);
    }
    format!("{base}?{}", query.finish())
}
