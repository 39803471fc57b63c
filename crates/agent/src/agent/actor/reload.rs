//! pi's `ctx.reload()` (pi 1.6.0's `AgentSession.reload`): `settings.json`
//! is read again (queue modes, the agent's settings, the tools newly added
//! to `defaultTools`), the settings' pi packages are resolved again, skills
//! and prompt templates discovered again, and the extensions found again:
//! those of a package or file that went are unloaded (`session_shutdown`
//! with reason "reload"), those that came, and those that crashed, are
//! loaded (their `session_start` has reason "reload"), the others are
//! reloaded in place, and handlers run in the order the set was found in.
//! The packages are resolved (and installed) off the actor, which answers
//! other commands meanwhile.

use std::path::PathBuf;

use super::Agent;
use crate::agent::extension_session_op_state::ExtReply;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::{Internal, QueueKind};
use pi_extensions::packages::{Kind, PackageManager, Resolved};

impl Agent {
    /// A command's `ctx.reload()`; `reply` is answered once the extensions'
    /// `resources_discover` (reason "reload") answered.
    pub(super) fn extension_reload(&mut self, reply: ExtReply) {
        let busy = if self.activity.is_running() {
            Some("Wait for the current response to finish before reloading.")
        } else if self.activity.work().is_compacting() {
            Some("Wait for compaction to finish before reloading.")
        } else {
            None
        };
        if let Some(error) = busy {
            let _ = reply.send(Err(error.to_string()));
            return;
        }
        // The settings' pi packages are resolved aside, as an install may
        // take long (npm, git): the session answers other commands meanwhile.
        let Some(options) = self.ext.resources().options.as_ref() else {
            self.finish_reload(None, reply);
            return;
        };
        let (cwd, agent_dir, trusted) = (options.cwd.clone(), options.agent_dir.clone(), options.project_trusted);
        let internal = self.channels.internal();
        tokio::spawn(async move {
            let resolved =
                tokio::task::spawn_blocking(move || PackageManager::new(&cwd, &agent_dir, trusted).resolve_settings())
                    .await
                    .ok()
                    .map(Box::new);
            let signal = ExtSignal::ReloadPackagesResolved { resolved, reply };
            let _ = internal.send(Internal::Extension(Box::new(signal))).await;
        });
    }

    /// The rest of a reload, once the settings' packages are resolved
    /// (`None`: resources were never discovered, so there are none).
    pub(super) fn finish_reload(&mut self, resolved: Option<Resolved>, reply: ExtReply) {
        let default_tools_before = self.default_tools();
        self.reload_settings();
        let package_extensions = resolved.map(|resolved| self.reload_resources(resolved));
        self.activate_new_default_tools(default_tools_before);
        let added = self.reload_extensions(package_extensions);
        // Every extension kept is reloaded (the host gives the old instance
        // `session_shutdown` and the new one `session_start`, both with
        // reason "reload"); those just loaded get theirs once registered.
        // One after another in load order, each awaited, as pi's reload runs
        // the factories in turn: an extension's new factory sees those
        // before it reloaded. Then [`Agent::reload_started`].
        let payload = self.session_start_payload("reload");
        let kept: Vec<_> =
            self.ext.handle().subscribers("session_start").into_iter().filter(|e| !added.contains(&e.id)).collect();
        let internal = self.channels.internal();
        let awaiting = self.ext.replacing(&kept.iter().map(|e| e.id).collect::<Vec<_>>());
        tokio::spawn(async move {
            super::session_restart::greet_in_turn(kept, &payload, Some(&awaiting)).await;
            let _ = internal.send(Internal::Extension(Box::new(ExtSignal::ReloadStarted { reply }))).await;
        });
    }

    /// Every kept extension handled the reload's `session_start`.
    pub(super) fn reload_started(&mut self, reply: ExtReply) {
        // pi's MCP extension activates codemode / tool_search again at its `session_start`,
        // and its first prompt waits for the `direct` servers again.
        self.toolbox.discovery_again();
        self.mcp.session_started();
        // Then `resources_discover` (reason "reload"); the command goes on once it is answered.
        self.discover_after_reload(reply);
    }

    /// pi's reload reads `settings.json` again: the queue modes and the
    /// settings the agent reads at use come from it (a broken file is logged
    /// and the settings stay as they were).
    fn reload_settings(&mut self) {
        let Some(options) = self.ext.resources().options.as_ref() else { return };
        match crate::config::Settings::load(&options.agent_dir, &options.cwd) {
            Ok(settings) => {
                self.queues.set_mode(QueueKind::Steering, settings.steering_mode);
                self.queues.set_mode(QueueKind::FollowUp, settings.follow_up_mode);
                self.prefs.reload(settings);
                self.apply_codemode_settings();
            }
            Err(e) => tracing::warn!("reload: {e}"),
        }
    }

    /// The tools `defaultTools` selects now, with `--tools`' edits (none
    /// when `--tools` or `--no-tools` chose the tools: pi's `usesDefaultTools`).
    fn default_tools(&self) -> Option<Vec<String>> {
        let edits = self.ext.default_tool_edits()?;
        let base = self.prefs.settings().default_tools.clone();
        let base = base.unwrap_or_else(|| crate::tools::DEFAULT_ACTIVE_TOOLS.iter().map(|s| s.to_string()).collect());
        if edits.is_empty() {
            return Some(base);
        }
        Some(crate::config::settings::apply_tool_edits(Some(base), edits.to_vec()))
    }

    /// pi activates the tools newly added to `defaultTools` (removed ones
    /// stay active; one disabled since start stays disabled unless newly
    /// added); one no tool has yet is activated when an extension registers it.
    fn activate_new_default_tools(&mut self, before: Option<Vec<String>>) {
        let (Some(before), Some(now)) = (before, self.default_tools()) else { return };
        let added: Vec<String> = now.into_iter().filter(|t| !before.contains(t)).collect();
        if added.is_empty() {
            return;
        }
        let mut active = self.toolbox.active_names().to_vec();
        active.extend(added.iter().cloned());
        let known = self.activatable_tools();
        self.toolbox.set_active_known(active.iter().map(String::as_str), &known);
        self.ext.request_tools(added);
        self.ext.tools_changed();
    }

    /// Discover skills and templates again with the settings' pi packages as
    /// resolved now (what was missing installed, as at start-up); the
    /// packages' extension files.
    fn reload_resources(&mut self, resolved: Resolved) -> Vec<PathBuf> {
        for failure in &resolved.failures {
            tracing::warn!("{}", failure.warning());
        }
        if let Some(options) = self.ext.resources_mut().options.as_mut() {
            options.packages.skills = resolved.enabled(Kind::Skills);
            options.packages.prompts = resolved.enabled(Kind::Prompts);
        }
        if let Some((resources, warnings)) = self.ext.resources().rediscover() {
            for warning in warnings {
                tracing::warn!("{warning}");
            }
            *self.ext.resources_mut() = resources;
        }
        resolved.enabled(Kind::Extensions)
    }

    /// Find the extensions again (the settings' packages as resolved now):
    /// those no longer found are unloaded, new ones loaded, and all of them
    /// put in the order they were found, as pi loads the set again.
    /// The ids of those loaded.
    fn reload_extensions(&mut self, package_extensions: Option<Vec<PathBuf>>) -> Vec<usize> {
        let Some(mut discovery) = self.ext.discovery().cloned() else { return Vec::new() };
        if let Some(paths) = package_extensions {
            discovery.package_paths = paths;
        }
        let found = crate::extensions::discover(&discovery);
        for (path, error) in &found.errors {
            tracing::warn!("reload: {path}: {error}");
        }
        // One that crashed is loaded afresh, as pi loads every extension again.
        let crashed = |id: usize| self.ext.handle().get(id).is_some_and(|e| e.is_dead());
        let (dead, loaded): (Vec<_>, Vec<_>) =
            self.ext.handle().loaded_paths().into_iter().partition(|(id, _)| crashed(*id));
        for (id, _) in dead.iter().chain(loaded.iter().filter(|(_, path)| !found.paths.contains(path))) {
            self.forget_extension(*id);
            self.ext.handle().retire(*id);
        }
        let session_id = self.session.record().session_id().to_string();
        let session_file = self.session.record().file_path().map(|p| p.display().to_string());
        let mut added = Vec::new();
        for path in found.paths.iter().filter(|p| !loaded.iter().any(|(_, l)| l == *p)) {
            if let Some(id) = self.ext.handle().add(path, &session_id, session_file.as_deref()) {
                self.ext.loaded_by_reload(id);
                added.push(id);
            }
        }
        self.ext.handle().reorder(&found.paths);
        added
    }
}
