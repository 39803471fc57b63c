//! Where an op goes before its handler: [`route`] decides, from the op, what
//! the agent is busy with ([`Activity`]) and the extensions' [`Gate`], whether
//! it is handled now, waits, or is refused. It only reads, so every op ×
//! activity pair is unit-tested below; `actor/dispatch.rs` carries the decision out.

use super::state::Activity;
use crate::error::CoreError;
use crate::op::{Op, OpKind};

/// pi's answer to a prompt sent while `compact` runs.
pub(crate) const PROMPT_WHILE_COMPACTING: &str =
    "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.";
const SHUTTING_DOWN: &str = "The agent is shutting down";

/// What the extensions tell the router.
#[derive(Debug, Clone, Copy)]
pub(super) struct Gate {
    /// Every extension has started and no session hook is deciding.
    pub open: bool,
    /// The op passed the gate before (it was held, then released): it was
    /// accepted before any shutdown, so it still runs.
    pub accepted: bool,
}

/// The way of one op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// Held until the extensions have started and no session hook decides;
    /// routed again then.
    AfterExtensions,
    /// Held until the run's `agent_settled` is out (its handlers run: pi's
    /// run is over, and pi defers a prompt until then); routed again then.
    AfterSettled,
    /// The extensions see it first (commands, templates and skills, the
    /// `input` and session hooks, `get_commands`), and may take it; then `Policy`.
    ThroughExtensions(Policy),
    /// Straight to `Policy`: answers to requests, the approval mode,
    /// `pending_requests`, a shutdown that aborts.
    Direct(Policy),
}

/// What happens to an op once the extensions are past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Policy {
    /// Its handler runs now.
    Now,
    /// The run or compaction is cancelled; the op is handled once it ended
    /// (routed again then).
    AfterActivity,
    /// Answered with an error.
    Refused(Refusal),
}

/// Why an op is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Shutdown was requested: no new work is taken.
    ShuttingDown,
    /// A `compact` command runs: pi takes no prompt until it ends.
    Compacting,
}

impl Refusal {
    pub(super) fn error(self) -> CoreError {
        match self {
            Refusal::ShuttingDown => CoreError::busy(SHUTTING_DOWN),
            Refusal::Compacting => CoreError::busy(PROMPT_WHILE_COMPACTING),
        }
    }
}

/// The route of `op`.
pub(super) fn route(op: &Op, activity: &Activity, gate: Gate) -> Route {
    route_kind(op.kind(), matches!(op, Op::Shutdown { abort: true }), activity, gate)
}

/// The route of an op of kind `kind` (`aborting`: a shutdown with `abort`).
fn route_kind(kind: OpKind, aborting: bool, activity: &Activity, gate: Gate) -> Route {
    use OpKind::*;
    let policy = policy(kind, activity, gate.accepted);
    match kind {
        // Answers to what the agent asked, and what a front end needs while
        // extensions start: never held for them.
        ExtensionUiResponse | ClientResponse | SetApprovalMode | PendingRequests => Route::Direct(policy),
        Shutdown if aborting => Route::Direct(policy),
        _ if !gate.open => Route::AfterExtensions,
        Prompt | SendUserMessage if activity.is_settling() => Route::AfterSettled,
        _ => Route::ThroughExtensions(policy),
    }
}

fn policy(kind: OpKind, activity: &Activity, accepted: bool) -> Policy {
    use OpKind::*;
    let work = activity.work();
    match kind {
        // A shutdown stops new work; what answers the agent's own requests still counts.
        Shutdown | ExtensionUiResponse | ClientResponse => {}
        _ if activity.is_shutting_down() && !accepted => return Policy::Refused(Refusal::ShuttingDown),
        _ => {}
    }
    match kind {
        Prompt | SendUserMessage if work.is_manual_compaction() => Policy::Refused(Refusal::Compacting),
        // A session switch ends the run or compaction first; so does `compact`
        // (pi aborts what runs and compacts after it).
        NewSession | SwitchSession | ResumeSession | Fork | Clone | Compact if !work.is_idle() => Policy::AfterActivity,
        _ => Policy::Now,
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;

    const OPEN: Gate = Gate { open: true, accepted: false };
    const SWITCHES: &[OpKind] =
        &[OpKind::NewSession, OpKind::SwitchSession, OpKind::ResumeSession, OpKind::Fork, OpKind::Clone];
    const DIRECT: &[OpKind] =
        &[OpKind::ExtensionUiResponse, OpKind::ClientResponse, OpKind::SetApprovalMode, OpKind::PendingRequests];

    fn idle() -> Activity {
        Activity::default()
    }

    fn running() -> Activity {
        let mut a = Activity::default();
        a.begin_run(CancellationToken::new(), CancellationToken::new());
        a
    }

    fn retry_waiting() -> Activity {
        let mut a = running();
        a.set_retry_waiting(true);
        a
    }

    fn auto_compacting() -> Activity {
        let mut a = running();
        a.begin_auto_compaction();
        a
    }

    fn compacting() -> Activity {
        let mut a = Activity::default();
        a.begin_compaction(CancellationToken::new(), Some(1));
        a
    }

    fn bash() -> Activity {
        let mut a = Activity::default();
        a.begin_bash();
        a
    }

    fn shutting_down(mut a: Activity) -> Activity {
        a.request_shutdown(Some(9));
        a
    }

    /// The policy of every op (a shutdown without `abort`), and the route's own check.
    fn policies(activity: &Activity, gate: Gate) -> Vec<(OpKind, Policy)> {
        OpKind::ALL
            .iter()
            .map(|&kind| {
                let policy = match route_kind(kind, false, activity, gate) {
                    Route::Direct(policy) => {
                        assert!(DIRECT.contains(&kind), "{kind:?} skips the extensions");
                        policy
                    }
                    Route::ThroughExtensions(policy) => {
                        assert!(!DIRECT.contains(&kind), "{kind:?} goes through the extensions");
                        policy
                    }
                    Route::AfterExtensions => panic!("{kind:?} held with the gate open"),
                    Route::AfterSettled => panic!("{kind:?} held for agent_settled"),
                };
                (kind, policy)
            })
            .collect()
    }

    /// Every op is handled now but `except`, which get their own policy.
    fn assert_now_except(activity: &Activity, gate: Gate, except: &[(&[OpKind], Policy)]) {
        for (kind, policy) in policies(activity, gate) {
            let expected = except.iter().find(|(kinds, _)| kinds.contains(&kind)).map_or(Policy::Now, |(_, p)| *p);
            assert_eq!(policy, expected, "{kind:?}");
        }
    }

    #[test]
    fn an_idle_agent_handles_every_op_now() {
        assert_now_except(&idle(), OPEN, &[]);
        assert_now_except(&idle(), Gate { open: true, accepted: true }, &[]);
    }

    #[test]
    fn a_bash_job_delays_nothing() {
        assert_now_except(&bash(), OPEN, &[]);
    }

    #[test]
    fn during_a_run_session_switches_and_compact_wait_for_its_end() {
        for run in [running(), retry_waiting(), auto_compacting()] {
            assert_now_except(
                &run,
                OPEN,
                &[(SWITCHES, Policy::AfterActivity), (&[OpKind::Compact], Policy::AfterActivity)],
            );
        }
    }

    #[test]
    fn while_agent_settled_handlers_run_prompts_wait_for_it_and_the_rest_is_as_during_the_run() {
        let mut settling = running();
        let run_id = settling.run_id().unwrap_or_default();
        settling.begin_settling(run_id);
        for &kind in OpKind::ALL {
            let route = route_kind(kind, false, &settling, OPEN);
            let prompt = matches!(kind, OpKind::Prompt | OpKind::SendUserMessage);
            assert_eq!(route == Route::AfterSettled, prompt, "{kind:?}");
            if !prompt {
                assert_eq!(route, route_kind(kind, false, &running(), OPEN), "{kind:?}");
            }
        }
    }

    #[test]
    fn during_a_compact_command_prompts_are_refused_and_switches_wait() {
        assert_now_except(
            &compacting(),
            OPEN,
            &[
                (&[OpKind::Prompt, OpKind::SendUserMessage], Policy::Refused(Refusal::Compacting)),
                (SWITCHES, Policy::AfterActivity),
                (&[OpKind::Compact], Policy::AfterActivity),
            ],
        );
        // A steer or follow-up is queued (pi's behaviour), not refused.
        let compacting = compacting();
        assert_eq!(policy(OpKind::Steer, &compacting, false), Policy::Now);
        assert_eq!(policy(OpKind::FollowUp, &compacting, false), Policy::Now);
    }

    #[test]
    fn shutting_down_refuses_new_work_but_not_answers() {
        let answers: &[OpKind] = &[OpKind::Shutdown, OpKind::ExtensionUiResponse, OpKind::ClientResponse];
        for activity in [shutting_down(idle()), shutting_down(running()), shutting_down(compacting())] {
            for (kind, policy) in policies(&activity, OPEN) {
                let expected =
                    if answers.contains(&kind) { Policy::Now } else { Policy::Refused(Refusal::ShuttingDown) };
                assert_eq!(policy, expected, "{kind:?}");
            }
        }
    }

    #[test]
    fn an_op_accepted_before_the_shutdown_still_runs() {
        let accepted = Gate { open: true, accepted: true };
        assert_now_except(&shutting_down(idle()), accepted, &[]);
        assert_now_except(
            &shutting_down(running()),
            accepted,
            &[(SWITCHES, Policy::AfterActivity), (&[OpKind::Compact], Policy::AfterActivity)],
        );
    }

    #[test]
    fn while_extensions_start_ops_wait_but_answers_and_an_aborting_shutdown() {
        let closed = Gate { open: false, accepted: false };
        for activity in [idle(), running(), compacting(), bash(), shutting_down(idle())] {
            for &kind in OpKind::ALL {
                let route = route_kind(kind, false, &activity, closed);
                assert_eq!(matches!(route, Route::Direct(_)), DIRECT.contains(&kind), "{kind:?}");
                assert_eq!(route == Route::AfterExtensions, !DIRECT.contains(&kind), "{kind:?}");
            }
            assert_eq!(route_kind(OpKind::Shutdown, true, &activity, closed), Route::Direct(Policy::Now));
        }
        // The approval mode is no answer: a shutdown refuses it, gate or not.
        assert_eq!(
            route_kind(OpKind::SetApprovalMode, false, &shutting_down(idle()), closed),
            Route::Direct(Policy::Refused(Refusal::ShuttingDown))
        );
    }

    #[test]
    fn an_aborting_shutdown_skips_the_extensions_and_a_plain_one_does_not() {
        let op = |abort| Op::Shutdown { abort };
        assert_eq!(route(&op(true), &running(), OPEN), Route::Direct(Policy::Now));
        assert_eq!(route(&op(false), &running(), OPEN), Route::ThroughExtensions(Policy::Now));
        assert_eq!(route(&op(false), &shutting_down(running()), OPEN), Route::ThroughExtensions(Policy::Now));
    }

    #[test]
    fn refusals_keep_their_wording() {
        assert_eq!(Refusal::ShuttingDown.error().message, "The agent is shutting down");
        assert!(Refusal::Compacting.error().message.starts_with("Cannot submit a prompt while compaction"));
    }
}
