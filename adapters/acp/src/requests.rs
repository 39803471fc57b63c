//! Requests the core makes of the client as ACP requests
//! (`session/request_permission`, `fs/*`, `terminal/*`), and the client's
//! responses as the core's answers.

use std::path::Path;

use agent_client_protocol_schema::v1 as acp;
use pi_core::client::{ClientReply, ClientRequestKind, ExitStatus, PermissionAnswer};
use serde_json::Value;

use crate::updates::tool_call_fields;

/// What an outbound request was, to read its response.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    Permission,
    Text,
    Done,
    TerminalCreated { tool_call_id: String },
    TerminalOutput,
    TerminalExit,
}

/// An outbound request awaiting its response.
#[derive(Debug, Clone)]
pub struct Sent {
    pub session_id: String,
    /// The core's id of the request.
    pub core_id: String,
    pub expect: Expect,
}

/// The permission options we offer (their ids are their kinds).
fn permission_options() -> Vec<acp::PermissionOption> {
    use acp::PermissionOptionKind as K;
    [
        ("allow_once", "Allow", K::AllowOnce),
        ("allow_always", "Always allow", K::AllowAlways),
        ("reject_once", "Reject", K::RejectOnce),
        ("reject_always", "Always reject", K::RejectAlways),
    ]
    .into_iter()
    .map(|(id, name, kind)| acp::PermissionOption::new(id.to_string(), name, kind))
    .collect()
}

fn json<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The ACP request for a core request: method, params, what its response is.
/// `None` for requests ACP has no method for (client tools).
pub fn outbound(session_id: &str, kind: &ClientRequestKind, cwd: &Path) -> Option<(&'static str, Value, Expect)> {
    let sid = || acp::SessionId::new(session_id.to_string());
    Some(match kind {
        ClientRequestKind::Permission(p) => {
            let fields = tool_call_fields(&p.tool_name, &p.args, cwd);
            let call = acp::ToolCallUpdate::new(p.tool_call_id.clone(), fields);
            let params = acp::RequestPermissionRequest::new(sid(), call, permission_options());
            ("session/request_permission", json(params), Expect::Permission)
        }
        ClientRequestKind::ReadTextFile { path } => {
            ("fs/read_text_file", json(acp::ReadTextFileRequest::new(sid(), path.clone())), Expect::Text)
        }
        ClientRequestKind::WriteTextFile { path, content } => (
            "fs/write_text_file",
            json(acp::WriteTextFileRequest::new(sid(), path.clone(), content.clone())),
            Expect::Done,
        ),
        ClientRequestKind::CreateTerminal(t) => {
            let env = t.env.iter().map(|(k, v)| acp::EnvVariable::new(k.clone(), v.clone())).collect();
            let params = acp::CreateTerminalRequest::new(sid(), t.command.clone())
                .args(t.args.clone())
                .env(env)
                .cwd(t.cwd.clone())
                .output_byte_limit(t.output_byte_limit);
            ("terminal/create", json(params), Expect::TerminalCreated { tool_call_id: t.tool_call_id.clone() })
        }
        ClientRequestKind::TerminalOutput { terminal_id } => (
            "terminal/output",
            json(acp::TerminalOutputRequest::new(sid(), terminal_id.clone())),
            Expect::TerminalOutput,
        ),
        ClientRequestKind::WaitForTerminalExit { terminal_id } => (
            "terminal/wait_for_exit",
            json(acp::WaitForTerminalExitRequest::new(sid(), terminal_id.clone())),
            Expect::TerminalExit,
        ),
        ClientRequestKind::KillTerminal { terminal_id } => {
            ("terminal/kill", json(acp::KillTerminalRequest::new(sid(), terminal_id.clone())), Expect::Done)
        }
        ClientRequestKind::ReleaseTerminal { terminal_id } => {
            ("terminal/release", json(acp::ReleaseTerminalRequest::new(sid(), terminal_id.clone())), Expect::Done)
        }
        ClientRequestKind::ToolCall { .. } => return None,
    })
}

fn exit(status: acp::TerminalExitStatus) -> ExitStatus {
    ExitStatus { exit_code: status.exit_code.map(i64::from), signal: status.signal }
}

/// Read a response as the core's answer.
pub fn answer(expect: &Expect, result: Result<Value, acp::Error>) -> Result<ClientReply, String> {
    let value = result.map_err(|e| match e.data {
        Some(Value::String(detail)) => format!("{} ({detail})", e.message),
        Some(data) => format!("{} ({data})", e.message),
        None => e.message,
    })?;
    let bad = |e: serde_json::Error| format!("the client's response is not valid: {e}");
    Ok(match expect {
        Expect::Permission => {
            let response: acp::RequestPermissionResponse = serde_json::from_value(value).map_err(bad)?;
            ClientReply::Permission(match response.outcome {
                acp::RequestPermissionOutcome::Selected(s) => match s.option_id.0.as_ref() {
                    "allow_once" => PermissionAnswer::AllowOnce,
                    "allow_always" => PermissionAnswer::AllowAlways,
                    "reject_always" => PermissionAnswer::RejectAlways,
                    _ => PermissionAnswer::RejectOnce,
                },
                _ => PermissionAnswer::Cancelled,
            })
        }
        Expect::Text => {
            let response: acp::ReadTextFileResponse = serde_json::from_value(value).map_err(bad)?;
            ClientReply::Text(response.content)
        }
        Expect::Done => ClientReply::Done,
        Expect::TerminalCreated { .. } => {
            let response: acp::CreateTerminalResponse = serde_json::from_value(value).map_err(bad)?;
            ClientReply::TerminalCreated { terminal_id: response.terminal_id.0.to_string() }
        }
        Expect::TerminalOutput => {
            let response: acp::TerminalOutputResponse = serde_json::from_value(value).map_err(bad)?;
            ClientReply::TerminalOutput {
                output: response.output,
                truncated: response.truncated,
                exit: response.exit_status.map(exit),
            }
        }
        Expect::TerminalExit => {
            let response: acp::WaitForTerminalExitResponse = serde_json::from_value(value).map_err(bad)?;
            ClientReply::TerminalExited(exit(response.exit_status))
        }
    })
}
