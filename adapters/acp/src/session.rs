//! One ACP session: a task that owns the session's agent, turns its events
//! into `session/update`s and requests to the client, and answers the
//! session's requests (`session/prompt` once the turn is over, with its
//! retries and queued follow-ups; config options; modes; close).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use pi_core::agent::{AgentHandle, Output};
use pi_core::client::ApprovalMode;
use pi_core::error::CoreError;
use pi_core::event::{AgentEvent, AssistantStreamEvent};
use pi_core::message::{AgentMessage, StopReason};
use pi_core::op::{Disposition, Op, Reply, StreamingBehavior, UiResponse};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;

use crate::config::{Choices, MODE, MODEL, THOUGHT_LEVEL};
use crate::outbox::Shared;
use crate::requests::{Sent, outbound};
use crate::updates::{self, tool_call, tool_result};
use crate::wire::{self, error_response, internal, invalid_params, response, session_update};

/// What the connection asks of a session.
#[derive(Debug)]
pub enum SessionCmd {
    Prompt {
        id: Box<RawValue>,
        request: acp::PromptRequest,
    },
    /// `session/cancel`.
    Cancel,
    /// `$/cancel_request` for the request with this (raw) id.
    CancelRequest {
        id: String,
    },
    SetMode {
        id: Box<RawValue>,
        mode: String,
    },
    SetConfig {
        id: Box<RawValue>,
        config_id: String,
        value: String,
    },
    Close {
        id: Box<RawValue>,
    },
    /// The client created the terminal of this tool call.
    TerminalStarted {
        tool_call_id: String,
        terminal_id: String,
    },
    /// The client is gone (abort: the server is stopping).
    Shutdown {
        abort: bool,
    },
    /// `session/resume` of this session while it is open: answered with its state.
    Resumed {
        id: Box<RawValue>,
    },
    /// Put the session to sleep if it is idle and stored: its agent shuts
    /// down and the answer is the mode to wake it with; None if it is busy
    /// (or lives in memory only).
    Sleep {
        answer: tokio::sync::oneshot::Sender<Option<ApprovalMode>>,
    },
}

/// How the session was opened, and the request to answer once it is ready.
pub enum Opening {
    /// `session/new`: answered with the id, modes and options.
    New(Box<RawValue>),
    /// `session/load`: the conversation is replayed, then answered.
    Load(Box<RawValue>),
    /// `session/resume`: answered without a replay.
    Resume(Box<RawValue>),
    /// `session/fork`: answered with the new session's id.
    Fork(Box<RawValue>),
    /// Woken from sleep by a request for it: nothing to answer, nothing to
    /// announce; its approval mode comes back.
    Wake(ApprovalMode),
}

/// A reply the task waits for, and what to do with it.
enum Purpose {
    Prompt(Box<RawValue>),
    /// Answer the request with `{}` (or the error).
    Ack(Box<RawValue>),
    /// Answer with the config options once set.
    Config(Box<RawValue>),
    /// `session/close`: `{}` once the agent is down, however it went down.
    Closed(Box<RawValue>),
    Ignore,
}

struct ToolState {
    name: String,
    args: Value,
    started: bool,
}

/// The session task.
pub struct Session {
    id: String,
    cwd: PathBuf,
    handle: AgentHandle,
    outputs: mpsc::Receiver<Output>,
    shared: Arc<Shared>,
    next_tag: u64,
    waiting: HashMap<u64, Purpose>,
    prompts: Vec<Box<RawValue>>,
    cancelled: bool,
    choices: Choices,
    tools: HashMap<String, ToolState>,
    terminals: HashMap<String, String>,
    last_stop: Option<StopReason>,
    last_error: Option<String>,
    message_id: u64,
    cost: f64,
    usage: Option<(u64, u64)>,
    /// The session is stored in a file (it can sleep and be woken).
    stored: bool,
}

impl Session {
    pub fn new(
        id: String,
        cwd: PathBuf,
        handle: AgentHandle,
        outputs: mpsc::Receiver<Output>,
        shared: Arc<Shared>,
    ) -> Self {
        Session {
            id,
            cwd,
            handle,
            outputs,
            shared,
            next_tag: 1,
            waiting: HashMap::new(),
            prompts: Vec::new(),
            cancelled: false,
            choices: Choices::default(),
            tools: HashMap::new(),
            terminals: HashMap::new(),
            last_stop: None,
            last_error: None,
            message_id: 0,
            cost: 0.0,
            usage: None,
            stored: false,
        }
    }

    async fn send(&self, bytes: Vec<u8>) {
        self.shared.send(bytes).await;
    }

    async fn update(&self, update: acp::SessionUpdate) {
        self.send(session_update(&self.id, update)).await;
    }

    async fn submit(&mut self, op: Op, purpose: Purpose) {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.waiting.insert(tag, purpose);
        if self.handle.submit(Some(tag), op).await.is_err()
            && let Some(purpose) = self.waiting.remove(&tag)
        {
            self.settle_purpose(purpose, Err(CoreError::internal("The session has ended"))).await;
        }
    }

    /// Submit `op` and wait for its reply, handling everything else meanwhile.
    async fn call(&mut self, op: Op) -> Result<Reply, CoreError> {
        let tag = self.next_tag;
        self.next_tag += 1;
        if self.handle.submit(Some(tag), op).await.is_err() {
            return Err(CoreError::internal("The session has ended"));
        }
        while let Some(output) = self.outputs.recv().await {
            match output {
                Output::Reply { tag: t, result } if t == tag => return result,
                other => self.output(other).await,
            }
        }
        Err(CoreError::internal("The session has ended"))
    }

    /// Start: learn the model and models, replay a loaded conversation,
    /// answer the opening request, announce the commands; then serve until
    /// the agent is gone (`ended` is dropped then).
    pub async fn run(mut self, opening: Opening, cmds: mpsc::Receiver<SessionCmd>, ended: DropGuard) {
        let _ended = ended;
        if let Ok(Reply::Models(models)) = self.call(Op::GetAvailableModels).await {
            self.choices.models = models;
        }
        if let Ok(Reply::State(state)) = self.call(Op::GetState).await {
            self.choices.model = state.model.map(std::sync::Arc::unwrap_or_clone);
            self.choices.thinking = Some(state.thinking_level);
            self.stored = state.session_file.is_some();
        }
        let options = self.choices.options();
        let modes = self.choices.modes();
        match opening {
            Opening::New(id) => {
                let result = acp::NewSessionResponse::new(self.id.clone()).modes(modes).config_options(options);
                self.send(response(&id, &result)).await;
            }
            Opening::Load(id) => {
                if let Ok(Reply::Messages(messages)) = self.call(Op::GetMessages).await {
                    for update in updates::replay(&messages, &self.cwd) {
                        self.update(update).await;
                    }
                }
                let result = acp::LoadSessionResponse::new().modes(modes).config_options(options);
                self.send(response(&id, &result)).await;
            }
            Opening::Resume(id) => {
                let result = acp::ResumeSessionResponse::new().modes(modes).config_options(options);
                self.send(response(&id, &result)).await;
            }
            Opening::Fork(id) => {
                let result = acp::ForkSessionResponse::new(self.id.clone()).modes(modes).config_options(options);
                self.send(response(&id, &result)).await;
            }
            Opening::Wake(mode) => {
                if mode != self.choices.mode {
                    self.choices.mode = mode;
                    self.submit(Op::SetApprovalMode { mode }, Purpose::Ignore).await;
                }
                return self.serve(cmds).await;
            }
        }
        if let Ok(Reply::Commands(commands)) = self.call(Op::GetCommands).await {
            let commands = commands
                .into_iter()
                .map(|c| {
                    let description = c.description.unwrap_or_else(|| c.source.as_str().to_string());
                    acp::AvailableCommand::new(c.name, description).input(acp::AvailableCommandInput::Unstructured(
                        acp::UnstructuredCommandInput::new("arguments"),
                    ))
                })
                .collect();
            self.update(acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(commands))).await;
        }
        self.serve(cmds).await;
    }

    /// Serve the connection's commands and the agent's outputs until the agent is gone.
    async fn serve(mut self, mut cmds: mpsc::Receiver<SessionCmd>) {
        let mut cmds_open = true;
        loop {
            tokio::select! {
                output = self.outputs.recv() => match output {
                    Some(output) => self.output(output).await,
                    None => break,
                },
                cmd = cmds.recv(), if cmds_open => match cmd {
                    Some(cmd) => self.command(cmd).await,
                    None => {
                        cmds_open = false;
                        let _ = self.handle.submit(None, Op::Shutdown { abort: false }).await;
                    }
                },
            }
        }
        // The agent is gone: requests still waiting get their answer.
        for id in std::mem::take(&mut self.prompts) {
            self.send(response(&id, &acp::PromptResponse::new(acp::StopReason::Cancelled))).await;
        }
        let mut waiting: Vec<(u64, Purpose)> = self.waiting.drain().collect();
        waiting.sort_by_key(|(tag, _)| *tag);
        for (_, purpose) in waiting {
            self.settle_purpose(purpose, Err(CoreError::internal("The session has ended"))).await;
        }
        // So do the requests that were still queued for it.
        cmds.close();
        while let Some(cmd) = cmds.recv().await {
            let ended = || internal("The session has ended");
            match cmd {
                SessionCmd::Prompt { id, .. }
                | SessionCmd::SetMode { id, .. }
                | SessionCmd::SetConfig { id, .. }
                | SessionCmd::Resumed { id } => self.send(error_response(&id, &ended())).await,
                SessionCmd::Close { id } => self.send(response(&id, &serde_json::json!({}))).await,
                SessionCmd::Sleep { answer } => {
                    let _ = answer.send(None);
                }
                SessionCmd::Cancel
                | SessionCmd::CancelRequest { .. }
                | SessionCmd::TerminalStarted { .. }
                | SessionCmd::Shutdown { .. } => {}
            }
        }
    }

    async fn command(&mut self, cmd: SessionCmd) {
        match cmd {
            SessionCmd::Prompt { id, request } => {
                let (message, images) = updates::prompt_message(&request.prompt);
                let streaming_behavior = (!self.prompts.is_empty()).then_some(StreamingBehavior::FollowUp);
                self.submit(Op::Prompt { message, images, streaming_behavior }, Purpose::Prompt(id)).await;
            }
            SessionCmd::Cancel => self.cancel().await,
            SessionCmd::CancelRequest { id } => {
                if self.prompts.iter().any(|p| p.get() == id) {
                    self.cancel().await;
                }
            }
            SessionCmd::SetMode { id, mode } => match ApprovalMode::parse(&mode) {
                Some(mode) => {
                    self.choices.mode = mode;
                    self.submit(Op::SetApprovalMode { mode }, Purpose::Ack(id)).await;
                }
                None => self.send(error_response(&id, &invalid_params(format!("unknown mode \"{mode}\"")))).await,
            },
            SessionCmd::SetConfig { id, config_id, value } => self.set_config(id, &config_id, value).await,
            SessionCmd::Close { id } => self.submit(Op::Shutdown { abort: true }, Purpose::Closed(id)).await,
            SessionCmd::TerminalStarted { tool_call_id, terminal_id } => {
                let content = vec![acp::ToolCallContent::Terminal(acp::Terminal::new(terminal_id.clone()))];
                self.terminals.insert(tool_call_id.clone(), terminal_id);
                let fields = acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress).content(content);
                if let Some(tool) = self.tools.get_mut(&tool_call_id) {
                    tool.started = true;
                }
                self.update(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(tool_call_id, fields))).await;
            }
            SessionCmd::Shutdown { abort } => {
                let _ = self.handle.submit(None, Op::Shutdown { abort }).await;
            }
            SessionCmd::Resumed { id } => {
                let result = acp::ResumeSessionResponse::new()
                    .modes(self.choices.modes())
                    .config_options(self.choices.options());
                self.send(response(&id, &result)).await;
            }
            SessionCmd::Sleep { answer } => {
                let idle = self.prompts.is_empty() && self.waiting.is_empty() && self.tools.is_empty();
                let asleep = (idle && self.stored).then_some(self.choices.mode);
                if answer.send(asleep).is_ok() && asleep.is_some() {
                    let _ = self.handle.submit(None, Op::Shutdown { abort: false }).await;
                }
            }
        }
    }

    async fn cancel(&mut self) {
        if !self.prompts.is_empty() {
            self.cancelled = true;
        }
        self.submit(Op::Abort, Purpose::Ignore).await;
    }

    async fn set_config(&mut self, id: Box<RawValue>, config_id: &str, value: String) {
        let op = match config_id {
            MODE => match ApprovalMode::parse(&value) {
                Some(mode) => {
                    self.choices.mode = mode;
                    Op::SetApprovalMode { mode }
                }
                None => {
                    return self.send(error_response(&id, &invalid_params(format!("unknown mode \"{value}\"")))).await;
                }
            },
            MODEL => {
                let (provider, model_id) = match value.split_once('/') {
                    Some((p, m)) => (Some(p.to_string()), m.to_string()),
                    None => (None, value),
                };
                Op::SetModel { provider, model_id }
            }
            THOUGHT_LEVEL => match value.parse() {
                Ok(level) => Op::SetThinkingLevel { level },
                Err(e) => return self.send(error_response(&id, &invalid_params(format!("{e}")))).await,
            },
            other => {
                return self
                    .send(error_response(&id, &invalid_params(format!("unknown config option \"{other}\""))))
                    .await;
            }
        };
        self.submit(op, Purpose::Config(id)).await;
    }

    async fn output(&mut self, output: Output) {
        match output {
            Output::Event(event) => self.event(event).await,
            Output::Reply { tag, result } => {
                if let Some(purpose) = self.waiting.remove(&tag) {
                    self.settle_purpose(purpose, result).await;
                }
            }
        }
    }

    async fn settle_purpose(&mut self, purpose: Purpose, result: Result<Reply, CoreError>) {
        match (purpose, result) {
            (Purpose::Prompt(id), Ok(Reply::Prompt(Disposition::Handled))) => {
                // An extension command took the prompt: no turn follows.
                if self.prompts.is_empty() {
                    self.send(response(&id, &acp::PromptResponse::new(acp::StopReason::EndTurn))).await;
                } else {
                    self.prompts.push(id);
                }
            }
            (Purpose::Prompt(id), Ok(_)) => {
                if self.prompts.is_empty() {
                    self.cancelled = false;
                    self.last_error = None;
                    self.last_stop = None;
                }
                self.prompts.push(id);
            }
            (Purpose::Ack(id), Ok(_)) | (Purpose::Closed(id), _) => {
                self.send(response(&id, &serde_json::json!({}))).await
            }
            (Purpose::Config(id), Ok(_)) => {
                let options = self.choices.options();
                self.send(response(&id, &acp::SetSessionConfigOptionResponse::new(options))).await;
            }
            (Purpose::Prompt(id) | Purpose::Ack(id) | Purpose::Config(id), Err(e)) => {
                self.send(error_response(&id, &core_error(&e))).await;
            }
            (Purpose::Ignore, _) => {}
        }
    }

    /// The turn is over: answer every prompt it served.
    async fn settled(&mut self, aborted: bool) {
        let prompts = std::mem::take(&mut self.prompts);
        if prompts.is_empty() {
            return;
        }
        let stop = if aborted || self.cancelled {
            Ok(acp::StopReason::Cancelled)
        } else {
            match (self.last_stop, &self.last_error) {
                (Some(StopReason::Length), _) => Ok(acp::StopReason::MaxTokens),
                (Some(StopReason::Error), Some(error)) => Err(internal(error.clone())),
                _ => Ok(acp::StopReason::EndTurn),
            }
        };
        self.cancelled = false;
        for id in prompts {
            match &stop {
                Ok(reason) => self.send(response(&id, &acp::PromptResponse::new(*reason))).await,
                Err(error) => self.send(error_response(&id, error)).await,
            }
        }
    }

    async fn config_changed(&self) {
        let update = acp::ConfigOptionUpdate::new(self.choices.options());
        self.update(acp::SessionUpdate::ConfigOptionUpdate(update)).await;
    }

    async fn usage_update(&self) {
        if let Some((used, size)) = self.usage {
            let mut update = acp::UsageUpdate::new(used, size);
            if self.cost > 0.0 {
                update = update.cost(acp::Cost::new(self.cost, "USD"));
            }
            self.update(acp::SessionUpdate::UsageUpdate(update)).await;
        }
    }

    async fn event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => {
                if let AgentMessage::Assistant(_) = *message {
                    self.message_id += 1;
                }
            }
            AgentEvent::MessageUpdate { event, .. } => {
                let (text, thought) = match event {
                    AssistantStreamEvent::TextDelta { delta, .. } => (delta, false),
                    AssistantStreamEvent::ThinkingDelta { delta, .. } => (delta, true),
                    _ => return,
                };
                let block = acp::ContentBlock::Text(acp::TextContent::new(text));
                let chunk = acp::ContentChunk::new(block)
                    .message_id(acp::MessageId::new(format!("{}-{}", self.id, self.message_id)));
                let update = if thought {
                    acp::SessionUpdate::AgentThoughtChunk(chunk)
                } else {
                    acp::SessionUpdate::AgentMessageChunk(chunk)
                };
                self.update(update).await;
            }
            AgentEvent::MessageEnd { message } => {
                if let AgentMessage::Assistant(a) = *message {
                    self.last_stop = Some(a.stop_reason);
                    if a.stop_reason == StopReason::Error {
                        self.last_error = a.error_message.or(self.last_error.take());
                    }
                }
            }
            AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args, .. } => {
                let call = tool_call(&tool_call_id, &tool_name, &args, &self.cwd);
                self.tools.insert(tool_call_id, ToolState { name: tool_name, args: *args, started: false });
                self.update(acp::SessionUpdate::ToolCall(call)).await;
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, partial_result, .. } => {
                let Some(tool) = self.tools.get_mut(&tool_call_id) else { return };
                tool.started = true;
                let content: Vec<acp::ToolCallContent> = partial_result
                    .content
                    .iter()
                    .filter_map(updates::content_block)
                    .map(|c| acp::ToolCallContent::Content(acp::Content::new(c)))
                    .collect();
                let mut fields = acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress);
                if !content.is_empty() && !self.terminals.contains_key(&tool_call_id) {
                    fields = fields.content(content);
                }
                self.update(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(tool_call_id, fields))).await;
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, tool_name, result, is_error, .. } => {
                let (name, args) = match self.tools.remove(&tool_call_id) {
                    Some(t) => (t.name, t.args),
                    None => (tool_name, Value::Null),
                };
                let terminal = self.terminals.remove(&tool_call_id);
                let fields = tool_result(
                    &name,
                    &args,
                    &result.content,
                    result.details.as_ref(),
                    is_error,
                    &self.cwd,
                    terminal.as_deref(),
                );
                self.update(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(tool_call_id, fields))).await;
            }
            AgentEvent::AgentSettled { aborted, usage } => {
                self.cost += usage.cost.total;
                self.usage_update().await;
                self.settled(aborted).await;
            }
            AgentEvent::ContextUsage(usage) => {
                self.usage = Some((usage.tokens, usage.context_window));
                self.usage_update().await;
            }
            AgentEvent::RunError { error, will_retry: false } => self.last_error = Some(error.message),
            AgentEvent::ModelChanged { model, thinking_level } => {
                self.choices.model = Some(*model);
                self.choices.thinking = Some(thinking_level);
                self.config_changed().await;
            }
            AgentEvent::ThinkingLevelChanged { level } => {
                self.choices.thinking = Some(level);
                self.config_changed().await;
            }
            AgentEvent::SessionInfoChanged { name } => {
                let update = acp::SessionInfoUpdate::new().title(name).updated_at(chrono::Utc::now().to_rfc3339());
                self.update(acp::SessionUpdate::SessionInfoUpdate(update)).await;
            }
            AgentEvent::ExtensionUiRequest(request) if request.kind.is_dialog() => {
                // ACP has no dialogs for extensions: they get "dismissed".
                let op = Op::ExtensionUiResponse { id: Some(request.id), response: UiResponse::Cancelled };
                let _ = self.handle.submit(None, op).await;
            }
            AgentEvent::ClientRequest(request) => {
                if let Some(tool) = request.kind.tool_call_id().and_then(|id| self.tools.get(id))
                    && tool.started
                {
                    tracing::debug!("request {} for a running tool", request.id);
                }
                match outbound(&self.id, &request.kind, &self.cwd) {
                    Some((method, params, expect)) => {
                        let sent = Sent { session_id: self.id.clone(), core_id: request.id, expect };
                        let wire_id = self.shared.outbound(sent);
                        self.send(wire::request(wire_id, method, &params)).await;
                    }
                    None => {
                        let op = Op::ClientResponse {
                            id: request.id,
                            result: Err("ACP clients do not run pi's client tools".into()),
                        };
                        let _ = self.handle.submit(None, op).await;
                    }
                }
            }
            AgentEvent::ClientRequestEnded { id } => {
                if let Some(wire_id) = self.shared.forget(&id) {
                    let params = acp::CancelRequestNotification::new(acp::RequestId::Number(wire_id as i64));
                    self.send(wire::notification("$/cancel_request", &params)).await;
                }
            }
            _ => {}
        }
    }
}

/// A core error as an ACP error: bad input is `-32602`, the rest `-32603`.
pub fn core_error(e: &CoreError) -> acp::Error {
    use pi_core::error::ErrorKind;
    match e.kind {
        ErrorKind::InvalidParams => invalid_params(e.message.clone()),
        ErrorKind::NotFound => acp::Error::resource_not_found(None).data(Value::String(e.message.clone())),
        _ => internal(e.message.clone()),
    }
}
