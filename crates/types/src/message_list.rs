//! [`MessageList`]: a conversation's messages, in memory or still in the
//! session file.
//!
//! A session opened from a large file does not build its conversation at
//! once: its length, its last messages and its JSON are had from the file,
//! one message at a time (`get_state`, `get_messages` of a 100 MB session
//! hold one message in memory, not all). The list is built in memory the
//! first time something needs it whole (a run, compaction), through `Deref`.

use std::fmt;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::ser::{Error as _, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::AgentMessage;

/// Messages that are read from somewhere one at a time.
pub trait MessageSource: Send + Sync {
    /// How many messages [`MessageSource::each`] gives.
    fn len(&self) -> usize;

    /// True when there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hand every message to `f`, in order; stops at the first error.
    fn each(&self, f: &mut dyn FnMut(AgentMessage) -> Result<(), String>) -> Result<(), String>;

    /// The messages from the last one `matches` accepts to the end (all of
    /// them when none does), read from the end back.
    fn tail_from_last(&self, matches: &dyn Fn(&AgentMessage) -> bool) -> Vec<AgentMessage>;
}

enum Repr {
    Built(Arc<Vec<AgentMessage>>),
    Deferred(Arc<Deferred>),
}

struct Deferred {
    source: Box<dyn MessageSource>,
    built: OnceLock<Arc<Vec<AgentMessage>>>,
}

impl Deferred {
    fn build(&self) -> &Arc<Vec<AgentMessage>> {
        self.built.get_or_init(|| {
            let mut all = Vec::with_capacity(self.source.len());
            if let Err(e) = self.source.each(&mut |m| {
                all.push(m);
                Ok(())
            }) {
                tracing::error!("cannot read the conversation back from the session file: {e}");
            }
            Arc::new(all)
        })
    }
}

/// A conversation's messages (see the module docs). Cloning shares them.
pub struct MessageList(Repr);

impl MessageList {
    /// Messages read from `source` when needed.
    pub fn deferred(source: Box<dyn MessageSource>) -> MessageList {
        MessageList(Repr::Deferred(Arc::new(Deferred { source, built: OnceLock::new() })))
    }

    /// How many messages (without building the list).
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Built(all) => all.len(),
            Repr::Deferred(d) => d.built.get().map_or_else(|| d.source.len(), |all| all.len()),
        }
    }

    /// True when there are no messages (without building the list).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The messages from the last one `matches` accepts to the end (all of
    /// them when none does), without building the list.
    pub fn tail_from_last(&self, matches: impl Fn(&AgentMessage) -> bool) -> Vec<AgentMessage> {
        let tail = |all: &[AgentMessage]| {
            let from = all.iter().rposition(&matches).unwrap_or(0);
            all[from..].to_vec()
        };
        match &self.0 {
            Repr::Built(all) => tail(all),
            Repr::Deferred(d) => match d.built.get() {
                Some(all) => tail(all),
                None => d.source.tail_from_last(&matches),
            },
        }
    }

    /// The list in memory, shared.
    pub fn shared(&self) -> Arc<Vec<AgentMessage>> {
        match &self.0 {
            Repr::Built(all) => all.clone(),
            Repr::Deferred(d) => d.build().clone(),
        }
    }

    /// The list in memory, to change (copied first if it is shared).
    pub fn make_mut(&mut self) -> &mut Vec<AgentMessage> {
        if let Repr::Deferred(d) = &self.0 {
            self.0 = Repr::Built(d.build().clone());
        }
        match &mut self.0 {
            Repr::Built(all) => Arc::make_mut(all),
            Repr::Deferred(_) => unreachable!("made built above"),
        }
    }
}

impl Default for MessageList {
    fn default() -> Self {
        MessageList::from(Vec::new())
    }
}

impl Clone for MessageList {
    fn clone(&self) -> Self {
        MessageList(match &self.0 {
            Repr::Built(all) => Repr::Built(all.clone()),
            Repr::Deferred(d) => Repr::Deferred(d.clone()),
        })
    }
}

impl From<Vec<AgentMessage>> for MessageList {
    fn from(all: Vec<AgentMessage>) -> Self {
        MessageList(Repr::Built(Arc::new(all)))
    }
}

impl From<Arc<Vec<AgentMessage>>> for MessageList {
    fn from(all: Arc<Vec<AgentMessage>>) -> Self {
        MessageList(Repr::Built(all))
    }
}

impl std::ops::Deref for MessageList {
    type Target = [AgentMessage];

    /// The messages in memory (built from the source the first time).
    fn deref(&self) -> &[AgentMessage] {
        match &self.0 {
            Repr::Built(all) => all,
            Repr::Deferred(d) => d.build(),
        }
    }
}

impl PartialEq for MessageList {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl fmt::Debug for MessageList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Built(all) => all.fmt(f),
            Repr::Deferred(d) => write!(f, "MessageList(deferred, {} messages)", d.source.len()),
        }
    }
}

impl Serialize for MessageList {
    /// A deferred list is written one message at a time, never built.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = match &self.0 {
            Repr::Built(all) => return all.serialize(serializer),
            Repr::Deferred(d) => match d.built.get() {
                Some(all) => return all.serialize(serializer),
                None => d,
            },
        };
        let mut seq = serializer.serialize_seq(Some(d.source.len()))?;
        let mut failure = None;
        let read = d.source.each(&mut |m| {
            seq.serialize_element(&m).map_err(|e| {
                let text = e.to_string();
                failure = Some(e);
                text
            })
        });
        if let Some(e) = failure {
            return Err(e);
        }
        read.map_err(S::Error::custom)?;
        seq.end()
    }
}

/// Read back (pi serve's cluster carries replies between workers): the
/// list is built in memory.
impl<'de> Deserialize<'de> for MessageList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<AgentMessage>::deserialize(deserializer).map(MessageList::from)
    }
}

/// The schema of a list of messages, whatever holds them.
impl JsonSchema for MessageList {
    fn inline_schema() -> bool {
        <Vec<AgentMessage>>::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Vec<AgentMessage>>::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        <Vec<AgentMessage>>::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<AgentMessage>>::json_schema(generator)
    }
}
