//! The `bedrock-converse-stream` wire API: Amazon Bedrock's
//! `POST /model/{modelId}/converse-stream`, as pi 1.6.0 calls it through the
//! AWS SDK (`@aws-sdk/client-bedrock-runtime`).
//!
//! Authentication, in pi's order: a bearer token (a stored key, `--api-key`
//! or `AWS_BEARER_TOKEN_BEDROCK`) as `Authorization: Bearer`; else SigV4
//! (`aws-sigv4`) with the credentials of [`aws_credentials`];
//! `AWS_BEDROCK_SKIP_AUTH=1` signs with dummy keys (for proxies that need
//! none). The region: an inference-profile ARN's, else `AWS_REGION` /
//! `AWS_DEFAULT_REGION`, else a standard endpoint's, else the profile's
//! (`AWS_PROFILE`), else `us-east-1`. The endpoint: the model's base URL,
//! unless it is a standard `bedrock-runtime.{region}.amazonaws.com` one and
//! a region or `AWS_PROFILE` is configured (then the region's endpoint).
//! The answer is an AWS event stream ([`eventstream`], [`stream`]).

pub mod aws_credentials;
pub mod aws_sdk_credentials;
mod events;
pub mod eventstream;
pub mod request;
pub mod sdk_http;
pub mod stream;

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use tokio_util::sync::CancellationToken;

use super::ambient::is_placeholder;
use super::driver::{Api, Call, Framing, Reported, drive_prepared};
use super::env::ProviderEnv;
use super::http::HttpClient;
use super::shared::configured_headers;
use super::{Provider, ProviderError, ProviderErrorKind, ProviderRequest, ProviderStream};
use aws_credentials::AwsCredentials;

/// The signing name of Bedrock's runtime.
const SERVICE: &str = "bedrock";

/// Amazon Bedrock provider.
pub struct BedrockConverseStream {
    http: HttpClient,
}

impl BedrockConverseStream {
    pub fn new(http: HttpClient) -> Self {
        BedrockConverseStream { http }
    }
}

/// The region of a standard Bedrock runtime endpoint URL.
pub fn standard_endpoint_region(base_url: &str) -> Option<String> {
    let host = base_url.split_once("://")?.1.split(['/', '?', '#']).next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host.split(':').next()?.to_ascii_lowercase();
    let rest = host.strip_prefix("bedrock-runtime-fips.").or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let region = rest.strip_suffix(".amazonaws.com").or_else(|| rest.strip_suffix(".amazonaws.com.cn"))?;
    (!region.is_empty() && region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
        .then(|| region.to_string())
}

/// The region embedded in an inference-profile ARN model id.
fn arn_region(model_id: &str) -> Option<String> {
    let rest = model_id.strip_prefix("arn:aws")?;
    let rest = match rest.strip_prefix(':') {
        Some(r) => r,
        None => rest.strip_prefix('-')?.split_once(':')?.1,
    };
    let region = rest.strip_prefix("bedrock:")?.split(':').next()?;
    (!region.is_empty()).then(|| region.to_string())
}

/// Where and how a call goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub region: String,
    /// The endpoint root (no trailing slash).
    pub endpoint: String,
}

/// pi's region and endpoint decisions. `stored_profile`: the profile of the
/// stored credential.
pub fn target(base_url: &str, model_id: &str, env: &ProviderEnv, stored_profile: Option<&str>) -> Target {
    let configured = env.get("AWS_REGION").or_else(|| env.get("AWS_DEFAULT_REGION"));
    let ambient_profile = std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty());
    let endpoint_region = standard_endpoint_region(base_url);
    let explicit = endpoint_region.is_none() || (configured.is_none() && ambient_profile.is_none());
    let profile_name = stored_profile.map(str::to_string).or_else(|| env.get("AWS_PROFILE"));
    let region = arn_region(model_id)
        .or(configured)
        .or_else(|| endpoint_region.clone().filter(|_| explicit))
        // With an ambient AWS_PROFILE the SDK reads the region of the client's profile.
        .or_else(|| {
            profile_name.filter(|_| ambient_profile.is_some()).and_then(|p| aws_credentials::profile_region(env, &p))
        })
        .unwrap_or_else(|| "us-east-1".to_string());
    let endpoint = if explicit && !base_url.trim().is_empty() {
        base_url.trim().trim_end_matches('/').to_string()
    } else {
        let suffix = if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" };
        format!("https://bedrock-runtime.{region}.{suffix}")
    };
    Target { region, endpoint }
}

/// The model id as a path segment (the SDK's `extendedEncodeURIComponent`).
fn encode_label(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Sign a request with SigV4 (headers `x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token`, `authorization` added to `headers`). `url` is
/// where the request really goes (its host is signed).
pub fn sign_request(
    url: &str,
    headers: &mut Vec<(String, String)>,
    body: &[u8],
    credentials: &AwsCredentials,
    region: &str,
    time: SystemTime,
) -> Result<(), ProviderError> {
    let failed =
        |e: String| ProviderError::new(ProviderErrorKind::InvalidRequest, format!("Cannot sign the request: {e}"));
    let identity = Credentials::new(
        credentials.access_key_id.clone(),
        credentials.secret_access_key.clone(),
        credentials.session_token.clone(),
        None,
        "pi-rpc",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| failed(e.to_string()))?
        .into();
    let host = host_of(url).ok_or_else(|| failed(format!("no host in {url}")))?;
    let mut signed: Vec<(String, String)> = headers.clone();
    signed.retain(|(k, _)| !k.eq_ignore_ascii_case("host"));
    signed.push(("host".to_string(), host));
    let signable = SignableRequest::new(
        "POST",
        url,
        signed.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| failed(e.to_string()))?;
    let (instructions, _) = sign(signable, &params).map_err(|e| failed(e.to_string()))?.into_parts();
    let (added, _) = instructions.into_parts();
    for header in added {
        super::shared::set_header(headers, header.name(), header.value());
    }
    Ok(())
}

/// `host[:port]` of a URL as the `Host` header carries it (default ports left out).
fn host_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    Some(match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

/// Caller headers that must not replace the signature's (pi's reserved set).
fn reserved(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("x-amz-") || name == "authorization" || name == "host"
}

impl BedrockConverseStream {
    async fn prepare(http: HttpClient, request: ProviderRequest) -> Result<Call, ProviderError> {
        let env = &request.env;
        let stored_profile = request.env.stored().get("AWS_PROFILE").filter(|p| !p.is_empty()).cloned();
        let target = target(&request.model.base_url, &request.model.id, env, stored_profile.as_deref());
        let body =
            request::build_body(&request, &target.region, env.get("AWS_BEDROCK_FORCE_CACHE").as_deref() == Some("1"))?;
        let url = format!("{}/model/{}/converse-stream", target.endpoint, encode_label(&request.model.id));
        let mut headers: Vec<(String, String)> = vec![("content-type".into(), "application/json".into())];
        for (k, v) in configured_headers(&request) {
            if !reserved(&k) {
                super::shared::set_header(&mut headers, &k, v);
            }
        }
        let bytes = serde_json::to_vec(&body).map_err(|e| {
            ProviderError::new(ProviderErrorKind::InvalidRequest, format!("Cannot encode request: {e}"))
        })?;
        let skip_auth = env.get("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1");
        let key = request.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty() && !is_placeholder(k));
        let bearer = key.map(str::to_string).or_else(|| env.get("AWS_BEARER_TOKEN_BEDROCK"));
        match bearer.filter(|_| !skip_auth) {
            Some(token) => headers.push(("authorization".into(), format!("Bearer {token}"))),
            None => {
                let credentials = if skip_auth {
                    AwsCredentials {
                        access_key_id: "dummy-access-key".into(),
                        secret_access_key: "dummy-secret-key".into(),
                        session_token: None,
                    }
                } else {
                    aws_credentials::resolve(env, stored_profile.as_deref(), &target.region, &http).await?
                };
                let sent_to = http.target(&url);
                sign_request(&sent_to, &mut headers, &bytes, &credentials, &target.region, SystemTime::now())?;
            }
        }
        let mut call = Call::new(url, headers, body);
        call.raw = Some(bytes);
        call.framing = Framing::AwsEventStream;
        Ok(call)
    }
}

impl Provider for BedrockConverseStream {
    fn api(&self) -> &'static str {
        "bedrock-converse-stream"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let http = self.http.clone();
        let prepare = Box::pin(Self::prepare(http, request));
        let api = Api {
            http_error: Box::new(stream::http_error),
            transport_error: stream::transport_error,
            reported: Reported::Successes,
        };
        drive_prepared(self.http.clone(), cancel, prepare, stream::Decoder::default(), api)
    }
}

#[cfg(test)]
mod tests;
