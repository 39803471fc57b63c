//! Every op, in one exhaustive match, after its [`route`]: what the
//! extensions do with it first, whether it waits or is refused, then its handler.

use super::Agent;
use crate::agent::Output;
use crate::agent::internal::QueueKind;
use crate::agent::route::{Gate, Policy, Route, route};
use crate::agent::state::{AfterSettled, Hold, Pending};
use crate::error::CoreError;
use crate::op::{Op, Reply, RequestTag, TreeWithLeaf};

/// What [`Agent::answer_at_once`] did with an op.
pub(super) enum AtOnce {
    /// Answered: the reply to send, if any.
    Answered(Option<Output>),
    /// Not an op answered at once: `handle_op` takes it.
    NotAtOnce,
}

impl Agent {
    /// Handle one op: [`route`] decides whether it waits for the extensions,
    /// goes through them, waits for the run or compaction, is refused, or
    /// goes to its handler ([`Agent::dispatch`]).
    pub(super) async fn handle_op(&mut self, pending: Pending) {
        if let Op::Shutdown { abort } = pending.op {
            self.client_leaving(abort).await;
        }
        let gate = Gate { open: !self.ext.gated(), accepted: pending.accepted };
        let (pending, policy) = match route(&pending.op, &self.activity, gate) {
            Route::AfterExtensions => return self.activity.hold(Hold::Extensions, pending),
            Route::AfterSettled => return self.activity.defer_until_settled(AfterSettled::Op(pending)),
            Route::ThroughExtensions(policy) => {
                let Some(pending) = self.through_extensions(pending).await else { return };
                (pending, policy)
            }
            Route::Direct(policy) => (pending, policy),
        };
        match policy {
            Policy::Now => self.dispatch(pending).await,
            Policy::AfterActivity => {
                self.activity.cancel_work();
                self.activity.hold(Hold::Activity, pending);
            }
            Policy::Refused(refusal) => self.reply(pending.tag, Err(refusal.error())).await,
        }
    }

    /// A `get_state` whose route leads straight to its handler (the
    /// extensions pass it on as it is), answered here, with no
    /// [`Agent::handle_op`] future (a large one: it holds the state of
    /// every handler) made and polled through `through_extensions` and
    /// `dispatch` for it: a burst of piped `get_state` costs little more
    /// than its snapshots. [`AtOnce::Answered`] with the reply to send
    /// (none without a tag, or when an extension waits for it); any other op
    /// is [`AtOnce::NotAtOnce`]: it goes to `handle_op`.
    pub(super) fn answer_at_once(&mut self, tag: Option<RequestTag>, op: &Op) -> AtOnce {
        if !matches!(op, Op::GetState) {
            return AtOnce::NotAtOnce;
        }
        let gate = Gate { open: !self.ext.gated(), accepted: false };
        if route(op, &self.activity, gate) != Route::ThroughExtensions(Policy::Now) {
            return AtOnce::NotAtOnce;
        }
        let Some(tag) = tag else { return AtOnce::Answered(None) };
        AtOnce::Answered(self.reply_output(tag, Ok(Reply::State(Box::new(self.snapshot())))))
    }

    /// Every op's handler, in one exhaustive match.
    async fn dispatch(&mut self, pending: Pending) {
        let tag = pending.tag;
        // A login or logout since the last op (by pi too) counts from now on.
        // The state and the messages do not depend on the stored logins: they
        // leave the check (a `stat` of auth.json, ~12% of a `get_state`) to the next op.
        if !matches!(pending.op, Op::GetState | Op::GetMessages) {
            self.models.sync_logins(self.workspace.agent_dir());
        }
        // A model or thinking level change is answered once the extensions had it (selection_events.rs).
        // Later ops wait for a thinking level's answer, not for a model's (pi answers them meanwhile).
        let holds_later_ops = matches!(pending.op, Op::SetThinkingLevel { .. } | Op::CycleThinkingLevel);
        let selects = matches!(
            pending.op,
            Op::SetModel { .. } | Op::CycleModel | Op::SetThinkingLevel { .. } | Op::CycleThinkingLevel
        );
        // Ops that answer themselves (now or later) return; the others give their answer.
        let result = match pending.op {
            Op::Prompt { message, images, streaming_behavior } => {
                return self.prompt(tag, message, images, streaming_behavior).await;
            }
            Op::Steer { message, images } => return self.enqueue(tag, QueueKind::Steering, message, images).await,
            Op::FollowUp { message, images } => return self.enqueue(tag, QueueKind::FollowUp, message, images).await,
            Op::SendUserMessage { message, images } => {
                return if self.activity.is_running() {
                    self.enqueue(tag, QueueKind::Steering, message, images).await
                } else {
                    self.prompt(tag, message, images, None).await
                };
            }
            Op::Abort => return self.abort(tag).await,
            Op::AbortRetry => {
                if self.activity.abort_retry_wait() {
                    return self.activity.ack_at_end(tag);
                }
                Ok(Reply::Ack)
            }
            Op::Compact { custom_instructions } => {
                return self.start_manual_compaction(tag, custom_instructions).await;
            }
            Op::Bash { command, exclude_from_context } => return self.bash(tag, command, exclude_from_context).await,
            Op::AbortBash => {
                self.activity.cancel_bash();
                Ok(Reply::Ack)
            }
            Op::Shutdown { abort } => {
                if abort {
                    self.activity.cancel_work();
                    self.activity.cancel_bash();
                }
                // Answered once stopped.
                return self.activity.request_shutdown(tag);
            }
            Op::Unload => {
                if self.is_idle() && !self.activity.is_shutting_down() && self.ext.handle().ui().is_empty() {
                    return self.activity.request_shutdown(tag);
                }
                Err(CoreError::busy("The session is busy"))
            }
            Op::ExtensionUiResponse { id, response } if self.approval_dialog_answer(id.as_deref(), &response) => {
                Ok(Reply::Ack)
            }
            Op::ExtensionUiResponse { id, response } => return self.ui_response(tag, id, response).await,
            Op::ClientResponse { id, result } => return self.client_response(tag, id, result).await,
            Op::SetApprovalMode { mode } => return self.set_approval_mode(tag, mode).await,
            Op::Barrier => Ok(Reply::Ack),
            Op::Login(request) => return self.login(tag, request),
            Op::PendingRequests => {
                // Extension dialogs and the requests to the client (approvals, files, terminals).
                let mut ids = self.ext.handle().ui().ids();
                ids.extend(self.client.pending_ids());
                Ok(Reply::PendingRequests(ids))
            }
            // State and settings (settings.rs).
            Op::GetState => Ok(Reply::State(Box::new(self.snapshot()))),
            Op::GetMessages => Ok(Reply::Messages(self.session.messages().clone())),
            Op::SetModel { provider, model_id } => self.set_model(provider, model_id).await,
            Op::CycleModel => self.cycle_model().await,
            Op::GetAvailableModels => Ok(Reply::Models(self.models.registry().available())),
            Op::SetThinkingLevel { level } => {
                self.change_thinking(level).await;
                Ok(Reply::Ack)
            }
            Op::CycleThinkingLevel => Ok(Reply::CycleThinkingLevel(self.cycle_thinking_level().await)),
            Op::GetAvailableThinkingLevels => Ok(Reply::ThinkingLevels(self.models.model().thinking_levels())),
            Op::SetSteeringMode { mode } => Ok(self.set_queue_mode(QueueKind::Steering, mode)),
            Op::SetFollowUpMode { mode } => Ok(self.set_queue_mode(QueueKind::FollowUp, mode)),
            Op::SetAutoCompaction { enabled } => Ok(self.set_auto_compaction(enabled)),
            Op::SetAutoRetry { enabled } => Ok(self.set_auto_retry(enabled)),
            Op::GetSessionStats => Ok(Reply::SessionStats(Box::new(self.session_stats()))),
            Op::GetLastAssistantText => Ok(Reply::LastAssistantText(self.last_assistant_text())),
            Op::SetSessionName { name } => self.set_session_name(name).await,
            Op::GetCommands => Ok(Reply::Commands(self.command_list())),
            Op::ClearQueue => Ok(self.clear_queues().await),
            Op::SetActiveTools { tools } => self.set_active_tools(tools),
            Op::Initialize(params) => self.initialize(params).await,
            // The session tree (session_tree.rs).
            // Each answers once the old instances' `session_shutdown` ran (switch_after_shutdown.rs).
            Op::NewSession { parent_session } => {
                let setup = self.ext.session_op_replies().setup_caller(tag);
                let made = self.new_session(parent_session, setup);
                return self.switch_after_shutdown(tag, made).await;
            }
            Op::SwitchSession { session_path, .. } => {
                let made = self.switch_session(&session_path);
                return self.switch_after_shutdown(tag, made).await;
            }
            Op::ResumeSession { reference, .. } => {
                let made = self.resume_session(&reference);
                return self.switch_after_shutdown(tag, made).await;
            }
            Op::Fork { entry_id } => {
                let made = self.fork(&entry_id);
                return self.switch_after_shutdown(tag, made).await;
            }
            Op::Clone => {
                let at = self.ext.session_op_replies().fork_target(tag);
                let made = self.clone_session(at.as_deref());
                return self.switch_after_shutdown(tag, made).await;
            }
            Op::GetForkMessages => Ok(Reply::ForkMessages(self.session.record().fork_messages())),
            Op::GetEntries { since } => self.entries(since.as_deref()).map(Reply::Entries),
            Op::GetTree => Ok(Reply::Tree(TreeWithLeaf {
                tree: self.session.record().tree(),
                leaf_id: self.session.record().leaf_id().map(str::to_string),
            })),
            Op::ExportHtml { output_path } => self.export_html(output_path.as_deref()).map(Reply::ExportHtml),
        };
        if selects {
            self.reply_after_selections(tag, result, holds_later_ops).await;
        } else {
            self.reply(tag, result).await;
        }
    }
}
