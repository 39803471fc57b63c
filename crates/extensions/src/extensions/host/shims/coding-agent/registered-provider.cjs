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

/**
 * pi-ai's `Provider` of a registration: a native provider as registered;
 * otherwise one made of the config (`baseName`: the name of the catalog's
 * provider it replaces), its models `models()`, its auth and calls `calls`'.
 */
function registeredProvider(entry, name, { baseName, models, calls, auth }) {
	if (entry?.legacy === false && entry.provider) return entry.provider;
	const config = entry?.config ?? {};
	const apiKey = { name: "API key", resolve: async () => (await auth())?.auth };
	return {
		id: name,
		name: config.name ?? baseName ?? name,
		...(config.baseUrl ? { baseUrl: config.baseUrl } : {}),
		...(config.headers ? { headers: config.headers } : {}),
		auth: entry?.oauth ? { apiKey, oauth: entry.oauth } : { apiKey },
		getModels: models,
		getAllModels: models,
		stream: calls.stream,
		streamSimple: calls.streamSimple,
	};
}

module.exports = { registeredAuthStatus, registeredAuth, registeredProvider };
