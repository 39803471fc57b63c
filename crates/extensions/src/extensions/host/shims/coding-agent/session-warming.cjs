// pi-rpc extension host: prompt-cache warming of an SDK session
// (agent-session.cjs), as pi 1.6.0's SDK session warms its requests. Each
// session request (the agent's, with the session's id) is kept warm
// instead of the last; pi-rpc's own warmer decides everything (`lib`
// `cacheWarmer`, the main session's rules: the model's `promptCache`
// lifetime, the settings' `cacheWarming` mode, the safety windows, pi's
// decision). Here are only the timers, the `cache_warming_decision`
// handlers of the session's extensions, the refresh (the request again
// through the session's stream, capped at one output token, without
// retries), and its usage written as a `usage` entry of kind `cache_warm`
// and told as `entry_appended`; pi's `cacheWarmingStatus` and
// `setCacheWarmingMode` of the session.

"use strict";

const { lib } = require("./text.cjs");
const { SettingsManager } = require("./settings.cjs");

let warmers = 0;

class SessionCacheWarmer {
	/**
	 * `stream(model, context, options)`: the session's model stream; `session`: the
	 * AgentSession (its settings, session manager, extension runner and listeners).
	 */
	constructor(session, stream) {
		this._session = session;
		this._stream = stream;
		this._name = `sdk-session-${process.pid}-${++warmers}`;
		this._run = undefined;
		// What the last stop after a decision leaves in pi's status.
		this._stopped = undefined;
	}

	_settings() {
		const session = this._session;
		if (!session._warmingSettings) {
			try {
				session._warmingSettings = session.settingsManager ?? SettingsManager.create(session._cwd, session._agentDir);
			} catch {
				session._warmingSettings = { getCacheWarmingMode: () => "idle", setCacheWarmingMode: () => {} };
			}
		}
		return session._warmingSettings;
	}

	_mode() {
		return this._settings().getCacheWarmingMode();
	}

	_ask(op, fields = {}) {
		try {
			return lib("cacheWarmer", { warmer: this._name, op, mode: this._mode(), ...fields });
		} catch {
			return null; // warming is best-effort
		}
	}

	/** Keep the cache entry of `request` (`{model, context, options}`) warm while `isCurrent()` holds. */
	start(request, isCurrent) {
		this._clear();
		this._stopped = undefined;
		const { reasoning, cacheRetention } = request.options ?? {};
		const due = this._ask("start", { model: request.model, reasoning, cacheRetention });
		if (!due?.dueInMs && due?.dueInMs !== 0) return;
		this._run = { ...request, id: due.run, isCurrent, controller: new AbortController() };
		this._arm(this._run, due.dueInMs);
	}

	onAgentSettled() {
		this._ask("settled");
		if (this._run && !this._ask("status", { usage: null })?.decision) this._clear();
	}

	cancel() {
		this._clear();
		this._stopped = undefined;
		this._ask("cancel");
	}

	_clear() {
		const run = this._run;
		this._run = undefined;
		if (!run) return;
		if (run.timer) clearTimeout(run.timer);
		run.controller.abort();
	}

	_arm(run, ms) {
		run.extensionOverride = false;
		run.nextWarmAt = Date.now() + ms;
		run.timer = setTimeout(() => void this._refresh(run), ms);
		run.timer.unref?.();
	}

	/** Whether `run` is still the one warmed, with pi's check of the model and conversation. */
	_fields(run) {
		return { run: run.id, current: this._run === run && run.isCurrent() };
	}

	async _refresh(run) {
		run.timer = undefined;
		if (this._run !== run) return;
		const sm = this._session.sessionManager;
		const due = this._ask("due", { ...this._fields(run), usage: this._lastUsage() });
		if (!due) return this._drop(run);
		let action = due.event.action;
		try {
			const runner = this._session.extensionRunner;
			const event = { type: "cache_warming_decision", ...due.event };
			if (runner) action = await runner.emitCacheWarmingDecision(event);
		} catch {
			// an extension's failure leaves pi's own decision
		}
		const approved = this._ask("decided", { ...this._fields(run), action });
		if (!approved) {
			// pi's status keeps the decision a stop was made on (not when the run moved on meanwhile).
			if (this._run === run && action === "stop") this._stopped = { decision: due.decision, extensionOverride: action !== due.event.action };
			return this._drop(run);
		}
		run.extensionOverride = approved.note !== null && approved.note !== undefined;
		try {
			const options = { ...run.options, maxTokens: 1, disableContinuation: true, maxRetries: 0, signal: run.controller.signal };
			const message = await (await this._stream(run.model, run.context, options)).result();
			if (!this._ask("refreshed", this._fields(run))) return this._drop(run);
			if (message.stopReason !== "error" && message.stopReason !== "aborted") {
				const entry = sm.appendUsage("cache_warm", message.provider, message.responseModel ?? message.model, message.usage, approved.note ?? undefined);
				this._session._emit({ type: "entry_appended", entry });
			}
		} catch {
			// warming never disturbs the session
		}
		if (this._run !== run) return;
		const next = this._ask("reschedule", { run: run.id });
		if (next) this._arm(run, next.dueInMs);
		else this._drop(run);
	}

	/** The usage of the branch's last answer (pi's prompt size). */
	_lastUsage() {
		const branch = this._session.sessionManager.getBranch();
		const last = [...branch].reverse().find((e) => e.type === "message" && e.message?.role === "assistant");
		return last?.message.usage ?? null;
	}

	/** pi's `cacheWarmingStatus`: inactive with its reason, or scheduled / refreshing with pi's decision now. */
	get status() {
		if (this._mode() === "off") return { state: "inactive", reason: "cache warming disabled" };
		const run = this._run;
		const answer = this._ask("status", { usage: this._lastUsage() });
		if (!run || !answer?.decision) return { state: "inactive", reason: answer?.reason ?? "inactive", ...this._stopped };
		if (!run.isCurrent()) return { state: "inactive", reason: "conversation context changed" };
		const refreshing = run.timer === undefined;
		if (!answer.decision.economicsAvailable && !refreshing) return { state: "inactive", reason: "cache economics unavailable" };
		return { state: refreshing ? "refreshing" : "scheduled", nextWarmAt: run.nextWarmAt, decision: answer.decision, extensionOverride: run.extensionOverride };
	}

	/** The mode changed: a run it no longer allows stops (pi's `onModeChanged`). */
	onModeChanged() {
		if (this._run && !this._ask("modeChanged")) this._clear();
	}

	/** The warmer stopped `run`. */
	_drop(run) {
		if (this._run === run) this._clear();
	}
}

/** pi's check that a request still fits: the session's model is its model, and the conversation still starts with its messages. */
function contextIsCurrent(agent, requestModel) {
	const messages = agent.state.messages;
	return () => {
		const model = agent.state.model;
		const now = agent.state.messages;
		return model?.provider === requestModel.provider && model?.id === requestModel.id && messages.length <= now.length && messages.every((m, i) => now[i] === m);
	};
}

/**
 * `stream` that warms the session's own requests (those with its session id),
 * as pi's SDK session does; the warmer is `session._cacheWarmer` once `attach` ran.
 */
function warmingStream(stream, sessionId, getWarmer, agent) {
	// `sessionId()`: the session's id now (pi compares each request's with it).
	return (model, context, options) => {
		if (options?.sessionId === sessionId()) getWarmer()?.start({ model, context, options }, contextIsCurrent(agent(), model));
		return stream(model, context, options);
	};
}

/** pi's `cacheWarmingStatus` and `setCacheWarmingMode` on `AgentSession`. */
function addWarmingControls(AgentSession) {
	Object.defineProperty(AgentSession.prototype, "cacheWarmingStatus", {
		get() {
			return this._cacheWarmer?.status;
		},
		configurable: true,
	});
	AgentSession.prototype.setCacheWarmingMode = function (mode) {
		(this._cacheWarmer?._settings() ?? this.settingsManager)?.setCacheWarmingMode(mode);
		this._cacheWarmer?.onModeChanged();
	};
}

module.exports = { SessionCacheWarmer, warmingStream, addWarmingControls };
