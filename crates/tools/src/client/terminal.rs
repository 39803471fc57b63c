//! `bash` in a client terminal (ACP `terminal/*`): create, wait for the
//! exit (or abort, or the timeout: then kill), read the output, release.
//! The result reads as the local `bash` tool's: the output's tail with pi's
//! truncation notice, then the exit status.

use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{ClientFailure, ClientLink, ClientReply, ClientRequestKind, ExitStatus, TerminalCommand};
use crate::message::ContentBlock;
use crate::tools::bash::{OutputAccumulator, append_status, format_output};
use crate::tools::shell::resolve_timeout;
use crate::tools::validate::js_number_string;
use crate::tools::{ToolContext, ToolOutput};

/// Bytes of output the client keeps (it drops the oldest beyond them).
const OUTPUT_BYTE_LIMIT: u64 = 1024 * 1024;
/// How long the clean-up requests (kill, output, release) may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(10);

enum Ending {
    Exited(ExitStatus),
    Aborted,
    TimedOut,
}

/// Run `command` through the client's terminal.
pub async fn run_in_client_terminal(
    client: &ClientLink,
    command: &str,
    timeout: Option<f64>,
    ctx: &ToolContext,
) -> ToolOutput {
    let limit = match resolve_timeout(timeout) {
        Ok(limit) => limit,
        Err(message) => return ToolOutput::error(message),
    };
    let create = ClientRequestKind::CreateTerminal(TerminalCommand {
        tool_call_id: ctx.tool_call_id.clone(),
        command: "bash".to_string(),
        args: vec!["-c".to_string(), command.to_string()],
        env: ctx.env.clone(),
        cwd: ctx.cwd.clone(),
        output_byte_limit: Some(OUTPUT_BYTE_LIMIT),
    });
    let terminal_id = match client.request(create, &ctx.cancel, None).await {
        Ok(ClientReply::TerminalCreated { terminal_id }) => terminal_id,
        Ok(other) => return ToolOutput::error(format!("unexpected answer from the client: {other:?}")),
        Err(ClientFailure::Cancelled) => return ToolOutput::error("Command aborted"),
        Err(e) => return ToolOutput::error(format!("The client could not start the command: {e}")),
    };
    let wait = ClientRequestKind::WaitForTerminalExit { terminal_id: terminal_id.clone() };
    let ending = match client.request(wait, &ctx.cancel, limit).await {
        Ok(ClientReply::TerminalExited(status)) => Ending::Exited(status),
        Ok(_) => Ending::Exited(ExitStatus::default()),
        Err(ClientFailure::Cancelled) => Ending::Aborted,
        Err(ClientFailure::TimedOut(_)) => Ending::TimedOut,
        Err(e) => return ToolOutput::error(format!("The client's terminal failed: {e}")),
    };
    // Clean-up runs even after an abort: a token of its own.
    let cleanup = CancellationToken::new();
    let ask = |kind| client.request(kind, &cleanup, Some(CLEANUP_TIMEOUT));
    if !matches!(ending, Ending::Exited(_)) {
        let _ = ask(ClientRequestKind::KillTerminal { terminal_id: terminal_id.clone() }).await;
    }
    let output = ask(ClientRequestKind::TerminalOutput { terminal_id: terminal_id.clone() }).await;
    let _ = ask(ClientRequestKind::ReleaseTerminal { terminal_id: terminal_id.clone() }).await;
    let (output, truncated_by_client, exit) = match output {
        Ok(ClientReply::TerminalOutput { output, truncated, exit }) => (output, truncated, exit),
        _ => (String::new(), false, None),
    };
    let mut acc = OutputAccumulator::new(&ctx.temp_dir);
    acc.append(output.as_bytes());
    acc.finish();
    let snap = acc.snapshot(true);
    acc.close_temp_file();
    let (mut text, details) = format_output(&snap, &acc, "");
    if truncated_by_client {
        text = format!("[Earlier output was dropped by the client terminal]\n{text}");
    }
    let status = match ending {
        Ending::Aborted => return ToolOutput::error(append_status(&text, "Command aborted")),
        Ending::TimedOut => {
            let secs = timeout.map(js_number_string).unwrap_or_default();
            return ToolOutput::error(append_status(&text, &format!("Command timed out after {secs} seconds")));
        }
        Ending::Exited(status) => exit.filter(|e| e.exit_code.is_some() || e.signal.is_some()).unwrap_or(status),
    };
    let code = status.exit_code.unwrap_or(if status.signal.is_some() { 1 } else { 0 });
    let text = if text.is_empty() { "(no output)".to_string() } else { text };
    let text = match (&status.signal, code) {
        (Some(signal), _) => append_status(&text, &format!("Command terminated by signal {signal}")),
        (None, 0) => text,
        (None, code) => append_status(&text, &format!("Command exited with code {code}")),
    };
    let mut structured = Map::new();
    structured.insert("output".into(), Value::String(output));
    structured.insert("truncated".into(), Value::Bool(truncated_by_client));
    structured.insert("exit_code".into(), json!(code));
    structured.insert("terminal_id".into(), Value::String(terminal_id));
    ToolOutput {
        content: vec![ContentBlock::text(text)],
        details,
        is_error: code != 0,
        structured_content: Some(Value::Object(structured)),
        ..Default::default()
    }
}
