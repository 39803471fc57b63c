//! The offline `faux` provider: deterministic replies without any network,
//! optionally scripted from a JSONL file.
//!
//! Without a script (or once the script is used up) every call streams
//! `You said: <last user text>` plus a note that this is the offline model,
//! in several text deltas, with usage estimated as characters / 4.
//!
//! # Script format
//!
//! A JSONL file: one reply per line, used in order, one per model call (blank
//! lines are skipped). Every field is optional:
//!
//! ```json
//! {"thinking": "Let me look.", "text": "Listing files.",
//!  "toolCalls": [{"name": "bash", "arguments": {"command": "ls"}, "id": "call_1"}],
//!  "usage": {"input": 120, "output": 30, "cacheRead": 0, "cacheWrite": 0},
//!  "delayMs": 20, "stopReason": "toolUse"}
//! {"error": {"message": "500 upstream exploded", "kind": "transient"}}
//! {"error": "429 Too many requests"}
//! ```
//!
//! * `thinking`, `text`: streamed in that order, a few words per delta.
//! * `toolCalls`: streamed after the text; `arguments` is a JSON object (or a
//!   JSON string, sent verbatim); `id` defaults to `faux_call_<n>`, counting
//!   calls from 1 for the life of the provider.
//! * `error`: after the content above (if any), the call fails with this
//!   message. `kind` is `transient`, `rate_limit` (optional `retryAfterMs`),
//!   `overflow`, `auth` or `invalid`; a plain string, or an object without
//!   `kind`, is classified from its text like a real provider error.
//! * `usage`: token counts to report (default: characters / 4).
//! * `delayMs`: pause before each delta (default 0).
//! * `stopReason`: `stop`, `length` or `toolUse` (default: `toolUse` when
//!   there are tool calls, else `stop`).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::classify;
use super::{BlockKind, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::{AgentMessage, ContentBlock, StopReason, Usage, UserContent};
use crate::model::{Model, ModelCost};

/// Provider name of the offline model.
pub const FAUX_PROVIDER: &str = "faux";

/// The faux model: api `faux`, provider `faux`, id `faux-1`. It declares
/// reasoning support so thinking levels can be exercised offline.
pub fn faux_model() -> Model {
    Model {
        id: "faux-1".into(),
        name: "Faux Model".into(),
        api: "faux".into(),
        provider: FAUX_PROVIDER.into(),
        base_url: "http://localhost:0".into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        cost: ModelCost::default(),
        headers: None,
        thinking_level_map: None,
        sampling_params: None,
        sampling_params_by_thinking_level: None,
        compat: None,
        extra: Default::default(),
    }
}

/// One scripted reply (see the module docs for the JSON form).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FauxReply {
    pub text: Option<String>,
    pub thinking: Option<String>,
    pub tool_calls: Vec<FauxToolCall>,
    pub error: Option<FauxError>,
    pub usage: Option<FauxUsage>,
    pub delay_ms: u64,
    pub stop_reason: Option<StopReason>,
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FauxToolCall {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default)]
    pub id: Option<String>,
}

/// A scripted failure: a plain message, or a message with a kind.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum FauxError {
    Message(String),
    Detailed {
        message: String,
        #[serde(default)]
        kind: Option<String>,
        #[serde(default, rename = "retryAfterMs")]
        retry_after_ms: Option<u64>,
    },
}

/// Scripted token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FauxUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// A script that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FauxScriptError {
    #[error("cannot read faux script {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("faux script line {line}: {message}")]
    Parse { line: usize, message: String },
}

/// The offline provider. Clones share the script and the tool-call counter.
#[derive(Clone, Default)]
pub struct FauxProvider {
    script: Arc<Mutex<VecDeque<FauxReply>>>,
    calls: Arc<AtomicU64>,
}

impl FauxProvider {
    /// A provider that always gives the default reply.
    pub fn new() -> Self {
        FauxProvider::default()
    }

    /// A provider whose replies come from a JSONL script file.
    pub fn from_script_file(path: impl AsRef<Path>) -> Result<Self, FauxScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| FauxScriptError::Io { path: path.display().to_string(), source })?;
        FauxProvider::from_script(&text)
    }

    /// A provider whose replies come from JSONL text.
    pub fn from_script(text: &str) -> Result<Self, FauxScriptError> {
        let provider = FauxProvider::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let reply: FauxReply = serde_json::from_str(line)
                .map_err(|e| FauxScriptError::Parse { line: i + 1, message: e.to_string() })?;
            provider.push(reply);
        }
        Ok(provider)
    }

    /// Queue one more scripted reply.
    pub fn push(&self, reply: FauxReply) {
        self.lock().push_back(reply);
    }

    /// Scripted replies not used yet.
    pub fn remaining(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<FauxReply>> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn next_call_id(&self) -> String {
        format!("faux_call_{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// The events (and final error, if any) of one reply, before pacing.
    fn plan(&self, request: &ProviderRequest, reply: FauxReply) -> Vec<Result<ProviderEvent, ProviderError>> {
        let mut out = Vec::new();
        let mut index = 0;
        let mut output_chars = 0;
        let mut block = |out: &mut Vec<_>, kind: BlockKind, deltas: Vec<String>| {
            out.push(Ok(ProviderEvent::BlockStart { index, kind }));
            for d in deltas {
                output_chars += d.chars().count();
                out.push(Ok(ProviderEvent::BlockDelta { index, delta: d }));
            }
            out.push(Ok(ProviderEvent::BlockEnd { index }));
            index += 1;
        };
        if let Some(t) = reply.thinking.as_deref().filter(|t| !t.is_empty()) {
            block(&mut out, BlockKind::Thinking, word_chunks(t));
        }
        if let Some(t) = reply.text.as_deref().filter(|t| !t.is_empty()) {
            block(&mut out, BlockKind::Text, word_chunks(t));
        }
        for call in &reply.tool_calls {
            let id = call.id.clone().unwrap_or_else(|| self.next_call_id());
            let args = match &call.arguments {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            let mut deltas = vec![String::new()];
            deltas.extend(char_chunks(&args, 12));
            block(&mut out, BlockKind::ToolCall { id, name: call.name.clone() }, deltas);
        }
        if let Some(err) = reply.error {
            out.push(Err(error_of(err)));
            return out;
        }
        let usage = match reply.usage {
            Some(u) => Usage {
                input: u.input,
                output: u.output,
                cache_read: u.cache_read,
                cache_write: u.cache_write,
                total_tokens: u.input + u.output + u.cache_read + u.cache_write,
                ..Usage::default()
            },
            None => {
                let input = prompt_chars(request).div_ceil(4) as u64;
                let output = output_chars.div_ceil(4) as u64;
                Usage { input, output, total_tokens: input + output, ..Usage::default() }
            }
        };
        out.push(Ok(ProviderEvent::Usage(Box::new(usage))));
        let reason = reply.stop_reason.unwrap_or(if reply.tool_calls.is_empty() {
            StopReason::Stop
        } else {
            StopReason::ToolUse
        });
        out.push(Ok(ProviderEvent::Stop { reason, raw: None }));
        out
    }
}

fn error_of(err: FauxError) -> ProviderError {
    let (message, kind, retry_after_ms) = match err {
        FauxError::Message(m) => (m, None, None),
        FauxError::Detailed { message, kind, retry_after_ms } => (message, kind, retry_after_ms),
    };
    let retry_after = retry_after_ms.map(Duration::from_millis);
    let kind = match kind.as_deref() {
        Some("transient") => ProviderErrorKind::Transient,
        Some("rate_limit") => ProviderErrorKind::RateLimited { retry_after },
        Some("overflow") => ProviderErrorKind::ContextOverflow,
        Some("auth") => ProviderErrorKind::Auth,
        Some("invalid") => ProviderErrorKind::InvalidRequest,
        _ => classify::classify(None, &message, retry_after),
    };
    ProviderError::new(kind, message)
}

/// Deltas of about three words each.
fn word_chunks(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    words.chunks(3).map(|c| c.concat()).collect()
}

fn char_chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

fn last_user_text(messages: &[AgentMessage]) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        AgentMessage::User(u) => Some(u.content.text()),
        _ => None,
    })
}

fn prompt_chars(request: &ProviderRequest) -> usize {
    let blocks_chars = |blocks: &[ContentBlock]| -> usize {
        blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.chars().count(),
                ContentBlock::Thinking(t) => t.thinking.chars().count(),
                ContentBlock::ToolCall(c) => c.name.chars().count() + c.arguments.to_string().chars().count(),
                ContentBlock::Image(_) => 0,
            })
            .sum()
    };
    let messages: usize = request
        .messages
        .iter()
        .map(|m| match m {
            AgentMessage::User(u) => match &u.content {
                UserContent::Text(t) => t.chars().count(),
                UserContent::Blocks(b) => blocks_chars(b),
            },
            AgentMessage::Assistant(a) => blocks_chars(&a.content),
            AgentMessage::ToolResult(t) => blocks_chars(&t.content),
            AgentMessage::BashExecution(b) => b.command.chars().count() + b.output.chars().count(),
            AgentMessage::CompactionSummary(s) => s.summary.chars().count(),
            AgentMessage::BranchSummary(s) => s.summary.chars().count(),
            AgentMessage::Custom(c) => c.content.text().chars().count(),
            // Its prompt is `system_prompt`, counted below.
            AgentMessage::System(_) => 0,
        })
        .sum();
    request.system_prompt.chars().count() + messages
}

/// The reply given when no script line is left.
pub fn default_reply(request: &ProviderRequest) -> FauxReply {
    let said = last_user_text(&request.messages).unwrap_or_default();
    FauxReply {
        text: Some(format!(
            "You said: {said}\n\nThis is the offline faux model of pi-rpc, so no real model was asked. \
             To use one, configure a provider with an API key (models.json or the provider's \
             environment variable) and select its model."
        )),
        ..FauxReply::default()
    }
}

impl Provider for FauxProvider {
    fn api(&self) -> &'static str {
        "faux"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let reply = self.lock().pop_front().unwrap_or_else(|| default_reply(&request));
        let delay = Duration::from_millis(reply.delay_ms);
        let plan: VecDeque<_> = self.plan(&request, reply).into();
        futures::stream::unfold((plan, cancel, false), move |(mut plan, cancel, done)| async move {
            if done {
                return None;
            }
            let item = plan.pop_front()?;
            if cancel.is_cancelled() {
                return Some((Err(ProviderError::aborted()), (plan, cancel, true)));
            }
            if !delay.is_zero() && matches!(item, Ok(ProviderEvent::BlockDelta { .. })) {
                tokio::select! {
                    _ = cancel.cancelled() => return Some((Err(ProviderError::aborted()), (plan, cancel, true))),
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            let end = item.is_err();
            Some((item, (plan, cancel, end)))
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests;
