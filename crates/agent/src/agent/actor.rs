//! The agent actor: owns the session state, dispatches ops in arrival order,
//! sequences every event and reply onto the output stream, and starts the
//! background tasks (runs, RPC bash).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Map;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::extension_state::ExtensionState;
use super::internal::ActorSink;
use super::internal::Emitter;
use super::internal::{Internal, QueueKind};
use super::queue::MessageQueue;
use super::run::{RunSetup, run_session};
use super::session_start::open_session;
use super::state::{Activity, HeldMessage, Hold, Pending, RunState};
use super::{AgentConfig, Output, SystemPromptOptions};
use crate::config::{ModelRegistry, Settings};
use crate::error::{CoreError, ErrorKind};
use crate::event::AgentEvent;
use crate::message::{AgentMessage, BashExecutionMessage, ImageContent, StopReason, now_ms};
use crate::model::{Model, ThinkingLevel};
use crate::op::{Disposition, Op, Reply, RequestTag, StreamingBehavior};
use crate::provider::{ProviderRegistry, faux};
use crate::session::Session;
use crate::tools::{ToolContext, ToolRegistry};

/// The state the actor owns.
pub(crate) struct Agent {
    pub(super) agent_dir: PathBuf,
    pub(super) cwd: PathBuf,
    pub(super) settings: Settings,
    pub(super) models: ModelRegistry,
    pub(super) providers: ProviderRegistry,
    pub(super) tools: ToolRegistry,
    pub(super) active_tools: Vec<String>,
    pub(super) session_dir: PathBuf,
    pub(super) session_dir_explicit: bool,
    pub(super) prompt_options: SystemPromptOptions,
    pub(super) persist_settings: bool,
    /// Full-output files of truncated bash runs (see `tools::temp_outputs`).
    pub(super) temp_outputs: crate::tools::temp_outputs::TempOutputs,

    pub(super) session: Session,
    /// The conversation as the model sees it (what `get_messages` returns,
    /// shared with the reply instead of copied; read from the session file
    /// until something needs it whole).
    pub(super) messages: pi_types::MessageList,
    pub(super) model: Model,
    pub(super) thinking: ThinkingLevel,
    /// The command line's model choice, applied to every session opened.
    pub(super) startup: super::session_start::StartupChoice,
    /// `--models`: what `cycle_model` cycles through (with optional levels).
    pub(super) scoped_models: Vec<(Model, Option<ThinkingLevel>)>,
    pub(super) steering: MessageQueue,
    pub(super) follow_up: MessageQueue,
    pub(super) auto_compaction: bool,
    pub(super) retry_enabled: Arc<AtomicBool>,
    /// True from a compaction until the next successful reply (usage unknown).
    pub(super) usage_unknown: bool,

    /// What the agent is busy with (run, compaction, `bash`, shutdown) and
    /// what waits for it.
    pub(super) activity: Activity,

    /// Templates, skills and extensions.
    pub(super) ext: ExtensionState,
    /// The session's MCP servers (and codemode's store).
    pub(super) mcp: Arc<crate::mcp::McpManager>,
    /// Requests to the client, the approval gate, what the client offers.
    pub(super) client: super::client_state::ClientState,
    /// Names of the tools the client runs itself.
    pub(super) client_tools: Vec<String>,

    pub(super) out: mpsc::Sender<Output>,
    pub(super) internal_tx: mpsc::Sender<Internal>,
    internal_rx: Option<mpsc::Receiver<Internal>>,
}

impl Agent {
    pub(crate) fn new(config: AgentConfig, out: mpsc::Sender<Output>) -> Result<Agent, CoreError> {
        let (internal_tx, internal_rx) = mpsc::channel(1024);
        let session = open_session(&config)?;
        let restored_messages = session.context_messages();
        let (restored_model, restored_thinking) = session.context_model_and_thinking();
        let session_file = session.file_path().map(|p| p.display().to_string());
        let temp_outputs = crate::tools::temp_outputs::TempOutputs::new(&config.temp_dir);
        let start = crate::extensions::StartContext {
            cwd: &config.cwd,
            temp_dir: temp_outputs.dir(),
            session_id: session.session_id(),
            session_file: session_file.as_deref(),
        };
        let ext = ExtensionState::start(
            config.resources,
            &config.extensions,
            &start,
            Arc::new(ActorSink(internal_tx.clone())),
        );
        let mcp = super::mcp_start::start_mcp(config.mcp, &internal_tx);
        let mut agent = Agent {
            agent_dir: config.agent_dir,
            cwd: config.cwd,
            retry_enabled: Arc::new(AtomicBool::new(config.settings.retry.enabled)),
            auto_compaction: config.settings.compaction.enabled,
            steering: MessageQueue::new(config.settings.steering_mode),
            follow_up: MessageQueue::new(config.settings.follow_up_mode),
            settings: config.settings,
            models: config.models,
            providers: config.providers,
            tools: config.tools,
            active_tools: config.active_tools,
            session_dir: config.session_dir,
            session_dir_explicit: config.session_dir_explicit,
            prompt_options: config.system_prompt,
            persist_settings: config.persist_settings,
            temp_outputs,
            session,
            messages: restored_messages,
            model: faux::faux_model(),
            thinking: ThinkingLevel::Off,
            startup: Default::default(),
            scoped_models: Vec::new(),
            usage_unknown: false,
            activity: Activity::default(),
            ext,
            mcp,
            client: super::client_state::ClientState::new(&config.client),
            client_tools: Vec::new(),
            out,
            internal_tx,
            internal_rx: Some(internal_rx),
        };
        if let Some(key) = config.api_key.clone() {
            agent.api_key_target(config.provider.as_deref(), config.model.as_deref(), key);
        }
        if !config.model_scope.is_empty() {
            let scope = agent.models.scope(&config.model_scope);
            for warning in scope.warnings {
                tracing::warn!("--models: {warning}");
            }
            agent.scoped_models = scope.models;
        }
        agent.startup = super::session_start::StartupChoice {
            provider: config.provider.clone(),
            pattern: config.model.clone(),
            thinking: config.thinking,
            inline_key: config.api_key.is_some(),
        };
        agent.add_client_tools(config.client.tools.clone())?;
        agent.select_initial_model(restored_model, restored_thinking)?;
        agent.start_session_entries(config.session_name)?;
        Ok(agent)
    }

    /// Give `--api-key` to the provider of the requested (or default) model.
    fn api_key_target(&mut self, provider: Option<&str>, model: Option<&str>, key: String) {
        let provider = provider
            .map(str::to_string)
            .or_else(|| {
                let pattern = model.map(str::trim).filter(|m| !m.is_empty())?;
                self.models.resolve_pattern(None, pattern, None, true).ok().map(|s| s.model.provider)
            })
            .or_else(|| self.settings.default_provider.clone());
        match provider {
            Some(p) => self.models.set_runtime_key(&p, key),
            None => tracing::warn!("--api-key given but no provider or model selected; ignoring it"),
        }
    }

    /// The actor loop. Internal messages go first so state is current before any op reads it.
    pub(crate) async fn run(mut self, mut ops: mpsc::Receiver<(Option<RequestTag>, Op)>) {
        let Some(mut internal_rx) = self.internal_rx.take() else { return };
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
        self.temp_outputs.release(self.session.file_path());
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
        self.send_output(Output::Event(event)).await;
    }

    /// Queue an output: at once when the channel has room (no waiter is
    /// armed), else waiting for room, exactly as a plain `send` would.
    async fn send_output(&self, output: Output) {
        match self.out.try_send(output) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(output)) => {
                let _ = self.out.send(output).await;
            }
        }
    }

    pub(super) async fn reply(&self, tag: Option<RequestTag>, result: Result<Reply, CoreError>) {
        if let Some(tag) = tag {
            self.send_output(Output::Reply { tag, result }).await;
        }
    }

    async fn handle_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Event(event) => self.run_event(*event).await,
            Internal::Events(events) => self.run_events(events).await,
            Internal::Extension(signal) => self.handle_extension_signal(*signal).await,
            Internal::TakeQueued { kind, reply } => {
                let _ = reply.send(self.take_delivered(kind));
            }
            Internal::QueueChanged => self.emit_queue_update().await,
            Internal::Context { reply } => {
                let _ = reply.send(self.messages.to_vec());
            }
            Internal::RetractFromContext { message } => {
                if let Some(pos) = self.messages.iter().rposition(|m| m == &*message) {
                    self.messages.make_mut().remove(pos);
                }
                self.record_context_edit(&message).await;
            }
            Internal::RunFinished { run_id } => self.run_finished(run_id).await,
            Internal::CurrentTools { reply } => {
                let (tools, specs) = self.active_tool_set();
                let _ = reply.send(super::internal::ToolSet(tools, specs));
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
            match self.out.try_send(Output::Event(event)) {
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
                Err(mpsc::error::TrySendError::Full(output)) => {
                    let _ = self.out.send(output).await;
                }
            }
        }
    }

    /// An event of a background task: state first, then the output.
    async fn run_event(&mut self, event: AgentEvent) {
        let settled = matches!(event, AgentEvent::AgentSettled { .. });
        self.observe(&event);
        self.emit(event).await;
        // Like pi, the run is over once `agent_settled` is out: a
        // prompt read right after it must start a new run.
        if let Some(run_id) = self.activity.run().map(|r| r.id).filter(|_| settled) {
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
                    self.usage_unknown = false;
                }
                self.append_message(message.clone());
            }
            AgentEvent::AutoRetryStart { .. } => {
                if let Some(run) = self.activity.run_mut() {
                    run.retry_waiting = true;
                }
            }
            AgentEvent::AgentStart => {
                if let Some(run) = self.activity.run_mut() {
                    run.retry_waiting = false;
                }
            }
            _ => {}
        }
    }

    /// Add a message to the conversation and the session file.
    pub(super) fn append_message(&mut self, message: AgentMessage) {
        let written = match &message {
            AgentMessage::Custom(c) => {
                self.session.append_custom_message(&c.custom_type, c.content.clone(), c.display, c.details.clone())
            }
            _ => self.session.append_message(message.clone()),
        };
        if let Err(e) = written {
            tracing::error!("cannot write session entry: {e}");
        }
        self.messages.make_mut().push(message);
    }

    /// Take what a queue delivers now, each message with both queues as they
    /// stand once it is delivered.
    fn take_delivered(&mut self, kind: QueueKind) -> Vec<super::internal::Delivered> {
        let (taken, other) = match kind {
            QueueKind::Steering => (self.steering.take_each(), self.follow_up.texts()),
            QueueKind::FollowUp => (self.follow_up.take_each(), self.steering.texts()),
        };
        let delivered = |(message, rest): (AgentMessage, Vec<String>)| {
            let (steering, follow_up) = match kind {
                QueueKind::Steering => (rest, other.clone()),
                QueueKind::FollowUp => (other.clone(), rest),
            };
            super::internal::Delivered { message, steering, follow_up }
        };
        taken.into_iter().map(delivered).collect()
    }

    pub(super) async fn emit_queue_update(&self) {
        self.emit(AgentEvent::QueueUpdate { steering: self.steering.texts(), follow_up: self.follow_up.texts() }).await;
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
        match kind {
            QueueKind::Steering => self.steering.push(text, message),
            QueueKind::FollowUp => self.follow_up.push(text, message),
        }
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
        if self.providers.get(&self.model.api).is_none() {
            return Err(CoreError::new(
                ErrorKind::Unsupported,
                format!(
                    "The API \"{}\" of model {} is not supported by this build",
                    self.model.api,
                    self.model.full_id()
                ),
            ));
        }
        if !self.models.has_credentials(&self.model) {
            let vars = crate::config::auth::provider_env_vars(&self.model.provider);
            let hint = match vars.first() {
                Some(var) => format!("Set {var}, add the key to auth.json or models.json, or pass --api-key."),
                None => "Add an apiKey for this provider to models.json or auth.json, or pass --api-key.".to_string(),
            };
            return Err(CoreError::new(
                ErrorKind::Model,
                format!("No API key found for the selected model ({}).\n\n{hint}", self.model.full_id()),
            ));
        }
        Ok(())
    }

    /// Start a run with these new messages.
    pub(super) fn start_run(&mut self, mut initial: Vec<AgentMessage>) {
        let Some(provider) = self.providers.get(&self.model.api) else { return };
        let provider = crate::auth::authorize(provider, &self.models, &self.model);
        initial.extend(self.ext.take_next_turn());
        let cancel = CancellationToken::new();
        let retry_cancel = CancellationToken::new();
        let run_id = self.activity.begin_run(cancel.clone(), retry_cancel.clone());
        let (tools, tool_specs) = self.active_tool_set();
        let (tools_version, tools_seen) = self.ext.tools_version();
        let setup = RunSetup {
            run_id,
            emitter: Emitter::new(self.internal_tx.clone()),
            cancel: cancel.clone(),
            retry_cancel: retry_cancel.clone(),
            provider,
            model: self.model.clone(),
            thinking: self.thinking,
            api_key: self.models.api_key(&self.model.provider),
            headers: self.models.headers(&self.model),
            session_id: self.session.session_id().to_string(),
            system_prompt: self.system_prompt(),
            tools,
            tool_specs,
            tool_ctx: self.tool_context(),
            initial,
            retry: self.settings.retry,
            retry_enabled: self.retry_enabled.clone(),
            extensions: self.ext.handle().clone(),
            tools_version,
            tools_seen,
            mcp: Some(self.mcp.clone()),
            reach: self.reach(),
        };
        tokio::spawn(run_session(setup));
    }

    /// The tools the model gets, in registry order, with their specs.
    pub(super) fn active_tool_set(&self) -> (ToolRegistry, Vec<crate::provider::ToolSpec>) {
        let mut reg = ToolRegistry::default();
        let mut specs = Vec::new();
        for name in &self.active_tools {
            if let Some(tool) = self.tools.get(name) {
                specs.push(tool.spec());
                reg.register(tool);
            }
        }
        (reg, specs)
    }

    pub(super) fn tool_context(&self) -> ToolContext {
        let mut ctx = ToolContext::new(self.cwd.clone());
        ctx.temp_dir = self.temp_outputs.dir().to_path_buf();
        ctx.env = vec![
            ("PI_CODING_AGENT".to_string(), "true".to_string()),
            ("PI_SESSION_ID".to_string(), self.session.session_id().to_string()),
        ];
        ctx.gate = self.ext.handle().gate();
        ctx.client = Some(self.client_link());
        ctx
    }

    pub(super) fn system_prompt(&self) -> String {
        // Built-in tools carry their summary; extension tools their
        // `promptSnippet` and `promptGuidelines` (pi leaves out tools without a snippet).
        let mut tools: Vec<(String, String)> = Vec::new();
        let mut guidelines: Vec<String> = Vec::new();
        for (name, tool) in self.active_tools.iter().filter_map(|t| Some((t, self.tools.get(t)?))) {
            let summary = tool.prompt_snippet().unwrap_or(crate::system_prompt::tool_summary(name));
            if !summary.is_empty() {
                tools.push((name.clone(), summary.to_string()));
            }
            for rule in tool.prompt_guidelines() {
                if !guidelines.contains(rule) {
                    guidelines.push(rule.clone());
                }
            }
        }
        tools.extend(self.reach_summaries());
        let skills = self.skills_section();
        let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
        crate::system_prompt::build(&crate::system_prompt::PromptInputs {
            agent_dir: &self.agent_dir,
            cwd: &self.cwd,
            tools: &tools,
            guidelines: &guidelines,
            replace: self.prompt_options.replace.as_deref(),
            append: &self.prompt_options.append,
            no_context_files: self.prompt_options.no_context_files,
            skills_section: skills.as_deref(),
            date: &date,
        })
    }

    pub(super) async fn bash(&mut self, tag: Option<RequestTag>, command: String, exclude_from_context: bool) {
        let Some(cancel) = self.activity.begin_bash() else {
            self.reply(tag, Err(CoreError::busy("A bash command is already running"))).await;
            return;
        };
        let emitter = Emitter::new(self.internal_tx.clone());
        let cwd = self.cwd.clone();
        let temp_dir = self.temp_outputs.dir().to_path_buf();
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
        match self.session.append_context_edit(target, None) {
            Ok(id) => {
                if let Some(entry) = self.session.get(&id).and_then(|e| serde_json::to_value(e).ok()) {
                    self.emit(AgentEvent::EntryAppended { entry }).await;
                }
            }
            Err(e) => tracing::warn!("cannot hide the failed attempt from the context: {e}"),
        }
    }

    /// The retry flag shared with runs.
    pub(super) fn set_retry_enabled(&self, enabled: bool) {
        self.retry_enabled.store(enabled, Ordering::SeqCst);
    }
}
