//! Sessions: pi's append-only JSONL tree of entries (v3), its store on disk,
//! tree navigation and the context the model sees.
//!
//! * [`Session`] (`store`): the entries of one session, the leaf pointer and
//!   the backing file; constructors `in_memory`, `create`, `open`; queries.
//! * `append`: the `append_*` helpers (ids, parent links, timestamps).
//! * `tree`: root-to-leaf paths, `get_tree` nodes, forkable user messages.
//! * `context`: [`SessionContext`], what the model sees for the leaf.
//! * `fork`: `fork` / `clone_branch`, new sessions made of one branch.
//! * `lookup`: session directories, `--continue`, `--session <id|prefix|path>`.
//! * `start`: `--session-id` and `--fork` sessions.
//! * `load` / `migrate`: reading damaged and old (v1, v2) files; `fast_line`:
//!   lines of the shape pi writes read straight into typed entries, `compact`
//!   taking JSON spacing out of lines first.
//! * `slot` / `scan`: entries kept by their place in the file (messages,
//!   custom entries), read back when needed; the quick look at a line that
//!   gives their type, id, parent and role.

mod append;
mod compact;
mod context;
mod conversation;
pub use pi_types::session::entry;
mod error;
mod fast_line;
mod fence;
mod fork;
mod load;
mod lookup;
mod migrate;
mod record;
mod scan;
mod slot;
mod start;
mod store;
mod tree;

#[cfg(test)]
mod tests;

pub use append::NewCompaction;
pub use context::SessionContext;
pub use entry::{SessionEntry, SessionHeader};
pub use error::SessionError;
pub use fence::{FenceGuard, SharedFence, WriteFence};
pub use lookup::{default_session_dir, find_most_recent, read_session_header, resolve_session, session_dirs};
pub use start::{find_by_id, new_session_id};
pub use store::Session;
