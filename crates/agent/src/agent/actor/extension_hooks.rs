//! The agent side of prompt templates, skills and extensions: expanding
//! `/template` and `/skill:name` input, running extension commands from
//! `prompt`, refusing them in `steer`/`follow_up`, `get_commands`, the
//! `session_before_switch` / `session_before_fork` hooks, extension tools,
//! and the signals extensions send.
//!
//! The actor never waits on an extension: commands and hooks run in tasks
//! and report back through [`Internal::Extension`]. While extensions start
//! and while a session hook decides, later ops are held (in arrival order)
//! and replayed afterwards; dialog answers always pass.

use serde_json::{Value, json};

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use crate::agent::route::Refusal;
use crate::agent::state::{HeldMessage, Hold, Pending};
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::extensions::hooks::{InputOutcome, InputSource};
use crate::extensions::{CallError, ExtRequest, HostSignal, RegisteredCommand, Routed};
use crate::message::AgentMessage;
use crate::op::{
    CommandInfo, CommandSource, Disposition, Forked, Op, Reply, RequestTag, StreamingBehavior, Switched, UiResponse,
};
use crate::resources::SkillReader;

/// The text of `Extension command "/x" cannot be queued…` (pi's wording).
fn cannot_queue(invocation: &str) -> String {
    format!(
        "Extension command \"/{invocation}\" cannot be queued. Use prompt() or execute the command when not streaming."
    )
}

impl Agent {
    /// A `shutdown`: the client is gone, so nobody can answer a dialog (or
    /// any request) any more; with `abort`, the ops held for the extensions
    /// are refused.
    pub(super) async fn client_leaving(&mut self, abort: bool) {
        self.ext.handle().ui().close();
        self.client_gone();
        if abort {
            for held in self.activity.drain_ops(Hold::Extensions) {
                self.reply(held.tag, Err(Refusal::ShuttingDown.error())).await;
            }
        }
    }

    /// The extensions' part of an op: run extension commands, expand
    /// templates and skills, answer `get_commands`, start the `input` and
    /// session hooks. Returns the op to handle as usual, or `None` when it
    /// was taken care of.
    pub(super) async fn through_extensions(&mut self, pending: Pending) -> Option<Pending> {
        let tag = pending.tag;
        let op = match pending.op {
            Op::Prompt { message, images, streaming_behavior } => {
                if let Some((command, args)) = self.ext.handle().find_command(&message) {
                    self.run_extension_command(tag, command, args);
                    return None;
                }
                if let Some(args) = self.builtin_invocation(&message) {
                    self.run_builtin_command(tag, args.to_string());
                    return None;
                }
                let Op::Prompt { message, images, streaming_behavior } =
                    self.input_gate(tag, Op::Prompt { message, images, streaming_behavior }, pending.inputs_seen)?
                else {
                    return None;
                };
                let message = self.expand_resources(message).await;
                Op::Prompt { message, images, streaming_behavior }
            }
            op @ (Op::Steer { .. } | Op::FollowUp { .. }) => {
                if let Op::Steer { message, .. } | Op::FollowUp { message, .. } = &op {
                    self.refuse_command(tag, message).await?;
                }
                // The gate gives the op back as it came, or holds it for the hooks.
                let mut op = self.input_gate(tag, op, pending.inputs_seen)?;
                if let Op::Steer { message, .. } | Op::FollowUp { message, .. } = &mut op {
                    *message = self.expand_resources(std::mem::take(message)).await;
                }
                op
            }
            Op::GetCommands => {
                self.reply(tag, Ok(Reply::Commands(self.command_list()))).await;
                return None;
            }
            op @ (Op::NewSession { .. }
            | Op::SwitchSession { .. }
            | Op::ResumeSession { .. }
            | Op::Fork { .. }
            | Op::Clone) => return self.session_hook(Pending { op, ..pending }),
            other => other,
        };
        Some(Pending { op, ..pending })
    }

    /// `None` (after refusing it) when `message` invokes an extension command.
    async fn refuse_command(&mut self, tag: Option<RequestTag>, message: &str) -> Option<()> {
        if let Some((command, _)) = self.ext.handle().find_command(message) {
            self.reply(tag, Err(CoreError::invalid("message", cannot_queue(&command.invocation)))).await;
            return None;
        }
        if self.builtin_invocation(message).is_some() {
            self.reply(tag, Err(CoreError::invalid("message", cannot_queue(crate::mcp::command::NAME)))).await;
            return None;
        }
        Some(())
    }

    /// Ask the `input` hooks about a prompt, steer or follow-up (later ops
    /// go on meanwhile, as in pi); `Some(op)` when none listens or they
    /// already decided.
    fn input_gate(&mut self, tag: Option<RequestTag>, op: Op, seen: bool) -> Option<Op> {
        if seen || !self.ext.handle().listens("input") {
            return Some(op);
        }
        let streaming = |b: StreamingBehavior| match b {
            StreamingBehavior::Steer => "steer",
            StreamingBehavior::FollowUp => "followUp",
        };
        let (text, images, behavior) = match &op {
            Op::Prompt { message, images, streaming_behavior } => {
                (message.clone(), images.clone(), streaming_behavior.map(streaming))
            }
            Op::Steer { message, images } => (message.clone(), images.clone(), Some("steer")),
            Op::FollowUp { message, images } => (message.clone(), images.clone(), Some("followUp")),
            _ => return Some(op),
        };
        // As pi, the hooks hear how the input is queued only while a run streams.
        let behavior = behavior.filter(|_| self.activity.is_running());
        // Later ops go on meanwhile (pi handles each line as it comes).
        self.ext.command_started();
        let prompt = matches!(op, Op::Prompt { .. });
        let decision = self.ext.input_asked(prompt);
        let internal = self.channels.internal();
        let handle = self.ext.handle().clone();
        tokio::spawn(async move {
            let op = match handle.input(text, images, InputSource::Rpc, behavior).await {
                InputOutcome::Handled => None,
                InputOutcome::Continue { text, images } => Some(match op {
                    Op::Prompt { streaming_behavior, .. } => Op::Prompt { message: text, images, streaming_behavior },
                    Op::Steer { .. } => Op::Steer { message: text, images },
                    _ => Op::FollowUp { message: text, images },
                }),
            };
            let _ =
                internal.send(Internal::Extension(Box::new(ExtSignal::InputDone { tag, op, decision, prompt }))).await;
        });
        None
    }

    /// Ask the `input` hooks about an extension's `sendUserMessage`
    /// (`source: "extension"`); the message is delivered once they decided.
    pub(super) fn user_message_input_gate(&mut self, id: usize, params: &Value) -> bool {
        if !self.ext.handle().listens("input") {
            return false;
        }
        let Ok((text, images)) = super::extension_requests::user_content(params) else { return false };
        let behavior = match params.get("deliverAs").and_then(Value::as_str) {
            Some("steer") if self.activity.is_running() => Some("steer"),
            Some("followUp") if self.activity.is_running() => Some("followUp"),
            _ => None,
        };
        let decision = self.ext.input_asked(true);
        let internal = self.channels.internal();
        let handle = self.ext.handle().clone();
        let mut params = params.clone();
        tokio::spawn(async move {
            let params = match handle.input(text, images, InputSource::Extension, behavior).await {
                InputOutcome::Handled => None,
                InputOutcome::Continue { text, images } => {
                    let mut content = vec![json!({"type": "text", "text": text})];
                    content.extend(images.iter().map(|i| json!(crate::message::ContentBlock::Image(i.clone()))));
                    params["content"] = Value::Array(content);
                    Some(params)
                }
            };
            let done = ExtSignal::UserMessageInputDone { id, params, decision };
            let _ = internal.send(Internal::Extension(Box::new(done))).await;
        });
        true
    }

    /// `/skill:name args` then `/template args` (pi's order); a skill file
    /// that cannot be read is reported and the text sent as typed.
    async fn expand_resources(&mut self, text: String) -> String {
        if !text.starts_with('/') {
            return text;
        }
        let expanded = crate::resources::expand_input(&text, self.ext.resources());
        if let Some(e) = expanded.error {
            self.emit(AgentEvent::ExtensionError {
                extension_path: e.path.display().to_string(),
                event: "skill_expansion".to_string(),
                error: e.message,
            })
            .await;
        }
        expanded.text
    }

    /// `get_commands`: built-in commands (pi's come from extensions loaded
    /// first), extension commands, then templates, then skills.
    pub(super) fn command_list(&self) -> Vec<CommandInfo> {
        // pi lists extension commands, then its built-in ones, then templates and skills.
        let mut list: Vec<CommandInfo> = self
            .ext
            .handle()
            .commands()
            .into_iter()
            .map(|c| {
                let path = c.extension.path_string();
                CommandInfo {
                    name: c.invocation,
                    description: c.description,
                    source: CommandSource::Extension,
                    location: None,
                    source_info: Some(crate::resources::extension_source_info(
                        &path,
                        self.workspace.agent_dir(),
                        self.workspace.cwd(),
                    )),
                    path: Some(path),
                }
            })
            .collect();
        for builtin in self.builtin_commands() {
            let at = self.builtin_command_index(&list, &builtin);
            list.insert(at, builtin);
        }
        list.extend(crate::resources::commands(self.ext.resources()));
        list
    }

    /// The skills block of the system prompt: only when `read` or `bash` is
    /// active (the tools the model could load a skill file with), as in pi.
    pub(super) fn skills_section(&self) -> Option<String> {
        let active = |name: &str| self.toolbox.is_active(name);
        // codemode's `mode: "only"` may hide the readers: the section then names no tool (pi's `indirect`).
        let hidden = self.codemode_hidden_tools();
        let declared = |name: &str| active(name) && !hidden.iter().any(|h| h == name);
        let reader = if declared("read") {
            SkillReader::Read
        } else if declared("bash") {
            SkillReader::Bash
        } else if active("read") || active("bash") {
            SkillReader::Indirect
        } else {
            return None;
        };
        crate::resources::skills_prompt_section_with(&self.ext.resources().skills, reader)
    }

    fn run_extension_command(&mut self, tag: Option<RequestTag>, command: RegisteredCommand, args: String) {
        self.ext.command_started();
        let internal = self.channels.internal();
        tokio::spawn(async move {
            let params = json!({"name": command.name, "args": args});
            let error = match command.extension.call("command", params, None).await {
                Err(CallError::Failed(e)) => Some(e),
                _ => None,
            };
            let done = ExtSignal::CommandDone { tag, invocation: command.invocation, error };
            let _ = internal.send(Internal::Extension(Box::new(done))).await;
        });
    }

    /// Ask `session_before_switch` / `session_before_fork` subscribers about
    /// a session op; `Some(op)` when none listens or they already allowed it.
    fn session_hook(&mut self, pending: Pending) -> Option<Pending> {
        if pending.allowed {
            return Some(pending);
        }
        let (method, params) = match &pending.op {
            Op::NewSession { .. } => ("session_before_switch", json!({"reason": "new"})),
            Op::SwitchSession { session_path, .. } => {
                ("session_before_switch", json!({"reason": "resume", "targetSessionFile": session_path}))
            }
            Op::ResumeSession { reference, .. } => {
                ("session_before_switch", json!({"reason": "resume", "targetSessionFile": reference}))
            }
            Op::Fork { entry_id } => ("session_before_fork", json!({"entryId": entry_id, "position": "before"})),
            Op::Clone => match self
                .ext
                .session_op_replies()
                .fork_target(pending.tag)
                .or_else(|| self.session.record().leaf_id().map(str::to_string))
            {
                Some(leaf) => ("session_before_fork", json!({"entryId": leaf, "position": "at"})),
                None => return Some(pending),
            },
            _ => return Some(pending),
        };
        let subscribers = self.ext.handle().subscribers(method);
        if subscribers.is_empty() {
            return Some(pending);
        }
        self.ext.hook_started();
        let internal = self.channels.internal();
        let mut params = params;
        if let Value::Object(obj) = &mut params {
            obj.insert("type".into(), Value::String(method.to_string()));
        }
        tokio::spawn(async move {
            let mut cancelled = false;
            for ext in subscribers {
                match ext.call(method, params.clone(), None).await {
                    Ok(v) if v.get("cancel").and_then(Value::as_bool) == Some(true) => {
                        cancelled = true;
                        break;
                    }
                    Ok(_) | Err(CallError::Dead(_) | CallError::Cancelled) => {}
                    Err(CallError::Failed(error)) => {
                        let event = AgentEvent::ExtensionError {
                            extension_path: ext.path_string(),
                            event: method.to_string(),
                            error,
                        };
                        let _ = internal.send(Internal::Event(Box::new(event))).await;
                    }
                }
            }
            let _ =
                internal.send(Internal::Extension(Box::new(ExtSignal::SessionHookDone { pending, cancelled }))).await;
        });
        None
    }

    /// Route a client's dialog answer. A tagged op (JSON-RPC request form)
    /// is answered: success, or not found when no open dialog matched.
    pub(super) async fn ui_response(&mut self, tag: Option<RequestTag>, id: Option<String>, response: UiResponse) {
        let routed = self.ext.handle().ui().resolve(id.as_deref(), response);
        let result = match (routed, id) {
            (Routed::Resolved, _) => Ok(Reply::Ack),
            (Routed::Ignored, Some(id)) => Err(CoreError::not_found(format!("No pending extension dialog: {id}"))),
            (Routed::Ignored, None) => Err(CoreError::invalid(
                "id",
                format!("An id is required: {} extension dialogs are pending", self.ext.handle().ui().len()),
            )),
        };
        self.reply(tag, result).await;
    }

    /// Pass an event the actor emits to subscribed extensions.
    pub(super) fn notify_extensions(&self, event: &AgentEvent) {
        self.ext.handle().notify(event);
    }

    /// Tell extensions a session became current (`reason`: new, resume,
    /// fork), replacing the one in the file `previous`. With `setup` (a command's `newSession({setup})`), that extension's
    /// host runs the setup once the new runtime is bound; every extension is
    /// told when it is done ([`Agent::extension_setup_done`]), as pi starts them all after it.
    pub(super) fn extensions_session_started(&mut self, reason: &str, previous: Option<String>, setup: Option<usize>) {
        // pi's new runtime: the start-up tools again, MCP's once the handlers ran.
        self.restart_active_tools();
        // Its MCP extension's first prompt waits for the `direct` servers again.
        self.mcp.session_started();
        let mut payload = self.session_start_payload(reason);
        if let Some(previous) = previous {
            payload["previousSessionFile"] = Value::String(previous);
        }
        if let Some(file) = self.session.record().file_path() {
            payload["sessionFile"] = Value::String(file.display().to_string());
        }
        let setup = setup.filter(|id| self.ext.handle().get(*id).is_some_and(|e| !e.is_dead()));
        if let Some(caller) = setup {
            self.ext.session_op_replies().hold_start(caller, payload.clone());
            // As pi's front ends, the client hears the new session from its setup's end on.
            self.channels.withhold_events(true);
        }
        self.replace_runtime(payload, setup);
    }

    /// A custom message sent during a run: it joins the conversation when the turn ends.
    pub(super) fn defer_custom_message(&mut self, message: AgentMessage) {
        self.activity.hold_message(HeldMessage::Custom(message));
    }

    /// Append an extension's custom message outside a run's turns (pi's
    /// `_appendCustomMessage`), with its `message_start`/`message_end` for
    /// the client only: as in pi, extension handlers of those events do not
    /// run for it, so none can replace it.
    pub(super) async fn append_and_announce(&mut self, message: AgentMessage) {
        self.append_message(message.clone());
        let message = Box::new(message);
        for event in [AgentEvent::MessageStart { message: message.clone() }, AgentEvent::MessageEnd { message }] {
            self.channels.send(crate::agent::Output::Event(event)).await;
        }
    }

    pub(super) async fn handle_extension_signal(&mut self, signal: ExtSignal) {
        match signal {
            ExtSignal::Host(HostSignal::Registered { id }) => {
                self.sync_extension_tools(id).await;
                self.sync_virtual_models(id).await;
                self.sync_providers(id).await;
                // A registration its start-up `session_start` handlers make keeps ops waiting.
                let greeting = self.ext.is_greeting(id);
                if greeting || self.greet_at_start(id) {
                    return;
                }
                self.extension_started(id).await;
            }
            ExtSignal::Greeted { id, found } => {
                if let Some(found) = found {
                    self.ext.hold_found_at_start(id, found);
                }
                self.extension_started(id).await;
            }
            ExtSignal::ResourcesFound { found, reply } => {
                for (path, found) in found {
                    self.add_found_resources_of(&path, &found);
                }
                match reply {
                    Some(reply) => self.ext.answer_reload(reply),
                    None => {
                        self.ext.discovery_done();
                        self.release_deferred().await;
                    }
                }
            }
            ExtSignal::ReloadPackagesResolved { resolved, reply } => match resolved {
                Some(resolved) => self.finish_reload(Some(*resolved), reply),
                None => {
                    let _ = reply.send(Err("reload: the settings' packages could not be resolved".to_string()));
                }
            },
            ExtSignal::SaidGoodbye => self.goodbye_said(),
            ExtSignal::ReloadShutDown { resolved, reply } => self.reload_after_shutdown(resolved.map(|r| *r), reply),
            ExtSignal::ReloadStarted { reply, added } => {
                // Those it loaded had their `session_start` in the turn: they have started.
                for id in added {
                    self.extension_started(id).await;
                }
                self.reload_started(reply);
            }
            ExtSignal::OldRuntimeShutDown(switch) => self.switch_now(*switch).await,
            ExtSignal::ReplacementStarted { reply } => {
                self.ext.restart_done();
                self.discover_after_replacement();
                self.release_deferred().await;
                if let Some(reply) = reply {
                    let _ = reply.send(Ok(Value::Null));
                }
            }
            ExtSignal::Host(HostSignal::Died { id, event, error }) => {
                self.extension_setup_done(id, None);
                let path = self.ext.handle().get(id).map(|e| e.path_string()).unwrap_or_default();
                self.emit(AgentEvent::ExtensionError { extension_path: path, event, error }).await;
                self.forget_extension(id);
                self.extension_started(id).await;
                self.begin_start_phase();
            }
            ExtSignal::Host(HostSignal::Error { path, event, error }) => {
                self.emit(AgentEvent::ExtensionError { extension_path: path, event, error }).await;
            }
            ExtSignal::Host(HostSignal::Event(event)) => self.emit(*event).await,
            ExtSignal::Host(HostSignal::Request { id, request: ExtRequest::SessionOp(p), reply }) => {
                self.extension_session_op(id, p, reply).await;
            }
            ExtSignal::Host(HostSignal::Request { id, request: ExtRequest::Models(p, cancel), reply }) => {
                let op = p.get("op").and_then(Value::as_str);
                if op == Some("login") {
                    self.start_extension_login(id, &p, cancel, reply);
                } else if op == Some("resolveModel") {
                    self.start_model_resolve(&p, cancel, reply);
                } else {
                    self.extension_models_call(&p, &cancel, reply);
                }
            }
            ExtSignal::Host(HostSignal::Request { id, request: ExtRequest::Mcp { method, params }, reply })
                if method == "mcpCommand" =>
            {
                self.sdk_session_mcp_command(id, &params, reply)
            }
            ExtSignal::Host(HostSignal::Request {
                id,
                request: ExtRequest::SessionMcp { method, params, cancel, updates },
                reply,
            }) => match method.as_str() {
                "mcpCallTool" => self.sdk_session_mcp_call(&params, cancel, updates, reply),
                _ => self.sdk_session_mcp_tools(id, &params, cancel, reply),
            },
            ExtSignal::Host(HostSignal::Request { request: ExtRequest::SetModel(p), reply, .. }) => {
                self.extension_set_model(&p, reply).await;
            }
            ExtSignal::Host(HostSignal::Request { id, request: ExtRequest::SetThinkingLevel(p), reply }) => {
                self.extension_set_thinking_level(id, &p, reply).await;
            }
            ExtSignal::Host(HostSignal::Request { id, request, reply }) => {
                let result = self.extension_request(id, request).await;
                let _ = reply.send(result);
            }
            ExtSignal::Host(HostSignal::ModelStream { id, params, cancel, reply }) => {
                self.start_model_stream(id, &params, cancel, reply);
            }
            ExtSignal::CommandDone { tag, invocation, error } => {
                self.ext.command_done();
                if let Some(error) = error {
                    let event = AgentEvent::ExtensionError {
                        extension_path: format!("command:{invocation}"),
                        event: "command".to_string(),
                        error,
                    };
                    self.emit(event).await;
                }
                self.reply(tag, Ok(Reply::Prompt(Disposition::Handled))).await;
            }
            ExtSignal::InputDone { tag, op, decision, prompt } => {
                self.ext.command_done();
                self.ext.input_decided(prompt);
                match op {
                    Some(op) => {
                        let pending = Pending { tag, op, allowed: false, accepted: true, inputs_seen: true };
                        self.handle_op(pending).await;
                    }
                    None => self.reply(tag, Ok(Reply::Prompt(Disposition::Handled))).await,
                }
                self.input_decided(decision).await;
                self.release_deferred().await;
            }
            ExtSignal::UserMessageInputDone { id, params, decision } => {
                self.ext.input_decided(true);
                if let Some(params) = params {
                    self.deliver_user_message(id, &params).await;
                }
                self.input_decided(decision).await;
            }
            ExtSignal::TreeHookDone { nav, decision } => self.finish_navigation(*nav, decision).await,
            ExtSignal::TreeSummaryDone { nav, decision, summary } => {
                self.summarized_navigation(*nav, decision, *summary).await
            }
            ExtSignal::SelectionsHandled { tag, result, held } => self.selections_handled(tag, result, held).await,
            ExtSignal::SessionHookDone { pending, cancelled } => {
                self.ext.hook_done();
                if cancelled {
                    let reply = match &pending.op {
                        Op::Fork { entry_id } => {
                            let text = self
                                .session
                                .record()
                                .fork_messages()
                                .into_iter()
                                .find(|m| &m.entry_id == entry_id)
                                .map(|m| m.text)
                                .unwrap_or_default();
                            Reply::Fork(Forked { text, cancelled: true })
                        }
                        _ => Reply::Switched(Switched::new(true)),
                    };
                    self.reply(pending.tag, Ok(reply)).await;
                } else {
                    self.handle_op(Pending { allowed: true, accepted: true, ..pending }).await;
                }
                self.release_deferred().await;
            }
        }
    }

    /// Extension `id` died or was unloaded: its tools, virtual models and
    /// providers go (a built-in tool or a provider it replaced comes back).
    pub(super) fn forget_extension(&mut self, id: usize) {
        for name in self.ext.take_tools_of(id) {
            self.remove_extension_tool(&name);
        }
        for (provider, model) in self.ext.replace_virtual_models(id, Vec::new()) {
            self.models.remove_virtual(&provider, &model);
        }
        for spec in self.ext.replace_providers(id, Vec::new()).iter().rev() {
            self.models.unregister_provider(spec);
        }
        self.ext.tools_changed();
    }

    /// The `session_start` event of this session with `reason`, as every
    /// path that starts or restarts extensions sends it.
    pub(super) fn session_start_payload(&self, reason: &str) -> Value {
        json!({"type": "session_start", "reason": reason, "sessionId": self.session.record().session_id()})
    }

    /// Give a starting extension its start-up `session_start`, then
    /// `resources_discover` when it listens. Ops keep waiting until it has
    /// answered both (pi awaits them before the first command) when it asked
    /// to be awaited (`awaitSessionStart`) or discovers resources: true then.
    pub(super) fn greet_extension(&mut self, id: usize) -> bool {
        if !self.ext.greet(id) {
            return false;
        }
        let Some(ext) = self.ext.handle().get(id) else { return false };
        let (greets, discovers) = (ext.subscribes("session_start"), ext.subscribes("resources_discover"));
        // One a reload loaded is greeted as pi's reload greets every
        // extension; `initial` tells the host there is no instance to replace.
        let reloaded = self.ext.is_loaded_by_reload(id);
        let reason = if reloaded { "reload" } else { "startup" };
        let mut payload = self.session_start_payload(reason);
        if reloaded {
            payload["initial"] = Value::Bool(true);
        }
        let awaited = greets && ext.registration().is_some_and(|r| r.await_session_start);
        if greets && !awaited {
            ext.send(&crate::extensions::protocol::event_message(payload.clone()));
        }
        if !awaited && !discovers {
            return false;
        }
        let internal = self.channels.internal();
        let discover = json!({"cwd": self.workspace.cwd(), "reason": reason});
        tokio::spawn(async move {
            // A failure was reported by the host (its handlers' errors) or as the extension's death.
            if awaited {
                let _ = ext.call("session_start", payload, None).await;
            }
            let found = if discovers { ext.call("resources_discover", discover, None).await.ok() } else { None };
            let _ = internal.send(Internal::Extension(Box::new(ExtSignal::Greeted { id, found }))).await;
        });
        true
    }

    /// An extension registered or died: once none is starting, what they
    /// found at start-up joins in load order, and held ops are replayed.
    async fn extension_started(&mut self, id: usize) {
        tracing::debug!("extension {id}: started");
        self.ext.started(id);
        for (id, found) in self.ext.take_found_at_start() {
            self.add_found_resources(id, &found);
        }
        self.ext.release_reload();
        self.release_deferred().await;
    }

    /// Replay held ops in order (each is held again if a new hook starts);
    /// they were accepted before any shutdown.
    pub(super) async fn release_deferred(&mut self) {
        if self.ext.gated() {
            return;
        }
        // The commands whose session op replaced the session go on.
        self.ext.session_op_replies().release_parked();
        self.sync_mcp_activation();
        self.finish_deferred_start();
        for (extension_path, error) in self.ext.take_flag_errors() {
            self.emit(AgentEvent::ExtensionError { extension_path, event: "flag".into(), error }).await;
        }
        let (_, held) = self.activity.release(Hold::Extensions);
        for pending in held {
            self.handle_op(Pending { accepted: true, ..pending }).await;
        }
    }

    /// The extensions started: the model `--model` names is chosen now (an
    /// extension may have registered it), and recorded in the session. One
    /// still unknown leaves the session on the model it started with.
    fn finish_deferred_start(&mut self) {
        let Some(start) = self.models.take_deferred() else { return };
        let started = !self.session.messages().is_empty();
        let settings = self.prefs.settings();
        let chosen = self.models.choose_for_session(settings, started, start.restored_model, start.restored_thinking);
        if let Err(e) = chosen {
            tracing::error!("--model: {}", e.message);
        }
        if let Err(e) = self.start_session_entries(start.session_name) {
            tracing::error!("cannot write session entry: {}", e.message);
        }
    }

    /// A registration (a virtual model, a provider) the registry refused:
    /// one `extension_error` for event `register`.
    pub(super) async fn registration_refused(&mut self, extension_path: String, error: String) {
        self.emit(AgentEvent::ExtensionError { extension_path, event: "register".into(), error }).await;
    }
}
