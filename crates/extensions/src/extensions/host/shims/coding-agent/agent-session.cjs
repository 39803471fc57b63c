// pi-rpc extension host: pi's SDK session inside an extension
// (`createAgentSession`, `AgentSession`). pi 1.6.0 builds a second,
// in-process pi there; pi-rpc builds the same object from what the host
// already has: pi's own agent loop (`@earendil-works/pi-agent-core`'s
// `Agent`, whose model calls go to pi-rpc's providers with request-time
// auth, as `ctx.modelRegistry.streamSimple` does), the built-in tool
// factories (pi-rpc's tools, run with the session's cwd), a session tree
// (`SessionManager.inMemory()`, or the caller's), and the system prompt
// pi-rpc renders from a given `resourceLoader`'s resources (context files,
// skills, custom and appended prompts), else those of a `DefaultResourceLoader`
// of the session's cwd and agent directory, as pi's, with the sub-session's
// own tools. A given `settingsManager` (settings.cjs) picks
// the model, thinking level, default tools and queue modes as pi's does; a
// given `modelRuntime` (models.cjs), else a new one over the agent
// directory's `models.json` / `auth.json` as pi makes it, serves the model
// lookups and calls.
// The run is pi's: the prompt's system sections and user message, the
// loop's events to `subscribe` listeners (`agent_end` with `willRetry`,
// then `agent_settled`), each finished message appended to the session,
// steering and follow-up queues with `queue_update`, abort. What is left
// out is listed in compat/DEVIATIONS.md; failed answers are retried as pi
// retries them (session-retry.cjs), and the session compacts itself as pi's
// does (session-compaction.cjs).
// Manual `compact` runs pi-rpc's compaction (compaction.cjs); `executeBash`
// runs a user's command as pi does (bash-execution.cjs).

"use strict";

const path = require("node:path");
const { services } = require("../host-services.cjs");
const { clampThinkingLevel } = require("../ai/models.cjs");
const transcript = require("../ai/transcript.cjs");
const tools = require("./tools.cjs");
const { lib } = require("./text.cjs");
const { MemorySessionManager } = require("./session-memory.cjs");
const { SessionManager, sessionDirFor } = require("./session.cjs");
const { SettingsManager } = require("./settings.cjs");
const { getAgentDir } = require("./runtime.cjs");
const compaction = require("./compaction.cjs");
const { summaryRetry } = require("./summary-retry.cjs");
const { DEFAULT_COMPACTION_SETTINGS } = require("./session.cjs");
const { executeBashWithOperations } = require("./bash-execution.cjs");
const { attachExtensions, sendCustomMessage, providerHooks, allTools } = require("./session-extensions.cjs");
const { reloadSession } = require("./session-reload.cjs");
const { toolOptions, builtinDefinitions } = require("./session-tool-options.cjs");
const { applyLoadout, refreshLoadout } = require("./session-loadout.cjs");
const { expandSessionInput } = require("./input-expansion.cjs");
const { loadedDefaultResourceLoader } = require("./resources.cjs");
const { navigateTree } = require("./tree-navigation.cjs");
const { createSessionModels } = require("./session-models.cjs");
const { ModelRegistry, ModelRuntime } = require("./models.cjs");
const retry = require("./session-retry.cjs");
const autoCompaction = require("./session-compaction.cjs");
const { SessionCacheWarmer, warmingStream, addWarmingControls } = require("./session-warming.cjs");
const { prepareUserMessage } = require("./session-images.cjs");

const DEFAULT_THINKING_LEVEL = "medium";


/** pi's `convertToLlm`: the transcript's own messages pass, the others become what pi-rpc makes of them. */
function convertToLlm(messages) {
	return messages.flatMap((m) =>
		["system", "user", "assistant", "toolResult"].includes(m?.role) ? [m] : lib("convertToLlm", [m]),
	);
}

/** The sections of a system prompt change: new or changed sections, `null` for removed ones. */
function sectionChanges(before, after) {
	const changes = {};
	for (const [name, text] of Object.entries(after)) if (before[name] !== text) changes[name] = text;
	for (const name of Object.keys(before)) if (!(name in after)) changes[name] = null;
	return Object.keys(changes).length > 0 ? changes : undefined;
}

/** pi's one-line prompt snippet (spaces collapsed), if any. */
const oneLine = (text) => (typeof text === "string" ? text.split(/\s+/).filter(Boolean).join(" ") : "") || undefined;

class AgentSession {
	constructor(config) {
		this.agent = config.agent;
		this.sessionManager = config.sessionManager;
		this.settingsManager = config.settingsManager;
		this.resourceLoader = config.resourceLoader;
		this._cwd = config.cwd;
		this._agentDir = config.agentDir;
		this._tools = config.tools; // name -> definition
		this._promptBase = config.promptBase;
		this._streamFn = config.streamFn;
		this._availableModels = config.availableModels ?? (() => []);
		this._scopedModels = config.scopedModels ?? [];
		this._compacting = undefined;
		this._listeners = [];
		this._steering = [];
		this._followUp = [];
		/** Queued user messages whose images are prepared at their delivery. */
		this._queuedWithImages = new WeakSet();
		this._running = false;
		this._abortRequested = false;
		this._idleWaiters = [];
		this._bashControllers = new Set();
		this._pendingBash = [];
		this._unsubscribeAgent = this.agent.subscribe((event) => this._onAgentEvent(event));
		autoCompaction.install(this);
	}

	_emit(event) {
		for (const listener of [...this._listeners]) listener(event);
	}

	_emitQueueUpdate() {
		this._emit({ type: "queue_update", steering: [...this._steering], followUp: [...this._followUp] });
	}

	async _onAgentEvent(event) {
		if (event.type === "agent_start" && this._abortRequested) this.agent.abort();
		autoCompaction.agentEvent(this, event);
		this._nestedCalls?.agentEvent(event);
		// A queued message's images are prepared at its delivery, before anyone sees it, as pi's.
		if (event.type === "message_start" && this._queuedWithImages.delete(event.message)) prepareUserMessage(this, event.message);
		// The extensions' handlers first (a `message_end` handler may replace the message), as in pi.
		if (this._extensions) await this._extensions.agentEvent(event);
		if (event.type === "message_start" && event.message.role === "user") {
			const text = transcript.contentText(event.message.content, "");
			for (const queue of [this._steering, this._followUp]) {
				const index = queue.indexOf(text);
				if (index !== -1) {
					queue.splice(index, 1);
					this._emitQueueUpdate();
					break;
				}
			}
		}
		this._emit(event.type === "agent_end" ? { ...event, willRetry: retry.willRetry(this, event) } : event);
		if (event.type === "message_end") {
			const m = event.message;
			if (m.role === "custom") this.sessionManager.appendCustomMessageEntry(m.customType, m.content, m.display, m.details);
			else if (["system", "user", "assistant", "toolResult"].includes(m.role)) this.sessionManager.appendMessage(m);
			if (m.role === "assistant") retry.answerEnded(this, m);
		}
	}

	/** pi's `BuildSystemPromptOptions` of this session: its loader's resources, this session's tools. */
	_promptOptions() {
		const active = this.getActiveToolNames();
		const snippets = {};
		const guidelines = {};
		for (const [name, tool] of this._tools) {
			const snippet = oneLine(tool.promptSnippet) ?? this._promptBase.toolSnippets?.[name];
			if (snippet) snippets[name] = snippet;
			const own = (tool.promptGuidelines ?? []).map((g) => String(g).trim()).filter(Boolean);
			const rules = own.length > 0 ? own : this._promptBase.toolGuidelines?.[name];
			if (rules?.length) guidelines[name] = rules;
		}
		return {
			...this._promptBase,
			cwd: this._cwd,
			selectedTools: active,
			hiddenTools: [...(this._hiddenDeclarations ?? [])],
			toolSnippets: snippets,
			toolGuidelines: guidelines,
			promptGuidelines: [],
			sections: {},
		};
	}

	/** The system message the next run starts with, when its prompt changed. */
	_systemUpdate(options = this._promptOptions()) {
		const sections = lib("buildSystemPromptSections", options);
		const current = transcript.getCurrentSystemMessage(this.agent.state.messages)?.sections ?? {};
		const changes = sectionChanges(current, sections);
		return changes ? { role: "system", content: "", sections: changes, timestamp: Date.now() } : undefined;
	}

	async _run(messages) {
		// The reloaded tools that did not register by now are dropped (pi's).
		this._pendingToolNames?.clear();
		this._running = true;
		this._abortRequested = false;
		this._failedResponse = undefined;
		try {
			await this.agent.prompt(messages);
			// A retry of a failed answer or queued messages run first (session-retry.cjs); then pi's agent_before_settle may run another turn.
			for (;;) {
				while (!this._abortRequested && (await retry.afterLowLevelRun(this))) await this.agent.continue();
				if (this._abortRequested || !(await this._extensions?.beforeSettle())) break;
				await this.agent.continue();
			}
		} finally {
			if (this._abortRequested) retry.finishCancelledRetry(this);
			this._failedResponse = undefined;
			this._running = false;
			this._flushPendingBash();
			this._extensions?.flushPendingCustom();
			this._cacheWarmer?.onAgentSettled();
			await this._extensions?.emit({ type: "agent_settled", aborted: this._abortRequested });
			this._emit({ type: "agent_settled", aborted: this._abortRequested });
			for (const resolve of this._idleWaiters.splice(0)) resolve();
		}
	}

	async prompt(text, options = {}) {
		// pi's order: an extension command, then the `input` handlers, then template and skill expansion.
		const expand = options.expandPromptTemplates ?? true;
		if (this._extensions && expand && text.startsWith("/") && (await this._extensions.runCommand(text))) {
			options.preflightResult?.("handled");
			return;
		}
		let images = options.images;
		if (this._extensions) {
			const input = await this._extensions.input(text, images, options.source ?? "interactive", this.isStreaming ? options.streamingBehavior : undefined);
			if (!input) {
				options.preflightResult?.("handled");
				return;
			}
			({ text, images } = input);
		}
		text = expandSessionInput(this, text, options);
		if (this.isStreaming) {
			if (!options.streamingBehavior) {
				throw new Error("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.");
			}
			return options.streamingBehavior === "followUp" ? this._queue(this._followUp, text, images, "followUp") : this._queue(this._steering, text, images, "steer");
		}
		if (!this.model) throw new Error("No model selected.");
		await this._startRun({ messageType: "user", prompt: text, images }, options.preflightResult);
	}

	/**
	 * A run started by a user prompt or an extension's custom message: the
	 * `before_agent_start` handlers add messages and change this run's prompt
	 * options; messages held for the next turn go after the starting one.
	 */
	async _startRun(trigger, preflightResult) {
		await autoCompaction.beforePrompt(this);
		const first = trigger.messageType === "custom" ? trigger.message : { role: "user", content: [{ type: "text", text: trigger.prompt }, ...(trigger.images ?? [])], timestamp: Date.now() };
		const started = await this._extensions?.beforeAgentStart(trigger, this._promptOptions());
		// As pi: the prompt's images prepared once the handlers ran (one may have changed the model).
		if (trigger.messageType !== "custom") prepareUserMessage(this, first);
		const added = (started?.messages ?? []).map((m) => ({ role: "custom", customType: m.customType, content: m.content ?? [], display: m.display, details: m.details, timestamp: Date.now() }));
		const nextTurn = this._extensions?.takeNextTurn() ?? [];
		const system = this._systemUpdate(refreshLoadout(this, started?.systemPromptOptions ?? this._promptOptions()));
		preflightResult?.("started");
		await this._run([...(system ? [system] : []), first, ...nextTurn, ...added]);
	}

	/** pi's `sendCustomMessage(message, {triggerTurn, deliverAs})` (session-extensions.cjs). */
	async sendCustomMessage(message, options) {
		return sendCustomMessage(this, message, options);
	}

	async _queue(queue, text, images, how) {
		queue.push(text);
		this._emitQueueUpdate();
		const message = { role: "user", content: [{ type: "text", text }, ...(images ?? [])], timestamp: Date.now() };
		if (images?.length) this._queuedWithImages.add(message);
		if (how === "steer") this.agent.steer(message);
		else this.agent.followUp(message);
		return "queued";
	}

	async steer(text, images) {
		return this._queue(this._steering, expandSessionInput(this, text), images, "steer");
	}

	async followUp(text, images) {
		return this._queue(this._followUp, expandSessionInput(this, text), images, "followUp");
	}

	/** pi's `sendUserMessage`: a prompt from an extension (no template expansion unless asked), queued as `deliverAs` says while streaming. */
	async sendUserMessage(content, options = {}) {
		const blocks = typeof content === "string" ? [{ type: "text", text: content }] : content;
		const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
		const images = blocks.filter((b) => b.type !== "text");
		// Not expanded unless asked, whether it starts a run or is queued (as pi's); the `input` handlers see source `extension`.
		const streamingBehavior = this.isStreaming ? (options.deliverAs === "followUp" ? "followUp" : "steer") : undefined;
		return this.prompt(text, { images: images.length > 0 ? images : undefined, streamingBehavior, expandPromptTemplates: options.expandPromptTemplates ?? false, source: "extension" });
	}

	clearQueue() {
		const steering = [...this._steering];
		const followUp = [...this._followUp];
		this._steering = [];
		this._followUp = [];
		this.agent.clearAllQueues();
		this._emitQueueUpdate();
		return { steering, followUp };
	}

	async abort() {
		this.abortRetry();
		this.abortCompaction();
		if (this._running) this._abortRequested = true;
		this.agent.abort();
		await this.waitForIdle();
	}

	/** pi's manual compaction: the run stopped, then the branch compacted (`_runCompaction`). */
	async compact(customInstructions) {
		await this.abort();
		return this._runCompaction("manual", false, customInstructions);
	}

	/**
	 * pi's compaction of the branch for `reason` (`manual`, or automatic:
	 * `threshold`, `overflow`): the branch prepared and summarised
	 * (compaction.cjs), a `compaction` entry appended, the agent's messages
	 * rebuilt, `compaction_start`/`compaction_end` emitted. A manual one
	 * throws its failure; an automatic one with nothing to cut stays silent,
	 * and a failed one answers undefined.
	 */
	async _runCompaction(reason, willRetry, customInstructions) {
		const manual = reason === "manual";
		const model = this.model;
		const settings = this.settingsManager?.getCompactionSettings(model) ?? DEFAULT_COMPACTION_SETTINGS;
		const branch = this.sessionManager.getBranch();
		const preparation = model ? compaction.prepareCompaction(branch, settings) : undefined;
		if (!manual && !preparation) return undefined;
		const controller = new AbortController();
		this._compacting = controller;
		this._emit({ type: "compaction_start", reason });
		// pi's extension events around it: session_before_compact (cancel, or the extension's own compaction), session_compact, session_compact_failed.
		const runner = this.extensionRunner;
		let fromExtension = false;
		let cancelledByExtension = false;
		try {
			if (!model) throw new Error("No model selected.");
			if (!preparation) throw new Error(branch[branch.length - 1]?.type === "compaction" ? "Already compacted" : "Nothing to compact (session too small)");
			let own;
			if (runner?.hasHandlers("session_before_compact")) {
				const answer = await runner.emit({ type: "session_before_compact", preparation, branchEntries: branch, customInstructions, reason, willRetry, signal: controller.signal });
				if (answer?.cancel) {
					cancelledByExtension = true;
					throw new Error("Compaction cancelled");
				}
				if (answer?.compaction) [own, fromExtension] = [answer.compaction, true];
			}
			const { retry: policy, callbacks } = summaryRetry(this, { source: "compaction", reason });
			const writer = own ? undefined : await this._summaryTarget(controller.signal);
			const result = own ?? (await compaction.compact(preparation, writer.model, undefined, undefined, customInstructions, controller.signal, writer.thinkingLevel, this._streamFn, undefined, policy, callbacks));
			if (controller.signal.aborted) throw new Error("Compaction cancelled");
			const { summary, firstKeptEntryId, tokensBefore, usage, details } = result;
			this.sessionManager.appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromExtension, usage);
			const entry = this.sessionManager.getEntries().find((e) => e.type === "compaction" && e.summary === summary);
			if (runner && entry) await runner.emit({ type: "session_compact", compactionEntry: entry, fromExtension, reason, willRetry });
			this.agent.state.messages = this.sessionManager.buildSessionContext().messages;
			const estimatedTokensAfter = this.agent.state.messages.reduce((n, m) => n + lib("estimateTokens", m), 0);
			const done = { summary, firstKeptEntryId, tokensBefore, estimatedTokensAfter, usage, details };
			this._compacting = undefined;
			this._emit({ type: "compaction_end", reason, result: done, aborted: false, willRetry });
			return done;
		} catch (error) {
			const aborted = controller.signal.aborted || cancelledByExtension;
			const prefix = manual ? "Compaction failed: " : reason === "overflow" ? "Context overflow recovery failed: " : "Auto-compaction failed: ";
			const errorMessage = aborted ? undefined : `${prefix}${error instanceof Error ? error.message : String(error)}`;
			this._compacting = undefined;
			this._emit({ type: "compaction_end", reason, result: undefined, aborted, willRetry: false, errorMessage });
			if (runner?.hasHandlers("session_compact_failed")) await runner.emit({ type: "session_compact_failed", reason, errorMessage, aborted, willRetry: false, fromExtension });
			if (manual) throw error;
			return undefined;
		} finally {
			this._compacting = undefined;
		}
	}

	/** pi's `abortCompaction` / `abortBranchSummary`: a running compaction or branch summary stops. */
	abortCompaction() {
		this._compacting?.abort();
	}
	abortBranchSummary() {
		this._compacting?.abort();
	}

	waitForIdle() {
		return this.isIdle ? Promise.resolve() : new Promise((resolve) => this._idleWaiters.push(resolve));
	}

	subscribe(listener) {
		this._listeners.push(listener);
		return () => {
			const index = this._listeners.indexOf(listener);
			if (index !== -1) this._listeners.splice(index, 1);
		};
	}

	dispose() {
		try {
			this.abortBash();
			this.agent.abort();
		} catch {
			// disposing never fails
		}
		this._cacheWarmer?.cancel();
		this._unsubscribeAgent?.();
		this._unsubscribeAgent = undefined;
		this._listeners = [];
		// What the session's extensions opened for it (its MCP connections, session-mcp-tools.cjs).
		for (const dispose of this.extensionRunner?.runtime?.sessionDisposers ?? []) dispose();
	}

	get state() {
		return this.agent.state;
	}
	get model() {
		return this.agent.state.model;
	}
	get thinkingLevel() {
		return this.agent.state.thinkingLevel;
	}
	get isStreaming() {
		return this._running;
	}
	get isIdle() {
		return !this._running;
	}
	get isCompacting() {
		return this._compacting !== undefined;
	}
	get messages() {
		return this.agent.state.messages;
	}
	get systemPrompt() {
		return lib("buildSystemPrompt", this._promptOptions());
	}
	get sessionFile() {
		return this.sessionManager.getSessionFile();
	}
	get sessionId() {
		return this.sessionManager.getSessionId();
	}
	get sessionName() {
		return this.sessionManager.getSessionName();
	}
	get steeringMode() {
		return this.agent.steeringMode;
	}
	get followUpMode() {
		return this.agent.followUpMode;
	}
	get pendingMessageCount() {
		return this._steering.length + this._followUp.length;
	}
	getSteeringMessages() {
		return this._steering;
	}
	getFollowUpMessages() {
		return this._followUp;
	}
	getActiveToolNames() {
		return this.agent.state.tools.map((t) => t.name);
	}
	/** pi's `getAllTools()`: the registry's tools with their exposure and `sourceInfo` (session-extensions.cjs). */
	getAllTools() {
		return allTools(this);
	}
	getToolDefinition(name) {
		return this._tools.get(name);
	}
	setActiveToolsByName(names) {
		const previous = this.getActiveToolNames();
		this._setActiveTools(names);
		// A loadout that deactivates a tool of the reloaded one replaces it: its pending tools are dropped (pi's).
		const active = new Set(this.getActiveToolNames());
		if (previous.some((name) => !active.has(name) && this._restoredToolNames?.has(name))) this._pendingToolNames?.clear();
	}
	_setActiveTools(names) {
		// pi's order: the active tools kept, then the new ones, each once; `hidden` tools never.
		const wanted = new Set(names.filter((n) => this._tools.has(n) && this._tools.get(n).exposure !== "hidden"));
		const kept = this.getActiveToolNames().filter((n) => wanted.has(n));
		this.agent.state.tools = applyLoadout(this, [...new Set([...kept, ...wanted])].map((n) => this._agentTool(this._tools.get(n))));
		for (const tool of this.agent.state.tools) this._pendingToolNames?.delete(tool.name);
	}
	/** pi's `AgentTool` of a definition, run with this session's context. */
	_agentTool(definition) {
		const session = this;
		const ctx = {
			cwd: this._cwd,
			sessionManager: this.sessionManager,
			get model() {
				return session.model;
			},
			get thinkingLevel() {
				return session.thinkingLevel;
			},
		};
		return {
			name: definition.name,
			label: definition.label ?? definition.name,
			description: definition.description,
			parameters: definition.parameters,
			prepareArguments: definition.prepareArguments,
			executionMode: definition.executionMode,
			execute: (id, params, signal, onUpdate) =>
				definition.execute(id, params, signal, onUpdate, this._extensions ? this._extensions.toolContext(id, signal) : { ...ctx, signal }),
		};
	}
	async setModel(model) {
		this.agent.state.model = model;
		this.sessionManager.appendModelChange(model.provider, model.id);
		this.setThinkingLevel(this.thinkingLevel);
	}
	setThinkingLevel(level) {
		const effective = this.model ? clampThinkingLevel(this.model, level) : "off";
		if (effective === this.agent.state.thinkingLevel) return;
		this.agent.state.thinkingLevel = effective;
		this.sessionManager.appendThinkingLevelChange(effective);
		this._emit({ type: "thinking_level_changed", level: effective });
	}
	/**
	 * pi's `cycleModel(direction, {persist})`: the next of the scoped models
	 * (those with credentials), else of the models with credentials; the
	 * thinking level the scope or settings give it, clamped. Undefined when
	 * there is nothing to cycle to.
	 */
	async cycleModel(direction = "forward", options = {}) {
		const available = this._availableModels();
		const key = (m) => `${m?.provider}\0${m?.id}`;
		const ids = new Set(available.map(key));
		const scoped = this._scopedModels.filter((s) => ids.has(key(s.model)));
		const isScoped = this._scopedModels.length > 0;
		const choices = isScoped ? scoped : available.map((model) => ({ model }));
		const current = choices.findIndex((c) => key(c.model) === key(this.model));
		const length = choices.length;
		if (length === 0 || (current !== -1 && length === 1)) return undefined;
		const next = choices[current === -1 ? (direction === "forward" ? 0 : length - 1) : direction === "forward" ? (current + 1) % length : (current - 1 + length) % length];
		const level =
			next.thinkingLevel ??
			this.settingsManager?.getModelThinkingLevel(next.model.provider, next.model.id) ??
			this.settingsManager?.getDefaultThinkingLevel() ??
			this.thinkingLevel ??
			DEFAULT_THINKING_LEVEL;
		this.agent.state.model = next.model;
		this.sessionManager.appendModelChange(next.model.provider, next.model.id);
		if (options.persist) this.settingsManager?.setDefaultModelAndProvider(next.model.provider, next.model.id);
		this.setThinkingLevel(level);
		return { model: next.model, thinkingLevel: this.thinkingLevel, isScoped };
	}
	setSessionName(name) {
		this.sessionManager.appendSessionInfo(name);
	}
	/** pi's reload: settings and resources read again, the extensions' runner made anew (session-reload.cjs). */
	async reload(options) {
		await reloadSession(this, options, () => this._readResources());
	}
	/** The resource loader's context files, skills and prompts taken into the system prompt. */
	_readResources() {
		this._promptBase = promptBaseOf(this.resourceLoader, services().channel.call("getSystemPromptOptions"));
	}
	/** pi's move to another point of the session tree, with the extension events around it (tree-navigation.cjs). */
	async navigateTree(targetId, options = {}) {
		return navigateTree(this, targetId, options);
	}
	/**
	 * pi's `executeBash(command, onChunk, {excludeFromContext, id, operations})`:
	 * the command (after the settings' shell command prefix) runs in the
	 * session's cwd, through the given `BashOperations` or the local shell
	 * (the settings' shell path); each cleaned chunk goes to `onChunk` and out as
	 * `bash_execution_update`; the result is recorded as a `bashExecution` message.
	 */
	async executeBash(command, onChunk, options) {
		const controller = new AbortController();
		this._bashControllers.add(controller);
		const prefix = this.settingsManager?.getShellCommandPrefix();
		const operations = options?.operations ?? tools.createLocalBashOperations({ shellPath: this.settingsManager?.getShellPath() });
		try {
			const result = await executeBashWithOperations(prefix ? `${prefix}\n${command}` : command, this.sessionManager.getCwd(), operations, {
				onChunk: (delta) => {
					onChunk?.(delta);
					this._emit({ type: "bash_execution_update", id: options?.id, delta });
				},
				signal: controller.signal,
			});
			this.recordBashResult(command, result, options);
			return result;
		} finally {
			this._bashControllers.delete(controller);
		}
	}
	/** pi's `recordBashResult`: the `bashExecution` message appended now, or after the run that streams. */
	recordBashResult(command, result, options) {
		const message = {
			role: "bashExecution",
			command,
			output: result.output,
			exitCode: result.exitCode,
			cancelled: result.cancelled,
			truncated: result.truncated,
			fullOutputPath: result.fullOutputPath,
			timestamp: Date.now(),
			excludeFromContext: options?.excludeFromContext,
		};
		this._pendingBash.push(message);
		if (!this.isStreaming) this._flushPendingBash();
	}
	_flushPendingBash() {
		if (this._pendingBash.length === 0) return;
		for (const message of this._pendingBash.splice(0)) this.sessionManager.appendMessage(message);
		this.agent.state.messages = this.sessionManager.buildSessionContext().messages;
	}
	abortBash() {
		for (const controller of [...this._bashControllers]) controller.abort();
	}
	get isBashRunning() {
		return this._bashControllers.size > 0;
	}
	get hasPendingBashMessages() {
		return this._pendingBash.length > 0;
	}
	/** pi's `bindExtensions(bindings)`: the extensions get `session_start` (session-extensions.cjs). */
	async bindExtensions(bindings) {
		await this._extensions?.bind(bindings);
	}
	/** pi's runner of this session's extensions (extension-runner.cjs). */
	get extensionRunner() {
		return this._extensions?.runner;
	}
	getLastAssistantText() {
		const last = [...this.messages].reverse().find((m) => m.role === "assistant" && m.stopReason !== "aborted");
		return last ? transcript.contentText(last.content, "") || undefined : undefined;
	}
}

retry.addRetryControls(AgentSession);
autoCompaction.addCompactionControls(AgentSession);
addWarmingControls(AgentSession);
require("./session-members.cjs").addSessionMembers(AgentSession);
require("./session-model-runtime.cjs").addModelRuntime(AgentSession);
require("./bug-report.cjs").addBugReport(AgentSession);
require("./session-export.cjs").addExports(AgentSession);

/** The model a session's branch last used (a `model_change`, else an assistant message's). */
function branchModel(branch) {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "model_change") return { provider: e.provider, modelId: e.modelId };
		if (e.type === "message" && e.message?.role === "assistant") return { provider: e.message.provider, modelId: e.message.model };
	}
	return undefined;
}

/** pi's `convertToLlm` of a session whose settings block images: each image becomes a note. */
function withoutImages(messages) {
	const NOTE = "Image reading is disabled.";
	return messages.map((m) => {
		if ((m.role !== "user" && m.role !== "toolResult") || !Array.isArray(m.content) || !m.content.some((c) => c.type === "image")) return m;
		const content = m.content
			.map((c) => (c.type === "image" ? { type: "text", text: NOTE } : c))
			.filter((c, i, all) => !(c.type === "text" && c.text === NOTE && i > 0 && all[i - 1].type === "text" && all[i - 1].text === NOTE));
		return { ...m, content };
	});
}

/**
 * pi's `BuildSystemPromptOptions` base of a session: a `resourceLoader`'s
 * context files, skills and prompts (the running session's without one).
 */
function promptBaseOf(resourceLoader, running) {
	if (!resourceLoader) return running ?? {};
	const custom = resourceLoader.getSystemPrompt?.();
	const appended = resourceLoader.getAppendSystemPrompt?.() ?? [];
	const base = {
		...(running ?? {}),
		contextFiles: resourceLoader.getAgentsFiles?.().agentsFiles ?? [],
		skills: (resourceLoader.getSkills?.().skills ?? []).map((s) => ({
			name: s.name,
			description: s.description,
			filePath: s.filePath,
			baseDir: s.baseDir,
			disableModelInvocation: s.disableModelInvocation === true,
		})),
		appendSystemPrompt: appended.filter((a) => typeof a === "string" && a.trim()).join("\n\n"),
	};
	delete base.customPrompt;
	if (custom) base.customPrompt = custom;
	return base;
}

/** pi's `createAgentSession(options)`: a session of its own, run in this extension host. */
async function createAgentSession(options = {}) {
	const { channel, hello } = services();
	// As pi: the agent directory's settings when no `settingsManager` is given (the user's without `agentDir`).
	const agentDir = path.resolve(options.agentDir ?? getAgentDir());
	const cwd = path.resolve(options.cwd ?? options.sessionManager?.getCwd?.() ?? hello.cwd);
	const settingsManager = options.settingsManager ?? SettingsManager.create(cwd, agentDir);
	const sessionManager = options.sessionManager ?? SessionManager.create(cwd, sessionDirFor(cwd, agentDir));
	const state = channel.call("getState");
	const existing = sessionManager.buildSessionContext();
	const resumed = existing.messages.length > 0;
	const hasThinkingEntry = sessionManager.getBranch().some((e) => e.type === "thinking_level_change");
	// pi's runtime of the session: the caller's, else a new one over the agent directory's `models.json` and `auth.json` (models.cjs).
	const modelRuntime = options.modelRuntime ?? (await ModelRuntime.create(options.agentDir ? { authPath: path.join(agentDir, "auth.json"), modelsPath: path.join(agentDir, "models.json") } : {}));
	const findModel = (provider, id) => modelRuntime.getModel(provider, id);

	// The model: the option, else the session's own (when resumed), else the settings' default, else the running session's.
	let model = options.model;
	let modelFallbackMessage;
	const previous = resumed ? branchModel(sessionManager.getBranch()) : undefined;
	if (!model && previous) {
		model = findModel(previous.provider, previous.modelId);
		if (!model) modelFallbackMessage = `Could not restore model ${previous.provider}/${previous.modelId}`;
	}
	const wanted = settingsManager && [settingsManager.getDefaultProvider(), settingsManager.getDefaultModel()];
	if (!model && wanted?.[0] && wanted[1]) model = findModel(wanted[0], wanted[1]);
	model ??= state.model ?? undefined;
	if (model && modelFallbackMessage) modelFallbackMessage += `. Using ${model.provider}/${model.id}`;

	// The thinking level as pi picks it when settings are given; else the running session's.
	let thinkingLevel = options.thinkingLevel;
	if (thinkingLevel === undefined && resumed && hasThinkingEntry) thinkingLevel = existing.thinkingLevel;
	if (thinkingLevel === undefined && settingsManager) {
		thinkingLevel = (model && settingsManager.getModelThinkingLevel(model.provider, model.id)) ?? settingsManager.getDefaultThinkingLevel() ?? DEFAULT_THINKING_LEVEL;
	}
	thinkingLevel ??= state.thinkingLevel;
	thinkingLevel = model ? clampThinkingLevel(model, thinkingLevel ?? "off") : "off";

	const definitions = new Map();
	// pi's `tools` / `noTools` / `excludeTools` (session-tool-options.cjs): tools not allowed are not registered.
	const toolPolicy = toolOptions(options, settingsManager?.getDefaultTools());
	const builtinTools = builtinDefinitions(cwd, settingsManager, toolPolicy.isAllowed);
	for (const definition of builtinTools) definitions.set(definition.name, definition);
	const customTools = (options.customTools ?? []).filter((tool) => toolPolicy.isAllowed(tool.name));
	for (const tool of customTools) definitions.set(tool.name, tool);

	const core = services().agentCore();
	// pi's provider events of the session's extensions (its `onPayload`/`onResponse`/`transformHeaders`), bound once the session exists.
	let withProviderHooks = (streamOptions) => streamOptions;
	const baseStream = (m, context, streamOptions) => modelRuntime.streamSimple(m, context, withProviderHooks(streamOptions));
	// What the session's own extensions register (providers, virtual models) laid over its registry.
	const sessionModels = createSessionModels({
		base: new ModelRegistry(modelRuntime),
		// The loader's extensions as they are now: a reload's register too (kept-registrations.cjs).
		extensions: () => (resourceLoader.getExtensions?.() ?? extensionsResult)?.extensions,
		context: () => session.extensionRunner?.createContext(),
		sources: () => modelRuntime.refreshSources?.(),
	});
	const stream = sessionModels.streamWith(baseStream);
	// pi's SDK session keeps its own requests' prompt caches warm (session-warming.cjs).
	let warmer;
	const agent = new core.Agent({
		initialState: { systemPrompt: "", model, thinkingLevel, tools: [], messages: existing.messages },
		convertToLlm: (messages) => (settingsManager?.getBlockImages() ? withoutImages(convertToLlm(messages)) : convertToLlm(messages)),
		streamFn: warmingStream(stream, () => sessionManager.getSessionId(), () => warmer, () => agent),
		sessionId: sessionManager.getSessionId(),
		...(settingsManager
			? {
					steeringMode: settingsManager.getSteeringMode(),
					followUpMode: settingsManager.getFollowUpMode(),
					transport: settingsManager.getTransport(),
					thinkingBudgets: settingsManager.getThinkingBudgets(),
				}
			: {}),
	});
	if (resumed) {
		if (!hasThinkingEntry) sessionManager.appendThinkingLevelChange(thinkingLevel);
	} else {
		if (model) sessionManager.appendModelChange(model.provider, model.id);
		sessionManager.appendThinkingLevelChange(thinkingLevel);
	}
	// Without a loader, pi's own: a `DefaultResourceLoader` of the session's cwd and agent directory, reloaded (its extensions too).
	const resourceLoader = options.resourceLoader ?? (await loadedDefaultResourceLoader({ cwd, agentDir, settingsManager }));
	const promptBase = promptBaseOf(resourceLoader, channel.call("getSystemPromptOptions"));
	const session = new AgentSession({ agent, sessionManager, settingsManager, resourceLoader, cwd, agentDir, tools: definitions, promptBase,
		streamFn: stream,
		availableModels: () => sessionModels.registry.getAvailable(),
		scopedModels: options.scopedModels,
	});
	session._toolPolicy = toolPolicy;
	// pi's registry of the session's tools: the built-ins, the extensions', the caller's (session-extensions.cjs).
	session._builtinTools = builtinTools;
	session._customTools = customTools;
	session._modelRuntime = modelRuntime;
	warmer = session._cacheWarmer = new SessionCacheWarmer(session, stream);
	// pi's refresh before each next turn: the active tools as they are now (a tool may have activated some), the prompt's change.
	agent.prepareNextTurnWithContext = async (turn) => {
		const update = session._systemUpdate(refreshLoadout(session, session._promptOptions()));
		return { context: { ...turn.context, tools: agent.state.tools.slice() }, messages: update ? [update] : undefined };
	};
	const extensionsResult = resourceLoader.getExtensions?.() ?? { extensions: [], errors: [] };
	// pi registers the session's extensions' providers and virtual models into a caller's runtime (session-model-runtime.cjs).
	require("./session-model-runtime.cjs").registerSessionModels(modelRuntime, { extensions: () => (resourceLoader.getExtensions?.() ?? extensionsResult).extensions, context: () => session.extensionRunner?.createContext() });
	session._sessionStartEvent = options.sessionStartEvent ?? { type: "session_start", reason: "startup" };
	withProviderHooks = (streamOptions) => providerHooks(session.extensionRunner, streamOptions);
	attachExtensions(session, extensionsResult, { modelRegistry: sessionModels.registry });
	// The first loadout, as pi's: the selected names, then what registration activates (built-ins, extensions', custom).
	// Each name as the registry holds it (a caller's tool in place of an extension's of its name), as pi activates them.
	const registered = (list) => list.map((definition) => session._tools.get(definition.name)).filter(Boolean);
	const extensionTools = registered(session.extensionRunner.getAllRegisteredTools().map((t) => t.definition));
	session.agent.state.tools = [];
	const builtins = builtinTools.filter((d) => session._tools.get(d.name) === d);
	session.setActiveToolsByName(toolPolicy.loadout(builtins, extensionTools, registered(customTools)));
	sessionModels.installRouting(session);
	return { session, extensionsResult, modelFallbackMessage: model ? modelFallbackMessage : "No models available." };
}

module.exports = {
	AgentSession,
	createAgentSession,
	MemorySessionManager,
	sectionChanges,
};
