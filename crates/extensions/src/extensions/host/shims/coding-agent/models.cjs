// pi-rpc extension host: pi's `ModelRuntime` and `ModelRegistry` for an
// extension using pi's SDK. pi 1.6.0's runtime owns a model catalog and the
// credentials; `ModelRuntime.create()` gives a new runtime over the agent
// directory's `models.json` and `auth.json` (and the environment), as pi's,
// `create({authPath, modelsPath})` one over those files (model-store.cjs):
// pi-rpc's catalog with them, not the running session's registrations or
// keys (`ctx.modelRegistry`, model-registry.mjs).
// Each runtime keeps its own runtime API keys (`setRuntimeApiKey`), which
// override its stored ones and no other runtime's (those of the session's
// runtime, `ctx.modelRegistry.runtime`, are the session's); `login` (API keys: the
// caller's `prompt`) stores the credential in the runtime's `auth.json`,
// `logout` removes it. `new ModelRegistry(runtime)` is pi's synchronous
// facade over a runtime. Model calls carry the runtime's own key; deferred
// responses go to the provider's own calls (deferred.cjs). A `credentials`
// store object (pi-ai's `CredentialStore`) takes the place of `auth.json`
// (credential-store.cjs). What is registered on a runtime (providers,
// virtual models) stays in that runtime, as pi's (`ownRegistrations`).

"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { storeRegistry, storedCredentials, storeCredential, removeCredential } = require("./model-store.cjs");
const { CredentialStoreBridge } = require("./credential-store.cjs");
const { refreshStoredOAuth } = require("./registration-refresh.cjs");
const { catalogStoreOf, withStoredCatalogs, modelNetworkEnabled } = require("./catalog-store.cjs");
const { AssistantMessageEventStream } = require("../ai/stream.cjs");
const deferred = require("./deferred.cjs");
const { ModelsError } = require("../ai/models.cjs");
const { VIRTUAL_API: VIRTUAL_MODEL_API } = require("./session-models.cjs");
const { apiKeyCredential } = require("./api-key-login.cjs");
const registeredOAuth = require("./extension-oauth.cjs");
const { oauthLoginInto, oauthCredential } = require("./oauth-login.cjs");

const providerOf = (target) => (typeof target === "string" ? target : target?.provider);
const agentDir = () => process.env.PI_CODING_AGENT_DIR || path.join(os.homedir(), ".pi", "agent");

/** pi's `ModelRuntime` over pi-rpc's catalog and credentials, or over other files. */
class ModelRuntime {
	/**
	 * `registry`: `ctx.modelRegistry`'s or one over other files; `authPath`:
	 * the `auth.json` its logins write; `ownStore`: whether the registry
	 * applies this runtime's keys itself (a registry over other files).
	 */
	constructor(registry, authPath = path.join(agentDir(), "auth.json"), runtimeKeys = new Map(), ownStore = false) {
		this.registry = registry;
		this.authPath = authPath;
		this.runtimeKeys = runtimeKeys;
		this.ownStore = ownStore;
	}

	/**
	 * A runtime over pi-rpc's catalog and credentials, or, given `authPath`
	 * or `modelsPath` (null: no models.json), over those files as pi reads
	 * them, or over a `credentials` store object (pi-ai's `CredentialStore`);
	 * a `modelsStore` / `modelsStorePath` catalog cache restored over it.
	 */
	static async create(options = {}) {
		const runtime = await ModelRuntime.open(options ?? {});
		// pi's cache of remote catalogs, restored as pi's runtime restores it when made (catalog-store.cjs).
		const modelsPath = options?.modelsPath === null ? null : path.resolve(options?.modelsPath ?? path.join(agentDir(), "models.json"));
		const catalogs = catalogStoreOf(options, modelsPath);
		// Read by the registrations' offline refresh (`refreshSources`).
		runtime.catalogStore = catalogs;
		if (catalogs) {
			const { registry, fetchCatalogs } = withStoredCatalogs(runtime.registry, catalogs, { catalogBaseUrl: options?.catalogBaseUrl });
			runtime.registry = registry;
			// pi's first refresh: from the network when asked (`allowModelNetwork`), within `modelRefreshTimeoutMs`.
			const allowNetwork = options?.allowModelNetwork === true && modelNetworkEnabled();
			const limit = allowNetwork && options?.modelRefreshTimeoutMs !== undefined ? AbortSignal.timeout(options.modelRefreshTimeoutMs) : undefined;
			const signal = limit && options?.signal ? AbortSignal.any([options.signal, limit]) : (limit ?? options?.signal);
			if (options?.refreshOnCreate !== false) await fetchCatalogs({ allowNetwork, signal });
		}
		return runtime;
	}
	/** The runtime `create` makes before any stored catalog is restored. */
	static async open(options) {
		const store = options?.credentials ?? undefined;
		// Naming no files, pi's runtime is a new one over the agent directory's files, not the running session's.
		const authPath = path.resolve(options.authPath ?? path.join(agentDir(), "auth.json"));
		const modelsPath = options.modelsPath === null ? null : path.resolve(options.modelsPath ?? path.join(agentDir(), "models.json"));
		const runtimeKeys = new Map();
		const catalogServer = { catalogBaseUrl: options.catalogBaseUrl };
		if (store === undefined) return new ModelRuntime(storeRegistry({ authPath, modelsPath }, runtimeKeys, catalogServer), authPath, runtimeKeys, true);
		// A caller's credential store (credential-store.cjs): read now, written by logins and logouts.
		const credentials = new CredentialStoreBridge(store);
		await credentials.load({ signal: options.signal });
		const registry = storeRegistry({ modelsPath, get credentials() { return credentials.entries; } }, runtimeKeys, catalogServer);
		const runtime = new ModelRuntime(registry, undefined, runtimeKeys, true);
		runtime.credentialStore = credentials;
		return runtime;
	}

	/** The key this runtime was given for `providerId` that its registry does not apply itself. */
	overlayKey(providerId) {
		return this.ownStore ? undefined : this.runtimeKeys.get(providerId);
	}

	/** pi's order: the built-in providers, native registrations, models.json's, config registrations, virtual-only. */
	getProviders() {
		const order = this.registry.getProviderIds?.();
		const ids = order ? [...order.builtin, ...order.others] : [...new Set(this.registry.getAll().map((m) => m.provider))];
		return [...new Set(ids)].map((id) => this.registry.getProvider(id)).filter(Boolean);
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
	/** pi's: the catalog's model of the id, unless it is virtual. */
	getPhysicalModel(providerId, modelId) {
		const model = this.getModel(providerId, modelId);
		return model && model.api !== VIRTUAL_MODEL_API ? model : undefined;
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
		const available = this.getAvailableSnapshot();
		return providerId === undefined ? available : available.filter((m) => m.provider === providerId);
	}
	async getAllAvailable(providerId) {
		const chat = await this.getAvailable(providerId);
		const others = await Promise.all(["classifier", "image"].map((type) => this.getAvailableOfType(type, providerId)));
		return [...chat, ...others.flat()];
	}
	getAvailableSnapshot() {
		const available = this.registry.getAvailable();
		if (this.ownStore || this.runtimeKeys.size === 0) return available;
		const keyed = this.registry.getAll().filter((m) => this.runtimeKeys.has(m.provider) && !available.some((a) => a.provider === m.provider && a.id === m.id));
		return [...available, ...keyed];
	}
	getError() {
		return this.registry.getError();
	}
	async refresh(options) {
		await this.credentialStore?.load({ signal: options?.signal });
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
		return this.overlayKey(providerId) !== undefined || this.registry.hasConfiguredAuth({ provider: providerId });
	}
	async getAuth(target) {
		const registered = await registeredOAuth.registeredAuth(this, providerOf(target));
		if (registered) return registered;
		// pi resolves request auth from the store as it is now, an expiring OAuth login refreshed first.
		if (this.credentialStore) await this.credentialStore.fresh(providerOf(target));
		const key = this.overlayKey(providerOf(target));
		if (key !== undefined) return { auth: { apiKey: key }, source: "stored credential" };
		return this.registry.getProviderAuth(providerOf(target));
	}
	async checkAuth(providerId) {
		const auth = await this.getAuth(providerId);
		return auth ? { ok: true } : undefined;
	}
	getProviderAuthStatus(providerId) {
		if (this.overlayKey(providerId) !== undefined) return { configured: true, source: "runtime" };
		const registered = registeredOAuth.registeredAuthStatus(this, providerId);
		if (registered) return registered;
		return this.registry.getProviderAuthStatus(providerId);
	}
	/** Use `apiKey` for `providerId` in this runtime, over its stored credential (the session's runtime: the session's requests). */
	async setRuntimeApiKey(providerId, apiKey) {
		this.runtimeKeys.set(providerId, apiKey);
		this.registry.setSessionRuntimeKey?.(providerId, apiKey);
		this.registry.forget?.();
	}
	async removeRuntimeApiKey(providerId) {
		this.runtimeKeys.delete(providerId);
		this.registry.setSessionRuntimeKey?.(providerId, undefined);
		this.registry.forget?.();
	}
	/** pi's `CredentialInfo`s: the stored ones (its auth.json's order), the runtime keys over them. */
	async listCredentials(options) {
		const stored = this.credentialStore ? await this.credentialStore.list(options) : storedCredentials(this.authPath);
		const entries = new Map(stored.map((entry) => [entry.providerId, entry]));
		for (const providerId of this.runtimeKeys.keys()) entries.set(providerId, { providerId, type: "api_key" });
		return [...entries.values()];
	}
	/**
	 * pi's `login(providerId, type, interaction)`, stored in this runtime's
	 * auth.json: an API key asked with the caller's `interaction.prompt` in
	 * pi's steps (api-key-login.cjs); an OAuth login run by pi-rpc's flow of
	 * the provider, its events and questions given to `interaction.notify`
	 * and `prompt`; refused as pi refuses a kind of login the provider lacks.
	 */
	async login(providerId, type, interaction) {
		try {
			return await this.signIn(providerId, type, interaction);
		} finally {
			// The catalog's answers (a provider's OAuth login among them) are read again.
			this.registry.forget?.();
		}
	}
	async signIn(providerId, type, interaction) {
		interaction?.signal?.throwIfAborted?.();
		// The OAuth login a registration of this runtime carries (extension-oauth.cjs).
		const registered = await registeredOAuth.registeredLogin(this, providerId, type, interaction);
		if (registered) return registered.value;
		const provider = this.getProvider(providerId);
		if (!provider) throw new ModelsError("provider", `Unknown provider: ${providerId}`);
		// A provider that only signs in by OAuth has no API-key login, one without OAuth no OAuth login (pi's refusal).
		const methods = this.loginMethods(providerId);
		if (!(type === "oauth" ? methods.oauth : methods.apiKey)) throw new ModelsError("auth", `${provider.name} does not support ${type} login`);
		if (type === "oauth") return this.oauthLogin(providerId, interaction);
		// pi's questions (api-key-login.cjs): the key, or the several of Bedrock, Vertex AI and Cloudflare.
		const credential = await apiKeyCredential(providerId, interaction);
		if (this.credentialStore) return this.credentialStore.write(providerId, credential, { signal: interaction?.signal });
		storeCredential(this.authPath, providerId, credential);
		return credential;
	}
	/** `{apiKey, oauth}`: the logins pi offers for `providerId` (OAuth: a flow of pi-rpc's). */
	loginMethods(providerId) {
		return this.registry.loginMethods?.(providerId) ?? { apiKey: true, oauth: false };
	}
	async oauthLogin(providerId, interaction) {
		if (!this.credentialStore) return oauthLoginInto(this.authPath, providerId, interaction);
		// pi-rpc's flow writes an auth.json: one of its own for this login, its credential then given to the store.
		const credential = await oauthCredential(providerId, interaction);
		return this.credentialStore.write(providerId, credential, { signal: interaction?.signal });
	}
	/** pi's `logout(providerId)`: the stored credential removed, and this runtime's key for it. */
	async logout(providerId) {
		if (this.credentialStore) await this.credentialStore.remove(providerId);
		else removeCredential(this.authPath, providerId);
		this.runtimeKeys.delete(providerId);
		this.registry.setSessionRuntimeKey?.(providerId, undefined);
		this.registry.forget?.();
	}
	getCompatibilityRequestConfig(model) {
		return { headers: model?.headers };
	}
	/**
	 * A call's options with this runtime's request auth, as pi's
	 * `prepareRequest` gives them: the caller's `apiKey` first, then this
	 * runtime's key (its runtime key, or its auth.json's over its
	 * models.json); its headers under the caller's. The default runtime
	 * without a key of its own leaves them to pi-rpc's registry.
	 */
	requestOptions(model, options) {
		const overlay = this.overlayKey(model?.provider);
		const auth = overlay !== undefined ? { apiKey: overlay } : this.ownStore ? this.registry.requestAuth(model) : undefined;
		if (!auth) return options;
		const headers = auth.headers || options?.headers ? { ...(auth.headers ?? {}), ...(options?.headers ?? {}) } : undefined;
		return { ...(options ?? {}), apiKey: options?.apiKey ?? auth.apiKey, ...(headers ? { headers } : {}) };
	}
	stream(model, context, options) {
		if (this.credentialStore) return this.withFreshCredential(model, options, () => this.registry.stream(model, context, this.requestOptions(model, options)));
		return this.registry.stream(model, context, this.requestOptions(model, options));
	}
	/** A call made once the store's credential of the model's provider was read again (and refreshed, credential-store.cjs). */
	withFreshCredential(model, options, call) {
		const out = new AssistantMessageEventStream();
		(async () => {
			try {
				await this.credentialStore.fresh(model?.provider, options?.signal);
				for await (const event of call()) {
					out.push(event);
					if (event?.type === "done" || event?.type === "error") break;
				}
			} catch (error) {
				// A store that fails (or a call that throws) ends the call with pi-ai's error result.
				const message = { role: "assistant", content: [], api: model?.api, provider: model?.provider, model: model?.id, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "error", errorMessage: error?.message ?? String(error), timestamp: Date.now() };
				out.push({ type: "error", reason: "error", error: message });
			}
			out.end();
		})();
		return out;
	}
	complete(model, context, options) {
		return this.stream(model, context, options).result();
	}
	streamSimple(model, context, options) {
		if (this.credentialStore) return this.withFreshCredential(model, options, () => this.registry.streamSimple(model, context, this.requestOptions(model, options)));
		return this.registry.streamSimple(model, context, this.requestOptions(model, options));
	}
	completeSimple(model, context, options) {
		return this.streamSimple(model, context, options).result();
	}
	/** pi's deferred responses (deferred.cjs): the provider's own `fetchDeferred` / `cancelDeferred`. */
	streamDeferred(model, handle, options) {
		return deferred.streamDeferred(this, model, handle, options);
	}
	async fetchDeferred(model, handle, options) {
		return this.streamDeferred(model, handle, options).result();
	}
	async cancelDeferred(model, handle, options) {
		return deferred.cancelDeferred(this, model, handle, options);
	}
	classify(model, context, options) {
		return this.registry.classify(model, context, options);
	}
	generateImages(model, context, options) {
		return this.registry.generateImages(model, context, options);
	}
	registerProvider(providerId, config) {
		// A provider of the catalog or models.json under the id (not one an extension registered) names it first, as in pi.
		let extensions = [];
		try {
			extensions = this.registry.getRegisteredProviderIds?.() ?? [];
		} catch {
			// Before the session pi-rpc's registry does not answer: the runtime's files alone name providers.
		}
		const baseName = extensions.includes(providerId) ? undefined : this.registry.getProvider(providerId)?.name;
		this.ownRegistrations().registerProviderByHand(providerId, config);
		registeredOAuth.rememberOAuth(this, providerId, config, baseName);
	}
	registerNativeProvider(provider) {
		this.ownRegistrations().registerProviderByHand(provider);
	}
	unregisterProvider(providerId) {
		this.ownRegistrations().unregisterProviderByHand(providerId);
		registeredOAuth.forgetOAuth(this, providerId);
	}
	registerVirtualModel(definition) {
		this.ownRegistrations().registerByHand(definition);
	}
	unregisterVirtualModel(providerId, modelId) {
		this.ownRegistrations().unregisterByHand(providerId, modelId);
	}
	/**
	 * What is registered on this runtime stays in it, as in pi (another
	 * runtime and the running session do not see it): a layer of
	 * session-models.cjs over its registry, made at the first registration
	 * (an SDK session's runtime: the session's models).
	 */
	ownRegistrations() {
		if (!this.own) {
			this.own = require("./session-models.cjs").createSessionModels({
				base: this.registry,
				extensions: () => [],
				context: () => undefined,
				sources: () => this.refreshSources(),
			});
			this.registry = this.own.registry;
		}
		return this.own;
	}
	/**
	 * pi's `resolveModel(model, messages, {reason, thinkingLevel, signal, failed, state})`:
	 * the router of the virtual model asked for one request, its answer a
	 * physical model with credentials at a clamped thinking level, and the
	 * router's `state`. An SDK session's runtime routes its extensions'
	 * models itself (session-models.cjs); otherwise pi-rpc asks the
	 * extension that registered the model, in its own process.
	 */
	async resolveModel(model, messages, options) {
		// A caller's runtime an SDK session was made with routes that session's virtual models too, as pi's (session-model-runtime.cjs).
		const resolved = await this.registry.resolveModel(model, messages, options ?? {});
		const { state, ...route } = resolved ?? {};
		return { ...route, state };
	}
	async settleCredentialWrites() {}
	/**
	 * What pi-ai's offline refresh gives a registration's `refreshModels`:
	 * the provider's credential (a runtime key first, as pi's
	 * `RuntimeCredentials`, then the caller's store or the runtime's
	 * auth.json) and its entry of the runtime's catalog store.
	 */
	refreshSources() {
		const catalogs = this.catalogStore ?? catalogStoreOf({}, path.join(agentDir(), "models.json"));
		return {
			credential: async (id) => {
				const key = this.runtimeKeys.get(id);
				if (key !== undefined) return { type: "api_key", key };
				if (this.credentialStore) return structuredClone(this.credentialStore.entries?.[id]);
				try {
					const entry = JSON.parse(fs.readFileSync(this.authPath, "utf8").replace(/^\uFEFF/, "") || "{}")?.[id];
					return entry && typeof entry === "object" ? entry : undefined;
				} catch {
					return undefined;
				}
			},
			stored: async (id) => catalogs.read(id),
			// pi-ai's refresh of an expired login before a network refresh, in the store it came from.
			refreshOAuth: async (id, oauth, signal) => {
				if (this.credentialStore) return this.credentialStore.refreshExpired(id, oauth, signal);
				return refreshStoredOAuth(this.authPath, id, oauth);
			},
		};
	}
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
		const key = this.runtime.overlayKey?.(model?.provider);
		if (key !== undefined) return { ok: true, apiKey: key };
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
