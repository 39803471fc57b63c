//! The registry's side of pi's llama.cpp provider: the models its last
//! listing kept in `models-store.json` join the registry (chat models) or
//! codemode's classifiers, and are read again when the store changes.

use std::path::Path;

use serde_json::Value;

use super::super::llama;
use super::{ModelRegistry, Slot};

impl ModelRegistry {
    /// The llama.cpp models kept by its last listing replace the registry's.
    pub(super) fn read_llama_store(&mut self, agent_dir: &Path) {
        self.llama = llama::StoredModels::read(agent_dir);
        self.models.retain(|m| m.provider != llama::PROVIDER);
        self.models.extend(self.llama.chat.iter().map(|m| Slot::Own(Box::new(m.clone()))));
    }

    /// Read the store again when a listing changed it since it was read
    /// (`revision`: the file's current one).
    pub(super) fn sync_llama_store(&mut self, agent_dir: &Path, revision: Option<(u64, u64, i128)>) {
        if self.llama.changed_from(revision) {
            self.read_llama_store(agent_dir);
        }
    }

    /// The key pi sends the configured llama.cpp server (`None`: no server configured).
    pub(super) fn llama_key(&self) -> Option<String> {
        llama::server(&self.auth).map(|(_, key)| key)
    }

    /// The llama.cpp classifier models kept by its last listing.
    pub fn llama_classifiers(&self) -> &[Value] {
        &self.llama.classifiers
    }
}
