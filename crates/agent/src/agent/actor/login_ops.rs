//! `Op::Login`: a subscription login started by a client (the JSON-RPC
//! `login` method). The reply carries the sign-in URL or device code as soon
//! as the login has one; `LoginEnd` follows when it completes, and the
//! session's models then include the provider's.

use super::Agent;
use crate::agent::internal::{Internal, LoginMsg};
use crate::auth::background;
use crate::auth::oauth::Net;
use crate::error::{CoreError, ErrorKind};
use crate::event::AgentEvent;
use crate::op::{Reply, RequestTag};

impl Agent {
    pub(super) fn login(&mut self, tag: Option<RequestTag>, request: crate::auth::LoginRequest) {
        let path = crate::auth::auth_path(self.workspace.agent_dir());
        let emitter = self.channels.emitter();
        tokio::spawn(async move {
            let provider = request.provider.clone();
            let send = |msg| emitter.send(Internal::Login(Box::new(msg)));
            match background::start(path, request, Net::new()).await {
                Err(e) => {
                    let error = match e {
                        crate::auth::LoginError::UnknownProvider { .. } => {
                            CoreError::invalid("provider", e.to_string())
                        }
                        crate::auth::LoginError::UnknownMethod { .. } => CoreError::invalid("method", e.to_string()),
                        other => CoreError::new(ErrorKind::Model, other.to_string()),
                    };
                    send(LoginMsg::Started { tag, result: Err(error) }).await;
                }
                Ok((started, completion)) => {
                    send(LoginMsg::Started { tag, result: Ok(Reply::LoginStarted(Box::new(started))) }).await;
                    let error = completion.await.err().map(|e| e.to_string());
                    send(LoginMsg::Finished { provider, error }).await;
                }
            }
        });
    }

    pub(super) async fn handle_login_msg(&mut self, msg: LoginMsg) {
        match msg {
            LoginMsg::Started { tag, result } => self.reply(tag, result).await,
            LoginMsg::Finished { provider, error } => {
                if error.is_none()
                    && let Err(e) = self.models.reload_logins(self.workspace.agent_dir())
                {
                    tracing::warn!("cannot read auth.json after the login: {e}");
                }
                self.emit(AgentEvent::LoginEnd { provider, error }).await;
            }
        }
    }
}
