//! The conversation of the leaf as a [`MessageList`] whose messages stay in
//! the session file until they are needed: opening a large session costs its
//! index, and `get_state` / `get_messages` read the file one message at a time.
//!
//! A long conversation is read on helper threads: it is cut into runs of
//! about a MiB of lines, each helper reads every n-th run (one run ahead of
//! the one handed out), and the caller takes the runs in order, so
//! `get_messages` of a large session reads and writes at once on every core
//! and holds a few MiB of messages, not all.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use serde_json::Value;

use super::context::{entry_messages, replace_content};
use super::load::record_of_line;
use super::slot::Span;
use super::store::Session;
use crate::message::AgentMessage;
use pi_types::{MessageList, MessageSource};

/// One message of the conversation: in memory, or the line of a message entry.
enum Item {
    Message(Box<AgentMessage>),
    /// A user, assistant or tool result message entry, with the replacement
    /// of the context edit that targets it.
    Line {
        span: Span,
        edit: Option<Value>,
    },
}

/// Helper threads at most (one per core up to this).
const MOST_HELPERS: usize = 4;
/// The line bytes of a run of messages read and handed over at once (a
/// conversation of one run is read on the calling thread alone).
const CHUNK_BYTES: u64 = 1024 * 1024;

/// The conversation read from the session file (see the module docs).
struct FileMessages {
    file: Arc<File>,
    items: Vec<Item>,
}

impl FileMessages {
    /// The items cut into runs of consecutive ones of about [`CHUNK_BYTES`]
    /// of lines each (messages in memory count a little).
    fn chunks(&self) -> Vec<std::ops::Range<usize>> {
        let mut chunks = Vec::new();
        let (mut start, mut bytes) = (0, 0);
        for (n, item) in self.items.iter().enumerate() {
            bytes += match item {
                Item::Line { span, .. } => u64::from(span.len),
                Item::Message(_) => 1024,
            };
            if bytes >= CHUNK_BYTES {
                chunks.push(start..n + 1);
                (start, bytes) = (n + 1, 0);
            }
        }
        if start < self.items.len() {
            chunks.push(start..self.items.len());
        }
        chunks
    }

    /// The messages of one item (one, unless the line no longer reads as a message).
    fn messages(&self, item: &Item, line: &mut Vec<u8>) -> Result<Vec<AgentMessage>, String> {
        let (span, edit) = match item {
            Item::Message(m) => return Ok(vec![(**m).clone()]),
            Item::Line { span, edit } => (*span, edit),
        };
        // The buffer only grows: a long line is not zeroed again for each line read after it.
        let len = span.len as usize;
        if line.len() < len {
            line.resize(len, 0);
        }
        let line = &mut line[..len];
        self.file.read_exact_at(line, span.offset).map_err(|e| format!("cannot read the session file: {e}"))?;
        let record = record_of_line(line).ok_or("a session line changed on disk")?;
        let messages = entry_messages(&record.entry, false);
        Ok(match edit {
            Some(replacement) => messages.into_iter().map(|m| replace_content(m, replacement)).collect(),
            None => messages,
        })
    }
}

impl MessageSource for FileMessages {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn each(&self, f: &mut dyn FnMut(AgentMessage) -> Result<(), String>) -> Result<(), String> {
        let helpers = std::thread::available_parallelism().map_or(1, usize::from).min(MOST_HELPERS);
        let chunks = self.chunks();
        if helpers < 2 || chunks.len() < 2 {
            let mut line = Vec::new();
            for item in &self.items {
                for message in self.messages(item, &mut line)? {
                    f(message)?;
                }
            }
            return Ok(());
        }
        // Runs of consecutive items of about CHUNK_BYTES each: run c is read
        // by helper c mod n, and handed over whole (one wake-up per run, not
        // per message: a hand-over per message costs a thread switch each
        // on a loaded machine).
        std::thread::scope(|scope| {
            let queues: Vec<_> = (0..helpers)
                .map(|k| {
                    let (tx, rx) = std::sync::mpsc::sync_channel(1);
                    let mine = chunks.iter().skip(k).step_by(helpers).cloned().collect::<Vec<_>>();
                    scope.spawn(move || {
                        let mut line = Vec::new();
                        for range in mine {
                            let mut run = Vec::with_capacity(range.len());
                            let mut read = Ok(());
                            for item in &self.items[range] {
                                match self.messages(item, &mut line) {
                                    Ok(messages) => run.extend(messages),
                                    Err(e) => {
                                        read = Err(e);
                                        break;
                                    }
                                }
                            }
                            // The messages read before a failure go first, then the failure.
                            let failed = read.is_err();
                            // The caller stopped (an error): so do we.
                            if tx.send((run, read)).is_err() || failed {
                                return;
                            }
                        }
                    });
                    rx
                })
                .collect();
            // Dropping the queues on an early return stops the helpers.
            for k in (0..chunks.len()).map(|c| c % helpers) {
                let (run, read) = queues[k].recv().map_err(|_| "a reading thread stopped".to_string())?;
                for message in run {
                    f(message)?;
                }
                read?;
            }
            Ok(())
        })
    }

    fn tail_from_last(&self, matches: &dyn Fn(&AgentMessage) -> bool) -> Vec<AgentMessage> {
        let mut line = Vec::new();
        let mut tail = Vec::new();
        for item in self.items.iter().rev() {
            let messages = match self.messages(item, &mut line) {
                Ok(messages) => messages,
                Err(e) => {
                    tracing::error!("{e}");
                    Vec::new()
                }
            };
            for message in messages.into_iter().rev() {
                let found = matches(&message);
                tail.push(message);
                if found {
                    tail.reverse();
                    return tail;
                }
            }
        }
        tail.reverse();
        tail
    }
}

impl Session {
    /// The messages the model sees for the current leaf (those of
    /// [`Session::context`]). User, assistant and tool result messages kept
    /// in the file stay there: the list reads them when it is written out
    /// or needed whole. Each such entry counts as one message, as pi counts it.
    pub fn context_messages(&self) -> MessageList {
        let Some(file) = self.source.clone() else { return MessageList::from(self.context().messages) };
        let selected = self.context_positions();
        let edits = self.context_edits(&selected);
        let mut items = Vec::with_capacity(selected.len());
        let mut in_file = 0;
        for (n, &i) in selected.iter().enumerate() {
            let slot = &self.slots[i];
            let plain =
                slot.type_name() == "message" && matches!(slot.role(), Some("user" | "assistant" | "toolResult"));
            if let (Some(span), true) = (slot.span(), plain) {
                match slot.id().and_then(|id| edits.get(id)) {
                    Some(Value::Null) => {}
                    edit => items.push(Item::Line { span, edit: edit.map(|v| (*v).clone()) }),
                }
                in_file += 1;
                continue;
            }
            items.extend(self.messages_of(n, i, &edits).into_iter().map(|m| Item::Message(Box::new(m))));
        }
        if in_file == 0 {
            let messages = items
                .into_iter()
                .filter_map(|item| match item {
                    Item::Message(m) => Some(*m),
                    Item::Line { .. } => None,
                })
                .collect::<Vec<_>>();
            return MessageList::from(messages);
        }
        MessageList::deferred(Box::new(FileMessages { file, items }))
    }
}
