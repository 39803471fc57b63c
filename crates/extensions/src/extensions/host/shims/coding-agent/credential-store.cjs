// pi-rpc extension host: a caller's credential store behind pi's
// `ModelRuntime.create({credentials})` (pi-ai's `CredentialStore`: `read`,
// `list`, `modify`, `delete`). The runtime holds what the store held when it
// was read (at create, after its own writes, on `refresh()`), as pi's runtime
// keeps a snapshot; pi-rpc's config crate answers catalog and auth questions
// over those credentials (the `modelStore` library function given them in
// place of an `auth.json`). Writes go to the store: a login's credential
// (`modify`), a logout (`delete`). Before a model call the provider's
// credential is read from the store again; an OAuth login with less than
// pi's five minutes left is refreshed by pi-rpc's flow of the provider and
// saved back through `modify`, as pi's runtime refreshes inside `modify`.

"use strict";

const { services } = require("../host-services.cjs");

/** pi-ai's longest wait for an OAuth refresh. */
const OAUTH_REFRESH_TIMEOUT_MS = 30_000;

/** A JSON copy of a credential (the store may hand out live objects). */
const plain = (value) => (value === undefined || value === null ? undefined : JSON.parse(JSON.stringify(value)));

class CredentialStoreBridge {
	constructor(store) {
		if (typeof store?.read !== "function" || typeof store.list !== "function" || typeof store.modify !== "function" || typeof store.delete !== "function") {
			throw new TypeError("ModelRuntime.create({credentials}): the store needs read, list, modify and delete (pi-ai's CredentialStore)");
		}
		this.store = store;
		this.entries = {};
	}

	/** Read every stored credential (pi's snapshot of the store). */
	async load(options) {
		const entries = {};
		for (const info of await this.store.list(options)) {
			const credential = plain(await this.store.read(info.providerId, options));
			if (credential) entries[info.providerId] = credential;
		}
		this.entries = entries;
	}

	/** The store's credential list (pi's `CredentialInfo`s), in its order. */
	async list(options) {
		return [...(await this.store.list(options))].map((info) => ({ providerId: info.providerId, type: info.type }));
	}

	/** Store `credential` for `providerId` (a login), as pi does: `modify(id, () => credential)`. */
	async write(providerId, credential, options) {
		const written = await this.store.modify(providerId, async () => credential, options);
		this.entries = { ...this.entries, [providerId]: plain(written ?? credential) };
		return written ?? credential;
	}

	async remove(providerId, options) {
		await this.store.delete(providerId, options);
		const { [providerId]: _removed, ...rest } = this.entries;
		this.entries = rest;
	}

	/**
	 * The provider's OAuth login refreshed by `oauth.refresh` inside the
	 * store's `modify` when it is still expired there (pi-ai's refresh
	 * before a network model refresh); resolves with the login the store
	 * then holds (undefined: none).
	 */
	async refreshExpired(providerId, oauth, signal) {
		const refreshed = await this.store.modify(
			providerId,
			async (current) => (current?.type === "oauth" && Date.now() >= current.expires ? await oauth.refresh(current, AbortSignal.timeout(OAUTH_REFRESH_TIMEOUT_MS)) : undefined),
			{ signal },
		);
		const post = plain(refreshed) ?? plain(await this.store.read(providerId, { signal }));
		if (post) this.entries = { ...this.entries, [providerId]: post };
		return post?.type === "oauth" ? post : undefined;
	}

	/**
	 * The provider's credential as the store holds it now; an OAuth login
	 * close to expiry refreshed first (pi-rpc's flow) and saved back inside
	 * the store's `modify`, which sees the current credential (another
	 * writer's newer one is kept as it is).
	 */
	async fresh(providerId, signal) {
		const current = plain(await this.store.read(providerId, { signal }));
		if (!current) {
			const { [providerId]: _gone, ...rest } = this.entries;
			this.entries = rest;
			return undefined;
		}
		let credential = current;
		if (current.type === "oauth") {
			const answer = await services().channel.request("lib", { fn: "modelStore", args: [{ credentials: {} }, "refreshOAuth", providerId, current] });
			const refreshed = answer?.value;
			if (refreshed && JSON.stringify(refreshed) !== JSON.stringify(current)) {
				const saved = await this.store.modify(
					providerId,
					async (stored) => (stored?.type === "oauth" && stored.access !== current.access ? undefined : refreshed),
					{ signal },
				);
				credential = plain(saved) ?? refreshed;
			}
		}
		this.entries = { ...this.entries, [providerId]: credential };
		return credential;
	}
}

module.exports = { CredentialStoreBridge };
