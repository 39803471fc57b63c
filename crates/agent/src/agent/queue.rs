//! Steering and follow-up queues and their delivery modes.

use std::collections::VecDeque;

use crate::message::AgentMessage;
use crate::op::QueueMode;

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
pub(crate) struct MessageQueue {
    items: VecDeque<Queued>,
    pub mode: QueueMode,
}

impl MessageQueue {
    pub(crate) fn new(mode: QueueMode) -> Self {
        MessageQueue { items: VecDeque::new(), mode }
    }

    pub(crate) fn push(&mut self, text: String, message: AgentMessage) {
        self.items.push_back(Queued { text, message, visible: true });
    }

    /// Queue a message `queue_update` does not list (an extension's custom message).
    pub(crate) fn push_hidden(&mut self, message: AgentMessage) {
        self.items.push_back(Queued { text: String::new(), message, visible: false });
    }

    /// Take what the mode delivers at once (everything, or the oldest
    /// message), each message with the texts still queued after it.
    pub(crate) fn take_each(&mut self) -> Vec<(AgentMessage, Vec<String>)> {
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

    /// Empty the queue, returning the texts.
    pub(crate) fn clear(&mut self) -> Vec<String> {
        self.items.drain(..).filter(|q| q.visible).map(|q| q.text).collect()
    }

    pub(crate) fn texts(&self) -> Vec<String> {
        self.items.iter().filter(|q| q.visible).map(|q| q.text.clone()).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
