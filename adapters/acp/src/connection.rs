//! One ACP connection: reads the client's messages, answers the
//! connection-level ones (`initialize`, `authenticate`, the session
//! lifecycle: `session/new`, `load`, `resume`, `fork`, `list`, `delete`,
//! `close`), routes session requests to their session task (see
//! [`crate::lifecycle`] for the sessions it holds and their bounds), and
//! hands the client's responses to our requests back to the core. Every
//! message out goes through one channel to the sink, within a byte budget.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use pi_core::client::ClientCapabilities;
use pi_core::mcp::ServerConfig;
use pi_core::op::Op;
use pi_transport::MessageSink;
use pi_transport::framing::{FrameError, RecordSource};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc};

use crate::PROTOCOL_VERSION;
use crate::host::{SessionHost, SessionStart};
use crate::lifecycle::Sessions;
use crate::outbox::{OUT_BYTES, Shared};
use crate::requests::{Expect, answer};
use crate::session::{Opening, SessionCmd};
use crate::wire::{Incoming, classify, error_response, invalid_params, response};

/// Messages waiting for the client to read them.
const OUT_MESSAGES: usize = 1024;
struct Connection<H: SessionHost> {
    sessions: Sessions<H>,
}

fn params<T: DeserializeOwned>(value: Value) -> Result<T, acp::Error> {
    let value = if value.is_null() { Value::Object(Default::default()) } else { value };
    serde_json::from_value(value).map_err(|e| invalid_params(e.to_string()))
}

/// MCP servers handed over by `session/new`/`session/load`.
fn mcp_servers(servers: Vec<acp::McpServer>, cwd: &std::path::Path) -> Vec<ServerConfig> {
    servers
        .into_iter()
        .filter_map(|server| match server {
            acp::McpServer::Stdio(s) => {
                let env = s.env.into_iter().map(|e| (e.name, e.value)).collect();
                Some(ServerConfig::stdio(&s.name, s.command, s.args, env, cwd.to_path_buf()))
            }
            acp::McpServer::Http(s) => {
                let headers = s.headers.into_iter().map(|h| (h.name, h.value)).collect();
                Some(ServerConfig::http(&s.name, s.url, headers))
            }
            _ => {
                tracing::warn!("an MCP server over SSE was handed over: not supported (use HTTP)");
                None
            }
        })
        .collect()
}

fn check_cwd(cwd: &std::path::Path) -> Result<PathBuf, acp::Error> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!("cwd must be an absolute path: {}", cwd.display())));
    }
    if !cwd.is_dir() {
        return Err(invalid_params(format!("cwd is not a directory: {}", cwd.display())));
    }
    Ok(cwd.to_path_buf())
}

fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl<H: SessionHost> Connection<H> {
    async fn send(&self, bytes: Vec<u8>) {
        self.sessions.shared.send(bytes).await;
    }

    async fn record(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        match classify(&text) {
            Incoming::Invalid { id, error } => self.send(error_response(&id, &error)).await,
            Incoming::Request { id, method, params } => {
                if let Err(error) = self.request(id.clone(), &method, params).await {
                    self.send(error_response(&id, &error)).await;
                }
            }
            Incoming::Notification { method, params } => self.notification(&method, params).await,
            Incoming::Response { id, result } => self.client_response(&id, result).await,
        }
    }

    async fn request(&mut self, id: Box<RawValue>, method: &str, p: Value) -> Result<(), acp::Error> {
        match method {
            "initialize" => {
                let request: acp::InitializeRequest = params(p)?;
                let fs = &request.client_capabilities.fs;
                self.sessions.capabilities = ClientCapabilities {
                    read_text_file: fs.read_text_file,
                    write_text_file: fs.write_text_file,
                    terminal: request.client_capabilities.terminal,
                };
                let forks = self.sessions.host.forks_and_deletes();
                self.send(response(&id, &initialize_response(forks))).await;
            }
            "authenticate" => {
                let request: acp::AuthenticateRequest = params(p)?;
                match crate::login::parse(request.method_id.0.as_ref()) {
                    None => {
                        let method = &request.method_id.0;
                        return Err(invalid_params(format!("unknown authentication method \"{method}\"")));
                    }
                    Some(crate::login::Authenticate::Config) => {
                        self.send(response(&id, &acp::AuthenticateResponse::new())).await;
                    }
                    // A login waits for the user: the connection goes on meanwhile.
                    Some(crate::login::Authenticate::Login(login)) => {
                        let shared = self.sessions.shared.clone();
                        tokio::spawn(async move {
                            let answer = match crate::login::run(login).await {
                                Ok(()) => response(&id, &acp::AuthenticateResponse::new()),
                                Err(e) => error_response(&id, &e),
                            };
                            shared.send(answer).await;
                        });
                    }
                }
            }
            "session/new" => {
                let request: acp::NewSessionRequest = params(p)?;
                let cwd = check_cwd(&request.cwd)?;
                let mcp = mcp_servers(request.mcp_servers, &cwd);
                let start = SessionStart::New { session_id: new_session_id() };
                self.sessions.open(start, cwd, mcp, Opening::New(id)).await?;
            }
            "session/load" => {
                let request: acp::LoadSessionRequest = params(p)?;
                let cwd = check_cwd(&request.cwd)?;
                let session_id = request.session_id.0.to_string();
                if self.sessions.is_open(&session_id) {
                    return Err(invalid_params(format!("session {session_id} is already open on this connection")));
                }
                let mcp = mcp_servers(request.mcp_servers, &cwd);
                self.sessions.open(SessionStart::Load { session_id }, cwd, mcp, Opening::Load(id)).await?;
            }
            "session/resume" => {
                let request: acp::ResumeSessionRequest = params(p)?;
                let cwd = check_cwd(&request.cwd)?;
                let session_id = request.session_id.0.to_string();
                if self.sessions.is_open(&session_id) {
                    // Already here: its state, as a resume of it would give.
                    return self.sessions.route(&session_id, SessionCmd::Resumed { id }).await;
                }
                let mcp = mcp_servers(request.mcp_servers, &cwd);
                self.sessions.open(SessionStart::Load { session_id }, cwd, mcp, Opening::Resume(id)).await?;
            }
            "session/fork" if self.sessions.host.forks_and_deletes() => {
                let request: acp::ForkSessionRequest = params(p)?;
                let cwd = check_cwd(&request.cwd)?;
                let mcp = mcp_servers(request.mcp_servers, &cwd);
                let start =
                    SessionStart::Fork { source: request.session_id.0.to_string(), session_id: new_session_id() };
                self.sessions.open(start, cwd, mcp, Opening::Fork(id)).await?;
            }
            "session/delete" if self.sessions.host.forks_and_deletes() => {
                let request: acp::DeleteSessionRequest = params(p)?;
                let session_id = request.session_id.0.to_string();
                // Deleting an open session closes it first, as the spec's
                // `session/archive` does.
                self.sessions.stop(&session_id).await;
                self.sessions.host.delete(&session_id).map_err(crate::lifecycle::open_error)?;
                self.send(response(&id, &acp::DeleteSessionResponse::new())).await;
            }
            "session/list" => {
                let request: acp::ListSessionsRequest = params(p)?;
                if request.cursor.is_some() {
                    return Err(invalid_params("unknown cursor (every session is on the first page)"));
                }
                let sessions = self
                    .sessions
                    .host
                    .stored(request.cwd.as_deref())
                    .into_iter()
                    .map(|s| acp::SessionInfo::new(s.session_id, s.cwd).title(s.title).updated_at(s.updated_at))
                    .collect();
                self.send(response(&id, &acp::ListSessionsResponse::new(sessions))).await;
            }
            "session/prompt" => {
                let request: acp::PromptRequest = params(p)?;
                let session = request.session_id.0.to_string();
                self.sessions.route(&session, SessionCmd::Prompt { id, request }).await?;
            }
            "session/set_mode" => {
                let request: acp::SetSessionModeRequest = params(p)?;
                let cmd = SessionCmd::SetMode { id, mode: request.mode_id.0.to_string() };
                self.sessions.route(&request.session_id.0, cmd).await?;
            }
            "session/set_config_option" => {
                let request: acp::SetSessionConfigOptionRequest = params(p)?;
                let value = match request.value {
                    acp::SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
                    _ => return Err(invalid_params("this option takes one of its listed values")),
                };
                let cmd = SessionCmd::SetConfig { id, config_id: request.config_id.0.to_string(), value };
                self.sessions.route(&request.session_id.0, cmd).await?;
            }
            "session/close" => {
                let request: acp::CloseSessionRequest = params(p)?;
                self.sessions.close(&request.session_id.0, id).await?;
            }
            "session/cancel" => {
                // A notification sent as a request: the cancel it names, answered.
                let request: acp::CancelNotification = params(p)?;
                self.sessions.route(&request.session_id.0, SessionCmd::Cancel).await?;
                self.send(response(&id, &serde_json::json!({}))).await;
            }
            other => return Err(acp::Error::method_not_found().data(Value::String(other.to_string()))),
        }
        Ok(())
    }

    async fn notification(&mut self, method: &str, p: Value) {
        match method {
            "session/cancel" => {
                if let Ok(request) = params::<acp::CancelNotification>(p) {
                    let _ = self.sessions.route(&request.session_id.0, SessionCmd::Cancel).await;
                }
            }
            "$/cancel_request" => {
                if let Ok(request) = params::<acp::CancelRequestNotification>(p) {
                    let id = serde_json::to_string(&request.request_id).unwrap_or_default();
                    for live in self.sessions.live() {
                        let _ = live.cmds.send(SessionCmd::CancelRequest { id: id.clone() }).await;
                    }
                }
            }
            other => tracing::debug!("ignoring the notification {other}"),
        }
    }

    async fn client_response(&mut self, id: &RawValue, result: Result<Value, acp::Error>) {
        let sent = id.get().parse::<u64>().ok().and_then(|n| self.sessions.shared.table().remove(n));
        let Some(sent) = sent else {
            tracing::debug!("ignoring a response to no request of ours: {}", id.get());
            return;
        };
        let reply = answer(&sent.expect, result);
        let Some(live) = self.sessions.get_live(&sent.session_id) else { return };
        if let (
            Expect::TerminalCreated { tool_call_id },
            Ok(pi_core::client::ClientReply::TerminalCreated { terminal_id }),
        ) = (&sent.expect, &reply)
        {
            let cmd =
                SessionCmd::TerminalStarted { tool_call_id: tool_call_id.clone(), terminal_id: terminal_id.clone() };
            let _ = live.cmds.send(cmd).await;
        }
        let _ = live.handle.submit(None, Op::ClientResponse { id: sent.core_id, result: reply }).await;
    }
}

fn initialize_response(forks_and_deletes: bool) -> acp::InitializeResponse {
    let mut sessions = acp::SessionCapabilities::new()
        .list(acp::SessionListCapabilities::new())
        .close(acp::SessionCloseCapabilities::new())
        .resume(acp::SessionResumeCapabilities::new());
    if forks_and_deletes {
        sessions = sessions.delete(acp::SessionDeleteCapabilities::new()).fork(acp::SessionForkCapabilities::new());
    }
    let capabilities = acp::AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(acp::PromptCapabilities::new().image(true).embedded_context(true))
        .mcp_capabilities(acp::McpCapabilities::new().http(true))
        .session_capabilities(sessions);
    acp::InitializeResponse::new(PROTOCOL_VERSION)
        .agent_capabilities(capabilities)
        .auth_methods(crate::login::methods())
        .agent_info(acp::Implementation::new("pi-rpc", env!("CARGO_PKG_VERSION")).title("pi".to_string()))
}

/// Serve one ACP connection until input ends (sessions finish what they
/// accepted) or `stop` resolves (sessions abort), and every message is out.
/// Returns whether every message could be sent.
pub async fn serve_acp<H, S, K, F>(host: H, mut source: S, sink: K, stop: F) -> bool
where
    H: SessionHost,
    S: RecordSource,
    K: MessageSink,
    F: std::future::Future<Output = ()>,
{
    let (out, mut out_rx) = mpsc::channel::<(Vec<u8>, u32)>(OUT_MESSAGES);
    let room = Arc::new(Semaphore::new(OUT_BYTES));
    let shared = Arc::new(Shared::new(out, room.clone()));
    let idle = host.idle_sleep();
    let mut conn = Connection { sessions: Sessions::new(host, shared) };
    // The writer runs beside the reader, not inside its loop: the reader (and
    // the sessions) may wait for room in the way out, and that room must
    // never depend on the reader coming back.
    let writer = async {
        let mut output_ok = true;
        while let Some((bytes, cost)) = out_rx.recv().await {
            if output_ok && !sink.send(bytes).await {
                output_ok = false;
            }
            room.add_permits(cost as usize);
        }
        output_ok
    };
    let reader = async move {
        let mut input_open = true;
        tokio::pin!(stop);
        // Idle sessions are looked for a few times per idle period.
        let period =
            idle.map_or(std::time::Duration::from_secs(3600), |d| (d / 4).max(std::time::Duration::from_millis(50)));
        let mut idle_check = tokio::time::interval(period);
        idle_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while input_open || !conn.sessions.tasks.is_empty() {
            tokio::select! {
                _ = &mut stop, if input_open => {
                    input_open = false;
                    conn.sessions.finish(true).await;
                }
                done = conn.sessions.tasks.join_next(), if !conn.sessions.tasks.is_empty() => {
                    if let Some(Err(e)) = done {
                        tracing::error!("an ACP session task failed: {e}");
                    }
                }
                _ = idle_check.tick(), if input_open && idle.is_some() => {
                    if let Some(idle) = idle {
                        conn.sessions.sleep_idle(idle).await;
                    }
                }
                record = source.next(), if input_open => match record {
                    Ok(Some(Ok(text))) => conn.record(text).await,
                    Ok(Some(Err(e))) => {
                        let detail = match e {
                            FrameError::TooLong { len, limit } => format!("message of {len} bytes exceeds the {limit}-byte limit"),
                            FrameError::InvalidUtf8 { offset } => format!("invalid UTF-8 at byte {offset}"),
                            FrameError::Header(d) => d,
                        };
                        let error = acp::Error::parse_error().data(Value::String(detail));
                        conn.send(error_response(&pi_transport::raw::null_id(), &error)).await;
                    }
                    Ok(None) | Err(_) => {
                        input_open = false;
                        conn.sessions.finish(false).await;
                    }
                },
            }
        }
        // Every session is done; dropping the connection closes the way out
        // once the writer has sent what is queued.
        drop(conn);
    };
    let (output_ok, ()) = tokio::join!(writer, reader);
    output_ok
}
