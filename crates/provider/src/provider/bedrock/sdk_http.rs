//! The HTTP client `aws-config`'s credential providers send through: pi-rpc's
//! own reqwest client ([`HttpClient`]), so STS, SSO and instance-metadata
//! requests follow the same proxy rules and origin overrides as every other
//! request, and the binary carries one TLS stack.

use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient as SdkHttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;

use super::super::http::HttpClient;

/// `aws-config`'s HTTP client over pi-rpc's.
pub fn shared(http: &HttpClient) -> SharedHttpClient {
    SharedHttpClient::new(Client { http: http.clone() })
}

#[derive(Clone)]
struct Client {
    http: HttpClient,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pi-rpc HttpClient")
    }
}

impl SdkHttpClient for Client {
    fn http_connector(&self, settings: &HttpConnectorSettings, _: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(Connector { http: self.http.clone(), read_timeout: settings.read_timeout() })
    }
}

struct Connector {
    http: HttpClient,
    read_timeout: Option<Duration>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector").field("read_timeout", &self.read_timeout).finish_non_exhaustive()
    }
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let http = self.http.clone();
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move { send(&http, request, read_timeout).await })
    }
}

fn other(message: String) -> ConnectorError {
    ConnectorError::other(message.into(), None)
}

async fn send(
    http: &HttpClient,
    request: HttpRequest,
    read_timeout: Option<Duration>,
) -> Result<HttpResponse, ConnectorError> {
    let method = reqwest::Method::from_bytes(request.method().as_bytes()).map_err(|e| other(e.to_string()))?;
    let client = http.client().map_err(|e| other(e.message))?;
    let mut builder = client.request(method, http.target(request.uri()));
    for (name, value) in request.headers() {
        builder = builder.header(name, value);
    }
    if let Some(timeout) = read_timeout {
        builder = builder.timeout(timeout);
    }
    // The credential providers' bodies (STS, SSO) are small and in memory.
    let body = request.body().bytes().map(<[u8]>::to_vec).unwrap_or_default();
    let response = builder.body(body).send().await.map_err(|e| {
        let text = super::super::http::error_chain(&e);
        if e.is_timeout() { ConnectorError::timeout(text.into()) } else { ConnectorError::io(text.into()) }
    })?;
    let status = StatusCode::try_from(response.status().as_u16()).map_err(|e| other(e.to_string()))?;
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let bytes = response.bytes().await.map_err(|e| ConnectorError::io(super::super::http::error_chain(&e).into()))?;
    let mut out = HttpResponse::new(status, SdkBody::from(bytes.to_vec()));
    for (name, value) in headers {
        out.headers_mut().append(name, value);
    }
    Ok(out)
}
