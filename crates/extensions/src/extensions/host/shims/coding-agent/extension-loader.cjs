// pi-rpc extension host: loading pi's second extension runtime, for extensions that
// run inside an SDK session (`createAgentSession` with a resource loader's
// `extensionFactories` / `additionalExtensionPaths`), and pi's exports to
// build one by hand: `createExtensionRuntime`, `loadExtensionFromFactory`,
// `loadExtensions`, `discoverAndLoadExtensions`, `ExtensionRunner`,
// `wrapRegisteredTool(s)`. Each extension gets the host's own `pi`
// (api.mjs's `Instance`, the same registration rules as a top-level
// extension), bound not to pi-rpc but to a local channel whose methods are
// the runtime's actions, which the runner's `bindCore` points at the SDK
// session. The runner composes the handlers as pi does; where the shapes
// agree it runs them through the host's `runHook`/`dispatch` (hooks.mjs).

"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { services } = require("../host-services.cjs");
const { lib } = require("./text.cjs");

const NOT_INITIALIZED = "Extension runtime not initialized. Action methods cannot be called during extension loading.";
const SET_MODEL_NOT_INITIALIZED = "Extension runtime not initialized";
/** pi's `pi` actions that throw `NOT_INITIALIZED` until the runtime is bound to a session (`setModel` rejects). */
const UNBOUND_ACTIONS = ["sendMessage", "sendUserMessage", "appendEntry", "setSessionName", "getSessionName", "setLabel", "getActiveTools", "getAllTools", "getSettings", "setActiveTools", "getCommands", "getThinkingLevel", "setThinkingLevel"];
const STALE =
	"This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx after ctx.newSession(), ctx.fork(), ctx.switchSession(), or ctx.reload(). For newSession, fork, and switchSession, move post-replacement work into withSession and use the ctx passed to withSession. For reload, do not use the old ctx after await ctx.reload().";
const SESSION_BEFORE = new Set(["session_before_switch", "session_before_fork", "session_before_compact", "session_before_tree"]);

const host = () => services().extensionHost;
const messageOf = (error) => (error instanceof Error ? error.message : String(error));
const notInitialized = () => {
	throw new Error(NOT_INITIALIZED);
};

/** pi's `createExtensionRuntime()`: the actions every extension's `pi` reaches, unbound until a runner binds them. */
function createExtensionRuntime() {
	const runtime = {
		flagValues: new Map(),
		mcpServers: new Map(),
		/** The extension that registered each server. */
		mcpServerOwners: new Map(),
		/** Told of every registration change; the runner's `bindCore` makes it pi's `mcp_servers_change` to every extension. */
		mcpServersChanged: () => {},
		/** Called when the SDK session is disposed (agent-session.cjs). */
		sessionDisposers: new Set(),
		staleMessage: undefined,
		refreshTools: () => {},
		reportError: () => {},
		createContext: notInitialized,
		assertActive: () => {
			if (runtime.staleMessage) throw new Error(runtime.staleMessage);
		},
		invalidate: (message) => {
			runtime.staleMessage ??= message ?? STALE;
		},
	};
	for (const name of UNBOUND_ACTIONS) runtime[name] = notInitialized;
	runtime.setModel = () => Promise.reject(new Error(SET_MODEL_NOT_INITIALIZED));
	return runtime;
}

/** pi's `getMcpServers()` of `runtime`: `{name, config, extensionPath}` copies, in registration order. */
function mcpServerList(runtime) {
	return [...runtime.mcpServers].map(([name, config]) => ({ name, config: structuredClone(config), extensionPath: runtime.mcpServerOwners.get(name) }));
}

/** The channel an extension's `pi` (api.mjs) talks to: the runtime's actions, called in place. */
function localChannel(runtime, modelRegistry, instance, extensionPath) {
	const servers = () => ({ servers: mcpServerList(runtime) });
	const changed = () => runtime.mcpServersChanged();
	const methods = {
		// Each read asks its own action, as pi's `pi` does.
		getState: () => ({
			get sessionName() {
				return runtime.getSessionName();
			},
			get activeTools() {
				return runtime.getActiveTools();
			},
			get thinkingLevel() {
				return runtime.getThinkingLevel();
			},
		}),
		sendMessage: ({ triggerTurn, deliverAs, ...message }) => runtime.sendMessage(message, { triggerTurn, deliverAs }),
		sendUserMessage: ({ content, deliverAs }) => runtime.sendUserMessage(content, { deliverAs }),
		appendEntry: ({ customType, data }) => runtime.appendEntry(customType, data),
		setSessionName: ({ name }) => runtime.setSessionName(name),
		setLabel: ({ entryId, label }) => runtime.setLabel(entryId, label ?? undefined),
		getCommands: () => ({ commands: runtime.getCommands().map((c) => ({ ...c, path: c.sourceInfo?.path, location: c.sourceInfo?.scope })) }),
		getAllTools: () => ({ tools: runtime.getAllTools().map((t) => ({ ...t, path: t.sourceInfo?.source === "builtin" ? undefined : t.sourceInfo?.path })) }),
		setActiveTools: ({ names }) => runtime.setActiveTools(names),
		setThinkingLevel: ({ level }) => runtime.setThinkingLevel(level),
		setModel: async ({ provider, id }) => {
			const model = modelRegistry()?.find?.(provider, id);
			return model ? runtime.setModel(model) : false;
		},
		// pi's checks and words (the name and config valid, the name not another extension's, no
		// namespace clash), made by pi-rpc's MCP registration code; the config kept as pi keeps it.
		// While its factory runs, the extension's own registrations are not checked against: pi applies them when it returns.
		registerMcpServer: ({ name, config }) => {
			const loading = !instance().bound;
			const registered = [...runtime.mcpServerOwners].filter(([other, owner]) => runtime.mcpServers.has(other) && !(loading && owner === extensionPath));
			const { getAgentDir } = require("./runtime.cjs");
			const checked = lib("checkMcpRegistration", { name, config, extensionPath, registered, cwd: runtime.cwd ?? process.cwd(), agentDir: getAgentDir() });
			if (checked.error) throw new Error(checked.error);
			runtime.mcpServers.set(name, checked.config);
			runtime.mcpServerOwners.set(name, extensionPath);
			changed();
			return servers();
		},
		// A server another extension registered is left alone, as pi's registry leaves it.
		unregisterMcpServer: ({ name }) => {
			if (runtime.mcpServerOwners.get(name) === extensionPath && runtime.mcpServers.delete(name)) changed();
			return servers();
		},
		getMcpServers: () => servers(),
		// pi's built-in factories, loaded inside the SDK session as pi loads them (session-builtins.cjs).
		useBuiltinExtension: ({ name, options }) => require("./session-builtins.cjs").useBuiltinInSession(instance().pi, name, options, runtime, instance()),
	};
	const call = (method, params) => {
		const action = methods[method];
		if (!action) throw new Error(`${method} is not available to an extension inside an SDK session in pi-rpc`);
		return action(params ?? {});
	};
	return { call, tell: call, request: async (method, params) => call(method, params) };
}

/** pi's `sourceInfo` of an extension's resources. */
function sourceInfoOf(extensionPath) {
	return { path: extensionPath, source: "local", scope: "temporary", origin: "top-level", baseDir: extensionPath.startsWith("<") ? undefined : path.dirname(extensionPath) };
}

/** One loaded extension, in pi's `Extension` shape, over the host's `Instance` that holds its registrations. */
class LoadedExtension {
	constructor(extensionPath, resolvedPath, instance) {
		this.path = extensionPath;
		this.resolvedPath = resolvedPath;
		this.sourceInfo = sourceInfoOf(extensionPath);
		this.instance = instance;
	}
	get handlers() {
		return this.instance.handlers;
	}
	get tools() {
		return new Map([...this.instance.tools].map(([name, definition]) => [name, { definition, sourceInfo: this.sourceInfo }]));
	}
	get commands() {
		return new Map([...this.instance.commands].map(([name, c]) => [name, { ...c, sourceInfo: this.sourceInfo }]));
	}
	get flags() {
		return new Map([...this.instance.flags].map(([name, f]) => [name, { name, ...f, extensionPath: this.path }]));
	}
	get shortcuts() {
		return this.instance.shortcuts;
	}
	get messageRenderers() {
		return new Map();
	}
	/** The resolvers its `pi.registerToolRenderer` gave, in order (none: undefined, as pi's). */
	get toolRenderers() {
		return this.instance.toolRenderers;
	}
}

/** pi's `loadExtensionFromFactory(factory, cwd, eventBus, runtime, extensionPath)`. */
async function loadExtensionFromFactory(factory, cwd, eventBus, runtime = createExtensionRuntime(), extensionPath = "<inline>", resolvedPath = extensionPath) {
	const { Instance } = host();
	const { hello } = services();
	const bus = eventBus ?? require("./runtime.cjs").createEventBus();
	let runner;
	const instance = new Instance({
		channel: localChannel(runtime, () => runtime.modelRegistry, () => instance, extensionPath),
		hello: { cwd, agentDir: hello.agentDir, flags: {}, projectTrusted: hello.projectTrusted, offline: hello.offline, configRefresh: false },
		contexts: {
			state: () => instance.channel.call("getState"),
			cache: { clear() {} },
			event: () => runtime.createContext(),
		},
		bus,
		onChange: () => {
			if (instance.bound) runtime.refreshTools();
		},
		reportError: (event, error) => runtime.reportError({ extensionPath, event, error: messageOf(error), stack: error?.stack }),
	});
	// pi's flags: one value per runtime (the default until `runner.setFlagValue`), for the extension's own flags.
	instance.pi.getFlag = (name) => {
		if (!instance.flags.has(name)) return undefined;
		return runtime.flagValues.has(name) ? runtime.flagValues.get(name) : instance.flags.get(name).default;
	};
	// A registration change reaches every extension of the runtime through its runner (`mcpServersChanged`), not this one's handlers alone.
	instance.mcpServersChanged = () => {};
	await factory(instance.pi);
	for (const [name, flag] of instance.flags) if (flag.default !== undefined && !runtime.flagValues.has(name)) runtime.flagValues.set(name, flag.default);
	instance.bound = true;
	return new LoadedExtension(extensionPath, resolvedPath, instance);
}

/** pi's `loadExtensions(paths, cwd, eventBus, runtime)`: each file loaded by the host's loader; failures listed. */
async function loadExtensions(paths, cwd, eventBus, runtime = createExtensionRuntime()) {
	const extensions = [];
	const errors = [];
	for (const entry of paths) {
		const file = path.resolve(cwd, entry.startsWith("~") ? path.join(os.homedir(), entry.slice(1)) : entry);
		try {
			const module = await host().importExtension(file);
			const factory = typeof module === "function" ? module : module?.default;
			if (typeof factory !== "function") throw new Error(`Extension does not export a valid factory function: ${entry}`);
			extensions.push(await loadExtensionFromFactory(factory, cwd, eventBus, runtime, entry, file));
		} catch (error) {
			const text = messageOf(error);
			errors.push({ path: entry, error: text.startsWith("Extension does not export") ? text : `Failed to load extension: ${text}` });
		}
	}
	return { extensions, errors, runtime };
}

/** A directory's declared entry points: its package's `pi.extensions` (those that exist), else its `index.ts` / `index.js`. */
function entriesOfDir(dir) {
	try {
		const declared = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))?.pi?.extensions;
		const found = Array.isArray(declared) ? declared.map((p) => path.resolve(dir, p)).filter((p) => fs.existsSync(p)) : [];
		if (found.length > 0) return found;
	} catch {
		// no manifest
	}
	const index = ["index.ts", "index.js"].map((n) => path.join(dir, n)).find((p) => fs.existsSync(p));
	return index ? [index] : undefined;
}

/** The extensions of a directory, as pi finds them (one level): `*.ts` / `*.js` files, and each subdirectory's entry points. */
function discoverExtensionsInDir(dir) {
	let entries;
	try {
		entries = fs.readdirSync(dir, { withFileTypes: true });
	} catch {
		return [];
	}
	const found = [];
	for (const entry of entries) {
		const full = path.join(dir, entry.name);
		if ((entry.isFile() || entry.isSymbolicLink()) && /\.(ts|js)$/.test(entry.name)) found.push(full);
		else if (entry.isDirectory() || entry.isSymbolicLink()) found.push(...(entriesOfDir(full) ?? []));
	}
	return found;
}

/** A configured path's extensions: a directory's entry points (else its files), or the file itself. */
function configuredExtensions(configured, cwd) {
	const resolved = path.resolve(cwd, configured.startsWith("~") ? path.join(os.homedir(), configured.slice(1)) : configured);
	if (!fs.statSync(resolved, { throwIfNoEntry: false })?.isDirectory()) return [resolved];
	return entriesOfDir(resolved) ?? discoverExtensionsInDir(resolved);
}

/**
 * The extensions of a directory as pi's package manager finds them for a
 * resource loader: the directory's own entry points, else its `*.ts` /
 * `*.js` files and its subdirectories' entry points, leaving out dot names,
 * `node_modules` and what its ignore files name.
 */
function autoExtensionEntries(dir) {
	const own = entriesOfDir(dir);
	if (own) return own;
	const { visibleChildren } = require("./settings-resources.cjs");
	return visibleChildren(dir).flatMap((c) => (c.dir ? (entriesOfDir(c.path) ?? []) : /\.(ts|js)$/.test(c.path) ? [c.path] : []));
}

/** pi's `discoverAndLoadExtensions(configuredPaths, cwd, agentDir, eventBus)`: the project's, the user's, then the given ones. */
async function discoverAndLoadExtensions(configuredPaths, cwd, agentDir, eventBus) {
	const { getAgentDir } = require("./runtime.cjs");
	const root = path.resolve(cwd);
	const paths = [];
	const seen = new Set();
	const add = (list) => {
		for (const p of list) {
			if (seen.has(path.resolve(p))) continue;
			seen.add(path.resolve(p));
			paths.push(p);
		}
	};
	add(discoverExtensionsInDir(path.join(root, ".pi", "extensions")));
	add(discoverExtensionsInDir(path.join(path.resolve(agentDir ?? getAgentDir()), "extensions")));
	for (const configured of configuredPaths ?? []) add(configuredExtensions(configured, root));
	return loadExtensions(paths, root, eventBus);
}

/**
 * The extensions a `DefaultResourceLoader` loads on `reload()`: its
 * `additionalExtensionPaths` (files or directories), then, unless
 * `noExtensions`, the project's settings' extension paths and extension
 * directory (when trusted), the user's, and the settings' pi packages (the loader's `packageExtensions`), then its
 * `extensionFactories` as `<inline:N>` (or `<inline:name>`), all on one runtime.
 * With `preloaded` (the project-trust pass's result, pi's
 * `loadFinalExtensionSet`), its extensions are kept as they are, on their
 * runtime, a path that failed there is not tried again, and only the other
 * paths load; its inline extensions stand for the factories.
 */
async function loadResourceLoaderExtensions({ cwd, agentDir, settingsManager, noExtensions, additionalExtensionPaths, extensionFactories, packageExtensionPaths, eventBus, preloaded }) {
	const runtime = preloaded?.runtime ?? createExtensionRuntime();
	const paths = [];
	const add = (p) => {
		if (!paths.includes(p)) paths.push(p);
	};
	for (const configured of additionalExtensionPaths ?? []) configuredExtensions(configured, cwd).forEach(add);
	if (!noExtensions) {
		// pi's precedence: the project's settings entries (from its `.pi`) and directory, then the user's (from the agent directory), then packages.
		// The arrays' patterns (`!glob`, `+path`, `-path`, globs) as pi applies them (settings-resources.cjs).
		const { SettingsFiles, addSettingsResources } = require("./settings-resources.cjs");
		const filesOf = (resolved) => (fs.statSync(resolved, { throwIfNoEntry: false })?.isDirectory() ? autoExtensionEntries(resolved) : fs.existsSync(resolved) ? [resolved] : []);
		const options = { settingsManager, cwd, agentDir, key: "extensions", dir: "extensions", filesOf, autoFiles: autoExtensionEntries };
		if (!settingsManager?.getGlobalSettings) {
			// A settings manager without pi's getters: its extension paths count as the user's.
			options.settingsManager = { isProjectTrusted: () => settingsManager?.isProjectTrusted?.(), getProjectSettings: () => settingsManager?.getProjectSettings?.() ?? {}, getGlobalSettings: () => ({ extensions: settingsManager?.getExtensionPaths?.() ?? [] }) };
		}
		addSettingsResources(new SettingsFiles(), options).forEach(add);
		(packageExtensionPaths ?? []).forEach(add);
	}
	const key = (p) => path.resolve(cwd, p);
	const isInline = (ext) => ext.path.startsWith("<inline:");
	const loaded = new Map((preloaded?.extensions ?? []).filter((ext) => !isInline(ext)).map((ext) => [key(ext.resolvedPath), ext]));
	const failed = new Set((preloaded?.errors ?? []).map((error) => key(error.path)));
	const rest = await loadExtensions(paths.filter((p) => !loaded.has(key(p)) && !failed.has(key(p))), cwd, eventBus, runtime);
	for (const ext of rest.extensions) loaded.set(key(ext.resolvedPath), ext);
	const result = { extensions: paths.map((p) => loaded.get(key(p))).filter(Boolean), errors: [...(preloaded?.errors ?? []), ...rest.errors], runtime };
	if (preloaded) {
		result.extensions.push(...preloaded.extensions.filter(isInline));
		return result;
	}
	for (const [index, input] of (extensionFactories ?? []).entries()) {
		const named = typeof input !== "function";
		const extensionPath = `<inline:${named ? input.name : index + 1}>`;
		try {
			result.extensions.push(await loadExtensionFromFactory(named ? input.factory : input, cwd, eventBus, runtime, extensionPath));
		} catch (error) {
			result.errors.push({ path: extensionPath, error: error instanceof Error ? error.message : "failed to load extension" });
		}
	}
	return result;
}

module.exports = {
	loadResourceLoaderExtensions,
	createExtensionRuntime,
	mcpServerList,
	loadExtensionFromFactory,
	loadExtensions,
	discoverAndLoadExtensions,
	discoverExtensionsInDir,
	NOT_INITIALIZED,
	SET_MODEL_NOT_INITIALIZED,
	UNBOUND_ACTIONS,
	STALE,
	SESSION_BEFORE,
	host,
	messageOf,
};
