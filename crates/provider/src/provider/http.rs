//! The shared HTTP client of the providers and logins: one `reqwest::Client`
//! (rustls with the ring provider, the system's roots read on the first TLS
//! handshake: [`super::tls`]), a JSON POST helper that honours
//! cancellation, SSE body streaming with an idle timeout, and transport-error
//! texts. Every request built here goes through the test hook
//! `PI_RPC_ORIGIN_OVERRIDES` ([`super::origin`]) and pi's proxy variables
//! ([`super::proxy`]).
//!
//! Timeouts: a connect timeout, a wait-for-response-headers timeout, and an
//! idle timeout between body chunks. There is no overall request timeout, so a
//! long stream that keeps producing data is never cut.

use std::sync::{Arc, Once, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::direct;
use super::origin::OriginOverrides;
use super::proxy::ProxyEnv;
use super::sse::{BodyError, IdleBody};
use super::{ProviderError, ProviderErrorKind};

/// Text of a stream cut by the server mid-body. This is pi 1.6's literal text
/// (undici's error code included), checked against the same fake-server cut,
/// so that transcripts of both implementations agree; it matches pi's retry
/// pattern (`terminated`, `other side closed`).
pub const STREAM_CUT_MESSAGE: &str = "terminated: other side closed (UND_ERR_SOCKET)";

/// Text when no response headers arrived in time (the OpenAI SDK's wording).
pub const REQUEST_TIMEOUT_MESSAGE: &str = "Request timed out.";

/// Timeouts of the client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HttpOptions {
    pub connect_timeout: Duration,
    /// Longest wait for the response headers.
    pub headers_timeout: Duration,
    /// Longest gap between two body chunks; `None` disables it.
    pub idle_timeout: Option<Duration>,
}

impl Default for HttpOptions {
    /// pi's defaults: 300 s for headers and between body chunks.
    fn default() -> Self {
        HttpOptions {
            connect_timeout: Duration::from_secs(30),
            headers_timeout: Duration::from_secs(300),
            idle_timeout: Some(Duration::from_secs(300)),
        }
    }
}

/// A cheaply clonable HTTP client shared by all providers. The underlying
/// reqwest client (TLS configuration, root certificates) is built on first
/// use, so start-up stays fast and small when no request is ever made.
#[derive(Clone)]
pub struct HttpClient {
    inner: Arc<OnceLock<Result<Built, String>>>,
    /// Idle plain-HTTP connections of [`HttpClient::post_stream`] (`provider::direct`).
    direct: Arc<direct::Pool>,
    pub options: HttpOptions,
    /// `User-Agent` sent unless the request headers set one.
    pub user_agent: String,
    /// The settings' `httpProxy` (used where `HTTP(S)_PROXY` are unset).
    settings_proxy: Option<Arc<str>>,
    /// `PI_RPC_ORIGIN_OVERRIDES` of the process, unless replaced (tests).
    origins: Arc<OriginOverrides>,
}

/// The reqwest client and the proxy settings it was built with.
struct Built {
    client: reqwest::Client,
    proxies: ProxyEnv,
}

static RING: Once = Once::new();

/// Install ring as the process-wide rustls crypto provider (once; a provider
/// installed earlier by someone else is kept).
pub fn install_crypto_provider() {
    RING.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl HttpClient {
    /// A client with pi's default timeouts.
    pub fn new() -> Result<HttpClient, ProviderError> {
        HttpClient::with_options(HttpOptions::default())
    }

    pub fn with_options(options: HttpOptions) -> Result<HttpClient, ProviderError> {
        let user_agent = format!(
            "pi-rpc/{} ({}; rust; {})",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH
        );
        Ok(HttpClient {
            inner: Arc::new(OnceLock::new()),
            direct: Arc::default(),
            options,
            user_agent,
            settings_proxy: None,
            origins: Arc::new(OriginOverrides::global().clone()),
        })
    }

    /// Use the settings' `httpProxy` where the proxy variables are unset.
    pub fn with_settings_proxy(mut self, proxy: Option<&str>) -> HttpClient {
        self.settings_proxy = proxy.map(Arc::from);
        self.inner = Arc::new(OnceLock::new());
        self
    }

    /// Replace the origin overrides read from the environment (tests).
    pub fn with_origin_overrides(mut self, origins: OriginOverrides) -> HttpClient {
        self.origins = Arc::new(origins);
        self
    }

    /// The URL a request for `url` goes to ([`OriginOverrides`]).
    pub fn target(&self, url: &str) -> String {
        self.origins.apply(url)
    }

    /// The proxy requests to `url` go through, if any (the proxy variables,
    /// else the settings' `httpProxy`).
    pub fn proxy_for(&self, url: &str) -> Option<String> {
        let parsed = reqwest::Url::parse(&self.target(url)).ok()?;
        let proxies = ProxyEnv::from_process(self.settings_proxy.as_deref());
        proxies.proxy_for(parsed.scheme(), parsed.host_str().unwrap_or(""), parsed.port()).map(str::to_string)
    }

    /// A request of any method to `url` (after the origin overrides), with
    /// the client's `User-Agent`. For logins and token exchanges; the wire
    /// APIs use [`HttpClient::post_json`].
    pub fn request(&self, method: reqwest::Method, url: &str) -> Result<reqwest::RequestBuilder, ProviderError> {
        let target = self.target(url);
        let builder = self.client()?.request(method, target.as_str());
        Ok(builder.header(reqwest::header::USER_AGENT, self.user_agent.as_str()))
    }

    /// The reqwest client, built once on first use.
    pub fn client(&self) -> Result<&reqwest::Client, ProviderError> {
        self.built().map(|b| &b.client)
    }

    fn built(&self) -> Result<&Built, ProviderError> {
        let built = self.inner.get_or_init(|| {
            install_crypto_provider();
            let proxies = ProxyEnv::from_process(self.settings_proxy.as_deref());
            // reqwest's own TLS set-up, except that the system's roots are
            // read on the first TLS handshake (plain HTTP never needs them).
            let tls = super::tls::client_config()?;
            let client = reqwest::Client::builder()
                .tls_backend_preconfigured(tls)
                .connect_timeout(self.options.connect_timeout)
                .pool_idle_timeout(Duration::from_secs(90))
                .proxy(proxies.to_reqwest())
                .build()
                .map_err(|e| format!("HTTP client: {}", error_chain(&e)))?;
            Ok(Built { client, proxies })
        });
        built.as_ref().map_err(|e| ProviderError::new(ProviderErrorKind::InvalidRequest, e.clone()))
    }

    /// POST `body` as JSON. Returns the response whatever its status; fails only
    /// on transport errors, timeouts and cancellation.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ProviderError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ProviderError::new(ProviderErrorKind::InvalidRequest, format!("Cannot encode request: {e}"))
        })?;
        self.post_bytes(url, headers, bytes, cancel).await
    }

    /// POST a body already encoded (JSON unless the headers say otherwise),
    /// like [`HttpClient::post_json`].
    pub async fn post_bytes(
        &self,
        url: &str,
        headers: &[(String, String)],
        bytes: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ProviderError> {
        let map = self.headers(headers)?;
        let target = self.target(url);
        let send = self.client()?.post(target.as_str()).headers(map).body(bytes).send();
        self.before_headers(cancel, async { send.await.map_err(|e| transport_error(&e)) }).await
    }

    /// POST an encoded body like [`HttpClient::post_bytes`], for an answer
    /// read as a stream: to a plain-HTTP origin without a proxy over a
    /// connection the reader drives itself (`provider::direct`), else through reqwest.
    pub async fn post_stream(
        &self,
        url: &str,
        headers: &[(String, String)],
        bytes: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<StreamResponse, ProviderError> {
        let map = self.headers(headers)?;
        let target = self.target(url);
        let built = self.built()?;
        let direct = reqwest::Url::parse(&target).ok().and_then(|parsed| {
            let proxied = built.proxies.proxy_for(parsed.scheme(), parsed.host_str().unwrap_or(""), parsed.port());
            proxied.is_none().then(|| direct::Target::of(&parsed)).flatten()
        });
        let Some(direct) = direct else {
            let send = built.client.post(target.as_str()).headers(map).body(bytes).send();
            let response = self.before_headers(cancel, async { send.await.map_err(|e| transport_error(&e)) }).await?;
            return Ok(StreamResponse {
                status: response.status().as_u16(),
                headers: response.headers().clone(),
                body: ResponseBody::Pooled(response),
            });
        };
        let send = self.direct.post(&direct, map, bytes, self.options.connect_timeout);
        let answer = self.before_headers(cancel, async { send.await.map_err(direct_error) }).await?;
        Ok(StreamResponse { status: answer.status, headers: answer.headers, body: ResponseBody::Direct(answer.body) })
    }

    /// Wait for `send` (the answer's head) at most the headers timeout,
    /// unless cancelled first.
    async fn before_headers<T>(
        &self,
        cancel: &CancellationToken,
        send: impl std::future::Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ProviderError::aborted()),
            res = tokio::time::timeout(self.options.headers_timeout, send) => match res {
                Err(_) => Err(ProviderError::new(ProviderErrorKind::Transient, REQUEST_TIMEOUT_MESSAGE)),
                Ok(res) => res,
            },
        }
    }

    /// The request's headers: JSON, the client's `User-Agent`, then `headers`.
    fn headers(&self, headers: &[(String, String)]) -> Result<HeaderMap, ProviderError> {
        let mut map = HeaderMap::new();
        map.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json"));
        map.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Ok(ua) = HeaderValue::from_str(&self.user_agent) {
            map.insert(reqwest::header::USER_AGENT, ua);
        }
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid_header(name))?;
            let value = HeaderValue::from_str(value).map_err(|_| invalid_header(name.as_str()))?;
            map.insert(name, value);
        }
        Ok(map)
    }

    /// The chunks of a response body, each read waiting at most this
    /// client's idle timeout; a framing ([`super::sse::Framer`]) makes them events.
    pub fn body(&self, response: StreamResponse) -> IdleBody<Chunks> {
        IdleBody::new(response.into_chunks(), self.options.idle_timeout)
    }
}

/// A streamed POST's answer ([`HttpClient::post_stream`]).
pub struct StreamResponse {
    pub status: u16,
    pub headers: HeaderMap,
    body: ResponseBody,
}

enum ResponseBody {
    Pooled(reqwest::Response),
    Direct(direct::DirectBody),
}

impl StreamResponse {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body's length when the answer declared it.
    pub fn content_length(&self) -> Option<u64> {
        match &self.body {
            ResponseBody::Pooled(response) => response.content_length(),
            ResponseBody::Direct(body) => body.content_length(),
        }
    }

    /// The body's chunks, a read error as text (reqwest's wording).
    pub fn into_chunks(self) -> Chunks {
        match self.body {
            ResponseBody::Pooled(response) => {
                Chunks(ChunkSource::Pooled(response.bytes_stream().map_err(|e| error_chain(&e)).boxed()))
            }
            ResponseBody::Direct(body) => Chunks(ChunkSource::Direct(body)),
        }
    }
}

/// The chunks of a [`StreamResponse`]'s body.
pub struct Chunks(ChunkSource);

enum ChunkSource {
    Pooled(futures::stream::BoxStream<'static, Result<Bytes, String>>),
    Direct(direct::DirectBody),
}

impl Stream for Chunks {
    type Item = Result<Bytes, String>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match &mut self.get_mut().0 {
            ChunkSource::Pooled(chunks) => chunks.poll_next_unpin(cx),
            ChunkSource::Direct(body) => {
                body.poll_next_unpin(cx).map_err(|e| format!("error decoding response body: {}", error_chain(&e)))
            }
        }
    }
}

/// A plain-HTTP request's failure in [`transport_error`]'s words.
fn direct_error(err: direct::SendError) -> ProviderError {
    let message = match err {
        direct::SendError::ConnectTimeout => REQUEST_TIMEOUT_MESSAGE.to_string(),
        direct::SendError::Io(e) => format!("Connection error.: {}", deepest(&e)),
        direct::SendError::Http(e) => format!("Connection error.: {}", deepest(&e)),
        direct::SendError::Request(e) => return ProviderError::new(ProviderErrorKind::InvalidRequest, e),
    };
    ProviderError::new(ProviderErrorKind::Transient, message)
}

/// Where a request for `url` goes: rewritten by the process's
/// `PI_RPC_ORIGIN_OVERRIDES` ([`OriginOverrides::global`]) when its origin
/// matches, else unchanged. For callers that build their own requests;
/// [`HttpClient`] applies it to its own.
pub fn route_url(url: &str) -> std::borrow::Cow<'_, str> {
    match OriginOverrides::global().rewrite(url) {
        Some(rewritten) => std::borrow::Cow::Owned(rewritten),
        None => std::borrow::Cow::Borrowed(url),
    }
}

/// Most bytes of an error body read into memory; the rest is left unread.
pub const MAX_ERROR_BODY_READ: usize = 1 << 20;

/// A non-2xx response body as read: at most [`MAX_ERROR_BODY_READ`] bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBody {
    pub text: String,
    /// Set when the body was longer than what was read: what it was.
    pub cut_note: Option<String>,
}

/// Read an (error) body as text, up to [`MAX_ERROR_BODY_READ`] bytes,
/// honouring cancellation and the idle timeout between chunks.
pub async fn read_body(
    response: StreamResponse,
    idle: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<ErrorBody, ProviderError> {
    let limit = idle.unwrap_or(Duration::from_secs(u64::from(u32::MAX)));
    let declared = response.content_length();
    let mut chunks = response.into_chunks();
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ProviderError::aborted()),
            res = tokio::time::timeout(limit, chunks.next()) => match res {
                Err(_) => return Err(body_error(BodyError::Idle(limit))),
                Ok(Some(Err(e))) => return Err(body_error(BodyError::Transport(e))),
                Ok(Some(Ok(chunk))) => Some(chunk),
                Ok(None) => None,
            },
        };
        let Some(chunk) = chunk else { break };
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_ERROR_BODY_READ {
            bytes.truncate(MAX_ERROR_BODY_READ);
            let size = match declared {
                Some(n) => format!("the response body had {n} bytes"),
                None => format!("the response body had more than {MAX_ERROR_BODY_READ} bytes"),
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            return Ok(ErrorBody { text, cut_note: Some(size) });
        }
    }
    Ok(ErrorBody { text: String::from_utf8_lossy(&bytes).into_owned(), cut_note: None })
}

fn invalid_header(name: &str) -> ProviderError {
    ProviderError::new(ProviderErrorKind::InvalidRequest, format!("Invalid header: {name}"))
}

/// The error's own text followed by its sources, `: `-joined, without repeats.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The innermost error text (pi appends the deepest cause the same way).
fn deepest(err: &(dyn std::error::Error + 'static)) -> String {
    let mut last = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !text.is_empty() {
            last = text;
        }
        source = s.source();
    }
    last
}

/// A failure before any response: pi's `Connection error.: <cause>` or `Request timed out.`.
pub fn transport_error(err: &reqwest::Error) -> ProviderError {
    let message = if err.is_timeout() {
        REQUEST_TIMEOUT_MESSAGE.to_string()
    } else {
        format!("Connection error.: {}", deepest(err))
    };
    ProviderError::new(ProviderErrorKind::Transient, message)
}

/// Whether a body read error means the server closed the connection mid-body.
fn is_cut(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "incompletemessage",
        "connection closed before message completed",
        "end of file before message length",
        "unexpected eof",
        "unexpected end of file",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// A failure while reading the body: `terminated: …` like pi, always transient.
pub fn body_error(err: BodyError) -> ProviderError {
    let message = match err {
        BodyError::Idle(d) => format!("terminated: no data received for {}s (idle timeout)", d.as_secs()),
        BodyError::Transport(text) if is_cut(&text) => STREAM_CUT_MESSAGE.to_string(),
        BodyError::Transport(text) => format!("terminated: {text}"),
    };
    ProviderError::new(ProviderErrorKind::Transient, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_fake_server::{FakeServer, Reply};

    #[tokio::test]
    async fn posts_json_with_headers_and_reads_errors() {
        let server = FakeServer::start().await.unwrap();
        server.push(Reply::error(418, "teapot"));
        let http = HttpClient::new().unwrap();
        let cancel = CancellationToken::new();
        let url = format!("{}/chat/completions", server.base_url());
        let headers = vec![("authorization".to_string(), "Bearer k".to_string()), ("x-extra".into(), "1".into())];
        let body = serde_json::to_vec(&serde_json::json!({"a": 1})).unwrap();
        let resp = http.post_stream(&url, &headers, body, &cancel).await.unwrap();
        assert_eq!(resp.status, 418);
        assert!(matches!(resp.body, ResponseBody::Direct(_)), "a plain-HTTP origin is read in the caller's task");
        assert_eq!(read_body(resp, None, &cancel).await.unwrap(), ErrorBody { text: "teapot".into(), cut_note: None });
        let req = &server.requests()[0];
        assert_eq!(req.header("host"), Some(server.addr().to_string().as_str()));
        assert_eq!(req.header("authorization"), Some("Bearer k"));
        assert_eq!(req.header("x-extra"), Some("1"));
        assert_eq!(req.header("content-type"), Some("application/json"));
        assert!(req.header("user-agent").is_some_and(|ua| ua.starts_with("pi-rpc/")));
        assert_eq!(req.body, serde_json::json!({"a": 1}));
    }

    #[tokio::test]
    async fn origin_overrides_redirect_every_request() {
        let server = FakeServer::start().await.unwrap();
        server.push(Reply::error(404, "nope"));
        server.push(Reply::error(404, "nope"));
        let rule = format!("https://api.anthropic.com={}/prefix", server.url());
        let http = HttpClient::new().unwrap().with_origin_overrides(OriginOverrides::parse(&rule).unwrap());
        let cancel = CancellationToken::new();
        let resp = http.post_json("https://api.anthropic.com/v1/messages?beta=true", &[], &Value::Null, &cancel).await;
        assert_eq!(resp.unwrap().status().as_u16(), 404);
        let resp = http.request(reqwest::Method::GET, "https://api.anthropic.com/x").unwrap().send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 404);
        let requests = server.requests();
        assert_eq!(requests[0].path, "/prefix/v1/messages?beta=true");
        assert_eq!((requests[1].method.as_str(), requests[1].path.as_str()), ("GET", "/prefix/x"));
        assert!(requests[1].header("user-agent").is_some_and(|ua| ua.starts_with("pi-rpc/")));
    }

    #[tokio::test]
    async fn a_proxied_stream_goes_through_reqwest() {
        let proxy = FakeServer::start().await.unwrap();
        proxy.push(Reply::error(503, "from the proxy"));
        let http = HttpClient::new().unwrap().with_settings_proxy(Some(&proxy.url()));
        let cancel = CancellationToken::new();
        let url = "http://model.invalid/v1/chat/completions";
        if http.proxy_for(url).is_none() {
            return; // the environment's proxy variables win over the settings' proxy
        }
        let resp = http.post_stream(url, &[], b"{}".to_vec(), &cancel).await.unwrap();
        assert!(matches!(resp.body, ResponseBody::Pooled(_)));
        assert_eq!(resp.status, 503);
        assert_eq!(read_body(resp, None, &cancel).await.unwrap().text, "from the proxy");
    }

    #[tokio::test]
    async fn the_refused_texts_agree_on_both_paths() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let http = HttpClient::new().unwrap();
        let url = format!("http://127.0.0.1:{port}/x");
        let cancel = CancellationToken::new();
        let pooled = http.post_bytes(&url, &[], Vec::new(), &cancel).await.unwrap_err();
        let direct = http.post_stream(&url, &[], Vec::new(), &cancel).await.err().unwrap();
        assert_eq!((direct.kind, direct.message), (pooled.kind, pooled.message));
    }

    #[tokio::test]
    async fn connection_refused_is_transient() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let http = HttpClient::new().unwrap();
        let err = http
            .post_json(&format!("http://127.0.0.1:{port}/x"), &[], &Value::Null, &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Transient);
        assert!(err.message.starts_with("Connection error.: "), "{}", err.message);
        assert!(super::super::classify::is_retryable_message(&err.message));
    }

    #[tokio::test]
    async fn cancellation_before_headers_aborts() {
        let server = FakeServer::start().await.unwrap();
        server.push(Reply::text("late").delay_ms(5_000));
        let http = HttpClient::new().unwrap();
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            c2.cancel();
        });
        let started = std::time::Instant::now();
        let url = format!("{}/chat/completions", server.base_url());
        let err = http.post_json(&url, &[], &Value::Null, &cancel).await.unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Aborted);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn body_error_texts() {
        assert_eq!(
            body_error(BodyError::Transport("error decoding response body: IncompleteMessage".into())).message,
            STREAM_CUT_MESSAGE
        );
        assert_eq!(body_error(BodyError::Transport("reset".into())).message, "terminated: reset");
        let idle = body_error(BodyError::Idle(Duration::from_secs(300)));
        assert!(super::super::classify::is_retryable_message(&idle.message));
    }
}
