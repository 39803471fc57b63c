// pi's built-in extension factories (`createCodemodeExtension`,
// `createMcpExtension`, `createToolSearchExtension`) for pi-rpc's host.
// pi-rpc has these built-ins in Rust (its codemode, MCP client and
// `tool_search`); a factory applied to an extension's `pi` asks pi-rpc to
// hand the built-in to that extension, with the factory's options, through
// one host hook: `pi[USE_BUILTIN](name, options)`. Any `pi` that offers the
// hook (the host's per-extension API, an SDK session's extension runner)
// can run these factories. pi-rpc refuses options it cannot honour; the
// hook then throws, so the extension's load fails with that reason.
"use strict";

/** The hook a `pi` offers for these factories: `(name, options) => void`. */
const USE_BUILTIN = Symbol.for("pi-rpc.useBuiltinExtension");

/** The options as pi-rpc reads them: functions become `true` (given, not sendable). */
function describeOptions(options) {
	if (options === undefined || options === null) return {};
	if (typeof options !== "object") throw new TypeError("the factory's options must be an object");
	const out = {};
	for (const [key, value] of Object.entries(options)) {
		if (value === undefined) continue;
		out[key] = typeof value === "function" || (typeof value === "object" && value !== null && key === "credentials")
			? true
			: value;
	}
	return out;
}

function builtinFactory(name, factoryName, options, functions = {}) {
	const described = describeOptions(options);
	// pi-rpc calls these back: MCP's transport factory (and its `credentials` / `openUrl`, `functions.mcpAuth`).
	if (typeof options?.createTransport === "function") functions = { ...functions, createTransport: options.createTransport };
	return function (pi) {
		const use = pi?.[USE_BUILTIN];
		if (typeof use !== "function") {
			throw new Error(`${factoryName}() needs pi-rpc's extension API (this pi has no ${String(USE_BUILTIN)} hook)`);
		}
		use.call(pi, name, described, functions);
	};
}

function createCodemodeExtension(options) {
	return builtinFactory("codemode", "createCodemodeExtension", options);
}

/** What the hook is told, in place of a built-in's name, with what `loadConfig(ctx)` returned. */
const LOADED_MCP_CONFIG = "mcp:loadedConfig";

// pi calls `loadConfig(ctx)` in its MCP extension's `session_start` handler,
// and the config it returns replaces `mcp.json`; pi-rpc's MCP client then
// connects those servers.
// `credentials` (pi's `McpOAuthCredentialStore` shape: `forServer(name, url)`
// with `load`, `save`, `withRefreshLock`, and `remove(name, url)`) and
// `openUrl` stay here; pi-rpc's MCP client reaches them with `mcp_auth`
// calls: `{op: "load" | "save" | "remove" | "lock" | "unlock" | "openUrl", …}`.
// The handler goes with the factory: the `pi` it is applied to keeps it (the
// running session's `Instance`, api.mjs; an SDK session's connections,
// session-mcp-tools.cjs), and the host answers `mcp_auth` with it (host.mjs).
function mcpAuthHandler(credentials, openUrl) {
	const held = new Map();
	let nextLock = 0;
	return async ({ op, name, url, state, lock }) => {
		switch (op) {
			case "openUrl":
				if (typeof openUrl !== "function") throw new Error("createMcpExtension was given no openUrl");
				openUrl(url);
				return null;
			case "load":
				return (await credentials.forServer(name, url).load()) ?? null;
			case "save":
				await credentials.forServer(name, url).save(state);
				return null;
			case "remove":
				return Boolean(await credentials.remove(name, url));
			case "lock": {
				// Held from the callback's start until pi-rpc sends `unlock`.
				const id = String(++nextLock);
				let entered;
				const inside = new Promise((resolve) => (entered = resolve));
				const done = Promise.resolve(
					credentials.forServer(name, url).withRefreshLock(() => {
						entered();
						return new Promise((release) => held.set(id, release));
					}),
				);
				held.set(`${id}:done`, done);
				await Promise.race([inside, done]);
				return id;
			}
			case "unlock": {
				held.get(lock)?.();
				held.delete(lock);
				const done = held.get(`${lock}:done`);
				held.delete(`${lock}:done`);
				await done?.catch(() => undefined);
				return null;
			}
			default:
				throw new Error(`unknown mcp_auth op ${op}`);
		}
	};
}

function createMcpExtension(options) {
	const credentials = options?.credentials;
	const functions = {};
	if ((credentials && typeof credentials === "object") || typeof options?.openUrl === "function") {
		const store = credentials && typeof credentials === "object" ? credentials : undefined;
		if (store && typeof store.forServer !== "function") {
			throw new TypeError("createMcpExtension: `credentials` needs forServer(name, url) (pi's McpOAuthCredentialStore)");
		}
		functions.mcpAuth = mcpAuthHandler(store, options?.openUrl);
	}
	const apply = builtinFactory("mcp", "createMcpExtension", options, functions);
	const loadConfig = options?.loadConfig;
	if (typeof loadConfig !== "function") return apply;
	return function (pi) {
		// Before the factory's own handlers: inside an SDK session they open the connections at `session_start`, with this config.
		pi.on("session_start", (_event, ctx) => {
			const loaded = loadConfig(ctx);
			pi[USE_BUILTIN](LOADED_MCP_CONFIG, JSON.parse(JSON.stringify(loaded ?? {})));
		});
		apply(pi);
	};
}

function createToolSearchExtension() {
	return builtinFactory("tool_search", "createToolSearchExtension", undefined);
}

module.exports = { USE_BUILTIN, createCodemodeExtension, createMcpExtension, createToolSearchExtension };
