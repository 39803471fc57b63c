// pi-rpc extension host: pi's `ExtensionRunner` (and `wrapRegisteredTool(s)`)
// over extensions loaded by extension-loader.cjs. The runner holds the
// extensions of one SDK session (or of a caller that builds one by hand),
// binds their runtime's actions to the session (`bindCore`), makes the
// `ctx` its handlers, tools and commands get, and runs their handlers with
// pi's composition rules: the host's `runHook` (hooks.mjs) for each
// extension in turn, the answer of one carried into the next.

"use strict";

const { STALE, SESSION_BEFORE, host, messageOf, mcpServerList } = require("./extension-loader.cjs");
const { wrapUIPrompts } = require("./ui-prompts.cjs");
const { getCurrentSystemMessage } = require("../ai/transcript.cjs");

const noOpUI = {
	select: async () => undefined,
	confirm: async () => false,
	input: async () => undefined,
	notify: () => {},
	onTerminalInput: () => () => {},
	setStatus: () => {},
	setWorkingMessage: () => {},
	setWorkingVisible: () => {},
	setWorkingIndicator: () => {},
	setHiddenThinkingLabel: () => {},
	setWidget: () => {},
	setFooter: () => {},
	setHeader: () => {},
	setTitle: () => {},
	custom: async () => undefined,
	pasteToEditor: () => {},
	setEditorText: () => {},
	getEditorText: () => "",
	editor: async () => undefined,
	setEditorComponent: () => {},
	getToolsExpanded: () => false,
	setToolsExpanded: () => {},
	get theme() {
		return undefined;
	},
	getAllThemes: () => [],
	getTheme: () => undefined,
	setTheme: () => ({ success: false, error: "UI not available" }),
};

class ExtensionRunner {
	constructor(extensions, runtime, cwd, sessionManager, modelRegistry) {
		this.extensions = extensions;
		this.runtime = runtime;
		this.cwd = cwd;
		this.sessionManager = sessionManager;
		this.modelRegistry = modelRegistry;
		this.uiContext = noOpUI;
		this.mode = "print";
		this.errorListeners = new Set();
		this.runtime.modelRegistry = modelRegistry;
		this.runtime.reportError = (error) => {
			if (!this.runtime.staleMessage) this.emitError(error);
		};
		this.context = {
			getModel: () => undefined,
			getScopedModels: () => [],
			isIdle: () => true,
			isProjectTrusted: () => false,
			getSignal: () => undefined,
			abort: () => {},
			hasPendingMessages: () => false,
			shutdown: () => {},
			getContextUsage: () => undefined,
			compact: () => {},
			getSystemPrompt: () => "",
			getSystemPromptOptions: () => ({ cwd }),
		};
		this.commandActions = {};
	}

	/** pi's `bindCore(actions, contextActions)`: the runtime's actions and the context's getters. */
	bindCore(actions, contextActions = {}) {
		for (const name of ["sendMessage", "sendUserMessage", "appendEntry", "setSessionName", "getSessionName", "setLabel", "getActiveTools", "getAllTools", "getSettings", "setActiveTools", "refreshTools", "getCommands", "setModel", "getThinkingLevel", "setThinkingLevel"]) {
			if (actions[name]) this.runtime[name] = actions[name];
		}
		this.runtime.createContext = () => this.createContext();
		Object.assign(this.context, contextActions);
		// Servers registered from now on reach every extension, as pi's runner announces them.
		this.runtime.mcpServersChanged = () => {
			void this.emit({ type: "mcp_servers_change", servers: mcpServerList(this.runtime) });
			this.reportUnhandledMcpServers();
		};
	}
	/** pi's `bindCommandContext(actions)`: the command context's session actions. */
	bindCommandContext(actions) {
		this.commandActions = actions ?? {};
	}
	/** pi's `setUIContext`: a given UI's questions tell the extensions `ui_prompt_start` / `ui_prompt_end` (ui-prompts.cjs). */
	setUIContext(uiContext, mode = "print") {
		this.givenUIContext = uiContext;
		this.uiContext = uiContext ? wrapUIPrompts(this, uiContext) : noOpUI;
		this.mode = mode;
	}
	getUIContext() {
		return this.uiContext;
	}
	hasUI() {
		return this.uiContext !== noOpUI;
	}
	getExtensionPaths() {
		return this.extensions.map((e) => e.path);
	}
	/** Every extension's tools, the first registration of a name winning. */
	getAllRegisteredTools() {
		const byName = new Map();
		for (const ext of this.extensions) for (const tool of ext.tools.values()) if (!byName.has(tool.definition.name)) byName.set(tool.definition.name, tool);
		return [...byName.values()];
	}
	getToolDefinition(name) {
		for (const ext of this.extensions) {
			const tool = ext.instance.tools.get(name);
			if (tool) return tool;
		}
		return undefined;
	}
	getFlags() {
		const flags = new Map();
		for (const ext of this.extensions) for (const [name, flag] of ext.flags) if (!flags.has(name)) flags.set(name, flag);
		return flags;
	}
	setFlagValue(name, value) {
		this.runtime.flagValues.set(name, value);
	}
	getFlagValues() {
		return new Map(this.runtime.flagValues);
	}
	getShortcuts() {
		return new Map();
	}
	getShortcutDiagnostics() {
		return [];
	}
	getCommandDiagnostics() {
		return [];
	}
	getMessageRenderer() {
		return undefined;
	}
	getEntryRenderer() {
		return undefined;
	}
	/**
	 * pi's `resolveToolRenderers(toolName, base)`: the renderers of a call to
	 * `toolName` as the extensions' tool-renderer resolvers choose them, in
	 * load order, each given `next()` (what the later ones, then `base()`,
	 * choose). Nothing draws them in RPC mode; they are returned as given.
	 */
	resolveToolRenderers(toolName, base) {
		const resolvers = this.extensions.flatMap((ext) => ext.toolRenderers ?? []);
		const choose = (from) => (from === resolvers.length ? base() : resolvers[from](toolName, () => choose(from + 1)));
		return choose(0);
	}
	getMarkdownTransformers() {
		return [];
	}
	getModelRegistry() {
		return this.modelRegistry;
	}
	/** The commands, a name registered twice taking `name:1`, `name:2` as pi names them. */
	getRegisteredCommands() {
		const commands = this.extensions.flatMap((ext) => [...ext.commands.values()]);
		const counts = new Map();
		for (const c of commands) counts.set(c.name, (counts.get(c.name) ?? 0) + 1);
		const seen = new Map();
		const taken = new Set();
		return commands.map((command) => {
			const occurrence = (seen.get(command.name) ?? 0) + 1;
			seen.set(command.name, occurrence);
			let invocationName = counts.get(command.name) > 1 ? `${command.name}:${occurrence}` : command.name;
			for (let n = occurrence + 1; taken.has(invocationName); n++) invocationName = `${command.name}:${n}`;
			taken.add(invocationName);
			return { ...command, invocationName };
		});
	}
	getCommand(name) {
		return this.getRegisteredCommands().find((c) => c.invocationName === name);
	}
	hasHandlers(event) {
		return this.extensions.some((ext) => (ext.handlers.get(event)?.length ?? 0) > 0);
	}
	getActiveTools() {
		this.assertActive();
		return this.runtime.getActiveTools();
	}
	shutdown() {
		this.context.shutdown();
	}
	invalidate(message = STALE) {
		this.runtime.invalidate(message);
	}
	assertActive() {
		this.runtime.assertActive();
	}
	onError(listener) {
		this.errorListeners.add(listener);
		return () => this.errorListeners.delete(listener);
	}
	emitError(error) {
		for (const listener of this.errorListeners) listener(error);
	}
	/** pi's report of registered servers no extension connects (none handles `mcp_servers_change`), each once. */
	reportUnhandledMcpServers() {
		if (this.hasHandlers("mcp_servers_change")) return;
		this.reportedMcpServers ??= new Set();
		for (const server of mcpServerList(this.runtime)) {
			if (this.reportedMcpServers.has(server.name)) continue;
			this.reportedMcpServers.add(server.name);
			const error = `MCP server "${server.name}" is registered, but no loaded extension connects MCP servers; another extension may have replaced the built-in MCP support`;
			this.emitError({ extensionPath: server.extensionPath, event: "register_mcp_server", error });
		}
	}

	/** pi's ExtensionContext: getters read at call time, all of them refused once the runner is stale. */
	createContext() {
		const runner = this;
		const c = this.context;
		const guard = (f) => (...args) => {
			runner.assertActive();
			return f(...args);
		};
		const ctx = {
			isIdle: guard(() => c.isIdle()),
			isProjectTrusted: guard(() => c.isProjectTrusted()),
			abort: guard(() => c.abort()),
			hasPendingMessages: guard(() => c.hasPendingMessages()),
			shutdown: guard(() => c.shutdown()),
			getContextUsage: guard(() => c.getContextUsage()),
			compact: guard((options) => c.compact(options)),
			getSystemPrompt: guard(() => c.getSystemPrompt()),
		};
		const getters = {
			ui: () => runner.uiContext,
			mode: () => runner.mode,
			hasUI: () => runner.hasUI(),
			cwd: () => runner.cwd,
			sessionManager: () => runner.sessionManager,
			modelRegistry: () => runner.modelRegistry,
			model: () => c.getModel(),
			scopedModels: () => c.getScopedModels(),
			thinkingLevel: () => runner.runtime.getThinkingLevel(),
			signal: () => c.getSignal(),
		};
		for (const [key, get] of Object.entries(getters)) Object.defineProperty(ctx, key, { enumerable: true, get: guard(get) });
		return ctx;
	}
	/** The context of the tool call `toolCallId`: `tools` and `executeTool()` as the session offers them. */
	createToolContext(toolCallId, signal) {
		const runner = this;
		const ctx = this.createContext();
		Object.defineProperty(ctx, "tools", { get: () => (runner.assertActive(), runner.context.getCallableTools?.() ?? []) });
		ctx.executeTool = async (name, args, options = {}) => {
			runner.assertActive();
			if (!runner.context.executeTool) {
				const text = "Nested tool calls are not available in this context";
				return { toolCall: { type: "toolCall", id: `${toolCallId}/0`, name, arguments: {} }, result: { content: [{ type: "text", text }], details: {} }, isError: true };
			}
			return runner.context.executeTool(toolCallId, name, args, { ...options, signal: options.signal ?? signal });
		};
		return ctx;
	}
	/** The command context: the event context plus the session actions bound by `bindCommandContext`. */
	createCommandContext() {
		const ctx = this.createContext();
		const a = this.commandActions;
		const missing = (name) => () => {
			throw new Error(`ctx.${name}() is not available in this context`);
		};
		const action = (name, fallback) => (...args) => {
			this.assertActive();
			return (a[name] ?? fallback ?? missing(name))(...args);
		};
		ctx.getSystemPromptOptions = action("getSystemPromptOptions", () => this.context.getSystemPromptOptions());
		ctx.waitForIdle = action("waitForIdle", async () => {});
		ctx.newSession = action("newSession", async () => ({ cancelled: true }));
		ctx.fork = action("fork", async () => ({ cancelled: true }));
		ctx.navigateTree = action("navigateTree", async () => ({ cancelled: true }));
		ctx.switchSession = action("switchSession", async () => ({ cancelled: true }));
		ctx.reload = action("reload", async () => {});
		return ctx;
	}

	/** Each extension's handlers of a hook through the host's `runHook`, `next(answer, params)` carrying one's answer into the next's params. */
	async _eachHook(method, params, ctx, next) {
		const { runHook } = host();
		for (const ext of this.extensions) {
			if ((ext.handlers.get(method === "message_end_hook" ? "message_end" : method)?.length ?? 0) === 0) continue;
			const report = (event, error) => this.emitError({ extensionPath: ext.path, event, error: messageOf(error), stack: error?.stack });
			const answer = await runHook(ext.instance, method, params, ctx ?? this.createContext(), report);
			if (next(answer, params) === false) return;
		}
	}

	/** pi's `emit(event)`: every handler notified; a `session_before_*` handler's answer kept, a cancel ending the round. */
	async emit(event) {
		const ctx = this.createContext();
		let result;
		for (const ext of this.extensions) {
			for (const handler of [...(ext.handlers.get(event.type) ?? [])]) {
				try {
					const answer = await handler(event, ctx);
					if (SESSION_BEFORE.has(event.type) && answer) {
						result = answer;
						if (result.cancel) return result;
					}
				} catch (error) {
					this.emitError({ extensionPath: ext.path, event: event.type, error: messageOf(error), stack: error?.stack });
				}
			}
		}
		return result;
	}
	/** `cache_warming_decision`: every handler sees pi's action; the last one that answers an action wins. */
	async emitCacheWarmingDecision(event) {
		const ctx = this.createContext();
		let action = event.action;
		for (const ext of this.extensions) {
			for (const handler of [...(ext.handlers.get(event.type) ?? [])]) {
				try {
					const answer = await handler(event, ctx);
					if (answer?.action !== undefined) action = answer.action;
				} catch (error) {
					this.emitError({ extensionPath: ext.path, event: event.type, error: messageOf(error), stack: error?.stack });
				}
			}
		}
		return action;
	}
	/**
	 * pi's actionable boundary (`turn_end`, `agent_before_settle`): handlers
	 * chained, each given the `entries` and `continue` proposed so far and the
	 * `context` those entries give (`buildContext`); entries a context cannot
	 * be built from are reported and dropped.
	 */
	async emitBoundary(baseEvent, buildContext) {
		const ctx = this.createContext();
		let entries = [];
		let goOn = false;
		let context = await buildContext(entries);
		let valid = true;
		for (const ext of this.extensions) {
			for (const handler of [...(ext.handlers.get(baseEvent.type) ?? [])]) {
				try {
					const answer = await handler({ ...baseEvent, entries, continue: goOn, context }, ctx);
					if (answer?.entries !== undefined) entries = answer.entries;
					if (answer?.continue !== undefined) goOn = answer.continue;
				} catch (error) {
					this.emitError({ extensionPath: ext.path, event: baseEvent.type, error: messageOf(error), stack: error?.stack });
				}
				try {
					context = await buildContext(entries);
					valid = true;
				} catch (error) {
					valid = false;
					this.emitError({ extensionPath: ext.path, event: baseEvent.type, error: `Invalid boundary entries: ${messageOf(error)}`, stack: error?.stack });
				}
			}
		}
		return valid ? { entries, continue: goOn, context, valid } : { entries: [], continue: false, context, valid };
	}
	/** `tool_call`: handlers change `event.input` in place; the first block wins; a throwing handler blocks (it throws). */
	async emitToolCall(event) {
		let result;
		await this._eachHook("tool_call", event, undefined, (answer) => {
			if (answer?.block) {
				result = { block: true, reason: answer.reason };
				return false;
			}
		});
		return result;
	}
	/** `tool_result`: each handler's replacements carried into the next; the final fields when any changed. */
	async emitToolResult(event) {
		const current = { ...event };
		let modified = false;
		await this._eachHook("tool_result", current, undefined, (answer) => {
			if (!answer) return;
			modified = true;
			Object.assign(current, answer, { structuredContent: answer.structuredContent ?? undefined });
		});
		if (!modified) return undefined;
		const { content, details, structuredContent, isError, usage } = current;
		return { content, details, structuredContent, isError, usage };
	}
	/** `input`: transformations chained; `handled` ends it. */
	async emitInput(text, images, source, streamingBehavior) {
		const params = { text, images, source, streamingBehavior };
		let handled = false;
		await this._eachHook("input", params, undefined, (answer) => {
			if (answer?.action === "handled") {
				handled = true;
				return false;
			}
			if (answer?.action === "transform") {
				params.text = answer.text;
				params.images = answer.images ?? params.images;
			}
		});
		if (handled) return { action: "handled" };
		return params.text !== text || params.images !== images ? { action: "transform", text: params.text, images: params.images } : { action: "continue" };
	}
	/** `before_agent_start`: handlers change the run's prompt options in place and add messages. */
	async emitBeforeAgentStart(trigger, systemPromptOptions) {
		const params = { ...trigger, systemPromptOptions: host().normalizeOptions(systemPromptOptions) };
		const messages = [];
		await this._eachHook("before_agent_start", params, undefined, (answer) => {
			messages.push(...(answer?.messages ?? []));
			if (answer?.systemPromptOptions) params.systemPromptOptions = answer.systemPromptOptions;
		});
		return { messages, systemPromptOptions: params.systemPromptOptions };
	}
	/** `message_end`: a handler may replace the message (same role); the last replacement is returned. */
	async emitMessageEnd(event) {
		const params = { message: event.message };
		let replaced;
		await this._eachHook("message_end_hook", params, undefined, (answer) => {
			if (answer?.message) params.message = replaced = answer.message;
		});
		return replaced;
	}
	/** `context`: handlers see the conversation without the system messages, which stay in front of what they return; then `context_with_system`. */
	async emitContext(messages) {
		let current = structuredClone(messages);
		const ctx = this.createContext();
		for (const ext of this.extensions) {
			for (const handler of [...(ext.handlers.get("context") ?? [])]) {
				try {
					const visible = current.filter((m) => m.role !== "system");
					const snapshot = [...visible];
					const answer = await handler({ type: "context", messages: visible }, ctx);
					const same = (list) => list.length === snapshot.length && list.every((m, i) => m === snapshot[i]);
					const returned = answer?.messages ?? (same(visible) ? undefined : visible);
					// A changed conversation goes after the prompt replayed as one system message, as pi's.
					if (returned && !same(returned)) {
						const head = getCurrentSystemMessage(current);
						current = head ? [head, ...returned] : returned;
					}
				} catch (error) {
					this.emitError({ extensionPath: ext.path, event: "context", error: messageOf(error), stack: error?.stack });
				}
			}
		}
		// Then `context_with_system`: the whole transcript, chained as the host's hook chains it.
		await this._eachHook("context_with_system", { messages: current }, ctx, (answer, params) => {
			if (answer?.messages) current = params.messages = answer.messages;
		});
		return current;
	}
	/** `before_provider_request`: each handler sees the payload so far; what it returns (not undefined) replaces it. */
	async emitBeforeProviderRequest(payload) {
		const ctx = this.createContext();
		let current = payload;
		await this._eachHandler("before_provider_request", async (handler, ext) => {
			const answer = await handler({ type: "before_provider_request", payload: current }, ctx);
			if (answer !== undefined) current = answer;
		});
		return current;
	}
	/** `before_provider_headers`: handlers change the headers in place; their answers are ignored. */
	async emitBeforeProviderHeaders(headers) {
		const ctx = this.createContext();
		await this._eachHandler("before_provider_headers", (handler) => handler({ type: "before_provider_headers", headers }, ctx));
		return headers;
	}
	/** Every extension's handlers of `event` in order, a throwing one reported and skipped. */
	async _eachHandler(event, run) {
		for (const ext of this.extensions) {
			for (const handler of [...(ext.handlers.get(event) ?? [])]) {
				try {
					await run(handler, ext);
				} catch (error) {
					this.emitError({ extensionPath: ext.path, event, error: messageOf(error), stack: error?.stack });
				}
			}
		}
	}
	/**
	 * pi's `emitUserBash(event)`: the first handler that answers decides, with
	 * `{operations}` (an `exec`) or a whole `{result}`; `undefined` from all
	 * means a local run. A throwing handler or an answer of another shape is
	 * reported and rethrown, as in pi.
	 */
	async emitUserBash(event) {
		const ctx = this.createContext();
		for (const ext of this.extensions) {
			for (const handler of [...(ext.handlers.get("user_bash") ?? [])]) {
				try {
					const answer = await handler(event, ctx);
					if (answer === undefined) continue;
					if (!userBashAnswer(answer)) {
						throw new Error("Invalid user_bash handler result: return undefined for local execution or exactly one valid { operations } or { result } object");
					}
					return answer;
				} catch (error) {
					this.emitError({ extensionPath: ext.path, event: "user_bash", error: messageOf(error), stack: error?.stack });
					throw error;
				}
			}
		}
		return undefined;
	}
	/** `resources_discover`: every handler's skill, prompt and theme paths. */
	async emitResourcesDiscover(cwd, reason) {
		const found = { skillPaths: [], promptPaths: [], themePaths: [] };
		await this._eachHook("resources_discover", { cwd, reason }, undefined, (answer) => {
			for (const key of Object.keys(found)) found[key].push(...(answer?.[key] ?? []));
		});
		return found;
	}
}

/** Whether a `user_bash` answer is one pi takes: `{operations}` with an `exec`, or a `{result}` of a bash run (not both). */
function userBashAnswer(answer) {
	if (typeof answer !== "object" || answer === null) return false;
	const [hasOperations, hasResult] = [answer.operations !== undefined, answer.result !== undefined];
	if (hasOperations === hasResult) return false;
	if (hasOperations) return typeof answer.operations === "object" && answer.operations !== null && typeof answer.operations.exec === "function";
	const r = answer.result;
	if (typeof r !== "object" || r === null) return false;
	const optional = (value, type) => value === undefined || typeof value === type;
	return typeof r.output === "string" && "exitCode" in r && optional(r.exitCode, "number") && typeof r.cancelled === "boolean" && typeof r.truncated === "boolean" && optional(r.fullOutputPath, "string");
}

/** pi's `wrapRegisteredTool(registeredTool, runner)`: an agent tool whose `execute` gets the runner's tool context. */
function wrapRegisteredTool(registeredTool, runner) {
	const d = registeredTool.definition;
	return {
		name: d.name,
		label: d.label ?? d.name,
		description: d.description,
		parameters: d.parameters,
		prepareArguments: d.prepareArguments,
		executionMode: d.executionMode,
		execute: (toolCallId, params, signal, onUpdate) => d.execute(toolCallId, params, signal, onUpdate, runner.createToolContext(toolCallId, signal)),
	};
}

/** pi's `wrapRegisteredTools(registeredTools, runner)`. */
function wrapRegisteredTools(registeredTools, runner) {
	return registeredTools.map((tool) => wrapRegisteredTool(tool, runner));
}

module.exports = { ExtensionRunner, wrapRegisteredTool, wrapRegisteredTools };
