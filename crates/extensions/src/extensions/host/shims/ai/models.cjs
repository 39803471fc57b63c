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

class InMemoryModelsStore {
	#entries = new Map();
	get(provider) {
		return this.#entries.get(provider);
	}
	set(provider, entry) {
		this.#entries.set(provider, entry);
	}
	delete(provider) {
		this.#entries.delete(provider);
	}
}

class InMemoryCredentialStore {
	#credentials = new Map();
	get(provider) {
		return this.#credentials.get(provider);
	}
	set(provider, credential) {
		this.#credentials.set(provider, credential);
	}
	delete(provider) {
		this.#credentials.delete(provider);
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
