//! The table of requests the server sent to its client and awaits an
//! answer for (ACP `session/request_permission`, `fs/*`, `terminal/*`): each
//! gets a fresh JSON-RPC id here, with what its answer needs (the core's
//! request id, the method, the session), until the answer arrives or the
//! core stops waiting.

use std::collections::HashMap;

/// Outbound requests awaiting the client's response, by wire id.
#[derive(Debug)]
pub struct Outbound<T> {
    next_id: u64,
    entries: HashMap<u64, T>,
}

impl<T> Default for Outbound<T> {
    fn default() -> Self {
        Outbound { next_id: 1, entries: HashMap::new() }
    }
}

impl<T> Outbound<T> {
    /// Record a request; returns the id to send it with.
    pub fn insert(&mut self, entry: T) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.insert(id, entry);
        id
    }

    /// Take the request a response answers (by the id as sent).
    pub fn take(&mut self, id: u64) -> Option<T> {
        self.entries.remove(&id)
    }

    /// Take the first request matching `pred` (the core stopped waiting for it).
    pub fn take_where(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<(u64, T)> {
        let id = self.entries.iter().find(|(_, e)| pred(e)).map(|(id, _)| *id)?;
        self.entries.remove(&id).map(|e| (id, e))
    }

    /// Drop every request matching `pred`, returning them.
    pub fn drain_where(&mut self, mut pred: impl FnMut(&T) -> bool) -> Vec<(u64, T)> {
        let ids: Vec<u64> = self.entries.iter().filter(|(_, e)| pred(e)).map(|(id, _)| *id).collect();
        ids.into_iter().filter_map(|id| self.entries.remove(&id).map(|e| (id, e))).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_answers_are_taken_once() {
        let mut table = Outbound::default();
        let a = table.insert("a");
        let b = table.insert("b");
        assert_ne!(a, b);
        assert_eq!(table.take(a), Some("a"));
        assert_eq!(table.take(a), None, "a second answer is not an answer");
        assert_eq!(table.take_where(|e| *e == "b"), Some((b, "b")));
        assert!(table.is_empty());
        table.insert("c");
        table.insert("d");
        assert_eq!(table.drain_where(|e| *e == "c").len(), 1);
        assert_eq!(table.len(), 1);
    }
}
