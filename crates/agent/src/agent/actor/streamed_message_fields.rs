//! The fields of a streaming reply that its stream events do not carry
//! (the response id, usage, stop reason, each block's signature), as an
//! extension's model call sends them to its host with each batch of
//! updates: pi-ai's partial message has them as soon as the provider
//! says them, not only once the reply is complete.

use serde_json::{Map, Value, json};

use crate::message::{AssistantMessage, ContentBlock, StopReason};

/// `{responseId?, usage, stopReason?, rawStopReason?, errorMessage?, blocks}`
/// of `message` as it stands (`stopped`: the provider gave its stop reason). `blocks`
/// holds, by content index, each block's signature fields (`{}` for one
/// without any).
pub(crate) fn streamed_message_fields(message: &AssistantMessage, stopped: bool) -> Value {
    let mut fields = Map::new();
    if let Some(id) = &message.response_id {
        fields.insert("responseId".into(), json!(id));
    }
    fields.insert("usage".into(), serde_json::to_value(&message.usage).unwrap_or(Value::Null));
    // A call that failed or was aborted has its final stop reason and error
    // before its last blocks end (pi-ai ends them once it knows).
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    if stopped || failed {
        fields.insert("stopReason".into(), serde_json::to_value(message.stop_reason).unwrap_or(Value::Null));
        if let Some(raw) = &message.raw_stop_reason {
            fields.insert("rawStopReason".into(), json!(raw));
        }
    }
    if let Some(error) = &message.error_message {
        fields.insert("errorMessage".into(), json!(error));
    }
    let blocks: Vec<Value> = message.content.iter().map(block_fields).collect();
    fields.insert("blocks".into(), Value::Array(blocks));
    Value::Object(fields)
}

/// A block's signature fields, named as pi-ai names them.
fn block_fields(block: &ContentBlock) -> Value {
    let mut fields = Map::new();
    match block {
        ContentBlock::Thinking(t) => {
            if let Some(signature) = &t.thinking_signature {
                fields.insert("thinkingSignature".into(), json!(signature));
            }
            if t.redacted {
                fields.insert("redacted".into(), json!(true));
            }
        }
        ContentBlock::Text(t) => {
            if let Some(signature) = &t.text_signature {
                fields.insert("textSignature".into(), json!(signature));
            }
        }
        ContentBlock::ToolCall(c) => {
            if let Some(signature) = &c.thought_signature {
                fields.insert("thoughtSignature".into(), json!(signature));
            }
        }
        _ => {}
    }
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{TextContent, ThinkingContent};

    #[test]
    fn the_fields_are_those_the_provider_said_so_far() {
        let model: crate::model::Model = serde_json::from_value(json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": "p", "baseUrl": "",
            "reasoning": true, "input": ["text"], "cost": {}, "contextWindow": 1000, "maxTokens": 100
        }))
        .expect("model");
        let mut message = AssistantMessage::empty(&model, StopReason::Stop);
        message.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: "hm".into(),
            thinking_signature: Some("reasoning_content".into()),
            redacted: false,
        }));
        message.content.push(ContentBlock::Text(TextContent { text: "hi".into(), text_signature: None }));
        let fields = streamed_message_fields(&message, false);
        assert_eq!(fields["blocks"], json!([{"thinkingSignature": "reasoning_content"}, {}]));
        assert!(fields.get("stopReason").is_none() && fields.get("responseId").is_none());
        assert_eq!(fields["usage"]["totalTokens"], 0);
        message.response_id = Some("r1".into());
        message.raw_stop_reason = Some("stop".into());
        let fields = streamed_message_fields(&message, true);
        assert_eq!(
            (&fields["responseId"], &fields["stopReason"], &fields["rawStopReason"]),
            (&json!("r1"), &json!("stop"), &json!("stop"))
        );
    }
}
