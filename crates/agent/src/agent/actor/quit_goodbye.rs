//! pi's exit: before it stops, pi's RPC mode disposes its runtime, every
//! extension's `session_shutdown` (reason "quit") awaited in load order,
//! while their UI calls still reach the client and their requests are
//! answered (an `auto-commit-on-exit` handler reads the session and runs
//! git; a `setStatus` it makes is on the wire). The session's actor goes on
//! serving them until every pi module has handled it, then stops.

use std::time::Duration;

use super::Agent;
use crate::agent::extension_state::{ExtSignal, Goodbye};
use crate::agent::internal::Internal;

/// How long the exit waits for the `session_shutdown` handlers (pi waits
/// for as long as they take; a hung one must not keep pi-rpc alive).
const GOODBYE_WAIT: Duration = Duration::from_secs(5);

impl Agent {
    /// Whether the pi modules have handled the exit's `session_shutdown`;
    /// the first call asks them (each awaited in load order, aside), and
    /// [`ExtSignal::SaidGoodbye`] tells the actor they did.
    pub(super) fn extensions_said_goodbye(&mut self) -> bool {
        match self.ext.goodbye() {
            Goodbye::Said(_) => true,
            Goodbye::Asked(_) => false,
            Goodbye::NotAsked => {
                let listeners: Vec<_> = super::runtime_phases::renewable(self.ext.handle())
                    .into_iter()
                    .filter(|e| e.subscribes("session_shutdown"))
                    .collect();
                let ids = listeners.iter().map(|e| e.id).collect();
                if listeners.is_empty() {
                    *self.ext.goodbye() = Goodbye::Said(ids);
                    return true;
                }
                *self.ext.goodbye() = Goodbye::Asked(ids);
                let internal = self.channels.internal();
                tokio::spawn(async move {
                    let event = serde_json::json!({"reason": "quit"});
                    let in_turn = async {
                        for ext in &listeners {
                            // A failure was reported by the host (its handlers' errors) or as the extension's death.
                            let _ = ext.call("replace_shutdown", event.clone(), None).await;
                        }
                    };
                    let _ = tokio::time::timeout(GOODBYE_WAIT, in_turn).await;
                    let _ = internal.send(Internal::Extension(Box::new(ExtSignal::SaidGoodbye))).await;
                });
                false
            }
        }
    }

    /// The pi modules handled the exit's `session_shutdown`.
    pub(super) fn goodbye_said(&mut self) {
        let goodbye = self.ext.goodbye();
        if let Goodbye::Asked(ids) = goodbye {
            *goodbye = Goodbye::Said(std::mem::take(ids));
        }
    }

    /// The extensions that had the exit's `session_shutdown` already.
    pub(super) fn told_goodbye(&mut self) -> Vec<usize> {
        match self.ext.goodbye() {
            Goodbye::Asked(ids) | Goodbye::Said(ids) => ids.clone(),
            Goodbye::NotAsked => Vec::new(),
        }
    }
}
