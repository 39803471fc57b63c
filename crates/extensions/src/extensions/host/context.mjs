// pi-rpc extension host: `ctx`, pi's ExtensionContext (and the command
// context), over pi-rpc's extension protocol. pi's getters are synchronous,
// so they are synchronous calls to pi-rpc (`getState`, `getSession`),
// answered from the agent's state of that moment and cached until the
// current task ends.

import { createRequire } from "node:module";
import { createDetachedUi, createUi } from "./ui.mjs";
import { sessionPromptOptions } from "./prompt-options.mjs";
import { createModelRegistry } from "./model-registry.mjs";

const require = createRequire(import.meta.url);
const projection = require("./shims/coding-agent/projection.cjs");

/** pi's words when a command context is used after its session was replaced. */
const STALE_CONTEXT =
	"This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx after ctx.newSession(), ctx.fork(), ctx.switchSession(), or ctx.reload(). For newSession, fork, and switchSession, move post-replacement work into withSession and use the ctx passed to withSession. For reload, do not use the old ctx after await ctx.reload().";

/** Values fetched once per macrotask (state can change between tasks). */
class TickCache {
	constructor() {
		this.values = new Map();
	}
	get(key, load) {
		if (!this.values.has(key)) {
			if (this.values.size === 0) setImmediate(() => this.values.clear());
			this.values.set(key, load());
		}
		return this.values.get(key);
	}
	clear() {
		this.values.clear();
	}
}

/** pi's SessionManager (read side) over a `getSession` snapshot. */
function createSessionManager(channel, cache) {
	const session = () => cache.get("session", () => channel.call("getSession"));
	const byId = () => cache.get("byId", () => new Map(session().entries.map((e) => [e.id, e])));
	const branchFrom = (id) => {
		const index = byId();
		const out = [];
		let entry = id ? index.get(id) : undefined;
		while (entry) {
			out.push(entry);
			entry = entry.parentId ? index.get(entry.parentId) : undefined;
		}
		return out.reverse();
	};
	const labels = () =>
		cache.get("labels", () => {
			const map = new Map();
			for (const e of session().entries) {
				if (e.type !== "label" || !e.targetId) continue;
				if (e.label === undefined || e.label === null || e.label === "") map.delete(e.targetId);
				else map.set(e.targetId, e.label);
			}
			return map;
		});
	/** pi's SessionManager writes: the entry goes to pi-rpc's session at once; its id comes back. */
	const append = (params) => {
		const answer = channel.call("sessionAppend", params);
		cache.clear();
		return answer?.id;
	};
	return {
		appendMessage: (message) => append({ kind: "message", message }),
		appendCustomEntry: (customType, data) => append({ kind: "custom", customType, data }),
		appendCustomMessageEntry: (customType, content, display, details) =>
			append({ kind: "custom_message", customType, content, display, details }),
		appendLabelChange: (targetId, label) => append({ kind: "label", targetId, label }),
		appendSessionInfo: (name) => append({ kind: "session_info", name }),
		// The model and thinking level stay as they are (pi writes the entry only).
		appendModelChange: (provider, modelId) => append({ kind: "model_change", provider, modelId }),
		appendThinkingLevelChange: (thinkingLevel) => append({ kind: "thinking_level_change", thinkingLevel }),
		appendCompaction: (summary, firstKeptEntryId, tokensBefore, details, fromHook, usage) =>
			append({ kind: "compaction", summary, firstKeptEntryId, tokensBefore, details, fromHook, usage }),
		branch: (branchFromId) => {
			append({ kind: "branch", targetId: branchFromId });
		},
		resetLeaf: () => {
			append({ kind: "reset_leaf" });
		},
		branchWithSummary: (branchFromId, summary, details, fromHook, usage) =>
			append({ kind: "branch_summary", targetId: branchFromId ?? null, summary, details, fromHook, usage }),
		getCwd: () => session().cwd,
		getSessionDir: () => session().sessionDir ?? undefined,
		getSessionId: () => session().sessionId,
		getSessionFile: () => session().sessionFile ?? undefined,
		getSessionName: () => session().sessionName ?? undefined,
		getHeader: () => session().header,
		getEntries: () => [...session().entries],
		getEntry: (id) => byId().get(id),
		getLeafId: () => session().leafId ?? null,
		getLeafEntry: () => (session().leafId ? byId().get(session().leafId) : undefined),
		getBranch: (fromId) => branchFrom(fromId ?? session().leafId),
		getChildren: (parentId) => session().entries.filter((e) => e.parentId === parentId),
		getLabel: (id) => labels().get(id),
		getTree: () => {
			const nodes = new Map(session().entries.map((e) => [e.id, { entry: e, children: [], label: labels().get(e.id) }]));
			const roots = [];
			for (const node of nodes.values()) {
				const parent = node.entry.parentId ? nodes.get(node.entry.parentId) : undefined;
				(parent ? parent.children : roots).push(node);
			}
			return roots;
		},
		buildContextEntries: () => projection.buildContextEntries(session().entries, session().leafId ?? null, byId()),
		buildSessionProjection: () => projection.buildSessionProjection(session().entries, session().leafId ?? null, byId()),
	};
}

/**
 * The context handed to handlers. `kind` is "event", "tool" or "command";
 * `signal` the AbortSignal of the call, if any. `host.afterEvents()`
 * resolves once the events received so far are handled; `host.api()` is the
 * current extension instance's `pi`.
 */
export function createContextFactory(channel, hello, host) {
	const cache = new TickCache();
	/** Resolved at the next `agent_settled` (`ctx.waitForIdle()`). */
	const idleWaiters = [];
	const ui = createUi(channel);
	const detachedUi = createDetachedUi();
	const sessionManager = createSessionManager(channel, cache);
	const state = () => cache.get("state", () => channel.call("getState"));
	const modelRegistry = createModelRegistry(channel, host);

	// Read when used, as pi's getters: while a command's `newSession({setup})`
	// runs, the new runtime has no UI yet (pi's print-mode defaults).
	const base = (signal) => ({
		get ui() {
			return host.uiAttached() ? ui : detachedUi;
		},
		get mode() {
			return host.uiAttached() ? "rpc" : "print";
		},
		get hasUI() {
			return host.uiAttached();
		},
		cwd: hello.cwd,
		sessionManager,
		modelRegistry,
		get model() {
			return state().model ?? undefined;
		},
		get thinkingLevel() {
			return state().thinkingLevel;
		},
		get scopedModels() {
			return state().scopedModels ?? [];
		},
		signal,
		isIdle: () => state().isIdle,
		hasPendingMessages: () => state().pendingMessageCount > 0,
		abort: () => channel.tell("abort"),
		shutdown: () => channel.tell("shutdown"),
		getContextUsage: () => state().contextUsage ?? undefined,
		getSystemPrompt: () => state().systemPrompt,
		isProjectTrusted: () => hello.projectTrusted === true,
		compact: (options = {}) => {
			// Not awaited, as in pi: the outcome goes to the callbacks.
			globalThis[Symbol.for("pi-rpc.extension-host")].compact(options?.customInstructions).then(
				(result) => options?.onComplete?.(result),
				(error) => options?.onError?.(error instanceof Error ? error : new Error(String(error))),
			);
		},
	});

	/**
	 * The command context: `base` plus the session actions. After a session
	 * replacement it is stale, as in pi: any use of it throws.
	 */
	const commandContext = (signal) => {
		const ctx = base(signal);
		const guard = { stale: false };
		/**
		 * A session op by pi-rpc; on success the old context goes stale and
		 * `withSession` gets a new one. `setup` (newSession's) runs as pi runs
		 * it: after the old instance's `session_shutdown`, before the new
		 * instance's `session_start`, writing to the new session.
		 */
		const replace = async (params, options) => {
			const setup = params.action === "new" && typeof options?.setup === "function" ? options.setup : undefined;
			const gate = setup ? host.gateSessionStart() : undefined;
			let result;
			try {
				result = await channel.request("sessionOp", setup ? { ...params, setup: true } : params);
			} catch (error) {
				gate?.cancel();
				throw error;
			}
			if (result?.cancelled) {
				gate?.cancel();
				return { cancelled: true };
			}
			guard.stale = true;
			cache.clear();
			if (gate) {
				await gate.reached;
				try {
					await setup(sessionManager);
				} finally {
					cache.clear();
					// pi-rpc held the other extensions' `session_start` until now.
					await channel.request("sessionOp", { action: "setupDone" }).catch(() => {});
					gate.release();
				}
			}
			// The replacement's `session_start` is handled (by the new extension instance) first.
			await host.afterEvents();
			if (typeof options?.withSession === "function") await options.withSession(replacedContext(signal));
			return { cancelled: false };
		};
		Object.assign(ctx, {
			waitForIdle: () => (state().isStreaming ? new Promise((resolve) => idleWaiters.push(resolve)) : Promise.resolve()),
			newSession: (options) => replace({ action: "new", parentSession: options?.parentSession }, options),
			fork: (entryId, options) => replace({ action: "fork", entryId, position: options?.position ?? "before" }, options),
			switchSession: (sessionPath, options) => replace({ action: "switch", sessionPath }, options),
			navigateTree: async (targetId, options) => {
				const { summarize, customInstructions, replaceInstructions, label } = options ?? {};
				const params = { action: "navigate", targetId, summarize, customInstructions, replaceInstructions, label };
				const result = await channel.request("sessionOp", params);
				cache.clear();
				// pi awaits the `session_tree` handlers before it answers.
				await host.afterEvents();
				return { cancelled: result?.cancelled === true };
			},
			reload: async () => {
				await channel.request("sessionOp", { action: "reload" });
				guard.stale = true;
				cache.clear();
				// The new instance has had its `session_start` when this resolves, as in pi.
				await host.afterEvents();
			},
			getSystemPromptOptions: () => sessionPromptOptions(channel),
		});
		return new Proxy(ctx, {
			get(target, key, receiver) {
				if (guard.stale) throw new Error(STALE_CONTEXT);
				return Reflect.get(target, key, receiver);
			},
		});
	};
	/** The context `withSession` gets: a command context of the new session, with the message calls. */
	const replacedContext = (signal) => {
		const ctx = commandContext(signal);
		const pi = host.api();
		return Object.assign(Object.create(ctx), {
			sendMessage: async (message, options) => pi.sendMessage(message, options),
			sendUserMessage: async (content, options) => pi.sendUserMessage(content, options),
		});
	};

	return {
		cache,
		state,
		settled: () => {
			cache.clear();
			for (const resolve of idleWaiters.splice(0)) resolve();
		},
		sessionManager,
		modelRegistry,
		event: (signal) => base(signal),
		/** pi's ExtensionToolContext of the call `toolCallId`: `tools` and `executeTool()` reach pi-rpc. */
		tool: (signal, toolCallId) => {
			const ctx = base(signal);
			const services = () => globalThis[Symbol.for("pi-rpc.extension-host")];
			Object.defineProperty(ctx, "tools", {
				enumerable: true,
				get: () =>
					cache
						.get(`tools:${toolCallId}`, () => channel.call("callableTools", { toolCallId }).tools)
						.map((tool) => ({
							...tool,
							execute: (_id, params, toolSignal, onUpdate) =>
								ctx.executeTool(tool.name, params, { signal: toolSignal, onUpdate }).then((o) => o.result),
						})),
			});
			ctx.executeTool = (name, args, options = {}) =>
				services().executeTool({ toolCallId, name, args }, options.signal ?? signal, options.onUpdate);
			return ctx;
		},
		command: commandContext,
	};
}
