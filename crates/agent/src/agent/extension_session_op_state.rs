//! What the actor keeps while an extension command's session op is under
//! way: the extension waiting for each op's answer (by the op's own tag) and
//! a `ctx.navigateTree()` waiting for its `session_before_tree` hooks. Plain
//! data, so the extension state can hold it without knowing the actor.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::op::RequestTag;

/// Tags of extension session ops start here, far above any client's tag.
const FIRST_TAG: RequestTag = 1 << 62;

/// Where an extension's session-op request gets its answer.
pub(super) type ExtReply = oneshot::Sender<Result<Value, String>>;

/// The extension requests waiting for their op's answer, by tag.
#[derive(Default)]
pub(crate) struct SessionOpReplies {
    next: AtomicU64,
    waiting: Mutex<HashMap<RequestTag, ExtReply>>,
}

impl SessionOpReplies {
    /// A tag of its own for the op whose answer goes to `reply`.
    pub(super) fn register(&self, reply: ExtReply) -> RequestTag {
        let tag = FIRST_TAG + self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(tag, reply);
        }
        tag
    }

    /// The extension waiting for `tag`'s answer, if it is one of theirs.
    pub(super) fn take(&self, tag: RequestTag) -> Option<ExtReply> {
        if tag < FIRST_TAG {
            return None;
        }
        self.waiting.lock().ok()?.remove(&tag)
    }
}

/// A navigation waiting for its hooks.
#[derive(Debug)]
pub(crate) struct Navigation {
    pub(super) target_id: String,
    pub(super) old_leaf_id: Option<String>,
    pub(super) summarize: bool,
    pub(super) custom_instructions: Option<String>,
    pub(super) replace_instructions: Option<bool>,
    pub(super) label: Option<String>,
    /// The abandoned entries, oldest first.
    pub(super) entries_to_summarize: Vec<Value>,
    /// Whether the hooks were asked (the gate is closed until they answer).
    pub(super) hooked: bool,
    pub(super) reply: ExtReply,
}
