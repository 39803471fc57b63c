// pi-rpc extension host: the registry behind pi's
// `ModelRuntime.create({authPath, modelsPath})` when the files are not
// pi-rpc's own. Catalog, credentials and auth answers come from pi-rpc's
// config crate over those files (the `modelStore` library function, read
// again at each question, as pi re-reads its stores), with the runtime's own
// API keys applied; model calls go through pi-rpc's registry with this
// runtime's request auth (`requestAuth`), those of a provider only these
// files have by the model's own API (its base URL, that auth), as pi's
// runtime calls its own providers; typed models are pi-rpc's
// registry's (compat/DEVIATIONS.md). Nothing the running session registered
// is in it: what is registered on the runtime is laid over it (models.cjs).

"use strict";

const { services } = require("../host-services.cjs");
const { lib } = require("./text.cjs");
const calls = require("../ai/calls.cjs");
const { builtinProvider, configuredBuiltinProvider, isBuiltinProvider } = require("./builtin-provider.cjs");

/** A model as plain JSON (the library function reads pi's `Model` fields). */
const plain = (model) => (model ? JSON.parse(JSON.stringify(model)) : model);

/**
 * A registry with the interface of `ctx.modelRegistry` over `store`
 * (`{authPath, modelsPath}`, `modelsPath` null for none) and `runtimeKeys`
 * (a Map the runtime owns); `catalogBaseUrl`: the catalog server its
 * built-in providers' `refreshModels` asks (pi.dev when not given).
 */
function storeRegistry(store, runtimeKeys, { catalogBaseUrl } = {}) {
	const own = services().modelRegistry();
	const ask = (op, ...args) => lib("modelStore", { ...store, runtimeKeys: Object.fromEntries(runtimeKeys) }, op, ...args)?.value;
	// The catalog's answers (models, providers) kept until the runtime refreshes or its credentials change (`forget`), as pi's snapshot.
	let known = new Map();
	const catalogAsk = (op, ...args) => {
		const id = JSON.stringify([op, ...args]);
		if (!known.has(id)) known.set(id, ask(op, ...args));
		const value = known.get(id);
		return Array.isArray(value) ? [...value] : value;
	};
	// A provider the running session does not know (of these files only) is called by its model's API, with this runtime's auth.
	const call = (kind) => (model, context, options) => (own.getProvider(model?.provider) ? own[kind] : calls[kind])(model, context, options);
	// pi-ai's object of a built-in provider nothing configures, one per runtime (its restored catalog stays in it).
	const builtins = new Map();
	const sourceOf = (id) => {
		const chat = () => (catalogAsk("getAll") ?? []).filter((m) => m.provider === id);
		const typed = (type) => own.getModelsOfType(type, id) ?? [];
		return { chat, typed, calls: own, catalogBaseUrl };
	};
	const builtin = (id) => {
		if (!builtins.has(id)) builtins.set(id, builtinProvider(id, sourceOf(id)));
		return builtins.get(id);
	};
	const provider = (id) => {
		const facts = catalogAsk("getProvider", id);
		if (isBuiltinProvider(id) && !facts?.configured) return builtin(id);
		// Configured by these files' models.json: pi's composer over pi-ai's object.
		if (isBuiltinProvider(id)) return configuredBuiltinProvider(id, facts.config ?? {}, builtin(id), sourceOf(id));
		if (!facts) return undefined;
		return {
			id: facts.id,
			name: facts.name,
			...(facts.baseUrl ? { baseUrl: facts.baseUrl } : {}),
			getModels: () => (catalogAsk("getAll") ?? []).filter((m) => m.provider === id),
			stream: call("stream"),
			streamSimple: call("streamSimple"),
		};
	};
	return {
		refresh: async () => {
			known = new Map();
			return { aborted: false, errors: new Map() };
		},
		forget: () => {
			known = new Map();
		},
		getError: () => ask("getError"),
		getAll: () => catalogAsk("getAll") ?? [],
		getAvailable: () => ask("getAvailable") ?? [],
		find: (providerId, id) => catalogAsk("find", providerId, id),
		getProvider: provider,
		getProviderIds: () => catalogAsk("getProviderIds"),
		getProviderAuth: async (id) => ask("getProviderAuth", id),
		getProviderAuthStatus: (id) => ask("getProviderAuthStatus", id),
		loginMethods: (id) => ask("loginMethods", id),
		isUsingOAuth: (model) => ask("getProviderAuth", model?.provider)?.source === "OAuth",
		hasConfiguredAuth: (model) => ask("getProviderAuth", model?.provider) !== undefined,
		async getApiKeyAndHeaders(model) {
			const answer = ask("getApiKeyAndHeaders", plain(model));
			if (!answer?.ok) return { ok: false, error: answer?.error ?? `No API key found for "${model?.provider}"` };
			return answer.auth ? { ok: true, apiKey: answer.apiKey, headers: answer.headers, env: answer.env } : { ok: true, headers: answer.headers };
		},
		/** `{apiKey?, headers?}` of `model`'s provider from these files and the runtime keys (undefined: none). */
		requestAuth(model) {
			const answer = ask("getApiKeyAndHeaders", plain(model));
			return answer?.ok ? { apiKey: answer.apiKey, headers: answer.headers } : undefined;
		},
		getModelsOfType: (type, providerId) => (type === "chat" ? (catalogAsk("getAll") ?? []).filter((m) => providerId === undefined || m.provider === providerId) : own.getModelsOfType(type, providerId)),
		getAvailableOfType: (type, providerId) => own.getAvailableOfType(type, providerId),
		getModelOfType: (type, providerId, id) => own.getModelOfType(type, providerId, id),
		stream: call("stream"),
		streamSimple: call("streamSimple"),
		complete: call("complete"),
		classify: own.classify,
		generateImages: own.generateImages,
		// A runtime of its own: what the running session registered is not in it (its own are laid over it, models.cjs).
		resolveModel: async (model) => {
			throw new Error(`Virtual model ${model?.provider}/${model?.id} is not registered.`);
		},
		getRegisteredProviderConfig: () => undefined,
		getRegisteredNativeProvider: () => undefined,
		getRegisteredProviderIds: () => [],
	};
}

/** The credentials stored in `authPath` (pi's `CredentialInfo`s, the file's order). */
const storedCredentials = (authPath) => lib("modelStore", { authPath }, "listCredentials") ?? [];
/** Store a login's credential in `authPath` under pi's lock. */
const storeCredential = (authPath, providerId, credential) => lib("modelStore", { authPath }, "store", providerId, credential);
/** Remove `providerId`'s credential from `authPath`. */
const removeCredential = (authPath, providerId) => lib("modelStore", { authPath }, "logout", providerId);

module.exports = { storeRegistry, storedCredentials, storeCredential, removeCredential };
