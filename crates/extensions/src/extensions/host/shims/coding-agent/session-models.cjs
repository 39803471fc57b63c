// pi-rpc extension host: the models an SDK session's own extensions
// register. In pi 1.6.0 a sub-session extension's `pi.registerProvider` /
// `pi.registerVirtualModel` go to the sub-session's model runtime: its
// `modelRegistry` lists them, `session.setModel` takes them and the
// session's requests use them (a virtual model routed before each request,
// its router state kept on the branch). pi-rpc keeps each registration with
// the extension's `pi` (api.mjs: `providers`, `virtualModels`); this module
// lays them over the session's registry (`ctx.modelRegistry`'s, or the given
// `modelRuntime`'s) without telling pi-rpc's own session of them. A
// registered provider's requests go out through pi-rpc's providers (the
// `modelStream` request, with the model as registered: its API, base URL,
// the provider's key and headers), or, when it has a stream function of its
// own, through that function here, as pi calls it in process. The same
// layer holds what is registered on a `ModelRuntime` by hand (models.cjs
// `ownRegistrations`), and what a session's extensions register into a
// caller's runtime (session-model-runtime.cjs).

"use strict";

const calls = require("../ai/calls.cjs");
const { lib } = require("./text.cjs");
const { clampThinkingLevel } = require("../ai/models.cjs");
const { createTypedModels } = require("./session-typed-models.cjs");
const { services } = require("../host-services.cjs");
const { registeredAuthStatus, registeredAuth, registeredProvider } = require("./registered-provider.cjs");
const { createKeptRegistrations } = require("./kept-registrations.cjs");
const { createRegistrationRefresh } = require("./registration-refresh.cjs");
const { modelNetworkEnabled } = require("./catalog-store.cjs");

/** The API of a virtual catalog entry (pi's `VIRTUAL_MODEL_API`). */
const VIRTUAL_API = "pi-virtual";
/** The custom entry that holds a router's state on the branch (pi's name). */
const STATE_ENTRY = "pi.virtual-model-state";
const LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];
const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

const key = (provider, id) => `${provider}\0${id}`;
/** A registry that is such a layer (another session's over the same runtime): its kept registrations. */
const LAYER = Symbol("pi-rpc.session-models");
/** pi's words for a context of an extension that was reloaded away. */
const STALE =
	"This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx after ctx.newSession(), ctx.fork(), ctx.switchSession(), or ctx.reload(). For newSession, fork, and switchSession, move post-replacement work into withSession and use the ctx passed to withSession. For reload, do not use the old ctx after await ctx.reload().";
/** The context a router of a reloaded extension is given, as pi's invalidated runner's: each member throws pi's error. */
const staleContext = () =>
	new Proxy(
		{},
		{
			get() {
				throw new Error(STALE);
			},
		},
	);

/** pi's catalog entry of a virtual model. */
function virtualEntry(definition) {
	const levels = definition.thinkingLevels ?? ["off"];
	const thinkingLevelMap = Object.fromEntries(LEVELS.map((level) => [level, levels.includes(level) ? level : null]));
	return {
		id: definition.id,
		name: definition.name,
		api: VIRTUAL_API,
		provider: definition.provider,
		baseUrl: "",
		reasoning: levels.some((level) => level !== "off"),
		thinkingLevelMap,
		input: definition.input ?? ["text", "image"],
		cost: { ...ZERO_COST },
		contextWindow: definition.contextWindow ?? 0,
		maxTokens: definition.maxTokens ?? 0,
	};
}

/**
 * A provider's models as pi's provider composer makes them from an
 * extension's registration: each listed model with the provider's `api`
 * and `baseUrl` where it names none; without a list, the base catalog's
 * models of that provider at the registration's `baseUrl`.
 */
function providerModels(name, config, baseModels) {
	if (!Array.isArray(config?.models)) {
		const models = baseModels();
		return config?.baseUrl ? models.map((m) => ({ ...m, baseUrl: config.baseUrl })) : models;
	}
	return config.models
		.filter((m) => (m?.type ?? "chat") === "chat")
		.map((m) => ({ ...m, api: m.api ?? config.api, provider: name, baseUrl: m.baseUrl ?? config.baseUrl, headers: undefined }));
}

/** pi's config value (`$VAR` / `${VAR}` templates, `!command`), resolved by pi-rpc as models.json's are. */
function configValue(value) {
	if (typeof value !== "string" || !value) return undefined;
	return lib("resolveConfigValue", value) ?? undefined;
}

/** The latest successful response among `messages` (its model is physical). */
function latestResponse(messages) {
	for (let i = messages.length - 1; i >= 0; i--) {
		const m = messages[i];
		if (m?.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted") return m;
	}
	return undefined;
}

/** The router state the branch stores for `provider/id`. */
function storedState(branch, provider, modelId) {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "custom" && e.customType === STATE_ENTRY && e.data?.provider === provider && e.data.modelId === modelId) return e.data.state;
	}
	return undefined;
}

/**
 * The session's models: `base` (a registry facade), with what the
 * extensions of `extensions()` registered laid over it; `context()` is the
 * runner's extension context a router is given; `sources()` the runtime's
 * stored credentials and catalogs for the registrations' offline refresh
 * (registration-refresh.cjs; the agent directory's without it).
 */
function createSessionModels({ base, extensions, context, sources }) {
	/** Virtual models registered by hand on the session's `modelRuntime` (session-model-runtime.cjs); their routers get no context, as pi's. */
	const byHand = new Map();
	/** Providers registered by hand on the runtime (pi's `ModelRuntime.registerProvider` / `registerNativeProvider`), kept as `pi.registerProvider` keeps them. */
	let handProviders;
	/**
	 * What the extensions registered, kept as pi's runtime keeps it: an
	 * extension reloaded or disposed leaves its registrations in, one it
	 * unregistered goes; a config form registered again (by another
	 * extension, a reloaded one, or another session over the same runtime)
	 * merges its defined fields over the kept one (registrations.cjs).
	 */
	const kept = createKeptRegistrations((name) => (base[LAYER] ? base.getRegisteredProviderConfig(name) : undefined), base[LAYER]);
	/** The extensions loaded now (a reload replaces them). */
	let live = new Set();
	/** pi's offline refresh of the registrations (made below, once the registry is). */
	let refresher;
	/** The registrations in pi's order (a later one replaces an earlier one of the same name), then those made by hand. */
	const registrations = () => {
		const current = kept.update(extensions() ?? []);
		if (current.changed) refresher?.schedule();
		const { providers, virtual } = current;
		live = current.live;
		for (const [name, entry] of handProviders?.byName ?? []) providers.set(name, { ...entry, owner: { providers: handProviders } });
		for (const [name, definition] of byHand) virtual.set(name, definition);
		return { providers, virtual };
	};
	/** Every chat model: the base catalog with the registered providers' models and the virtual ones. */
	const catalog = () => {
		const { providers, virtual } = registrations();
		const all = base.getAll();
		const own = [];
		for (const [name, entry] of providers) own.push(...providerModels(name, entry.config, () => all.filter((m) => m.provider === name)));
		const virtualModels = [...virtual.values()].map(virtualEntry);
		const replaced = new Set([...providers.keys()]);
		const taken = new Set([...own, ...virtualModels].map((m) => key(m.provider, m.id)));
		return [...all.filter((m) => !replaced.has(m.provider) && !taken.has(key(m.provider, m.id))), ...own, ...virtualModels];
	};
	const ownModel = (provider, id) => {
		const { providers, virtual } = registrations();
		if (virtual.has(key(provider, id))) return { virtual: virtual.get(key(provider, id)) };
		if (!providers.has(provider)) return undefined;
		const entry = providers.get(provider);
		const model = providerModels(provider, entry.config, () => base.getAll().filter((m) => m.provider === provider)).find((m) => m.id === id);
		return model ? { entry, model } : undefined;
	};
	const find = (provider, id) => {
		const own = ownModel(provider, id);
		if (own) return own.virtual ? virtualEntry(own.virtual) : own.model;
		if (registrations().providers.has(provider)) return undefined;
		return base.find(provider, id);
	};
	/** A registered provider's key: its own (config or native `auth`), else the base registry's for the provider. */
	const requestAuth = async (entry, model) => {
		if (entry.legacy !== false) {
			const apiKey = configValue(entry.config?.apiKey);
			if (apiKey) return { apiKey, headers: entry.config?.headers };
		} else if (typeof entry.provider?.auth?.apiKey?.resolve === "function") {
			const resolved = await entry.owner.providers.resolveKey(entry.name, undefined);
			if (resolved?.apiKey) return resolved;
		}
		const fallback = await base.getApiKeyAndHeaders?.(model);
		return fallback?.ok ? { apiKey: fallback.apiKey, headers: { ...(fallback.headers ?? {}), ...(entry.config?.headers ?? {}) } } : { headers: entry.config?.headers };
	};
	const configured = (provider) => {
		const { providers, virtual } = registrations();
		if ([...virtual.values()].some((d) => d.provider === provider) && !providers.has(provider)) return true;
		const entry = providers.get(provider);
		if (!entry) return undefined;
		if (entry.legacy !== false ? configValue(entry.config?.apiKey) || entry.oauth : entry.config?.apiKey || entry.provider?.auth?.apiKey) return true;
		return base.hasConfiguredAuth?.({ provider }) === true;
	};

	/** A stream that ends at once with `error` (pi-ai's failed request). */
	const failedStream = (model, error) => {
		const { AssistantMessageEventStream } = require("../ai/stream.cjs");
		const stream = new AssistantMessageEventStream();
		const message = {
			role: "assistant",
			content: [],
			api: model?.api,
			provider: model?.provider,
			model: model?.id,
			usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { ...ZERO_COST, total: 0 } },
			stopReason: "error",
			errorMessage: error instanceof Error ? error.message : String(error),
			timestamp: Date.now(),
		};
		stream.push({ type: "error", reason: "error", error: message });
		stream.end?.(message);
		return stream;
	};
	/** A stream whose events come from the promise of another stream. */
	const deferredStream = (model, make) => {
		const { AssistantMessageEventStream } = require("../ai/stream.cjs");
		const out = new AssistantMessageEventStream();
		(async () => {
			let inner;
			try {
				inner = await make();
			} catch (error) {
				inner = failedStream(model, error);
			}
			try {
				for await (const event of inner) {
					out.push(event);
					if (event?.type === "done" || event?.type === "error") break;
				}
			} catch (error) {
				for await (const event of failedStream(model, error)) out.push(event);
			}
			out.end();
		})();
		return out;
	};

	/** A registered provider's model call: its own stream function, else pi-rpc's provider of the model's API. */
	const ownStream = (entry, model, context, options = {}) =>
		deferredStream(model, async () => {
			const auth = await requestAuth(entry, model);
			const headers = auth.headers || options.headers ? { ...(auth.headers ?? {}), ...(options.headers ?? {}) } : undefined;
			const callOptions = { ...options, apiKey: options.apiKey ?? auth.apiKey, ...(headers ? { headers } : {}) };
			const target = auth.baseUrl ? { ...model, baseUrl: auth.baseUrl } : model;
			if (typeof entry.streamSimple === "function" && (entry.legacy === false || entry.config?.api === model.api)) {
				// The session's prompt travels as its system message; pi's context names no other.
				const { systemPrompt, ...rest } = context ?? {};
				return entry.streamSimple(target, systemPrompt ? context : rest, callOptions);
			}
			return calls.viaPiRpc(target, context, callOptions);
		});

	/** pi's keyless provider of virtual models only (none without them): it lists them and streams none unrouted. */
	const virtualOnlyProvider = (id, definitions) => {
		if (definitions.length === 0) return undefined;
		const unrouted = (model) => failedStream(model, new Error(`Virtual model ${model?.provider}/${model?.id} must be routed before streaming`));
		return {
			id,
			name: id,
			auth: { apiKey: { name: "Virtual model", resolve: async () => ({ auth: {}, source: "virtual" }) } },
			getModels: () => definitions.map(virtualEntry),
			stream: unrouted,
			streamSimple: unrouted,
		};
	};

	/**
	 * pi's `resolveModel`: a virtual model's router asked for one request
	 * (`reason`), its answer checked (a physical model with credentials) and
	 * its thinking level clamped to that model.
	 */
	const route = async (model, messages, { reason, thinkingLevel, signal, state, failed }) => {
		const definition = registrations().virtual.get(key(model.provider, model.id));
		const name = `Virtual model ${model.provider}/${model.id}`;
		if (!definition) throw new Error(`${name} is not registered.`);
		const physical = (provider, id) => {
			const m = find(provider, id);
			return m && m.api !== VIRTUAL_API ? m : undefined;
		};
		const latest = latestResponse(messages);
		const previousModel = latest && physical(latest.provider, latest.model);
		// A retry's failed answer names the physical model that gave it.
		const failedModel = failed && physical(failed.provider, failed.model);
		const answer = await definition.route(
			{
				reason,
				thinkingLevel,
				signal,
				state,
				model,
				previous: previousModel && { model: previousModel, thinkingLevel: latest.thinkingLevel },
				failed: failedModel && { model: failedModel, thinkingLevel: failed.thinkingLevel, message: failed },
				messages,
			},
			byHand.get(key(model.provider, model.id)) === definition ? undefined : kept.ownerLive(key(model.provider, model.id), live) ? context() : staleContext(),
		);
		const routed = `${name} routed to ${answer?.model?.provider}/${answer?.model?.id}`;
		const target = answer?.model && physical(answer.model.provider, answer.model.id);
		if (!target) throw new Error(`${routed}, which is not a physical model.`);
		if (!registry.hasConfiguredAuth(target)) throw new Error(`${routed}, which has no credentials.`);
		return { model: target, thinkingLevel: clampThinkingLevel(target, answer.thinkingLevel ?? "off"), state: answer.state };
	};

	/** The model call of `model`: a registered one's own, a virtual one routed (`direct`), else `fallback`'s. */
	const streamWith = (fallback) => (model, context, options) => {
		const own = model && ownModel(model.provider, model.id);
		if (own?.virtual) {
			return deferredStream(model, async () => {
				const routed = await route(model, context?.messages ?? [], { reason: "direct", thinkingLevel: options?.reasoning ?? "off", signal: options?.signal });
				return streamWith(fallback)(routed.model, context, { ...options, reasoning: routed.thinkingLevel === "off" ? undefined : routed.thinkingLevel });
			});
		}
		if (own) return ownStream(own.entry, model, context, options);
		return fallback(model, context, options);
	};

	/** `models`' entries of `providerId` (or all) as pi's chat models of a type: the registered ones as registered, the others as the base lists them. */
	const chatOfType = (models, providerId) => {
		const listed = new Map((base.getModelsOfType("chat", providerId) ?? []).map((m) => [key(m.provider, m.id), m]));
		const mine = models.filter((m) => providerId === undefined || m.provider === providerId);
		return mine.map((m) => (ownModel(m.provider, m.id) ? m : (listed.get(key(m.provider, m.id)) ?? m)));
	};
	const typed = createTypedModels({ base, registrations, configured: (provider) => configured(provider) ?? base.hasConfiguredAuth?.({ provider }) === true, requestAuth });
	const registry = Object.create(base);
	Object.assign(registry, {
		// What this layer keeps, its extensions' live registrations followed first.
		[LAYER]: {
			providerSeq: (name) => (registrations(), kept.providerSeq(name)),
			virtualSeq: (id) => (registrations(), kept.virtualSeq(id)),
		},
		find,
		getAll: () => catalog(),
		getAvailable: () => {
			const { providers } = registrations();
			const own = catalog().filter((m) => providers.has(m.provider) || m.api === VIRTUAL_API);
			const taken = new Set(own.map((m) => key(m.provider, m.id)));
			const kept = base.getAvailable().filter((m) => !providers.has(m.provider) && !taken.has(key(m.provider, m.id)));
			return [...kept, ...own.filter((m) => configured(m.provider))];
		},
		hasConfiguredAuth: (model) => configured(model?.provider) ?? base.hasConfiguredAuth(model),
		getProviderDisplayName: (id) => registrations().providers.get(id)?.config?.name ?? base.getProviderDisplayName?.(id) ?? id,
		streamSimple: streamWith((m, c, o) => base.streamSimple(m, c, o)),
		stream: streamWith((m, c, o) => base.stream(m, c, o)),
		complete: (model, context, options) => registry.stream(model, context, options).result(),
		// pi's chat models of a type are the session's catalog (its registered and virtual models among them).
		// Classifier and image models: the registered providers' laid over the base's, their calls their own (session-typed-models.cjs).
		getModelsOfType: (type, providerId) => (type === "chat" ? chatOfType(catalog(), providerId) : typed.getModelsOfType(type, providerId)),
		getAvailableOfType: async (type, providerId) => (type === "chat" ? chatOfType(registry.getAvailable(), providerId) : typed.getAvailableOfType(type, providerId)),
		classify: typed.classify,
		generateImages: typed.generateImages,
		getModelOfType: (type, providerId, id) => registry.getModelsOfType(type, providerId)?.find((m) => m.id === id),
		findOfType: (type, providerId, id) => registry.getModelOfType(type, providerId, id),
		// pi's runtime answers for a provider registered on it from the registration (registered-provider.cjs).
		getProvider: (id) => {
			const { providers, virtual } = registrations();
			const entry = providers.get(id);
			if (!entry) return base.getProvider?.(id) ?? virtualOnlyProvider(id, [...virtual.values()].filter((d) => d.provider === id));
			const calls = { stream: registry.stream, streamSimple: registry.streamSimple, classify: registry.classify, generateImages: registry.generateImages };
			const models = () => catalog().filter((m) => m.provider === id);
			const allModels = () => [...models(), ...["classifier", "image"].flatMap((type) => typed.getModelsOfType(type, id) ?? [])];
			// A refresh the caller publishes replaces the registration's models, as pi's composed provider keeps them.
			const keepModels = (list) => {
				entry.config = { ...entry.config, models: list };
				const own = handProviders?.byName?.get(id);
				if (own?.legacy && entry.owner?.providers === handProviders) own.config = { ...own.config, models: list };
			};
			return registeredProvider(entry, id, { base: base.getProvider?.(id), models, allModels, calls, keepModels });
		},
		// pi's provider order: built-in, native registrations, models.json's, config registrations, providers of virtual models only.
		getProviderIds: () => {
			const below = base.getProviderIds?.() ?? { builtin: [], others: [...new Set(base.getAll().map((m) => m.provider))] };
			const { providers, virtual } = registrations();
			const known = new Set([...below.builtin, ...below.others]);
			const added = (native) => [...providers].filter(([name, entry]) => !known.has(name) && (entry.legacy === false) === native).map(([name]) => name);
			const virtualOnly = [...new Set([...virtual.values()].map((d) => d.provider))].filter((p) => !known.has(p) && !providers.has(p));
			return { builtin: [...below.builtin, ...added(true)], others: [...below.others, ...added(false), ...virtualOnly] };
		},
		getProviderAuthStatus: (id) => {
			const below = base.getProviderAuthStatus?.(id);
			// pi: a runtime key or a stored credential first, then the registration's key, then the environment's.
			if (below?.source === "runtime" || below?.source === "stored") return below;
			return registeredAuthStatus(registrations().providers.get(id)) ?? below;
		},
		getProviderAuth: async (id) => registeredAuth(registrations().providers.get(id), id) ?? base.getProviderAuth?.(id),
		// pi's runtime's registrations: the ones laid here (the config form's merged config; a native provider), then the registry's below.
		getRegisteredProviderIds: () => [...new Set([...(base.getRegisteredProviderIds?.() ?? []), ...registrations().providers.keys()])],
		getRegisteredProviderConfig: (id) => {
			const entry = registrations().providers.get(id);
			return entry ? (entry.legacy ? entry.config : undefined) : base.getRegisteredProviderConfig?.(id);
		},
		getRegisteredNativeProvider: (id) => {
			const entry = registrations().providers.get(id);
			return entry ? (entry.legacy ? undefined : entry.provider) : base.getRegisteredNativeProvider?.(id);
		},
		// pi's `ModelRuntime.resolveModel`: the session's own virtual models routed here, others by the registry below (pi-rpc's: their extension's process).
		resolveModel: async (model, messages, options = {}) => {
			if (ownModel(model?.provider, model?.id)?.virtual) return route(model, messages ?? [], options);
			const below = base.resolveModel ? base : base.runtime;
			if (typeof below?.resolveModel === "function") return below.resolveModel(model, messages, options);
			throw new Error(`Virtual model ${model?.provider}/${model?.id} is not registered.`);
		},
	});
	/** pi's `registerVirtualModel` on the session's runtime: its checks, then the session's until unregistered. */
	const registerByHand = (definition) => {
		const provider = definition?.provider;
		const id = definition?.id;
		if (!String(provider ?? "").trim() || !String(id ?? "").trim()) throw new Error("Virtual model provider and id must not be empty.");
		const existing = find(provider, id);
		if (existing && existing.api !== VIRTUAL_API) throw new Error(`Virtual model ${provider}/${id} conflicts with a physical model.`);
		byHand.set(key(provider, id), definition);
		refresher.schedule();
	};
	const unregisterByHand = (provider, id) => {
		if (byHand.delete(key(provider, id))) refresher.schedule();
	};
	/** pi's `registerProvider(id, config)` / `registerNativeProvider(provider)` on the runtime: kept here, as the runtime's own. */
	const registerProviderByHand = (nameOrProvider, config) => {
		if (!handProviders) {
			const { extensionHost, hello } = services();
			handProviders = new extensionHost.Providers(() => {}, { agentDir: hello?.agentDir, offline: hello?.offline, configRefresh: false });
		}
		handProviders.register(nameOrProvider, config);
		refresher.schedule();
	};
	const unregisterProviderByHand = (name) => {
		handProviders?.unregister(name);
		refresher.schedule();
	};
	// pi's offline refresh of the registrations' own `refreshModels` after each change and at `refresh()` (registration-refresh.cjs).
	refresher = createRegistrationRefresh({
		ids: () => [...registrations().providers].filter(([, e]) => e.legacy !== false && typeof e.config?.refreshModels === "function").map(([id]) => id),
		providerOf: (id) => registry.getProvider(id),
		sources,
	});
	registry.refresh = async (options) => {
		const result = await base.refresh?.(options);
		// pi's runtime refresh uses the network unless told not to (or offline).
		const network = (options?.allowNetwork ?? modelNetworkEnabled()) && modelNetworkEnabled() ? { force: options?.force } : undefined;
		await refresher.run(options?.signal, network);
		return result ?? { aborted: false, errors: new Map() };
	};

	/**
	 * pi's request preparation for a virtual selection, on `session`'s agent:
	 * the router asked before each request (`retry` when a failed answer is
	 * asked again, its answer as `failed`; `user` when the user wrote since
	 * the last response; else `continuation`), a changed state appended to
	 * the branch (`entry_appended` told), the branch compacted first when it
	 * is over the threshold of the model the router named (pi checks a
	 * virtual selection here, session-compaction.cjs), the request sent to
	 * that model, the selection left in place.
	 */
	const installRouting = (session) => {
		const agent = session.agent;
		const previousPrepare = agent.prepareRequest;
		// The physical model a virtual selection's answer came from (its limits are that model's).
		session._physicalModel = (provider, id) => {
			const m = find(provider, id);
			return m && m.api !== VIRTUAL_API ? m : undefined;
		};
		// The model a summary is written by (pi's `_getSummarizationRequestAuth`): a virtual selection routed once, `direct`.
		session._summaryTarget = async (signal) => {
			const model = session.model;
			if (!model || model.api !== VIRTUAL_API || !ownModel(model.provider, model.id)?.virtual) return { model, thinkingLevel: session.thinkingLevel };
			const messages = await agent.convertToLlm(session.messages);
			const routed = await route(model, messages, { reason: "direct", thinkingLevel: session.thinkingLevel, signal });
			return { model: routed.model, thinkingLevel: routed.thinkingLevel };
		};
		agent.prepareRequest = async (request, signal) => {
			// A failed answer being retried (session-retry.cjs, session-compaction.cjs), for this request only.
			const failed = session._failedResponse;
			session._failedResponse = undefined;
			// The selection, not the request's model: the loop keeps the last routed model for its next request.
			const selected = { model: agent.state.model, thinkingLevel: agent.state.thinkingLevel };
			const previous = await previousPrepare?.({ ...request, ...selected }, signal);
			let context = previous?.context ?? request.context;
			const model = previous?.model ?? selected.model;
			const thinkingLevel = previous?.thinkingLevel ?? selected.thinkingLevel;
			if (!model || model.api !== VIRTUAL_API || !ownModel(model.provider, model.id)?.virtual) return { ...previous, context, model, thinkingLevel };
			const lastResponse = context.messages.findLastIndex((m) => m.role === "assistant");
			const userTurn = context.messages.slice(lastResponse + 1).some((m) => m.role === "user");
			const state = storedState(session.sessionManager.getBranch(), model.provider, model.id);
			const messages = await agent.convertToLlm(context.messages);
			const reason = failed ? "retry" : userTurn ? "user" : "continuation";
			const routed = await route(model, messages, { reason, thinkingLevel, signal, state, failed });
			if (routed.state !== undefined && routed.state !== state) {
				const id = session.sessionManager.appendCustomEntry(STATE_ENTRY, { provider: model.provider, modelId: model.id, state: routed.state });
				const entry = session.sessionManager.getEntry(id);
				if (entry) session._emit({ type: "entry_appended", entry });
			}
			// The route stands; the compaction only changes the conversation the request carries.
			if (await require("./session-compaction.cjs").beforeRoutedRequest(session, routed.model)) context = { ...context, messages: session.sessionManager.buildSessionContext().messages };
			return { ...previous, context, model: routed.model, thinkingLevel: routed.thinkingLevel };
		};
	};

	/** Whether `model` is one of this session's own virtual models. */
	const routes = (model) => Boolean(ownModel(model?.provider, model?.id)?.virtual);
	return { registry, streamWith, installRouting, registerByHand, unregisterByHand, registerProviderByHand, unregisterProviderByHand, routes };
}

module.exports = { createSessionModels, VIRTUAL_API };
