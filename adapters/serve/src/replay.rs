//! A session's event numbering and the bounded buffer of its latest events,
//! from which a re-attaching client gets what it missed.
//!
//! Numbers increase strictly across the life of a session, also across
//! unloads, reloads and workers: each load of a session numbers from the
//! wall clock in microseconds at load time (so a number from an earlier load
//! is always below the first number of a later one, and the buffer can tell
//! that the events in between are gone).
//!
//! In a cluster the numbers form one chain across loads and workers: a load
//! numbers above the last event in the session's stream (and above the
//! clock), and what this buffer no longer (or never) held is read from the
//! stream ([`Replay::older`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use pi_core::event::AgentEvent;

/// An event with its sequence number.
pub type Numbered = (u64, Arc<AgentEvent>);

/// The latest events of one session.
#[derive(Debug)]
pub struct ReplayBuffer {
    /// Numbers of this load start above this one.
    base: u64,
    last: u64,
    events: VecDeque<Numbered>,
    capacity: usize,
    /// In a cluster: the session's event before this buffer's first one (0:
    /// none); the stream holds it and the older ones.
    chain: Option<u64>,
    /// Events were dropped to stay within the capacity.
    dropped: bool,
    /// An event was numbered in this load.
    pushed: bool,
}

/// What a client re-attaching after `after_seq` gets.
#[derive(Debug)]
pub struct Replay {
    pub events: Vec<Numbered>,
    /// Some events after `after_seq` are no longer held.
    pub gap: bool,
    /// In a cluster: the events after `after_seq` up to this number are to be
    /// read from the session's stream, before `events`.
    pub older: Option<u64>,
}

impl ReplayBuffer {
    /// An empty buffer holding at most `capacity` events, numbering from now.
    pub fn new(capacity: usize) -> ReplayBuffer {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
        ReplayBuffer::starting_at(u64::try_from(now).unwrap_or(u64::MAX / 2), capacity)
    }

    pub fn starting_at(base: u64, capacity: usize) -> ReplayBuffer {
        ReplayBuffer {
            base,
            last: base,
            events: VecDeque::new(),
            capacity: capacity.max(1),
            chain: None,
            dropped: false,
            pushed: false,
        }
    }

    /// A cluster load after event `prev` of the session's stream: numbers
    /// from above both `prev` and the clock.
    pub fn chained(prev: u64, capacity: usize) -> ReplayBuffer {
        let mut buffer = ReplayBuffer::new(capacity);
        buffer.base = buffer.base.max(prev);
        buffer.last = buffer.base;
        buffer.chain = Some(prev);
        buffer
    }

    /// A mirror of a session owned elsewhere, whose latest event is `last`:
    /// the owner numbers the events ([`ReplayBuffer::push_at`]).
    pub fn mirrored(last: u64, capacity: usize) -> ReplayBuffer {
        let mut buffer = ReplayBuffer::starting_at(last, capacity);
        buffer.chain = Some(last);
        buffer
    }

    /// Number `event` and keep it (dropping the oldest when full).
    pub fn push(&mut self, event: Arc<AgentEvent>) -> u64 {
        self.push_at(self.last + 1, event);
        self.last
    }

    /// Keep `event`, numbered `seq` by the session's owner.
    pub fn push_at(&mut self, seq: u64, event: Arc<AgentEvent>) {
        self.last = seq;
        self.pushed = true;
        if self.events.len() == self.capacity {
            self.events.pop_front();
            self.dropped = true;
        }
        self.events.push_back((seq, event));
    }

    /// The number of the session's event before `seq` (an event of this buffer's).
    pub fn prev_of(&self, seq: u64) -> u64 {
        if seq == self.base + 1 { self.chain.unwrap_or(self.base) } else { seq - 1 }
    }

    /// In a cluster: every event after this number is held here.
    fn covered_from(&self, chain: u64) -> u64 {
        match self.events.front() {
            Some((first, _)) if self.dropped => first - 1,
            _ => chain,
        }
    }

    /// Number of the latest event. Before this load's first one: in a
    /// cluster the session's event before it (a number the stream holds, so
    /// a replay up to it is whole), else the base.
    pub fn last_seq(&self) -> u64 {
        match self.chain {
            Some(chain) if !self.pushed => chain,
            _ => self.last,
        }
    }

    /// Number of the latest event numbered in this load, if any.
    pub fn last_here(&self) -> Option<u64> {
        self.pushed.then_some(self.last)
    }

    /// The number of a held event, if it is held.
    pub fn holds(&self, seq: u64) -> bool {
        self.events.front().is_some_and(|(first, _)| *first <= seq) && seq <= self.last
    }

    /// The events after `after_seq`.
    pub fn after(&self, after_seq: u64) -> Replay {
        if let Some(chain) = self.chain {
            let from = self.covered_from(chain);
            let events = self.events.iter().filter(|(seq, _)| *seq > after_seq).cloned().collect();
            let older = (after_seq < from).then_some(from);
            return Replay { events, gap: after_seq > self.last, older };
        }
        let oldest = self.events.front().map_or(self.last + 1, |(seq, _)| *seq);
        let gap = after_seq < self.base || after_seq > self.last || after_seq + 1 < oldest;
        let events = self.events.iter().filter(|(seq, _)| *seq > after_seq).cloned().collect();
        Replay { events, gap, older: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev() -> Arc<AgentEvent> {
        Arc::new(AgentEvent::TurnStart)
    }

    #[test]
    fn what_was_missed_comes_back_once_and_gaps_are_told() {
        let mut buf = ReplayBuffer::starting_at(100, 3);
        assert_eq!(buf.last_seq(), 100);
        let r = buf.after(100);
        assert!(r.events.is_empty() && !r.gap);
        let seqs: Vec<u64> = (0..5).map(|_| buf.push(ev())).collect();
        assert_eq!(seqs, [101, 102, 103, 104, 105]);
        let r = buf.after(102);
        assert_eq!(r.events.iter().map(|e| e.0).collect::<Vec<_>>(), [103, 104, 105]);
        assert!(!r.gap);
        // 102 was dropped: a client that saw only 101 missed it.
        let r = buf.after(101);
        assert_eq!(r.events.len(), 3);
        assert!(r.gap);
        assert!(buf.after(105).events.is_empty() && !buf.after(105).gap);
        // A number from an earlier load, or from the future.
        assert!(buf.after(50).gap);
        assert!(buf.after(106).gap);
        assert!(buf.holds(103) && !buf.holds(102) && !buf.holds(106));
    }

    #[test]
    fn a_cluster_load_continues_the_chain_and_sends_older_events_to_the_stream() {
        let mut buf = ReplayBuffer::chained(u64::MAX / 4, 2);
        let first = buf.push(ev());
        assert_eq!(first, u64::MAX / 4 + 1);
        assert_eq!(buf.prev_of(first), u64::MAX / 4);
        // Nothing was missed by a client that saw the previous owner's last event.
        let r = buf.after(u64::MAX / 4);
        assert_eq!((r.events.len(), r.gap, r.older), (1, false, None));
        // Older events come from the stream.
        assert_eq!(buf.after(10).older, Some(u64::MAX / 4));
        let second = buf.push(ev());
        assert_eq!(buf.prev_of(second), first);
        buf.push(ev());
        // The first was dropped: the stream has it.
        assert_eq!(buf.after(u64::MAX / 4).older, Some(first));
        // Before this load's first event, the last one is the previous owner's
        // (a number the stream holds), not the base numbering starts from.
        let fresh = ReplayBuffer::chained(5, 8);
        assert_eq!((fresh.last_seq(), fresh.last_here()), (5, None));
        let r = fresh.after(0);
        assert_eq!((r.events.len(), r.gap, r.older), (0, false, Some(5)));
        assert!(!fresh.after(5).gap && fresh.after(5).older.is_none());
        let mut mirror = ReplayBuffer::mirrored(500, 8);
        mirror.push_at(501, ev());
        assert_eq!(mirror.after(500).events.len(), 1);
        assert_eq!(mirror.after(499).older, Some(500));
    }

    #[test]
    fn a_later_load_numbers_above_an_earlier_one() {
        let mut first = ReplayBuffer::new(8);
        let seen = first.push(ev());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = ReplayBuffer::new(8);
        assert!(second.last_seq() > seen);
        assert!(second.after(seen).gap);
    }
}
