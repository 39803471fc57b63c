//! pi 1.6.0's start-up in its phases: every pi module's factory in load
//! order (their turns, [`crate::extensions`]' `loadTurn`), then the
//! runtime bound (until then the session's actions throw pi's "Extension
//! runtime not initialized…", in a `pi.events` listener a later factory
//! triggers too), then every `session_start`, awaited in load order, then
//! every `resources_discover`. An extension's start-up greeting waits here
//! until the last pi module's factory ran (or it died). pi-rpc's process
//! extensions in other languages have no factory phase: they are greeted
//! once they register, as before.

use serde_json::{Value, json};

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;

impl Agent {
    /// Extension `id` registered: a start-up pi module waits for the
    /// others' factories (true: ops keep waiting), another is greeted now
    /// ([`Agent::greet_extension`]).
    pub(super) fn greet_at_start(&mut self, id: usize) -> bool {
        if !self.ext.wait_for_start_phase(id) {
            return self.greet_extension(id);
        }
        self.begin_start_phase();
        true
    }

    /// Once every start-up pi module's factory ran: bind them all, then
    /// their `session_start` and `resources_discover` in load order; each
    /// then reports it started (`Greeted`).
    pub(super) fn begin_start_phase(&mut self) {
        let Some(waiting) = self.ext.take_start_phase() else { return };
        let handle = self.ext.handle().clone();
        let payload = self.session_start_payload("startup");
        let discover = json!({"cwd": self.workspace.cwd(), "reason": "startup"});
        let internal = self.channels.internal();
        tokio::spawn(async move {
            for ext in super::runtime_phases::renewable(&handle) {
                ext.send(&json!({"type": "bind"}));
            }
            let greeted: Vec<_> = waiting.iter().filter_map(|id| handle.get(*id)).collect();
            for ext in &greeted {
                if ext.subscribes("session_start") {
                    // A failure was reported by the host (its handlers' errors) or as the extension's death.
                    let _ = ext.call("session_start", payload.clone(), None).await;
                }
            }
            let mut found: Vec<(usize, Option<Value>)> = Vec::with_capacity(greeted.len());
            for ext in &greeted {
                let discovers = ext.subscribes("resources_discover");
                let answer =
                    if discovers { ext.call("resources_discover", discover.clone(), None).await.ok() } else { None };
                found.push((ext.id, answer));
            }
            for (id, found) in found {
                let _ = internal.send(Internal::Extension(Box::new(ExtSignal::Greeted { id, found }))).await;
            }
        });
    }
}
