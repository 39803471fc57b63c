// pi-rpc extension host: `ctx.modelRegistry`, pi's ModelRegistry facade.
// Lists come from pi-rpc's catalog (`getModels`); model calls go through
// pi-rpc's providers with the request-time auth of the model's provider
// (`modelStream` with `registry: true`), as the agent's own requests do;
// provider facts and auth are answered by pi-rpc (`models` ops).

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const calls = require("./shims/ai/calls.cjs");

/** The value of a `models` answer (`{}`: undefined). */
function valueOf(answer) {
	return answer?.value ?? undefined;
}

export function createModelRegistry(channel) {
	const models = () => channel.call("getModels").models;
	const op = (name, ...args) => valueOf(channel.call("models", { op: name, args }));
	const request = async (name, ...args) => valueOf(await channel.request("models", { op: name, args }));
	// `streamSimple` routes a virtual model's request (pi's reason `direct`); `stream` does not.
	const stream = (model, context, options) => calls.viaRegistry(model, context, options, false);
	const streamSimple = (model, context, options) => calls.viaRegistry(model, context, options, true);

	/** pi-ai's `Provider` of `id`: its facts, its chat models, and calls through pi-rpc. */
	const provider = (id) => {
		const facts = op("getProvider", id);
		if (!facts) return undefined;
		const resolve = async () => (await channel.request("models", { op: "getProviderAuth", args: [id] }))?.value;
		const auth = { apiKey: { name: "API key", resolve } };
		if (facts.oauth) auth.oauth = { name: facts.name };
		return {
			id: facts.id,
			name: facts.name,
			...(facts.baseUrl ? { baseUrl: facts.baseUrl } : {}),
			auth,
			getModels: () => models().filter((m) => m.provider === id),
			stream,
			streamSimple,
		};
	};

	return {
		getAll: () => models(),
		getAvailable: () => models(),
		find: (providerId, id) => models().find((m) => m.provider === providerId && m.id === id),
		getProvider: provider,
		getProviderDisplayName: (id) => op("getProvider", id)?.name ?? id,
		getProviderAuth: (id) => request("getProviderAuth", id),
		getApiKeyForProvider: async (id) => (await request("getProviderAuth", id))?.auth?.apiKey,
		isUsingOAuth: (model) => op("getProviderAuth", model?.provider)?.source === "OAuth",
		hasConfiguredAuth: (model) => op("getProviderAuth", model?.provider) !== undefined,
		stream,
		streamSimple,
		complete: (model, context, options) => stream(model, context, options).result(),
		// pi's classifier and image APIs, as codemode's `models.*` reach them.
		getModelsOfType: (type, providerId) => op("getModelsOfType", type, providerId),
		getAvailableOfType: (type, providerId) => request("getAvailableOfType", type, providerId),
		getModelOfType: (type, providerId, id) => op("getModelOfType", type, providerId, id),
		findOfType: (type, providerId, id) => op("getModelOfType", type, providerId, id),
		classify: (model, context) => request("classify", model, context),
		generateImages: (model, context) => request("generateImages", model, context),
	};
}
