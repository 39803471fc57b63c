// pi-rpc extension host: pi's actionable boundaries for an SDK session's
// extensions (session-extensions.cjs). `turn_end` is asked once the
// turn's assistant message and tool results are in the session, before the
// loop goes on (the agent's `finishTurn`); `agent_before_settle` once a run
// would settle. Handlers are chained (runner `emitBoundary`): each sees the
// `entries` and `continue` proposed so far and the `context` those entries
// would give (pi's projection of the branch with them appended); the final
// entries (`custom`, `custom_message`, `context_edit`, `compaction`) are
// written, and `continue` runs another turn when the context can go on, as
// in pi 1.6.0.

"use strict";

const { lib } = require("./text.cjs");
const { MemorySessionManager } = require("./session-memory.cjs");

/** A boundary's outcome of a turn's assistant message. */
const outcomeOf = (message) => (message?.stopReason === "aborted" ? "aborted" : message?.stopReason === "error" ? "error" : "completed");

/**
 * `drafts` appended to `manager` as pi appends boundary entries: `custom`,
 * `custom_message`, `context_edit` (pi's checks, which throw on a bad
 * target) and `compaction` (from the extension, `tokensBefore` pi's
 * estimate of the projected context); another type adds nothing. The
 * entries appended.
 */
function applyDrafts(manager, drafts) {
	const appended = [];
	for (const d of drafts) {
		let id;
		if (d?.type === "custom") id = manager.appendCustomEntry(d.customType, d.data);
		else if (d?.type === "custom_message") id = manager.appendCustomMessageEntry(d.customType, d.content ?? [], d.display, d.details);
		else if (d?.type === "context_edit") id = manager.appendContextEdit(d.targetId, d.replacement);
		else if (d?.type === "compaction") {
			const tokensBefore = lib("estimateProjectedContextTokens", manager.getBranch()).tokens;
			id = manager.appendCompaction(d.summary, d.firstKeptEntryId, tokensBefore, d.details, true, d.usage);
		}
		const entry = id === undefined ? undefined : manager.getEntry(id);
		if (entry) appended.push(entry);
	}
	return appended;
}

/** What the context would be with `drafts` written (on a copy of the branch): pi's projection entries, messages, what the model sees, pending messages, whether a turn can run. */
async function boundaryContext(session, drafts, boundary) {
	const sm = session.sessionManager;
	const preview = new MemorySessionManager(sm.getCwd(), { id: sm.getSessionId() }, sm.getBranch());
	applyDrafts(preview, drafts);
	const projection = preview.buildSessionProjection();
	const llmMessages = await session.agent.convertToLlm(projection.messages);
	const held = session._heldMessages?.custom ?? [];
	const pendingMessages = [...(session.agent.peekQueuedMessages?.() ?? []), ...held];
	const finalRole = llmMessages[llmMessages.length - 1]?.role;
	const runnable = llmMessages.some((m) => m.role !== "system") && finalRole !== "assistant";
	const queued = session.agent.hasQueuedMessages();
	return {
		contextEntries: projection.entries,
		contextMessages: projection.messages,
		llmMessages,
		pendingMessages,
		canContinue: runnable || held.length > 0 || (boundary === "turn_end" ? queued : finalRole === "assistant" && queued),
	};
}

/**
 * The boundary's entries written to the session; the agent's messages (and
 * the running loop's `context`, when given) rebuilt from its projection, as
 * pi's next request is; each entry told (`entry_appended`).
 */
function commitDrafts(session, drafts, context) {
	const appended = applyDrafts(session.sessionManager, drafts);
	if (appended.length > 0) {
		const messages = session.sessionManager.buildSessionContext().messages;
		session.agent.state.messages = messages;
		if (context) context.messages = [...messages];
	}
	for (const entry of appended) session._emit({ type: "entry_appended", entry });
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
	commitDrafts(session, result.entries, turn.context);
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
