// pi-rpc extension host: pi's actionable boundaries for an SDK session's
// extensions (session-extensions.cjs). `turn_end` is asked once the
// turn's assistant message and tool results are in the session, before the
// loop goes on (the agent's `finishTurn`); `agent_before_settle` once a run
// would settle. Handlers are chained (runner `emitBoundary`): each sees the
// `entries` and `continue` proposed so far and the `context` those entries
// would give; the final entries are written, and `continue` runs another
// turn when the context can go on, as in pi 1.6.0.

"use strict";

/** A boundary's outcome of a turn's assistant message. */
const outcomeOf = (message) => (message?.stopReason === "aborted" ? "aborted" : message?.stopReason === "error" ? "error" : "completed");

/** The custom messages drafted entries would add to the context. */
function draftedMessages(drafts) {
	return drafts.filter((d) => d?.type === "custom_message").map((d) => ({ role: "custom", customType: d.customType, content: d.content ?? [], display: d.display, details: d.details, timestamp: Date.now() }));
}

/** What the context would be with `drafts` written: entries, messages, what the model sees, pending messages, whether a turn can run. */
async function boundaryContext(session, drafts, boundary) {
	for (const d of drafts) if (!["custom", "custom_message"].includes(d?.type)) throw new Error(`Unsupported boundary entry type: ${d?.type}`);
	const contextMessages = [...session.sessionManager.buildSessionContext().messages, ...draftedMessages(drafts)];
	const llmMessages = await session.agent.convertToLlm(contextMessages);
	const held = session._heldMessages?.custom ?? [];
	const pendingMessages = [...(session.agent.peekQueuedMessages?.() ?? []), ...held];
	const finalRole = llmMessages[llmMessages.length - 1]?.role;
	const runnable = llmMessages.some((m) => m.role !== "system") && finalRole !== "assistant";
	const queued = session.agent.hasQueuedMessages();
	return {
		contextEntries: session.sessionManager.getBranch(),
		contextMessages,
		llmMessages,
		pendingMessages,
		canContinue: runnable || held.length > 0 || (boundary === "turn_end" ? queued : finalRole === "assistant" && queued),
	};
}

/** The boundary's entries written to the session (and the agent's context). */
function commitDrafts(session, drafts) {
	const sm = session.sessionManager;
	for (const d of drafts) {
		if (d.type === "custom") sm.appendCustomEntry(d.customType, d.data);
		else if (d.type === "custom_message") sm.appendCustomMessageEntry(d.customType, d.content ?? [], d.display, d.details);
	}
	if (drafts.length > 0) session.agent.state.messages = sm.buildSessionContext().messages;
}

function entryIdOf(session, message) {
	return session.sessionManager.getBranch().find((e) => e.type === "message" && e.message === message)?.id;
}

function invalidContinuation(runner, event) {
	runner.emitError({ extensionPath: "<boundary>", event, error: `${event} requested continuation without runnable model context` });
}

/** pi's `turn_end` boundary for one turn; whether the handlers asked the loop to go on. */
async function turnEndBoundary(session, runner, turn, turnIndex) {
	const { message, toolResults = [] } = turn;
	session._lastActivityOutcome = outcomeOf(message);
	if (!runner.hasHandlers("turn_end")) return false;
	const messageEntryId = entryIdOf(session, message);
	if (!messageEntryId) {
		runner.emitError({ extensionPath: "<boundary>", event: "turn_end", error: "turn_end could not resolve the persisted assistant entry ID" });
		return false;
	}
	const toolResultEntryIds = toolResults.flatMap((r) => entryIdOf(session, r) ?? []);
	const event = { type: "turn_end", turnIndex, message, toolResults, messageEntryId, toolResultEntryIds, outcome: session._lastActivityOutcome };
	const result = await runner.emitBoundary(event, (drafts) => boundaryContext(session, drafts, "turn_end"));
	commitDrafts(session, result.entries);
	if (result.continue && !(await boundaryContext(session, [], "turn_end")).canContinue) {
		invalidContinuation(runner, "turn_end");
		return false;
	}
	return result.continue;
}

/** pi's `agent_before_settle`: whether the run goes on instead of settling. */
async function beforeSettleBoundary(session, runner) {
	if (!runner.hasHandlers("agent_before_settle")) return session.agent.hasQueuedMessages();
	const event = { type: "agent_before_settle", outcome: session._lastActivityOutcome ?? "completed" };
	const result = await runner.emitBoundary(event, (drafts) => boundaryContext(session, drafts, "agent_before_settle"));
	commitDrafts(session, result.entries);
	session._extensions?.flushPendingCustom();
	const final = await boundaryContext(session, [], "agent_before_settle");
	if (session._abortRequested) return false;
	const goOn = result.continue || session.agent.hasQueuedMessages();
	if (goOn && !final.canContinue) {
		if (result.continue) invalidContinuation(runner, "agent_before_settle");
		return false;
	}
	return goOn;
}

module.exports = { turnEndBoundary, beforeSettleBoundary };
