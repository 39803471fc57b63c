//! The model catalogs pi 1.6.0 keeps in the agent directory's
//! `models-store.json` (one entry per provider: `models`, `lastModified`,
//! `etag`, `checkedAt`), as the session's registry reads them. pi asks its
//! catalog server (pi.dev) for each built-in provider's catalog and keeps
//! the answer there (pi-rpc's `auth` crate does the same, `model_catalogs`);
//! a stored catalog dated after pi 1.6.0's model data joins the provider's
//! models (a stored model replaces the built-in one of the same id, new ones
//! come after), before `models.json` and extensions are applied over them.
//! OpenRouter's entry is the catalog narrowed to the user's key: a non-empty
//! one replaces the provider's models whatever its date. llama.cpp's entry
//! is its listing ([`super::llama`]), not a catalog.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::auth::revision_of;
use crate::model::Model;

/// The file pi keeps catalogs in, in the agent directory.
pub const STORE_FILE: &str = "models-store.json";

/// When pi 1.6.0's built-in model data was generated (`2026-11-20T10:48:49.496Z`,
/// the data pi-rpc's catalog is transcribed from): a stored catalog counts when
/// its `lastModified` is later.
pub const BUILTIN_DATA_GENERATED_AT_MS: i64 = 1_795_171_729_496;

/// Providers whose stored entry is the user's own list (it replaces the catalog).
pub const PERSONALIZED: &[&str] = &["openrouter"];

/// Built-in providers pi fetches no catalog for.
pub const NOT_FETCHED: &[&str] = &["radius", super::llama::PROVIDER];

/// The providers whose catalog pi 1.6.0 refreshes and reads back: its
/// built-in ones (pi-ai's `builtinProviders()`: those of the chat catalog
/// and those with only classifier or image models, such as TypeSafe), less
/// those it fetches none for. A stored entry of any other provider (one
/// `models.json` or an extension defines) is left alone, as pi leaves it.
pub fn catalog_providers() -> Vec<&'static str> {
    let mut providers: Vec<&'static str> = super::catalog::catalog_providers().collect();
    let typed = super::typed_models::typed_catalog().iter().filter_map(|m| m.get("provider")?.as_str());
    for provider in typed {
        if !providers.contains(&provider) {
            providers.push(provider);
        }
    }
    providers.retain(|p| !NOT_FETCHED.contains(p));
    providers
}

/// The agent directory's `models-store.json`.
pub fn store_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join(STORE_FILE)
}

/// The store as a JSON object (empty when missing, unreadable or not an object).
pub fn read_store(path: &Path) -> Map<String, Value> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

/// The models of a stored entry that join `provider`'s models, as pi
/// restores them, chat ones and the others (classifier, image) apart: none
/// when the entry is older than the built-in data (or undated), except for
/// a personalized provider's list.
pub fn restored_models(provider: &str, entry: &Value) -> (Vec<Value>, Vec<Value>) {
    let Some(models) = entry.get("models").and_then(Value::as_array) else { return Default::default() };
    let newer =
        entry.get("lastModified").and_then(Value::as_f64).is_some_and(|t| t > BUILTIN_DATA_GENERATED_AT_MS as f64);
    if !PERSONALIZED.contains(&provider) && !newer {
        return Default::default();
    }
    models
        .iter()
        .filter(|m| m.get("provider").and_then(Value::as_str) == Some(provider))
        .filter(|m| m.get("id").and_then(Value::as_str).is_some())
        .filter(|m| kind(m).is_some_and(|k| ["chat", "classifier", "image"].contains(&k)))
        .cloned()
        .partition(|m| kind(m) == Some("chat"))
}

/// A stored model's type (`chat` when it names none).
fn kind(model: &Value) -> Option<&str> {
    match model.get("type") {
        None => Some("chat"),
        Some(t) => t.as_str(),
    }
}

/// The stored catalogs that change the session's models, by provider.
#[derive(Debug, Clone, Default)]
pub struct StoredCatalogs {
    /// Chat models (as stored) of each provider whose stored catalog counts.
    pub chat: BTreeMap<String, Vec<Value>>,
    /// Its classifier and image models.
    pub typed: BTreeMap<String, Vec<Value>>,
    /// The file's version when read.
    revision: Option<(u64, u64, i128)>,
}

impl StoredCatalogs {
    /// The catalogs `<agent_dir>/models-store.json` keeps (none when it is missing).
    pub fn read(agent_dir: &Path) -> StoredCatalogs {
        let path = store_path(agent_dir);
        let revision = revision_of(&path);
        let (mut chat, mut typed) = (BTreeMap::new(), BTreeMap::new());
        let known = catalog_providers();
        for (provider, entry) in read_store(&path) {
            if !known.contains(&provider.as_str()) {
                continue;
            }
            let (chat_models, typed_models) = restored_models(&provider, &entry);
            // A personalized list replaces the provider's typed models too, even with none of them.
            if !typed_models.is_empty() || (PERSONALIZED.contains(&provider.as_str()) && !chat_models.is_empty()) {
                typed.insert(provider.clone(), typed_models);
            }
            if !chat_models.is_empty() {
                chat.insert(provider, chat_models);
            }
        }
        StoredCatalogs { chat, typed, revision }
    }

    /// The providers a stored catalog gives chat models.
    pub fn chat_providers(&self) -> Vec<String> {
        self.chat.keys().cloned().collect()
    }

    /// Whether the catalogs that count are the same as `other`'s.
    pub fn same_models(&self, other: &StoredCatalogs) -> bool {
        self.chat == other.chat && self.typed == other.typed
    }

    /// The built-in classifier and image models with the stored ones over
    /// them (same type and id: the stored one, in place; a personalized
    /// provider's stored list replaces its built-in ones).
    pub fn typed_over(&self, built_in: Vec<Value>) -> Vec<Value> {
        if self.typed.is_empty() {
            return built_in;
        }
        let provider_of = |m: &Value| m.get("provider").and_then(Value::as_str).unwrap_or_default().to_string();
        let key = |m: &Value| (provider_of(m), kind(m).map(str::to_string), m.get("id").cloned());
        let replaced =
            |m: &Value| PERSONALIZED.contains(&provider_of(m).as_str()) && self.typed.contains_key(&provider_of(m));
        let mut out: Vec<Value> = built_in.into_iter().filter(|m| !replaced(m)).collect();
        for model in self.typed.values().flatten() {
            match out.iter_mut().find(|m| key(m) == key(model)) {
                Some(slot) => *slot = model.clone(),
                None => out.push(model.clone()),
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

    /// `provider`'s models with its stored catalog laid over them (pi's
    /// merge: a stored model replaces the one of its id in place, the others
    /// follow in the catalog's order; a personalized list replaces them).
    /// `None`: no stored catalog for the provider.
    pub fn overlay(&self, provider: &str, builtin: &[Model]) -> Option<Vec<Model>> {
        let stored = self.chat.get(provider)?;
        let stored: Vec<Model> = stored.iter().filter_map(|m| parse_model(provider, m)).collect();
        if stored.is_empty() {
            return None;
        }
        if PERSONALIZED.contains(&provider) {
            return Some(stored);
        }
        let mut merged: Vec<Model> = builtin.to_vec();
        for model in stored {
            match merged.iter_mut().find(|m| m.id == model.id) {
                Some(slot) => *slot = model,
                None => merged.push(model),
            }
        }
        Some(merged)
    }
}

/// A stored model as pi-rpc's `Model` (one that is not of its shape is left out).
fn parse_model(provider: &str, value: &Value) -> Option<Model> {
    match serde_json::from_value::<Model>(value.clone()) {
        Ok(model) => Some(model),
        Err(e) => {
            tracing::debug!("{STORE_FILE}: a model of {provider} left out: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn model(provider: &str, id: &str, window: u64) -> Value {
        json!({"id": id, "name": id, "api": "anthropic-messages", "provider": provider,
            "baseUrl": "https://x/v1", "reasoning": false, "input": ["text"],
            "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": window, "maxTokens": 10})
    }

    #[test]
    fn only_catalogs_newer_than_pis_data_count_and_overlay_in_place() {
        let dir = tempfile::tempdir().expect("dir");
        let newer = BUILTIN_DATA_GENERATED_AT_MS + 1;
        let file = json!({
            "anthropic": {"models": [model("anthropic", "a", 5), model("anthropic", "new", 6),
                model("other", "x", 1), {"type": "image", "id": "img", "provider": "anthropic"}],
                "lastModified": newer, "checkedAt": 1},
            "openai": {"models": [model("openai", "o", 1)], "lastModified": BUILTIN_DATA_GENERATED_AT_MS},
            "google": {"models": [model("google", "g", 1)]},
            "openrouter": {"models": [model("openrouter", "mine", 9)], "checkedAt": 1},
            "acme": {"models": [model("acme", "a", 1)], "lastModified": newer},
            "typesafe": {"models": [model("typesafe", "t", 1)], "lastModified": newer},
        });
        std::fs::write(store_path(dir.path()), file.to_string()).expect("write");
        let stored = StoredCatalogs::read(dir.path());
        // `acme` is no built-in provider (left unread); TypeSafe, with no built-in chat model, is one.
        assert_eq!(stored.chat.keys().collect::<Vec<_>>(), ["anthropic", "openrouter", "typesafe"]);
        let builtin: Vec<Model> = [model("anthropic", "z", 1), model("anthropic", "a", 1)]
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("model"))
            .collect();
        let merged = stored.overlay("anthropic", &builtin).expect("overlay");
        let shape: Vec<(&str, u64)> = merged.iter().map(|m| (m.id.as_str(), m.context_window)).collect();
        assert_eq!(shape, [("z", 1), ("a", 5), ("new", 6)]);
        let mine = stored.overlay("openrouter", &builtin).expect("personalized");
        assert_eq!(mine.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["mine"]);
        assert!(stored.overlay("openai", &builtin).is_none());
        let built_in_typed = vec![
            json!({"type": "image", "id": "img", "provider": "anthropic", "name": "old"}),
            json!({"type": "image", "id": "or-img", "provider": "openrouter"}),
        ];
        let img = json!({"type": "image", "id": "img", "provider": "anthropic"});
        assert_eq!(stored.typed_over(built_in_typed), [img], "the stored one in place; OpenRouter's list replaces");
        assert!(!stored.changed(dir.path()));
        std::fs::write(store_path(dir.path()), "{}").expect("write");
        assert!(stored.changed(dir.path()));
    }
}
