//! What the actor is doing, and what waits for it: the run state (one
//! enum), the one queue of deferred ops and answers, and the messages held
//! until a run ends.

use std::collections::VecDeque;

use tokio_util::sync::CancellationToken;

use crate::message::AgentMessage;
use crate::op::{Op, RequestTag};

/// What the agent is doing.
#[derive(Default)]
pub(super) enum RunState {
    /// Nothing: a prompt starts a run, a `compact` a compaction.
    #[default]
    Idle,
    /// A run (model ↔ tools), which may compact automatically on the way.
    Running(ActiveRun),
    /// A `compact` command.
    Compacting(ManualCompaction),
}

/// A run in progress.
pub(super) struct ActiveRun {
    pub id: u64,
    /// Cancelled by `abort` (and by anything that must end the run first).
    pub cancel: CancellationToken,
    /// Cancelled by `abort_retry` (only matters during a retry wait).
    pub retry_cancel: CancellationToken,
    /// True while the run waits between retry attempts.
    pub retry_waiting: bool,
    /// True while an automatic compaction runs inside the run.
    pub compacting: bool,
}

/// A `compact` command in progress.
pub(super) struct ManualCompaction {
    pub cancel: CancellationToken,
    /// The `compact` request, answered when it ends.
    pub tag: Option<RequestTag>,
}

impl RunState {
    pub(super) fn is_idle(&self) -> bool {
        matches!(self, RunState::Idle)
    }

    pub(super) fn run(&self) -> Option<&ActiveRun> {
        match self {
            RunState::Running(run) => Some(run),
            _ => None,
        }
    }

    pub(super) fn run_mut(&mut self) -> Option<&mut ActiveRun> {
        match self {
            RunState::Running(run) => Some(run),
            _ => None,
        }
    }

    pub(super) fn is_running(&self) -> bool {
        self.run().is_some()
    }

    /// A manual or automatic compaction is in progress.
    pub(super) fn is_compacting(&self) -> bool {
        match self {
            RunState::Compacting(_) => true,
            RunState::Running(run) => run.compacting,
            RunState::Idle => false,
        }
    }

    pub(super) fn manual_compaction(&self) -> Option<&ManualCompaction> {
        match self {
            RunState::Compacting(m) => Some(m),
            _ => None,
        }
    }

    /// Cancel what runs (the run or the compaction).
    pub(super) fn cancel(&self) {
        match self {
            RunState::Running(run) => run.cancel.cancel(),
            RunState::Compacting(m) => m.cancel.cancel(),
            RunState::Idle => {}
        }
    }
}

/// An op on its way through the actor, with what it already went through.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pending {
    pub tag: Option<RequestTag>,
    pub op: Op,
    /// The session hooks already allowed it (they are asked once).
    pub allowed: bool,
    /// It was accepted before a shutdown was asked, so it still runs.
    pub accepted: bool,
    /// The `input` hooks already saw it (and maybe rewrote it).
    pub inputs_seen: bool,
}

impl Pending {
    pub(super) fn new(tag: Option<RequestTag>, op: Op) -> Self {
        Pending { tag, op, allowed: false, accepted: false, inputs_seen: false }
    }
}

/// What an op waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// The end of the current run or compaction (session switches, `compact`).
    Activity,
    /// Extensions to finish starting, or a session hook to decide.
    Extensions,
}

/// One entry of the deferred queue.
#[derive(Debug)]
enum Deferred {
    Op(Hold, Pending),
    /// `abort` / `abort_retry`: answered when the current activity ends.
    Ack(RequestTag),
}

/// The one queue of ops and answers that wait, in arrival order.
#[derive(Debug, Default)]
pub(super) struct DeferredQueue {
    entries: VecDeque<Deferred>,
}

impl DeferredQueue {
    pub(super) fn hold(&mut self, hold: Hold, pending: Pending) {
        self.entries.push_back(Deferred::Op(hold, pending));
    }

    /// Answer `tag` when the current activity ends.
    pub(super) fn ack_at_end(&mut self, tag: Option<RequestTag>) {
        if let Some(tag) = tag {
            self.entries.push_back(Deferred::Ack(tag));
        }
    }

    /// True when an op waits for `hold`.
    pub(super) fn holds(&self, hold: Hold) -> bool {
        self.entries.iter().any(|e| matches!(e, Deferred::Op(h, _) if *h == hold))
    }

    /// Take what the end of `hold` releases: the answers first (they were
    /// owed by what just ended), then the ops, each in arrival order.
    pub(super) fn release(&mut self, hold: Hold) -> (Vec<RequestTag>, Vec<Pending>) {
        let mut acks = Vec::new();
        let mut ops = Vec::new();
        let mut kept = VecDeque::new();
        for entry in self.entries.drain(..) {
            match entry {
                Deferred::Ack(tag) if hold == Hold::Activity => acks.push(tag),
                Deferred::Op(h, pending) if h == hold => ops.push(pending),
                other => kept.push_back(other),
            }
        }
        self.entries = kept;
        (acks, ops)
    }

    /// Take every op held for `hold` (to refuse them at shutdown).
    pub(super) fn drain_ops(&mut self, hold: Hold) -> Vec<Pending> {
        let mut ops = Vec::new();
        self.entries.retain(|e| match e {
            Deferred::Op(h, pending) if *h == hold => {
                ops.push(pending.clone());
                false
            }
            _ => true,
        });
        ops
    }
}

/// A message that arrived during a run and joins the conversation when it ends.
#[derive(Debug)]
pub(super) enum HeldMessage {
    /// An RPC `bash` result (appended silently).
    Bash(AgentMessage),
    /// An extension's custom message sent with `triggerTurn: false` (announced).
    Custom(AgentMessage),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releasing_keeps_order_and_what_waits_for_something_else() {
        let mut q = DeferredQueue::default();
        q.hold(Hold::Extensions, Pending::new(Some(1), Op::GetState));
        q.hold(Hold::Activity, Pending::new(Some(2), Op::Clone));
        q.ack_at_end(Some(3));
        q.hold(Hold::Activity, Pending::new(Some(4), Op::Compact { custom_instructions: None }));
        q.ack_at_end(None);
        let (acks, ops) = q.release(Hold::Activity);
        assert_eq!(acks, vec![3]);
        assert_eq!(ops.iter().map(|p| p.tag).collect::<Vec<_>>(), vec![Some(2), Some(4)]);
        assert!(q.holds(Hold::Extensions) && !q.holds(Hold::Activity));
        let (acks, ops) = q.release(Hold::Extensions);
        assert!(acks.is_empty());
        assert_eq!(ops, vec![Pending::new(Some(1), Op::GetState)]);
    }
}
