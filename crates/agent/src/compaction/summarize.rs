//! The summarisation calls: one request per summary through the current
//! model's provider (no tools, no prompt-cache key), transient failures
//! retried with the `summarization_retry_*` events, and the results merged
//! into a compaction summary (pi 1.6 `compact()`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::prepare::Preparation;
use super::prompt::{
    NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR, SUMMARIZATION_SYSTEM_PROMPT, format_file_operations, history_prompt,
    turn_prefix_prompt,
};
use crate::config::settings::RetrySettings;
use crate::error::{CoreError, ErrorKind};
use crate::event::{AgentEvent, EventSink, SummarizationSource};
use crate::message::{AgentMessage, AssistantMessage, StopReason, Usage, UserContent, UserMessage, now_ms};
use crate::model::{Model, ThinkingLevel};
use crate::provider::observe::{RequestObserver, observed};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRequest};
use crate::stream::stream_assistant;

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
    /// What watches its requests (the extensions' `before_provider_headers`).
    pub observer: Option<Arc<dyn RequestObserver>>,
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
    /// pi's error text (e.g. `Summarization failed: 500: …`), classified
    /// like a failed run: a rate limit or an overflow keeps its kind.
    Failed(CoreError),
}

impl SummaryError {
    fn failed(kind: ErrorKind, message: String) -> Self {
        SummaryError::Failed(CoreError::new(kind, message))
    }
}

/// What one model call returned.
struct Response {
    message: AssistantMessage,
    error: Option<ProviderError>,
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
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    };
    let call = stream_assistant(None, s.provider.clone(), request, cancel.clone(), &s.model, None);
    let outcome = observed(s.observer.clone(), call).await;
    let aborted = outcome.error.as_ref().is_some_and(|e| e.kind == ProviderErrorKind::Aborted);
    Response { message: outcome.message, error: outcome.error.filter(|_| !aborted), aborted }
}

/// One call with pi's `retryAssistantCall` policy and events.
async fn call_with_retry(
    s: &Summarizer,
    prompt: &str,
    source: SummarizationSource,
    events: &dyn EventSink,
    cancel: &CancellationToken,
) -> Response {
    let max_attempts = if s.retry_enabled { s.retry.max_retries } else { 0 };
    let mut attempt = 0u32;
    loop {
        let response = call_once(s, prompt, cancel).await;
        let retryable = response.error.as_ref().is_some_and(ProviderError::is_retryable);
        if response.aborted || response.error.is_none() || attempt >= max_attempts || !retryable {
            if attempt > 0 {
                events.emit(AgentEvent::SummarizationRetryFinished).await;
            }
            return response;
        }
        attempt += 1;
        // pi waits its own backoff here, whatever the server's `retry-after`.
        let delay = s.retry.delay(attempt, None);
        let error_message = response.error.as_ref().map_or_else(|| "Unknown error".into(), |e| e.message.clone());
        events
            .emit(AgentEvent::SummarizationRetryScheduled {
                attempt,
                max_attempts,
                delay_ms: delay.as_millis() as u64,
                error_message,
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
pub(super) async fn generate(
    s: &Summarizer,
    prompt: &str,
    label: &str,
    source: SummarizationSource,
    events: &dyn EventSink,
    cancel: &CancellationToken,
) -> Result<(String, Usage), SummaryError> {
    let response = call_with_retry(s, prompt, source, events, cancel).await;
    if response.aborted || cancel.is_cancelled() {
        return Err(SummaryError::Aborted);
    }
    if let Some(error) = response.error {
        let text = if error.message.is_empty() { "Unknown error" } else { &error.message };
        return Err(SummaryError::failed(error.error_kind(), format!("{label} failed: {text}")));
    }
    let message = response.message;
    if message.stop_reason == StopReason::Length {
        return Err(SummaryError::failed(
            ErrorKind::Model,
            format!("{label} failed: generation hit the token cap and the summary is incomplete"),
        ));
    }
    if message.tool_calls().next().is_some() {
        return Err(SummaryError::failed(ErrorKind::Model, format!("{label} attempted to call a tool")));
    }
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(|b| match b {
            crate::message::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    Ok((texts.join("\n"), message.usage))
}

/// Write the summary for `prep` (pi's `compact()`): one request, or two in
/// sequence when the cut splits a turn (history, then the turn's prefix),
/// joined with pi's split-turn text; the file lists are appended.
pub async fn summarize(
    prep: &Preparation,
    custom_instructions: Option<&str>,
    s: &Summarizer,
    source: SummarizationSource,
    events: &dyn EventSink,
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
