//! The steering and follow-up queues ([`Queues`]) and their delivery modes:
//! messages sent while a run streams, delivered at the run's turn boundaries.

use std::collections::VecDeque;

use super::internal::{Delivered, QueueKind};
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::op::{ClearedQueues, QueueMode};

/// The two queues a run pulls from: steering (delivered at the next turn
/// boundary) and follow-up (delivered when the run would end).
#[derive(Debug, Default)]
pub(super) struct Queues {
    steering: MessageQueue,
    follow_up: MessageQueue,
}

impl Queues {
    pub(super) fn new(steering_mode: QueueMode, follow_up_mode: QueueMode) -> Self {
        Queues { steering: MessageQueue::new(steering_mode), follow_up: MessageQueue::new(follow_up_mode) }
    }

    fn queue_mut(&mut self, kind: QueueKind) -> &mut MessageQueue {
        match kind {
            QueueKind::Steering => &mut self.steering,
            QueueKind::FollowUp => &mut self.follow_up,
        }
    }

    /// Queue a client's message (`queue_update` lists its text).
    pub(super) fn push(&mut self, kind: QueueKind, text: String, message: AgentMessage) {
        self.queue_mut(kind).push(text, message);
    }

    /// Queue an extension's custom message (not listed in `queue_update`).
    pub(super) fn push_hidden(&mut self, kind: QueueKind, message: AgentMessage) {
        self.queue_mut(kind).push_hidden(message);
    }

    /// Take what queue `kind` delivers now, each message with both queues
    /// as they stand once it is delivered.
    pub(super) fn take_delivered(&mut self, kind: QueueKind) -> Vec<Delivered> {
        let (taken, other) = match kind {
            QueueKind::Steering => (self.steering.take_each(), self.follow_up.texts()),
            QueueKind::FollowUp => (self.follow_up.take_each(), self.steering.texts()),
        };
        let delivered = |(message, rest): (AgentMessage, Vec<String>)| {
            let (steering, follow_up) = match kind {
                QueueKind::Steering => (rest, other.clone()),
                QueueKind::FollowUp => (other.clone(), rest),
            };
            Delivered { message, steering, follow_up }
        };
        taken.into_iter().map(delivered).collect()
    }

    /// The `queue_update` event for the queues as they stand.
    pub(super) fn update_event(&self) -> AgentEvent {
        AgentEvent::QueueUpdate { steering: self.steering.texts(), follow_up: self.follow_up.texts() }
    }

    /// How queue `kind` delivers.
    pub(super) fn mode(&self, kind: QueueKind) -> QueueMode {
        match kind {
            QueueKind::Steering => self.steering.mode,
            QueueKind::FollowUp => self.follow_up.mode,
        }
    }

    pub(super) fn set_mode(&mut self, kind: QueueKind, mode: QueueMode) {
        self.queue_mut(kind).mode = mode;
    }

    /// The messages the next delivery takes (pi's `peekQueuedMessages`):
    /// the steering queue's, else the follow-up queue's, each as its mode delivers.
    pub(super) fn peek(&self) -> Vec<AgentMessage> {
        let steering = self.steering.peek();
        if steering.is_empty() { self.follow_up.peek() } else { steering }
    }

    /// Messages waiting in both queues.
    pub(super) fn pending(&self) -> usize {
        self.steering.len() + self.follow_up.len()
    }

    /// Empty both queues: the texts they listed.
    pub(super) fn clear(&mut self) -> ClearedQueues {
        ClearedQueues { steering: self.steering.clear(), follow_up: self.follow_up.clear() }
    }
}

/// A message waiting to be delivered, with the text `queue_update` shows.
#[derive(Debug, Clone)]
struct Queued {
    text: String,
    message: AgentMessage,
    /// False for extension custom messages: not listed in `queue_update`.
    visible: bool,
}

/// One queue (steering or follow-up).
#[derive(Debug, Default)]
struct MessageQueue {
    items: VecDeque<Queued>,
    mode: QueueMode,
}

impl MessageQueue {
    fn new(mode: QueueMode) -> Self {
        MessageQueue { items: VecDeque::new(), mode }
    }

    fn push(&mut self, text: String, message: AgentMessage) {
        self.items.push_back(Queued { text, message, visible: true });
    }

    /// Queue a message `queue_update` does not list (an extension's custom message).
    fn push_hidden(&mut self, message: AgentMessage) {
        self.items.push_back(Queued { text: String::new(), message, visible: false });
    }

    /// Take what the mode delivers at once (everything, or the oldest
    /// message), each message with the texts still queued after it.
    fn take_each(&mut self) -> Vec<(AgentMessage, Vec<String>)> {
        let taken: Vec<Queued> = match self.mode {
            QueueMode::All => self.items.drain(..).collect(),
            QueueMode::OneAtATime => self.items.pop_front().into_iter().collect(),
        };
        let mut rest: Vec<String> = taken.iter().filter(|q| q.visible).map(|q| q.text.clone()).collect();
        rest.extend(self.texts());
        taken
            .into_iter()
            .map(|q| {
                if q.visible && !rest.is_empty() {
                    rest.remove(0);
                }
                (q.message, rest.clone())
            })
            .collect()
    }

    /// What the mode would deliver next (everything, or the oldest message), left queued.
    fn peek(&self) -> Vec<AgentMessage> {
        let count = match self.mode {
            QueueMode::All => self.items.len(),
            QueueMode::OneAtATime => 1,
        };
        self.items.iter().take(count).map(|q| q.message.clone()).collect()
    }

    /// Empty the queue, returning the texts.
    fn clear(&mut self) -> Vec<String> {
        self.items.drain(..).filter(|q| q.visible).map(|q| q.text).collect()
    }

    fn texts(&self) -> Vec<String> {
        self.items.iter().filter(|q| q.visible).map(|q| q.text.clone()).collect()
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_tells_both_queues_as_they_stand_after_it() {
        let mut q = Queues::new(QueueMode::All, QueueMode::OneAtATime);
        q.push(QueueKind::Steering, "s1".into(), AgentMessage::user("s1", &[]));
        q.push_hidden(QueueKind::Steering, AgentMessage::user("hidden", &[]));
        q.push(QueueKind::FollowUp, "f1".into(), AgentMessage::user("f1", &[]));
        q.push(QueueKind::FollowUp, "f2".into(), AgentMessage::user("f2", &[]));
        assert_eq!(q.pending(), 4);
        assert_eq!(
            q.update_event(),
            AgentEvent::QueueUpdate { steering: vec!["s1".into()], follow_up: vec!["f1".into(), "f2".into()] }
        );
        let delivered = q.take_delivered(QueueKind::Steering);
        assert_eq!(delivered.len(), 2);
        assert!(delivered.iter().all(|d| d.steering.is_empty() && d.follow_up == ["f1", "f2"]));
        let delivered = q.take_delivered(QueueKind::FollowUp);
        assert_eq!((delivered.len(), delivered[0].follow_up.clone()), (1, vec!["f2".to_string()]));
        q.set_mode(QueueKind::FollowUp, QueueMode::All);
        assert_eq!(q.mode(QueueKind::FollowUp), QueueMode::All);
        let cleared = q.clear();
        assert_eq!((cleared.steering.len(), cleared.follow_up), (0, vec!["f2".to_string()]));
        assert_eq!(q.pending(), 0);
    }

    #[test]
    fn a_peek_shows_what_the_next_delivery_takes() {
        let text = |messages: Vec<AgentMessage>| {
            messages
                .iter()
                .map(|m| match m {
                    AgentMessage::User(u) => u.content.text(),
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
        };
        let mut q = Queues::new(QueueMode::OneAtATime, QueueMode::All);
        q.push(QueueKind::FollowUp, "f1".into(), AgentMessage::user("f1", &[]));
        q.push(QueueKind::FollowUp, "f2".into(), AgentMessage::user("f2", &[]));
        assert_eq!(text(q.peek()), ["f1", "f2"]);
        q.push(QueueKind::Steering, "s1".into(), AgentMessage::user("s1", &[]));
        q.push(QueueKind::Steering, "s2".into(), AgentMessage::user("s2", &[]));
        assert_eq!(text(q.peek()), ["s1"]);
        assert_eq!(q.pending(), 4);
    }

    #[test]
    fn modes_deliver_one_or_all() {
        let mut q = MessageQueue::new(QueueMode::OneAtATime);
        q.push("a".into(), AgentMessage::user("a", &[]));
        q.push("b".into(), AgentMessage::user("b", &[]));
        assert_eq!(q.take_each().len(), 1);
        assert_eq!(q.texts(), vec!["b"]);
        q.mode = QueueMode::All;
        q.push("c".into(), AgentMessage::user("c", &[]));
        assert_eq!(q.take_each().len(), 2);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn take_each_tells_what_stays_queued_after_each_message() {
        let mut q = MessageQueue::new(QueueMode::All);
        for t in ["a", "b", "c"] {
            q.push(t.into(), AgentMessage::user(t, &[]));
        }
        let rest: Vec<Vec<String>> = q.take_each().into_iter().map(|(_, rest)| rest).collect();
        assert_eq!(rest, [vec!["b".to_string(), "c".to_string()], vec!["c".to_string()], vec![]]);
        q.mode = QueueMode::OneAtATime;
        q.push("d".into(), AgentMessage::user("d", &[]));
        q.push("e".into(), AgentMessage::user("e", &[]));
        let rest: Vec<Vec<String>> = q.take_each().into_iter().map(|(_, rest)| rest).collect();
        assert_eq!(rest, [vec!["e".to_string()]]);
    }
}
