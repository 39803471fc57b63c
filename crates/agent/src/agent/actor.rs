//! The agent actor: owns the session state, dispatches ops in arrival order
//! and sequences every event and reply onto the output stream.
//!
//! [`Agent`] holds the actor's parts (each its own type with private state,
//! in the sibling modules); the handlers of ops and signals are its
//! submodules, the only code that sees those parts side by side: `dispatch`
//! (every op), `runs` and `tool_setup` (starting a run), `bash_ops`,
//! `compacting`, `settings`, `session_tree`, `stats`, the extensions' side
//! (`extension_hooks`, `extension_requests`, `extension_host_requests`),
//! `client_ops`, `login_ops` and `mcp_ops`. This file is the loop: ops and
//! the background tasks' messages in, state kept in step with a run's events.

mod after_settled;
mod bash_ops;
mod builtin_factories;
mod cache_warming;
mod client_ops;
mod compacting;
mod compaction_hooks;
mod dispatch;
mod extension_hooks;
mod extension_host_requests;
mod extension_model_calls;
mod extension_model_resolve;
mod extension_oauth_login;
mod extension_registrations;
mod extension_requests;
mod extension_session_ops;
mod extension_tree_nav;
mod extension_typed_models;
mod login_ops;
mod mcp_activation;
mod mcp_command_ui;
mod mcp_credentials;
mod mcp_ops;
mod mcp_provider_token;
mod mcp_transport_host;
mod named_tools;
mod quit_goodbye;
mod reload;
mod resource_discovery;
mod runs;
mod runtime_phases;
mod sdk_session_command_ui;
pub(super) mod sdk_session_conns;
mod sdk_session_hosted;
mod sdk_session_mcp;
mod selection_events;
mod session_link;
mod session_restart;
mod session_tree;
mod settings;
mod settle_boundary;
mod start_up_phases;
mod stats;
pub(super) mod streamed_message_fields;
mod switch_after_shutdown;
mod tool_restore;
mod tool_setup;

use std::sync::Arc;

use dispatch::AtOnce;

use super::channels::{Channels, OutputTx};
use super::current_session::CurrentSession;
use super::extension_state::ExtensionState;
use super::internal::ActorSink;
use super::internal::Internal;
use super::model_choice::ModelChoice;
use super::preferences::Preferences;
use super::queue::Queues;
use super::session_start::{StartupChoice, open_session};
use super::state::{Activity, HeldMessage, Hold, Pending};
use super::toolbox::Toolbox;
use super::workspace::Workspace;
use super::{AgentConfig, Output};
use crate::error::{CoreError, ErrorKind};
use crate::event::AgentEvent;
use crate::message::{AgentMessage, StopReason};
use crate::op::{Op, Reply, RequestTag};

/// Most ops taken in one turn of the loop when they are queued already.
const OPS_AT_HAND: usize = 64;

/// The state the actor owns.
pub(crate) struct Agent {
    /// Directories, the system prompt's sources, temporary files.
    workspace: Workspace,
    /// Settings and the run-time toggles.
    prefs: Preferences,
    /// The models, their providers, the model and thinking level in use.
    models: ModelChoice,

    /// The session's record and the conversation as the model sees it.
    session: CurrentSession,
    /// Steering and follow-up messages waiting for the run.
    queues: Queues,

    /// What the agent is busy with (run, compaction, `bash`, shutdown) and
    /// what waits for it.
    activity: Activity,

    /// Templates, skills and extensions.
    ext: ExtensionState,
    /// The session's MCP servers (and codemode's store).
    mcp: Arc<crate::mcp::McpManager>,
    /// Requests to the client, the approval gate, what the client offers.
    client: super::client_state::ClientState,
    /// Every tool, the active ones, the client's.
    toolbox: Toolbox,

    /// The output stream and the background tasks' way back.
    channels: Channels,
    /// Keeps the last request's prompt cache warm.
    warmer: super::cache_warmer::CacheWarmer,
}

impl Agent {
    /// Boxed: the actor is about 12 KB, and its task's future holds it by
    /// pointer (moved by value, each hand-off on the way to `tokio::spawn`
    /// was a copy written on the start's stack: a 70 KB frame, resident).
    pub(crate) fn new(config: AgentConfig, out: OutputTx) -> Result<Box<Agent>, CoreError> {
        let channels = Channels::new(out);
        let session = open_session(&config)?;
        let (restored_model, restored_thinking) = session.context_model_and_thinking();
        let session_file = session.file_path().map(|p| p.display().to_string());
        let workspace = Workspace::new(&config);
        let start = crate::extensions::StartContext {
            cwd: &config.cwd,
            temp_dir: workspace.temp_dir(),
            session_id: session.session_id(),
            session_file: session_file.as_deref(),
        };
        let ext = ExtensionState::start(
            config.resources,
            &config.extensions,
            &start,
            Arc::new(ActorSink(channels.internal())),
        );
        // pi connects the MCP servers once the extensions loaded (one may own MCP).
        let hold = ext.gated().then(tokio_util::sync::CancellationToken::new);
        let mcp_options = crate::mcp::McpOptions { root: Some(config.cwd.clone()), hold, ..config.mcp };
        let mcp = super::mcp_start::start_mcp(mcp_options, &config.active_tools, &channels.internal());
        mcp.factories.set_provider_token(mcp_provider_token::reader(&channels.internal()));
        let mut agent = Box::new(Agent {
            queues: Queues::new(config.settings.steering_mode, config.settings.follow_up_mode),
            prefs: Preferences::new(config.settings, config.persist_settings.then(|| config.agent_dir.clone())),
            models: ModelChoice::new(config.models, config.providers),
            toolbox: Toolbox::new(config.tools, config.active_tools),
            workspace,
            session: CurrentSession::new(session),
            activity: Activity::default(),
            ext,
            mcp,
            client: super::client_state::ClientState::new(&config.client),
            channels,
            warmer: Default::default(),
        });
        let startup = StartupChoice {
            provider: config.provider,
            pattern: config.model,
            thinking: config.thinking,
            inline_key: config.api_key.is_some(),
        };
        if let Some(refreshes) = config.catalog_refreshes {
            agent.models.refresh_catalogs_after_start(refreshes);
        }
        agent.apply_codemode_settings();
        let started = !agent.session.messages().is_empty();
        let settings = agent.prefs.settings();
        agent.models.apply_command_line(startup, config.api_key, &config.model_scope, settings, started)?;
        agent.add_client_tools(config.client.tools.clone())?;
        // pi restores the loadout a resumed session recorded (`--session`, `--continue`).
        agent.restore_tools_at_start();
        if agent.ext.gated() && agent.models.has_startup_pattern() {
            // pi resolves `--model` once the extensions loaded: one may
            // register the model it names (or one that matches it better).
            let started = !agent.session.messages().is_empty();
            let settings = agent.prefs.settings();
            let name = config.session_name;
            agent.models.defer_startup(settings, started, restored_model, restored_thinking, name)?;
        } else {
            agent.select_initial_model(restored_model, restored_thinking)?;
            agent.start_session_entries(config.session_name)?;
        }
        Ok(agent)
    }

    /// The actor loop. Internal messages go first so state is current before any op reads it.
    pub(crate) async fn run(mut self: Box<Self>, mut ops: super::OpReceiver) {
        let Some(mut internal_rx) = self.channels.take_inbox() else { return };
        if !self.ext.gated() {
            self.models.start_catalog_refresh();
        }
        let mut ops_open = true;
        loop {
            tokio::select! {
                biased;
                Some(msg) = internal_rx.recv() => match msg {
                    // The hot path (a run's deltas) stays a small future;
                    // everything else is boxed so it is not moved per event.
                    Internal::Event(event) => self.run_event(*event).await,
                    Internal::Events(events) => self.run_events(events, false).await,
                    Internal::Streamed(events, fields) => self.run_streamed(events, *fields).await,
                    msg => Box::pin(self.handle_internal(msg)).await,
                },
                op = ops.recv(), if ops_open => match op {
                    Some((tag, op)) => {
                        self.take_op(tag, op).await;
                        // The ops queued already follow, while no internal
                        // message waits (a burst of piped commands is taken
                        // without a turn of the loop each).
                        for _ in 1..OPS_AT_HAND {
                            if !internal_rx.is_empty() || self.activity.is_shutting_down() {
                                break;
                            }
                            let Some((tag, op)) = ops.try_recv() else { break };
                            self.take_op(tag, op).await;
                        }
                    }
                    None => {
                        ops_open = false;
                        if !self.activity.is_shutting_down() {
                            self.activity.request_shutdown(None);
                        }
                    }
                },
            }
            if !self.ext.gated() {
                self.mcp.release();
                self.models.start_catalog_refresh();
            }
            if self.activity.is_shutting_down() && self.is_idle() && self.extensions_said_goodbye() {
                break;
            }
        }
        self.mcp.shutdown().await;
        self.ext.sdk_mcp().close_all().await;
        let told = self.told_goodbye();
        self.ext.handle().shutdown(&told).await;
        self.workspace.release_temp_files(self.session.record().file_path());
        if let Some(tag) = self.activity.take_shutdown_request() {
            self.reply(Some(tag), Ok(Reply::Ack)).await;
        }
        tracing::debug!("agent stopped");
    }

    /// One op from the client: answered at once when it can be, else handled.
    async fn take_op(&mut self, tag: Option<RequestTag>, op: Op) {
        match self.answer_at_once(tag, &op) {
            AtOnce::Answered(Some(reply)) => self.channels.send(reply).await,
            AtOnce::Answered(None) => {}
            AtOnce::NotAtOnce => self.handle_op(Pending::new(tag, op)).await,
        }
        self.mcp.begin();
    }

    pub(super) fn is_idle(&self) -> bool {
        self.activity.is_idle() && self.ext.is_idle()
    }

    /// Send an event to the client, and to the extensions that subscribed to it.
    pub(super) async fn emit(&self, event: AgentEvent) {
        self.notify_extensions(&event);
        self.channels.send(Output::Event(event)).await;
    }

    pub(super) async fn reply(&self, tag: Option<RequestTag>, result: Result<Reply, CoreError>) {
        let Some(tag) = tag else { return };
        if let Some(reply) = self.reply_output(tag, result) {
            self.channels.send(reply).await;
        }
    }

    /// The output answering `tag`, or none when it answers an extension's
    /// session op (the answer went to the extension).
    pub(super) fn reply_output(&self, tag: RequestTag, result: Result<Reply, CoreError>) -> Option<Output> {
        // A session op of an extension command: its answer goes to the extension,
        // once the new runtime has started when it replaced the session (a setup's first).
        let replies = self.ext.session_op_replies();
        let setup = replies.setup_caller(Some(tag)).is_some();
        if let Some(waiting) = replies.take(tag) {
            let replaced = extension_session_ops::replaced(&result);
            let outcome = extension_session_ops::outcome(result);
            if replaced && !setup {
                replies.park(waiting, outcome);
            } else {
                let _ = waiting.send(outcome);
            }
            return None;
        }
        Some(Output::Reply { tag, result })
    }

    async fn handle_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Event(event) => self.run_event(*event).await,
            Internal::Events(events) => self.run_events(events, false).await,
            Internal::Streamed(events, fields) => self.run_streamed(events, *fields).await,
            Internal::Extension(signal) => self.handle_extension_signal(*signal).await,
            Internal::TakeQueued { kind, reply } => {
                let _ = reply.send(self.queues.take_delivered(kind));
            }
            Internal::QueueChanged => self.emit_queue_update().await,
            Internal::Context { reply } => {
                let _ = reply.send(self.session.messages().to_vec());
            }
            Internal::RetractFromContext { message } => {
                self.session.retract(&message);
                self.record_context_edit(&message).await;
            }
            Internal::RunSettling { run_id } => self.activity.begin_settling(run_id),
            Internal::RunFinished { run_id } => self.run_finished(run_id).await,
            Internal::Flush { reply } => {
                let _ = reply.send(());
            }
            Internal::ProviderToken { provider, reply } => self.answer_provider_token(&provider, reply),
            Internal::BoundaryPending { reply } => {
                let _ = reply.send(self.boundary_pending());
            }
            Internal::CommitBoundary { event, entries, reply } => {
                let _ = reply.send(self.commit_boundary(event, &entries).await);
            }
            // pi: restored tools that did not register by now stay inactive.
            Internal::RunPrepared => self.toolbox.run_started(),
            Internal::CallableTools { reply } => {
                let (tools, specs) = self.toolbox.callable_set();
                let _ = reply.send(super::internal::Callable(tools, specs));
            }
            Internal::CurrentTools { reply } => {
                self.sync_mcp_activation();
                let (tools, specs) = self.active_tool_set();
                let indirect = self.toolbox.indirect();
                let active = self.toolbox.shared_active_names();
                let _ = reply.send(super::internal::ToolSet(tools, specs, self.prompt_sections(), indirect, active));
            }
            Internal::Compaction(msg) => self.handle_compaction_msg(*msg).await,
            Internal::Login(msg) => self.handle_login_msg(*msg).await,
            Internal::CacheWarming(msg) => self.handle_warm_msg(*msg).await,
            Internal::Session(request) => self.session_request(*request).await,
            Internal::BashFinished { tag, outcome } => {
                self.activity.end_bash();
                match *outcome {
                    Ok((result, message)) => {
                        if self.activity.is_running() {
                            self.activity.hold_message(HeldMessage::Bash(message));
                        } else {
                            self.append_message(message);
                        }
                        self.reply(tag, Ok(Reply::Bash(result))).await;
                    }
                    Err(e) => self.reply(tag, Err(CoreError::new(ErrorKind::Tool, e))).await,
                }
            }
        }
    }

    /// Events of a background task, in order, each as [`Agent::run_event`]
    /// handles it; the common case (room in the output channel, not
    /// `agent_settled` nor `turn_end`) without an await, and when the front
    /// end takes them together, in one hand-off (the actor's state follows
    /// them all first: nothing reads it in between).
    /// (`streamed`: the extensions had the reply's streaming events already,
    /// [`Agent::run_streamed`].)
    async fn run_events(&mut self, events: Vec<AgentEvent>, streamed: bool) {
        let notify = |agent: &Self, event: &AgentEvent| {
            if streamed && crate::extensions::protocol::streams_message(event) {
                agent.ext.handle().notify_unstreamed(event);
            } else {
                agent.notify_extensions(event);
            }
        };
        if self.channels.batched() && !events.iter().any(handled_alone) {
            for event in &events {
                self.observe(event);
                notify(self, event);
            }
            self.channels.send_events(events).await;
            return;
        }
        for event in events {
            if handled_alone(&event) {
                self.run_event(event).await;
                continue;
            }
            self.observe(&event);
            notify(self, &event);
            self.channels.send(Output::Event(event)).await;
        }
    }

    /// The events of one read of a streaming reply, with its message's
    /// fields as they stand after it: the pi modules' hosts get those events
    /// and the fields together (they build pi's streaming message from
    /// them), the rest goes as [`Agent::run_events`] sends it.
    async fn run_streamed(&mut self, events: Vec<AgentEvent>, fields: serde_json::Value) {
        self.ext.handle().notify_stream(&events, fields);
        self.run_events(events, true).await;
    }

    /// An event of a background task: state first, then the output.
    async fn run_event(&mut self, event: AgentEvent) {
        let settled = matches!(event, AgentEvent::AgentSettled { .. });
        let turn_end = matches!(event, AgentEvent::TurnEnd { .. });
        if settled {
            // Like pi, held custom messages go in before `agent_settled`.
            self.flush_held_custom().await;
            self.warm_after_settle();
        }
        self.observe(&event);
        self.emit(event).await;
        if turn_end {
            // pi appends custom messages sent with `triggerTurn: false`
            // once the turn is over (its tool results are in): the next
            // request of the same run already holds them.
            self.flush_held_custom().await;
        }
        // Like pi, the run is over once `agent_settled` is out: a
        // prompt read right after it must start a new run.
        if let Some(run_id) = self.activity.run_id().filter(|_| settled) {
            // Boxed: once per run, and a large future.
            Box::pin(self.run_finished(run_id)).await;
        }
    }

    /// The run `run_id` is over: held `bash` results and extension
    /// messages go in, then what waited for the run. Runs once per run (at
    /// `agent_settled`).
    async fn run_finished(&mut self, run_id: u64) {
        let Some(held) = self.activity.end_run(run_id) else { return };
        let mut deferred = Vec::new();
        for message in held {
            match message {
                HeldMessage::Bash(message) => self.append_message(message),
                HeldMessage::Custom(message) => self.append_and_announce(message).await,
                HeldMessage::AfterSettled(action) => deferred.push(action),
            }
        }
        deferred.extend(self.activity.take_carried());
        Box::pin(self.after_settled(deferred)).await;
        self.activity_ended().await;
    }

    /// Append the extensions' custom messages held during the run, announced.
    async fn flush_held_custom(&mut self) {
        for message in self.activity.take_held_custom() {
            self.append_and_announce(message).await;
        }
    }

    /// The run or compaction ended: answer what was owed, then handle the
    /// ops that waited (each may start a new activity and wait again).
    pub(super) async fn activity_ended(&mut self) {
        let (acks, ops) = self.activity.release(Hold::Activity);
        for tag in acks {
            self.reply(Some(tag), Ok(Reply::Ack)).await;
        }
        for pending in ops {
            self.handle_op(pending).await;
        }
    }

    /// Keep the actor's view of the conversation in step with the run's events.
    fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageEnd { message } => {
                if let AgentMessage::Assistant(a) = &**message
                    && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                {
                    self.session.usage_known();
                }
                self.append_message((**message).clone());
            }
            AgentEvent::AutoRetryStart { .. } => {
                self.activity.set_retry_waiting(true);
            }
            AgentEvent::AgentStart => {
                self.activity.set_retry_waiting(false);
            }
            _ => {}
        }
    }

    /// Add a message to the conversation and the session file.
    pub(super) fn append_message(&mut self, message: AgentMessage) {
        self.session.append(message);
    }

    pub(super) async fn emit_queue_update(&self) {
        self.emit(self.queues.update_event()).await;
    }

    /// Hide a retried attempt from future context: pi appends a `context_edit`.
    async fn record_context_edit(&mut self, message: &AgentMessage) {
        let target = self
            .session
            .record()
            .entries()
            .filter(|e| e.message() == Some(message))
            .last()
            .and_then(|e| e.id().map(str::to_string));
        if let Some(target) = target {
            self.hide_from_context(&target).await;
        }
    }

    /// Append a `context_edit` that leaves entry `target` out of the model's
    /// context, and announce it (`entry_appended`, as pi 1.6.0 does).
    pub(super) async fn hide_from_context(&mut self, target: &str) {
        match self.session.hide_from_context(target) {
            Ok(id) => {
                if let Some(entry) = self.session.record().get(&id).and_then(|e| serde_json::to_value(e).ok()) {
                    self.emit(AgentEvent::EntryAppended { entry: Box::new(entry) }).await;
                }
            }
            Err(e) => tracing::warn!("cannot hide the failed attempt from the context: {e}"),
        }
    }
}

/// An event the actor acts on beyond following it (the end of a turn or of
/// the run): handled by [`Agent::run_event`], not with the events around it.
fn handled_alone(event: &AgentEvent) -> bool {
    matches!(event, AgentEvent::AgentSettled { .. } | AgentEvent::TurnEnd { .. })
}
