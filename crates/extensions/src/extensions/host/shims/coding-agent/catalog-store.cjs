// pi-rpc extension host: pi's cache of remote model catalogs for a
// `ModelRuntime` an extension makes (`ModelRuntime.create({modelsStore})`, a
// pi-ai `ModelsStore` object, or `modelsStorePath`, a `models-store.json`;
// without either, the `models-store.json` beside the runtime's `models.json`
// when one of them is named). pi's runtime restores what the store keeps when
// it is made, without the network (`allowModelNetwork` is off unless asked
// for): a built-in provider's stored catalog newer than the model data pi
// ships joins that provider's models (a stored model replaces the built-in
// one of the same id), and the models llama.cpp's last listing kept are
// llama.cpp's. The catalog is read again on `refresh()`. Fetching catalogs
// from the network is left out (compat/DEVIATIONS.md).

"use strict";

const fs = require("node:fs");
const path = require("node:path");

/** When pi 1.6.0's built-in model data was made (pi-rpc's catalog, crates/config/src/config/catalog.json, is that data). */
const BUILTIN_GENERATED_AT = Date.parse("2026-11-20T10:48:49.496Z");
/** Providers whose stored listing is theirs whatever its date (pi's own listing, not pi.dev's catalog). */
const LISTED = new Set(["llama.cpp"]);

/** A `models-store.json` as pi-ai's `ModelsStore` (read only: nothing here refreshes from the network). */
function fileStore(file) {
	return {
		async read(providerId) {
			try {
				const data = JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "") || "{}");
				const entry = data?.[providerId];
				return entry && typeof entry === "object" ? entry : undefined;
			} catch {
				return undefined;
			}
		},
	};
}

/**
 * The store a runtime made with `options` restores from: the given
 * `modelsStore`, else the `modelsStorePath` file, else (`modelsPath` named)
 * the file beside it. Undefined: nothing to restore.
 */
function catalogStoreOf(options, modelsPath) {
	if (options?.modelsStore) return options.modelsStore;
	if (options?.modelsStorePath) return fileStore(path.resolve(options.modelsStorePath));
	if (typeof modelsPath === "string" && (options?.modelsPath !== undefined || options?.authPath !== undefined)) {
		return fileStore(path.join(path.dirname(modelsPath), "models-store.json"));
	}
	return undefined;
}

/** The chat models `entry` gives provider `id`, as pi restores them (none when pi would ignore the entry). */
function restoredModels(id, entry) {
	if (!entry || !Array.isArray(entry.models)) return [];
	if (!LISTED.has(id) && !(typeof entry.lastModified === "number" && entry.lastModified > BUILTIN_GENERATED_AT)) return [];
	return entry.models.filter((m) => m && typeof m === "object" && m.provider === id && typeof m.id === "string" && (m.type ?? "chat") === "chat");
}

/**
 * `registry` with the catalogs `store` keeps laid over its providers'
 * models; `restore()` reads the store again (at create and on refresh).
 */
function withStoredCatalogs(registry, store) {
	let restored = new Map();
	const merged = () => {
		const all = registry.getAll();
		if (restored.size === 0) return all;
		const out = [];
		const seen = new Set();
		for (const m of all) {
			const stored = restored.get(m.provider)?.find((s) => s.id === m.id);
			out.push(stored ?? m);
			seen.add(`${m.provider}\0${m.id}`);
		}
		for (const [, models] of restored) for (const m of models) if (!seen.has(`${m.provider}\0${m.id}`)) out.push(m);
		return out;
	};
	const overlaid = Object.create(registry);
	Object.assign(overlaid, {
		getAll: merged,
		find: (provider, id) => restored.get(provider)?.find((m) => m.id === id) ?? registry.find(provider, id),
		getAvailable: () => {
			const configured = new Set(registry.getAvailable().map((m) => m.provider));
			return merged().filter((m) => configured.has(m.provider));
		},
		getModelsOfType: (type, providerId) =>
			type === "chat" ? merged().filter((m) => providerId === undefined || m.provider === providerId) : registry.getModelsOfType(type, providerId),
		async refresh(options) {
			await restore(options?.signal);
			return registry.refresh(options);
		},
	});
	async function restore(signal) {
		const next = new Map();
		const ids = new Set([...registry.getAll().map((m) => m.provider), ...LISTED]);
		for (const id of ids) {
			const models = restoredModels(id, await store.read(id, { signal }));
			if (models.length > 0) next.set(id, models);
		}
		restored = next;
	}
	return { registry: overlaid, restore };
}

module.exports = { catalogStoreOf, withStoredCatalogs };
