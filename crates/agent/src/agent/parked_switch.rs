//! A session replacement parked while the old instances' `session_shutdown`
//! handlers run with the old session current (the actor's side:
//! `actor/switch_after_shutdown.rs`).

use crate::op::{Reply, RequestTag};
use crate::session::Session;

/// A replacement whose new session waits for the old instances' `session_shutdown`.
#[derive(Debug)]
pub(crate) struct ParkedSwitch {
    /// The op's tag (its answer goes out once the session is replaced).
    pub(crate) tag: Option<RequestTag>,
    /// The session to make current.
    pub(crate) session: Session,
    /// The `session_start` reason: `new`, `resume` or `fork`.
    pub(crate) reason: &'static str,
    /// The extension whose `newSession({setup})` this is.
    pub(crate) setup: Option<usize>,
    /// The op's answer once the session is replaced.
    pub(crate) reply: Reply,
}

impl ParkedSwitch {
    pub(crate) fn new(session: Session, reason: &'static str, reply: Reply) -> Self {
        ParkedSwitch { tag: None, session, reason, setup: None, reply }
    }
}
