//! What the actor is doing, and what waits for it: [`Activity`] owns the
//! run state (one enum), the RPC `bash` job, the shutdown request, the one
//! queue of deferred ops and answers, and the messages held until a run ends.

use std::collections::VecDeque;

use tokio_util::sync::CancellationToken;

use crate::message::AgentMessage;
use crate::op::{Op, RequestTag};

/// Every kind of busy, and the work it owes: whether the agent is idle is
/// read here, and whatever waits for an activity to end waits here.
pub(super) struct Activity {
    /// The run or compaction (at most one at a time).
    work: RunState,
    /// The RPC `bash` command in progress (it may overlap a run).
    bash: Option<CancellationToken>,
    /// Set once shutdown was requested (with the request to answer when
    /// done): no new work is taken, and the actor stops once idle.
    shutdown: Option<Option<RequestTag>>,
    /// Ops and answers waiting for the activity to end or for extensions.
    deferred: DeferredQueue,
    /// Messages that arrived during a run; they join the conversation when it ends.
    held: Vec<HeldMessage>,
    /// What an earlier run's `agent_settled` deferred and a run it started
    /// left waiting: done once that run's own deferred work is done (pi
    /// awaits each deferred prompt's whole run before the next).
    carried: Vec<AfterSettled>,
    /// The `input` hooks' decision (its asking's number) the carried work
    /// waits for: a deferred prompt they hold is decided before the next.
    carried_awaits: Option<u64>,
    next_run_id: u64,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            work: RunState::Idle,
            bash: None,
            shutdown: None,
            deferred: DeferredQueue::default(),
            held: Vec::new(),
            carried: Vec::new(),
            carried_awaits: None,
            next_run_id: 1,
        }
    }
}

impl Activity {
    /// Nothing runs (no run, compaction or `bash`) and no op waits for
    /// extensions. (The extensions' own work is theirs to tell.)
    pub(super) fn is_idle(&self) -> bool {
        self.work.is_idle() && self.bash.is_none() && !self.deferred.holds(Hold::Extensions)
    }

    /// The run or compaction.
    pub(super) fn work(&self) -> &RunState {
        &self.work
    }

    pub(super) fn is_running(&self) -> bool {
        self.work.is_running()
    }

    /// The id of the run in progress.
    pub(super) fn run_id(&self) -> Option<u64> {
        self.work.run().map(|r| r.id)
    }

    /// The cancel token of the run in progress (an automatic compaction
    /// inside it ends with it).
    pub(super) fn run_cancel_token(&self) -> Option<CancellationToken> {
        self.work.run().map(|r| r.cancel.clone())
    }

    /// The run waits between retry attempts (`true`) or tries again (`false`).
    pub(super) fn set_retry_waiting(&mut self, waiting: bool) {
        if let Some(run) = self.work.run_mut() {
            run.retry_waiting = waiting;
        }
    }

    /// `abort_retry`: end the run's retry wait; false when it is not waiting.
    pub(super) fn abort_retry_wait(&self) -> bool {
        match self.work.run() {
            Some(run) if run.retry_waiting => {
                run.retry_cancel.cancel();
                true
            }
            _ => false,
        }
    }

    /// An automatic compaction starts inside the run.
    pub(super) fn begin_auto_compaction(&mut self) {
        if let Some(run) = self.work.run_mut() {
            run.compacting = true;
        }
    }

    /// Cancel the run or compaction.
    pub(super) fn cancel_work(&self) {
        self.work.cancel()
    }

    /// A run starts: its id.
    pub(super) fn begin_run(&mut self, cancel: CancellationToken, retry_cancel: CancellationToken) -> u64 {
        let id = self.next_run_id;
        self.next_run_id += 1;
        self.work = RunState::Running(ActiveRun {
            id,
            cancel,
            retry_cancel,
            retry_waiting: false,
            compacting: false,
            settling: false,
        });
        id
    }

    /// The run `run_id` is over (once): the messages held during it, in
    /// the order they join the conversation (`bash` results first). `None`
    /// when that run is not the current one.
    pub(super) fn end_run(&mut self, run_id: u64) -> Option<Vec<HeldMessage>> {
        if self.work.run().is_none_or(|r| r.id != run_id) {
            return None;
        }
        self.work = RunState::Idle;
        let (mut bash, custom): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.held).into_iter().partition(|m| matches!(m, HeldMessage::Bash(_)));
        bash.extend(custom);
        Some(bash)
    }

    /// A `compact` command starts (cancelled by `cancel`, answering `tag` when it ends).
    pub(super) fn begin_compaction(&mut self, cancel: CancellationToken, tag: Option<RequestTag>) {
        self.work = RunState::Compacting(ManualCompaction { cancel, tag });
    }

    /// A compaction ended: for the `compact` command, the request to answer
    /// (the agent is idle again); `None` for a run's automatic one (the run
    /// goes on).
    pub(super) fn end_compaction(&mut self) -> Option<Option<RequestTag>> {
        match std::mem::take(&mut self.work) {
            RunState::Compacting(manual) => Some(manual.tag),
            RunState::Running(mut run) => {
                run.compacting = false;
                self.work = RunState::Running(run);
                None
            }
            RunState::Idle => None,
        }
    }

    /// The extensions' custom messages held until the turn ends.
    pub(super) fn held_custom(&self) -> Vec<AgentMessage> {
        let custom = |m: &HeldMessage| match m {
            HeldMessage::Custom(message) => Some(message.clone()),
            HeldMessage::Bash(_) | HeldMessage::AfterSettled(_) => None,
        };
        self.held.iter().filter_map(custom).collect()
    }

    /// Take the extensions' held custom messages (at a turn's end), leaving the `bash` results.
    pub(super) fn take_held_custom(&mut self) -> Vec<AgentMessage> {
        let (custom, bash): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.held).into_iter().partition(|m| matches!(m, HeldMessage::Custom(_)));
        self.held = bash;
        custom
            .into_iter()
            .filter_map(|m| match m {
                HeldMessage::Custom(message) => Some(message),
                HeldMessage::Bash(_) | HeldMessage::AfterSettled(_) => None,
            })
            .collect()
    }

    /// The run `run_id` emits `agent_settled`: its handlers run.
    pub(super) fn begin_settling(&mut self, run_id: u64) {
        if let Some(run) = self.work.run_mut().filter(|r| r.id == run_id) {
            run.settling = true;
        }
    }

    /// The run's `agent_settled` handlers run (pi's run is no longer active then).
    pub(super) fn is_settling(&self) -> bool {
        self.work.run().is_some_and(|r| r.settling)
    }

    /// A run is under way and not settling (pi's run is over while its
    /// `agent_settled` handlers run).
    pub(super) fn is_run_active(&self) -> bool {
        self.work.run().is_some_and(|r| !r.settling)
    }

    /// What pi defers while the run's `agent_settled` handlers run: done
    /// once `agent_settled` is out, in arrival order.
    pub(super) fn defer_until_settled(&mut self, action: AfterSettled) {
        self.held.push(HeldMessage::AfterSettled(action));
    }

    /// Deferred work a run started by an earlier deferral left waiting: it
    /// goes after the work the current run defers.
    pub(super) fn carry_after_settled(&mut self, actions: Vec<AfterSettled>) {
        self.carried.extend(actions);
    }

    /// The carried work waits until the `input` hooks' asking number
    /// `decision` is decided (pi awaits them before the next deferred item).
    pub(super) fn carry_until_decided(&mut self, actions: Vec<AfterSettled>, decision: u64) {
        self.carry_after_settled(actions);
        self.carried_awaits = Some(decision);
    }

    /// The `input` hooks' asking number `decision` is decided: whether the
    /// carried work waited for it (it waits no more).
    pub(super) fn decided(&mut self, decision: u64) -> bool {
        let awaited = self.carried_awaits == Some(decision);
        if awaited {
            self.carried_awaits = None;
        }
        awaited
    }

    /// The deferred work carried from an earlier run; none while it waits
    /// for an `input` decision.
    pub(super) fn take_carried(&mut self) -> Vec<AfterSettled> {
        if self.carried_awaits.is_some() {
            return Vec::new();
        }
        std::mem::take(&mut self.carried)
    }

    /// A message that arrived during the run: it joins the conversation when the run ends.
    pub(super) fn hold_message(&mut self, message: HeldMessage) {
        self.held.push(message);
    }

    /// An RPC `bash` command starts: its cancel token, or `None` when one already runs.
    pub(super) fn begin_bash(&mut self) -> Option<CancellationToken> {
        if self.bash.is_some() {
            return None;
        }
        let cancel = CancellationToken::new();
        self.bash = Some(cancel.clone());
        Some(cancel)
    }

    pub(super) fn end_bash(&mut self) {
        self.bash = None;
    }

    pub(super) fn is_bash_running(&self) -> bool {
        self.bash.is_some()
    }

    pub(super) fn cancel_bash(&self) {
        if let Some(cancel) = &self.bash {
            cancel.cancel();
        }
    }

    /// Shutdown was requested.
    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutdown.is_some()
    }

    /// Stop once idle, answering `tag` then (a later request replaces an earlier one's tag).
    pub(super) fn request_shutdown(&mut self, tag: Option<RequestTag>) {
        self.shutdown = Some(tag);
    }

    /// The request to answer once stopped.
    pub(super) fn take_shutdown_request(&mut self) -> Option<RequestTag> {
        self.shutdown.take().flatten()
    }

    /// Hold `pending` until `hold` ends.
    pub(super) fn hold(&mut self, hold: Hold, pending: Pending) {
        self.deferred.hold(hold, pending);
    }

    /// Answer `tag` when the current activity ends.
    pub(super) fn ack_at_end(&mut self, tag: Option<RequestTag>) {
        self.deferred.ack_at_end(tag);
    }

    /// What the end of `hold` releases (see [`DeferredQueue::release`]).
    pub(super) fn release(&mut self, hold: Hold) -> (Vec<RequestTag>, Vec<Pending>) {
        self.deferred.release(hold)
    }

    /// Take every op held for `hold` (to refuse them at shutdown).
    pub(super) fn drain_ops(&mut self, hold: Hold) -> Vec<Pending> {
        self.deferred.drain_ops(hold)
    }
}

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
    id: u64,
    /// Cancelled by `abort` (and by anything that must end the run first).
    cancel: CancellationToken,
    /// Cancelled by `abort_retry` (only matters during a retry wait).
    retry_cancel: CancellationToken,
    /// True while the run waits between retry attempts.
    retry_waiting: bool,
    /// True while an automatic compaction runs inside the run.
    compacting: bool,
    /// True once the run emits `agent_settled` (its handlers run).
    settling: bool,
}

/// A `compact` command in progress.
pub(super) struct ManualCompaction {
    cancel: CancellationToken,
    /// The `compact` request, answered when it ends.
    tag: Option<RequestTag>,
}

impl RunState {
    pub(super) fn is_idle(&self) -> bool {
        matches!(self, RunState::Idle)
    }

    fn run(&self) -> Option<&ActiveRun> {
        match self {
            RunState::Running(run) => Some(run),
            _ => None,
        }
    }

    fn run_mut(&mut self) -> Option<&mut ActiveRun> {
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

    /// A `compact` command runs.
    pub(super) fn is_manual_compaction(&self) -> bool {
        matches!(self, RunState::Compacting(_))
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
    /// What arrived while the run's `agent_settled` handlers ran and pi
    /// defers until `agent_settled` is out.
    AfterSettled(AfterSettled),
}

/// What pi 1.6.0 defers while a run's `agent_settled` handlers run (its
/// run is over, the next not started): done once `agent_settled` is out,
/// in arrival order, each run it starts to its end before the next.
#[derive(Debug)]
pub(super) enum AfterSettled {
    /// A client's `prompt` (routed again then: commands, `input` hooks and
    /// all, as pi's deferred `prompt()` starts over).
    Op(Pending),
    /// An extension's `sendUserMessage` (its params), whatever its `deliverAs`.
    UserMessage { extension: usize, params: serde_json::Value },
    /// An extension's `sendMessage` with `triggerTurn: true` (its params).
    TriggeringMessage { extension: usize, params: serde_json::Value },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idleness_covers_every_kind_of_busy() {
        let mut a = Activity::default();
        assert!(a.is_idle());
        let cancel = a.begin_bash().unwrap();
        assert!(a.begin_bash().is_none() && !a.is_idle());
        a.cancel_bash();
        assert!(cancel.is_cancelled());
        a.end_bash();
        assert!(a.is_idle());
        a.hold(Hold::Extensions, Pending::new(Some(1), Op::GetState));
        assert!(!a.is_idle());
        a.release(Hold::Extensions);
        a.begin_compaction(CancellationToken::new(), Some(2));
        assert!(!a.is_idle() && a.work().is_compacting());
        assert_eq!(a.end_compaction(), Some(Some(2)));
        assert!(a.is_idle());
    }

    #[test]
    fn a_run_ends_once_and_releases_its_held_messages_bash_first() {
        let mut a = Activity::default();
        let message = |text: &str| AgentMessage::user(text, &[]);
        let first = a.begin_run(CancellationToken::new(), CancellationToken::new());
        a.end_run(first);
        let id = a.begin_run(CancellationToken::new(), CancellationToken::new());
        assert_ne!(id, first);
        a.hold_message(HeldMessage::Custom(message("custom")));
        a.hold_message(HeldMessage::Bash(message("bash")));
        a.begin_auto_compaction();
        assert!(a.work().is_compacting());
        assert!(a.end_compaction().is_none() && a.is_running() && !a.work().is_compacting());
        assert!(!a.abort_retry_wait());
        a.set_retry_waiting(true);
        assert!(a.abort_retry_wait());
        assert!(a.end_run(first).is_none());
        let held = a.end_run(id).unwrap();
        assert!(matches!(held.as_slice(), [HeldMessage::Bash(_), HeldMessage::Custom(_)]));
        assert!(a.end_run(id).is_none() && a.is_idle());
    }

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
