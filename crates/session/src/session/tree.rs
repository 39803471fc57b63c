//! Tree navigation: root-to-leaf paths, `get_tree` nodes and the forkable user messages.

use std::collections::HashMap;

use super::entry::{KnownEntry, SessionEntry, StoredMessage};
use super::store::Session;
use crate::message::AgentMessage;
use crate::op::{ForkMessage, SessionTree, TreeNode};

/// Milliseconds of an ISO 8601 timestamp, `None` when it does not parse.
pub(crate) fn iso_to_ms(timestamp: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(timestamp).ok().map(|t| t.timestamp_millis())
}

impl Session {
    /// The path from the root to the current leaf (empty without a leaf).
    pub fn branch(&self) -> Vec<&SessionEntry> {
        match self.leaf.as_deref() {
            Some(leaf) => self.branch_from(leaf),
            None => Vec::new(),
        }
    }

    /// The path from the root to `id` (empty if `id` is unknown). Stops at a
    /// missing parent or a cycle.
    pub fn branch_from(&self, id: &str) -> Vec<&SessionEntry> {
        self.path_positions(id).into_iter().map(|i| self.entry_at(i)).collect()
    }

    /// The id and type of each entry of the root-to-leaf path, without
    /// reading any entry's body from the file.
    pub fn branch_heads(&self) -> Vec<(Option<&str>, &str)> {
        let Some(leaf) = self.leaf.as_deref() else { return Vec::new() };
        self.path_positions(leaf).into_iter().map(|i| (self.slots[i].id(), self.slots[i].type_name())).collect()
    }

    /// Whether an entry of type `kind` is on the root-to-leaf path, read
    /// from the leaf back without building the path or reading any entry's
    /// body (`get_state` asks this of every session for compactions).
    pub fn branch_has_type(&self, kind: &str) -> bool {
        let mut current = self.leaf.as_deref().and_then(|leaf| self.index.get(leaf).copied());
        // At most one step per entry: a parent cycle in a hand-edited file ends the walk
        // having seen every entry of the path, as `path_positions` does.
        for _ in 0..self.slots.len() {
            let Some(pos) = current else { return false };
            if self.slots[pos].type_name() == kind {
                return true;
            }
            let parent = self.parents.get(pos).copied().unwrap_or(super::store::NO_PARENT);
            current = (parent != super::store::NO_PARENT).then_some(parent as usize);
        }
        false
    }

    /// Positions (for [`Session::entry_at`]) of the root-to-leaf path.
    pub fn branch_positions(&self) -> Vec<usize> {
        self.leaf.as_deref().map(|leaf| self.path_positions(leaf)).unwrap_or_default()
    }

    /// The id of the entry at `pos`, without reading its body.
    pub fn id_at(&self, pos: usize) -> Option<&str> {
        self.slots[pos].id()
    }

    /// The type name of the entry at `pos`, without reading its body.
    pub fn type_at(&self, pos: usize) -> &str {
        self.slots[pos].type_name()
    }

    /// The id of the latest `message` entry holding `message` (read from
    /// the end back, only entries of the message's role).
    pub fn entry_id_of_message(&self, message: &AgentMessage) -> Option<&str> {
        let role = message.role();
        (0..self.slots.len())
            .rev()
            .filter(|&i| self.slots[i].type_name() == "message" && self.slots[i].role() == Some(role))
            .find(|&i| self.entry_at(i).message() == Some(message))
            .and_then(|i| self.slots[i].id())
    }

    /// Positions in `slots` of the root..=`id` path. Parents come before
    /// their children in a file pi writes, so the walk only keeps track of
    /// where it has been once a parent lies after its child.
    pub(crate) fn path_positions(&self, id: &str) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen: Option<Vec<bool>> = None;
        let mut current = self.index.get(id).copied();
        while let Some(pos) = current {
            if let Some(seen) = &mut seen
                && std::mem::replace(&mut seen[pos], true)
            {
                break; // a parent cycle in a hand-edited file
            }
            path.push(pos);
            let parent = self.parents.get(pos).copied().unwrap_or(super::store::NO_PARENT);
            current = (parent != super::store::NO_PARENT).then_some(parent as usize);
            if current.is_some_and(|p| p >= pos) && seen.is_none() {
                let mut marks = vec![false; self.slots.len()];
                for &i in &path {
                    marks[i] = true;
                }
                seen = Some(marks);
            }
        }
        path.reverse();
        path
    }

    /// The session as a forest (`get_tree`): one node per entry. Roots are
    /// entries with `parentId` null (or equal to their own id) and entries
    /// whose parent is missing, in append order; children are ordered by
    /// timestamp, oldest first (append order among equal timestamps, and
    /// when a timestamp does not parse). A `label` entry is a node of its
    /// own and also sets `label`/`labelTimestamp` on its target's node.
    /// Node `i` is the record at position `i`; nothing here recurses.
    pub fn tree(&self) -> SessionTree {
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.slots.len()];
        let mut roots = Vec::new();
        // Resolve parents through the id index restricted to entries with ids.
        let mut position_of: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(id) = s.id() {
                position_of.insert(id, i);
            }
        }
        for (i, s) in self.slots.iter().enumerate() {
            let parent = s.parent_id().filter(|p| Some(*p) != s.id());
            match parent.and_then(|p| position_of.get(p).copied()).filter(|&p| p != i) {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        for list in &mut children {
            let stamps: Option<Vec<i64>> =
                list.iter().map(|&i| self.entry_at(i).timestamp().and_then(iso_to_ms)).collect();
            if let Some(stamps) = stamps {
                let mut keyed: Vec<(i64, usize)> = stamps.into_iter().zip(list.iter().copied()).collect();
                keyed.sort_by_key(|(t, _)| *t); // stable
                *list = keyed.into_iter().map(|(_, i)| i).collect();
            }
        }
        // A parent cycle in a hand-edited file leaves entries that no root
        // reaches: the first of each such group becomes a root of its own.
        let mut reached = vec![false; children.len()];
        mark_reachable(&roots, &children, &mut reached);
        let mut extra_root = vec![false; children.len()];
        for i in 0..children.len() {
            if !reached[i] {
                extra_root[i] = true;
                roots.push(i);
                mark_reachable(&[i], &children, &mut reached);
            }
        }
        for list in &mut children {
            list.retain(|&c| !extra_root[c]);
        }
        let nodes = children.into_iter().enumerate().map(|(i, kids)| self.node(i, kids)).collect();
        SessionTree { nodes, roots }
    }

    fn node(&self, i: usize, children: Vec<usize>) -> TreeNode {
        let entry = self.entry_at(i).clone();
        let label = entry.id().and_then(|id| self.labels.get(id));
        TreeNode {
            label: label.map(|l| l.label.clone()),
            label_timestamp: label.map(|l| l.timestamp.clone()),
            entry,
            children,
        }
    }

    /// The user messages one can fork from (`get_fork_messages`): every
    /// user-message entry of every branch in append order whose text (the
    /// concatenated text blocks) is not empty.
    pub fn fork_messages(&self) -> Vec<ForkMessage> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].role() == Some("user"))
            .filter_map(|i| match self.entry_at(i) {
                SessionEntry::Known(KnownEntry::Message(m)) => match &m.message {
                    StoredMessage::Known(AgentMessage::User(user)) => {
                        let text = user.content.text();
                        (!text.is_empty()).then(|| ForkMessage { entry_id: m.base.id.clone(), text })
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// Direct children of `parent_id` in append order.
    pub fn children(&self, parent_id: &str) -> Vec<&SessionEntry> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].parent_id() == Some(parent_id))
            .map(|i| self.entry_at(i))
            .collect()
    }

    /// The label currently set on an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|l| l.label.as_str())
    }
}

/// Marks what a walk from `from` reaches, stopping at what is marked already.
fn mark_reachable(from: &[usize], children: &[Vec<usize>], reached: &mut [bool]) {
    let mut stack: Vec<usize> = from.to_vec();
    while let Some(i) = stack.pop() {
        if !std::mem::replace(&mut reached[i], true) {
            stack.extend(children[i].iter().copied());
        }
    }
}
