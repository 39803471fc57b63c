//! The AWS credential sources that need AWS's own services, through
//! `aws-config`'s providers (the Rust SDK's, as pi uses the JS SDK's):
//!
//! * profiles with SSO (`sso_session` / `sso_start_url`: the cached token
//!   of `aws sso login`, then SSO's `GetRoleCredentials`), `role_arn`
//!   (STS `AssumeRole` from a `source_profile` or a `credential_source`) or
//!   `web_identity_token_file`;
//! * web identity tokens from the environment (`AWS_WEB_IDENTITY_TOKEN_FILE`
//!   + `AWS_ROLE_ARN`, STS `AssumeRoleWithWebIdentity`);
//! * the EC2 instance metadata service (IMDSv2), last in the chain.
//!
//! Their requests go through pi-rpc's HTTP client ([`super::sdk_http`]).
//! Endpoints follow the SDK's variables (`AWS_ENDPOINT_URL_STS`,
//! `AWS_ENDPOINT_URL_SSO`, `AWS_EC2_METADATA_SERVICE_ENDPOINT`), which is
//! how tests point them at 127.0.0.1. Temporary credentials are kept until
//! five minutes before they expire, as the SDK's cache does.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use aws_config::Region;
use aws_config::imds::credentials::ImdsCredentialsProvider;
use aws_config::profile::credentials::ProfileFileCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::web_identity_token::{StaticConfiguration, WebIdentityTokenCredentialsProvider};
use aws_credential_types::provider::{ProvideCredentials, error::CredentialsError};
use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
use aws_smithy_types::error::display::DisplayErrorContext;

use super::super::env::ProviderEnv;
use super::super::http::HttpClient;
use super::super::{ProviderError, ProviderErrorKind};
use super::aws_credentials::{AwsCredentials, shared_file};

/// Settings of a profile only `aws-config` resolves.
const SDK_PROFILE_KEYS: [&str; 5] =
    ["sso_session", "sso_start_url", "role_arn", "web_identity_token_file", "credential_source"];

/// Temporary credentials are renewed this long before they expire.
const RENEW_BEFORE: Duration = Duration::from_secs(300);

/// Whether a profile's credentials come from an AWS service.
pub fn is_sdk_profile(settings: &HashMap<String, String>) -> bool {
    SDK_PROFILE_KEYS.iter().any(|k| settings.get(*k).is_some_and(|v| !v.is_empty()))
}

type Cache = Mutex<HashMap<String, (AwsCredentials, Option<SystemTime>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

fn config(http: &HttpClient, region: &str) -> ProviderConfig {
    ProviderConfig::without_region()
        .with_http_client(super::sdk_http::shared(http))
        .with_region(Some(Region::new(region.to_string())))
}

/// Ask `provider` (or the cache under `key`), naming `what` in errors.
async fn provide(key: String, what: &str, provider: impl ProvideCredentials) -> Result<AwsCredentials, ProviderError> {
    let now = SystemTime::now();
    if let Ok(cached) = cache().lock()
        && let Some((credentials, expiry)) = cached.get(&key)
        && expiry.is_none_or(|at| at > now + RENEW_BEFORE)
    {
        return Ok(credentials.clone());
    }
    let got = provider.provide_credentials().await.map_err(|e| error(what, &e))?;
    let credentials = AwsCredentials {
        access_key_id: got.access_key_id().to_string(),
        secret_access_key: got.secret_access_key().to_string(),
        session_token: got.session_token().map(str::to_string),
    };
    if let Ok(mut cached) = cache().lock() {
        cached.insert(key, (credentials.clone(), got.expiry()));
    }
    Ok(credentials)
}

fn error(what: &str, e: &CredentialsError) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, format!("{what}: {}", DisplayErrorContext(e)))
}

/// The credentials of a profile with SSO, `role_arn` or a web identity
/// token file, from the same shared files as the rest of the chain.
pub async fn from_profile(
    env: &ProviderEnv,
    name: &str,
    region: &str,
    http: &HttpClient,
) -> Result<AwsCredentials, ProviderError> {
    let config_file = shared_file(env, "AWS_CONFIG_FILE", "config");
    let credentials_file = shared_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    // The files' text (a missing file is an empty one, as for the rest of the chain).
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap_or_default();
    let files = EnvConfigFiles::builder()
        .with_contents(EnvConfigFileKind::Config, read(&config_file))
        .with_contents(EnvConfigFileKind::Credentials, read(&credentials_file))
        .build();
    let provider = ProfileFileCredentialsProvider::builder()
        .configure(&config(http, region))
        .profile_name(name)
        .profile_files(files)
        .build();
    let key = format!("profile\0{name}\0{}\0{}\0{region}", config_file.display(), credentials_file.display());
    provide(key, &format!("AWS profile {name}"), provider).await
}

/// Web identity credentials when `AWS_WEB_IDENTITY_TOKEN_FILE` and
/// `AWS_ROLE_ARN` are set (`AWS_ROLE_SESSION_NAME` optional).
pub async fn from_web_identity(
    env: &ProviderEnv,
    region: &str,
    http: &HttpClient,
) -> Option<Result<AwsCredentials, ProviderError>> {
    let token_file = env.get("AWS_WEB_IDENTITY_TOKEN_FILE")?;
    let Some(role_arn) = env.get("AWS_ROLE_ARN") else {
        return Some(Err(ProviderError::new(
            ProviderErrorKind::Auth,
            "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not: set the role to assume.",
        )));
    };
    let session_name = env.get("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| {
        let millis = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis();
        format!("pi-rpc-session-{millis}")
    });
    let key = format!("web-identity\0{token_file}\0{role_arn}\0{region}");
    let provider = WebIdentityTokenCredentialsProvider::builder()
        .configure(&config(http, region))
        .static_configuration(StaticConfiguration {
            web_identity_token_file: token_file.into(),
            role_arn,
            session_name,
        })
        .build();
    Some(provide(key, "AWS web identity (AWS_WEB_IDENTITY_TOKEN_FILE)", provider).await)
}

/// The EC2 instance metadata service's role credentials (IMDSv2), unless
/// `AWS_EC2_METADATA_DISABLED=true`: one attempt, one-second timeouts, as
/// the JS SDK's default chain asks it.
pub async fn from_instance_metadata(
    env: &ProviderEnv,
    region: &str,
    http: &HttpClient,
) -> Option<Result<AwsCredentials, ProviderError>> {
    if env.get("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return None;
    }
    let conf = config(http, region);
    let mut client = aws_config::imds::Client::builder()
        .configure(&conf)
        .max_attempts(1)
        .connect_timeout(Duration::from_secs(1))
        .read_timeout(Duration::from_secs(1));
    let endpoint = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if let Some(endpoint) = &endpoint {
        client = match client.endpoint(endpoint) {
            Ok(client) => client,
            Err(e) => {
                return Some(Err(ProviderError::new(
                    ProviderErrorKind::Auth,
                    format!("AWS_EC2_METADATA_SERVICE_ENDPOINT {endpoint}: {e}"),
                )));
            }
        };
    }
    let provider = ImdsCredentialsProvider::builder().configure(&conf).imds_client(client.build()).build();
    let key = format!("imds\0{}", endpoint.unwrap_or_default());
    Some(provide(key, "EC2 instance metadata", provider).await)
}

#[cfg(test)]
mod tests {
    use pi_fake_server::FakeServer;
    use pi_fake_server::aws_services::{ASSUMED_ROLE, INSTANCE_ROLE, Issued, WEB_IDENTITY, WEB_IDENTITY_TOKEN};

    use super::super::aws_credentials::tests::config_only;
    use super::super::aws_credentials::{AwsCredentials, resolve};
    use super::*;
    use crate::provider::origin::OriginOverrides;

    /// A client that sends AWS's STS hosts to the fake server.
    fn http_to(server: &FakeServer) -> HttpClient {
        let text =
            ["https://sts.amazonaws.com", "https://sts.eu-west-3.amazonaws.com", "https://sts.us-east-1.amazonaws.com"]
                .iter()
                .map(|o| format!("{o}={}", server.url()))
                .collect::<Vec<_>>()
                .join(",");
        HttpClient::new().unwrap().with_origin_overrides(OriginOverrides::parse(&text).unwrap())
    }

    fn assert_issued(keys: &AwsCredentials, issued: Issued) {
        assert_eq!(keys.access_key_id, issued.access_key_id);
        assert_eq!(keys.secret_access_key, issued.secret);
        assert_eq!(keys.session_token.as_deref(), Some(issued.session_token));
    }

    fn body(r: &pi_fake_server::RecordedRequest) -> String {
        String::from_utf8_lossy(&r.raw_body).into_owned()
    }

    #[tokio::test]
    async fn role_arn_profile_assumes_the_role_signed_with_the_source_profile() {
        let server = FakeServer::start().await.unwrap();
        server.require_aws_auth("AKIDSOURCE", "source-secret", None);
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[profile source]\naws_access_key_id = AKIDSOURCE\naws_secret_access_key = source-secret\n\n[profile assumed]\nrole_arn = arn:aws:iam::123456789012:role/fake\nsource_profile = source\nrole_session_name = pi-test\n",
        )
        .unwrap();
        let e = config_only(&config, &[("AWS_PROFILE", "assumed")]);
        let http = http_to(&server);
        let keys = resolve(&e, None, "eu-west-3", &http).await.unwrap();
        assert_issued(&keys, ASSUMED_ROLE);
        let requests = server.requests();
        let sts: Vec<_> = requests.iter().filter(|r| body(r).contains("Action=AssumeRole")).collect();
        assert_eq!(sts.len(), 1, "{requests:?}");
        let auth = sts[0].header("authorization").unwrap();
        assert!(auth.contains("Credential=AKIDSOURCE/") && auth.contains("/sts/aws4_request"), "{auth}");
        assert!(body(sts[0]).contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Ffake"), "{}", body(sts[0]));
        assert!(body(sts[0]).contains("RoleSessionName=pi-test"), "{}", body(sts[0]));
        // Kept until it nearly expires: a second call asks nothing.
        assert_issued(&resolve(&e, None, "eu-west-3", &http).await.unwrap(), ASSUMED_ROLE);
        assert_eq!(server.requests().len(), requests.len());

        // Signed with other keys, STS refuses, and the error names the profile.
        let config2 = dir.path().join("config2");
        let text = std::fs::read_to_string(&config).unwrap().replace("source-secret", "wrong");
        std::fs::write(&config2, text).unwrap();
        let e = config_only(&config2, &[]);
        let err = resolve(&e, Some("assumed"), "eu-west-3", &http).await.unwrap_err();
        assert!(
            err.message.starts_with("AWS profile assumed: ") && err.message.contains("SignatureDoesNotMatch"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn web_identity_token_is_exchanged_unsigned() {
        let server = FakeServer::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, WEB_IDENTITY_TOKEN).unwrap();
        let none = dir.path().join("none");
        let e = config_only(
            &none,
            &[
                ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
                ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/web"),
                ("AWS_ROLE_SESSION_NAME", "web-session"),
            ],
        );
        let keys = resolve(&e, None, "us-east-1", &http_to(&server)).await.unwrap();
        assert_issued(&keys, WEB_IDENTITY);
        let requests = server.requests();
        let sts = requests.iter().find(|r| body(r).contains("Action=AssumeRoleWithWebIdentity")).unwrap();
        assert!(sts.header("authorization").is_none());
        assert!(body(sts).contains(&format!("WebIdentityToken={WEB_IDENTITY_TOKEN}")), "{}", body(sts));
        assert!(body(sts).contains("RoleSessionName=web-session"), "{}", body(sts));

        // A token STS refuses: one clear error.
        let bad = dir.path().join("bad");
        std::fs::write(&bad, "not-the-token").unwrap();
        let e = config_only(
            &none,
            &[
                ("AWS_WEB_IDENTITY_TOKEN_FILE", bad.to_str().unwrap()),
                ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/web"),
            ],
        );
        let err = resolve(&e, None, "us-east-1", &http_to(&server)).await.unwrap_err();
        assert!(err.message.starts_with("AWS web identity"), "{}", err.message);
        assert!(err.message.contains("InvalidIdentityToken"), "{}", err.message);
    }

    #[tokio::test]
    async fn instance_metadata_is_asked_last_with_a_session_token() {
        let server = FakeServer::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("none");
        let e = config_only(&none, &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &server.url())]);
        if std::env::var_os("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some() {
            return;
        }
        let keys = resolve(&e, None, "us-east-1", &HttpClient::new().unwrap()).await.unwrap();
        assert_issued(&keys, INSTANCE_ROLE);
        let requests = server.requests();
        assert_eq!(requests[0].method, "PUT");
        assert_eq!(requests[0].path, "/latest/api/token");
        let creds = requests.iter().find(|r| r.path.ends_with("/fake-instance-role")).unwrap();
        assert_eq!(creds.header("x-aws-ec2-metadata-token"), Some("fake-imds-session-token"));
    }
}
