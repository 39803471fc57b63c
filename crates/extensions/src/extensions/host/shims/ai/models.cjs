// pi-rpc extension host: pi-ai's model helpers: costs (computed into the
// usage, as pi-ai does), thinking levels, model identity, the models pi-rpc
// knows, providers built from their parts, in-memory stores.

"use strict";

const { services } = require("../host-services.cjs");

const LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/** Fill `usage.cost` from the model's per-million prices (tiered prices included) and return it. */
function calculateCost(model, usage) {
	const input = usage.input + usage.cacheRead + usage.cacheWrite;
	let rates = model.cost;
	let threshold = -1;
	for (const tier of model.cost?.tiers ?? []) {
		if (input > tier.inputTokensAbove && tier.inputTokensAbove > threshold) {
			rates = tier;
			threshold = tier.inputTokensAbove;
		}
	}
	const longWrite = usage.cacheWrite1h ?? 0;
	const shortWrite = usage.cacheWrite - longWrite;
	usage.cost ??= {};
	usage.cost.input = (rates.input / 1000000) * usage.input;
	usage.cost.output = (rates.output / 1000000) * usage.output;
	usage.cost.cacheRead = (rates.cacheRead / 1000000) * usage.cacheRead;
	usage.cost.cacheWrite = (rates.cacheWrite * shortWrite + rates.input * 2 * longWrite) / 1000000;
	usage.cost.total = usage.cost.input + usage.cost.output + usage.cost.cacheRead + usage.cost.cacheWrite;
	usage.cost.totalFromProvider = false;
	return usage.cost;
}

function getSupportedThinkingLevels(model) {
	if (!model?.reasoning) return ["off"];
	return LEVELS.filter((level) => {
		const mapped = model.thinkingLevelMap?.[level];
		if (mapped === null) return false;
		return level === "xhigh" || level === "max" ? mapped !== undefined : true;
	});
}

/** The nearest supported level: the next higher, else the next lower. */
function clampThinkingLevel(model, level) {
	const supported = getSupportedThinkingLevels(model);
	if (supported.includes(level)) return level;
	const at = LEVELS.indexOf(level);
	if (at < 0) return supported[0] ?? "off";
	for (let i = at; i < LEVELS.length; i++) if (supported.includes(LEVELS[i])) return LEVELS[i];
	for (let i = at - 1; i >= 0; i--) if (supported.includes(LEVELS[i])) return LEVELS[i];
	return supported[0] ?? "off";
}

const getModelType = (model) => model?.type ?? "chat";
const isModelType = (model, type) => getModelType(model) === type;
const hasApi = (model, api) => isModelType(model, "chat") && model.api === api;
const modelsAreEqual = (a, b) => Boolean(a && b) && getModelType(a) === getModelType(b) && a.id === b.id && a.provider === b.provider;

/** The models pi-rpc can call (those with credentials). */
const known = () => services().channel.call("getModels").models ?? [];

class ModelsError extends Error {
	constructor(code, message, options) {
		super(message, options);
		this.name = "ModelsError";
		this.code = code;
	}
}

/** A caller's abort signal, checked before an operation goes on (pi-ai's stores throw its reason). */
const checkSignal = (options) => options?.signal?.throwIfAborted();

/** pi-ai's `ModelsStore` in memory: `read` / `write` / `delete` of a provider's catalog entry, each a copy. */
class InMemoryModelsStore {
	#entries = new Map();
	async read(providerId, options) {
		checkSignal(options);
		const entry = this.#entries.get(providerId);
		return entry === undefined ? undefined : structuredClone(entry);
	}
	async write(providerId, entry, options) {
		checkSignal(options);
		this.#entries.set(providerId, structuredClone(entry));
	}
	async delete(providerId, options) {
		checkSignal(options);
		this.#entries.delete(providerId);
	}
}

/**
 * pi-ai's `CredentialStore` in memory: one credential per provider;
 * `modify` and `delete` of a provider run one after the other (each waits
 * for the previous one to settle), `modify`'s function given the current
 * credential and its answer kept unless `undefined`.
 */
class InMemoryCredentialStore {
	#credentials = new Map();
	#queues = new Map();
	/** Run `task` after the provider's earlier writes; a caller's abort rejects at once. */
	#serialized(providerId, task, options) {
		checkSignal(options);
		const previous = this.#queues.get(providerId) ?? Promise.resolve();
		const run = previous.then(() => {
			checkSignal(options);
			return task();
		});
		const settled = run.then(
			() => undefined,
			() => undefined,
		);
		this.#queues.set(providerId, settled);
		settled.then(() => {
			if (this.#queues.get(providerId) === settled) this.#queues.delete(providerId);
		});
		const signal = options?.signal;
		if (!signal) return run;
		return new Promise((resolve, reject) => {
			const onAbort = () => reject(signal.reason);
			signal.addEventListener("abort", onAbort, { once: true });
			run.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
		});
	}
	async read(providerId, options) {
		checkSignal(options);
		return this.#credentials.get(providerId);
	}
	async list(options) {
		checkSignal(options);
		return [...this.#credentials].map(([providerId, credential]) => ({ providerId, type: credential.type }));
	}
	modify(providerId, update, options) {
		return this.#serialized(
			providerId,
			async () => {
				const current = this.#credentials.get(providerId);
				const next = await update(current);
				checkSignal(options);
				if (next !== undefined) this.#credentials.set(providerId, next);
				return next ?? current;
			},
			options,
		);
	}
	delete(providerId, options) {
		return this.#serialized(providerId, async () => void this.#credentials.delete(providerId), options);
	}
}

/** The key of an environment variable for a provider (`<PROVIDER>_API_KEY`). */
function getEnvApiKey(provider) {
	const name = `${String(provider).toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`;
	return process.env[name] || undefined;
}

/** A provider as pi-ai composes one: its parts, kept as given. */
function createProvider(definition) {
	return { ...definition };
}

/** A model collection over providers (pi-ai's `createModels`), reading the models pi-rpc knows. */
function createModels() {
	return {
		getModels: (provider) => known().filter((m) => provider === undefined || m.provider === provider),
		getModel: (provider, id) => known().find((m) => m.provider === provider && m.id === id),
		getProviders: () => [...new Set(known().map((m) => m.provider))],
	};
}

module.exports = {
	calculateCost,
	getSupportedThinkingLevels,
	clampThinkingLevel,
	getModelType,
	isModelType,
	hasApi,
	modelsAreEqual,
	ModelsError,
	InMemoryModelsStore,
	InMemoryCredentialStore,
	createProvider,
	createModels,
	getModel: (provider, id) => known().find((m) => m.provider === provider && m.id === id),
	getModels: (provider) => known().filter((m) => m.provider === provider),
	getProviders: () => [...new Set(known().map((m) => m.provider))],
	getEnvApiKey,
	findEnvKeys: (provider) => {
		const key = getEnvApiKey(provider);
		return key ? [`${String(provider).toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`] : [];
	},
	envApiKeyAuth: (provider, envVars = []) => ({
		resolve: () => {
			const key = envVars.map((v) => process.env[v]).find(Boolean) ?? getEnvApiKey(provider);
			return key ? { auth: { apiKey: key }, source: "environment" } : undefined;
		},
	}),
	defaultProviderAuthContext: () => ({ env: process.env }),
};
