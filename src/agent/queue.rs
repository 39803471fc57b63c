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

    /// Take what the mode delivers at once: everything, or the oldest message.
    pub(crate) fn take(&mut self) -> Vec<AgentMessage> {
        match self.mode {
            QueueMode::All => self.items.drain(..).map(|q| q.message).collect(),
            QueueMode::OneAtATime => self.items.pop_front().map(|q| q.message).into_iter().collect(),
        }
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
        assert_eq!(q.take().len(), 1);
        assert_eq!(q.texts(), vec!["b"]);
        q.mode = QueueMode::All;
        q.push("c".into(), AgentMessage::user("c", &[]));
        assert_eq!(q.take().len(), 2);
        assert_eq!(q.len(), 0);
    }
}
