// pi-rpc extension host: pi's cache of remote model catalogs for a
// `ModelRuntime` an extension makes (`ModelRuntime.create({modelsStore})`, a
// pi-ai `ModelsStore` object, or `modelsStorePath`, a `models-store.json`;
// without either, the `models-store.json` beside the runtime's `models.json`,
// the agent directory's when no file is named). pi's runtime restores what the store keeps when
// it is made, without the network (`allowModelNetwork` is off unless asked
// for): a built-in provider's stored catalog newer than the model data pi
// ships joins that provider's models (a stored model replaces the built-in
// one of the same id; its classifier and image models join the typed
// ones), and the models llama.cpp's last listing kept are llama.cpp's. The
// catalog is read again on `refresh()`.
//
// With the network allowed (`create({allowModelNetwork: true})`, or
// `refresh()` unless told `allowNetwork: false`; never with `PI_OFFLINE` or
// `--offline`), each built-in provider with credentials asks pi's catalog
// server (`catalogBaseUrl`, pi.dev by default) for its catalog as pi does:
// `GET /api/models/providers/<id>?types=chat,image,classifier`, at most once
// in four hours unless forced, revalidated with the stored `etag`, up to two
// retries, and the answer (`models`, `lastModified`, `etag`, `checkedAt`)
// kept in the store (models-store.json under pi's lock, written by pi-rpc's
// auth crate). OpenRouter's catalog is narrowed to the models of the user's
// key as pi narrows it: the catalog (pi's, or a newer one from the server)
// kept to the chat models the provider's `/models/user` lists for the key,
// with their limits and prices, fetched at each network refresh and
// replacing the provider's models, offline too.

"use strict";

const fs = require("node:fs");
const path = require("node:path");

const { services } = require("../host-services.cjs");
const { lib } = require("./text.cjs");

/** The pi version the catalog server is told (pi 1.6.0's catalogs). */
const VERSION = "1.6.0";

/** When pi 1.6.0's built-in model data was made (pi-rpc's catalog, crates/config/src/config/catalog.json, is that data). */
const BUILTIN_GENERATED_AT = Date.parse("2026-11-20T10:48:49.496Z");
/** Providers whose stored listing is theirs whatever its date (pi's own listing, not pi.dev's catalog). */
const LISTED = new Set(["llama.cpp"]);
/** pi's catalog server, and how it is asked. */
const DEFAULT_CATALOG_BASE_URL = "https://pi.dev";
const REFRESH_INTERVAL_MS = 4 * 60 * 60 * 1000;
const ATTEMPT_TIMEOUT_MS = 4_000;
const MAX_RETRIES = 2;
const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);
const MODEL_TYPES = ["chat", "image", "classifier"];
/** Built-in providers whose catalog is narrowed to the user's key (it replaces theirs once stored). */
const PERSONALIZED = new Set(["openrouter"]);
const OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1";
const OPENROUTER_USER_MODELS_TIMEOUT_MS = 15_000;

/** A `models-store.json` as pi-ai's `ModelsStore` (written under pi's lock by pi-rpc's auth crate). */
function fileStore(file) {
	return {
		async read(providerId) {
			try {
				const data = JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "") || "{}");
				const entry = data?.[providerId];
				return entry && typeof entry === "object" ? entry : undefined;
			} catch {
				return undefined;
			}
		},
		async write(providerId, entry) {
			lib("modelStore", { authPath: file }, "store", providerId, entry);
		},
	};
}

/** pi-ai's in-memory `ModelsStore` (a runtime without a models.json). */
function memoryStore() {
	const entries = new Map();
	return {
		read: async (providerId) => (entries.has(providerId) ? structuredClone(entries.get(providerId)) : undefined),
		write: async (providerId, entry) => void entries.set(providerId, structuredClone(entry)),
	};
}

/**
 * The store a runtime made with `options` restores from, as pi's: the given
 * `modelsStore`, else the `modelsStorePath` file, else the file beside the
 * runtime's `models.json` (the agent directory's for a runtime naming no
 * files), else (no models.json) one in memory.
 */
function catalogStoreOf(options, modelsPath) {
	if (options?.modelsStore) return options.modelsStore;
	if (options?.modelsStorePath) return fileStore(path.resolve(options.modelsStorePath));
	if (typeof modelsPath === "string") return fileStore(path.join(path.dirname(modelsPath), "models-store.json"));
	// pi keeps what a runtime without models.json fetches in memory.
	return memoryStore();
}

/** pi's model network is on unless `PI_OFFLINE` is set (or pi-rpc runs `--offline`). */
function modelNetworkEnabled() {
	return process.env.PI_OFFLINE === undefined && services().hello?.offline !== true;
}

/** pi's `User-Agent` for its own requests. */
function userAgent() {
	return `pi/${VERSION} (${process.platform}; node/${process.version}; ${process.arch})`;
}

/** `GET` with pi's bounded retry: retryable statuses and failed attempts, each attempt limited. */
async function fetchWithRetry(url, headers, signal) {
	for (let attempt = 0; ; attempt++) {
		signal?.throwIfAborted();
		const attemptSignal = AbortSignal.timeout(ATTEMPT_TIMEOUT_MS);
		try {
			const response = await fetch(url, { headers, signal: signal ? AbortSignal.any([signal, attemptSignal]) : attemptSignal });
			if (!(RETRYABLE_STATUS.has(response.status) && attempt < MAX_RETRIES)) return response;
			await response.body?.cancel().catch(() => {});
		} catch (error) {
			if (signal?.aborted || attempt >= MAX_RETRIES) throw error;
		}
	}
}

/** The models of a catalog answer (an array, `{models}`, or an object of models), typed ones pi knows. */
function parseCatalog(providerId, value) {
	const entries = Array.isArray(value)
		? value
		: value && typeof value === "object" && Array.isArray(value.models)
			? value.models
			: value && typeof value === "object"
				? Object.values(value)
				: undefined;
	if (!entries) throw new Error(`Invalid model catalog for provider "${providerId}"`);
	return entries
		.filter((entry) => entry && typeof entry === "object" && "id" in entry)
		.filter((model) => model.type === undefined || MODEL_TYPES.includes(model.type))
		.map((model) => ({ ...model, provider: providerId }));
}

/**
 * One provider's network refresh, as pi's remote catalog does it: skipped
 * while the stored answer is fresh (unless `force`), a 304 only moves
 * `checkedAt`, a 404/501 keeps an empty-dated entry, another failure keeps
 * the stored body and throws pi's error.
 */
async function refreshProvider(providerId, store, { baseUrl, signal, force }) {
	const stored = await store.read(providerId, { signal });
	if (!force && stored?.checkedAt !== undefined && stored.lastModified !== undefined && Date.now() - stored.checkedAt < REFRESH_INTERVAL_MS) return;
	const url = new URL(`/api/models/providers/${encodeURIComponent(providerId)}`, baseUrl);
	url.searchParams.set("types", MODEL_TYPES.join(","));
	const validator = stored && Array.isArray(stored.models) && stored.models.length > 0 ? stored.etag : undefined;
	const headers = { accept: "application/json", "User-Agent": userAgent(), ...(validator ? { "if-none-match": validator } : {}) };
	const response = await fetchWithRetry(url, headers, signal);
	if (signal?.aborted) return;
	const checkedAt = Date.now();
	if (response.status === 304 && stored) return store.write(providerId, { ...stored, checkedAt }, { signal });
	if (response.status === 404 || response.status === 501) {
		return store.write(providerId, { ...(stored ?? { models: [] }), checkedAt, lastModified: 0, etag: undefined }, { signal });
	}
	if (!response.ok) {
		await store.write(providerId, { ...(stored ?? { models: [] }), checkedAt }, { signal });
		throw new Error(`Model catalog request failed for ${providerId}: ${response.status}`);
	}
	const lastModified = Date.parse(response.headers.get("last-modified") ?? "");
	const entry = {
		models: parseCatalog(providerId, await response.json()),
		lastModified: Number.isNaN(lastModified) ? 0 : lastModified,
		etag: response.headers.get("etag") ?? undefined,
		checkedAt,
	};
	if (signal?.aborted) return;
	await store.write(providerId, JSON.parse(JSON.stringify(entry)), { signal });
}

/** An OpenRouter `$/token` price as `$/1M tokens` (missing, invalid or negative: `fallback`). */
function perMillion(value, fallback) {
	const perToken = Number.parseFloat(value ?? "");
	return perToken >= 0 ? Number((perToken * 1_000_000).toFixed(6)) : fallback;
}

/** OpenRouter's prices as pi's model cost, prompt-length overrides as tiers (time-bound ones left out). */
function openRouterCost(pricing) {
	const base = {
		input: perMillion(pricing?.prompt, 0),
		output: perMillion(pricing?.completion, 0),
		cacheRead: perMillion(pricing?.input_cache_read, 0),
		cacheWrite: perMillion(pricing?.input_cache_write, 0),
	};
	const tiers = [];
	for (const o of pricing?.overrides ?? []) {
		if (o.min_prompt_tokens === undefined || o.utc_start !== undefined || o.utc_end !== undefined || o.utc_days !== undefined) continue;
		tiers.push({
			inputTokensAbove: o.min_prompt_tokens,
			input: perMillion(o.prompt, base.input),
			output: perMillion(o.completion, base.output),
			cacheRead: perMillion(o.input_cache_read, base.cacheRead),
			cacheWrite: perMillion(o.input_cache_write, base.cacheWrite),
		});
	}
	return tiers.length > 0 ? { ...base, tiers } : base;
}

/** `baseline` with `newer` over it (same type and id: the newer one). */
function mergeModels(baseline, newer) {
	const merged = new Map();
	for (const model of [...baseline, ...newer]) merged.set(`${model.type ?? "chat"}\0${model.id}`, model);
	return [...merged.values()];
}

/**
 * The chat models of `catalog` the key may use (`/models/user` of the
 * provider's base URL), with the key's limits and prices; other types as
 * they are. A key the endpoint refuses (401/403) or no such endpoint (404):
 * the catalog unchanged.
 */
async function personalizeOpenRouter(catalog, key, providerBaseUrl, signal) {
	if (!key) return catalog;
	const url = `${(providerBaseUrl ?? OPENROUTER_BASE_URL).replace(/\/+$/, "")}/models/user`;
	const limit = AbortSignal.timeout(OPENROUTER_USER_MODELS_TIMEOUT_MS);
	const response = await fetch(url, {
		headers: { accept: "application/json", authorization: `Bearer ${key}` },
		signal: signal ? AbortSignal.any([signal, limit]) : limit,
	});
	if ([401, 403, 404].includes(response.status)) return catalog;
	if (!response.ok) throw new Error(`OpenRouter model list request failed: ${response.status}`);
	const body = await response.json();
	if (!body || typeof body !== "object" || !Array.isArray(body.data)) throw new Error("Invalid OpenRouter model list response");
	const allowed = new Map(body.data.filter((e) => e && typeof e === "object" && typeof e.id === "string").map((e) => [e.id, e]));
	return catalog.flatMap((model) => {
		if ((model.type ?? "chat") !== "chat") return [model];
		const entry = allowed.get(model.id);
		if (!entry) return [];
		return [
			{
				...model,
				// A limit OpenRouter leaves out comes as absent, null or 0: the catalog's then.
				contextWindow: entry.top_provider?.context_length || entry.context_length || model.contextWindow,
				maxTokens: entry.top_provider?.max_completion_tokens || model.maxTokens,
				cost: entry.pricing ? openRouterCost(entry.pricing) : model.cost,
			},
		];
	});
}

/**
 * OpenRouter's network refresh as pi's: the catalog server asked each time
 * (a newer catalog over pi's), narrowed to the key, and kept whole.
 */
async function refreshPersonalized(providerId, store, { baseUrl, signal, builtin, key, providerBaseUrl }) {
	const url = new URL(`/api/models/providers/${encodeURIComponent(providerId)}`, baseUrl);
	url.searchParams.set("types", MODEL_TYPES.join(","));
	const response = await fetchWithRetry(url, { accept: "application/json", "User-Agent": userAgent() }, signal);
	if (signal?.aborted) return;
	let remote = [];
	if (response.status !== 404 && response.status !== 501) {
		if (!response.ok) throw new Error(`Model catalog request failed for ${providerId}: ${response.status}`);
		const lastModified = Date.parse(response.headers.get("last-modified") ?? "");
		const models = parseCatalog(providerId, await response.json());
		if (!Number.isNaN(lastModified) && lastModified > BUILTIN_GENERATED_AT) remote = models;
	}
	const personalized = await personalizeOpenRouter(mergeModels(builtin, remote), key, providerBaseUrl, signal);
	if (signal?.aborted) return;
	await store.write(providerId, JSON.parse(JSON.stringify({ models: personalized, checkedAt: Date.now() })), { signal });
}

/** The built-in providers (pi-rpc's catalog, which is pi 1.6.0's). */
const builtinProviders = () => lib("builtinProviders") ?? [];

/** The models of `type` `entry` gives provider `id`, as pi restores them (none when pi would ignore the entry). */
function restoredModels(id, entry, type = "chat") {
	if (!entry || !Array.isArray(entry.models)) return [];
	const theirs = LISTED.has(id) || PERSONALIZED.has(id);
	if (!theirs && !(typeof entry.lastModified === "number" && entry.lastModified > BUILTIN_GENERATED_AT)) return [];
	return entry.models.filter((m) => m && typeof m === "object" && m.provider === id && typeof m.id === "string" && (m.type ?? "chat") === type);
}

/**
 * `registry` with the catalogs `store` keeps laid over its providers'
 * models; `restore()` reads the store again (at create and on refresh).
 */
function withStoredCatalogs(registry, store, network = {}) {
	let restored = new Map();
	/** Restored classifier and image models by provider. */
	let typed = new Map();
	/** The registry's models of `type` (not chat), the restored ones over them. */
	const typedMerged = (type, providerId) => {
		const base = registry.getModelsOfType(type, providerId) ?? [];
		const extra = [...typed].filter(([p]) => providerId === undefined || p === providerId).flatMap(([, models]) => models.filter((m) => m.type === type));
		if (extra.length === 0) return base;
		const merged = new Map();
		for (const m of [...base, ...extra]) merged.set(`${m.provider}\0${m.id}`, m);
		return [...merged.values()];
	};
	const merged = () => {
		const all = registry.getAll();
		if (restored.size === 0) return all;
		const out = [];
		const seen = new Set();
		for (const m of all) {
			const stored = restored.get(m.provider)?.find((s) => s.id === m.id);
			// A key-narrowed catalog replaces the provider's.
			if (!stored && PERSONALIZED.has(m.provider) && restored.has(m.provider)) continue;
			out.push(stored ?? m);
			seen.add(`${m.provider}\0${m.id}`);
		}
		for (const [, models] of restored) for (const m of models) if (!seen.has(`${m.provider}\0${m.id}`)) out.push(m);
		return out;
	};
	const overlaid = Object.create(registry);
	Object.assign(overlaid, {
		getAll: merged,
		find: (provider, id) => {
			const stored = restored.get(provider)?.find((m) => m.id === id);
			if (stored || (PERSONALIZED.has(provider) && restored.has(provider))) return stored;
			return registry.find(provider, id);
		},
		getAvailable: () => {
			const configured = new Set(registry.getAvailable().map((m) => m.provider));
			return merged().filter((m) => configured.has(m.provider));
		},
		getModelsOfType: (type, providerId) =>
			type === "chat" ? merged().filter((m) => providerId === undefined || m.provider === providerId) : typedMerged(type, providerId),
		getModelOfType: (type, providerId, id) =>
			type === "chat" ? overlaid.find(providerId, id) : typedMerged(type, providerId).find((m) => m.provider === providerId && m.id === id),
		async getAvailableOfType(type, providerId) {
			const base = (await registry.getAvailableOfType(type, providerId)) ?? [];
			if (type === "chat" || typed.size === 0) return base;
			const configured = new Set([...registry.getAvailable().map((m) => m.provider), ...base.map((m) => m.provider)]);
			return typedMerged(type, providerId).filter((m) => configured.has(m.provider));
		},
		async refresh(options) {
			// As pi: the runtime's files read again, then the catalogs of the providers configured now.
			const result = await registry.refresh(options);
			const errors = await fetchCatalogs({ ...options, allowNetwork: options?.allowNetwork ?? modelNetworkEnabled() });
			for (const [id, error] of errors) result.errors.set(id, error);
			return result;
		},
	});
	/**
	 * pi's refresh of the stored catalogs: restored first, then, with the
	 * network allowed, each configured built-in provider's fetched and
	 * restored again; errors by provider.
	 */
	async function fetchCatalogs(options) {
		await restore(options?.signal);
		const errors = new Map();
		if (options?.allowNetwork !== true || !modelNetworkEnabled() || options?.signal?.aborted) return errors;
		if (typeof store.write !== "function") return errors;
		const configured = new Set(registry.getAvailable().map((m) => m.provider));
		const ids = builtinProviders().filter((id) => configured.has(id));
		const baseUrl = network.catalogBaseUrl ?? DEFAULT_CATALOG_BASE_URL;
		const personal = async (id) => {
			const builtin = ["classifier", "image"].flatMap((type) => registry.getModelsOfType(type, id) ?? []);
			const key = (await registry.getProviderAuth?.(id))?.auth?.apiKey;
			const providerBaseUrl = registry.getProvider?.(id)?.baseUrl;
			const chat = registry.getAll().filter((m) => m.provider === id);
			return refreshPersonalized(id, store, { baseUrl, signal: options.signal, builtin: [...chat, ...builtin], key, providerBaseUrl });
		};
		await Promise.all(
			ids.map(async (id) => {
				try {
					if (PERSONALIZED.has(id)) await personal(id);
					else await refreshProvider(id, store, { baseUrl, signal: options.signal, force: options.force });
				} catch (error) {
					if (!options.signal?.aborted) errors.set(id, error instanceof Error ? error : new Error(String(error)));
				}
			}),
		);
		await restore(options?.signal);
		return errors;
	}
	async function restore(signal) {
		const next = new Map();
		const nextTyped = new Map();
		const ids = new Set([...registry.getAll().map((m) => m.provider), ...builtinProviders(), ...LISTED]);
		for (const id of ids) {
			const entry = await store.read(id, { signal });
			const models = restoredModels(id, entry);
			if (models.length > 0) next.set(id, models);
			const others = ["classifier", "image"].flatMap((type) => restoredModels(id, entry, type));
			if (others.length > 0) nextTyped.set(id, others);
		}
		restored = next;
		typed = nextTyped;
	}
	return { registry: overlaid, restore, fetchCatalogs };
}

module.exports = { catalogStoreOf, withStoredCatalogs, modelNetworkEnabled, refreshProvider, refreshPersonalized, mergeModels, BUILTIN_GENERATED_AT, DEFAULT_CATALOG_BASE_URL };
