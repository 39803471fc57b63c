//! Hooks that change what the agent does, asked of the subscribed
//! extensions in load order, each answer chained into the next question, as
//! pi composes its handlers:
//!
//! * `input` — a prompt's text before templates and skills expand:
//!   `{"action":"continue"|"transform"|"handled", text?, images?}`;
//! * `before_agent_start` — before a run: custom `messages` to add after
//!   the prompt and a replacement `systemPrompt` for the run;
//! * `context` — the messages of each model request: a replacement `messages`
//!   list for that request only;
//! * `tool_result` — a finished tool's result: `content` / `details` /
//!   `isError` replaced.
//!
//! A hook that fails (an `error` answer, a dead extension) leaves the value
//! as it was; an `error` answer is reported as `extension_error`.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::builtin_tools::UserBashOperations;
use super::process::CallError;
use super::{Extension, Extensions, HostSignal};
use crate::message::{AgentMessage, ContentBlock, CustomMessage, ImageContent, UserContent, now_ms};
use crate::tools::ToolOutput;

/// Where a prompt's text came from (pi's `input` event `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputSource {
    /// A client command (`prompt`, `steer`, `follow_up`).
    Rpc,
    /// An extension's `sendUserMessage`.
    Extension,
}

/// What the `input` hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum InputOutcome {
    /// Go on with this text and these images (changed or not).
    Continue { text: String, images: Vec<ImageContent> },
    /// An extension handled the input: nothing is sent to the model.
    Handled,
}

/// A custom message from `{customType, content, display?, details?}`.
pub fn custom_message(params: &Value) -> Result<AgentMessage, String> {
    let custom_type = params
        .get("customType")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("\"customType\" is required")?
        .to_string();
    let content = match params.get("content") {
        None | Some(Value::Null) => UserContent::Blocks(Vec::new()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("invalid \"content\": {e}"))?,
    };
    Ok(AgentMessage::Custom(CustomMessage {
        custom_type,
        content,
        display: params.get("display").and_then(Value::as_bool).unwrap_or(true),
        details: params.get("details").filter(|d| !d.is_null()).cloned(),
        timestamp: now_ms(),
        extra: Default::default(),
    }))
}

/// What the `session_before_compact` hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactDecision {
    /// pi-rpc writes the summary.
    Default,
    /// The compaction is cancelled (reported as aborted).
    Cancel,
    /// The extension's `{summary, firstKeptEntryId, tokensBefore, usage?, details?}`.
    Replace(Value),
}

/// What the `user_bash` hooks decided.
pub enum BashDecision {
    /// Run the command here.
    Local,
    /// The command's result, as the extension gives it (`{output, exitCode, cancelled, truncated, fullOutputPath?}`).
    Result(Value),
    /// Run the command through the extension's `exec` operation.
    Operations(UserBashOperations),
    /// A handler failed: the command fails with this error.
    Failed(String),
}

impl Extensions {
    /// Whether a live extension subscribed to `event`.
    pub fn listens(&self, event: &str) -> bool {
        !self.is_empty() && self.list().iter().any(|e| e.subscribes(event))
    }

    /// Ask `ext` to decide hook `method`; `None` when it could not (reported when it answered an error).
    pub(super) async fn ask(
        &self,
        ext: &Extension,
        method: &str,
        params: Value,
        cancel: Option<&CancellationToken>,
    ) -> Option<Value> {
        match ext.call(method, params, cancel).await {
            Ok(result) => Some(result),
            Err(CallError::Failed(error)) => {
                if let Some(signals) = &self.shared.signals {
                    let event = method.to_string();
                    signals.deliver(HostSignal::Error { path: ext.path_string(), event, error }).await;
                }
                None
            }
            Err(CallError::Dead(_) | CallError::Cancelled) => None,
        }
    }

    /// The `input` hooks, for a prompt's text. `streaming`: how it is
    /// delivered during a run (`steer` / `followUp`), `None` when idle.
    pub async fn input(
        &self,
        text: String,
        images: Vec<ImageContent>,
        source: InputSource,
        streaming: Option<&str>,
    ) -> InputOutcome {
        let (mut text, mut images) = (text, images);
        let source = match source {
            InputSource::Rpc => "rpc",
            InputSource::Extension => "extension",
        };
        for ext in self.subscribers("input") {
            // pi leaves out what is not there (no images, not streaming).
            let mut params = json!({"text": text, "source": source});
            if !images.is_empty() {
                params["images"] = json!(images);
            }
            if let Some(behavior) = streaming {
                params["streamingBehavior"] = json!(behavior);
            }
            let Some(result) = self.ask(&ext, "input", params, None).await else { continue };
            match result.get("action").and_then(Value::as_str) {
                Some("handled") => return InputOutcome::Handled,
                Some("transform") => {
                    if let Some(t) = result.get("text").and_then(Value::as_str) {
                        text = t.to_string();
                    }
                    if let Some(i) = result.get("images").and_then(|i| serde_json::from_value(i.clone()).ok()) {
                        images = i;
                    }
                }
                _ => {}
            }
        }
        InputOutcome::Continue { text, images }
    }

    /// The `before_agent_start` hooks, before a run that starts with
    /// `initial`: their messages are appended to it. `options` are pi's
    /// `BuildSystemPromptOptions` of the run (`systemPromptOptions`, which
    /// handlers change in place; a returned `systemPrompt` is its
    /// `forceSystemPrompt`), chained from one extension to the next; they
    /// are left as the last handler left them. `system_prompt` is the
    /// run's prompt before the hooks.
    pub async fn before_agent_start(
        &self,
        initial: &mut Vec<AgentMessage>,
        options: &mut Value,
        system_prompt: &str,
        cancel: &CancellationToken,
    ) {
        if !self.listens("before_agent_start") {
            return;
        }
        let mut base = json!({"systemPrompt": system_prompt});
        match initial.iter().find(|m| matches!(m, AgentMessage::User(_) | AgentMessage::Custom(_))) {
            Some(AgentMessage::User(user)) => {
                base["messageType"] = json!("user");
                base["prompt"] = json!(user.content.text());
                let images: Vec<&ImageContent> = match &user.content {
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image(i) => Some(i),
                            _ => None,
                        })
                        .collect(),
                    UserContent::Text(_) => Vec::new(),
                };
                if !images.is_empty() {
                    base["images"] = json!(images);
                }
            }
            Some(message) => {
                base["messageType"] = json!("custom");
                base["message"] = json!(message);
            }
            None => return,
        }
        for ext in self.subscribers("before_agent_start") {
            base["systemPromptOptions"] = options.clone();
            let Some(result) = self.ask(&ext, "before_agent_start", base.clone(), Some(cancel)).await else { continue };
            if let Some(changed) = result.get("systemPromptOptions").filter(|o| o.is_object()) {
                *options = changed.clone();
            }
            if let Some(prompt) = result.get("systemPrompt").and_then(Value::as_str) {
                options["forceSystemPrompt"] = json!(prompt);
            }
            let messages = result.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
            for message in result.get("message").into_iter().chain(messages.iter()) {
                match custom_message(message) {
                    Ok(m) => initial.push(m),
                    Err(e) => self.report(&ext, "before_agent_start", format!("invalid message: {e}")).await,
                }
            }
        }
    }

    /// The `context` hooks, for the messages of one model request; `None` when none changed them.
    /// As in pi, handlers see the conversation without its system messages; a changed list gets
    /// them back folded into one leading message (so the prompt and tools cannot be dropped).
    pub async fn context(&self, messages: &[AgentMessage], cancel: &CancellationToken) -> Option<Vec<AgentMessage>> {
        if !self.listens("context") {
            return None;
        }
        let visible: Vec<AgentMessage> =
            messages.iter().filter(|m| !matches!(m, AgentMessage::System(_))).cloned().collect();
        let returned = self.chain_messages("context", &visible, cancel).await?;
        if returned == visible {
            return None;
        }
        let declared = pi_types::system_message::replay(messages);
        let head = declared.checkpoint(declared.timestamp.unwrap_or_else(now_ms)).map(AgentMessage::System);
        Some(head.into_iter().chain(returned).collect())
    }

    /// pi's `agent_end` handlers, awaited before the event goes out and the
    /// run goes on or settles (`agent_end_hook` with the event's payload),
    /// one extension after the other in load order, each to its end.
    pub async fn agent_end(&self, payload: Value) {
        let to_the_end = CancellationToken::new();
        for ext in self.subscribers(super::AGENT_END_HOOK) {
            self.ask(&ext, super::AGENT_END_HOOK, payload.clone(), Some(&to_the_end)).await;
        }
    }

    /// pi's `message_end` handlers, which may replace the finalized message
    /// (`message_end_hook` `{message}`, answered `{message}` or `null`),
    /// chained in load order: the message as the last one left it, `None`
    /// when none replaced it.
    pub async fn message_end(&self, message: &AgentMessage, cancel: &CancellationToken) -> Option<AgentMessage> {
        const HOOK: &str = "message_end_hook";
        if !self.listens(HOOK) {
            return None;
        }
        let mut current: Option<AgentMessage> = None;
        for ext in self.subscribers(HOOK) {
            let now = current.as_ref().unwrap_or(message);
            let Some(result) = self.ask(&ext, HOOK, json!({"message": now}), Some(cancel)).await else { continue };
            let Some(replaced) = result.get("message").filter(|m| m.is_object()) else { continue };
            match serde_json::from_value::<AgentMessage>(replaced.clone()) {
                Ok(message) => current = Some(message),
                Err(e) => self.report(&ext, "message_end", format!("invalid message: {e}")).await,
            }
        }
        current
    }

    /// The `context_with_system` hooks, after the `context` ones: the request's
    /// whole transcript, system messages (prompt and tool declarations)
    /// included; what they return is sent as it is. `None` when none changed it.
    pub async fn context_with_system(
        &self,
        messages: &[AgentMessage],
        cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        self.chain_messages("context_with_system", messages, cancel).await
    }

    /// Hook `method` over a message list, each extension's list chained into the next.
    async fn chain_messages(
        &self,
        method: &str,
        messages: &[AgentMessage],
        cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        if !self.listens(method) {
            return None;
        }
        let mut current: Option<Vec<AgentMessage>> = None;
        for ext in self.subscribers(method) {
            let list = current.as_deref().unwrap_or(messages);
            let Some(result) = self.ask(&ext, method, json!({"messages": list}), Some(cancel)).await else {
                continue;
            };
            let Some(replaced) = result.get("messages").filter(|m| m.is_array()) else { continue };
            match serde_json::from_value::<Vec<AgentMessage>>(replaced.clone()) {
                Ok(list) => current = Some(list),
                Err(e) => self.report(&ext, method, format!("invalid messages: {e}")).await,
            }
        }
        current
    }

    /// The `tool_result` hooks, for the result of a tool that ran.
    pub async fn tool_result(
        &self,
        parent: Option<&str>,
        tool_call_id: &str,
        tool_name: &str,
        input: &Value,
        mut output: ToolOutput,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        for ext in self.subscribers("tool_result") {
            let mut params = json!({
                "toolName": tool_name,
                "toolCallId": tool_call_id,
                "input": input,
                "content": output.content,
                "details": output.details,
                "isError": output.is_error,
            });
            if let Some(usage) = &output.usage {
                params["usage"] = json!(usage);
            }
            if let Some(structured) = &output.structured_content {
                params["structuredContent"] = structured.clone();
            }
            if let Some(parent) = parent {
                params["parentToolCallId"] = json!(parent);
            }
            let Some(result) = self.ask(&ext, "tool_result", params, Some(cancel)).await else { continue };
            if !result.is_object() {
                continue;
            }
            if result.get("content").is_some() {
                let (content, _) = super::tool_content::parse_content(&result);
                output.content = content;
            }
            // pi's rule: new content without new structured content drops
            // the old one (it may no longer match); the host answers with
            // what its handlers left (`null`: none).
            match result.get("structuredContent") {
                Some(structured) => output.structured_content = (!structured.is_null()).then(|| structured.clone()),
                None if result.get("content").is_some() => output.structured_content = None,
                None => {}
            }
            if let Some(details) = result.get("details") {
                output.details = (!details.is_null()).then(|| details.clone());
            }
            if let Some(is_error) = result.get("isError").and_then(Value::as_bool) {
                output.is_error = is_error;
            }
            if let Some(usage) = super::tool_content::parse_usage(&result) {
                output.usage = Some(usage);
            }
        }
        output
    }

    /// The `session_before_compact` hooks, before a compaction's summary is
    /// written (`event`: pi's payload without `type`). As pi composes them,
    /// the last handler that answers decides; a cancel ends the round.
    pub async fn before_compact(&self, event: Value, cancel: &CancellationToken) -> CompactDecision {
        let mut decision = CompactDecision::Default;
        for ext in self.subscribers("session_before_compact") {
            let Some(result) = self.ask(&ext, "session_before_compact", event.clone(), Some(cancel)).await else {
                continue;
            };
            if result.is_null() {
                continue;
            }
            if result.get("cancel").and_then(Value::as_bool) == Some(true) {
                return CompactDecision::Cancel;
            }
            decision = match result.get("compaction").filter(|c| c.is_object()) {
                Some(compaction) => CompactDecision::Replace(compaction.clone()),
                None => CompactDecision::Default,
            };
        }
        decision
    }

    /// The `user_bash` hooks, before the RPC `bash` command runs `event`'s
    /// command (`{type, command, excludeFromContext, cwd}`): the first
    /// handler that answers decides. A handler's failure fails the command
    /// (reported as `extension_error` too), as in pi.
    pub async fn user_bash(&self, event: Value) -> BashDecision {
        for ext in self.subscribers("user_bash") {
            match ext.call("user_bash", event.clone(), None).await {
                Ok(answer) => {
                    if let Some(result) = answer.get("result").filter(|r| r.is_object()) {
                        return BashDecision::Result(result.clone());
                    }
                    if let Some(handle) = answer.get("operations").filter(|h| !h.is_null()) {
                        return BashDecision::Operations(UserBashOperations::new(ext.clone(), handle.clone()));
                    }
                }
                Err(CallError::Failed(error)) => {
                    self.report(&ext, "user_bash", error.clone()).await;
                    return BashDecision::Failed(error);
                }
                Err(CallError::Dead(_) | CallError::Cancelled) => {}
            }
        }
        BashDecision::Local
    }

    pub(super) async fn report(&self, ext: &Extension, event: &str, error: String) {
        if let Some(signals) = &self.shared.signals {
            signals.deliver(HostSignal::Error { path: ext.path_string(), event: event.to_string(), error }).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_messages_parse() {
        let AgentMessage::Custom(m) = custom_message(&json!({"customType": "note", "content": "x"})).unwrap() else {
            panic!("not custom")
        };
        assert_eq!((m.custom_type.as_str(), m.display, m.content.text().as_str()), ("note", true, "x"));
        assert!(custom_message(&json!({"content": "x"})).is_err());
    }
}
