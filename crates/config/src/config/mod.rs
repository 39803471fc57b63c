//! Configuration read the way pi reads it: the agent directory
//! (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`) with `settings.json`,
//! `models.json`, `auth.json`, plus project `.pi/settings.json`.

use std::path::{Path, PathBuf};

pub mod auth;
pub mod builtin_providers;
pub mod catalog;
pub mod llama;
pub mod model_resolver;
pub mod models;
pub mod settings;
pub mod stored_catalogs;
pub mod typed_models;

pub use models::ModelRegistry;
pub use settings::Settings;

/// A configuration problem, always naming the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("invalid JSON in {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid configuration in {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// The agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn default_agent_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return expand_home(Path::new(&dir));
    }
    home_dir().join(".pi").join("agent")
}

/// The user's home directory (`$HOME`, else `/`).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

/// Expand a leading `~` or `~/`.
pub fn expand_home(path: &Path) -> PathBuf {
    match path.to_str() {
        Some("~") => home_dir(),
        Some(s) if s.starts_with("~/") => home_dir().join(&s[2..]),
        _ => path.to_path_buf(),
    }
}
