//! pi's one-shot headless modes on the same core as RPC: `--print`/`-p`
//! (the final assistant text on stdout) and `--mode json` (the session header,
//! then every event as one JSON line). Messages come from the command line,
//! `@file` arguments and piped stdin, as in pi.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use pi_core::agent::{AgentHandle, Output};
use pi_core::event::AgentEvent;
use pi_core::message::{AgentMessage, ContentBlock, ImageContent, StopReason};
use pi_core::op::{Disposition, Op, Reply, RequestTag, UiResponse};
use tokio::sync::mpsc;

/// What a one-shot run prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintMode {
    Text,
    Json,
}

/// The prompts of a one-shot run: piped stdin, `@file` contents and the first
/// message make the first prompt; each further message is one more prompt.
pub struct Prompts {
    pub first: Option<(String, Vec<ImageContent>)>,
    pub rest: Vec<String>,
}

/// Split argv messages into `@file` arguments and messages (pi's rule: a
/// leading `@` names a file), then build the prompts.
pub fn prompts_from(args: &[String], cwd: &Path) -> anyhow::Result<Prompts> {
    let (files, mut messages): (Vec<&String>, Vec<&String>) = args.iter().partition(|a| a.starts_with('@'));
    let stdin = read_piped_stdin()?;
    let mut text = String::new();
    let mut images = Vec::new();
    for file in files {
        attach_file(&file[1..], cwd, &mut text, &mut images)?;
    }
    let mut parts: Vec<String> = Vec::new();
    parts.extend(stdin);
    if !text.is_empty() {
        parts.push(text);
    }
    if !messages.is_empty() {
        parts.push(messages.remove(0).clone());
    }
    let first = (!parts.is_empty()).then(|| (parts.concat(), images));
    Ok(Prompts { first, rest: messages.into_iter().cloned().collect() })
}

/// Piped stdin, trimmed; `None` for a terminal or empty input.
fn read_piped_stdin() -> anyhow::Result<Option<String>> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut data = String::new();
    stdin.read_to_string(&mut data).context("cannot read stdin")?;
    let trimmed = data.trim();
    Ok((!trimmed.is_empty()).then(|| trimmed.to_string()))
}

/// Append one `@file` as pi does: text inside `<file name="…">` tags, images
/// attached (with an empty tag naming them); empty files are skipped.
fn attach_file(arg: &str, cwd: &Path, text: &mut String, images: &mut Vec<ImageContent>) -> anyhow::Result<()> {
    let path = pi_core::config::expand_home(Path::new(arg));
    let path = if path.is_absolute() { path } else { cwd.join(path) };
    let shown = path.display().to_string();
    let bytes = std::fs::read(&path).map_err(|_| anyhow::anyhow!("File not found: {shown}"))?;
    if bytes.is_empty() {
        return Ok(());
    }
    if let Some(mime) = image_mime(&bytes) {
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        images.push(ImageContent { data, mime_type: mime.to_string() });
        text.push_str(&format!("<file name=\"{shown}\"></file>\n"));
        return Ok(());
    }
    let content = String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("Could not read file {shown}: {e}"))?;
    let content = content.strip_prefix('\u{feff}').unwrap_or(&content);
    text.push_str(&format!("<file name=\"{shown}\">\n{content}\n</file>\n"));
    Ok(())
}

fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The agent's output stream, read one reply or event at a time.
struct Session {
    handle: AgentHandle,
    outputs: mpsc::Receiver<Output>,
    mode: PrintMode,
    next_tag: RequestTag,
}

impl Session {
    /// Send `op` and return its reply, printing (json mode) the events before it.
    async fn call(&mut self, op: Op) -> anyhow::Result<Reply> {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.handle.submit(Some(tag), op).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        loop {
            match self.outputs.recv().await {
                Some(Output::Reply { tag: t, result }) if t == tag => {
                    return result.map_err(|e| anyhow::anyhow!("{}", e.message));
                }
                Some(Output::Reply { .. }) => {}
                Some(Output::Event(event)) => self.print_event(event)?,
                None => bail!("the agent stopped"),
            }
        }
    }

    /// Print events until the run started by the last prompt has settled.
    async fn until_settled(&mut self) -> anyhow::Result<()> {
        loop {
            match self.outputs.recv().await {
                Some(Output::Event(event)) => {
                    let settled = matches!(event, AgentEvent::AgentSettled { .. });
                    self.print_event(event)?;
                    if settled {
                        return Ok(());
                    }
                }
                Some(Output::Reply { .. }) => {}
                None => bail!("the agent stopped"),
            }
        }
    }

    fn print_event(&self, event: AgentEvent) -> anyhow::Result<()> {
        // No one can answer an extension's dialog here: it is cancelled, as
        // pi's print mode has no UI either.
        if let AgentEvent::ExtensionUiRequest(request) = &event
            && request.kind.is_dialog()
        {
            let op = Op::ExtensionUiResponse { id: Some(request.id.clone()), response: UiResponse::Cancelled };
            let handle = self.handle.clone();
            tokio::spawn(async move { handle.submit(None, op).await });
        }
        if self.mode != PrintMode::Json {
            return Ok(());
        }
        if let Some(wire) = pi_jsonl::map::map_event(event, |_| None) {
            write_line(&serde_json::to_string(&wire)?)?;
        }
        Ok(())
    }

    async fn prompt(&mut self, message: String, images: Vec<ImageContent>) -> anyhow::Result<()> {
        match self.call(Op::Prompt { message, images, streaming_behavior: None }).await? {
            // An extension command consumed it: no run to wait for.
            Reply::Prompt(Disposition::Handled) => Ok(()),
            _ => self.until_settled().await,
        }
    }

    /// Stop the agent (flushing the session) and drain what it still says.
    async fn finish(mut self, abort: bool) {
        let _ = self.handle.submit(None, Op::Shutdown { abort }).await;
        while let Some(output) = self.outputs.recv().await {
            if let Output::Event(event) = output {
                let _ = self.print_event(event);
            }
        }
    }
}

fn write_line(line: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Run the prompts one after the other and print the outcome; the exit code
/// is 1 when a prompt fails or the last reply is an error, abort or cut-off.
pub async fn run(
    mode: PrintMode,
    prompts: Prompts,
    handle: AgentHandle,
    outputs: mpsc::Receiver<Output>,
) -> anyhow::Result<ExitCode> {
    let mut session = Session { handle, outputs, mode, next_tag: 1 };
    let work = async {
        if mode == PrintMode::Json
            && let Reply::State(state) = session.call(Op::GetState).await?
        {
            write_line(&serde_json::to_string(&state.session_header)?)?;
        }
        if let Some((message, images)) = prompts.first {
            session.prompt(message, images).await?;
        }
        for message in prompts.rest {
            session.prompt(message, Vec::new()).await?;
        }
        if mode == PrintMode::Text
            && let Reply::Messages(messages) = session.call(Op::GetMessages).await?
        {
            return Ok(print_final_text(messages.last()));
        }
        anyhow::Ok(ExitCode::SUCCESS)
    };
    let signal = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(0));
    let outcome = tokio::select! {
        outcome = work => Some(outcome),
        _ = crate::dialect::termination(signal.clone()) => None,
    };
    let code = match outcome {
        Some(Ok(code)) => code,
        Some(Err(e)) => {
            report(&format!("{e:#}"));
            ExitCode::from(1)
        }
        None => {
            session.finish(true).await;
            return Ok(ExitCode::from(128 + signal.load(std::sync::atomic::Ordering::SeqCst)));
        }
    };
    session.finish(false).await;
    Ok(code)
}

/// pi's text output: the last assistant message's text blocks, each on its
/// line; its error (stderr, exit 1) when it failed or was aborted.
fn print_final_text(last: Option<&AgentMessage>) -> ExitCode {
    let Some(AgentMessage::Assistant(message)) = last else { return ExitCode::SUCCESS };
    match message.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            let reason = if message.stop_reason == StopReason::Error { "error" } else { "aborted" };
            report(&message.error_message.clone().unwrap_or_else(|| format!("Request {reason}")));
            return ExitCode::from(1);
        }
        _ => {}
    }
    for block in &message.content {
        if let ContentBlock::Text(t) = block
            && write_line(&t.text).is_err()
        {
            return ExitCode::from(1);
        }
    }
    if message.stop_reason == StopReason::Length {
        report("Response was truncated: the model reached its output token limit.");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[allow(clippy::print_stderr)]
fn report(text: &str) {
    eprintln!("{text}");
}
