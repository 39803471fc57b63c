//! The table of requests in flight on one connection: each op submitted
//! with a tag waits here, with what its reply needs, until the core answers.
//!
//! The connection loop owns the table outright (no lock): decoding inserts,
//! replies remove, event mapping reads.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use pi_core::op::RequestTag;

/// Hashes a tag with one multiply (tags are handed out in sequence, so a
/// Fibonacci hash spreads them): no SipHash per request and per reply.
#[derive(Debug, Default, Clone, Copy)]
struct TagHasher(u64);

impl Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Requests awaiting their reply, by tag.
#[derive(Debug)]
pub struct InFlight<P> {
    next_tag: RequestTag,
    entries: HashMap<RequestTag, P, BuildHasherDefault<TagHasher>>,
}

impl<P> Default for InFlight<P> {
    fn default() -> Self {
        InFlight { next_tag: 1, entries: HashMap::default() }
    }
}

impl<P> InFlight<P> {
    /// Record a request; returns the tag to submit its op with.
    pub fn insert(&mut self, pending: P) -> RequestTag {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.entries.insert(tag, pending);
        tag
    }

    /// Take the request a reply answers.
    pub fn remove(&mut self, tag: RequestTag) -> Option<P> {
        self.entries.remove(&tag)
    }

    pub fn get(&self, tag: RequestTag) -> Option<&P> {
        self.entries.get(&tag)
    }

    /// Take the first request matching `pred` (the core stopped waiting for it).
    pub fn take_where(&mut self, mut pred: impl FnMut(&P) -> bool) -> Option<(RequestTag, P)> {
        let tag = self.entries.iter().find(|(_, e)| pred(e)).map(|(tag, _)| *tag)?;
        self.entries.remove(&tag).map(|e| (tag, e))
    }

    /// Every request in flight (in no particular order).
    pub fn values(&self) -> impl Iterator<Item = &P> {
        self.entries.values()
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
    fn tags_are_fresh_and_entries_leave_once() {
        let mut table = InFlight::default();
        let a = table.insert("a");
        let b = table.insert("b");
        assert_ne!(a, b);
        assert_eq!(table.get(a), Some(&"a"));
        assert_eq!(table.remove(a), Some("a"));
        assert_eq!(table.remove(a), None);
        assert_eq!(table.len(), 1);
    }
}
