// pi-rpc extension host: pi's `ModelRuntime` and `ModelRegistry` for an
// extension using pi's SDK. pi 1.6.0's runtime owns a model catalog and the
// credentials; in pi-rpc both are pi-rpc's (its catalog with `models.json`,
// `auth.json` and the environment), which the host reaches through
// `ctx.modelRegistry` (model-registry.mjs). `ModelRuntime.create()` gives a
// runtime over them; `new ModelRegistry(runtime)` is pi's synchronous facade
// over a runtime. What pi-rpc's credentials cannot take from an extension
// (runtime API keys, login, logout, other `authPath`/`modelsPath` files)
// fails with a clear error (compat/DEVIATIONS.md).

"use strict";

const { services } = require("../host-services.cjs");

const providerOf = (target) => (typeof target === "string" ? target : target?.provider);

function unavailable(what) {
	return () => {
		throw new Error(
			`ModelRuntime.${what}() is not available in pi-rpc's extension host: pi-rpc's credentials are its own (auth.json, the environment, /login); ` +
				"use ctx.modelRegistry or pi-rpc's commands",
		);
	};
}

/** pi's `ModelRuntime` over pi-rpc's catalog and credentials. */
class ModelRuntime {
	constructor(registry) {
		this.registry = registry;
	}

	/**
	 * A runtime over pi-rpc's catalog and credentials. `authPath`,
	 * `modelsPath` or `credentials` naming other files or stores are refused:
	 * pi-rpc reads only its own.
	 */
	static async create(options = {}) {
		for (const key of ["authPath", "modelsPath", "credentials", "modelsStore", "modelsStorePath"]) {
			if (options?.[key] !== undefined && options[key] !== null) {
				throw new Error(`ModelRuntime.create({${key}}) is not available in pi-rpc's extension host: its models and credentials are pi-rpc's own`);
			}
		}
		return new ModelRuntime(services().modelRegistry());
	}

	getProviders() {
		const ids = [...new Set(this.registry.getAll().map((m) => m.provider))];
		return ids.map((id) => this.registry.getProvider(id)).filter(Boolean);
	}
	getProvider(providerId) {
		return this.registry.getProvider(providerId);
	}
	getModels(providerId) {
		const all = this.registry.getAll();
		return providerId === undefined ? all : all.filter((m) => m.provider === providerId);
	}
	getModel(providerId, modelId) {
		return this.registry.find(providerId, modelId);
	}
	getModelsOfType(type, providerId) {
		return this.registry.getModelsOfType(type, providerId) ?? [];
	}
	getModelOfType(type, providerId, modelId) {
		return this.registry.getModelOfType(type, providerId, modelId);
	}
	getAllModels(providerId) {
		return ["chat", "classifier", "image"].flatMap((type) => (type === "chat" ? this.getModels(providerId) : this.getModelsOfType(type, providerId)));
	}
	async getAvailableOfType(type, providerId) {
		return (await this.registry.getAvailableOfType(type, providerId)) ?? [];
	}
	async getAvailable(providerId) {
		const available = this.registry.getAvailable();
		return providerId === undefined ? available : available.filter((m) => m.provider === providerId);
	}
	async getAllAvailable(providerId) {
		const chat = await this.getAvailable(providerId);
		const others = await Promise.all(["classifier", "image"].map((type) => this.getAvailableOfType(type, providerId)));
		return [...chat, ...others.flat()];
	}
	getAvailableSnapshot() {
		return this.registry.getAvailable();
	}
	getError() {
		return this.registry.getError();
	}
	async refresh(options) {
		return this.registry.refresh(options);
	}
	getRegisteredProviderConfig(providerId) {
		return this.registry.getRegisteredProviderConfig(providerId);
	}
	getRegisteredProviderIds() {
		return this.registry.getRegisteredProviderIds();
	}
	getRegisteredNativeProvider(providerId) {
		return this.registry.getRegisteredNativeProvider(providerId);
	}
	isUsingOAuth(providerId) {
		return this.registry.isUsingOAuth({ provider: providerId });
	}
	isUsingSubscription(providerId) {
		return this.isUsingOAuth(providerId);
	}
	hasConfiguredAuth(providerId) {
		return this.registry.hasConfiguredAuth({ provider: providerId });
	}
	async getAuth(target) {
		return this.registry.getProviderAuth(providerOf(target));
	}
	async checkAuth(providerId) {
		const auth = await this.getAuth(providerId);
		return auth ? { ok: true } : undefined;
	}
	getProviderAuthStatus(providerId) {
		return this.registry.getProviderAuthStatus(providerId);
	}
	getCompatibilityRequestConfig(model) {
		return { headers: model?.headers };
	}
	stream(model, context, options) {
		return this.registry.stream(model, context, options);
	}
	complete(model, context, options) {
		return this.registry.complete(model, context, options);
	}
	streamSimple(model, context, options) {
		return this.registry.streamSimple(model, context, options);
	}
	completeSimple(model, context, options) {
		return this.registry.streamSimple(model, context, options).result();
	}
	classify(model, context, options) {
		return this.registry.classify(model, context, options);
	}
	generateImages(model, context, options) {
		return this.registry.generateImages(model, context, options);
	}
	registerProvider(providerId, config) {
		this.registry.registerProvider(providerId, config);
	}
	registerNativeProvider(provider) {
		this.registry.registerProvider(provider);
	}
	unregisterProvider(providerId) {
		this.registry.unregisterProvider(providerId);
	}
	registerVirtualModel(definition) {
		this.registry.registerVirtualModel(definition);
	}
	unregisterVirtualModel(providerId, modelId) {
		this.registry.unregisterVirtualModel(providerId, modelId);
	}
	async settleCredentialWrites() {}
}
for (const name of ["setRuntimeApiKey", "removeRuntimeApiKey", "listCredentials", "login", "logout", "streamDeferred", "fetchDeferred", "cancelDeferred"]) {
	ModelRuntime.prototype[name] = unavailable(name);
}

/** pi's synchronous `ModelRegistry` facade over a `ModelRuntime`. */
class ModelRegistry {
	constructor(runtime) {
		this.runtime = runtime;
	}
	refresh(options) {
		return this.runtime.refresh(options);
	}
	getError() {
		return this.runtime.getError();
	}
	getAll() {
		return [...this.runtime.getModels()];
	}
	getAvailable() {
		return [...this.runtime.getAvailableSnapshot()];
	}
	find(providerId, modelId) {
		return this.runtime.getModel(providerId, modelId);
	}
	findOfType(type, providerId, modelId) {
		return this.runtime.getModelOfType(type, providerId, modelId);
	}
	getModelsOfType(type, providerId) {
		return this.runtime.getModelsOfType(type, providerId);
	}
	getAvailableOfType(type, providerId, options) {
		return this.runtime.getAvailableOfType(type, providerId, options);
	}
	getModelOfType(type, providerId, modelId) {
		return this.runtime.getModelOfType(type, providerId, modelId);
	}
	hasConfiguredAuth(model) {
		return this.runtime.hasConfiguredAuth(model?.provider);
	}
	isUsingOAuth(model) {
		return this.runtime.isUsingOAuth(model?.provider);
	}
	async getApiKeyAndHeaders(model) {
		if (this.runtime.registry) return this.runtime.registry.getApiKeyAndHeaders(model);
		try {
			const resolved = await this.runtime.getAuth(model);
			if (!resolved) return { ok: false, error: `No API key found for "${model?.provider}"` };
			const auth = resolved.auth ?? {};
			return { ok: true, apiKey: auth.apiKey, headers: auth.headers, ...(auth.baseUrl ? { baseUrl: auth.baseUrl } : {}), env: resolved.env };
		} catch (error) {
			return { ok: false, error: error?.cause?.message ?? error?.message ?? String(error) };
		}
	}
	getProviderAuthStatus(providerId) {
		return this.runtime.getProviderAuthStatus(providerId);
	}
	getProvider(providerId) {
		return this.runtime.getProvider(providerId);
	}
	getProviderDisplayName(providerId) {
		return this.runtime.getProvider(providerId)?.name ?? providerId;
	}
	getProviderAuth(providerId) {
		return this.runtime.getAuth(providerId);
	}
	async getApiKeyForProvider(providerId) {
		try {
			return (await this.runtime.getAuth(providerId))?.auth?.apiKey;
		} catch {
			return undefined;
		}
	}
	stream(model, context, options) {
		return this.runtime.stream(model, context, options);
	}
	streamSimple(model, context, options) {
		return this.runtime.streamSimple(model, context, options);
	}
	complete(model, context, options) {
		return this.runtime.complete(model, context, options);
	}
	classify(model, context, options) {
		return this.runtime.classify(model, context, options);
	}
	generateImages(model, context, options) {
		return this.runtime.generateImages(model, context, options);
	}
	registerProvider(providerOrName, config) {
		if (typeof providerOrName === "string") {
			if (!config) throw new Error("Provider config is required when registering by name");
			this.runtime.registerProvider(providerOrName, config);
		} else {
			this.runtime.registerNativeProvider(providerOrName);
		}
	}
	unregisterProvider(providerId) {
		this.runtime.unregisterProvider(providerId);
	}
	registerVirtualModel(definition) {
		this.runtime.registerVirtualModel(definition);
	}
	unregisterVirtualModel(providerId, modelId) {
		this.runtime.unregisterVirtualModel(providerId, modelId);
	}
	getRegisteredProviderConfig(providerId) {
		return this.runtime.getRegisteredProviderConfig(providerId);
	}
	getRegisteredNativeProvider(providerId) {
		return this.runtime.getRegisteredNativeProvider(providerId);
	}
	getRegisteredProviderIds() {
		return this.runtime.getRegisteredProviderIds();
	}
}

module.exports = { ModelRuntime, ModelRegistry };
