// pi-rpc extension host: what the shims of pi's packages ask of pi-rpc
// beyond the ExtensionAPI, reached through `shims/host-services.cjs`:
//
// * built-in tools run by pi-rpc for pi's tool factories (`runBuiltinTool`),
//   with the extension's own operations (pi's `*Operations`) performed here
//   when pi-rpc asks for them (`tool_op`), `exec` output streamed back;
// * the built-ins' descriptions and schemas (`builtinTools`);
// * model calls through pi-rpc's providers (`modelStream`, for pi-ai's
//   `stream`/`complete` and the `…Api()` stream functions), their events
//   streamed back (`streamData`) into an AssistantMessageEventStream, with
//   pi-ai's partial message (`shims/ai/partial.cjs`).
//
// The requests pi-rpc makes of these services are answered at once, not
// queued behind the extension's event handlers.

import { Buffer } from "node:buffer";
import { createRequire } from "node:module";

const { PartialMessage } = createRequire(import.meta.url)("./shims/ai/partial.cjs");

/** Text of an error, as pi shows a thrown error's message. */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));

function toBase64(data) {
	if (typeof data === "string") return Buffer.from(data, "utf8").toString("base64");
	return Buffer.from(data.buffer ?? data, data.byteOffset ?? 0, data.byteLength ?? data.length).toString("base64");
}

/** An assistant message for a call that failed before pi-rpc answered. */
function errorMessage(model, text, aborted) {
	return {
		role: "assistant",
		content: [],
		api: model?.api,
		provider: model?.provider,
		model: model?.id,
		usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: aborted ? "aborted" : "error",
		errorMessage: text,
		timestamp: Date.now(),
	};
}

export function createServices(channel, hello) {
	const operations = new Map();
	const updates = new Map();
	/** Compactions asked for with `ctx.compact()`, by ticket. */
	const compactions = new Map();
	/** Receivers of what pi-rpc streams to us, by stream name. */
	const streams = new Map();
	/** A model call's request hooks (pi-ai's `onPayload`, `onResponse`, `transformHeaders`), by stream name. */
	const requestHooks = new Map();
	let nextHandle = 0;
	let nextCall = 0;
	let specs;

	/**
	 * A request whose partial results come back as `builtinToolUpdate`s for
	 * its `callId` (to `onUpdate`), withdrawn when `signal` aborts.
	 */
	async function requestWithUpdates(method, params, signal, onUpdate, prefix) {
		const callId = `${prefix}${++nextCall}`;
		if (typeof onUpdate === "function") updates.set(callId, onUpdate);
		const result = channel.request(method, { ...params, callId });
		const id = channel.lastRequestId();
		const onAbort = () => channel.send({ type: "cancel", id });
		if (signal?.aborted) onAbort();
		else signal?.addEventListener("abort", onAbort, { once: true });
		try {
			return await result;
		} finally {
			signal?.removeEventListener("abort", onAbort);
			updates.delete(callId);
		}
	}

	/** Perform one of an extension's operations for pi-rpc. */
	async function performOperation({ handle, op, args = {} }, signal) {
		const ops = operations.get(handle);
		if (!ops) throw new Error("the tool's operations are gone");
		const fn = ops[op];
		if (typeof fn !== "function") throw new Error(`the tool's operations have no ${op}()`);
		const call = (...a) => fn.apply(ops, a);
		switch (op) {
			case "readFile":
				return { base64: toBase64(await call(args.path)) };
			case "access":
			case "mkdir":
				await call(args.path);
				return null;
			case "writeFile":
				await call(args.path, args.content);
				return null;
			case "detectImageMimeType":
				return (await call(args.path)) ?? null;
			case "isDirectory":
			case "exists":
				return (await call(args.path)) === true;
			case "stat": {
				const stat = await call(args.path);
				return { isDirectory: typeof stat?.isDirectory === "function" ? stat.isDirectory() === true : false };
			}
			case "readdir":
				return [...(await call(args.path))].map(String);
			case "glob":
				return [...(await call(args.pattern, args.cwd, { ignore: args.ignore ?? [], limit: args.limit }))].map(String);
			case "exec": {
				const stream = args.stream;
				const result = await call(args.command, args.cwd, {
					onData: (data) => channel.tell("streamData", { stream, data: toBase64(data) }),
					signal,
					timeout: args.timeout ?? undefined,
					env: { ...process.env, ...(args.env ?? {}) },
				});
				return { exitCode: result?.exitCode ?? null };
			}
			// An SDK session's codemode (shims/coding-agent/session-codemode.cjs): JSON in and out.
			case "callTool":
			case "branchCustomData":
			case "appendCustom":
			case "modelCatalog":
			case "modelCall":
				return (await call(args, signal)) ?? null;
			default:
				throw new Error(`unknown operation ${op}`);
		}
	}

	return {
		channel,
		hello,

		/**
		 * pi-rpc asks a model call's request hook (`model_stream_hook`:
		 * `{stream, hook, payload | status, headers | headers}`): `payload`
		 * answers `{payload}`, `headers` the headers after the hook.
		 */
		async modelStreamHook({ stream, hook, payload, status, headers, data }) {
			const { hooks = {}, model } = requestHooks.get(String(stream)) ?? {};
			if (hook === "stream_event") {
				await hooks.onProviderStreamEvent?.(data, model);
				return null;
			}
			if (hook === "payload") return { payload: hooks.onPayload ? ((await hooks.onPayload(payload)) ?? payload) : payload };
			if (hook === "response") {
				await hooks.onResponse?.({ status, headers: headers ?? {} });
				return null;
			}
			if (hook === "headers") {
				const own = { ...(headers ?? {}) };
				return { headers: hooks.transformHeaders ? ((await hooks.transformHeaders(own)) ?? own) : own };
			}
			throw new Error(`unknown model stream hook: ${hook}`);
		},

		/** Requests from pi-rpc these services answer; `true` when `message` was one. */
		handle(message, controllers) {
			if (message.type !== "request") return false;
			if (message.method === "streamData") {
				const p = message.params ?? {};
				streams.get(String(p.stream))?.(p.data);
				return true;
			}
			if (message.method === "compactDone") {
				const p = message.params ?? {};
				const waiter = compactions.get(String(p.ticket));
				compactions.delete(String(p.ticket));
				if (p.error !== undefined) waiter?.reject(new Error(p.error));
				else waiter?.resolve(p.result);
				return true;
			}
			if (message.method === "releaseOperations") {
				operations.delete(String(message.params?.handle));
				return true;
			}
			if (message.method === "builtinToolUpdate") {
				const p = message.params ?? {};
				updates.get(String(p.callId))?.({ content: p.content ?? [], details: p.details });
				return true;
			}
			if (message.method !== "tool_op") return false;
			const controller = new AbortController();
			controllers.set(String(message.id), controller);
			performOperation(message.params ?? {}, controller.signal)
				.then(
					(result) => channel.send({ type: "response", id: message.id, result: result ?? null }),
					(error) => channel.send({ type: "response", id: message.id, error: messageOf(error) || "failed" }),
				)
				.finally(() => controllers.delete(String(message.id)));
			return true;
		},

		/** Compact (pi's `ctx.compact()`): a promise of the compaction's result. */
		compact(customInstructions) {
			const ticket = `c${++nextCall}`;
			const outcome = new Promise((resolve, reject) => compactions.set(ticket, { resolve, reject }));
			channel.request("compact", { customInstructions, ticket }).catch((error) => {
				compactions.get(ticket)?.reject(error);
				compactions.delete(ticket);
			});
			return outcome;
		},

		/** Keep an extension's operations object for pi-rpc to use (`tool_op`); its handle. */
		holdOperations(ops) {
			const handle = `ops${++nextHandle}`;
			operations.set(handle, ops);
			return handle;
		},

		/** The built-in tools as pi-rpc describes them (name, description, parameters, prompt lines). */
		builtinTools() {
			specs ??= new Map(channel.call("builtinTools").tools.map((t) => [t.name, t]));
			return specs;
		},

		/**
		 * One model call by pi-rpc: `params` are `{model, systemPrompt, tools,
		 * messages, options}`; pi-ai's events are pushed into `stream` (an
		 * AssistantMessageEventStream) as they come.
		 */
		modelStream(params, signal, stream, hooks) {
			const name = `m${++nextCall}`;
			const partial = new PartialMessage(stream);
			streams.set(name, (data) => partial.receive(data));
			if (hooks) requestHooks.set(name, { hooks, model: params.model });
			const answer = channel.request("modelStream", { ...params, stream: name, ...(hooks ? { observe: Object.keys(hooks) } : {}) });
			const id = channel.lastRequestId();
			const onAbort = () => channel.send({ type: "cancel", id });
			if (signal?.aborted) onAbort();
			else signal?.addEventListener("abort", onAbort, { once: true });
			answer
				.then(
					(result) => partial.finish(result?.message),
					(error) => partial.finish(errorMessage(params.model, messageOf(error), signal?.aborted)),
				)
				.finally(() => {
					streams.delete(name);
					requestHooks.delete(name);
					signal?.removeEventListener("abort", onAbort);
				});
			return stream;
		},

		/**
		 * A nested call of the running tool call `toolCallId` (pi's
		 * `ctx.executeTool()`): pi's outcome `{toolCall, result, isError,
		 * durationMs?}`; tool failures are outcomes, never rejections.
		 */
		executeTool({ toolCallId, name, args }, signal, onUpdate) {
			return requestWithUpdates("executeTool", { toolCallId, name, args: args ?? {} }, signal, onUpdate, "n");
		},

		/**
		 * An SDK session's call of one of pi-rpc's MCP tools (`mcpCallTool`
		 * `{name, args, toolCallId}`): its progress to `onUpdate`, cancelled
		 * (MCP's cancellation sent to the server) when `signal` aborts.
		 */
		mcpCallTool(params, signal, onUpdate) {
			return requestWithUpdates("mcpCallTool", params, signal, onUpdate, "p");
		},

		/** An SDK session's listing of pi-rpc's MCP tools (`mcpTools` `{wait?, after?}`), withdrawn when `signal` aborts. */
		mcpTools(params, signal) {
			return requestWithUpdates("mcpTools", params, signal, undefined, "w");
		},

		/**
		 * Run built-in tool `toolName` in pi-rpc: `operations` (an object of
		 * pi's operation functions) performs its operations when given;
		 * `codemode` also takes `catalog` (an SDK session's tools).
		 */
		async runBuiltinTool({ toolName, toolCallId, input, cwd, env, operations: ops, supplied, catalog, models, resizeImages, resizeOptions }, signal, onUpdate) {
			if (signal?.aborted) throw new Error("Operation aborted");
			const callId = `b${++nextCall}`;
			let handle;
			if (ops) {
				handle = `ops${++nextHandle}`;
				operations.set(handle, ops);
			}
			if (onUpdate) updates.set(callId, onUpdate);
			const params = { toolName, toolCallId, input, cwd, env, callId };
			// codemode's: the session's callable tools, and whether scripts get `models`.
			if (catalog) Object.assign(params, { catalog, models });
			if (handle) params.operations = { handle, supplied };
			// `read`'s `autoResizeImages: false`; else the model's `inputLimits.images.resize`.
			if (resizeImages === false) params.resizeImages = false;
			else if (resizeOptions) params.resizeOptions = resizeOptions;
			const result = channel.request("runBuiltinTool", params);
			const id = channel.lastRequestId();
			const onAbort = () => channel.send({ type: "cancel", id });
			signal?.addEventListener("abort", onAbort, { once: true });
			try {
				return await result;
			} finally {
				signal?.removeEventListener("abort", onAbort);
				updates.delete(callId);
				if (handle) operations.delete(handle);
			}
		},
	};
}
