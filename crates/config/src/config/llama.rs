//! pi's llama.cpp provider in the registry. pi 1.6.0 lists the models of a
//! running `llama-server` (see `pi_provider`'s `llama_server`) and keeps
//! them in the agent directory's `models-store.json` under `llama.cpp`:
//! every start reads the kept list (so `--list-models` shows what the last
//! listing found, without asking the server), and RPC mode lists the server
//! again in the background ([`refresh`]), unless offline. The models count
//! as available when a server is configured: the stored login's
//! `env.LLAMA_BASE_URL` (what pi's `/login llama.cpp` writes), else the
//! `LLAMA_BASE_URL` variable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::auth::{AuthStore, revision_of};
use crate::model::Model;
use crate::provider::http::HttpClient;
use crate::provider::llama_server::{LlamaServer, normalize_server_url};

pub use crate::provider::llama_server::PROVIDER;

/// The file pi keeps listed models in.
const STORE_FILE: &str = "models-store.json";

fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The configured server (normalised URL) and the key pi sends it: the
/// stored key, else `LLAMA_API_KEY`, else `local`. `None` when no server is
/// configured: pi then has no llama.cpp credential.
pub fn server(auth: &AuthStore) -> Option<(String, String)> {
    let url = auth
        .stored_env(PROVIDER, "LLAMA_BASE_URL")
        .map(str::to_string)
        .or_else(|| env_value("LLAMA_BASE_URL"))
        .and_then(|u| normalize_server_url(&u))?;
    let key = auth.key_for(PROVIDER).or_else(|| std::env::var("LLAMA_API_KEY").ok()).unwrap_or_else(|| "local".into());
    Some((url, key))
}

/// The llama.cpp models `models-store.json` keeps.
#[derive(Debug, Clone, Default)]
pub struct StoredModels {
    pub chat: Vec<Model>,
    /// Classifier models, as scripts see them (`type: "classifier"`).
    pub classifiers: Vec<Value>,
    revision: Option<(u64, u64, i128)>,
}

fn store_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join(STORE_FILE)
}

fn read_store_file(path: &Path) -> Map<String, Value> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

impl StoredModels {
    /// What the store keeps for llama.cpp (nothing when the file is missing or unreadable).
    pub fn read(agent_dir: &Path) -> StoredModels {
        let path = store_path(agent_dir);
        let revision = revision_of(&path);
        let file = read_store_file(&path);
        let models = file.get(PROVIDER).and_then(|p| p.get("models")).and_then(Value::as_array);
        let mut out = StoredModels { revision, ..StoredModels::default() };
        for model in models.into_iter().flatten() {
            if model.get("provider").and_then(Value::as_str) != Some(PROVIDER) {
                continue;
            }
            let api = model.get("api").and_then(Value::as_str).unwrap_or_default();
            match model.get("type").and_then(Value::as_str).unwrap_or("chat") {
                "chat" if api == "openai-completions" => {
                    if let Ok(m) = serde_json::from_value::<Model>(model.clone()) {
                        out.chat.push(m);
                    }
                }
                "classifier" if api == "llama-cpp-classify" || api == "typesafe-system-one" => {
                    out.classifiers.push(model.clone());
                }
                _ => {}
            }
        }
        out
    }

    /// True when the file changed since it was read.
    pub fn changed(&self, agent_dir: &Path) -> bool {
        self.changed_from(revision_of(&store_path(agent_dir)))
    }

    /// True when the file's current `revision` is not the one read.
    pub fn changed_from(&self, revision: Option<(u64, u64, i128)>) -> bool {
        revision != self.revision
    }

    /// The context window of each kept model (the next listing falls back on them).
    fn context_windows(&self) -> HashMap<String, u64> {
        let mut out: HashMap<String, u64> = self.chat.iter().map(|m| (m.id.clone(), m.context_window)).collect();
        for c in &self.classifiers {
            if let (Some(id), Some(n)) =
                (c.get("id").and_then(Value::as_str), c.get("contextWindow").and_then(Value::as_u64))
            {
                out.insert(id.to_string(), n);
            }
        }
        out
    }
}

/// List the configured server's models and keep them in
/// `models-store.json` (other providers' entries are left as they are), as
/// pi's RPC mode does at start. `Ok(false)` when no server is configured.
pub async fn refresh(agent_dir: &Path, http: &HttpClient) -> Result<bool, String> {
    let auth = AuthStore::load(agent_dir).map_err(|e| e.to_string())?;
    let Some((url, key)) = server(&auth) else { return Ok(false) };
    let cached = StoredModels::read(agent_dir).context_windows();
    let models = LlamaServer { http, url: &url, key: &key }.models(&cached).await.map_err(|e| e.0)?;
    let path = store_path(agent_dir);
    let mut file = read_store_file(&path);
    let checked_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    file.insert(PROVIDER.into(), json!({"models": models, "checkedAt": checked_at}));
    let text = serde_json::to_string_pretty(&Value::Object(file)).map_err(|e| e.to_string())?;
    let temp = agent_dir.join(format!(".{STORE_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_keeps_chat_and_classifier_models_apart() {
        let dir = tempfile::tempdir().expect("dir");
        let chat = json!({"id": "q", "name": "q", "api": "openai-completions", "provider": PROVIDER,
            "baseUrl": "http://h/v1", "reasoning": false, "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 4096, "maxTokens": 4096});
        let classifier = json!({"type": "classifier", "id": "q", "name": "q", "api": "llama-cpp-classify",
            "provider": PROVIDER, "baseUrl": "http://h", "input": ["text"], "contextWindow": 2048});
        let other = json!({"id": "x", "api": "openai-completions", "provider": "other"});
        let file = json!({PROVIDER: {"models": [chat, classifier, other], "checkedAt": 1}, "other": {"models": []}});
        std::fs::write(dir.path().join(STORE_FILE), file.to_string()).expect("write");
        let stored = StoredModels::read(dir.path());
        assert_eq!(stored.chat.len(), 1);
        assert_eq!(stored.chat[0].base_url, "http://h/v1");
        assert_eq!(stored.classifiers.len(), 1);
        assert_eq!(stored.context_windows().get("q"), Some(&2048));
        assert!(!stored.changed(dir.path()));
        std::fs::write(dir.path().join(STORE_FILE), "{}").expect("write");
        assert!(stored.changed(dir.path()));
    }
}
