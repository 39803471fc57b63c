//! pi's `resources_discover`: after `session_start` (at start-up, after a
//! session replacement (new, resume, fork, clone) and after a command's
//! `ctx.reload()`), extensions return skill, prompt-template and
//! theme paths; the skills and templates load after the others (listed by
//! `get_commands`, `/template` and `/skill:name` expand, skills join the
//! system prompt). Themes have no use in RPC mode.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::Agent;
use crate::agent::extension_session_op_state::ExtReply;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;

impl Agent {
    /// Extension `id`'s answer to `resources_discover`.
    pub(super) fn add_found_resources(&mut self, id: usize, found: &Value) {
        if let Some(path) = self.ext.handle().get(id).map(|e| e.path_string()) {
            self.add_found_resources_of(&path, found);
        }
    }

    /// The answer (`{skillPaths, promptPaths, themePaths}`) of the extension at `extension_path`.
    pub(super) fn add_found_resources_of(&mut self, extension_path: &str, found: &Value) {
        let paths = |key: &str| -> Vec<PathBuf> {
            let list = found.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            list.iter().filter_map(Value::as_str).map(|p| self.workspace.absolute(p)).collect()
        };
        let (skills, prompts) = (paths("skillPaths"), paths("promptPaths"));
        if skills.is_empty() && prompts.is_empty() {
            return;
        }
        let extension = std::path::Path::new(extension_path);
        for warning in self.ext.resources_mut().add_found_by_extension(extension, &skills, &prompts) {
            tracing::warn!("{warning}");
        }
    }

    /// After a reload's `session_start`: ask every extension that listens
    /// (reason "reload"), add what they found, then answer `reply`.
    pub(super) fn discover_after_reload(&mut self, reply: ExtReply) {
        self.discover("reload", Some(reply));
    }

    /// After a session replacement's `session_start` (pi binds its new
    /// runtime's extensions: reason "startup"): what extensions found for the
    /// old session goes, every extension that listens is asked again, and
    /// ops wait until all have answered.
    pub(super) fn discover_after_replacement(&mut self) {
        if !self.ext.handle().listens("resources_discover") {
            return;
        }
        self.ext.resources_mut().forget_found_by_extensions();
        self.ext.discovery_started();
        self.discover("startup", None);
    }

    fn discover(&mut self, reason: &str, reply: Option<ExtReply>) {
        let listeners = self.ext.handle().subscribers("resources_discover");
        let internal = self.channels.internal();
        let params = json!({"cwd": self.workspace.cwd(), "reason": reason});
        tokio::spawn(async move {
            let mut found = Vec::new();
            for ext in listeners {
                if let Ok(answer) = ext.call("resources_discover", params.clone(), None).await {
                    found.push((ext.path_string(), answer));
                }
            }
            let _ = internal.send(Internal::Extension(Box::new(ExtSignal::ResourcesFound { found, reply }))).await;
        });
    }
}
