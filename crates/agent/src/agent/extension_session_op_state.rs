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
    /// `ctx.fork(id, {position: "at"})` below the leaf: the op is a clone of the path to `id`.
    fork_targets: Mutex<HashMap<RequestTag, String>>,
    /// `ctx.newSession({setup})`: the extension whose setup runs in the new session, by op.
    setup_callers: Mutex<HashMap<RequestTag, usize>>,
    /// The new session's `session_start`, held for every extension but the
    /// one whose setup runs (pi starts them all once the setup is done).
    held_start: Mutex<Option<(usize, Value)>>,
    /// The answers of ops that replaced the session, sent once the new
    /// runtime has started (pi's replacement resolves after every `session_start`).
    parked: Mutex<Vec<(ExtReply, Result<Value, String>)>>,
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
        if let Ok(mut targets) = self.fork_targets.lock() {
            targets.remove(&tag);
        }
        if let Ok(mut callers) = self.setup_callers.lock() {
            callers.remove(&tag);
        }
        self.waiting.lock().ok()?.remove(&tag)
    }

    /// The clone op `tag` copies the path to `entry_id`, not the whole current branch.
    pub(super) fn set_fork_target(&self, tag: RequestTag, entry_id: String) {
        if let Ok(mut targets) = self.fork_targets.lock() {
            targets.insert(tag, entry_id);
        }
    }

    /// The new-session op `tag` runs extension `caller`'s `setup` before the extensions start.
    pub(super) fn set_setup_caller(&self, tag: RequestTag, caller: usize) {
        if let Ok(mut callers) = self.setup_callers.lock() {
            callers.insert(tag, caller);
        }
    }

    /// The extension whose `setup` the new-session op `tag` runs, if any.
    pub(super) fn setup_caller(&self, tag: Option<RequestTag>) -> Option<usize> {
        let tag = tag.filter(|t| *t >= FIRST_TAG)?;
        self.setup_callers.lock().ok()?.get(&tag).copied()
    }

    /// Hold `payload` (a `session_start`) for the others until `caller`'s setup is done.
    pub(super) fn hold_start(&self, caller: usize, payload: Value) {
        if let Ok(mut held) = self.held_start.lock() {
            *held = Some((caller, payload));
        }
    }

    /// The `session_start` held while `caller`'s setup ran, once it is done (or `caller` died).
    pub(super) fn release_start(&self, caller: usize) -> Option<Value> {
        let mut held = self.held_start.lock().ok()?;
        match held.take() {
            Some((id, payload)) if id == caller => Some(payload),
            other => {
                *held = other;
                None
            }
        }
    }

    /// Answer `reply` with `outcome` once the new runtime has started ([`Self::release_parked`]).
    pub(super) fn park(&self, reply: ExtReply, outcome: Result<Value, String>) {
        if let Ok(mut parked) = self.parked.lock() {
            parked.push((reply, outcome));
        }
    }

    /// The new runtime has started: the answers parked for it go.
    pub(super) fn release_parked(&self) {
        let parked = self.parked.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
        for (reply, outcome) in parked {
            let _ = reply.send(outcome);
        }
    }

    /// The entry the clone op `tag` stops at, when it is an extension's fork below the leaf.
    pub(super) fn fork_target(&self, tag: Option<RequestTag>) -> Option<String> {
        let tag = tag.filter(|t| *t >= FIRST_TAG)?;
        self.fork_targets.lock().ok()?.get(&tag).cloned()
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
