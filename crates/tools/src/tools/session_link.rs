//! The session a tool runs in, as a built-in extension of pi 1.6.0 reaches
//! it: the `custom` entries of the current branch (`ctx.sessionManager`'s
//! `getBranch()`) and `pi.appendEntry()`. The agent, which owns the
//! session, answers both; a tool never writes the session file itself.

use async_trait::async_trait;
use serde_json::Value;

/// Reads and writes of a tool's session (see the module docs).
#[async_trait]
pub trait SessionLink: Send + Sync {
    /// The `data` (`null` when absent) of each `custom` entry of type
    /// `custom_type` on the path from the root to the current leaf, root first.
    async fn branch_custom_data(&self, custom_type: &str) -> Vec<Value>;

    /// Append a `custom` entry at the leaf and announce it
    /// (`entry_appended`), as an extension's `pi.appendEntry()` does: its id.
    async fn append_custom(&self, custom_type: &str, data: Value) -> Result<String, String>;
}
