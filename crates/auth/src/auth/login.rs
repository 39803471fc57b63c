//! Logging in and out, for every front end (`pi login`, the JSON-RPC
//! `login` method, ACP `authenticate`): run a provider's flow, then store
//! the credential in `auth.json` under pi's lock, where pi finds it too.

use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::file::{AuthFile, FileError, to_pi_json};
use super::lock::{FileLock, LockOptions};
use super::oauth::answer::Stored;
use super::oauth::{self, LoginContext, LoginIo, Net, OAuthError};

/// Why a login did not complete.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoginError {
    #[error("Unknown login provider \"{provider}\". Providers: {known}")]
    UnknownProvider { provider: String, known: String },
    #[error("{provider} has no \"{method}\" sign-in; its methods: {known}")]
    UnknownMethod { provider: String, method: String, known: String },
    #[error("Failed to log in to {name}: {message}")]
    Failed { name: String, message: String },
    #[error("Login cancelled")]
    Cancelled,
    #[error("Logged in, but the credential could not be saved: {0}")]
    Store(String),
}

pub use pi_types::login::{LoginRequest, LoginStarted};

/// The flow and method id of a request.
pub fn resolve(request: &LoginRequest) -> Result<(&'static dyn oauth::OAuthFlow, &'static str), LoginError> {
    let flow = oauth::flow(&request.provider).ok_or_else(|| LoginError::UnknownProvider {
        provider: request.provider.clone(),
        known: oauth::flows().iter().map(|f| f.provider()).collect::<Vec<_>>().join(", "),
    })?;
    let methods = flow.methods();
    let method = match &request.method {
        Some(wanted) => methods.iter().find(|m| m.id == wanted).ok_or_else(|| LoginError::UnknownMethod {
            provider: request.provider.clone(),
            method: wanted.clone(),
            known: methods.iter().map(|m| m.id).collect::<Vec<_>>().join(", "),
        })?,
        None if request.no_browser => methods.iter().find(|m| m.id != "browser").unwrap_or(&methods[0]),
        None => &methods[0],
    };
    Ok((flow, method.id))
}

/// Run the login and store its credential in `auth_path`. Returns the credential.
pub async fn login(
    auth_path: &Path,
    request: &LoginRequest,
    net: &Net,
    io: &dyn LoginIo,
    cancel: CancellationToken,
) -> Result<Value, LoginError> {
    let (flow, method) = resolve(request)?;
    let agent_dir = auth_path.parent().unwrap_or(Path::new("."));
    let device_id = if flow.provider() == "openai" { device_id(agent_dir).await.ok() } else { None };
    let ctx = LoginContext { net: net.cancelled_by(cancel.clone()), method, device_id, cancel: cancel.clone() };
    let credential = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(LoginError::Cancelled),
        r = flow.login(&ctx, io) => r,
    };
    let credential = credential.map_err(|e: OAuthError| {
        if e.message == oauth::CANCELLED || cancel.is_cancelled() {
            LoginError::Cancelled
        } else {
            LoginError::Failed { name: flow.name().to_string(), message: e.message }
        }
    })?;
    let file = AuthFile::new(auth_path.to_path_buf());
    let stored = credential.clone();
    file.modify(flow.provider(), |_| async move { Ok::<_, ()>(Some(stored)) })
        .await
        .map_err(|e| LoginError::Store(e.to_string()))?
        .map_err(|()| LoginError::Store("unexpected".into()))?;
    Ok(credential)
}

/// Remove a provider's stored credential. Returns the removed credential's type.
pub async fn logout(auth_path: &Path, provider: &str) -> Result<Option<String>, FileError> {
    let file = AuthFile::new(auth_path.to_path_buf());
    let kind = file.get(provider).await?.map(|c| Stored::of(&c).kind.text().unwrap_or("api_key").to_string());
    if kind.is_some() {
        file.delete(provider).await?;
    }
    Ok(kind)
}

/// Whether a sign-in page may be opened in a browser: not when `BROWSER`
/// is set empty or to `none`.
pub fn browser_wanted() -> bool {
    !matches!(std::env::var("BROWSER").as_deref(), Ok("" | "none"))
}

/// Open a sign-in page in the browser, best effort: `$BROWSER`, else
/// `xdg-open` (`open` on macOS).
pub fn open_in_browser(url: &str) {
    if !browser_wanted() {
        return;
    }
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| if cfg!(target_os = "macos") { "open".into() } else { "xdg-open".into() });
    let spawned = std::process::Command::new(&program)
        .arg(url)
        // As pi: a URL needs no working directory, and on WSL a long one makes the launcher fail.
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped in the background: the browser may outlive the login.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => tracing::debug!("cannot open a browser with {program}: {e}"),
    }
}

/// This installation's id (`deviceId` in the global settings.json), made
/// and saved on first use, as pi does.
pub async fn device_id(agent_dir: &Path) -> Result<String, FileError> {
    let path = agent_dir.join("settings.json");
    let read = |path: &Path| -> Result<serde_json::Map<String, Value>, FileError> {
        match std::fs::read_to_string(path) {
            Ok(text) if !text.trim().is_empty() => match serde_json::from_str(&text) {
                Ok(Value::Object(map)) => Ok(map),
                _ => Err(FileError::Invalid { path: path.to_path_buf(), message: "expected a JSON object".into() }),
            },
            Ok(_) => Ok(Default::default()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
            Err(e) => Err(FileError::Read { path: path.to_path_buf(), message: e.to_string() }),
        }
    };
    if let Some(id) = read(&path)?.get("deviceId").and_then(Value::as_str) {
        return Ok(id.to_string());
    }
    let write_err = |e: std::io::Error| FileError::Write { path: path.clone(), message: e.to_string() };
    std::fs::create_dir_all(agent_dir).map_err(write_err)?;
    if !path.exists() {
        std::fs::write(&path, "{}").map_err(write_err)?;
    }
    let _lock = FileLock::acquire(&path, LockOptions::default()).await?;
    let mut settings = read(&path)?;
    if let Some(id) = settings.get("deviceId").and_then(Value::as_str) {
        return Ok(id.to_string());
    }
    let id = uuid::Uuid::new_v4().to_string();
    settings.insert("deviceId".into(), Value::String(id.clone()));
    std::fs::write(&path, to_pi_json(&settings)).map_err(write_err)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_resolve_like_pi_s_login_command() {
        let req = |provider: &str, method: Option<&str>, no_browser| LoginRequest {
            provider: provider.into(),
            method: method.map(str::to_string),
            no_browser,
            answer: None,
        };
        assert_eq!(resolve(&req("anthropic", None, false)).unwrap().1, "browser");
        assert_eq!(resolve(&req("anthropic", None, true)).unwrap().1, "copy_code");
        assert_eq!(resolve(&req("openai-codex", None, true)).unwrap().1, "device_code");
        assert_eq!(resolve(&req("github-copilot", None, false)).unwrap().1, "device_code");
        assert_eq!(resolve(&req("openrouter", None, true)).unwrap().1, "browser", "its only method");
        let e = resolve(&req("nope", None, false)).err().unwrap().to_string();
        assert!(e.contains("Unknown login provider \"nope\"") && e.contains("anthropic"), "{e}");
        let e = resolve(&req("xai", Some("browser"), false)).err().unwrap().to_string();
        assert!(e.contains("device_code"), "{e}");
    }

    #[tokio::test]
    async fn the_device_id_is_made_once_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("settings.json"), r#"{"defaultProvider": "x"}"#).unwrap();
        let id = device_id(tmp.path()).await.unwrap();
        assert!(uuid::Uuid::parse_str(&id).is_ok());
        assert_eq!(device_id(tmp.path()).await.unwrap(), id);
        let text = std::fs::read_to_string(tmp.path().join("settings.json")).unwrap();
        assert!(text.contains("\"defaultProvider\": \"x\"") && text.contains(&id), "{text}");
    }
}
