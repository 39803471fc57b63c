//! What an extension may ask the agent to do: send a user message (starts
//! or steers a run) or a custom message, append a custom entry, name the
//! session, read the state, messages and commands. Failures of the message
//! calls are also reported as `extension_error`, since an extension may send
//! them without waiting for an answer.

use serde_json::{Value, json};

use super::Agent;
use crate::agent::internal::QueueKind;
use crate::agent::state::{AfterSettled, Pending};
use crate::event::AgentEvent;
use crate::extensions::ExtRequest;
use crate::extensions::hooks::custom_message;
use crate::message::{AgentMessage, ContentBlock, ImageContent};

/// Text and images of a `content` (a string or content blocks).
pub(super) fn user_content(params: &Value) -> Result<(String, Vec<ImageContent>), String> {
    match params.get("content") {
        Some(Value::String(s)) => Ok((s.clone(), Vec::new())),
        Some(Value::Array(items)) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for item in items {
                match serde_json::from_value::<ContentBlock>(item.clone()) {
                    Ok(ContentBlock::Text(t)) => texts.push(t.text),
                    Ok(ContentBlock::Image(i)) => images.push(i),
                    _ => return Err(format!("unsupported content block: {item}")),
                }
            }
            Ok((texts.join("\n"), images))
        }
        _ => Err("\"content\" must be a string or an array of content blocks".to_string()),
    }
}

fn deliver_as(params: &Value) -> Option<&str> {
    params.get("deliverAs").and_then(Value::as_str)
}

impl Agent {
    pub(super) async fn extension_request(&mut self, id: usize, request: ExtRequest) -> Result<Value, String> {
        let method = match &request {
            ExtRequest::SendUserMessage(_) => "sendUserMessage",
            ExtRequest::SendMessage(_) => "sendMessage",
            _ => "",
        };
        let result = match request {
            ExtRequest::SendUserMessage(p) => self.ext_send_user_message(id, &p).await,
            ExtRequest::SendMessage(p) => self.ext_send_message(id, &p).await,
            ExtRequest::AppendEntry(p) => {
                let custom_type = p.get("customType").and_then(Value::as_str).filter(|s| !s.is_empty());
                let custom_type = custom_type.ok_or("\"customType\" is required")?;
                let data = p.get("data").filter(|d| !d.is_null()).cloned();
                let id = self.append_announced_custom(custom_type, data).await?;
                Ok(json!({"entryId": id}))
            }
            ExtRequest::SetSessionName(p) => {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                self.set_session_name(name).await.map(|_| Value::Null).map_err(|e| e.message)
            }
            ExtRequest::SessionAppend(p) => {
                let kind = p.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
                self.session.append_entry(&kind, &p).map(|id| json!({"id": id}))
            }
            ExtRequest::GetState => {
                self.sync_mcp_activation();
                Ok(self.extension_state_json())
            }
            ExtRequest::GetSystemPromptOptions => Ok(self.system_prompt_options_json()),
            ExtRequest::GetMessages => Ok(json!({"messages": self.session.messages()})),
            other @ (ExtRequest::SetActiveTools(_)
            | ExtRequest::GetAllTools
            | ExtRequest::GetSession
            | ExtRequest::SetLabel(_)
            | ExtRequest::Abort
            | ExtRequest::Shutdown
            | ExtRequest::Emit(_)
            | ExtRequest::GetModels
            | ExtRequest::Compact(_)
            | ExtRequest::SessionOp(_)
            | ExtRequest::Models(..)) => self.extension_host_request(id, other).await,
            ExtRequest::Mcp { method, params } if method == "useBuiltinExtension" => {
                self.use_builtin_extension(id, &params)
            }
            ExtRequest::Mcp { method, params } => self.extension_mcp_request(id, &method, &params),
            // Served aside by the actor's loop (sdk_session_mcp.rs), never here.
            ExtRequest::SessionMcp { method, .. } => Err(format!("{method} is not served here")),
            // Served aside by the actor's loop (selection_events.rs), never here.
            ExtRequest::SetModel(_) => Err("setModel is not served here".to_string()),
            ExtRequest::SetThinkingLevel(_) => Err("setThinkingLevel is not served here".to_string()),
            ExtRequest::Library(p) => crate::agent::extension_library::request(&p).await,
            ExtRequest::GetCommands => {
                let commands: Vec<Value> = self
                    .command_list()
                    .into_iter()
                    .map(|c| {
                        json!({
                            "name": c.name,
                            "description": c.description,
                            "source": c.source.as_str(),
                            "location": c.location.map(|l| l.as_str()),
                            "path": c.path,
                            "sourceInfo": c.source_info.map(|i| {
                                let mut info = json!({"path": i.path, "source": i.source, "scope": i.scope, "origin": i.origin});
                                if let Some(base) = i.base_dir {
                                    info["baseDir"] = json!(base);
                                }
                                info
                            }),
                        })
                    })
                    .collect();
                Ok(json!({"commands": commands}))
            }
        };
        if let (Err(error), false) = (&result, method.is_empty()) {
            let path = self.ext.handle().get(id).map(|e| e.path_string()).unwrap_or_default();
            let event =
                AgentEvent::ExtensionError { extension_path: path, event: method.to_string(), error: error.clone() };
            self.emit(event).await;
        }
        result
    }

    /// A user message: first past the `input` hooks (when any listens);
    /// with `expandPromptTemplates`, handled as a client's prompt (commands,
    /// templates, skills); else delivered as it is.
    async fn ext_send_user_message(&mut self, id: usize, p: &Value) -> Result<Value, String> {
        let (text, images) = user_content(p)?;
        if self.activity.is_settling() {
            // pi sends it once `agent_settled` is out, as a new prompt.
            self.activity.defer_until_settled(AfterSettled::UserMessage { extension: id, params: p.clone() });
            return Ok(Value::Null);
        }
        if p.get("expandPromptTemplates").and_then(Value::as_bool) == Some(true) {
            let streaming_behavior = match deliver_as(p) {
                Some("steer") => Some(crate::op::StreamingBehavior::Steer),
                Some("followUp") => Some(crate::op::StreamingBehavior::FollowUp),
                _ => None,
            };
            let op = crate::op::Op::Prompt { message: text, images, streaming_behavior };
            Box::pin(self.handle_op(Pending::new(None, op))).await;
            return Ok(Value::Null);
        }
        if self.user_message_input_gate(id, p) {
            return Ok(Value::Null);
        }
        self.send_user_message_now(p).await
    }

    /// Deliver a user message the `input` hooks let through; failures are `extension_error`s.
    pub(super) async fn deliver_user_message(&mut self, id: usize, p: &Value) {
        if let Err(error) = self.send_user_message_now(p).await {
            self.report_message_error(id, "sendUserMessage", error).await;
        }
    }

    /// A user message or a turn-triggering custom message held while a
    /// run's `agent_settled` handlers ran, sent now that the run is over;
    /// failures are `extension_error`s.
    pub(super) async fn send_settled_message(&mut self, id: usize, p: &Value, user: bool) {
        let sent = if user {
            Box::pin(self.ext_send_user_message(id, p)).await
        } else {
            Box::pin(self.ext_send_message(id, p)).await
        };
        if let Err(error) = sent {
            self.report_message_error(id, if user { "sendUserMessage" } else { "sendMessage" }, error).await;
        }
    }

    async fn report_message_error(&mut self, id: usize, event: &str, error: String) {
        let path = self.ext.handle().get(id).map(|e| e.path_string()).unwrap_or_default();
        let event = event.to_string();
        self.emit(AgentEvent::ExtensionError { extension_path: path, event, error }).await;
    }

    /// Queued while a run streams (`deliverAs` required), else it starts a
    /// run. Templates are not expanded (pi's default).
    async fn send_user_message_now(&mut self, p: &Value) -> Result<Value, String> {
        let (text, images) = user_content(p)?;
        if self.activity.is_running() {
            let kind = match deliver_as(p) {
                Some("steer") => QueueKind::Steering,
                Some("followUp") => QueueKind::FollowUp,
                _ => {
                    return Err(
                        "Agent is already processing. Specify deliverAs ('steer' or 'followUp') to queue the message."
                            .to_string(),
                    );
                }
            };
            self.enqueue(None, kind, text, images).await;
            return Ok(Value::Null);
        }
        self.preflight().map_err(|e| e.message)?;
        self.start_run(vec![AgentMessage::user(&text, &images)]);
        Ok(Value::Null)
    }

    /// A custom message (pi's `sendMessage`): `nextTurn` waits for the next
    /// prompt; during a run it is steered / followed up, or appended when the
    /// turn ends (`triggerTurn: false`); while idle it starts a run
    /// (`triggerTurn: true`) or is only appended. While the run's
    /// `agent_settled` handlers run, the run is over for it, as for pi: one
    /// that triggers a turn waits until `agent_settled` is out, any other is
    /// appended.
    async fn ext_send_message(&mut self, id: usize, p: &Value) -> Result<Value, String> {
        let message = custom_message(p)?;
        let trigger = p.get("triggerTurn").and_then(Value::as_bool);
        if deliver_as(p) == Some("nextTurn") {
            self.ext.queue_next_turn(message);
            return Ok(Value::Null);
        }
        if self.activity.is_settling() {
            if trigger == Some(true) {
                let params = p.clone();
                self.activity.defer_until_settled(AfterSettled::TriggeringMessage { extension: id, params });
            } else {
                self.append_and_announce(message).await;
            }
        } else if self.activity.is_running() {
            if trigger == Some(false) {
                self.defer_custom_message(message);
            } else if deliver_as(p) == Some("followUp") {
                self.queues.push_hidden(QueueKind::FollowUp, message);
            } else {
                self.queues.push_hidden(QueueKind::Steering, message);
            }
        } else if trigger == Some(true) {
            self.preflight().map_err(|e| e.message)?;
            self.start_run(vec![message]);
        } else {
            self.append_and_announce(message).await;
        }
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_and_custom_messages_parse() {
        assert_eq!(user_content(&json!({"content": "hi"})).unwrap().0, "hi");
        let (text, images) = user_content(&json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "b"}
        ]}))
        .unwrap();
        assert_eq!((text.as_str(), images.len()), ("a\nb", 1));
        assert!(user_content(&json!({})).is_err());
    }
}
