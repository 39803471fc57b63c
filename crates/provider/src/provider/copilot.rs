//! GitHub Copilot's per-request headers, as pi 1.6.0 sends them on its
//! Messages, Chat Completions and Responses requests (the fixed editor
//! headers, `Editor-Version`, `Copilot-Integration-Id`, …, come with the
//! catalog models' `headers`):
//!
//! * `X-Initiator`: `user` when the conversation ends with a user message,
//!   else `agent` (a follow-up after tool results);
//! * `Openai-Intent: conversation-edits`;
//! * `Copilot-Vision-Request: true` when a user message or tool result holds an image.
//!
//! Configured headers of the same name win. Messages requests to Copilot
//! authenticate with a bearer token.

use super::ProviderRequest;
use super::convert::{self, LlmMessage};
use super::shared::has_header;
use crate::message::{ContentBlock, UserContent};

pub const PROVIDER: &str = "github-copilot";

/// The dynamic headers of a Copilot request.
pub fn dynamic_headers(request: &ProviderRequest) -> Vec<(&'static str, &'static str)> {
    let llm = convert::to_llm(&request.messages);
    let initiator = match llm.last() {
        Some(LlmMessage::User { .. }) => "user",
        Some(_) => "agent",
        None => "user",
    };
    let has_image = |blocks: &[ContentBlock]| blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
    let vision = llm.iter().any(|m| match m {
        LlmMessage::User { content: UserContent::Blocks(blocks), .. } => has_image(blocks),
        LlmMessage::ToolResult(t) => has_image(&t.content),
        _ => false,
    });
    let mut out = vec![("X-Initiator", initiator), ("Openai-Intent", "conversation-edits")];
    if vision {
        out.push(("Copilot-Vision-Request", "true"));
    }
    out
}

/// Add the dynamic headers to a Copilot request's headers (unless configured).
pub fn finish_headers(request: &ProviderRequest, headers: &mut Vec<(String, String)>) {
    if request.model.provider != PROVIDER {
        return;
    }
    for (name, value) in dynamic_headers(request) {
        if !has_header(headers, name) {
            headers.push((name.to_string(), value.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_support::simple_request;

    #[test]
    fn the_initiator_follows_the_last_message() {
        let mut request = simple_request(crate::provider::faux::faux_model(), "hi");
        request.model.provider = PROVIDER.into();
        let mut headers = Vec::new();
        finish_headers(&request, &mut headers);
        assert_eq!(
            headers,
            vec![
                ("X-Initiator".to_string(), "user".to_string()),
                ("Openai-Intent".into(), "conversation-edits".into())
            ]
        );
        request.messages.push(crate::message::AgentMessage::ToolResult(crate::message::ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("out")],
            details: None,
            usage: None,
            is_error: false,
            duration_ms: None,
            timestamp: 2,
            nested_calls: None,
            extra: Default::default(),
        }));
        assert_eq!(dynamic_headers(&request)[0], ("X-Initiator", "agent"));
    }
}
