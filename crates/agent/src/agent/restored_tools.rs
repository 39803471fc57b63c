//! What the toolbox keeps of a loadout restored from a branch's system
//! messages (pi 1.6.0's `_restoreToolsFromTranscript`): the restored names
//! in order (pi's `_restoredToolNames`), those not registered yet (pi's
//! `_pendingToolNames`: active once they register, dropped as the next run
//! starts) and the tools the branch mentioned (while the session starts,
//! registering one of those does not activate it: pi restores after every
//! start-up tool registered, so the loadout decides).

/// A restored loadout's bookkeeping ([`super::toolbox::Toolbox`] applies it).
#[derive(Debug, Default)]
pub(super) struct RestoredTools {
    /// The restored names, in order.
    loadout: Vec<String>,
    /// Restored names no tool had when restored.
    pending: Vec<String>,
    /// Tools the branch's system messages added or removed.
    mentioned: Vec<String>,
    /// The session is starting: a pending tool that registers takes its
    /// place in the loadout's order (pi had it registered when it
    /// restored); afterwards it comes after the active tools.
    starting: bool,
}

impl RestoredTools {
    /// A loadout was restored (`starting`: as the session starts): `pending`
    /// are its names not registered yet.
    pub(super) fn restored(
        loadout: Vec<String>,
        pending: Vec<String>,
        mentioned: Vec<String>,
        starting: bool,
    ) -> RestoredTools {
        RestoredTools { loadout, pending, mentioned, starting }
    }

    /// The restored names, in order.
    pub(super) fn loadout(&self) -> &[String] {
        &self.loadout
    }

    /// The session's start-up is over.
    pub(super) fn started(&mut self) {
        self.starting = false;
    }

    /// Whether registering `name` now must not activate it on its own: the
    /// session is starting and the branch mentioned it (a pending one is
    /// activated by [`RestoredTools::take_pending`] instead).
    pub(super) fn withheld(&self, name: &str) -> bool {
        self.starting && self.mentioned.iter().any(|n| n == name)
    }

    /// `name` registered: whether it was pending (it is no more), and then
    /// whether it takes its place in the loadout (`true`) or comes last.
    pub(super) fn take_pending(&mut self, name: &str) -> Option<bool> {
        let at = self.pending.iter().position(|n| n == name)?;
        self.pending.remove(at);
        Some(self.starting)
    }

    /// The pending names among `registered`, taken out in pending order.
    pub(super) fn take_pending_among(&mut self, registered: &[String]) -> Vec<String> {
        let (taken, kept) = std::mem::take(&mut self.pending).into_iter().partition(|n| registered.contains(n));
        self.pending = kept;
        taken
    }

    /// The active tools were set to `active` (from `before`): a pending
    /// tool now active is no more pending, and when a restored tool was
    /// deactivated, the loadout is replaced and nothing stays pending (pi's
    /// `setActiveToolsByName`).
    pub(super) fn active_set(&mut self, before: &[String], active: &[String]) {
        if before.iter().any(|n| !active.contains(n) && self.loadout.contains(n)) {
            self.pending.clear();
        }
        self.pending.retain(|n| !active.contains(n));
    }

    /// A run starts: the restored tools that did not register by now never
    /// will be active (pi clears its pending tools as a run starts).
    pub(super) fn run_started(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pending_tools_register_in_place_while_starting_then_last_until_a_run() {
        let mut restored = RestoredTools::restored(
            names(&["read", "own", "ghost"]),
            names(&["own", "ghost"]),
            names(&["own", "gone"]),
            true,
        );
        assert!(restored.withheld("gone") && !restored.withheld("new"));
        assert_eq!(restored.take_pending("own"), Some(true));
        assert_eq!(restored.take_pending("own"), None);
        restored.started();
        assert!(!restored.withheld("gone"));
        assert_eq!(restored.take_pending_among(&names(&["ghost", "x"])), names(&["ghost"]));
        let mut restored = RestoredTools::restored(names(&["read", "ghost"]), names(&["ghost"]), Vec::new(), false);
        restored.run_started();
        assert_eq!(restored.take_pending("ghost"), None, "dropped as the run started");
    }

    #[test]
    fn deactivating_a_restored_tool_drops_the_pending_ones() {
        let mut restored = RestoredTools::restored(names(&["read", "ghost"]), names(&["ghost"]), Vec::new(), false);
        restored.active_set(&names(&["read"]), &names(&["read", "bash"]));
        assert_eq!(restored.take_pending_among(&names(&["ghost"])), names(&["ghost"]), "adding keeps them");
        let mut restored = RestoredTools::restored(names(&["read", "ghost"]), names(&["ghost"]), Vec::new(), false);
        restored.active_set(&names(&["read"]), &names(&["bash"]));
        assert!(restored.take_pending_among(&names(&["ghost"])).is_empty());
    }
}
