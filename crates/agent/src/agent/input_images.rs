//! The session's images prepared as pi 1.6.0 prepares them as they enter
//! the conversation (the settings' `images.autoResize`): a prompt's after
//! the `before_agent_start` hooks, a queued message's at its delivery, a
//! tool result's after the `tool_result` hooks. The work is the read tool's
//! image code (`tools::image_blocks`), run off the async threads. And the
//! settings' `images.blockImages`, which sends a note for each image.

use crate::message::{AgentMessage, ContentBlock, TextContent, UserContent};
use crate::tools::image::Limits;
use crate::tools::image_blocks::{prepare_tool_result_images, prepare_user_images};

fn has_image(blocks: &[ContentBlock]) -> bool {
    blocks.iter().any(|block| matches!(block, ContentBlock::Image(_)))
}

/// `prepare` of `blocks` on a blocking thread (`None`: nothing changed).
async fn prepared(
    blocks: &[ContentBlock],
    resize: Option<Limits>,
    prepare: fn(&[ContentBlock], Option<&Limits>) -> Option<Vec<ContentBlock>>,
) -> Option<Vec<ContentBlock>> {
    if !has_image(blocks) {
        return None;
    }
    let blocks = blocks.to_vec();
    tokio::task::spawn_blocking(move || prepare(&blocks, resize.as_ref())).await.ok().flatten()
}

/// A user message with its images prepared (pi's `_normalizePromptImages`);
/// any other message as it is.
pub(crate) async fn user_message_prepared(mut message: AgentMessage, resize: Option<Limits>) -> AgentMessage {
    if let AgentMessage::User(user) = &mut message
        && let UserContent::Blocks(blocks) = &mut user.content
        && let Some(ready) = prepared(blocks, resize, prepare_user_images).await
    {
        *blocks = ready;
    }
    message
}

/// A tool result's content with its images prepared (pi's
/// `normalizeToolResultImages`), or as it is.
pub(crate) async fn tool_result_prepared(content: &mut Vec<ContentBlock>, resize: Option<Limits>) {
    if let Some(ready) = prepared(content, resize, prepare_tool_result_images).await {
        *content = ready;
    }
}

/// What the model is told in place of an image under `images.blockImages` (pi's words).
const IMAGES_BLOCKED: &str = "Image reading is disabled.";

/// `blocks` with each image replaced by the note, one note for a run of them.
fn images_as_notes(blocks: &mut Vec<ContentBlock>) {
    if !has_image(blocks) {
        return;
    }
    let is_note =
        |block: &ContentBlock| matches!(block, ContentBlock::Text(TextContent { text, .. }) if *text == IMAGES_BLOCKED);
    let mut noted: Vec<ContentBlock> = Vec::with_capacity(blocks.len());
    for block in blocks.drain(..) {
        let block = if matches!(block, ContentBlock::Image(_)) { ContentBlock::text(IMAGES_BLOCKED) } else { block };
        if is_note(&block) && noted.last().is_some_and(is_note) {
            continue;
        }
        noted.push(block);
    }
    *blocks = noted;
}

/// A request's messages under `images.blockImages`, as pi converts them:
/// the images of user messages and tool results become notes.
pub(crate) fn without_images(mut messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    for message in &mut messages {
        match message {
            AgentMessage::User(user) => {
                if let UserContent::Blocks(blocks) = &mut user.content {
                    images_as_notes(blocks);
                }
            }
            AgentMessage::ToolResult(result) => images_as_notes(&mut result.content),
            _ => {}
        }
    }
    messages
}
