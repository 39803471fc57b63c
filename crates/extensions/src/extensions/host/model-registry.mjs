// pi-rpc extension host: `ctx.modelRegistry`, pi's ModelRegistry facade.
// Lists come from pi-rpc's catalog (`getAll`, `find`: every provider's chat
// models; `getModels`: those with credentials); model calls go through
// pi-rpc's providers with the request-time auth of the model's provider
// (`modelStream` with `registry: true`), as the agent's own requests do;
// provider facts and auth are answered by pi-rpc (`models` ops). The
// registry's own `register…` members are the extension's `pi.register…`
// (pi's registry and `pi` share one model runtime); a registration changed
// here goes out before the registry is read again, so it shows at once.

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const calls = require("./shims/ai/calls.cjs");
const { builtinProvider, configuredBuiltinProvider, isBuiltinProvider } = require("./shims/coding-agent/builtin-provider.cjs");
const { llamaProvider, LLAMA_PROVIDER_ID } = require("./shims/coding-agent/llama-provider.cjs");

/** A model as JSON (functions dropped). */
function plainModel(model) {
	return model === undefined ? null : JSON.parse(JSON.stringify(model));
}

/** The value of a `models` answer (`{}`: undefined). */
function valueOf(answer) {
	return answer?.value ?? undefined;
}

/**
 * The registry as pi's instance is: its members not its own keys (pi's are
 * its class's methods), its own key `runtime`, pi's `ModelRuntime` over it
 * (made when first read; the shim's, models.cjs, whose reads and calls are
 * the registry's).
 */
function asInstance(members) {
	const methods = {};
	for (const [name, value] of Object.entries(members)) Object.defineProperty(methods, name, { value, writable: true, configurable: true });
	const registry = Object.create(methods);
	let runtime;
	Object.defineProperty(registry, "runtime", {
		enumerable: true,
		get() {
			runtime ??= new (require("./shims/coding-agent/models.cjs").ModelRuntime)(registry);
			return runtime;
		},
	});
	return registry;
}

/**
 * `host.api()`: the current instance's `pi`; `host.providers()`: its
 * registered providers (`Providers`); `host.flushRegistration()` sends its
 * changed registration now.
 */
export function createModelRegistry(channel, host) {
	const flush = () => host.flushRegistration?.();
	const models = () => {
		flush();
		return channel.call("getModels").models;
	};
	const op = (name, ...args) => {
		flush();
		return valueOf(channel.call("models", { op: name, args }));
	};
	const request = async (name, ...args) => {
		flush();
		return valueOf(await channel.request("models", { op: name, args }));
	};
	/** A model call the `signal` of its options withdraws (pi-rpc then answers pi's "aborted" result). */
	const cancellable = async (name, signal, ...args) => {
		flush();
		const answer = channel.request("models", { op: name, args });
		const id = channel.lastRequestId();
		const onAbort = () => channel.send({ type: "cancel", id });
		if (signal?.aborted) onAbort();
		else signal?.addEventListener("abort", onAbort, { once: true });
		try {
			return valueOf(await answer);
		} finally {
			signal?.removeEventListener("abort", onAbort);
		}
	};
	/** A provider of chat, classifier or image models pi-rpc knows. */
	const knownProvider = (id) => {
		if (typeof id !== "string") return false;
		if (op("getProvider", id)) return true;
		try {
			return ["classifier", "image"].some((type) => (op("getModelsOfType", type, id) ?? []).length > 0);
		} catch {
			return false;
		}
	};
	/**
	 * pi's `ModelRuntime.classify` / `generateImages` checks before a call:
	 * the model's type, a classifier's image input, its provider. A failed
	 * check is pi's error result (`kind`: "classifier" or "image"); a model
	 * that is no object rejects, as pi's result of it cannot be made.
	 */
	const typedCall = async (name, kind, model, context, options) => {
		const failed = (error) => ({
			api: model.api,
			provider: model.provider,
			model: model.id,
			...(kind === "image" ? { output: [] } : { answers: {} }),
			stopReason: options?.signal?.aborted ? "aborted" : "error",
			errorMessage: error instanceof Error ? error.message : String(error),
			timestamp: Date.now(),
		});
		try {
			if ((model.type ?? "chat") !== kind) {
				throw new Error(`Model ${model.provider}/${model.id} is not ${kind === "image" ? "an image" : "a classifier"} model`);
			}
			if (kind === "classifier" && context.images?.length && !model.input.includes("image")) {
				throw new Error(`Model ${model.provider}/${model.id} does not accept image input`);
			}
			if (!knownProvider(model.provider)) throw new Error(`Unknown provider: ${model.provider}`);
		} catch (error) {
			return failed(error);
		}
		// A context the API cannot take is its error result, as pi's
		// implementation's failure is (pi-rpc's words for it).
		return cancellable(name, options?.signal, model, context).catch(failed);
	};
	// `streamSimple` routes a virtual model's request (pi's reason `direct`); `stream` does not.
	const stream = (model, context, options) => calls.viaRegistry(model, context, options, false);
	const streamSimple = (model, context, options) => calls.viaRegistry(model, context, options, true);

	// pi-ai's object of a built-in provider nothing configures, kept for the session (its restored catalog stays in it).
	const builtins = new Map();
	const sources = new Map();
	const sourceOf = (id) => {
		if (!sources.has(id)) {
			const chat = () => all().filter((m) => m.provider === id);
			const typed = (type) => op("getModelsOfType", type, id) ?? [];
			const classify = (model, context, options) => typedCall("classify", "classifier", model, context, options);
			const generateImages = (model, context, options) => typedCall("generateImages", "image", model, context, options);
			sources.set(id, { chat, typed, calls: { classify, generateImages } });
		}
		return sources.get(id);
	};
	const builtin = (id) => {
		if (!builtins.has(id)) builtins.set(id, builtinProvider(id, sourceOf(id)));
		return builtins.get(id);
	};

	// pi's own llama.cpp provider, while its built-in extension is on (pi-rpc lists it among the registered providers).
	let llama;
	const llamaOn = () => (op("getRegisteredProviderIds") ?? []).includes(LLAMA_PROVIDER_ID);
	const llamaOf = () => (llama ??= llamaProvider(sourceOf(LLAMA_PROVIDER_ID)));

	/** pi-ai's `Provider` of `id`: a built-in one's as pi-ai has it (composed with its configuration); another's facts, chat models, and calls through pi-rpc. */
	const provider = (id) => {
		if (id === LLAMA_PROVIDER_ID && !registered(id) && llamaOn()) return llamaOf();
		const facts = op("getProvider", id);
		if (isBuiltinProvider(id) && !facts?.configured) return builtin(id);
		if (isBuiltinProvider(id) && !registered(id)?.native) return configuredBuiltinProvider(id, facts.config ?? {}, builtin(id), sourceOf(id));
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

	/**
	 * pi's `getAll()`: the catalog as pi-rpc last listed it to this host,
	 * asked again with its revision; pi-rpc sends the ~1,700 models only
	 * when they changed since (a registration, a refresh, a login), so a
	 * model keeps its object until then, as in pi's snapshot.
	 */
	let listed = { revision: null, models: [] };
	const all = () => {
		const answer = op("getAll", listed.revision);
		if (Array.isArray(answer)) return answer;
		if (answer?.models) listed = { revision: answer.revision, models: answer.models };
		return [...listed.models];
	};

	/** Another extension's registration of `id` (pi's runtime is shared): `{native, config}`. */
	const registered = (id) => op("getRegisteredProvider", id);

	const members = {
		// pi re-reads models.json; a broken one is `getError()`'s, and its providers are left out.
		refresh: async () => {
			await request("refresh");
			return { aborted: false, errors: new Map() };
		},
		getError: () => op("getError"),
		getAll: all,
		getAvailable: () => models(),
		find: (providerId, id) => op("find", providerId, id),
		getProvider: provider,
		// pi's order of `getProviders()`: `{builtin, others}` (pi-rpc's own op), pi's llama.cpp first of the others.
		getProviderIds: () => {
			const order = op("getProviderIds");
			if (!order || !llamaOn()) return order;
			return { builtin: order.builtin, others: [LLAMA_PROVIDER_ID, ...order.others.filter((id) => id !== LLAMA_PROVIDER_ID)] };
		},
		getProviderDisplayName: (id) => provider(id)?.name ?? id,
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
		classify: (model, context, options) => typedCall("classify", "classifier", model, context, options),
		generateImages: (model, context, options) => typedCall("generateImages", "image", model, context, options),
		getProviderAuthStatus: (id) => op("getProviderAuthStatus", id),
		// pi-rpc's own: the key its runtime's `setRuntimeApiKey` sets (undefined: removed) is the session's.
		setSessionRuntimeKey: (id, key) => op("setRuntimeKey", id, key ?? null),
		// pi-rpc's own: `{apiKey, oauth}`, the logins pi offers for the provider (ModelRuntime.login).
		loginMethods: (id) => op("loginMethods", id),
		async getApiKeyAndHeaders(model) {
			// This extension's native provider: its own `auth.apiKey.resolve()` (key, headers, baseUrl, env), as pi asks it.
			const own = host.providers()?.byName.get(model?.provider);
			if (own && !own.legacy && typeof own.provider?.auth?.apiKey?.resolve === "function") {
				let resolved;
				try {
					resolved = await host.providers().resolveAuth(model.provider, undefined, true);
				} catch (error) {
					return { ok: false, error: error?.cause?.message ?? error?.message ?? String(error) };
				}
				if (resolved?.auth) {
					const auth = resolved.auth;
					const headers = auth.headers || model.headers ? { ...(auth.headers ?? {}), ...(model.headers ?? {}) } : undefined;
					return { ok: true, apiKey: auth.apiKey, headers, ...(auth.baseUrl ? { baseUrl: auth.baseUrl } : {}), env: resolved.env };
				}
			}
			const answer = op("getApiKeyAndHeaders", plainModel(model));
			if (!answer?.ok) return { ok: false, error: answer?.error ?? `No API key found for "${model?.provider}"` };
			// As pi: a resolved auth has its key, headers and environment (its credential's); without one, the configured headers.
			return answer.auth ? { ok: true, apiKey: answer.apiKey, headers: answer.headers, env: answer.env } : { ok: true, headers: answer.headers };
		},
		registerProvider(nameOrProvider, config) {
			if (typeof nameOrProvider === "string" && !config) throw new Error("Provider config is required when registering by name");
			host.api().registerProvider(nameOrProvider, config);
		},
		unregisterProvider: (id) => host.api().unregisterProvider(id),
		registerVirtualModel: (definition) => host.api().registerVirtualModel(definition),
		unregisterVirtualModel: (providerId, id) => host.api().unregisterVirtualModel(providerId, id),
		// pi's `ModelRuntime.resolveModel`: the extension that registered the virtual model (this one or another) routes it.
		resolveModel: (model, messages, { reason, thinkingLevel, signal, failed, state } = {}) =>
			cancellable("resolveModel", signal, plainModel(model), plainModel(messages ?? []), { reason, thinkingLevel, ...(failed ? { failed: plainModel(failed) } : {}), ...(state !== undefined ? { state: plainModel(state) } : {}) }),
		// This extension's own registration with its functions; another
		// extension's as pi-rpc has it (its config's data; a native provider
		// as `getProvider` gives it).
		getRegisteredProviderConfig(id) {
			const entry = host.providers()?.byName.get(id);
			if (entry) return entry.legacy ? entry.config : undefined;
			const other = registered(id);
			return other && !other.native && other.config ? other.config : undefined;
		},
		getRegisteredNativeProvider(id) {
			const entry = host.providers()?.byName.get(id);
			if (entry) return entry.legacy ? undefined : entry.provider;
			return registered(id)?.native || (id === LLAMA_PROVIDER_ID && llamaOn()) ? provider(id) : undefined;
		},
		getRegisteredProviderIds: () => op("getRegisteredProviderIds") ?? [],
	};
	return asInstance(members);
}
