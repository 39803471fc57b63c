//! The records of a session file ([`entry`]); the store that reads and writes
//! them is pi-session's.

pub mod entry;

pub use entry::{SessionEntry, SessionHeader};
