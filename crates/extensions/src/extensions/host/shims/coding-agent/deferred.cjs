// pi-rpc extension host: pi's `ModelRuntime.streamDeferred`,
// `fetchDeferred` and `cancelDeferred` (fetching or cancelling a response a
// provider deferred, by its handle). As pi's runtime does, each checks that
// the model is a chat model, that its provider is known and has request
// auth, then hands the handle to the provider's own `fetchDeferred` /
// `cancelDeferred`: an extension's native provider that has them (its
// request options carrying the runtime's auth); no provider pi-rpc runs
// defers responses, so the others fail with pi's "does not support deferred
// responses". A stream's failure ends it with an error message as pi's lazy
// streams do; `cancelDeferred` throws it.

"use strict";

const { AssistantMessageEventStream } = require("../ai/stream.cjs");
const { ModelsError, getModelType } = require("../ai/models.cjs");

/** pi's request for a deferred response: the provider's call and its options with the runtime's auth. */
async function prepare(runtime, model, options, kind) {
	if (getModelType(model) !== "chat") throw new ModelsError("provider", `Model ${model.provider}/${model.id} is not a chat model`);
	if (!runtime.getProvider(model.provider)) throw new ModelsError("provider", `Unknown provider: ${model.provider}`);
	const auth = options?.apiKey !== undefined ? { auth: { apiKey: options.apiKey } } : await runtime.getAuth(model);
	if (!auth) throw new ModelsError("auth", `Provider is not configured: ${model.provider}`);
	const native = runtime.getRegisteredNativeProvider(model.provider);
	const call = typeof native?.[kind] === "function" ? native[kind].bind(native) : undefined;
	if (!call) throw new ModelsError("provider", `Provider ${model.provider} does not support deferred responses`);
	const headers = auth.auth?.headers || options?.headers ? { ...(auth.auth?.headers ?? {}), ...(options?.headers ?? {}) } : undefined;
	const requestOptions = { ...(options ?? {}), apiKey: options?.apiKey ?? auth.auth?.apiKey, ...(headers ? { headers } : {}) };
	return { call, requestModel: auth.auth?.baseUrl ? { ...model, baseUrl: auth.auth.baseUrl } : model, requestOptions };
}

/** pi-ai's error message of a stream whose setup failed. */
function setupError(model, error, timestamp, stopReason) {
	const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
	const errorMessage = error instanceof Error ? error.message : String(error);
	return { role: "assistant", content: [], api: model.api, provider: model.provider, model: model.id, usage, stopReason, errorMessage, timestamp };
}

/** `runtime.streamDeferred(model, handle, options)`: the provider's stream of the deferred response. */
function streamDeferred(runtime, model, handle, options) {
	const startedAt = Date.now();
	const outer = new AssistantMessageEventStream();
	(async () => {
		const { call, requestModel, requestOptions } = await prepare(runtime, model, options, "fetchDeferred");
		const inner = await call(requestModel, handle, requestOptions);
		let result;
		for await (const event of inner) {
			outer.push(event);
			if (event.type === "done") result = event.message;
			else if (event.type === "error") result = event.error;
		}
		if (typeof inner.result === "function") result = await inner.result();
		outer.end(result);
	})().catch((error) => {
		const message = setupError(model, error, startedAt, options?.signal?.aborted ? "aborted" : "error");
		outer.push({ type: "error", reason: message.stopReason, error: message });
		outer.end(message);
	});
	return outer;
}

/** `runtime.cancelDeferred(model, handle, options)`: the provider cancels it; failures throw. */
async function cancelDeferred(runtime, model, handle, options) {
	const { call, requestModel, requestOptions } = await prepare(runtime, model, options, "cancelDeferred");
	await call(requestModel, handle, requestOptions);
}

module.exports = { streamDeferred, cancelDeferred };
