// pi-rpc extension host: pi's automatic compaction of an SDK session
// (agent-session.cjs), as pi 1.6.0's `AgentSession` does it: before a
// prompt (the conversation's last answer), between turns (the threshold,
// before the next model call) and after a low-level run (the run's last
// answer: over the threshold, a context overflow or a truncated `length`
// stop). What to do is pi-rpc's own decision, the one its main session
// takes (`lib` `compactionDecision`, crates/agent/src/agent/compaction_decision.rs);
// the compaction itself is the session's (`_runCompaction`, the manual
// compaction's path), with reason `threshold` or `overflow`. An overflow
// recovery leaves the failed answer out of the context (null
// `context_edit` entries), compacts with `willRetry` and the run goes on;
// a second overflow in the same run ends in `compaction_end` with pi's
// error and `session_compact_failed`.

"use strict";

const { lib } = require("./text.cjs");
const retry = require("./session-retry.cjs");

/** Whether `model` is a virtual one (routed before each request, session-models.cjs). */
const isVirtual = (model) => model?.api === "pi-virtual";

/**
 * The model whose limits apply to the answer `last`: under a virtual
 * selection, the physical model that gave it (pi's `_modelForMessage`).
 */
function limitsModel(session, last) {
	const model = session.model;
	if (!isVirtual(model) || !last) return model;
	return session._physicalModel?.(last.provider, last.model) ?? model;
}

/**
 * pi-rpc's decision at check point `at` ("beforePrompt" | "betweenTurns" |
 * "afterRun") for the answer `last`, against `model` (by default the one
 * whose limits apply to it).
 */
function decide(session, at, last, model = limitsModel(session, last)) {
	if (!model) return { action: "none" };
	const sm = session.sessionManager;
	const input = {
		entries: sm.getEntries(),
		leafId: sm.getLeafId(),
		model,
		settings: retry.settingsManagerOf(session).getCompactionSettings(model),
		systemPrompt: session.systemPrompt,
		tools: session.agent.state.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
		at,
		last,
		recoveryAttempted: session._overflowRecoveryAttempted === true,
	};
	try {
		return lib("compactionDecision", input);
	} catch {
		// A model or message the decision cannot read: no automatic compaction, the run goes on.
		return { action: "none" };
	}
}

/** pi's `_checkCompaction`: the decision acted on; whether the run goes on (`agent.continue()`). */
async function check(session, at, last) {
	const decision = decide(session, at, last);
	switch (decision.action) {
		case "compact":
			return run(session, decision.reason, false);
		case "recover": {
			session._overflowRecoveryAttempted = true;
			retry.omitAttempt(session, last);
			const retried = await run(session, "overflow", true);
			// The answer asked again after the compaction is a retry of `last` (a virtual model's router is told).
			if (retried) session._failedResponse = last;
			return retried;
		}
		case "exhausted": {
			const failure = { reason: "overflow", errorMessage: decision.errorMessage, aborted: false, willRetry: false };
			session._emit({ type: "compaction_end", ...failure, result: undefined });
			const runner = session.extensionRunner;
			if (runner?.hasHandlers("session_compact_failed")) await runner.emit({ type: "session_compact_failed", ...failure, fromExtension: false });
			return false;
		}
		default:
			return false;
	}
}

/** pi's `_runAutoCompaction`: a retry follows a recovery; else queued messages get another run. */
async function run(session, reason, willRetry) {
	const done = await session._runCompaction(reason, willRetry);
	return done !== undefined && (willRetry || session.agent.hasQueuedMessages());
}

/** Before a prompt's run: the conversation's last answer (an aborted one too). */
async function beforePrompt(session) {
	const last = [...session.agent.state.messages].reverse().find((m) => m.role === "assistant");
	if (last) await check(session, "beforePrompt", last);
}

/** After a low-level run whose last answer is not retried: whether the run goes on. */
function afterRun(session, message) {
	return check(session, "afterRun", message);
}

/** pi's reset of the overflow recovery: at a user message, and at an answer that is neither an error nor a `length` stop. */
function agentEvent(session, event) {
	const m = event.message;
	if (event.type === "message_start" && m?.role === "user") session._overflowRecoveryAttempted = false;
	if (event.type === "message_end" && m?.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "length") session._overflowRecoveryAttempted = false;
}

/** Between turns, before the next model call: compact over the threshold, the turn then sees the compacted context. */
function install(session) {
	const agent = session.agent;
	const previous = agent.prepareNextTurnWithContext;
	agent.prepareNextTurnWithContext = async (turn, signal) => {
		let context = turn.context;
		// A virtual selection is checked when its request is routed, against the model it goes to (`beforeRoutedRequest`).
		if (!isVirtual(session.model) && decide(session, "betweenTurns").action === "compact" && (await session._runCompaction("threshold", false)) !== undefined) {
			context = { ...context, messages: session.sessionManager.buildSessionContext().messages };
		}
		const snapshot = await previous?.({ ...turn, context }, signal);
		return snapshot ?? { context };
	};
}

/**
 * pi's check of a virtual selection's request, once routed to `model`: over
 * that model's threshold, the branch is compacted first. Whether it was.
 */
async function beforeRoutedRequest(session, model) {
	if (decide(session, "betweenTurns", undefined, model).action !== "compact") return false;
	return (await session._runCompaction("threshold", false)) !== undefined;
}

/** pi's `autoCompactionEnabled` / `setAutoCompactionEnabled()` on `AgentSession`. */
function addCompactionControls(AgentSession) {
	Object.defineProperties(AgentSession.prototype, {
		autoCompactionEnabled: {
			get() {
				return retry.settingsManagerOf(this).getCompactionSettings(this.model).enabled !== false;
			},
			configurable: true,
		},
		setAutoCompactionEnabled: {
			value(enabled) {
				retry.settingsManagerOf(this).setCompactionEnabled(enabled);
			},
			configurable: true,
			writable: true,
		},
	});
}

module.exports = { beforePrompt, afterRun, agentEvent, install, beforeRoutedRequest, addCompactionControls };
