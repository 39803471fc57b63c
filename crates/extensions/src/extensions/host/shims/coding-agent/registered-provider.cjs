// pi-rpc extension host: how pi 1.6.0's `ModelRuntime` answers for a provider
// registered on it (by hand, or by a session's extension): `getProvider` /
// `getProviders` give pi-ai's `Provider` of the registration (its id, its
// name or the id, its base URL, an API-key auth, its models, its calls), a
// native provider as given; `getProviderAuthStatus` reads the registration's
// `apiKey` as pi's provider composer does (a `!command`, `$VAR` templates, a
// literal: "fallback"); `getAuth` resolves that key. A registration without
// `apiKey` (and a native one) answers from the credentials below, as pi's.

"use strict";

const { lib } = require("./text.cjs");

/** The environment variables a config value's `$VAR` / `${VAR}` template names (`$$` is a literal `$`). */
function templateNames(value) {
	const names = [];
	const pattern = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;
	for (const match of value.matchAll(pattern)) {
		const name = match[1] ?? match[2];
		if (name) names.push(name);
	}
	return names;
}

/** pi's `configuredRequestAuthStatus` of a registration's `apiKey`, or undefined when it has none. */
function registeredAuthStatus(entry) {
	const value = entry?.legacy !== false ? entry?.config?.apiKey : undefined;
	if (typeof value !== "string") return undefined;
	if (value.startsWith("!")) return { configured: true, source: "models_json_command" };
	const names = templateNames(value);
	if (names.length > 0) {
		const missing = names.some((name) => process.env[name] === undefined || process.env[name] === "");
		return missing ? { configured: false } : { configured: true, source: "environment", label: names.join(", ") };
	}
	return { configured: true, source: "fallback" };
}

/** pi's `getAuth` of a registration with an `apiKey`: the key resolved, or pi's error when its variable is unset. */
function registeredAuth(entry, name) {
	const value = entry?.legacy !== false ? entry?.config?.apiKey : undefined;
	if (typeof value !== "string") return undefined;
	const missing = value.startsWith("!") ? [] : templateNames(value).filter((n) => !process.env[n]);
	if (missing.length > 0) {
		throw new Error(`API key auth failed for provider ${name}: Failed to resolve API key for provider "${name}" from environment variable: ${missing.join(", ")}`);
	}
	const apiKey = lib("resolveConfigValue", value) ?? undefined;
	return apiKey ? { auth: { apiKey }, source: "configured API key" } : undefined;
}

/** A config value's `$VAR` / `${VAR}` templates filled from `env` (`$$`: a literal `$`). */
function fillTemplate(value, env) {
	return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (all, braced, bare) => (all === "$$" ? "$" : (env[braced ?? bare] ?? "")));
}

/** The variables `values`' templates name, read through pi-ai's auth context `ctx` (`explicit` first). */
async function contextEnv(values, ctx, explicit = {}) {
	const env = { ...explicit };
	for (const name of new Set(values.filter((v) => typeof v === "string" && !v.startsWith("!")).flatMap(templateNames))) {
		if (env[name] !== undefined) continue;
		const value = ctx?.env ? await ctx.env(name) : process.env[name] || undefined;
		if (value !== undefined) env[name] = value;
	}
	return env;
}

/** pi's `resolveConfigValueOrThrow`: a `!command`'s output, a template filled from `env`, a literal; pi's errors. */
function resolveOrThrow(value, description, env) {
	if (value.startsWith("!")) {
		const output = lib("resolveConfigValue", value);
		if (output) return output;
		throw new Error(`Failed to resolve ${description} from shell command: ${value.slice(1)}`);
	}
	const missing = templateNames(value).filter((name) => env[name] === undefined);
	if (missing.length === 1) throw new Error(`Failed to resolve ${description} from environment variable: ${missing[0]}`);
	if (missing.length > 1) throw new Error(`Failed to resolve ${description} from environment variables: ${missing.join(", ")}`);
	return fillTemplate(value, env);
}

/** A registration's headers resolved as pi's `resolveHeadersOrThrow` does (undefined when none). */
function resolveHeaders(headers, description, env) {
	if (!headers) return undefined;
	const resolved = {};
	for (const [name, value] of Object.entries(headers)) resolved[name] = resolveOrThrow(String(value), `${description} header "${name}"`, env);
	return Object.keys(resolved).length > 0 ? resolved : undefined;
}

/** pi's `withConfiguredAuth`: the headers over the auth's, an `authHeader` as a bearer header. */
function withConfiguredAuth(auth, headers, authHeader) {
	let merged = auth.headers || headers ? { ...auth.headers, ...headers } : undefined;
	if (authHeader) {
		if (!auth.apiKey) throw new Error("authHeader requires a resolved API key");
		merged = { ...merged, Authorization: `Bearer ${auth.apiKey}` };
	}
	return { ...auth, headers: merged };
}

/**
 * pi's API-key auth of a registration (its provider composer's): the key
 * login pi asks for, `check` and `resolve` over a stored credential, the
 * registration's `apiKey` or the provider it replaces (`inherited`); none
 * for an OAuth-only registration.
 */
function apiKeyAuth(name, config, inherited) {
	const rawKey = config.apiKey;
	if (!inherited && rawKey === undefined && config.oauth) return undefined;
	const rawHeaders = config.headers;
	const authHeader = config.authHeader ?? false;
	const fromInherited = async (input) => {
		if (inherited?.check) return inherited.check(input);
		const resolved = await inherited?.resolve?.(input);
		return resolved ? { type: "api_key", source: resolved.source } : undefined;
	};
	return {
		name: inherited?.name ?? "API key",
		login: inherited?.login ?? (async (interaction) => ({ type: "api_key", key: await interaction.prompt({ type: "secret", message: "Enter API key" }) })),
		check: async (input = {}) => {
			if (input.credential) {
				if (inherited?.check) return inherited.check(input);
				if (input.credential.key) return { type: "api_key", source: "stored credential" };
				return fromInherited(input);
			}
			if (typeof rawKey === "string") {
				if (rawKey.startsWith("!")) return { type: "api_key", source: "configured API key" };
				const env = await contextEnv([rawKey], input.ctx);
				if (templateNames(rawKey).some((n) => env[n] === undefined)) return undefined;
				return { type: "api_key", source: "configured API key" };
			}
			return fromInherited(input);
		},
		resolve: async (input = {}) => {
			let result;
			if (input.credential) {
				result = inherited
					? await inherited.resolve(input)
					: input.credential.key
						? { auth: { apiKey: input.credential.key }, env: input.credential.env, source: "stored credential" }
						: undefined;
			} else if (typeof rawKey === "string") {
				const key = resolveOrThrow(rawKey, `API key for provider "${name}"`, await contextEnv([rawKey], input.ctx));
				result = inherited ? await inherited.resolve({ ...input, credential: { type: "api_key", key } }) : { auth: { apiKey: key }, source: "configured API key" };
			} else {
				result = await inherited?.resolve?.(input);
			}
			if (!result) return undefined;
			const explicit = { ...(input.credential?.env ?? {}), ...(result.env ?? {}) };
			const env = await contextEnv(Object.values(rawHeaders ?? {}), input.ctx, explicit);
			return { ...result, auth: withConfiguredAuth(result.auth ?? {}, resolveHeaders(rawHeaders, `provider "${name}"`, env), authHeader) };
		},
	};
}

/** pi's OAuth auth of a registration's `oauth` (its `adaptOAuth`): pi-ai's login callbacks over the extension's. */
function oauthAuth(oauth) {
	return {
		name: oauth.name,
		isSubscription: oauth.isSubscription,
		login: async (callbacks) => {
			const credential = await oauth.login({
				onAuth: (info) => callbacks.notify({ type: "auth_url", ...info }),
				onDeviceCode: (info) => callbacks.notify({ type: "device_code", ...info }),
				onPrompt: (prompt) => callbacks.prompt({ type: "text", ...prompt }),
				onProgress: (message) => callbacks.notify({ type: "progress", message }),
				onManualCodeInput: () => callbacks.prompt({ type: "manual_code", message: "Paste the authorization code" }),
				onSelect: (prompt) => callbacks.prompt({ type: "select", ...prompt }),
				signal: callbacks.signal,
			});
			return { ...credential, type: "oauth" };
		},
		refresh: async (credential, signal) => ({ ...(await oauth.refreshToken(credential, signal)), type: "oauth" }),
		toAuth: async (credential) => ({ apiKey: oauth.getApiKey(credential) }),
	};
}

/**
 * pi's OAuth auth of a composed provider: `oauth`'s, its `toAuth` giving
 * the login's request auth with the registration's headers (filled from the
 * credential's `env`, then the environment) and its `authHeader`.
 */
function withConfiguredOAuth(oauth, name, config) {
	if (!oauth) return undefined;
	return {
		...oauth,
		toAuth: async (credential) => {
			const auth = await oauth.toAuth(credential);
			const explicit = credential?.env && typeof credential.env === "object" ? credential.env : {};
			const env = await contextEnv(Object.values(config.headers ?? {}), undefined, explicit);
			return withConfiguredAuth(auth ?? {}, resolveHeaders(config.headers, `provider "${name}"`, env), config.authHeader ?? false);
		},
	};
}

/**
 * pi-ai's `Provider` of a registration: a native provider as registered;
 * otherwise pi's composed provider of the config (`base`: the provider it
 * replaces, if any), with every member pi's has: its id, name, base URL,
 * headers, API-key and OAuth auth, its models (`models()`, `allModels()`),
 * `refreshModels` (the registration's, its answer published to the
 * caller's context and given to `keepModels`), `refreshModelsAuth`,
 * `filterModels` / `filterAllModels`, its calls (`calls`), and its own
 * classifier and image calls.
 */
function registeredProvider(entry, name, { base, models, allModels, calls, keepModels }) {
	if (entry?.legacy === false && entry.provider) return entry.provider;
	const config = entry?.config ?? {};
	const oauthConfig = entry?.oauth ?? config.oauth;
	// As pi's composer: a provider signing in by OAuth alone (its own, or the one it replaces) gets no API-key login.
	const apiKey = apiKeyAuth(name, { ...config, oauth: oauthConfig ?? base?.auth?.oauth }, base?.auth?.apiKey);
	const oauth = withConfiguredOAuth(oauthConfig ? oauthAuth(oauthConfig) : base?.auth?.oauth, name, config);
	const ownRefresh = typeof config.refreshModels === "function" ? config.refreshModels : undefined;
	const refreshes = base?.refreshModels || ownRefresh || oauthConfig?.modifyModels;
	const provider = {
		id: name,
		name: config.name ?? base?.name ?? oauthConfig?.name ?? name,
		baseUrl: config.baseUrl ?? base?.baseUrl,
		headers: base?.headers,
		auth: { ...(apiKey ? { apiKey } : {}), ...(oauth ? { oauth } : {}) },
		getModels: models,
		getAllModels: allModels ?? models,
		refreshModelsAuth: ownRefresh || oauthConfig?.modifyModels ? undefined : base?.refreshModelsAuth,
		refreshModels: refreshes
			? async (context) => {
					await base?.refreshModels?.(context);
					const refreshed = ownRefresh ? await ownRefresh(context) : undefined;
					if (context?.signal?.aborted) return;
					await context?.publish?.({
						update: () => {
							if (refreshed) keepModels?.(refreshed);
						},
					});
				}
			: undefined,
		filterModels: base?.filterModels ? (list, credential) => base.filterModels(list, credential) : undefined,
		filterAllModels: base?.filterAllModels ? (list, credential) => base.filterAllModels(list, credential) : undefined,
		stream: calls.stream,
		streamSimple: calls.streamSimple,
	};
	if (base?.fetchDeferred) provider.fetchDeferred = (model, handle, options) => base.fetchDeferred(model, handle, options);
	if (base?.cancelDeferred) provider.cancelDeferred = (model, handle, options) => base.cancelDeferred(model, handle, options);
	for (const [op, table, kind] of [["generateImages", "images", "image"], ["classify", "classifiers", "classifier"]]) {
		const own = config[table] ?? {};
		if (!base?.[op] && Object.keys(own).length === 0) continue;
		provider[op] = (model, context, options) => {
			const implementation = own[model?.api];
			if (implementation) return implementation[op](model, context, options);
			if (base?.[op]) return base[op](model, context, options);
			return calls[op]?.(model, context, options) ?? Promise.reject(new Error(`Provider ${name} has no ${kind} implementation for "${model?.api}"`));
		};
	}
	return provider;
}

module.exports = { registeredAuthStatus, registeredAuth, registeredProvider };
