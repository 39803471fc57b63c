//! AWS credentials for Bedrock, found the way pi 1.6.0's AWS SDK client
//! finds them (`@aws-sdk/credential-provider-node`'s default chain), over
//! the request's [`ProviderEnv`] (an `auth.json` entry's `env`, then the
//! process environment):
//!
//! 1. a profile stored with pi's credential (`env.AWS_PROFILE` of the
//!    `auth.json` entry) wins over access keys in the environment;
//! 2. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//! 3. the shared files' profile `AWS_PROFILE` (else `default`):
//!    `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`) over
//!    `~/.aws/config` (`AWS_CONFIG_FILE`, sections `[profile name]`), with
//!    static keys or a `credential_process`;
//!    (profiles with SSO, `role_arn` or a web identity token file:
//!    [`super::aws_sdk_credentials`]);
//! 4. web identity: `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`
//!    (STS `AssumeRoleWithWebIdentity`, [`super::aws_sdk_credentials`]);
//! 5. container credentials: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`
//!    (on `http://169.254.170.2`) or `AWS_CONTAINER_CREDENTIALS_FULL_URI`,
//!    with `AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]`;
//! 6. the EC2 instance metadata service (unless
//!    `AWS_EC2_METADATA_DISABLED=true`).

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::super::env::ProviderEnv;
use super::super::http::HttpClient;
use super::super::lenient;
use super::super::{ProviderError, ProviderErrorKind};
use super::aws_sdk_credentials::is_sdk_profile;

/// Access keys to sign with.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

const CONTAINER_HOST: &str = "http://169.254.170.2";

fn auth_error(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, message)
}

/// Keys from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`.
pub fn env_keys(env: &ProviderEnv) -> Option<AwsCredentials> {
    Some(AwsCredentials {
        access_key_id: env.get("AWS_ACCESS_KEY_ID")?,
        secret_access_key: env.get("AWS_SECRET_ACCESS_KEY")?,
        session_token: env.get("AWS_SESSION_TOKEN"),
    })
}

/// The sections of an INI file as the AWS SDKs read it: `[name]` headers,
/// `key = value` lines, `#`/`;` comments; names and keys trimmed.
pub fn parse_ini(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut sections: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            let name = name.trim().to_string();
            sections.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let (Some(section), Some((key, value))) = (current.as_ref(), line.split_once('=')) else { continue };
        // A continuation line (leading whitespace) of a sub-section: skipped.
        sections.entry(section.clone()).or_default().insert(key.trim().to_string(), value.trim().to_string());
    }
    sections
}

/// A shared file: `var` (with `~/`), else `~/.aws/<default>`.
pub fn shared_file(env: &ProviderEnv, var: &str, default: &str) -> PathBuf {
    match env.get(var) {
        Some(path) if path.starts_with("~/") => super::super::shared::home_dir().join(&path[2..]),
        Some(path) => PathBuf::from(path),
        None => super::super::shared::home_dir().join(".aws").join(default),
    }
}

fn read_ini(path: &PathBuf) -> HashMap<String, HashMap<String, String>> {
    std::fs::read_to_string(path).map(|t| parse_ini(&t)).unwrap_or_default()
}

/// A profile's settings: the config file's `[profile name]` (or `[default]`),
/// overridden by the credentials file's `[name]`.
pub fn profile(env: &ProviderEnv, name: &str) -> Option<HashMap<String, String>> {
    let config = read_ini(&shared_file(env, "AWS_CONFIG_FILE", "config"));
    let credentials = read_ini(&shared_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials"));
    let mut merged: Option<HashMap<String, String>> = None;
    let config_section = if name == "default" {
        config.get("default").or_else(|| config.get("profile default"))
    } else {
        config.get(&format!("profile {name}"))
    };
    if let Some(section) = config_section {
        merged.get_or_insert_with(HashMap::new).extend(section.clone());
    }
    if let Some(section) = credentials.get(name) {
        merged.get_or_insert_with(HashMap::new).extend(section.clone());
    }
    merged
}

/// The region of a profile (`region` in the shared files), if any.
pub fn profile_region(env: &ProviderEnv, name: &str) -> Option<String> {
    profile(env, name)?.get("region").filter(|r| !r.is_empty()).cloned()
}

/// Access keys as a `credential_process` prints them (`Version` 1,
/// `SessionToken`) or a container endpoint answers (`Token`); a field of
/// another JSON type reads as absent.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct KeysJson {
    #[serde(deserialize_with = "lenient::u64")]
    version: Option<u64>,
    #[serde(deserialize_with = "lenient::string")]
    access_key_id: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    secret_access_key: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    session_token: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    token: Option<String>,
}

impl KeysJson {
    /// The answer read leniently (anything but an object has no keys).
    fn read(json: Value) -> Self {
        lenient::event(json).unwrap_or_default()
    }

    /// The keys, with the session token of a process (`SessionToken`) or of a container (`Token`).
    fn keys(self, from_container: bool) -> Option<AwsCredentials> {
        Some(AwsCredentials {
            access_key_id: self.access_key_id?,
            secret_access_key: self.secret_access_key?,
            session_token: if from_container { self.token } else { self.session_token },
        })
    }
}

async fn from_process(command: &str, profile_name: &str) -> Result<AwsCredentials, ProviderError> {
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| auth_error(format!("credential_process of profile {profile_name}: {e}")))?;
    if !output.status.success() {
        return Err(auth_error(format!(
            "credential_process of profile {profile_name} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let json: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| auth_error(format!("credential_process of profile {profile_name}: invalid JSON: {e}")))?;
    let json = KeysJson::read(json);
    if json.version != Some(1) {
        return Err(auth_error(format!("credential_process of profile {profile_name}: unsupported Version")));
    }
    json.keys(false).ok_or_else(|| auth_error(format!("credential_process of profile {profile_name}: no access keys")))
}

/// The credentials of a named profile (`region`: where STS or SSO is asked).
pub async fn from_profile(
    env: &ProviderEnv,
    name: &str,
    region: &str,
    http: &HttpClient,
) -> Result<AwsCredentials, ProviderError> {
    profile_credentials(env, name, region, http).await?.ok_or_else(|| {
        auth_error(format!(
            "Could not resolve credentials using profile: [{name}] in configuration/credentials file(s)."
        ))
    })
}

/// A profile's credentials; None when the files have no such profile or it
/// names no source of credentials (the chain then goes on, as the SDK's does).
async fn profile_credentials(
    env: &ProviderEnv,
    name: &str,
    region: &str,
    http: &HttpClient,
) -> Result<Option<AwsCredentials>, ProviderError> {
    let Some(settings) = profile(env, name) else { return Ok(None) };
    let get = |key: &str| settings.get(key).filter(|v| !v.is_empty()).cloned();
    if let (Some(id), Some(secret)) = (get("aws_access_key_id"), get("aws_secret_access_key")) {
        return Ok(Some(AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: get("aws_session_token"),
        }));
    }
    if is_sdk_profile(&settings) {
        return super::aws_sdk_credentials::from_profile(env, name, region, http).await.map(Some);
    }
    if let Some(command) = get("credential_process") {
        return from_process(&command, name).await.map(Some);
    }
    Ok(None)
}

async fn from_container(env: &ProviderEnv, http: &HttpClient) -> Result<Option<AwsCredentials>, ProviderError> {
    let url = match (env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
        (Some(relative), _) => format!("{CONTAINER_HOST}{relative}"),
        (None, Some(full)) => full,
        (None, None) => return Ok(None),
    };
    let token = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(file) => Some(
            std::fs::read_to_string(&file)
                .map_err(|e| auth_error(format!("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {file}: {e}")))?
                .trim()
                .to_string(),
        ),
        None => env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    };
    let mut request = http.request(reqwest::Method::GET, &url)?.timeout(std::time::Duration::from_secs(5));
    if let Some(token) = token {
        request = request.header(reqwest::header::AUTHORIZATION, token);
    }
    let failed = |e: String| auth_error(format!("Container credentials from {url}: {e}"));
    let response = request.send().await.map_err(|e| failed(super::super::http::error_chain(&e)))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| failed(super::super::http::error_chain(&e)))?;
    if !status.is_success() {
        return Err(failed(format!("HTTP {}: {text}", status.as_u16())));
    }
    let json: Value = serde_json::from_str(&text).map_err(|e| failed(format!("invalid JSON: {e}")))?;
    KeysJson::read(json).keys(true).map(Some).ok_or_else(|| failed("no access keys in the answer".into()))
}

/// Resolve the credentials to sign with (`region`: where STS, SSO or the
/// instance metadata are asked). `stored_profile`: the profile of pi's
/// stored credential, which wins over access keys in the environment.
pub async fn resolve(
    env: &ProviderEnv,
    stored_profile: Option<&str>,
    region: &str,
    http: &HttpClient,
) -> Result<AwsCredentials, ProviderError> {
    // A profile: the stored one, else `AWS_PROFILE` (or `default`) unless
    // access keys are in the environment. One the files lack, or without a
    // source of credentials, passes on to the rest of the chain.
    let profile_name = match (stored_profile, env_keys(env)) {
        (Some(name), _) => name.to_string(),
        (None, Some(keys)) => return Ok(keys),
        (None, None) => env.get("AWS_PROFILE").unwrap_or_else(|| "default".to_string()),
    };
    if let Some(keys) = profile_credentials(env, &profile_name, region, http).await? {
        return Ok(keys);
    }
    if let Some(keys) = super::aws_sdk_credentials::from_web_identity(env, region, http).await {
        return keys;
    }
    if let Some(keys) = from_container(env, http).await? {
        return Ok(keys);
    }
    match super::aws_sdk_credentials::from_instance_metadata(env, region, http).await {
        Some(Ok(keys)) => Ok(keys),
        Some(Err(e)) => Err(auth_error(format!("Could not load credentials from any providers ({})", e.message))),
        None => Err(auth_error("Could not load credentials from any providers")),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::path::Path;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProviderEnv {
        ProviderEnv::new(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    /// The variables `more` with the shared config file at `config` and no
    /// credentials file (a `none` beside it, never written): the set-up of
    /// the profile tests of both credential modules.
    pub(in crate::provider::bedrock) fn config_only(config: &Path, more: &[(&str, &str)]) -> ProviderEnv {
        let none = config.with_file_name("none");
        let files =
            [("AWS_CONFIG_FILE", config.to_str().unwrap()), ("AWS_SHARED_CREDENTIALS_FILE", none.to_str().unwrap())];
        env(&files.into_iter().chain(more.iter().copied()).collect::<Vec<_>>())
    }

    #[test]
    fn shared_files_merge_like_the_sdk() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let credentials = dir.path().join("credentials");
        std::fs::write(
            &config,
            "[default]\nregion = eu-west-1\n\n[profile work]\nregion=us-west-2\naws_access_key_id = CFG\n# note\n[profile sso]\nsso_session = corp\n",
        )
        .unwrap();
        std::fs::write(&credentials, "[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = s3cret\n").unwrap();
        let e = env(&[
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
            ("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap()),
        ]);
        assert_eq!(profile_region(&e, "default").as_deref(), Some("eu-west-1"));
        assert_eq!(profile_region(&e, "work").as_deref(), Some("us-west-2"));
        let work = profile(&e, "work").unwrap();
        assert_eq!(work["aws_access_key_id"], "AKIDWORK");
        assert!(profile(&e, "missing").is_none());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let http = HttpClient::new().unwrap();
        let keys = rt.block_on(from_profile(&e, "work", "us-west-2", &http)).unwrap();
        assert_eq!((keys.access_key_id.as_str(), keys.session_token), ("AKIDWORK", None));
        // An SSO profile goes to aws-config's SSO provider, which needs `aws sso login`'s token.
        let err = rt.block_on(from_profile(&e, "sso", "us-west-2", &http)).unwrap_err();
        assert!(err.message.starts_with("AWS profile sso: "), "{}", err.message);
    }

    #[test]
    fn key_answers_are_read_leniently() {
        let keys = |v: Value, from_container: bool| {
            KeysJson::read(v).keys(from_container).map(|k| (k.access_key_id, k.secret_access_key, k.session_token))
        };
        let both = serde_json::json!({"AccessKeyId": "A", "SecretAccessKey": "S", "SessionToken": "P", "Token": "C"});
        assert_eq!(keys(both.clone(), false), Some(("A".into(), "S".into(), Some("P".into()))));
        assert_eq!(keys(both, true), Some(("A".into(), "S".into(), Some("C".into()))));
        let odd = serde_json::json!({"AccessKeyId": "A", "SecretAccessKey": "S", "SessionToken": 1, "Token": null});
        assert_eq!(keys(odd.clone(), false), Some(("A".into(), "S".into(), None)));
        assert_eq!(keys(odd, true), Some(("A".into(), "S".into(), None)));
        assert_eq!(keys(serde_json::json!({"AccessKeyId": 1, "SecretAccessKey": "S"}), false), None);
        assert_eq!(keys(serde_json::json!([{"AccessKeyId": "A", "SecretAccessKey": "S"}]), false), None);
        assert_eq!(KeysJson::read(serde_json::json!({"Version": "1"})).version, None);
        assert_eq!(KeysJson::read(serde_json::json!({"Version": 1})).version, Some(1));
    }

    #[tokio::test]
    async fn credential_process_and_chain_order() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[profile proc]\ncredential_process = printf '{\"Version\":1,\"AccessKeyId\":\"AKIDPROC\",\"SecretAccessKey\":\"x\",\"SessionToken\":\"tok\"}'\n",
        )
        .unwrap();
        let none = dir.path().join("none");
        let none = none.to_str().unwrap();
        let http = HttpClient::new().unwrap();
        let stored = config_only(&config, &[("AWS_ACCESS_KEY_ID", "AKIDENV"), ("AWS_SECRET_ACCESS_KEY", "y")]);
        // A stored profile wins over keys in the environment; otherwise the keys win.
        let keys = resolve(&stored, Some("proc"), "us-east-1", &http).await.unwrap();
        assert_eq!((keys.access_key_id.as_str(), keys.session_token.as_deref()), ("AKIDPROC", Some("tok")));
        assert_eq!(resolve(&stored, None, "us-east-1", &http).await.unwrap().access_key_id, "AKIDENV");
        let nothing = env(&[
            ("AWS_CONFIG_FILE", none),
            ("AWS_SHARED_CREDENTIALS_FILE", none),
            ("HOME", none),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ]);
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() && std::env::var_os("AWS_PROFILE").is_none() {
            let err = resolve(&nothing, None, "us-east-1", &http).await.unwrap_err();
            assert_eq!(err.kind, ProviderErrorKind::Auth);
        }
    }
}
