//! The agent actor: owns the session state, dispatches ops in arrival order,
//! sequences every event and reply onto the output stream, and starts the
//! background tasks (runs, RPC bash).
//!
//! [`Agent`] holds the actor's parts (each its own type with private state,
//! in the sibling modules); the handlers of ops and signals are its
//! submodules, the only code that sees those parts side by side.

mod client_ops;
mod compacting;
mod dispatch;
mod extension_hooks;
mod extension_host_requests;
mod extension_requests;
mod login_ops;
mod mcp_ops;
mod session_tree;
mod settings;
mod stats;

use std::sync::Arc;

use serde_json::Map;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::channels::Channels;
use super::current_session::CurrentSession;
use super::extension_state::ExtensionState;
use super::internal::ActorSink;
use super::internal::{Internal, QueueKind};
use super::model_choice::ModelChoice;
use super::preferences::Preferences;
use super::queue::Queues;
use super::run::{RunSetup, run_session};
use super::session_start::{StartupChoice, open_session};
use super::state::{Activity, HeldMessage, Hold, Pending, RunState};
use super::toolbox::Toolbox;
use super::workspace::Workspace;
use super::{AgentConfig, Output};
use crate::error::{CoreError, ErrorKind};
use crate::event::AgentEvent;
use crate::message::{AgentMessage, BashExecutionMessage, ImageContent, StopReason, now_ms};
use crate::op::{Disposition, Op, Reply, RequestTag, StreamingBehavior};
use crate::tools::{ToolContext, ToolRegistry};

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
}

impl Agent {
    pub(crate) fn new(config: AgentConfig, out: mpsc::Sender<Output>) -> Result<Agent, CoreError> {
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
        let mcp = super::mcp_start::start_mcp(config.mcp, &channels.internal());
        let mut agent = Agent {
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
        };
        let startup = StartupChoice {
            provider: config.provider,
            pattern: config.model,
            thinking: config.thinking,
            inline_key: config.api_key.is_some(),
        };
        let default_provider = agent.prefs.settings().default_provider.as_deref();
        agent.models.apply_command_line(startup, config.api_key, &config.model_scope, default_provider);
        agent.add_client_tools(config.client.tools.clone())?;
        agent.select_initial_model(restored_model, restored_thinking)?;
        agent.start_session_entries(config.session_name)?;
        Ok(agent)
    }

    /// The actor loop. Internal messages go first so state is current before any op reads it.
    pub(crate) async fn run(mut self, mut ops: mpsc::Receiver<(Option<RequestTag>, Op)>) {
        let Some(mut internal_rx) = self.channels.take_inbox() else { return };
        let mut ops_open = true;
        loop {
            tokio::select! {
                biased;
                Some(msg) = internal_rx.recv() => match msg {
                    // The hot path (a run's deltas) stays a small future;
                    // everything else is boxed so it is not moved per event.
                    Internal::Event(event) => self.run_event(*event).await,
                    Internal::Events(events) => self.run_events(events).await,
                    msg => Box::pin(self.handle_internal(msg)).await,
                },
                op = ops.recv(), if ops_open => match op {
                    Some((tag, op)) => {
                        self.handle_op(Pending::new(tag, op)).await;
                        self.mcp.begin();
                    }
                    None => {
                        ops_open = false;
                        if !self.activity.is_shutting_down() {
                            self.activity.request_shutdown(None);
                        }
                    }
                },
            }
            if self.activity.is_shutting_down() && self.is_idle() {
                break;
            }
        }
        self.mcp.shutdown().await;
        self.ext.handle().shutdown().await;
        self.workspace.release_temp_files(self.session.record().file_path());
        if let Some(tag) = self.activity.take_shutdown_request() {
            self.reply(Some(tag), Ok(Reply::Ack)).await;
        }
        tracing::debug!("agent stopped");
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
        if let Some(tag) = tag {
            self.channels.send(Output::Reply { tag, result }).await;
        }
    }

    async fn handle_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Event(event) => self.run_event(*event).await,
            Internal::Events(events) => self.run_events(events).await,
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
            Internal::RunFinished { run_id } => self.run_finished(run_id).await,
            Internal::CurrentTools { reply } => {
                let (tools, specs) = self.active_tool_set();
                let _ = reply.send(super::internal::ToolSet(tools, specs, self.prompt_sections()));
            }
            Internal::Compaction(msg) => self.handle_compaction_msg(*msg).await,
            Internal::Login(msg) => self.handle_login_msg(*msg).await,
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
    /// `agent_settled`) without an await.
    async fn run_events(&mut self, events: Vec<AgentEvent>) {
        for event in events {
            if matches!(event, AgentEvent::AgentSettled { .. }) {
                self.run_event(event).await;
                continue;
            }
            self.observe(&event);
            self.notify_extensions(&event);
            self.channels.send(Output::Event(event)).await;
        }
    }

    /// An event of a background task: state first, then the output.
    async fn run_event(&mut self, event: AgentEvent) {
        let settled = matches!(event, AgentEvent::AgentSettled { .. });
        self.observe(&event);
        self.emit(event).await;
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
        for message in held {
            match message {
                HeldMessage::Bash(message) => self.append_message(message),
                HeldMessage::Custom(message) => self.append_and_announce(message).await,
            }
        }
        self.activity_ended().await;
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
                if let AgentMessage::Assistant(a) = message
                    && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                {
                    self.session.usage_known();
                }
                self.append_message(message.clone());
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

    pub(super) async fn prompt(
        &mut self,
        tag: Option<RequestTag>,
        message: String,
        images: Vec<ImageContent>,
        behavior: Option<StreamingBehavior>,
    ) {
        if self.activity.is_running() {
            match behavior {
                None => {
                    let err = CoreError::busy(
                        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.",
                    );
                    self.reply(tag, Err(err)).await;
                }
                Some(StreamingBehavior::Steer) => self.enqueue(tag, QueueKind::Steering, message, images).await,
                Some(StreamingBehavior::FollowUp) => self.enqueue(tag, QueueKind::FollowUp, message, images).await,
            }
            return;
        }
        if let Err(e) = self.preflight() {
            self.reply(tag, Err(e)).await;
            return;
        }
        let user = AgentMessage::user(&message, &images);
        self.reply(tag, Ok(Reply::Prompt(Disposition::Started))).await;
        self.start_run(vec![user]);
    }

    pub(super) async fn enqueue(
        &mut self,
        tag: Option<RequestTag>,
        kind: QueueKind,
        text: String,
        images: Vec<ImageContent>,
    ) {
        let message = AgentMessage::user(&text, &images);
        self.queues.push(kind, text, message);
        self.emit_queue_update().await;
        self.reply(tag, Ok(Reply::Prompt(Disposition::Queued))).await;
    }

    pub(super) async fn abort(&mut self, tag: Option<RequestTag>) {
        match self.activity.work() {
            RunState::Idle => self.reply(tag, Ok(Reply::Ack)).await,
            active => {
                active.cancel();
                self.activity.ack_at_end(tag);
            }
        }
    }

    /// Checks before a run may start: a callable model with credentials.
    pub(super) fn preflight(&self) -> Result<(), CoreError> {
        self.models.preflight()
    }

    /// Start a run with these new messages.
    pub(super) fn start_run(&mut self, mut initial: Vec<AgentMessage>) {
        let router = self.virtual_router();
        let provider = match (&router, self.models.provider()) {
            (_, Some(provider)) => provider,
            (Some(_), None) => super::virtual_route::unrouted(String::new()),
            (None, None) => return,
        };
        initial.extend(self.ext.take_next_turn());
        let cancel = CancellationToken::new();
        let retry_cancel = CancellationToken::new();
        let run_id = self.activity.begin_run(cancel.clone(), retry_cancel.clone());
        let (tools, tool_specs) = self.active_tool_set();
        let (tools_version, tools_seen) = self.ext.tools_version();
        let setup = RunSetup {
            run_id,
            emitter: self.channels.emitter(),
            cancel: cancel.clone(),
            retry_cancel: retry_cancel.clone(),
            provider,
            model: self.models.model().clone(),
            thinking: self.models.thinking(),
            api_key: self.models.api_key(),
            headers: self.models.headers(),
            session_id: self.session.record().session_id().to_string(),
            system_prompt: String::new(),
            sections: self.prompt_sections(),
            extra_sections: Vec::new(),
            forced_prompt: None,
            tools,
            tool_specs,
            tool_ctx: self.tool_context(),
            initial,
            retry: self.prefs.settings().retry,
            retry_enabled: self.prefs.retry_flag(),
            extensions: self.ext.handle().clone(),
            tools_version,
            tools_seen,
            mcp: Some(self.mcp.clone()),
            reach: self.reach(),
            router,
        };
        tokio::spawn(run_session(setup));
    }

    /// The router of the selected model, when it is an extension's virtual model.
    fn virtual_router(&self) -> Option<super::virtual_route::VirtualRouter> {
        let model = self.models.model();
        if !crate::config::models::is_virtual(model) {
            return None;
        }
        let owner = self.ext.virtual_model_owner(&model.provider, &model.id);
        let Some(owner) = owner else {
            // Not registered (any more): the request ends with pi's error.
            return Some(super::virtual_route::VirtualRouter::unregistered(model.clone()));
        };
        Some(super::virtual_route::VirtualRouter::new(
            owner,
            model.clone(),
            self.models.thinking(),
            self.models.registry().clone(),
            self.models.providers().clone(),
        ))
    }

    /// The tools the model gets, in order, with their specs.
    pub(super) fn active_tool_set(&self) -> (ToolRegistry, Vec<crate::provider::ToolSpec>) {
        self.toolbox.active_set()
    }

    pub(super) fn tool_context(&self) -> ToolContext {
        let mut ctx = ToolContext::new(self.workspace.cwd().to_path_buf());
        ctx.temp_dir = self.workspace.temp_dir().to_path_buf();
        // The PI_* variables the prompt's rules point the model to (pi 1.6.0's set).
        ctx.env = vec![
            ("PI_CODING_AGENT".to_string(), "true".to_string()),
            ("PI_SESSION_ID".to_string(), self.session.record().session_id().to_string()),
            ("PI_PROVIDER".to_string(), self.models.model().provider.clone()),
            ("PI_MODEL".to_string(), self.models.model().id.clone()),
            ("PI_REASONING_LEVEL".to_string(), self.models.thinking().as_str().to_string()),
        ];
        if let Some(file) = self.session.record().file_path() {
            ctx.env.push(("PI_SESSION_FILE".to_string(), file.display().to_string()));
        }
        ctx.gate = self.ext.handle().gate();
        ctx.client = Some(self.client_link());
        ctx
    }

    /// The system prompt's sections for the active tools (pi 1.6.0's
    /// structure); system messages record them.
    pub(super) fn prompt_sections(&self) -> crate::system_prompt::Sections {
        use crate::system_prompt::{PromptTool, builtin_guidelines, builtin_snippet};
        // Built-in tools carry their snippet and rules; extension tools their
        // `promptSnippet` and `promptGuidelines` (pi leaves out tools without a snippet).
        let mut tools: Vec<PromptTool> = Vec::new();
        for (name, tool) in self.toolbox.active() {
            let guidelines = match tool.prompt_guidelines() {
                [] => builtin_guidelines(name).iter().map(|g| g.to_string()).collect(),
                own => own.to_vec(),
            };
            let snippet = tool.prompt_snippet().or(builtin_snippet(name)).map(str::to_string);
            tools.push(PromptTool { name: name.clone(), snippet, guidelines });
        }
        tools.extend(self.reach_tools());
        let skills = self.skills_section();
        self.workspace.prompt_sections(&tools, skills.as_deref())
    }

    /// The system prompt text for the active tools.
    pub(super) fn system_prompt(&self) -> String {
        crate::system_prompt::render(&self.prompt_sections())
    }

    pub(super) async fn bash(&mut self, tag: Option<RequestTag>, command: String, exclude_from_context: bool) {
        let Some(cancel) = self.activity.begin_bash() else {
            self.reply(tag, Err(CoreError::busy("A bash command is already running"))).await;
            return;
        };
        let emitter = self.channels.emitter();
        let cwd = self.workspace.cwd().to_path_buf();
        let temp_dir = self.workspace.temp_dir().to_path_buf();
        let env = self.tool_context().env;
        tokio::spawn(async move {
            let (chunk_tx, mut chunk_rx) = mpsc::unbounded_channel::<String>();
            let forward = {
                let emitter = emitter.clone();
                tokio::spawn(async move {
                    while let Some(delta) = chunk_rx.recv().await {
                        emitter.emit(AgentEvent::BashExecutionUpdate { request: tag, delta }).await;
                    }
                })
            };
            let result =
                crate::tools::bash::run_command(&command, &cwd, &env, &temp_dir, cancel, move |chunk: &str| {
                    let _ = chunk_tx.send(chunk.to_string());
                })
                .await;
            let _ = forward.await;
            let outcome = result.map(|result| {
                let message = AgentMessage::BashExecution(BashExecutionMessage {
                    command,
                    output: result.output.clone(),
                    exit_code: result.exit_code,
                    cancelled: result.cancelled,
                    truncated: result.truncated,
                    full_output_path: result.full_output_path.clone(),
                    exclude_from_context,
                    timestamp: now_ms(),
                    extra: Map::new(),
                });
                (result, message)
            });
            emitter.send(Internal::BashFinished { tag, outcome: Box::new(outcome) }).await;
        });
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
                    self.emit(AgentEvent::EntryAppended { entry }).await;
                }
            }
            Err(e) => tracing::warn!("cannot hide the failed attempt from the context: {e}"),
        }
    }
}
