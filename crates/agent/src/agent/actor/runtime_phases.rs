//! pi 1.6.0's new extension runtime in its phases, as a session
//! replacement (`new_session`, `switch_session`, `fork`, `clone`) or a
//! reload builds one: every old instance's `session_shutdown`, awaited in
//! load order; then every factory, one after another in load order (a kept
//! extension's instance made anew, one a reload loads given its turn); then
//! the runtime bound (until then the session's actions throw pi's
//! "Extension runtime not initialized…", in a `pi.events` listener a later
//! factory triggers too); then every extension's `session_start`, awaited
//! in load order ([`super::session_restart::greet_in_turn`]). Only the
//! TypeScript host's extensions have instances to make anew; pi-rpc's
//! other process extensions take part in the `session_start` turn alone.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::extensions::Extension;

/// Whether `ext` is a live pi module (the TypeScript host makes its
/// instance anew in the phases).
pub(super) fn renews_in_phases(ext: &Extension) -> bool {
    !ext.is_dead() && crate::extensions::discovery::is_pi_module(&ext.path)
}

/// The live pi modules of `handle`, in load order.
pub(super) fn renewable(handle: &crate::extensions::Extensions) -> Vec<Arc<Extension>> {
    let extensions = handle.loaded_paths().into_iter().filter_map(|(id, _)| handle.get(id));
    extensions.filter(|e| renews_in_phases(e)).collect()
}

/// The first phase: `session_shutdown` (`event`: its `reason` and
/// `targetSessionFile`) to each of `old` in load order, awaited; then every
/// old instance is invalidated (its `pi.events` listeners gone), as pi's
/// old runtime once all its handlers ran.
pub(super) async fn shut_down_in_turn(old: &[Arc<Extension>], event: &Value) {
    for ext in old {
        // A failure was reported by the host (its handlers' errors) or as the extension's death.
        let _ = ext.call("replace_shutdown", event.clone(), None).await;
    }
    for ext in old {
        ext.send(&json!({"type": "invalidate"}));
    }
}

/// The second and third phases: the factories of `runtime` in load order,
/// each awaited (`true`: one a reload loaded, whose factory waits for its
/// turn; else a kept instance made anew), every kept one waiting in
/// `awaiting` (its old registration left out of `getMcpServers()`) until
/// its factory ran; then every instance is bound.
pub(super) async fn run_factories_and_bind(runtime: &[(Arc<Extension>, bool)], awaiting: &Mutex<Vec<usize>>) {
    if let Ok(mut list) = awaiting.lock() {
        list.extend(runtime.iter().filter(|(_, added)| !added).map(|(ext, _)| ext.id));
    }
    for (ext, added) in runtime {
        if *added {
            ext.give_turn();
            ext.factory_ran().await;
        } else {
            let _ = ext.call("replace_factory", json!({}), None).await;
        }
        crate::agent::extension_state::left_replacement(awaiting, ext.id);
    }
    for (ext, _) in runtime {
        ext.send(&json!({"type": "bind"}));
    }
}
