// pi-rpc extension host: the OAuth login a `ModelRuntime` registration
// carries (`runtime.registerProvider(id, {oauth: {name, login,
// refreshToken, getApiKey}})`), run as pi's runtime runs it: `login(id,
// "oauth", interaction)` calls the registration's `login` with pi-ai's
// callbacks over the caller's `notify` / `prompt` (pi's `AuthEvent` /
// `AuthPrompt` types, pi's words for the manual code), stores `{...,
// type: "oauth"}` in the runtime's credentials, and the runtime's auth
// answers read that login through `getApiKey` (refreshed by `refreshToken`
// once expired). A provider the registration gives no API key has no
// API-key login, with pi's refusal. pi-rpc's own OAuth flows stay in
// models.cjs; these are the extension's.

"use strict";

const fs = require("node:fs");
const { ModelsError } = require("../ai/models.cjs");
const { storeCredential } = require("./model-store.cjs");

const REGISTERED = Symbol("pi-rpc.registeredOAuth");

/**
 * Note `config` (merged over the runtime's earlier registration of
 * `providerId`, as pi merges defined fields) when it carries an OAuth
 * login; `baseName`: the name of a provider the runtime already had
 * under that id (pi names the provider by it before the OAuth name).
 */
function rememberOAuth(runtime, providerId, config, baseName) {
	const registered = (runtime[REGISTERED] ??= new Map());
	const previous = registered.get(providerId);
	const merged = { ...(previous?.config ?? {}) };
	for (const [key, value] of Object.entries(config ?? {})) if (value !== undefined) merged[key] = value;
	if (typeof merged.oauth?.login === "function") registered.set(providerId, { config: merged, baseName: previous?.baseName ?? baseName });
	else registered.delete(providerId);
}

function forgetOAuth(runtime, providerId) {
	runtime[REGISTERED]?.delete(providerId);
}

/** The credential the runtime holds for `providerId` (its store's, or its auth.json's). */
function storedOf(runtime, providerId) {
	if (runtime.credentialStore) return runtime.credentialStore.entries?.[providerId];
	try {
		return JSON.parse(fs.readFileSync(runtime.authPath, "utf8"))?.[providerId];
	} catch {
		return undefined;
	}
}

function store(runtime, providerId, credential, signal) {
	if (runtime.credentialStore) return runtime.credentialStore.write(providerId, credential, { signal });
	storeCredential(runtime.authPath, providerId, credential);
	return credential;
}

/**
 * `login(providerId, type, interaction)` of a provider whose OAuth login
 * the runtime's registration carries; undefined when it is not one (the
 * runtime's own login runs).
 */
async function registeredLogin(runtime, providerId, type, interaction) {
	const entry = runtime[REGISTERED]?.get(providerId);
	if (!entry) return undefined;
	const { config, baseName } = entry;
	if (type !== "oauth") {
		if (config.apiKey !== undefined || baseName !== undefined) return undefined;
		const name = config.name ?? config.oauth.name ?? providerId;
		throw new ModelsError("auth", `${name} does not support ${type} login`);
	}
	const signal = interaction?.signal ?? new AbortController().signal;
	const notify = (event) => interaction.notify(event);
	const prompt = (question) => interaction.prompt(question);
	const credential = await config.oauth.login({
		onAuth: (info) => notify({ type: "auth_url", ...info }),
		onDeviceCode: (info) => notify({ type: "device_code", ...info }),
		onPrompt: (question) => prompt({ type: "text", ...question }),
		onProgress: (message) => notify({ type: "progress", message }),
		onManualCodeInput: () => prompt({ type: "manual_code", message: "Paste the authorization code" }),
		onSelect: (question) => prompt({ type: "select", ...question }),
		signal,
	});
	signal.throwIfAborted();
	return { value: await store(runtime, providerId, { ...credential, type: "oauth" }, signal) };
}

/** pi's `AuthResult` of such a provider's stored OAuth login (refreshed once expired); undefined otherwise. */
async function registeredAuth(runtime, providerId) {
	const entry = runtime[REGISTERED]?.get(providerId);
	let credential = entry && storedOf(runtime, providerId);
	if (credential?.type !== "oauth") return undefined;
	const { oauth } = entry.config;
	if (typeof credential.expires === "number" && Date.now() >= credential.expires && typeof oauth.refreshToken === "function") {
		credential = await store(runtime, providerId, { ...(await oauth.refreshToken(credential)), type: "oauth" });
	}
	return { auth: { apiKey: oauth.getApiKey(credential) }, source: "OAuth" };
}

/** pi's `AuthStatus` of such a provider with a stored login; undefined otherwise. */
function registeredAuthStatus(runtime, providerId) {
	if (!runtime[REGISTERED]?.has(providerId) || !storedOf(runtime, providerId)) return undefined;
	return { configured: true, source: "stored" };
}

module.exports = { rememberOAuth, forgetOAuth, registeredLogin, registeredAuth, registeredAuthStatus };
