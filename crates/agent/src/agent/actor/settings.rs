//! Ops that read or change the agent's settings and state: model, thinking
//! level, queue modes, toggles, state snapshots, `initialize`.

use serde_json::{Value, json};

use super::Agent;
use super::extension_host_requests::model_json;
use super::selection_events::ThinkingCaller;
use crate::agent::internal::QueueKind;
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::model::{Model, ThinkingLevel};
use crate::op::{CycledModel, InitializeParams, QueueMode, Reply, SessionInfo, StateSnapshot};
use crate::provider::faux;

impl Agent {
    /// `cycle_thinking_level`: the next level the model supports (`None`
    /// when it has one level only).
    pub(super) async fn cycle_thinking_level(&mut self) -> Option<ThinkingLevel> {
        let next = self.models.next_thinking()?;
        self.change_thinking(next).await;
        Some(self.models.thinking())
    }

    /// `set_steering_mode` / `set_follow_up_mode`.
    pub(super) fn set_queue_mode(&mut self, kind: QueueKind, mode: QueueMode) -> Reply {
        let key = match kind {
            QueueKind::Steering => "steeringMode",
            QueueKind::FollowUp => "followUpMode",
        };
        self.queues.set_mode(kind, mode);
        self.prefs.save(key, Value::String(mode.as_str().to_string()));
        Reply::Ack
    }

    pub(super) fn set_auto_compaction(&mut self, enabled: bool) -> Reply {
        self.prefs.set_auto_compaction(enabled);
        Reply::Ack
    }

    pub(super) fn set_auto_retry(&mut self, enabled: bool) -> Reply {
        self.prefs.set_auto_retry(enabled);
        Reply::Ack
    }

    /// `clear_queue`: both queues emptied, what they held.
    pub(super) async fn clear_queues(&mut self) -> Reply {
        let cleared = self.queues.clear();
        self.emit_queue_update().await;
        Reply::QueueCleared(cleared)
    }

    pub(super) fn snapshot(&self) -> StateSnapshot {
        StateSnapshot {
            model: Some(self.models.shared_model()),
            thinking_level: self.models.thinking(),
            // pi's run is over while its `agent_settled` handlers run.
            is_streaming: self.activity.is_run_active(),
            is_compacting: self.is_compacting(),
            is_bash_running: self.activity.is_bash_running(),
            steering_mode: self.queues.mode(QueueKind::Steering),
            follow_up_mode: self.queues.mode(QueueKind::FollowUp),
            session_file: self.session.record().file_path().map(|p| p.display().to_string()),
            session_id: self.session.record().session_id().to_string(),
            session_name: self.session.record().name(),
            auto_compaction_enabled: self.prefs.auto_compaction(),
            auto_retry_enabled: self.prefs.auto_retry(),
            message_count: self.session.messages().len(),
            pending_message_count: self.queues.pending(),
            active_tools: self.toolbox.shared_active_names(),
            context_usage: self.context_usage(),
            session_header: self.session.record().shared_header(),
        }
    }

    pub(super) fn last_assistant_text(&self) -> Option<String> {
        self.session.messages().iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => {
                let text = a.text();
                let text = text.trim();
                (!text.is_empty()).then(|| text.to_string())
            }
            _ => None,
        })
    }

    pub(super) async fn set_session_name(&mut self, name: String) -> Result<Reply, CoreError> {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err(CoreError::invalid("name", "Session name cannot be empty"));
        }
        self.session.set_name(&name).map_err(|e| CoreError::internal(e.to_string()))?;
        self.emit(AgentEvent::SessionInfoChanged { name }).await;
        Ok(Reply::Ack)
    }

    /// Change the thinking level (clamped to the model); announce and record real changes.
    pub(super) async fn change_thinking(&mut self, wanted: ThinkingLevel) {
        self.change_thinking_for(wanted, None).await;
    }

    /// [`Agent::change_thinking`] for `caller`, an extension's own
    /// `pi.setThinkingLevel()`, answered as pi returns from it (selection_events.rs).
    pub(super) async fn change_thinking_for(&mut self, wanted: ThinkingLevel, caller: Option<ThinkingCaller>) {
        let previous = self.models.thinking();
        let Some(level) = self.models.set_thinking(wanted) else {
            return ThinkingCaller::answer(caller, Value::Null);
        };
        if let Err(e) = self.session.record_thinking(level) {
            tracing::error!("cannot write session entry: {e}");
        }
        self.emit(AgentEvent::ThinkingLevelChanged { level }).await;
        // pi's `thinking_level_select`: the level and the one before.
        let payload =
            json!({"type": "thinking_level_select", "level": level.as_str(), "previousLevel": previous.as_str()});
        self.announce_thinking(payload, caller);
    }

    /// Switch to `model`, keeping the thinking level where the model allows
    /// it; `source` is pi's `model_select` source (`set`, `cycle`).
    async fn switch_model(&mut self, model: Model, source: &str) {
        let level = self.models.level_for_switch();
        let previous = self.models.model().clone();
        let changed = self.models.switch(model);
        let model = self.models.model().clone();
        if changed && let Err(e) = self.session.record_model(&model) {
            tracing::error!("cannot write session entry: {e}");
        }
        self.change_thinking(level).await;
        if changed {
            // pi's `model_select`: the whole model, the one before, and why.
            let payload = json!({
                "type": "model_select",
                "model": model_json(&model),
                "previousModel": model_json(&previous),
                "source": source,
            });
            self.announce_selection("model_select", payload);
            self.emit(AgentEvent::ModelChanged { model: Box::new(model), thinking_level: self.models.thinking() })
                .await;
        }
    }

    pub(super) async fn set_model(&mut self, provider: Option<String>, model_id: String) -> Result<Reply, CoreError> {
        let (model, thinking) = self.models.find_usable(provider.as_deref(), &model_id)?;
        self.switch_model(model, "set").await;
        if let Some(level) = thinking {
            self.change_thinking(level).await;
        }
        Ok(Reply::Model(Box::new(self.models.model().clone())))
    }

    /// `cycle_model`: the next available model, or with `--models` the
    /// next scoped one that has credentials, with its `:<thinking>` level
    /// when the pattern gave one.
    pub(super) async fn cycle_model(&mut self) -> Result<Reply, CoreError> {
        let is_scoped = self.models.is_scoped();
        let next = if is_scoped { self.models.next_scoped() } else { self.models.next_model().map(|m| (m, None)) };
        let Some((model, level)) = next else { return Ok(Reply::CycleModel(None)) };
        self.switch_model(model, "cycle").await;
        if let Some(level) = level {
            self.change_thinking(level).await;
        }
        Ok(Reply::CycleModel(Some(Box::new(CycledModel {
            model: self.models.model().clone(),
            thinking_level: self.models.thinking(),
            is_scoped,
        }))))
    }

    pub(super) fn set_active_tools(&mut self, tools: Vec<String>) -> Result<Reply, CoreError> {
        let known = self.activatable_tools();
        Ok(Reply::ActiveTools(self.toolbox.set_active(tools, &known)?.to_vec()))
    }

    /// Pick the model and thinking level for the session just opened (see
    /// [`ModelChoice::choose_for_session`](crate::agent::model_choice::ModelChoice::choose_for_session)).
    pub(super) fn select_initial_model(
        &mut self,
        restored_model: Option<(String, String)>,
        restored_thinking: Option<String>,
    ) -> Result<(), CoreError> {
        let started = !self.session.messages().is_empty();
        self.models.choose_for_session(self.prefs.settings(), started, restored_model, restored_thinking)
    }

    /// Record model and thinking level in a fresh session (and `--name`).
    pub(super) fn start_session_entries(&mut self, name: Option<String>) -> Result<(), CoreError> {
        let io = |e: crate::session::SessionError| CoreError::internal(e.to_string());
        if let Some(name) = name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            self.session.set_name(name).map_err(io)?;
        }
        // Only the model and thinking level are needed, not the messages.
        let (model, thinking_level) = self.session.record().context_model_and_thinking();
        let (current, thinking) = (self.models.model(), self.models.thinking());
        let same_model = model.as_ref().is_some_and(|(p, id)| *p == current.provider && *id == current.id);
        if !same_model {
            self.session.record_model(current).map_err(io)?;
        }
        if thinking_level.as_deref() != Some(thinking.as_str()) {
            self.session.record_thinking(thinking).map_err(io)?;
        }
        Ok(())
    }

    /// JSON-RPC `initialize`: validate everything, then apply it all.
    pub(super) async fn initialize(&mut self, p: InitializeParams) -> Result<Reply, CoreError> {
        let cwd = match &p.cwd {
            Some(c) => {
                let path = crate::config::expand_home(std::path::Path::new(c));
                let path = if path.is_absolute() { path } else { self.workspace.cwd().join(path) };
                let path = std::fs::canonicalize(&path)
                    .map_err(|e| CoreError::invalid("cwd", format!("cwd {}: {e}", path.display())))?;
                if !path.is_dir() {
                    return Err(CoreError::invalid("cwd", format!("cwd is not a directory: {}", path.display())));
                }
                Some(path)
            }
            None => None,
        };
        if let Some(tools) = &p.tools
            && let Some(unknown) = self.toolbox.first_unknown(tools)
        {
            return Err(CoreError::invalid("tools", format!("Unknown tool: {unknown}")));
        }
        let mut registry = self.models.registry().clone();
        if let Some(key) = &p.api_key {
            let provider = p
                .provider
                .clone()
                .or_else(|| {
                    let m = p.model.as_deref()?;
                    registry.resolve_pattern(None, m, None, true).ok().map(|s| s.model.provider)
                })
                .unwrap_or_else(|| self.models.model().provider.clone());
            registry.set_runtime_key(&provider, key.clone());
        }
        let mut suffix_thinking = None;
        let model = match (&p.model, &p.provider) {
            (Some(m), provider) => {
                let selected = registry
                    .resolve_pattern(provider.as_deref(), m, p.thinking_level, p.api_key.is_some())
                    .map_err(|e| CoreError::invalid("model", e))?;
                suffix_thinking = selected.thinking;
                Some(selected.model)
            }
            (None, Some(provider)) => Some(
                registry
                    .all()
                    .to_vec()
                    .into_iter()
                    .find(|m| &m.provider == provider && registry.has_credentials(m))
                    .or_else(|| (provider == faux::FAUX_PROVIDER).then(faux::faux_model))
                    .ok_or_else(|| {
                        CoreError::invalid("provider", format!("No usable model for provider: {provider}"))
                    })?,
            ),
            (None, None) => None,
        };
        if let Some(model) = &model
            && !registry.has_credentials(model)
        {
            let var = crate::config::auth::provider_env_vars(&model.provider).first().copied().unwrap_or("an API key");
            return Err(CoreError::invalid(
                "apiKey",
                format!("No API key found for {}: pass apiKey or set {var}", model.full_id()),
            ));
        }
        // Everything checked: apply.
        self.models.replace_registry(registry);
        if let Some(cwd) = cwd
            && self.workspace.move_to(cwd.clone())
        {
            self.mcp.set_root(cwd);
            self.rebind_fresh_session();
        }
        // `initialize` stands for the command line: later sessions start from it too.
        self.models.remember_request(p.model.clone(), p.provider.clone(), p.api_key.is_some(), p.thinking_level);
        if let Some(model) = model {
            self.switch_model(model, "set").await;
        }
        if let Some(level) = p.thinking_level.or(suffix_thinking) {
            self.change_thinking(level).await;
        }
        if let Some(tools) = p.tools {
            self.set_active_tools(tools)?;
        }
        self.add_client_tools(p.client_tools)?;
        Ok(Reply::Session(SessionInfo {
            session_id: self.session.record().session_id().to_string(),
            session_path: self.session.record().file_path().map(|p| p.display().to_string()),
            model: Some(Box::new(self.models.model().clone())),
        }))
    }

    /// After a cwd change, a session with no conversation yet moves to the new cwd.
    fn rebind_fresh_session(&mut self) {
        if !self.session.messages().is_empty() {
            return;
        }
        let persisted = self.session.record().file_path().is_some();
        let (dir, cwd) = (self.workspace.session_dir(), self.workspace.cwd());
        let fresh = if persisted {
            match crate::session::Session::create(dir, cwd, None) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("cannot create a session in {}: {e}", dir.display());
                    crate::session::Session::in_memory(cwd)
                }
            }
        } else {
            crate::session::Session::in_memory(cwd)
        };
        self.session.replace(fresh);
        self.warmer.cancel();
        let _ = self.start_session_entries(None);
    }
}
