// pi-rpc extension host: the extensions of an SDK session
// (agent-session.cjs), as pi runs them there. The session's runner
// (extension-runner.cjs) is bound to the session: the extensions' `pi`
// actions act on it, their tools join its tools (run with the runner's tool
// context), the agent's tool calls pass their `tool_call` / `tool_result`
// handlers, each request their `context` handlers, and the agent's events
// reach their handlers (awaited, before the session's own listeners, as in
// pi). `prompt` runs an extension command first, then the `input` handlers,
// then `before_agent_start` (agent-session.cjs calls these hooks). Their
// tools may call the session's tools (`ctx.executeTool()`,
// session-nested-calls.cjs).

"use strict";

const { ExtensionRunner } = require("./extension-runner.cjs");
const { createExtensionRuntime } = require("./extension-loader.cjs");
const { turnEndBoundary, beforeSettleBoundary } = require("./session-boundaries.cjs");
const { SessionNestedCalls } = require("./session-nested-calls.cjs");
const { DECLARED } = require("./session-tool-options.cjs");
const { withToolResultImages } = require("./session-images.cjs");

/** Whether registering a tool activates it (pi's rules; a session's `tools` allowlist in session-tool-options.cjs). */
const activates = (session, definition) => (session._toolPolicy ? session._toolPolicy.activates(definition) : definition.defaultActive !== false && DECLARED.has(definition.exposure));

/**
 * The session's tools as pi's registry holds them: the built-ins, then the
 * extensions' tools, then the caller's custom tools (a later one of a name
 * taking its place), each only when the session's tool options allow it.
 */
function toolMap(session, runner) {
	const allowed = (name) => !session._toolPolicy || session._toolPolicy.isAllowed(name);
	const map = new Map();
	const sources = [session._builtinTools ?? [], runner.getAllRegisteredTools().map((t) => t.definition), session._customTools ?? []];
	for (const list of sources) for (const definition of list) if (allowed(definition.name)) map.set(definition.name, definition);
	return map;
}

/**
 * The session's tools made again from `runner`'s (registration order kept);
 * the ones new since the last look that registration activates become
 * active, and so do the pending tools of a reload that are registered now.
 */
function syncTools(session, runner, activateNew) {
	const previous = session._tools;
	session._tools = toolMap(session, runner);
	const added = [...session._tools.values()].filter((d) => previous.get(d.name) !== d && activates(session, d)).map((d) => d.name);
	const pending = [...(session._pendingToolNames ?? [])].filter((name) => session._tools.has(name));
	// pi's registry refresh applies the loadout again, also when no tool becomes active (codemode's listing).
	if (activateNew) session._setActiveTools([...new Set([...session.getActiveToolNames(), ...added, ...pending])]);
	return added;
}

/** pi's `sourceInfo` of a tool that is no extension's: a built-in's, or a caller's custom tool's (`<sdk:name>`). */
const syntheticSource = (path, source) => ({ path, source, scope: "temporary", origin: "top-level" });

/**
 * pi's `getAllTools()` of the session: each tool of its registry (in
 * `toolMap`'s order) with its declaration, guidelines, exposure and
 * `sourceInfo` (the registering extension's, `builtin:<name>` or `<sdk:<name>>`).
 */
function allTools(session) {
	const registered = session.extensionRunner?.getAllRegisteredTools() ?? [];
	return [...session._tools.values()].map((d) => ({
		name: d.name,
		description: d.description,
		parameters: d.parameters,
		promptGuidelines: d.promptGuidelines,
		exposure: d.exposure ?? "direct",
		...(d.namespace ? { namespace: d.namespace } : {}),
		...(d.annotations ? { annotations: { ...d.annotations } } : {}),
		...(d.reachesTools ? { reachesTools: d.reachesTools } : {}),
		sourceInfo:
			registered.find((r) => r.definition === d)?.sourceInfo ??
			((session._customTools ?? []).includes(d) ? syntheticSource(`<sdk:${d.name}>`, "sdk") : syntheticSource(`builtin:${d.name}`, "builtin")),
	}));
}

/**
 * The active tools of a session whose runner was made anew (pi's
 * `_buildRuntime` at `reload()`): the tools active before and `added` (the
 * settings' new default tools) as far as they are registered, then those
 * registration activates (the built-ins too under a `tools` allowlist).
 */
function reloadedLoadout(session, active, added) {
	const builtins = new Set(session._builtinTools ?? []);
	const allowlist = session._toolPolicy?.hasAllowlist === true;
	const activated = [...session._tools.values()].filter((d) => (allowlist || !builtins.has(d)) && activates(session, d)).map((d) => d.name);
	return [...new Set([...active, ...added, ...activated])];
}

/**
 * pi's `sendCustomMessage`: held for the next run (`nextTurn`), steered or
 * followed up while streaming, a run of its own (`triggerTurn`), held to the
 * end of the run while streaming, else appended at once (with its
 * `message_start` / `message_end` to the listeners).
 */
async function sendCustomMessage(session, message, options = {}) {
	const custom = { role: "custom", customType: message.customType, content: message.content ?? [], display: message.display, details: message.details, timestamp: Date.now() };
	const held = heldMessages(session);
	if (options.deliverAs === "nextTurn") held.nextTurn.push(custom);
	else if (session.isStreaming && options.triggerTurn !== false) {
		if (options.deliverAs === "followUp") session.agent.followUp(custom);
		else session.agent.steer(custom);
	} else if (options.triggerTurn) await session._startRun({ messageType: "custom", message: custom });
	else if (session.isStreaming) held.custom.push(custom);
	else appendCustom(session, custom);
}

function appendCustom(session, custom) {
	session.sessionManager.appendCustomMessageEntry(custom.customType, custom.content, custom.display, custom.details);
	session.agent.state.messages = [...session.agent.state.messages, custom];
	session._emit({ type: "message_start", message: custom });
	session._emit({ type: "message_end", message: custom });
}

/** The custom messages a session holds: for its next run, and until its run ends. */
function heldMessages(session) {
	session._heldMessages ??= { nextTurn: [], custom: [] };
	return session._heldMessages;
}

/**
 * The session's runner, made from the resource loader's extensions (none
 * without a loader), bound to `session` (and to what `bindExtensions` gave,
 * when made anew by a reload), its tools added (which become active is
 * `createAgentSession`'s first loadout, or a reload's).
 */
function attachExtensions(session, extensionsResult, { modelRegistry }) {
	const runtime = extensionsResult?.runtime ?? createExtensionRuntime();
	session._extensionModelRegistry = modelRegistry;
	const runner = new ExtensionRunner(extensionsResult?.extensions ?? [], runtime, session._cwd, session.sessionManager, modelRegistry);
	// pi's `ctx.executeTool()` / `ctx.tools` (session-nested-calls.cjs).
	const nested = (session._nestedCalls = new SessionNestedCalls(session, runner));
	runner.bindCore(
		{
			sendMessage: (message, options) => {
				session.sendCustomMessage(message, options).catch((error) => runner.emitError({ extensionPath: "<sendMessage>", event: "send_message", error: String(error?.message ?? error) }));
			},
			sendUserMessage: (content, options) => {
				session.sendUserMessage(content, options).catch((error) => runner.emitError({ extensionPath: "<sendUserMessage>", event: "send_user_message", error: String(error?.message ?? error) }));
			},
			appendEntry: (customType, data) => session.sessionManager.appendCustomEntry(customType, data),
			setSessionName: (name) => session.setSessionName(name),
			getSessionName: () => session.sessionName,
			setLabel: (entryId, label) => session.sessionManager.appendLabelChange(entryId, label),
			getActiveTools: () => session.getActiveToolNames(),
			getAllTools: () => allTools(session),
			getSettings: () => session.settingsManager?.getSettings?.() ?? {},
			setActiveTools: (names) => session.setActiveToolsByName(names),
			refreshTools: () => syncTools(session, runner, true),
			getCommands: () =>
				runner.getRegisteredCommands().map((c) => ({ name: c.invocationName, description: c.description, source: "extension", sourceInfo: c.sourceInfo })),
			setModel: async (model) => {
				await session.setModel(model);
				return true;
			},
			getThinkingLevel: () => session.thinkingLevel,
			setThinkingLevel: (level) => session.setThinkingLevel(level),
		},
		{
			getModel: () => session.model,
			getScopedModels: () => session._scopedModels,
			isIdle: () => session.isIdle,
			isProjectTrusted: () => session.settingsManager?.isProjectTrusted?.() ?? true,
			getSignal: () => undefined,
			abort: () => {
				session.abort();
			},
			hasPendingMessages: () => session.pendingMessageCount > 0,
			shutdown: () => session._extensionShutdown?.(),
			getContextUsage: () => session.getContextUsage(),
			compact: (options) => {
				session.compact(options?.customInstructions).then(options?.onComplete, options?.onError);
			},
			getSystemPrompt: () => session.systemPrompt,
			getSystemPromptOptions: () => session._promptOptions(),
			getCallableTools: () => nested.callableTools(),
			executeTool: (callerId, name, args, options) => nested.execute(callerId, name, args, options),
		},
	);
	applyBindings(session, runner);
	syncTools(session, runner, false);

	const agent = session.agent;
	agent.beforeToolCall = async ({ toolCall, args }) => {
		if (!runner.hasHandlers("tool_call")) return undefined;
		return runner.emitToolCall({ type: "tool_call", toolName: toolCall.name, toolCallId: toolCall.id, input: args });
	};
	agent.afterToolCall = withToolResultImages(session, async ({ toolCall, args, result, isError }) => {
		if (!runner.hasHandlers("tool_result")) return undefined;
		const event = { type: "tool_result", toolName: toolCall.name, toolCallId: toolCall.id, input: args, content: result.content, details: result.details, isError, usage: result.usage };
		if (result.structuredContent !== undefined) event.structuredContent = result.structuredContent;
		return runner.emitToolResult(event);
	});
	agent.transformContext = async (messages) => (runner.hasHandlers("context") || runner.hasHandlers("context_with_system") ? runner.emitContext(messages) : messages);

	let turnIndex = 0;
	// pi's turn_end boundary: asked before the loop goes on; `continue` runs another turn.
	// The agent's own `finishTurn` (a reload's runner wraps it again, not the old runner's).
	if (!("_finishTurnBelow" in session)) session._finishTurnBelow = agent.finishTurn;
	const previousFinishTurn = session._finishTurnBelow;
	agent.finishTurn = async (turn, signal) => {
		const goOn = await turnEndBoundary(session, runner, turn, turnIndex);
		const previous = await previousFinishTurn?.(turn, signal);
		if (previous?.action === "end") return previous;
		return goOn || previous?.action === "continue" ? { action: "continue" } : undefined;
	};
	session._extensions = {
		runner,
		toolContext: (toolCallId, signal) => runner.createToolContext(toolCallId, signal),
		/** An agent event to the handlers, as pi turns it into extension events; a `message_end` replacement applied in place. */
		async agentEvent(event) {
			switch (event.type) {
				case "agent_start":
					turnIndex = 0;
					return runner.emit({ type: "agent_start" });
				case "agent_end":
					return runner.emit({ type: "agent_end", messages: event.messages });
				case "turn_start":
					return runner.emit({ type: "turn_start", turnIndex, timestamp: Date.now() });
				case "turn_end":
					// Its handlers were asked at the boundary (finishTurn).
					turnIndex++;
					return undefined;
				case "message_start":
					return runner.emit({ type: "message_start", message: event.message });
				case "message_update":
					return runner.emit({ type: "message_update", message: event.message, assistantMessageEvent: event.assistantMessageEvent });
				case "message_end": {
					const replacement = await runner.emitMessageEnd({ type: "message_end", message: event.message });
					if (replacement) {
						for (const key of Object.keys(event.message)) delete event.message[key];
						Object.assign(event.message, replacement.content == null && replacement.role !== "system" ? { ...replacement, content: [] } : replacement);
					}
					return undefined;
				}
				case "tool_execution_start":
					return runner.emit({ type: "tool_execution_start", toolCallId: event.toolCallId, toolName: event.toolName, args: event.args });
				case "tool_execution_update":
					return runner.emit({ type: "tool_execution_update", toolCallId: event.toolCallId, toolName: event.toolName, args: event.args, partialResult: event.partialResult });
				case "tool_execution_end": {
					const { toolCallId, toolName, result, isError, durationMs } = event;
					return runner.emit({ type: "tool_execution_end", toolCallId, toolName, result, isError, ...(durationMs === undefined ? {} : { durationMs }) });
				}
				default:
					return undefined;
			}
		},
		emit: (event) => runner.emit(event),
		beforeSettle: () => beforeSettleBoundary(session, runner),
		takeNextTurn: () => heldMessages(session).nextTurn.splice(0),
		flushPendingCustom: () => {
			for (const custom of heldMessages(session).custom.splice(0)) appendCustom(session, custom);
		},
		/** An extension command named by `/name args`: run with the command context; whether there was one. */
		async runCommand(text) {
			const space = text.indexOf(" ");
			const name = space === -1 ? text.slice(1) : text.slice(1, space);
			const command = runner.getCommand(name);
			if (!command) return false;
			try {
				await command.handler(space === -1 ? "" : text.slice(space + 1), runner.createCommandContext());
			} catch (error) {
				runner.emitError({ extensionPath: `command:${name}`, event: "command", error: error instanceof Error ? error.message : String(error) });
			}
			return true;
		},
		/** The `input` handlers: `undefined` when one handled it, else the (transformed) text and images. */
		async input(text, images, source, streamingBehavior) {
			if (!runner.hasHandlers("input")) return { text, images };
			const result = await runner.emitInput(text, images, source, streamingBehavior);
			if (result.action === "handled") return undefined;
			return result.action === "transform" ? { text: result.text, images: result.images ?? images } : { text, images };
		},
		beforeAgentStart: (trigger, options) => runner.emitBeforeAgentStart(trigger, options),
		/** pi's `bindExtensions(bindings)`: the UI, command actions and error listener set; `session_start`, then `resources_discover`. */
		async bind(bindings = {}) {
			const kept = (session._extensionBindings ??= {});
			for (const key of ["uiContext", "mode", "commandContextActions", "onError"]) if (bindings[key] !== undefined) kept[key] = bindings[key];
			if (bindings.shutdownHandler !== undefined) session._extensionShutdown = bindings.shutdownHandler;
			session._extensionsBound = true;
			applyBindings(session, runner);
			await this.start(session._sessionStartEvent ?? { type: "session_start", reason: "startup" });
		},
		/** `session_start` (`event`), then `resources_discover`, as pi's bind and reload run them. */
		async start(start) {
			await runner.emit(start);
			runner.reportUnhandledMcpServers();
			if (!runner.hasHandlers("resources_discover") || !session.resourceLoader?.extendResources) return;
			const found = await runner.emitResourcesDiscover(session._cwd, start.reason === "reload" ? "reload" : "startup");
			if (found.skillPaths.length + found.promptPaths.length + found.themePaths.length === 0) return;
			session.resourceLoader.extendResources(found);
			session._readResources?.();
		},
	};
	return runner;
}

/** pi's `_applyExtensionBindings`: what `bindExtensions` gave (UI and mode, command actions, error listener) applied to `runner`. */
function applyBindings(session, runner) {
	const bindings = session._extensionBindings;
	if (!bindings) return;
	if (bindings.uiContext !== undefined || bindings.mode !== undefined) runner.setUIContext(bindings.uiContext, bindings.mode ?? "print");
	if (bindings.commandContextActions !== undefined) runner.bindCommandContext(bindings.commandContextActions);
	if (bindings.onError !== undefined && !runner.errorListeners.has(bindings.onError)) runner.onError(bindings.onError);
}

/**
 * A model call's options with pi's provider hooks of `runner`'s extensions:
 * `before_provider_request` (a handler's payload replaces the request's),
 * `after_provider_response` (status and headers),
 * `before_provider_headers` (handlers change the headers in place) and
 * `provider_stream_event` (each parsed stream event, with the call's
 * model), each only when an extension listens, as pi's SDK session wires them.
 */
function providerHooks(runner, streamOptions = {}) {
	if (!runner) return streamOptions;
	const hooks = {};
	if (runner.hasHandlers("before_provider_request")) hooks.onPayload = (payload) => runner.emitBeforeProviderRequest(payload);
	if (runner.hasHandlers("after_provider_response")) {
		hooks.onResponse = (response) => runner.emit({ type: "after_provider_response", status: response.status, headers: response.headers });
	}
	if (runner.hasHandlers("before_provider_headers")) hooks.transformHeaders = (headers) => runner.emitBeforeProviderHeaders(headers);
	if (runner.hasHandlers("provider_stream_event")) {
		hooks.onProviderStreamEvent = (data, model) => runner.emit({ data, type: "provider_stream_event", provider: model?.provider, api: model?.api, model: model?.id });
	}
	return Object.keys(hooks).length > 0 ? { ...streamOptions, ...hooks } : streamOptions;
}

module.exports = { attachExtensions, sendCustomMessage, providerHooks, reloadedLoadout, allTools };
