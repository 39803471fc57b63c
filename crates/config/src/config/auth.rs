//! Credentials: `auth.json`, API-key environment variables, and pi's config
//! value syntax (`$ENV`, `${ENV}`, `!command`, literals) for keys and headers.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::ConfigError;

/// `ANTHROPIC_AUTH_TOKEN`: a bearer token for Anthropic, sent as `Authorization`
/// instead of an API key (it wins over the key variables, as in pi).
pub const ANTHROPIC_AUTH_TOKEN_ENV: &str = "ANTHROPIC_AUTH_TOKEN";

/// Environment variables that carry a provider's credential, in lookup order
/// (pi-ai 1.6.0's `env-api-keys.js`, as the built-in provider table has them).
pub fn provider_env_vars(provider: &str) -> &'static [&'static str] {
    builtin_key(provider).map_or(&[], |key| key.env_vars)
}

/// A built-in provider's API-key auth (none for a provider pi-ai signs in to
/// by OAuth alone, such as OpenAI Codex, or one only `models.json` or an
/// extension defines).
fn builtin_key(provider: &str) -> Option<super::builtin_providers::ApiKeyAuth> {
    super::builtin_providers::builtin_provider(provider)?.api_key
}

/// Whether `provider` is a built-in provider with an API-key login of its
/// own (`login(provider, "api_key")` is refused for the others unless
/// `models.json` or an extension's registration gives them a key).
pub fn builtin_api_key_login(provider: &str) -> bool {
    builtin_key(provider).is_some()
}

/// The question an API-key login asks (pi's `secret` prompt): "Enter" and
/// the provider's key name, "Enter API key" for a provider of its own.
pub fn api_key_login_prompt(provider: &str) -> String {
    // pi-ai gives each built-in provider's key its own name; a provider of one's own is asked for an "API key".
    format!("Enter {}", builtin_key(provider).map_or("API key", |key| key.label))
}

/// One stored credential from `auth.json`.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredCredential {
    ApiKey(String),
    /// An API-key login that stored no key, only settings in its `env`
    /// (pi's Amazon Bedrock profile or credential chain, Google Vertex AI's
    /// project and location): the provider's own credentials count.
    Settings,
    /// An OAuth login: the access token as of loading; requests get the
    /// current one through [`crate::auth::authorize`].
    OAuth {
        access: String,
        /// The login's `availableModelIds` (GitHub Copilot's: the models its
        /// account may use), when it is a list of strings.
        available_model_ids: Option<Vec<String>>,
    },
}

/// A JSON list whose items are all strings.
fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    value?.as_array()?.iter().map(|v| v.as_str().map(str::to_string)).collect()
}

/// `auth.json`: credentials keyed by provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthStore {
    credentials: HashMap<String, StoredCredential>,
    /// Each entry's stored `env` (settings a login keeps beside its key).
    envs: HashMap<String, Map<String, Value>>,
    /// The file read (none for an empty default store).
    path: Option<std::path::PathBuf>,
    /// The version read (inode, size, mtime), to notice changes.
    revision: Option<(u64, u64, i128)>,
}

/// What identifies a version of a file: inode, size, mtime (ns).
pub(super) fn revision_of(path: &Path) -> Option<(u64, u64, i128)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.ino(), m.size(), i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())))
}

impl AuthStore {
    /// Read `<agent_dir>/auth.json` (missing file: empty store).
    pub fn load(agent_dir: &Path) -> Result<AuthStore, ConfigError> {
        AuthStore::load_file(&agent_dir.join("auth.json"))
    }

    /// Read an `auth.json` in pi's format at `path` (missing file: empty store).
    pub fn load_file(path: &Path) -> Result<AuthStore, ConfigError> {
        let path = path.to_path_buf();
        let revision = revision_of(&path);
        let empty = AuthStore { path: Some(path.clone()), revision, ..AuthStore::default() };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(empty),
            Err(e) => return Err(ConfigError::Io { path, source: e }),
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if text.trim().is_empty() {
            return Ok(empty);
        }
        let root: Value = serde_json::from_str(text)
            .map_err(|e| ConfigError::Parse { path: path.clone(), message: e.to_string() })?;
        let Value::Object(map) = root else {
            return Err(ConfigError::Invalid { path, message: "expected a JSON object keyed by provider".into() });
        };
        Ok(AuthStore { path: Some(path), revision, ..AuthStore::from_entries(map) })
    }

    /// A store of credentials in `auth.json`'s shape that no file holds
    /// (pi's `CredentialStore` of an extension's `ModelRuntime`, read by it).
    pub fn from_entries(map: Map<String, Value>) -> AuthStore {
        let mut credentials = HashMap::new();
        let mut envs = HashMap::new();
        for (provider, entry) in map {
            if let Some(Value::Object(env)) = entry.get("env") {
                envs.insert(provider.clone(), env.clone());
            }
            let kind = entry.get("type").and_then(Value::as_str).unwrap_or("api_key");
            let cred = match kind {
                "oauth" => entry.get("access").and_then(Value::as_str).map(|a| StoredCredential::OAuth {
                    access: a.to_string(),
                    available_model_ids: string_list(entry.get("availableModelIds")),
                }),
                _ => match entry.get("key") {
                    Some(Value::String(k)) => Some(StoredCredential::ApiKey(k.clone())),
                    None | Some(Value::Null) => Some(StoredCredential::Settings),
                    Some(_) => None,
                },
            };
            if let Some(cred) = cred {
                credentials.insert(provider, cred);
            }
        }
        AuthStore { credentials, envs, path: None, revision: None }
    }

    /// True when the file changed since it was read (written by a login or
    /// logout here, by pi, or by a refresh).
    pub fn changed(&self) -> bool {
        self.path.as_deref().is_some_and(|p| revision_of(p) != self.revision)
    }

    /// The stored key (or OAuth access token) for a provider, resolved.
    pub fn key_for(&self, provider: &str) -> Option<String> {
        match self.credentials.get(provider)? {
            StoredCredential::ApiKey(k) => resolve_config_value(k),
            StoredCredential::OAuth { access, .. } => Some(access.clone()),
            StoredCredential::Settings => None,
        }
    }

    /// A variable of the provider's stored `env` (pi keeps a login's
    /// settings there: llama.cpp's `LLAMA_BASE_URL`, an account id), when it
    /// is a string that is not blank.
    pub fn stored_env(&self, provider: &str, name: &str) -> Option<&str> {
        self.envs.get(provider)?.get(name)?.as_str().filter(|v| !v.trim().is_empty())
    }

    /// The provider's stored `env` (its string values) as a request reads it.
    pub fn provider_env(&self, provider: &str) -> crate::provider::credential::ProviderEnv {
        let stored = self.envs.get(provider).into_iter().flatten();
        let strings = stored.filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())));
        crate::provider::credential::ProviderEnv::new(strings.collect())
    }

    pub fn has(&self, provider: &str) -> bool {
        self.credentials.contains_key(provider)
    }

    /// The models a provider's OAuth login lists as usable (`availableModelIds`).
    pub fn login_model_ids(&self, provider: &str) -> Option<&[String]> {
        match self.credentials.get(provider)? {
            StoredCredential::OAuth { available_model_ids, .. } => available_model_ids.as_deref(),
            StoredCredential::ApiKey(_) | StoredCredential::Settings => None,
        }
    }

    /// Whether the provider's credential is an OAuth login (in a file or not).
    pub fn has_oauth(&self, provider: &str) -> bool {
        matches!(self.credentials.get(provider), Some(StoredCredential::OAuth { .. }))
    }

    /// The `auth.json` holding an OAuth login for this provider.
    pub fn oauth_file(&self, provider: &str) -> Option<&std::path::Path> {
        match self.credentials.get(provider)? {
            StoredCredential::OAuth { .. } => self.path.as_deref(),
            StoredCredential::ApiKey(_) | StoredCredential::Settings => None,
        }
    }
}

fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The first set environment variable for a provider's API key. For
/// Anthropic a set `ANTHROPIC_AUTH_TOKEN` wins and is no API key (see
/// [`env_bearer_token_for`]).
pub fn env_key_for(provider: &str) -> Option<String> {
    env_key_with(provider, &crate::provider::credential::ProviderEnv::default())
}

/// [`env_key_for`] with `env` (a credential's stored variables over the
/// process environment) for the provider's own credentials.
pub fn env_key_with(provider: &str, env: &crate::provider::credential::ProviderEnv) -> Option<String> {
    if env_bearer_token_for(provider).is_some() {
        return None;
    }
    let key =
        provider_env_vars(provider).iter().filter(|n| **n != ANTHROPIC_AUTH_TOKEN_ENV).find_map(|name| env_value(name));
    // Cloud credentials besides the key variable (AWS chain, Google ADC) and
    // the Cloudflare account ids (pi's extra rules; see provider::ambient).
    crate::provider::ambient::env_credential(provider, key, env)
}

/// A bearer token from the environment that is sent as `Authorization`
/// instead of an API key (`ANTHROPIC_AUTH_TOKEN` for Anthropic).
pub fn env_bearer_token_for(provider: &str) -> Option<String> {
    (provider == "anthropic").then(|| env_value(ANTHROPIC_AUTH_TOKEN_ENV)).flatten()
}

static COMMAND_CACHE: Mutex<Option<HashMap<String, Option<String>>>> = Mutex::new(None);

/// Resolve a config value: `!cmd` runs the command (cached for the process),
/// `$NAME` / `${NAME}` interpolate environment variables (`$$` and `$!` are
/// literal `$` and `!`), anything else is literal. None when a variable is unset
/// or the command fails.
pub fn resolve_config_value(config: &str) -> Option<String> {
    if let Some(command) = config.strip_prefix('!') {
        return run_command_cached(command);
    }
    let mut out = String::new();
    for piece in config_pieces(config) {
        match piece {
            ConfigPiece::Text(text) => out.push_str(text),
            ConfigPiece::Env(name) => out.push_str(&std::env::var(name).ok().filter(|v| !v.is_empty())?),
        }
    }
    Some(out)
}

/// The environment variables a config value reads (`$NAME`, `${NAME}`; none
/// for a `!command`), in order, each once: pi's `getConfigValueEnvVarNames`.
pub fn config_env_names(config: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if config.starts_with('!') {
        return names;
    }
    for piece in config_pieces(config) {
        if let ConfigPiece::Env(name) = piece
            && !names.iter().any(|known| known == name)
        {
            names.push(name.to_string());
        }
    }
    names
}

/// A piece of a config value: text kept as it is, or an environment variable it reads.
enum ConfigPiece<'a> {
    Text(&'a str),
    Env(&'a str),
}

/// A config value cut into pieces, the one reading of its syntax both
/// resolving and listing use: `$NAME` and `${NAME}` read a variable, `$$` and
/// `$!` are a literal `$` and `!`, and a `$` that starts no variable name (or a
/// `${...}` that holds none) is kept as text.
fn config_pieces(config: &str) -> impl Iterator<Item = ConfigPiece<'_>> {
    let mut i = 0;
    std::iter::from_fn(move || {
        let rest = config.get(i..).filter(|r| !r.is_empty())?;
        let dollar = match rest.find('$') {
            Some(0) => i,
            Some(rel) => {
                i += rel;
                return Some(ConfigPiece::Text(&rest[..rel]));
            }
            None => {
                i = config.len();
                return Some(ConfigPiece::Text(rest));
            }
        };
        let after = &config[dollar + 1..];
        let piece = if after.starts_with(['$', '!']) {
            i = dollar + 2;
            ConfigPiece::Text(&after[..1])
        } else if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => {
                    i = dollar + 3 + end;
                    let name = &braced[..end];
                    if is_env_name(name) { ConfigPiece::Env(name) } else { ConfigPiece::Text(&config[dollar..i]) }
                }
                None => {
                    i = dollar + 1;
                    ConfigPiece::Text("$")
                }
            }
        } else {
            let len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            if len > 0 && is_env_name(&after[..len]) {
                i = dollar + 1 + len;
                ConfigPiece::Env(&after[..len])
            } else {
                i = dollar + 1;
                ConfigPiece::Text("$")
            }
        };
        Some(piece)
    })
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn run_command_cached(command: &str) -> Option<String> {
    if let Ok(guard) = COMMAND_CACHE.lock()
        && let Some(hit) = guard.as_ref().and_then(|m| m.get(command))
    {
        return hit.clone();
    }
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let value = match output {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
            (!text.is_empty()).then_some(text)
        }
        _ => None,
    };
    if let Ok(mut guard) = COMMAND_CACHE.lock() {
        guard.get_or_insert_with(HashMap::new).insert(command.to_string(), value.clone());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_key_login_asks_for_the_providers_own_key_name() {
        assert_eq!(api_key_login_prompt("groq"), "Enter Groq API key");
        assert_eq!(api_key_login_prompt("huggingface"), "Enter Hugging Face token");
        assert_eq!(api_key_login_prompt("my-models-json-provider"), "Enter API key");
    }

    #[test]
    fn config_values_resolve_like_pi() {
        // SAFETY-free: tests use unique variable names.
        assert_eq!(resolve_config_value("sk-literal").as_deref(), Some("sk-literal"));
        assert_eq!(resolve_config_value("$$HOME and $!x").as_deref(), Some("$HOME and !x"));
        assert_eq!(resolve_config_value("$PI_RPC_TEST_SURELY_UNSET_VAR"), None);
        let path = std::env::var("PATH").unwrap();
        assert_eq!(resolve_config_value("${PATH}"), Some(path.clone()));
        assert_eq!(resolve_config_value("x-$PATH-y"), Some(format!("x-{path}-y")));
        assert_eq!(resolve_config_value("!echo from-command").as_deref(), Some("from-command"));
        assert_eq!(resolve_config_value("!false"), None);
        assert_eq!(resolve_config_value("cost $5").as_deref(), Some("cost $5"));
    }

    #[test]
    fn config_values_name_their_variables_and_keep_what_names_none() {
        assert_eq!(config_env_names("a-$PI_X-${PI_Y}-$PI_X-$$PI_Z-$!PI_W"), ["PI_X", "PI_Y"]);
        assert_eq!(config_env_names("!echo $PI_X"), Vec::<String>::new());
        assert_eq!(config_env_names("${not a name} ${unterminated $ $9 $"), Vec::<String>::new());
        assert_eq!(config_env_names("$_A1b${_c}"), ["_A1b", "_c"]);
        let keep = "${not a name} ${unterminated $ $9 trailing $";
        assert_eq!(resolve_config_value(keep).as_deref(), Some(keep));
        assert_eq!(resolve_config_value("").as_deref(), Some(""));
        assert_eq!(resolve_config_value("${PI_RPC_TEST_SURELY_UNSET_VAR}"), None);
    }

    #[test]
    fn auth_json_keys_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"openai":{"type":"api_key","key":"sk-test"},"x":{"type":"oauth","access":"tok"}}"#,
        )
        .unwrap();
        let store = AuthStore::load(dir.path()).unwrap();
        assert_eq!(store.key_for("openai").as_deref(), Some("sk-test"));
        assert_eq!(store.key_for("x").as_deref(), Some("tok"));
        assert_eq!(store.key_for("none"), None);
        std::fs::write(dir.path().join("auth.json"), "[1]").unwrap();
        assert!(AuthStore::load(dir.path()).unwrap_err().to_string().contains("auth.json"));
    }
}
