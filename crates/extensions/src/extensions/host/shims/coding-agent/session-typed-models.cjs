// pi-rpc extension host: the classifier and image models an SDK session's
// own extensions register. In pi 1.6.0 a sub-session extension's
// `pi.registerProvider` goes to the sub-session's model runtime whole: the
// config form's `models` of `type: "classifier"` / `"image"` (their `api`
// and `baseUrl` taken from the definition, else the provider's, else the
// replaced provider's model of the same id or API) and its `classifiers` /
// `images` implementations keyed by API, or a native provider's
// `getAllModels()` and own `classify` / `generateImages`. The session's
// registry lists them by type (`getModelsOfType`, codemode's `models.*`),
// they replace the provider's built-in ones, and a call with one of them
// runs the extension's implementation with pi-ai's request auth applied
// (`options.apiKey`, `options.headers`, the model's `baseUrl`); every
// failure is pi-ai's error result. session-models.cjs lays this over the
// session's registry beside the chat models.

"use strict";

/** The typed calls: the registration's table of implementations, the model type, pi's words when the provider has none. */
const OPS = {
	classify: { table: "classifiers", type: "classifier", unsupported: "classification", article: "a classifier" },
	generateImages: { table: "images", type: "image", unsupported: "image generation", article: "an image" },
};

const modelType = (model) => model?.type ?? "chat";

/** pi's defaults for a typed definition: the replaced model of the same id, else of the same API, else the first. */
function definitionDefaults(baseModels, definition) {
	return baseModels.find((m) => m.id === definition.id) ?? (definition.api ? baseModels.find((m) => m.api === definition.api) : undefined) ?? baseModels[0];
}

/**
 * The models of `type` one registration gives, as pi's provider composer
 * makes them; `baseModels` are the base registry's of that provider and
 * type (what a registration without `models` keeps, at its `baseUrl`).
 */
function registeredOfType(name, entry, type, baseModels) {
	if (entry.legacy === false) return (entry.config?.models ?? []).filter((m) => modelType(m) === type);
	const config = entry.config ?? {};
	if (!Array.isArray(config.models)) return config.baseUrl ? baseModels.map((m) => ({ ...m, baseUrl: config.baseUrl })) : baseModels;
	return config.models
		.filter((m) => modelType(m) === type)
		.map((definition) => {
			const defaults = definitionDefaults(baseModels, definition);
			return { ...definition, api: definition.api ?? defaults?.api, provider: name, baseUrl: definition.baseUrl ?? config.baseUrl ?? defaults?.baseUrl, headers: undefined };
		});
}

/** pi-ai's error result of a typed call (`classifierErrorResult` / `imageErrorResult`). */
function errorResult(op, model, error, aborted) {
	return {
		api: model?.api,
		provider: model?.provider,
		model: model?.id,
		...(op === "generateImages" ? { output: [] } : { answers: {} }),
		stopReason: aborted ? "aborted" : "error",
		errorMessage: error instanceof Error ? error.message : String(error),
		timestamp: Date.now(),
	};
}

/**
 * The typed part of the session's registry over `base`: `registrations()`
 * (the providers the session's extensions registered, by name),
 * `configured(provider)` and `requestAuth(entry, model)` as the chat
 * models' (session-models.cjs).
 */
function createTypedModels({ base, registrations, configured, requestAuth }) {
	/**
	 * Every model of `type`: the base's, a registered provider's replaced by
	 * what its registration gives; native providers before config forms, as
	 * pi's runtime lists its providers.
	 */
	const ofType = (type) => {
		const { providers } = registrations();
		const all = base.getModelsOfType(type) ?? [];
		const ordered = [...providers].sort(([, a], [, b]) => Number(a.legacy !== false) - Number(b.legacy !== false));
		const own = ordered.flatMap(([name, entry]) => registeredOfType(name, entry, type, all.filter((m) => m.provider === name)));
		return [...all.filter((m) => !providers.has(m.provider)), ...own];
	};
	const forProvider = (models, providerId) => (providerId === undefined ? models : models.filter((m) => m.provider === providerId));
	const getModelsOfType = (type, providerId) => forProvider(ofType(type), providerId);
	const getAvailableOfType = async (type, providerId) => {
		const { providers } = registrations();
		const kept = ((await base.getAvailableOfType(type, providerId)) ?? []).filter((m) => !providers.has(m.provider));
		const own = forProvider(ofType(type), providerId).filter((m) => providers.has(m.provider) && configured(m.provider));
		return [...kept, ...own];
	};

	/** pi-ai's `classify` / `generateImages` of a registered provider's model: its checks, the request auth, the implementation. */
	const ownCall = async (op, entry, model, context, options = {}) => {
		const { table, type, unsupported, article } = OPS[op];
		try {
			if (modelType(model) !== type) throw new Error(`Model ${model.provider}/${model.id} is not ${article} model`);
			if (op === "classify" && context?.images?.length && !model.input?.includes("image")) {
				throw new Error(`Model ${model.provider}/${model.id} does not accept image input`);
			}
			let implementation;
			if (entry.legacy === false) {
				if (typeof entry.provider?.[op] === "function") implementation = (...args) => entry.provider[op](...args);
			} else {
				const own = entry.config?.[table]?.[model.api];
				if (typeof own?.[op] === "function") implementation = (...args) => own[op](...args);
				// A registration over a provider pi-rpc knows keeps that provider's own calls for the other APIs.
				else if ((base.getModelsOfType(type, model.provider) ?? []).length > 0) return await base[op](model, context, options);
				else if (Object.keys(entry.config?.[table] ?? {}).length > 0) throw new Error(`Provider ${model.provider} has no ${type} implementation for "${model.api}"`);
			}
			if (!implementation) throw new Error(`Provider ${model.provider} does not support ${unsupported}`);
			if (!configured(model.provider)) throw new Error(`Provider is not configured: ${model.provider}`);
			const auth = await requestAuth(entry, model);
			const headers = auth.headers || options.headers ? { ...(auth.headers ?? {}), ...(options.headers ?? {}) } : undefined;
			const requestModel = auth.baseUrl ? { ...model, baseUrl: auth.baseUrl } : model;
			return await implementation(requestModel, context, { ...options, apiKey: options.apiKey ?? auth.apiKey, headers });
		} catch (error) {
			return errorResult(op, model, error, options?.signal?.aborted);
		}
	};
	/** `op` of `model`: a registered provider's own call, else the base registry's. */
	const call = (op) => (model, context, options) => {
		const entry = model && registrations().providers.get(model.provider);
		return entry ? ownCall(op, entry, model, context, options) : base[op](model, context, options);
	};

	return { getModelsOfType, getAvailableOfType, classify: call("classify"), generateImages: call("generateImages") };
}

module.exports = { createTypedModels };
