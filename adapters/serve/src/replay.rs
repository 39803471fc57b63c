//! A session's event numbering and the bounded buffer of its latest events,
//! from which a re-attaching client gets what it missed.
//!
//! Numbers increase strictly across the life of a session, also across
//! unloads, reloads and workers: each load of a session numbers from the
//! wall clock in microseconds at load time (so a number from an earlier load
//! is always below the first number of a later one, and the buffer can tell
//! that the events in between are gone).

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
}

/// What a client re-attaching after `after_seq` gets.
#[derive(Debug)]
pub struct Replay {
    pub events: Vec<Numbered>,
    /// Some events after `after_seq` are no longer held.
    pub gap: bool,
}

impl ReplayBuffer {
    /// An empty buffer holding at most `capacity` events, numbering from now.
    pub fn new(capacity: usize) -> ReplayBuffer {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
        ReplayBuffer::starting_at(u64::try_from(now).unwrap_or(u64::MAX / 2), capacity)
    }

    pub fn starting_at(base: u64, capacity: usize) -> ReplayBuffer {
        ReplayBuffer { base, last: base, events: VecDeque::new(), capacity: capacity.max(1) }
    }

    /// Number `event` and keep it (dropping the oldest when full).
    pub fn push(&mut self, event: Arc<AgentEvent>) -> u64 {
        self.last += 1;
        if self.events.len() == self.capacity {
            self.events.pop_front();
        }
        self.events.push_back((self.last, event));
        self.last
    }

    /// Number of the latest event (the base when there is none yet).
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// The number of a held event, if it is held.
    pub fn holds(&self, seq: u64) -> bool {
        self.events.front().is_some_and(|(first, _)| *first <= seq) && seq <= self.last
    }

    /// The events after `after_seq`.
    pub fn after(&self, after_seq: u64) -> Replay {
        let oldest = self.events.front().map_or(self.last + 1, |(seq, _)| *seq);
        let gap = after_seq < self.base || after_seq > self.last || after_seq + 1 < oldest;
        let events = self.events.iter().filter(|(seq, _)| *seq > after_seq).cloned().collect();
        Replay { events, gap }
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
    fn a_later_load_numbers_above_an_earlier_one() {
        let mut first = ReplayBuffer::new(8);
        let seen = first.push(ev());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = ReplayBuffer::new(8);
        assert!(second.last_seq() > seen);
        assert!(second.after(seen).gap);
    }
}
