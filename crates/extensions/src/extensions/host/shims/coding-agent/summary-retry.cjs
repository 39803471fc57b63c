// pi-rpc extension host: pi's retry of a summary's model call (a
// compaction's or a branch summary's, compaction.cjs), as pi-ai's
// `retryAssistantCall` runs it for pi 1.6.0's `AgentSession`: a failed
// answer worth another attempt is asked again after the backoff, up to the
// settings' `retry.maxRetries` (none when `retry.enabled` is false), and the
// session's subscribers are told `summarization_retry_scheduled`,
// `summarization_retry_attempt_start` and `summarization_retry_finished`.
// Which failures are worth it and how long to wait is pi-rpc's own rule, the
// one its agent retries runs with (`lib` `retryDecision`, the classifier and
// backoff of crates/agent).

"use strict";

const { lib } = require("./text.cjs");
const { settingsManagerOf } = require("./session-retry.cjs");

/** A wait of `ms` that an abort of `signal` ends early (false), else true. */
function wait(ms, signal) {
	return new Promise((resolve) => {
		if (signal?.aborted) return resolve(false);
		const timer = setTimeout(() => {
			signal?.removeEventListener?.("abort", onAbort);
			resolve(true);
		}, ms);
		const onAbort = () => {
			clearTimeout(timer);
			resolve(false);
		};
		signal?.addEventListener?.("abort", onAbort, { once: true });
	});
}

/**
 * `produce()`'s answer, asked again while it fails in a way worth another
 * attempt and `policy` allows one (pi's `retryAssistantCall(produce, policy,
 * signal, callbacks)`). An abort during the backoff answers the failed
 * message as aborted.
 */
async function retryingCall(produce, policy, signal, callbacks) {
	const maxAttempts = policy?.enabled ? (policy.maxRetries ?? 0) : 0;
	let attempt = 0;
	let lastError;
	for (;;) {
		const response = await produce();
		if (response.stopReason === "aborted" || response.stopReason !== "error") {
			if (lastError !== undefined) await callbacks?.onRetryFinished?.(response.stopReason !== "aborted", attempt);
			return response;
		}
		const decision = attempt < maxAttempts ? lib("retryDecision", response, policy, attempt + 1) : { retryable: false };
		if (!decision.retryable) {
			if (lastError !== undefined) await callbacks?.onRetryFinished?.(false, attempt, response.errorMessage);
			return response;
		}
		attempt += 1;
		lastError = response.errorMessage || "Unknown error";
		await callbacks?.onRetryScheduled?.(attempt, maxAttempts, decision.delayMs, lastError);
		if (!(await wait(decision.delayMs, signal))) {
			await callbacks?.onRetryFinished?.(false, attempt, lastError);
			const { errorMessage: _dropped, ...rest } = response;
			return { ...rest, stopReason: "aborted" };
		}
		await callbacks?.onRetryAttemptStart?.();
	}
}

/**
 * The retry policy and callbacks of `session`'s summaries (pi's
 * `_summarizationRetryCallbacks(source)`): its settings' `retry`, and the
 * events told to its subscribers with `source` (`{source: "compaction",
 * reason}` or `{source: "branchSummary"}`).
 */
function summaryRetry(session, source) {
	return {
		retry: settingsManagerOf(session).getRetrySettings(),
		callbacks: {
			onRetryScheduled: (attempt, maxAttempts, delayMs, errorMessage) =>
				session._emit({ type: "summarization_retry_scheduled", attempt, maxAttempts, delayMs, errorMessage }),
			onRetryAttemptStart: () => session._emit({ type: "summarization_retry_attempt_start", ...source }),
			onRetryFinished: () => session._emit({ type: "summarization_retry_finished" }),
		},
	};
}

module.exports = { retryingCall, summaryRetry };
