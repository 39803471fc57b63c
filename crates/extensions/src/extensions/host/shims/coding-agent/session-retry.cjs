// pi-rpc extension host: pi's automatic retry of an SDK session's failed
// answers (agent-session.cjs). Once a low-level run ends with an error worth
// another attempt (pi-rpc's own classification and backoff, `lib`
// `retryDecision`; a context overflow is not one), and the settings' `retry`
// allow it: `auto_retry_start {attempt, maxAttempts, delayMs, errorMessage}`,
// the failed answer and its tool results left out of the context (null
// `context_edit` entries, each told as `entry_appended`), the backoff
// waited (abortable), and the run goes on; `auto_retry_end` tells the
// outcome (success at the next good answer, else the final error, or "Retry
// cancelled"). `agent_end.willRetry` says whether a retry follows, as in pi
// 1.6.0's `AgentSession`.

"use strict";

const { lib } = require("./text.cjs");
const { SettingsManager } = require("./settings.cjs");

const DEFAULT_RETRY = { enabled: true, maxRetries: 3, baseDelayMs: 2000, maxAgentDelayMs: 60_000 };

/** The session's settings manager, else pi's default one for its cwd. */
function settingsManagerOf(session) {
	if (!session._retrySettings) {
		try {
			session._retrySettings = session.settingsManager ?? SettingsManager.create(session._cwd, session._agentDir);
		} catch {
			session._retrySettings = {
				getRetrySettings: () => DEFAULT_RETRY,
				setRetryEnabled: () => {},
				getCompactionSettings: () => ({ enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 }),
				setCompactionEnabled: () => {},
			};
		}
	}
	return session._retrySettings;
}

/** The session's retry settings. */
const retrySettings = (session) => settingsManagerOf(session).getRetrySettings();

/** pi-rpc's decision for a failed answer: whether it is worth another attempt, and the wait before retry `attempt`. */
const decide = (message, settings, attempt) => lib("retryDecision", message, settings, attempt);

/** pi's `agent_end.willRetry`: the run's last answer will be retried. */
function willRetry(session, event) {
	if (session._abortRequested) return false;
	const settings = retrySettings(session);
	const attempt = session._retryAttempt ?? 0;
	if (!settings.enabled || attempt >= settings.maxRetries) return false;
	const last = [...(event.messages ?? [])].reverse().find((m) => m.role === "assistant");
	return last ? decide(last, settings, attempt + 1).retryable : false;
}

/** A finished answer: the last one of the run so far; a good one after retries ends them (success). */
function answerEnded(session, message) {
	session._lastAnswer = message;
	if (message.stopReason !== "error" && (session._retryAttempt ?? 0) > 0) {
		session._emit({ type: "auto_retry_end", success: true, attempt: session._retryAttempt });
		session._retryAttempt = 0;
	}
}

/** Retries given up by an abort: `auto_retry_end` with "Retry cancelled". */
function finishCancelledRetry(session) {
	const attempt = session._retryAttempt ?? 0;
	if (attempt === 0) return;
	session._retryAttempt = 0;
	session._emit({ type: "auto_retry_end", success: false, attempt, finalError: "Retry cancelled" });
}

/** pi's omission of a failed attempt: null context edits for the answer and its tool results; the context rebuilt. */
function omitAttempt(session, message) {
	const sm = session.sessionManager;
	const branch = sm.getBranch();
	const at = branch.findIndex((e) => e.type === "message" && e.message === message);
	if (at === -1) return;
	const callIds = new Set((message.content ?? []).flatMap((b) => (b.type === "toolCall" ? [b.id] : [])));
	const targets = [branch[at]];
	for (const e of branch.slice(at + 1)) {
		if (e.type === "message" && e.message?.role === "assistant") break;
		if (e.type === "message" && e.message?.role === "toolResult" && callIds.has(e.message.toolCallId)) targets.push(e);
	}
	for (const target of targets) {
		const entry = sm.getEntry(sm.appendContextEdit(target.id, null));
		if (entry) session._emit({ type: "entry_appended", entry });
	}
	session.agent.state.messages = sm.buildSessionContext().messages;
}

/** pi's `_prepareRetry`: whether the run goes on after the backoff. */
async function prepareRetry(session, message) {
	const settings = retrySettings(session);
	if (!settings.enabled) return false;
	const attempt = (session._retryAttempt ?? 0) + 1;
	if (attempt > settings.maxRetries) return false;
	session._retryAttempt = attempt;
	const { delayMs } = decide(message, settings, attempt);
	session._emit({ type: "auto_retry_start", attempt, maxAttempts: settings.maxRetries, delayMs, errorMessage: message.errorMessage || "Unknown error" });
	omitAttempt(session, message);
	const controller = new AbortController();
	session._retryController = controller;
	try {
		await new Promise((resolve, reject) => {
			const timer = setTimeout(resolve, delayMs);
			controller.signal.addEventListener("abort", () => {
				clearTimeout(timer);
				reject(new Error("Aborted"));
			});
		});
	} catch {
		finishCancelledRetry(session);
		return false;
	} finally {
		session._retryController = undefined;
	}
	return true;
}

/**
 * After a low-level run: pi's retry of a failed answer, else the end of the
 * retries, else whether queued messages need another run. Whether the run
 * goes on (`agent.continue()`).
 */
async function afterLowLevelRun(session) {
	const message = session._lastAnswer;
	session._lastAnswer = undefined;
	if (session._abortRequested) {
		finishCancelledRetry(session);
		return false;
	}
	if (!message) return session.agent.hasQueuedMessages();
	const settings = retrySettings(session);
	if (decide(message, settings, (session._retryAttempt ?? 0) + 1).retryable && (await prepareRetry(session, message))) {
		if (session._abortRequested) finishCancelledRetry(session);
		// The next request asks the failed answer again (a virtual model's router is told, session-models.cjs).
		session._failedResponse = message;
		return !session._abortRequested;
	}
	if (session._abortRequested) {
		finishCancelledRetry(session);
		return false;
	}
	if (message.stopReason === "error" && (session._retryAttempt ?? 0) > 0) {
		session._emit({ type: "auto_retry_end", success: false, attempt: session._retryAttempt, finalError: message.errorMessage });
		session._retryAttempt = 0;
	}
	// pi's automatic compaction after the run (session-compaction.cjs): a recovery retries, queued messages run.
	if (await require("./session-compaction.cjs").afterRun(session, message)) return !session._abortRequested;
	return session.agent.hasQueuedMessages();
}

/** pi's retry controls on `AgentSession`: `abortRetry()`, `isRetrying`, `autoRetryEnabled`, `setAutoRetryEnabled()`, `retryAttempt`. */
function addRetryControls(AgentSession) {
	Object.defineProperties(AgentSession.prototype, {
		abortRetry: {
			value() {
				this._retryController?.abort();
			},
			configurable: true,
			writable: true,
		},
		isRetrying: {
			get() {
				return this._retryController !== undefined;
			},
			configurable: true,
		},
		autoRetryEnabled: {
			get() {
				return retrySettings(this).enabled;
			},
			configurable: true,
		},
		setAutoRetryEnabled: {
			value(enabled) {
				retrySettings(this);
				this._retrySettings.setRetryEnabled(enabled);
			},
			configurable: true,
			writable: true,
		},
		retryAttempt: {
			get() {
				return this._retryAttempt ?? 0;
			},
			configurable: true,
		},
	});
}

module.exports = { settingsManagerOf, omitAttempt, willRetry, answerEnded, afterLowLevelRun, finishCancelledRetry, addRetryControls };
