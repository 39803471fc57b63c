// pi-rpc extension host: running an extension's `pi.on(…)` handlers, in
// registration order, each awaited, with pi's composition rules: events
// only notify; `tool_call` handlers may block (the first block wins) or
// mutate `event.input`; session hooks may cancel; `input` handlers
// transform (chained) or handle; `before_agent_start` handlers add messages
// and change the system prompt's options (chained); `context` and `tool_result` handlers chain
// their replacements; the last `cache_warming_decision` handler that
// returns an action decides. The answer is the protocol's hook result.

import { runBoundary, turnEndEvent } from "./boundary.mjs";
import { normalizeOptions, renderPrompt } from "./prompt-options.mjs";

/** Notify every handler of `event.type`; failures are reported and the rest still run. */
export async function dispatch(instance, event, ctx, reportError) {
	for (const handler of instance.handlersFor(event.type)) {
		try {
			await handler(event, ctx);
		} catch (error) {
			reportError(event.type, error);
		}
	}
}

/** Whether `result` is a bash result as pi's `BashResult` types it. */
function isBashResult(result) {
	if (typeof result !== "object" || result === null || typeof result.output !== "string") return false;
	if (!("exitCode" in result) || (result.exitCode !== undefined && typeof result.exitCode !== "number")) return false;
	if (typeof result.cancelled !== "boolean" || typeof result.truncated !== "boolean") return false;
	return result.fullOutputPath === undefined || typeof result.fullOutputPath === "string";
}

/** A `user_bash` handler's answer: exactly one of `{result}` and `{operations}` (with an `exec`). */
function userBashAnswer(answer) {
	const valid =
		typeof answer === "object" &&
		answer !== null &&
		(answer.operations === undefined) !== (answer.result === undefined) &&
		(answer.result !== undefined
			? isBashResult(answer.result)
			: typeof answer.operations === "object" && answer.operations !== null && typeof answer.operations.exec === "function");
	if (!valid) {
		// pi's wording (the client sees it as the command's error).
		throw new Error(
			"Invalid user_bash handler result: return undefined for local execution or exactly one valid { operations } or { result } object",
		);
	}
	if (answer.result !== undefined) return { result: answer.result };
	// The operations stay here, under a handle, until pi-rpc releases them.
	return { operations: globalThis[Symbol.for("pi-rpc.extension-host")].holdOperations(answer.operations) };
}

/**
 * pi's `tool_result` event: its members in pi's order, `details` and `usage`
 * present but undefined when the tool gave none, `structuredContent` only
 * when it gave one.
 */
function toolResultEvent(params) {
	const { toolName, toolCallId, parentToolCallId, input, content, details, structuredContent, isError, usage } = params;
	return {
		type: "tool_result",
		toolName,
		toolCallId,
		...(parentToolCallId ? { parentToolCallId } : {}),
		input,
		content,
		details: details ?? undefined,
		...(structuredContent === undefined || structuredContent === null ? {} : { structuredContent }),
		isError,
		usage: usage ?? undefined,
	};
}

/** Run the handlers of a hook and build the protocol's answer. */
export async function runHook(instance, method, params, ctx, reportError) {
	const handlers = instance.handlersFor(method);
	const event = method === "tool_result" ? toolResultEvent(params) : { type: method, ...params };
	switch (method) {
		case "tool_call": {
			// Fails closed: a throwing handler's error answers the hook, and
			// pi-rpc blocks the call with it as the reason (as pi does).
			const before = JSON.stringify(event.input);
			for (const handler of handlers) {
				const result = await handler(event, ctx);
				if (result?.block) return { block: true, reason: result.reason };
			}
			return JSON.stringify(event.input) === before ? null : { input: event.input };
		}
		case "session_before_compact": {
			// pi's preparation holds its file operations as Sets; the compaction's abort signal rides on the event.
			const ops = event.preparation?.fileOps;
			if (ops) for (const key of ["read", "written", "edited"]) ops[key] = new Set(ops[key] ?? []);
			// No earlier summary: pi's preparation has the member, undefined.
			if (event.preparation?.previousSummary === null) event.preparation.previousSummary = undefined;
			event.signal = ctx.signal;
			// As pi composes them: the last handler that answers decides; a cancel ends the round.
			let decided = null;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (!result) continue;
					if (result.cancel) return { cancel: true };
					decided = result.compaction ? { compaction: result.compaction } : {};
				} catch (error) {
					reportError(method, error);
				}
			}
			return decided;
		}
		case "user_bash": {
			// The first handler that answers decides; a throwing handler or an invalid answer fails the command.
			for (const handler of handlers) {
				const result = await handler(event, ctx);
				if (result === undefined) continue;
				return userBashAnswer(result);
			}
			return null;
		}
		case "session_before_tree": {
			event.signal = ctx.signal;
			// As pi composes them: the last handler that answers decides; a cancel ends the round.
			let decided = null;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (!result) continue;
					if (result.cancel) return { cancel: true };
					decided = result;
				} catch (error) {
					reportError(method, error);
				}
			}
			return decided;
		}
		case "session_before_switch":
		case "session_before_fork": {
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (result?.cancel) return { cancel: true };
				} catch (error) {
					reportError(method, error);
				}
			}
			return null;
		}
		case "input": {
			let transformed = false;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (result?.action === "handled") return { action: "handled" };
					if (result?.action === "transform") {
						if (typeof result.text === "string") event.text = result.text;
						if (Array.isArray(result.images)) event.images = result.images;
						transformed = true;
					}
				} catch (error) {
					reportError("input", error);
				}
			}
			return transformed ? { action: "transform", text: event.text, images: event.images } : { action: "continue" };
		}
		case "before_agent_start": {
			// As pi's emitBeforeAgentStart: one options object, changed in
			// place by each handler; the prompt is rendered from it on demand.
			const messages = [];
			const options = normalizeOptions(params.systemPromptOptions);
			const selectedBefore = JSON.stringify(options.selectedTools);
			const before = JSON.stringify(options);
			delete event.systemPrompt;
			Object.defineProperty(event, "systemPrompt", { get: () => renderPrompt(options), enumerable: true });
			event.systemPromptOptions = options;
			const liveBefore = JSON.stringify(instance.pi.getActiveTools());
			const hookCtx = Object.create(ctx);
			hookCtx.getSystemPrompt = () => renderPrompt(options);
			for (const handler of handlers) {
				try {
					const result = await handler(event, hookCtx);
					if (result?.message) messages.push(result.message);
					if (typeof result?.systemPrompt === "string") options.forceSystemPrompt = result.systemPrompt;
				} catch (error) {
					reportError("before_agent_start", error);
				}
			}
			// An edited `selectedTools` is `pi.setActiveTools()`; otherwise the live tools stand, as in pi.
			const live = instance.pi.getActiveTools();
			if (JSON.stringify(options.selectedTools) !== selectedBefore) instance.pi.setActiveTools(options.selectedTools);
			else if (JSON.stringify(live) !== liveBefore) options.selectedTools = live;
			const changed = JSON.stringify(options) !== before;
			return { messages, systemPromptOptions: changed ? options : undefined };
		}
		case "session_start":
			// pi's event has no session id (pi-rpc's other process extensions get it).
			delete event.sessionId;
			await dispatch(instance, event, ctx, reportError);
			return null;
		case "agent_end_hook":
			// pi's `agent_end`, awaited: the handlers run before the run goes on or settles.
			// pi's event has no `willRetry` (pi-rpc's other process extensions get it).
			await dispatch(instance, { type: "agent_end", messages: event.messages }, ctx, reportError);
			return null;
		case "message_end_hook": {
			// pi's emitMessageEnd: each handler may return `{message}` (same role) to replace the finalized message.
			let current = params.message;
			let modified = false;
			for (const handler of instance.handlersFor("message_end")) {
				try {
					const result = await handler({ type: "message_end", message: current }, ctx);
					if (!result?.message) continue;
					if (result.message.role !== current?.role) {
						reportError("message_end", new Error("message_end handlers must return a message with the same role"));
						continue;
					}
					current = result.message;
					modified = true;
				} catch (error) {
					reportError("message_end", error);
				}
			}
			return modified ? { message: current } : null;
		}
		case "context": {
			let changed = false;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (Array.isArray(result?.messages)) {
						event.messages = result.messages;
						changed = true;
					}
				} catch (error) {
					reportError("context", error);
				}
			}
			return changed ? { messages: event.messages } : null;
		}
		case "context_with_system": {
			// Chained like `context`, over the whole transcript; the leading system message should stay.
			let changed = false;
			for (const handler of handlers) {
				try {
					const hadHead = event.messages[0]?.role === "system";
					const result = await handler(event, ctx);
					if (!Array.isArray(result?.messages)) continue;
					event.messages = result.messages;
					changed = true;
					if (hadHead && event.messages[0]?.role !== "system") {
						reportError(
							method,
							"the handler dropped the leading system message: the request has no prompt or initial tools (keep a system message first)",
						);
					}
				} catch (error) {
					reportError(method, error);
				}
			}
			return changed ? { messages: event.messages } : null;
		}
		case "tool_result": {
			let changed = false;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (!result || typeof result !== "object") continue;
					if (result.content !== undefined) {
						event.content = result.content;
						// As in pi: structured content not replaced along with the content may no longer match it.
						if (result.structuredContent === undefined) delete event.structuredContent;
						changed = true;
					}
					for (const key of ["details", "structuredContent", "isError", "usage"]) {
						if (result[key] !== undefined) {
							event[key] = result[key];
							changed = true;
						}
					}
				} catch (error) {
					reportError("tool_result", error);
				}
			}
			if (!changed) return null;
			const { content, details, structuredContent, usage } = event;
			return { content, details, structuredContent: structuredContent ?? null, isError: event.isError === true, usage };
		}
		case "before_provider_headers": {
			// Handlers change `event.headers` in place (null removes one).
			for (const handler of handlers) {
				try {
					await handler(event, ctx);
				} catch (error) {
					reportError(method, error);
				}
			}
			return { headers: event.headers };
		}
		case "before_provider_request": {
			// A handler's value other than undefined replaces the payload for the next ones.
			let changed = false;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (result !== undefined) {
						event.payload = result;
						changed = true;
					}
				} catch (error) {
					reportError(method, error);
				}
			}
			return changed ? { payload: event.payload } : null;
		}
		case "cache_warming_decision": {
			// Every handler sees pi's own decision; the last one that returns an action wins.
			let decided = false;
			let action;
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					if (result?.action !== undefined) {
						action = result.action;
						decided = true;
					}
				} catch (error) {
					reportError(method, error);
				}
			}
			return decided ? { action } : null;
		}
		case "resources_discover": {
			// Every handler's paths, in order; a failing handler is reported and the next still runs.
			const found = { skillPaths: [], promptPaths: [], themePaths: [] };
			for (const handler of handlers) {
				try {
					const result = await handler(event, ctx);
					for (const key of Object.keys(found)) {
						if (Array.isArray(result?.[key])) found[key].push(...result[key].filter((p) => typeof p === "string"));
					}
				} catch (error) {
					reportError(method, error);
				}
			}
			return found;
		}
		case "agent_before_settle":
			return await runBoundary(handlers, { type: method, outcome: params.outcome }, params, ctx, reportError);
		case "turn_end_boundary":
			// pi's `turn_end` handlers run here, not on the `turn_end` notification.
			return await runBoundary(instance.handlersFor("turn_end"), turnEndEvent(ctx.sessionManager, params), params, ctx, reportError);
		default:
			await dispatch(instance, event, ctx, reportError);
			return null;
	}
}

/**
 * pi's `project_trust` in RPC mode, asked before the project's resources
 * load: the trust context has no UI (`hasUI` false; dialogs resolve at once,
 * `notify` is collected). The first handler whose answer is not
 * `undecided` decides; a throwing handler is reported and the next asked.
 * What handlers `notify` comes back as `notes` (pi prints them on stderr).
 */
export async function projectTrust(instance, params) {
	const event = { type: "project_trust", cwd: params.cwd };
	const notes = [];
	const ctx = {
		cwd: params.cwd,
		mode: "rpc",
		hasUI: false,
		ui: {
			select: async () => undefined,
			confirm: async () => false,
			input: async () => undefined,
			notify: (message) => notes.push(String(message)),
		},
	};
	const errors = [];
	for (const handler of instance.handlersFor("project_trust")) {
		try {
			const result = await handler(event, ctx);
			if (result.trusted === "undecided") continue;
			return { trusted: result.trusted === "yes", remember: result.remember === true, errors, notes };
		} catch (error) {
			errors.push(error instanceof Error ? error.message : String(error));
		}
	}
	return { errors, notes };
}
