//! The summarisation calls: one request per summary through the current
//! model's provider (no tools, no prompt-cache key), transient failures
//! retried with the `summarization_retry_*` events, and the results merged
//! into a compaction summary (pi 1.6 `compact()`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::prepare::Preparation;
use super::prompt::{
    NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR, SUMMARIZATION_SYSTEM_PROMPT, format_file_operations, history_prompt,
    turn_prefix_prompt,
};
use crate::config::settings::RetrySettings;
use crate::event::{AgentEvent, SummarizationSource};
use crate::message::{AgentMessage, StopReason, Usage, UserContent, UserMessage, now_ms};
use crate::model::{Model, ThinkingLevel};
use crate::provider::classify::is_retryable_message;
use crate::provider::{BlockKind, Provider, ProviderEvent, ProviderRequest};

/// Where the summarisation retry events go.
#[async_trait::async_trait]
pub trait RetryEvents: Send + Sync {
    async fn emit(&self, event: AgentEvent);
}

/// How to reach the model that writes the summary.
#[derive(Clone)]
pub struct Summarizer {
    pub provider: Arc<dyn Provider>,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub api_key: Option<String>,
    pub headers: HashMap<String, String>,
    pub retry: RetrySettings,
    /// `retry.enabled` (also toggled by `set_auto_retry`).
    pub retry_enabled: bool,
}

/// A finished summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOutput {
    /// The summary text, file lists appended.
    pub summary: String,
    /// Usage of the summarisation call(s).
    pub usage: Option<Usage>,
    /// `{readFiles, modifiedFiles}`.
    pub details: Value,
}

/// Why no summary came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryError {
    Aborted,
    /// pi's error text, e.g. `Summarization failed: 500: …`.
    Failed(String),
}

/// What one model call returned.
#[derive(Debug, Default)]
struct Response {
    texts: Vec<String>,
    tool_call: bool,
    usage: Usage,
    stop: Option<StopReason>,
    error: Option<String>,
    aborted: bool,
}

async fn call_once(s: &Summarizer, prompt: &str, cancel: &CancellationToken) -> Response {
    let user = AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![crate::message::ContentBlock::text(prompt)]),
        timestamp: now_ms(),
        extra: Map::new(),
    });
    let request = ProviderRequest {
        model: s.model.clone(),
        system_prompt: SUMMARIZATION_SYSTEM_PROMPT.to_string(),
        messages: vec![user],
        tools: Vec::new(),
        thinking_level: if s.model.reasoning { s.thinking } else { ThinkingLevel::Off },
        api_key: s.api_key.clone(),
        headers: s.headers.clone(),
        max_tokens: None,
        session_id: None,
    };
    let mut response = Response::default();
    let mut text_index: HashMap<usize, usize> = HashMap::new();
    let mut stream = s.provider.stream(request, cancel.clone());
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                response.aborted = true;
                break;
            }
            next = stream.next() => next,
        };
        match next {
            None => break,
            Some(Err(e)) => {
                if e.kind == crate::provider::ProviderErrorKind::Aborted {
                    response.aborted = true;
                } else {
                    response.error = Some(e.message);
                }
                break;
            }
            Some(Ok(event)) => match event {
                ProviderEvent::BlockStart { index, kind: BlockKind::Text } => {
                    text_index.insert(index, response.texts.len());
                    response.texts.push(String::new());
                }
                ProviderEvent::BlockStart { kind: BlockKind::ToolCall { .. }, .. } => response.tool_call = true,
                ProviderEvent::BlockDelta { index, delta } => {
                    if let Some(text) = text_index.get(&index).and_then(|&i| response.texts.get_mut(i)) {
                        text.push_str(&delta);
                    }
                }
                ProviderEvent::Usage(mut usage) => {
                    if usage.total_tokens == 0 {
                        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
                    }
                    usage.cost = s.model.cost_of(&usage);
                    response.usage = usage;
                }
                ProviderEvent::Stop { reason, .. } => response.stop = Some(reason),
                _ => {}
            },
        }
    }
    response
}

/// `baseDelayMs * 2^(attempt-1)`, capped (pi's `retryDelayMs`).
fn retry_delay(retry: &RetrySettings, attempt: u32) -> Duration {
    let factor = 1u64.checked_shl(attempt.saturating_sub(1)).unwrap_or(u64::MAX);
    Duration::from_millis(retry.base_delay_ms.saturating_mul(factor).min(retry.max_delay_ms))
}

/// One call with pi's `retryAssistantCall` policy and events.
async fn call_with_retry(
    s: &Summarizer,
    prompt: &str,
    source: SummarizationSource,
    events: &dyn RetryEvents,
    cancel: &CancellationToken,
) -> Response {
    let max_attempts = if s.retry_enabled { s.retry.max_retries } else { 0 };
    let mut attempt = 0u32;
    loop {
        let response = call_once(s, prompt, cancel).await;
        let retryable = response.error.as_deref().is_some_and(is_retryable_message);
        if response.aborted || response.error.is_none() || attempt >= max_attempts || !retryable {
            if attempt > 0 {
                events.emit(AgentEvent::SummarizationRetryFinished).await;
            }
            return response;
        }
        attempt += 1;
        let delay = retry_delay(&s.retry, attempt);
        events
            .emit(AgentEvent::SummarizationRetryScheduled {
                attempt,
                max_attempts,
                delay_ms: delay.as_millis() as u64,
                error_message: response.error.clone().unwrap_or_else(|| "Unknown error".into()),
            })
            .await;
        let cancelled = tokio::select! {
            _ = tokio::time::sleep(delay) => false,
            _ = cancel.cancelled() => true,
        };
        if cancelled {
            events.emit(AgentEvent::SummarizationRetryFinished).await;
            return Response { aborted: true, ..response };
        }
        events.emit(AgentEvent::SummarizationRetryAttemptStart { source }).await;
    }
}

/// One summary: call, then pi's checks on the answer.
async fn generate(
    s: &Summarizer,
    prompt: &str,
    label: &str,
    source: SummarizationSource,
    events: &dyn RetryEvents,
    cancel: &CancellationToken,
) -> Result<(String, Usage), SummaryError> {
    let response = call_with_retry(s, prompt, source, events, cancel).await;
    if response.aborted || cancel.is_cancelled() {
        return Err(SummaryError::Aborted);
    }
    if let Some(error) = response.error {
        let error = if error.is_empty() { "Unknown error".to_string() } else { error };
        return Err(SummaryError::Failed(format!("{label} failed: {error}")));
    }
    if response.stop == Some(StopReason::Length) {
        return Err(SummaryError::Failed(format!(
            "{label} failed: generation hit the token cap and the summary is incomplete"
        )));
    }
    if response.tool_call {
        return Err(SummaryError::Failed(format!("{label} attempted to call a tool")));
    }
    Ok((response.texts.join("\n"), response.usage))
}

/// Write the summary for `prep` (pi's `compact()`): one request, or two in
/// sequence when the cut splits a turn (history, then the turn's prefix),
/// joined with pi's split-turn text; the file lists are appended.
pub async fn summarize(
    prep: &Preparation,
    custom_instructions: Option<&str>,
    s: &Summarizer,
    source: SummarizationSource,
    events: &dyn RetryEvents,
    cancel: &CancellationToken,
) -> Result<SummaryOutput, SummaryError> {
    let previous = prep.previous_summary.as_deref();
    let (mut summary, usage) = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
        let mut history = previous.unwrap_or(NO_PRIOR_HISTORY).to_string();
        let mut history_usage = None;
        if !prep.messages_to_summarize.is_empty() {
            let prompt = history_prompt(&prep.messages_to_summarize, previous, custom_instructions);
            let (text, usage) = generate(s, &prompt, "Summarization", source, events, cancel).await?;
            history = text;
            history_usage = Some(usage);
        }
        let prompt = turn_prefix_prompt(&prep.turn_prefix_messages, custom_instructions);
        let (prefix, prefix_usage) = generate(s, &prompt, "Turn prefix summarization", source, events, cancel).await?;
        let usage = match history_usage {
            Some(mut u) => {
                u.add(&prefix_usage);
                u
            }
            None => prefix_usage,
        };
        (format!("{history}{SPLIT_TURN_SEPARATOR}{prefix}"), usage)
    } else {
        let prompt = history_prompt(&prep.messages_to_summarize, previous, custom_instructions);
        generate(s, &prompt, "Summarization", source, events, cancel).await?
    };
    let (read, modified) = prep.file_ops.lists();
    summary.push_str(&format_file_operations(&read, &modified));
    Ok(SummaryOutput { summary, usage: Some(usage), details: prep.file_ops.details() })
}
