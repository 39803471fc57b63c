// pi-rpc extension host: a native provider's model refresh, as pi-ai's
// `Models.refresh` runs it once the provider is registered. First without
// the network (`allowNetwork: false`): the credential stored for the
// provider (`auth.json`) and its entry of `models-store.json` (`stored`,
// what an earlier refresh persisted) restore its catalog. Then, unless pi
// runs offline (`--offline`, `PI_OFFLINE`), with the network: the
// credential is resolved first (`auth.apiKey.resolve`, or the OAuth login,
// refreshed first when it expired), and what it publishes with `persist` is stored in
// `models-store.json` (`null` removes the entry), as pi's file store keeps it:
// read and written under pi's lock on the file (`file-lock.mjs`), one
// publication of a provider after the other. The network phase takes its
// turn among the process's sessions (`providerRefresh`): pi-rpc runs it once
// for the extension, provider and credential within pi's window, and a
// session told it was done reads the stored catalog (the offline phase again).

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";

import { withFileLock } from "./file-lock.mjs";

/** JSON of a file, `{}` when it is missing or not JSON. */
function readJson(file) {
	try {
		const text = readFileSync(file, "utf8").replace(/^\uFEFF/, "");
		return text.trim() ? JSON.parse(text) : {};
	} catch {
		return {};
	}
}

/** `models-store.json`'s text as an object (`{}` when empty); not JSON: `{}`, or with `strict` an error. */
function parseStore(content, strict) {
	const text = (content ?? "").replace(/^\uFEFF/, "");
	if (!text.trim()) return {};
	try {
		const value = JSON.parse(text);
		return value && typeof value === "object" && !Array.isArray(value) ? value : {};
	} catch (error) {
		if (strict) throw error;
		return {};
	}
}

/** Longest wait for an OAuth refresh (pi-ai's). */
const OAUTH_REFRESH_MS = 15_000;

/** The models a stored entry keeps (pi-ai drops models of types it does not know). */
const KNOWN_TYPES = new Set(["chat", "image", "classifier"]);

export class ProviderRefresh {
	/**
	 * `agentDir`: where `auth.json` and `models-store.json` are; `offline`:
	 * no network phase; `turn(params)`: pi-rpc's `providerRefresh`.
	 */
	constructor({ agentDir, offline, authContext, turn }) {
		this.agentDir = agentDir;
		this.offline = offline === true;
		this.authContext = authContext;
		this.turn = turn ?? (async () => ({ run: true }));
	}

	/** The credential `auth.json` stores for the provider. */
	credential(id) {
		if (!this.agentDir) return undefined;
		const entry = readJson(path.join(this.agentDir, "auth.json"))[id];
		return entry && typeof entry === "object" ? entry : undefined;
	}

	storePath() {
		return this.agentDir ? path.join(this.agentDir, "models-store.json") : undefined;
	}

	/** The provider's entry of `models-store.json`, read under pi's lock (which creates the file, as pi's). */
	async stored(id) {
		const file = this.storePath();
		if (!file) return undefined;
		const all = await withFileLock(file, async (content) => ({ result: parseStore(content, false) }));
		const entry = all[id];
		if (!entry || typeof entry !== "object") return undefined;
		const models = Array.isArray(entry.models) ? entry.models : [];
		return { ...structuredClone(entry), models: models.filter((m) => KNOWN_TYPES.has(m?.type ?? "chat")) };
	}

	/**
	 * Keep (or, with `null`, drop) the provider's entry, under pi's lock:
	 * the file is read again there, other providers' entries stay. A file
	 * that is not JSON is left alone (the publication fails), as pi's.
	 */
	async persist(id, entry) {
		const file = this.storePath();
		if (!file) return;
		await withFileLock(file, async (content) => {
			const current = parseStore(content, true);
			if (entry === null) delete current[id];
			else current[id] = structuredClone(entry);
			return { next: JSON.stringify(current, null, 2) };
		});
	}

	/** `ctx.publish`: persist what it asks to, then apply its update; a provider's publications in turn. */
	publisher(id) {
		let chain = Promise.resolve();
		return (publication) => {
			const queued = chain.then(async () => {
				if (publication?.persist === null) await this.persist(id, null);
				else if (publication?.persist !== undefined) await this.persist(id, publication.persist);
				publication?.update?.();
				return true;
			});
			chain = queued.catch(() => {});
			return queued;
		};
	}

	/**
	 * An expired OAuth login refreshed for the network phase, as pi-ai does
	 * it: under pi's lock on `auth.json`, read again there (another process
	 * may have refreshed it, or logged out), refreshed through the provider's
	 * `auth.oauth.refresh` and stored back as it answers. Resolves with the
	 * login, `undefined` when there is none any more.
	 */
	async refreshOAuth(id, oauth) {
		if (!this.agentDir) return undefined;
		const post = await withFileLock(path.join(this.agentDir, "auth.json"), async (content) => {
			const all = parseStore(content, true);
			const current = all[id];
			if (current?.type !== "oauth" || Date.now() < current.expires) return { result: current };
			const next = JSON.parse(JSON.stringify(await oauth.refresh(current, AbortSignal.timeout(OAUTH_REFRESH_MS))));
			return { result: next, next: JSON.stringify({ ...all, [id]: next }, null, 2) };
		});
		return post?.type === "oauth" ? post : undefined;
	}

	/** One phase of `provider.refreshModels`. */
	async phase(provider, credential, allowNetwork, signal) {
		const stored = await this.stored(provider.id);
		await provider.refreshModels({
			credential,
			stored,
			publish: this.publisher(provider.id),
			allowNetwork,
			force: undefined,
			signal,
			baseUrl: provider.baseUrl,
		});
	}

	/** The offline phase. */
	async restore(provider, signal) {
		await this.phase(provider, this.credential(provider.id), false, signal);
	}

	/**
	 * The network phase, when pi is not offline and the provider has a
	 * credential (pi-ai's `resolveNetworkRefresh`); `false` when it did not run.
	 */
	async fetch(provider, signal) {
		if (this.offline) return false;
		const stored = this.credential(provider.id);
		let credential;
		if (stored?.type === "oauth") {
			const oauth = provider.auth?.oauth;
			if (!oauth) return false;
			credential = Date.now() < stored.expires ? stored : await this.refreshOAuth(provider.id, oauth);
			if (!credential) return false;
		} else {
			const apiKey = provider.auth?.apiKey;
			if (typeof apiKey?.resolve !== "function") return false;
			const given = stored?.type === "api_key" ? stored : undefined;
			const result = await apiKey.resolve({ ctx: this.authContext, credential: given, signal });
			if (!result?.auth) return false;
			credential = provider.refreshModelsAuth === "configured" ? undefined : { type: "api_key", key: result.auth.apiKey, env: result.env };
		}
		const digest = createHash("sha256").update(JSON.stringify(credential ?? null)).digest("hex");
		const turn = await this.turn({ action: "begin", provider: provider.id, credential: digest });
		if (!turn?.run) {
			// Refreshed by another session within the window: its stored catalog.
			await this.restore(provider, signal);
			return true;
		}
		let ok = false;
		try {
			await this.phase(provider, credential, true, signal);
			ok = true;
		} finally {
			if (turn.ticket != null) await this.turn({ action: "end", ticket: turn.ticket, ok }).catch(() => {});
		}
		return true;
	}
}
