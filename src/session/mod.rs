//! Sessions: pi's append-only JSONL tree of entries (v3), its store on disk,
//! tree navigation and the context the model sees.

pub mod entry;

pub use entry::{SessionEntry, SessionHeader};
