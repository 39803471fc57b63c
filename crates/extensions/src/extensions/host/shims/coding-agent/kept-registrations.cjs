// pi-rpc extension host: the registrations of an SDK session's extensions as
// pi 1.6.0's `ModelRuntime` keeps them. pi's session hands each extension's
// `pi.registerProvider` / `registerVirtualModel` to its runtime, which keeps
// it until it is unregistered: a reload (new extension instances) or a
// disposed session leaves it in, and a config form registered again merges
// its defined fields over the one kept (whoever made it: another extension,
// the reloaded one, another session over the same caller runtime). pi-rpc
// keeps each registration with the extension's `pi` (api.mjs); this module
// follows those live lists and keeps what they held.

"use strict";

const virtualKey = (provider, id) => `${provider}\0${id}`;
/** The order of all registrations kept (every session's over every runtime): the later one is in force. */
let sequence = 0;

/** A config form's defined fields over `previous`'s (pi's merge of a re-registration). */
function mergedConfig(previous, config) {
	const merged = { ...(previous ?? {}) };
	for (const [field, value] of Object.entries(config ?? {})) if (value !== undefined) merged[field] = value;
	return merged;
}

/**
 * The kept registrations; `registeredBelow(name)`: a config form the
 * runtime below already holds under `name` (another session's), merged under
 * this session's first registration of it; `below`: the kept registrations
 * of that session, whose later ones are in force over these.
 */
function createKeptRegistrations(registeredBelow, below) {
	/** name → `{source, owner, entry}`; key → `{source, owner, definition}`. */
	const providers = new Map();
	const virtual = new Map();

	const keepProvider = (name, entry, owner) => {
		const previous = providers.get(name);
		if (previous?.source === entry) return false;
		const before = previous ? (previous.entry.legacy !== false ? previous.entry.config : undefined) : registeredBelow(name);
		let kept = { ...entry, owner };
		if (entry.legacy !== false && before) {
			const config = mergedConfig(before, entry.config);
			kept = { ...kept, config, streamSimple: config.streamSimple ?? entry.streamSimple, oauth: config.oauth ?? entry.oauth };
		}
		providers.set(name, { source: entry, owner, entry: kept, seq: ++sequence });
		return true;
	};

	/** Follow `extensions`' live registrations; the kept ones, as `{providers, virtual}` Maps. */
	const update = (extensions) => {
		const live = new Set();
		let changed = false;
		for (const extension of extensions) {
			const instance = extension?.instance;
			if (!instance) continue;
			live.add(instance);
			for (const [name, entry] of instance.providers?.byName ?? []) changed = keepProvider(name, entry, instance) || changed;
			for (const definition of instance.virtualModels?.byKey?.values() ?? []) {
				const id = virtualKey(definition.provider, definition.id);
				if (virtual.get(id)?.source !== definition) virtual.set(id, { source: definition, owner: instance, definition, seq: ++sequence });
			}
		}
		// One a live extension no longer holds was unregistered by it.
		for (const [name, kept] of providers) {
			if (live.has(kept.owner) && !kept.owner.providers?.byName?.has(name)) changed = providers.delete(name);
		}
		for (const [id, kept] of virtual) {
			const { provider, id: modelId } = kept.definition;
			if (live.has(kept.owner) && !kept.owner.virtualModels?.byKey?.has(`${provider}/${modelId}`)) virtual.delete(id);
		}
		// A registration kept below (another session's over the same runtime) made later is the one in force.
		const current = (seq, newer) => !(newer?.() > seq);
		return {
			providers: new Map([...providers].filter(([name, kept]) => current(kept.seq, () => below?.providerSeq(name))).map(([name, kept]) => [name, kept.entry])),
			virtual: new Map([...virtual].filter(([id, kept]) => current(kept.seq, () => below?.virtualSeq(id))).map(([id, kept]) => [id, kept.definition])),
			live,
			changed,
		};
	};
	/** When the registration in force under `name` / `id` was kept (undefined: none). */
	const providerSeq = (name) => Math.max(providers.get(name)?.seq ?? -1, below?.providerSeq(name) ?? -1);
	const virtualSeq = (id) => Math.max(virtual.get(id)?.seq ?? -1, below?.virtualSeq(id) ?? -1);
	/** Whether the extension that registered the virtual model `id` is still loaded (not reloaded away). */
	const ownerLive = (id, live) => {
		const kept = virtual.get(id);
		return !kept || live.has(kept.owner);
	};
	return { update, providerSeq, virtualSeq, ownerLive };
}

module.exports = { createKeptRegistrations };
