//! Starting a run: a prompt starts one or joins a queue, `abort` ends
//! what runs, and a run is set up (model, tools, context) and spawned.

use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::agent::internal::QueueKind;
use crate::agent::run::{RunSetup, run_session};
use crate::agent::state::RunState;
use crate::error::CoreError;
use crate::message::{AgentMessage, ImageContent};
use crate::op::{Disposition, Reply, RequestTag, StreamingBehavior};

impl Agent {
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
            (Some(_), None) => crate::agent::virtual_route::unrouted(String::new()),
            (None, None) => return,
        };
        initial.extend(self.ext.take_next_turn());
        let cancel = CancellationToken::new();
        let retry_cancel = CancellationToken::new();
        let run_id = self.activity.begin_run(cancel.clone(), retry_cancel.clone());
        self.sync_mcp_activation();
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
            block_images: self.prefs.settings().block_images,
            prompt_options: self.ext.handle().listens("before_agent_start").then(|| self.run_prompt_options()),
            sections: self.prompt_sections(),
            extra_sections: Vec::new(),
            forced_prompt: None,
            tools,
            tool_specs,
            indirect: self.toolbox.indirect(),
            active: self.toolbox.shared_active_names(),
            tool_ctx: self.tool_context(),
            initial,
            retry: self.prefs.settings().retry,
            thinking_budgets: self.prefs.settings().thinking_budgets,
            retry_enabled: self.prefs.retry_flag(),
            extensions: self.ext.handle().clone(),
            tools_version,
            tools_seen,
            mcp: Some(self.mcp.clone()),
            reach: self.reach(),
            models: self.reach().codemode.then(|| std::sync::Arc::new(self.models.models_host())),
            router,
        };
        tokio::spawn(run_session(setup));
    }

    /// The router of the selected model, when it is an extension's virtual model.
    pub(super) fn virtual_router(&self) -> Option<crate::agent::virtual_route::VirtualRouter> {
        use crate::agent::virtual_route::VirtualRouter;
        let model = self.models.model();
        if !crate::config::models::is_virtual(model) {
            return None;
        }
        let Some(owner) = self.ext.virtual_model_owner(&model.provider, &model.id) else {
            // Not registered (any more): the request ends with pi's error.
            return Some(VirtualRouter::unregistered(model.clone(), self.models.registry().clone()));
        };
        let (registry, providers) = (self.models.registry().clone(), self.models.providers().clone());
        Some(VirtualRouter::new(owner, model.clone(), self.models.thinking(), registry, providers))
    }
}
