// pi-rpc extension host: `ctx.executeTool()` and `ctx.tools` of an SDK
// session's tools (agent-session.cjs), as pi 1.6.0's session offers them.
// A tool (codemode's script, an extension tool) calls another of the
// session's tools: the call gets the id `<caller>/<n>`, runs through the
// agent's tool pipeline (pi-agent-core's `runToolCall`: argument
// preparation, validation, the `tool_call` / `tool_result` handlers with
// `parentToolCallId`), is announced with `tool_execution_*` events that
// name the caller, and is recorded with its usage on the calling tool's
// result message (`nestedCalls`). Callable are the active `direct` tools
// and every `codemode` or `deferred` tool. In a sequential session, and for
// a sequential tool, such calls run one at a time.

"use strict";

const { services } = require("../host-services.cjs");
const { withToolResultImages } = require("./session-images.cjs");

/** Exposures callable whether active or not (pi's). */
const ALWAYS_CALLABLE = new Set(["codemode", "deferred"]);
/** Limits of a result's `nestedCalls` record (pi's). */
const MAX_CALLS = 256;
const MAX_ARGS_BYTES_PER_CALL = 8 * 1024;
const MAX_ARGS_BYTES_TOTAL = 32 * 1024;
const MAX_ERROR_CHARS = 500;

const textOf = (result) =>
	(result?.content ?? [])
		.filter((block) => block?.type === "text")
		.map((block) => block.text)
		.join("\n");

/** Sum of two pi-ai usages. */
function addUsage(total, usage) {
	if (!total) return structuredClone(usage);
	const sum = { ...total, cost: { ...(total.cost ?? {}) } };
	for (const key of ["input", "output", "cacheRead", "cacheWrite", "totalTokens"]) sum[key] = (total[key] ?? 0) + (usage[key] ?? 0);
	for (const key of ["input", "output", "cacheRead", "cacheWrite", "total"]) sum.cost[key] = (total.cost?.[key] ?? 0) + (usage.cost?.[key] ?? 0);
	return sum;
}

/** The calls one model-issued tool call made (its own and its nested tools'), for its result message. */
class CallRecord {
	constructor() {
		this.calls = [];
		this.complete = true;
		this.argumentBytes = 0;
		this.usage = undefined;
	}
	start(toolCall) {
		if (this.calls.length >= MAX_CALLS) {
			this.complete = false;
			return undefined;
		}
		const entry = { id: toolCall.id, name: toolCall.name, status: "unfinished" };
		const json = JSON.stringify(toolCall.arguments ?? {});
		const bytes = Buffer.byteLength(json, "utf8");
		if (bytes > MAX_ARGS_BYTES_PER_CALL || this.argumentBytes + bytes > MAX_ARGS_BYTES_TOTAL) {
			entry.argumentsBytes = bytes;
			this.complete = false;
		} else {
			entry.arguments = JSON.parse(json);
			this.argumentBytes += bytes;
		}
		this.calls.push(entry);
		return { entry, startedAt: performance.now() };
	}
	finish(started, isError, errorText) {
		if (!started) return;
		const { entry } = started;
		entry.status = isError ? "error" : "ok";
		entry.durationMs = Math.round(performance.now() - started.startedAt);
		if (isError && errorText) entry.error = errorText.slice(0, MAX_ERROR_CHARS);
	}
	snapshot() {
		if (this.calls.length === 0 && this.complete) return undefined;
		const calls = this.calls.map((call) => ({ ...call }));
		return { calls, complete: this.complete && calls.every((call) => call.status !== "unfinished") };
	}
}

class SessionNestedCalls {
	constructor(session, runner) {
		this.session = session;
		this.runner = runner;
		/** Records by the id of the calling tool call (a nested call shares its caller's). */
		this.scopes = new Map();
		/** The end of the last call that runs alone (a sequential session or tool). */
		this.queueTail = Promise.resolve();
	}

	/** The definitions a tool may call now. */
	callableDefinitions() {
		const active = new Set(this.session.getActiveToolNames());
		return [...this.session._tools.values()].filter((d) => {
			const exposure = d.exposure ?? "direct";
			return ALWAYS_CALLABLE.has(exposure) || (exposure === "direct" && active.has(d.name));
		});
	}

	/** pi's `ctx.tools`: the callable tools as agent tools (with their exposure and output schema). */
	callableTools() {
		return this.callableDefinitions().map((d) => ({
			...this.session._agentTool(d),
			exposure: d.exposure ?? "direct",
			...(d.outputSchema ? { outputSchema: d.outputSchema } : {}),
			promptGuidelines: d.promptGuidelines ?? [],
		}));
	}

	async emit(event) {
		await this.runner.emit(event);
		this.session._emit(event);
	}

	/** Run `name` for the call `callerId`: pi's outcome `{toolCall, result, isError, durationMs?}`, never a rejection. */
	async execute(callerId, name, args, options = {}) {
		let scope = this.scopes.get(callerId);
		if (!scope) {
			scope = { record: new CallRecord(), next: 1, holdsQueue: false };
			this.scopes.set(callerId, scope);
		}
		const toolCall = { type: "toolCall", id: `${callerId}/${scope.next++}`, name, arguments: args ?? {} };
		const started = scope.record.start(toolCall);
		const parent = { parentToolCallId: callerId };
		await this.emit({ type: "tool_execution_start", toolCallId: toolCall.id, toolName: name, args: toolCall.arguments, ...parent });
		// A call that must run alone waits for the one before (unless its caller already runs alone).
		const alone =
			!scope.holdsQueue &&
			(this.session.agent.toolExecution === "sequential" || this.session._tools.get(name)?.executionMode === "sequential");
		let release;
		if (alone) {
			const previous = this.queueTail;
			this.queueTail = new Promise((resolve) => (release = resolve));
			await previous;
		}
		this.scopes.set(toolCall.id, { record: scope.record, next: 1, holdsQueue: scope.holdsQueue || alone });
		let outcome;
		try {
			outcome = await this.runToolCall(toolCall, callerId, options.signal, async (partialResult) => {
				options.onUpdate?.(partialResult);
				await this.emit({ type: "tool_execution_update", toolCallId: toolCall.id, toolName: name, args: toolCall.arguments, partialResult, ...parent });
			});
		} finally {
			this.scopes.delete(toolCall.id);
			release?.();
		}
		scope.record.finish(started, outcome.isError, textOf(outcome.result));
		if (outcome.result?.usage) scope.record.usage = addUsage(scope.record.usage, outcome.result.usage);
		const { result, isError, durationMs } = outcome;
		await this.emit({ type: "tool_execution_end", toolCallId: toolCall.id, toolName: name, result, isError, ...(durationMs === undefined ? {} : { durationMs }), ...parent });
		return outcome;
	}

	runToolCall(toolCall, parentId, signal, onUpdate) {
		const agent = this.session.agent;
		const assistantMessage = [...agent.state.messages].reverse().find((m) => m.role === "assistant");
		if (!assistantMessage) {
			const result = { content: [{ type: "text", text: "No assistant message issued this call" }], details: {} };
			return Promise.resolve({ toolCall, result, isError: true });
		}
		const runner = this.runner;
		const parent = { parentToolCallId: parentId };
		return services().agentCore().runToolCall(toolCall, {
			tools: this.callableTools(),
			assistantMessage,
			context: { messages: agent.state.messages, tools: agent.state.tools },
			beforeToolCall: async ({ toolCall: call, args }) =>
				runner.hasHandlers("tool_call") ? runner.emitToolCall({ type: "tool_call", toolName: call.name, toolCallId: call.id, ...parent, input: args }) : undefined,
			afterToolCall: withToolResultImages(this.session, async ({ toolCall: call, args, result, isError }) => {
				if (!runner.hasHandlers("tool_result")) return undefined;
				const event = { type: "tool_result", toolName: call.name, toolCallId: call.id, ...parent, input: args, content: result.content, details: result.details, isError, usage: result.usage };
				if (result.structuredContent !== undefined) event.structuredContent = result.structuredContent;
				return runner.emitToolResult(event);
			}),
			signal,
			onUpdate,
		});
	}

	/** An agent event: a tool result message gets the calls its tool made; the run's end forgets them. */
	agentEvent(event) {
		if (event.type === "message_start" && event.message?.role === "toolResult") {
			const scope = this.scopes.get(event.message.toolCallId);
			this.scopes.delete(event.message.toolCallId);
			const calls = scope?.record.snapshot();
			if (calls) event.message.nestedCalls = calls;
			if (scope?.record.usage) event.message.usage = event.message.usage ? addUsage(event.message.usage, scope.record.usage) : scope.record.usage;
		} else if (event.type === "agent_end") this.scopes.clear();
	}
}

module.exports = { SessionNestedCalls };
