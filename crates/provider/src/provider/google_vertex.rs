//! The `google-vertex` wire API: Gemini on Vertex AI, as pi 1.6.0 calls it
//! through `@google/genai` (the request body and the stream are Gemini's,
//! shared with `google-generative-ai`).
//!
//! Authentication, in pi's order:
//! * an API key (`GOOGLE_CLOUD_API_KEY` or a stored key) in
//!   `x-goog-api-key`, on Vertex's express endpoint
//!   `https://aiplatform.googleapis.com/v1/publishers/google/models/{id}`;
//! * else Application Default Credentials with `GOOGLE_CLOUD_PROJECT` (or
//!   `GCLOUD_PROJECT`) and `GOOGLE_CLOUD_LOCATION`: the service-account or
//!   gcloud user file named by `GOOGLE_APPLICATION_CREDENTIALS`, else
//!   `~/.config/gcloud/application_default_credentials.json`, else the
//!   metadata server; the token in `Authorization: Bearer`, on
//!   `https://{location}-aiplatform.googleapis.com/v1/projects/{p}/locations/{l}/…`
//!   (`aiplatform.googleapis.com` for `global`, `aiplatform.{us,eu}.rep.googleapis.com`
//!   for the multi-regions).
//!
//! A base URL without the `{location}` placeholder (models.json) is used as
//! the collection: `{base}[/v1]/publishers/google/models/{id}:streamGenerateContent?alt=sse`.
//!
//! The tokens come from `google-cloud-auth` (Google's own crate). It signs
//! service-account JWTs itself instead of exchanging them at
//! `oauth2.googleapis.com` as pi's `google-auth-library` does (see
//! `src/provider/README.md`); the gcloud user refresh goes to the file's
//! `token_uri` (default `https://oauth2.googleapis.com/token`) and the
//! metadata server to `GCE_METADATA_HOST`, both through
//! `PI_RPC_ORIGIN_OVERRIDES`.

use std::path::PathBuf;
use std::sync::Mutex;

use google_cloud_auth::credentials::{CacheableResource, Credentials};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::driver::{Api, Call, Reported, drive_prepared};
use super::env::ProviderEnv;
use super::google_request::build_body;
use super::http::{HttpClient, route_url};
use super::lenient;
use super::shared::{configured_headers, set_header};
use super::{Provider, ProviderError, ProviderErrorKind, ProviderRequest, ProviderStream};

const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const OAUTH2_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
const METADATA_ROOT: &str = "http://metadata.google.internal";
/// pi's marker for "use the ambient credentials" (never sent as a key).
pub const CREDENTIALS_MARKER: &str = "gcp-vertex-credentials";

/// Vertex AI provider.
pub struct GoogleVertex {
    http: HttpClient,
    /// The credentials last built, with the source they came from.
    adc: std::sync::Arc<Mutex<Option<(String, Credentials)>>>,
}

/// What pi-rpc reads of a Google credentials file (a field of another JSON type reads as absent).
#[derive(Deserialize, Default)]
#[serde(default)]
struct CredentialsHead {
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    token_uri: Option<String>,
}

impl GoogleVertex {
    pub fn new(http: HttpClient) -> Self {
        GoogleVertex { http, adc: Default::default() }
    }
}

/// The request's API key, unless absent or a placeholder (`<authenticated>`, pi's marker).
pub fn api_key(request: &ProviderRequest) -> Option<&str> {
    let key = request.api_key.as_deref()?.trim();
    let placeholder = key.starts_with('<') && key.ends_with('>') && key.len() > 2;
    (!key.is_empty() && key != CREDENTIALS_MARKER && !placeholder).then_some(key)
}

/// The project and location of ADC requests (pi's texts when missing).
pub fn project_and_location(env: &ProviderEnv) -> Result<(String, String), ProviderError> {
    let project = env.get("GOOGLE_CLOUD_PROJECT").or_else(|| env.get("GCLOUD_PROJECT")).ok_or_else(|| {
        ProviderError::new(
            ProviderErrorKind::Auth,
            "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.",
        )
    })?;
    let location = env.get("GOOGLE_CLOUD_LOCATION").ok_or_else(|| {
        ProviderError::new(
            ProviderErrorKind::Auth,
            "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.",
        )
    })?;
    Ok((project, location))
}

fn includes_api_version(base_url: &str) -> bool {
    let path = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let path = path.split_once('/').map_or("", |(_, p)| p);
    path.split('/').any(|part| {
        let Some(rest) = part.strip_prefix('v') else { return false };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && {
            let tail = &rest[digits..];
            tail.is_empty() || tail.strip_prefix("beta").is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
        }
    })
}

/// The streaming URL of a request (`adc`: project and location for ADC, `None` with an API key).
pub fn endpoint(base_url: &str, model_id: &str, adc: Option<&(String, String)>) -> String {
    let model_path = match model_id.split_once('/') {
        _ if model_id.starts_with("publishers/")
            || model_id.starts_with("projects/")
            || model_id.starts_with("models/") =>
        {
            model_id.to_string()
        }
        Some((publisher, name)) => format!("publishers/{publisher}/models/{}", name.split('/').next().unwrap_or(name)),
        None => format!("publishers/google/models/{model_id}"),
    };
    let custom = base_url.trim();
    let root = if !custom.is_empty() && !custom.contains("{location}") {
        let base = custom.trim_end_matches('/');
        if includes_api_version(base) { base.to_string() } else { format!("{base}/v1") }
    } else {
        let host = match adc {
            None => "https://aiplatform.googleapis.com".to_string(),
            Some((_, location)) if location == "global" => "https://aiplatform.googleapis.com".to_string(),
            Some((_, location)) if location == "us" || location == "eu" => {
                format!("https://aiplatform.{location}.rep.googleapis.com")
            }
            Some((_, location)) => format!("https://{location}-aiplatform.googleapis.com"),
        };
        match adc {
            Some((project, location)) => format!("{host}/v1/projects/{project}/locations/{location}"),
            None => format!("{host}/v1"),
        }
    };
    format!("{root}/{model_path}:streamGenerateContent?alt=sse")
}

/// Where ADC come from: the file named by `GOOGLE_APPLICATION_CREDENTIALS`,
/// else gcloud's default file when it exists, else the metadata server.
fn adc_source(env: &ProviderEnv) -> Option<PathBuf> {
    if let Some(path) = env.get("GOOGLE_APPLICATION_CREDENTIALS") {
        return Some(PathBuf::from(path));
    }
    let default = super::shared::home_dir().join(".config/gcloud/application_default_credentials.json");
    default.exists().then_some(default)
}

fn auth_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, message)
}

/// Build the credentials of a source (a credentials file, or the metadata server).
fn build_credentials(source: Option<&PathBuf>) -> Result<Credentials, ProviderError> {
    use google_cloud_auth::credentials::{mds, service_account, user_account};
    super::http::install_crypto_provider();
    let Some(path) = source else {
        let mut builder = mds::Builder::default().with_scopes([SCOPE]);
        if let Some(routed) = super::origin::OriginOverrides::global().rewrite(METADATA_ROOT) {
            builder = builder.with_endpoint(routed);
        }
        return builder.build().map_err(|e| auth_error(format!("Google metadata server credentials: {e}")));
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| auth_error(format!("Cannot read Google credentials {}: {e}", path.display())))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| auth_error(format!("Invalid Google credentials {}: {e}", path.display())))?;
    // The builders read the whole file; pi-rpc reads the kind and where a user's token is renewed.
    let head: CredentialsHead = lenient::event_ref(&json).unwrap_or_default();
    let built = match head.kind.as_deref() {
        Some("service_account") => service_account::Builder::new(json)
            .with_access_specifier(service_account::AccessSpecifier::from_scopes([SCOPE]))
            .build(),
        Some("authorized_user") => {
            let token_uri = head.token_uri.as_deref().unwrap_or(OAUTH2_TOKEN_URL);
            user_account::Builder::new(json).with_scopes([SCOPE]).with_token_uri(route_url(token_uri)).build()
        }
        other => {
            return Err(auth_error(format!(
                "Unsupported Google credentials type {} in {}",
                other.unwrap_or("(none)"),
                path.display()
            )));
        }
    };
    built.map_err(|e| auth_error(format!("Google credentials {}: {e}", path.display())))
}

impl GoogleVertex {
    /// The ADC headers (`Authorization`, maybe `x-goog-user-project`), from cached credentials.
    async fn adc_headers(&self, env: &ProviderEnv) -> Result<Vec<(String, String)>, ProviderError> {
        let source = adc_source(env);
        let key = source.as_ref().map_or_else(|| "metadata".to_string(), |p| p.display().to_string());
        let credentials = {
            let mut cached = self.adc.lock().unwrap_or_else(|p| p.into_inner());
            match cached.as_ref() {
                Some((k, c)) if *k == key => c.clone(),
                _ => {
                    let built = build_credentials(source.as_ref())?;
                    *cached = Some((key, built.clone()));
                    built
                }
            }
        };
        let headers = credentials
            .headers(::http::Extensions::new())
            .await
            .map_err(|e| auth_error(format!("Google Vertex credentials: {e}")))?;
        let CacheableResource::New { data, .. } = headers else {
            return Err(auth_error("Google Vertex credentials: no headers".into()));
        };
        Ok(data.iter().filter_map(|(k, v)| v.to_str().ok().map(|v| (k.as_str().to_string(), v.to_string()))).collect())
    }

    async fn prepare(&self, request: ProviderRequest) -> Result<Call, ProviderError> {
        let body = build_body(&request)?;
        let mut headers = Vec::new();
        let url = match api_key(&request) {
            Some(key) => {
                headers.push(("x-goog-api-key".to_string(), key.to_string()));
                endpoint(&request.model.base_url, &request.model.id, None)
            }
            None => {
                let adc = project_and_location(&request.env)?;
                headers.extend(self.adc_headers(&request.env).await?);
                endpoint(&request.model.base_url, &request.model.id, Some(&adc))
            }
        };
        headers.push(("accept".into(), "*/*".into()));
        for (k, v) in configured_headers(&request) {
            set_header(&mut headers, &k, v);
        }
        Ok(Call::new(url, headers, body))
    }
}

impl Provider for GoogleVertex {
    fn api(&self) -> &'static str {
        "google-vertex"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let this = GoogleVertex { http: self.http.clone(), adc: self.adc.clone() };
        let prepare = Box::pin(async move { this.prepare(request).await });
        let api = Api {
            http_error: Box::new(super::google::http_error),
            transport_error: super::google::transport_error,
            reported: Reported::Nothing,
        };
        drive_prepared(self.http.clone(), cancel, prepare, super::google::Decoder::vertex(), api)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_follow_the_sdk() {
        let catalog = "https://{location}-aiplatform.googleapis.com";
        assert_eq!(
            endpoint(catalog, "gemini-x", None),
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-x:streamGenerateContent?alt=sse"
        );
        let adc = ("proj".to_string(), "europe-west4".to_string());
        assert_eq!(
            endpoint(catalog, "gemini-x", Some(&adc)),
            "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-x:streamGenerateContent?alt=sse"
        );
        let global = ("p".to_string(), "global".to_string());
        assert!(
            endpoint(catalog, "m", Some(&global))
                .starts_with("https://aiplatform.googleapis.com/v1/projects/p/locations/global/")
        );
        let us = ("p".to_string(), "us".to_string());
        assert!(
            endpoint(catalog, "m", Some(&us)).starts_with("https://aiplatform.us.rep.googleapis.com/v1/projects/p/")
        );
        assert_eq!(
            endpoint("http://127.0.0.1:9/", "gemini-x", Some(&adc)),
            "http://127.0.0.1:9/v1/publishers/google/models/gemini-x:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:9/vertex/v1beta1", "anthropic/claude", None),
            "http://127.0.0.1:9/vertex/v1beta1/publishers/anthropic/models/claude:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn placeholder_keys_are_not_keys() {
        let mut request = crate::provider::test_support::simple_request(crate::provider::faux::faux_model(), "hi");
        for (key, used) in [("<authenticated>", false), (CREDENTIALS_MARKER, false), (" ", false), ("AIza", true)] {
            request.api_key = Some(key.into());
            assert_eq!(api_key(&request).is_some(), used, "{key}");
        }
        let env = ProviderEnv::new([("GOOGLE_CLOUD_PROJECT".to_string(), "p".to_string())].into());
        assert!(project_and_location(&env).unwrap_err().message.contains("requires a location"));
    }

    #[test]
    fn a_credentials_file_of_an_unknown_or_odd_type_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("adc.json");
        for (file, shown) in [
            (r#"{"type":"external_account"}"#, "external_account"),
            (r#"{"type":5,"token_uri":"http://127.0.0.1:9"}"#, "(none)"),
            (r#"{"client_id":"c"}"#, "(none)"),
            (r#"[{"type":"service_account"}]"#, "(none)"),
        ] {
            std::fs::write(&path, file).unwrap();
            let message = build_credentials(Some(&path)).err().map(|e| e.message);
            let want = format!("Unsupported Google credentials type {shown} in {}", path.display());
            assert_eq!(message.as_deref(), Some(want.as_str()), "{file}");
        }
    }
}
