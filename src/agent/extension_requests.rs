//! What an extension may ask the agent to do: send a user message (starts
//! or steers a run) or a custom message, append a custom entry, name the
//! session, read the state, messages and commands. Failures of the message
//! calls are also reported as `extension_error`, since an extension may send
//! them without waiting for an answer.

use serde_json::{Value, json};

use super::actor::Agent;
use super::internal::QueueKind;
use crate::event::AgentEvent;
use crate::extensions::ExtRequest;
use crate::message::{AgentMessage, ContentBlock, CustomMessage, ImageContent, UserContent, now_ms};

/// Text and images of a `content` (a string or content blocks).
fn user_content(params: &Value) -> Result<(String, Vec<ImageContent>), String> {
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

fn custom_message(params: &Value) -> Result<AgentMessage, String> {
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
            ExtRequest::SendUserMessage(p) => self.ext_send_user_message(&p).await,
            ExtRequest::SendMessage(p) => self.ext_send_message(&p).await,
            ExtRequest::AppendEntry(p) => {
                let custom_type = p.get("customType").and_then(Value::as_str).filter(|s| !s.is_empty());
                let custom_type = custom_type.ok_or("\"customType\" is required")?;
                let data = p.get("data").filter(|d| !d.is_null()).cloned();
                let id = self.session.append_custom(custom_type, data).map_err(|e| e.to_string())?;
                Ok(json!({"entryId": id}))
            }
            ExtRequest::SetSessionName(p) => {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                self.set_session_name(name).await.map(|_| Value::Null).map_err(|e| e.message)
            }
            ExtRequest::GetState => Ok(self.extension_state_json()),
            ExtRequest::GetMessages => Ok(json!({"messages": self.messages})),
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
                        })
                    })
                    .collect();
                Ok(json!({"commands": commands}))
            }
        };
        if let (Err(error), false) = (&result, method.is_empty()) {
            let path = self.ext.handle.get(id).map(|e| e.path_string()).unwrap_or_default();
            let event =
                AgentEvent::ExtensionError { extension_path: path, event: method.to_string(), error: error.clone() };
            self.emit(event).await;
        }
        result
    }

    /// A user message: queued while a run streams (`deliverAs` required),
    /// else it starts a run. Templates are not expanded (pi's default).
    async fn ext_send_user_message(&mut self, p: &Value) -> Result<Value, String> {
        let (text, images) = user_content(p)?;
        if self.state.is_running() {
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
    /// run ends (`triggerTurn: false`); while idle it starts a run
    /// (`triggerTurn: true`) or is only appended.
    async fn ext_send_message(&mut self, p: &Value) -> Result<Value, String> {
        let message = custom_message(p)?;
        let trigger = p.get("triggerTurn").and_then(Value::as_bool);
        if deliver_as(p) == Some("nextTurn") {
            self.ext.next_turn.push(message);
            return Ok(Value::Null);
        }
        if self.state.is_running() {
            if trigger == Some(false) {
                self.defer_custom_message(message);
            } else if deliver_as(p) == Some("followUp") {
                self.follow_up.push_hidden(message);
            } else {
                self.steering.push_hidden(message);
            }
        } else if trigger == Some(true) {
            self.preflight().map_err(|e| e.message)?;
            self.start_run(vec![message]);
        } else {
            self.append_and_announce(message).await;
        }
        Ok(Value::Null)
    }

    fn extension_state_json(&self) -> Value {
        json!({
            "sessionId": self.session.session_id(),
            "sessionFile": self.session.file_path().map(|p| p.display().to_string()),
            "sessionName": self.session.name(),
            "cwd": self.cwd.display().to_string(),
            "isStreaming": self.state.is_running(),
            "model": {"provider": self.model.provider, "id": self.model.id},
            "thinkingLevel": self.thinking.as_str(),
            "messageCount": self.messages.len(),
            "pendingMessageCount": self.steering.len() + self.follow_up.len(),
            "activeTools": self.active_tools,
        })
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

        let AgentMessage::Custom(m) = custom_message(&json!({"customType": "note", "content": "x"})).unwrap() else {
            panic!("not custom")
        };
        assert_eq!((m.custom_type.as_str(), m.display, m.content.text().as_str()), ("note", true, "x"));
        assert!(custom_message(&json!({"content": "x"})).is_err());
    }
}
