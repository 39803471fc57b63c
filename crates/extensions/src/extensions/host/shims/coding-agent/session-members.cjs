// pi-rpc extension host: the smaller public members of pi 1.6.0's
// `AgentSession` that read or set the session's state: the routed model of
// a virtual selection, the callable tools, the model scope, the prompt
// templates, thinking-level cycling, the queue modes, the user messages a
// fork may start from, the session's statistics and context usage, and the
// extension checks. Each computes what pi's computes, from this session's
// agent, session manager, settings and resource loader (agent-session.cjs).

"use strict";

const transcript = require("../ai/transcript.cjs");
const { getSupportedThinkingLevels } = require("../ai/models.cjs");
const { lib } = require("./text.cjs");
const { VIRTUAL_API } = require("./session-models.cjs");

/** pi's thinking levels, offered when no model is selected. */
const THINKING_LEVEL_OPTIONS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/** The latest answer among `messages` that neither failed nor was aborted (its model is physical). */
function latestResponse(messages) {
	for (let i = messages.length - 1; i >= 0; i--) {
		const m = messages[i];
		if (m?.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted") return m;
	}
	return undefined;
}

/** pi's usage totals: tokens by kind and the cost's total. */
function addUsage(totals, usage) {
	if (!usage) return;
	totals.input += usage.input ?? 0;
	totals.output += usage.output ?? 0;
	totals.cacheRead += usage.cacheRead ?? 0;
	totals.cacheWrite += usage.cacheWrite ?? 0;
	totals.cost += usage.cost?.total ?? 0;
}

/** Whether an answer after the branch's latest compaction reported usage (pi's check before trusting an estimate). */
function usageSinceCompaction(branch) {
	const index = branch.findLastIndex((e) => e.type === "compaction");
	if (index === -1) return true;
	return branch.slice(index + 1).some((e) => {
		const m = e.type === "message" ? e.message : undefined;
		return m?.role === "assistant" && m.stopReason !== "aborted" && m.stopReason !== "error" && lib("calculateContextTokens", m.usage ?? {}) > 0;
	});
}

const method = (value) => ({ value, configurable: true, writable: true });
const getter = (get) => ({ get, configurable: true });

/** Install the members on `AgentSession`'s prototype. */
function addSessionMembers(AgentSession) {
	Object.defineProperties(AgentSession.prototype, {
		/** pi's: for a virtual selection, the physical model (and level) of the latest answer. */
		routedModel: getter(function () {
			if (!this.model || this.model.api !== VIRTUAL_API) return undefined;
			const latest = latestResponse(this.agent.state.messages);
			const model = latest && this._physicalModel?.(latest.provider, latest.model);
			return model && { model, thinkingLevel: latest.thinkingLevel };
		}),
		getCallableToolNames: method(function () {
			return this._nestedCalls ? this._nestedCalls.callableDefinitions().map((d) => d.name) : this.getActiveToolNames();
		}),
		scopedModels: getter(function () {
			return this._scopedModels;
		}),
		setScopedModels: method(function (scopedModels) {
			this._scopedModels = scopedModels;
		}),
		promptTemplates: getter(function () {
			return this.resourceLoader?.getPrompts?.().prompts ?? [];
		}),
		supportsThinking: method(function () {
			return !!this.model?.reasoning;
		}),
		getAvailableThinkingLevels: method(function () {
			return this.model ? getSupportedThinkingLevels(this.model) : [...THINKING_LEVEL_OPTIONS];
		}),
		cycleThinkingLevel: method(function (options = {}) {
			if (!this.supportsThinking()) return undefined;
			const levels = this.getAvailableThinkingLevels();
			const next = levels[(levels.indexOf(this.thinkingLevel) + 1) % levels.length];
			this.setThinkingLevel(next, options);
			return next;
		}),
		setSteeringMode: method(function (mode) {
			this.agent.steeringMode = mode;
			this.settingsManager?.setSteeringMode(mode);
		}),
		setFollowUpMode: method(function (mode) {
			this.agent.followUpMode = mode;
			this.settingsManager?.setFollowUpMode(mode);
		}),
		getUserMessagesForForking: method(function () {
			const out = [];
			for (const entry of this.sessionManager.getEntries()) {
				if (entry.type !== "message" || entry.message.role !== "user") continue;
				const text = transcript.contentText(entry.message.content, "");
				if (text) out.push({ entryId: entry.id, text });
			}
			return out;
		}),
		/** pi's statistics over every entry of the session (history compacted away included). */
		getSessionStats: method(function () {
			const counts = { userMessages: 0, assistantMessages: 0, toolCalls: 0, toolResults: 0, totalMessages: 0 };
			const totals = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
			for (const entry of this.sessionManager.getEntries()) {
				if (entry.type === "usage") addUsage(totals, entry.usage);
				else if (entry.type === "branch_summary" || entry.type === "compaction") addUsage(totals, entry.usage);
				if (entry.type !== "message") continue;
				counts.totalMessages++;
				const m = entry.message;
				if (m.role === "user") counts.userMessages++;
				else if (m.role === "toolResult") {
					counts.toolResults++;
					addUsage(totals, m.usage);
				} else if (m.role === "assistant") {
					counts.assistantMessages++;
					if (Array.isArray(m.content)) counts.toolCalls += m.content.filter((c) => c.type === "toolCall").length;
					addUsage(totals, m.usage);
				}
			}
			const { cost, ...tokens } = totals;
			return {
				sessionFile: this.sessionFile,
				sessionId: this.sessionId,
				...counts,
				tokens: { ...tokens, total: tokens.input + tokens.output + tokens.cacheRead + tokens.cacheWrite },
				cost,
				contextUsage: this.getContextUsage(),
			};
		}),
		/** pi's context usage: the branch's projected tokens against the (routed) model's window; unknown right after a compaction. */
		getContextUsage: method(function () {
			const model = this.routedModel?.model ?? this.model;
			const contextWindow = model?.contextWindow ?? 0;
			if (!model || contextWindow <= 0) return undefined;
			const branch = this.sessionManager.getBranch();
			if (!usageSinceCompaction(branch)) return { tokens: null, contextWindow, percent: null };
			const { tokens } = lib("estimateProjectedContextTokens", branch);
			return { tokens, contextWindow, percent: (tokens / contextWindow) * 100 };
		}),
		hasExtensionHandlers: method(function (eventType) {
			return this.extensionRunner?.hasHandlers(eventType) ?? false;
		}),
		/** pi's command context of this session for a replacement's `withSession`, its messages sent here. */
		createReplacedSessionContext: method(function () {
			const base = this.extensionRunner?.createCommandContext() ?? {};
			const context = Object.defineProperties({}, Object.getOwnPropertyDescriptors(base));
			context.sendMessage = (message, options) => this.sendCustomMessage(message, options);
			context.sendUserMessage = (content, options) => this.sendUserMessage(content, options);
			return context;
		}),
		/** pi's: the agent's messages rebuilt from the session's branch. */
		refreshContext: method(function () {
			this.agent.state.messages = this.sessionManager.buildSessionContext().messages;
		}),
	});
}

module.exports = { addSessionMembers };
