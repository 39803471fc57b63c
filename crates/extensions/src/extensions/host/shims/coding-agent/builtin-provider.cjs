// pi-rpc extension host: a built-in provider's object as pi 1.6.0's model
// runtime gives it (`getProvider(id)`, `getProviders()`): pi-ai's provider
// (its id, pi-ai's name and base URL, `headers`, its API-key and OAuth auth
// from builtin-auth.cjs, its calls, `filterModels` / `filterAllModels`,
// `generateImages` / `classify` where pi-ai has them) wrapped as pi's
// runtime wraps it: a remote catalog restored from the store and refreshed
// from pi's catalog server (`refreshModels`, `refreshModelsAuth:
// "configured"`), OpenRouter's narrowed to the user's key instead, Radius
// as pi-ai makes it. Its models are pi-rpc's catalog of the provider (chat,
// then image, then classifier models), a restored catalog laid over them;
// its calls go through pi-rpc. One `models.json` or an extension
// configures is composed with the configuration as pi composes it
// (`configuredBuiltinProvider`, registered-provider.cjs).

"use strict";

const { apiKeyAuth, oauthAuth } = require("./builtin-auth.cjs");
const { viaPiRpc } = require("../ai/calls.cjs");
const { AssistantMessageEventStream } = require("../ai/stream.cjs");
const { refreshProvider, refreshPersonalized, mergeModels, BUILTIN_GENERATED_AT, DEFAULT_CATALOG_BASE_URL } = require("./catalog-store.cjs");
const { lib } = require("./text.cjs");
const { registeredProvider } = require("./registered-provider.cjs");

/**
 * pi-ai 1.6.0's built-in providers by id, from pi-rpc's one table of them
 * (`builtin_providers.rs`), asked for once: each one's pi-ai name and base
 * URL, API-key auth (`{name, vars}`), OAuth auth (`{name, isSubscription?,
 * loginLabel?}`), and what else it has (`byModel`: an API for each API of
 * its catalog, the others one API for all their models; `classify`,
 * `images`, `filterModels`, `filterAllModels`, `catalog`).
 */
let table;
const factsOf = (id) => {
	table ??= new Map((lib("builtinProviderTable") ?? []).map((row) => [row.id, { ...row, baseUrl: row.baseUrl ?? undefined }]));
	return table.get(id);
};

const isChat = (model) => (model.type ?? "chat") === "chat";

/** The ids of built-in provider `id`'s chat models in pi's model data, asked for once. */
const builtinIds = new Map();
const builtinModelIds = (id) => {
	if (!builtinIds.has(id)) builtinIds.set(id, new Set(lib("builtinModelIds", id) ?? []));
	return builtinIds.get(id);
};

/** GitHub Copilot: an OAuth login's `availableModelIds` (a list of strings) narrows the models. */
function accountModels(models, credential) {
	if (credential?.type !== "oauth") return models;
	const ids = credential.availableModelIds;
	if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) return models;
	const available = new Set(ids);
	return models.filter((model) => available.has(model.id));
}

/** OpenAI: a ChatGPT login reaches no classifier. */
const subscriptionModels = (models, credential) => (credential?.type === "oauth" ? models.filter((model) => (model.type ?? "chat") !== "classifier") : models);

/** A stored catalog entry's models of provider `id` when it is newer than pi's model data (none otherwise). */
const newerModels = (id, entry) => (entry && entry.lastModified !== undefined && entry.lastModified > BUILTIN_GENERATED_AT ? entry.models.filter((m) => m.provider === id) : []);

/**
 * A catalog store over a `refreshModels` context: it reads the context's
 * stored entry and publishes what is written (`persist`), with `update`
 * (`onUpdate(entry)`) when the entry brings models of its own.
 */
function contextStore(context, onUpdate) {
	return {
		read: async () => context.stored,
		write: async (_id, entry) => {
			const fresh = entry.models !== context.stored?.models;
			await context.publish(fresh ? { persist: entry, update: () => onUpdate(entry) } : { persist: entry });
		},
	};
}

/** A call that ends at once with pi's error result (`message`). */
function failedStream(model, message, signal) {
	const out = new AssistantMessageEventStream();
	const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
	const reason = signal?.aborted ? "aborted" : "error";
	const error = { role: "assistant", content: [], api: model?.api, provider: model?.provider, model: model?.id, usage: zero, stopReason: reason, errorMessage: message, timestamp: Date.now() };
	queueMicrotask(() => {
		out.push({ type: "error", reason, error });
		out.end(error);
	});
	return out;
}

/** Whether `id` is one of pi-ai's built-in providers. */
const isBuiltinProvider = (id) => factsOf(id) !== undefined;

/**
 * pi's object of built-in provider `id` (undefined for another id): its
 * models from `source.chat()` and `source.typed(type)`, its classifier and
 * image calls `source.calls` (`classify`, `generateImages`).
 */
function builtinProvider(id, source) {
	const facts = factsOf(id);
	if (!facts) return undefined;
	const auth = { ...(facts.apiKey ? { apiKey: apiKeyAuth(id, facts.apiKey) } : {}), ...(facts.oauth ? { oauth: oauthAuth(id, facts.oauth) } : {}) };
	const { calls } = source;
	// A call as the provider makes it (its API's, with the options as given; no credentials looked up).
	const call = (model, context, options) => {
		const apis = new Set(source.chat().map((m) => m.api));
		const api = facts.byModel ? (apis.has(model?.api) ? model.api : undefined) : (source.chat()[0]?.api ?? model?.api);
		if (!api) return failedStream(model, `Provider ${id} has no API implementation for "${model?.api}"`, options?.signal);
		return viaPiRpc(model, context, options ?? {}, api);
	};
	const stream = call;
	const streamSimple = call;
	if (facts.catalog === "radius") return radiusProvider(id, facts, auth, source, { stream, streamSimple });
	const baseline = () => [...source.chat(), ...source.typed("image"), ...source.typed("classifier")];
	// The catalog server of the runtime's `catalogBaseUrl`, else pi.dev.
	const catalogBaseUrl = source.catalogBaseUrl ?? DEFAULT_CATALOG_BASE_URL;
	let dynamic = [];
	let getModels = () => mergeModels(source.chat(), dynamic.filter(isChat));
	let getAllModels = () => mergeModels(baseline(), dynamic);
	let refreshModels = async (context) => {
		const restored = newerModels(id, context.stored);
		if (!(await context.publish({ update: () => (dynamic = restored) }))) return;
		if (!context.allowNetwork || context.signal?.aborted) return;
		const store = contextStore(context, (entry) => (dynamic = newerModels(id, entry)));
		await refreshProvider(id, store, { baseUrl: catalogBaseUrl, signal: context.signal, force: context.force });
	};
	if (facts.catalog === "personal") {
		// The catalog narrowed to the user's key replaces the provider's models once stored, offline too.
		const all = () => (dynamic.length > 0 ? dynamic : baseline());
		getModels = () => all().filter(isChat);
		getAllModels = all;
		refreshModels = async (context) => {
			const restored = (context.stored?.models ?? []).filter((m) => m.provider === id);
			if (!(await context.publish({ update: () => (dynamic = restored) }))) return;
			if (!context.allowNetwork || context.signal?.aborted) return;
			const credential = context.credential;
			const key = credential?.type === "oauth" ? credential.access : credential?.key;
			const store = contextStore(context, (entry) => (dynamic = entry.models));
			await refreshPersonalized(id, store, { baseUrl: catalogBaseUrl, signal: context.signal, builtin: baseline(), key, providerBaseUrl: context.baseUrl });
		};
	}
	const provider = {
		id,
		name: facts.name,
		baseUrl: facts.baseUrl,
		headers: undefined,
		auth,
		getModels,
		getAllModels,
		refreshModels,
		filterModels: facts.filterModels === "account" ? accountModels : undefined,
		filterAllModels: facts.filterAllModels === "subscription" ? subscriptionModels : undefined,
		stream,
		streamSimple,
	};
	if (facts.images) provider.generateImages = (model, context, options) => calls.generateImages(model, context, options);
	if (facts.classify) provider.classify = (model, context, options) => calls.classify(model, context, options);
	// pi's catalog server answers without the provider's login (OpenRouter's narrowing needs it).
	if (facts.catalog !== "personal") provider.refreshModelsAuth = "configured";
	return provider;
}

const { refreshRadiusModels } = require("./radius-catalog.cjs");

/** Radius as pi-ai makes it: its gateway's catalog, once known, replaces the shipped one (radius-catalog.cjs). */
function radiusProvider(id, facts, auth, source, { stream, streamSimple }) {
	let dynamic;
	return {
		id,
		name: facts.name,
		auth,
		getModels: () => dynamic ?? source.chat(),
		refreshModels: (context) => refreshRadiusModels(id, context, (models) => (dynamic = models)),
		stream,
		streamSimple,
	};
}

/**
 * pi's provider composer over built-in provider `id` that `models.json` or
 * an extension configures (`config`: `{name?, baseUrl?, apiKey?, headers?,
 * authHeader?, modelOrder?}`, an extension's over the file's): pi-ai's object `base`
 * with the configured name and base URL, an API-key auth over its own
 * (the configured key and headers), its OAuth, refresh and filters; its
 * models are the provider's as configured (`source` as for `builtinProvider`),
 * its calls pi-ai's.
 */
function configuredBuiltinProvider(id, config, base, source) {
	// As pi's composer: the provider's own models (one configuration replaces, in its place), then the chat models it adds;
	// an extension's own `models` (`config.modelOrder`, `type:id` each) are the provider's, in their order.
	const allModels = () => {
		const builtinIds = builtinModelIds(id);
		const chat = source.chat();
		const added = chat.filter((model) => !builtinIds.has(model.id));
		const composed = [...chat.filter((model) => builtinIds.has(model.id)), ...source.typed("image"), ...source.typed("classifier"), ...added];
		if (!Array.isArray(config.modelOrder)) return composed;
		const place = (model) => config.modelOrder.indexOf(`${model.type ?? "chat"}:${model.id}`);
		return composed.sort((a, b) => place(a) - place(b));
	};
	const calls = { stream: base.stream, streamSimple: base.streamSimple, classify: source.calls.classify, generateImages: source.calls.generateImages };
	return registeredProvider({ config }, id, { base, models: source.chat, allModels, calls });
}

module.exports = { builtinProvider, configuredBuiltinProvider, isBuiltinProvider };
