// pi-rpc extension host: pi 1.6.0's offline model refresh of the providers
// registered on a runtime. pi's runtime refreshes its catalog after each
// registration change (`registerProvider`, `unregisterProvider`, a virtual
// model) and at `refresh()`: a config form's `refreshModels` is asked then,
// without the network (`allowNetwork: false`), given what pi-ai's
// `Models.refresh` gives it (the credential the runtime stores for the
// provider, its runtime key first, and the provider's entry of the
// runtime's catalog store, models of unknown types dropped), and the
// models it publishes become the provider's. This does the same for the
// registrations an SDK session's runtime layer holds (session-models.cjs),
// once per change. At `refresh()` with the network (pi's default unless
// offline) a registration with a credential is then asked again with it
// (`allowNetwork: true`): a live OAuth login (an expired one refreshed
// first by the registration's `auth.oauth.refresh` and stored back under
// the store's lock, as pi-ai's `refreshStoredOAuthCredential`), or the key
// its `auth.apiKey` resolves (pi-ai's `resolveNetworkRefresh`).

"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const url = require("node:url");

/** The model types pi 1.6.0 knows; a stored model of another is dropped. */
const KNOWN_TYPES = new Set(["chat", "image", "classifier"]);

/** pi-ai's longest wait for an OAuth refresh. */
const OAUTH_REFRESH_TIMEOUT_MS = 30_000;

/**
 * Refresh provider `id`'s OAuth login in the `auth.json` at `file` with
 * `oauth.refresh` when it is still expired under pi's lock (another party
 * may have refreshed it meanwhile), the answer stored back; resolves with
 * the login then stored (undefined: none any more).
 */
async function refreshStoredOAuth(file, id, oauth) {
	const { withFileLock } = await import(url.pathToFileURL(path.join(__dirname, "../../file-lock.mjs")).href);
	return withFileLock(file, async (content) => {
		const all = JSON.parse((content ?? "").replace(/^\uFEFF/, "") || "{}");
		const current = all?.[id];
		if (current?.type !== "oauth") return { result: undefined };
		if (Date.now() < current.expires) return { result: current };
		const next = JSON.parse(JSON.stringify(await oauth.refresh(current, AbortSignal.timeout(OAUTH_REFRESH_TIMEOUT_MS))));
		return { result: next, next: JSON.stringify({ ...all, [id]: next }, null, 2) };
	});
}

/** The agent directory's stores (a runtime over pi-rpc's own files). */
function agentDirSources() {
	const dir = process.env.PI_CODING_AGENT_DIR || path.join(os.homedir(), ".pi", "agent");
	const credentials = path.join(dir, "auth.json");
	const entry = (file, id) => {
		try {
			const value = JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "") || "{}")?.[id];
			return value && typeof value === "object" ? value : undefined;
		} catch {
			return undefined;
		}
	};
	return {
		credential: async (id) => entry(credentials, id),
		stored: async (id) => entry(path.join(dir, "models-store.json"), id),
		refreshOAuth: (id, oauth) => refreshStoredOAuth(credentials, id, oauth),
	};
}

/** pi-ai's `withKnownModelTypes` over a stored entry (a copy). */
function knownTypes(entry) {
	if (!entry || typeof entry !== "object") return undefined;
	const copy = structuredClone(entry);
	return { ...copy, models: (Array.isArray(copy.models) ? copy.models : []).filter((m) => KNOWN_TYPES.has(m?.type ?? "chat")) };
}

/**
 * pi-ai's credential for the network phase: a live OAuth login, or the
 * key `auth.apiKey` resolves (over the stored key); `undefined`: not
 * configured, no network phase.
 */
async function networkCredential(provider, stored, signal, refreshOAuth) {
	if (stored?.type === "oauth") {
		const oauth = provider.auth?.oauth;
		if (!oauth) return undefined;
		if (Date.now() < stored.expires) return { credential: stored };
		if (signal?.aborted || !refreshOAuth) return undefined;
		const refreshed = await refreshOAuth(oauth);
		return refreshed?.type === "oauth" ? { credential: refreshed } : undefined;
	}
	const resolve = provider.auth?.apiKey?.resolve;
	if (typeof resolve !== "function") return undefined;
	const result = await resolve({ credential: stored?.type === "api_key" ? stored : undefined, signal });
	if (!result?.auth) return undefined;
	if (provider.refreshModelsAuth === "configured") return { credential: undefined };
	return { credential: { type: "api_key", key: result.auth.apiKey, env: result.env } };
}

/** The context pi's runtime gives a registration's `refreshModels` offline. */
function offlineContext(provider, signal, credential, stored) {
	return {
		credential,
		stored,
		publish: async (publication) => {
			if (signal?.aborted) return false;
			publication?.update?.();
			return true;
		},
		allowNetwork: false,
		force: undefined,
		signal: signal ?? new AbortController().signal,
		baseUrl: provider.baseUrl,
	};
}

/**
 * `ids()`: the config registrations with a `refreshModels`;
 * `providerOf(id)`: the runtime's provider object of one (its
 * `refreshModels` publishes into the registration); `sources()`: the
 * runtime's stores (`credential(id)`, `stored(id)`), the agent directory's
 * when it gives none. `run(signal, network)` refreshes them now (`network`:
 * then with the network, `{force}`); `schedule()` offline once after the
 * current change.
 */
function createRegistrationRefresh({ ids, providerOf, sources }) {
	let queued;
	const run = async (signal, network) => {
		await Promise.all(
			ids().map(async (id) => {
				const provider = providerOf(id);
				if (typeof provider?.refreshModels !== "function") return;
				try {
					const from = sources?.() ?? agentDirSources();
					// pi-ai reads the credential first, then the stored entry.
					const credential = (await from.credential(id)) ?? undefined;
					const stored = knownTypes(await from.stored(id));
					await provider.refreshModels(offlineContext(provider, signal, credential, stored));
					if (!network || signal?.aborted) return;
					const refreshOAuth = from.refreshOAuth && ((oauth) => from.refreshOAuth(id, oauth, signal));
					const resolved = await networkCredential(provider, credential, signal, refreshOAuth);
					if (!resolved) return;
					const context = offlineContext(provider, signal, resolved.credential, knownTypes(await from.stored(id)));
					await provider.refreshModels({ ...context, allowNetwork: true, force: network.force });
				} catch {
					// A failed refresh leaves the registration's models, as pi's does.
				}
			}),
		);
	};
	const schedule = () => {
		queued ??= Promise.resolve().then(() => {
			queued = undefined;
			return run();
		});
	};
	return { run, schedule };
}

module.exports = { createRegistrationRefresh, agentDirSources, refreshStoredOAuth };
