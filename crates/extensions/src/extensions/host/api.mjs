// pi-rpc extension host: `pi`, pi's ExtensionAPI, for one instance of an
// extension (the factory's closure; a new instance is made when the session
// is replaced, as pi rebinds extensions). Registrations are kept here and
// sent to pi-rpc as the extension protocol's `register` message; actions
// become requests to pi-rpc.

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { exec } from "./exec.mjs";
import { dispatch } from "./hooks.mjs";
import { Providers } from "./providers.mjs";
import { VirtualModels } from "./virtual-models.mjs";

const require = createRequire(import.meta.url);
const { NOT_INITIALIZED, SET_MODEL_NOT_INITIALIZED, UNBOUND_ACTIONS } = require("./shims/coding-agent/extension-loader.cjs");

/** Tool exposures that are given to the model when active (pi's `direct` and `model-only`). */
const MODEL_EXPOSURES = new Set([undefined, "direct", "model-only"]);

function plainSchema(schema) {
	if (schema === undefined || schema === null) return { type: "object", properties: {} };
	// TypeBox schemas are JSON Schema with symbol-keyed metadata, which JSON drops.
	return JSON.parse(JSON.stringify(schema));
}

function readJson(file) {
	try {
		return JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, ""));
	} catch {
		return {};
	}
}

function merge(base, extra) {
	for (const [key, value] of Object.entries(extra)) {
		const current = base[key];
		if (value && typeof value === "object" && !Array.isArray(value) && current && typeof current === "object" && !Array.isArray(current)) {
			merge(current, value);
		} else {
			base[key] = value;
		}
	}
	return base;
}

/** pi's `getSettings()`: the user settings, with a trusted project's on top. */
function readSettings(agentDir, cwd, projectTrusted) {
	const settings = agentDir ? readJson(path.join(agentDir, "settings.json")) : {};
	return projectTrusted ? merge(settings, readJson(path.join(cwd, ".pi", "settings.json"))) : settings;
}

function scopeOf(location) {
	return location === "project" || location === "user" ? location : "temporary";
}

/** The API object and what it registered. */
export class Instance {
	/** `renewed`: made again for a later runtime (a new session, a reload), not at start. */
	constructor({ channel, hello, renewed = false, contexts, bus, onChange, reportError }) {
		this.channel = channel;
		this.contexts = contexts;
		this.handlers = new Map();
		this.commands = new Map();
		this.tools = new Map();
		this.flags = new Map();
		this.shortcuts = new Map();
		this.virtualModels = new VirtualModels();
		this.providers = new Providers(() => this.onChange(), {
			agentDir: hello.agentDir ?? process.env.PI_CODING_AGENT_DIR,
			// Offline, or print mode (`catalogNetwork` false): no network refresh; nor in pi's RPC mode
			// for an instance made again (pi refreshes from the network for its first runtime alone).
			offline: hello.offline === true || hello.catalogNetwork === false || (renewed && hello.catalogNetworkFirstInstance === true),
			channel,
			// An SDK session's extensions: its runtime layer refreshes config forms (registration-refresh.cjs).
			configRefresh: hello.configRefresh !== false,
		});
		this.bus = bus;
		this.onChange = onChange;
		this.reportError = reportError;
		this.flagValues = hello.flags ?? {};
		this.cwd = hello.cwd;
		this.agentDir = hello.agentDir ?? process.env.PI_CODING_AGENT_DIR;
		this.projectTrusted = hello.projectTrusted === true;
		this.unsupportedReported = new Set();
		this.hello = hello;
		this.pi = this.unboundBeforeSession(this.createApi(hello));
	}

	/**
	 * `api` with pi's unbound runtime before the session: an extension
	 * started to answer `project_trust` (its `hello` names no session until
	 * the session adopts it) gets pi's errors from the actions that need one,
	 * as pi's extensions do while they load and answer it; so does a factory
	 * while it runs (pi binds the runtime once its extensions have loaded).
	 */
	unboundBeforeSession(api) {
		const beforeSession = () => this.hello.sessionId === "" || !this.bound;
		for (const name of UNBOUND_ACTIONS) {
			const action = api[name];
			api[name] = function (...args) {
				if (beforeSession()) throw new Error(NOT_INITIALIZED);
				return action.apply(this, args);
			};
		}
		const setModel = api.setModel;
		api.setModel = async (...args) => {
			if (beforeSession()) throw new Error(SET_MODEL_NOT_INITIALIZED);
			return setModel(...args);
		};
		return api;
	}

	handlersFor(event) {
		return [...(this.handlers.get(event) ?? [])];
	}

	registration(name) {
		const events = new Set([...this.handlers.keys()].filter((e) => this.handlers.get(e).length > 0));
		// The host itself needs these (instance replacement, the event bus).
		events.add("session_start");
		events.add("session_shutdown");
		events.add("bus");
		// pi awaits `agent_settled` handlers before the client's `agent_settled`: awaited only when there are some.
		if (events.has("agent_settled")) events.add("agent_settled_handlers");
		events.add("agent_settled");
		// pi's `turn_end` is an actionable boundary (a hook); the notifications keep the turn count.
		if (events.has("turn_end")) events.add("turn_end_boundary");
		// pi awaits `message_end` handlers, which may replace the message: a hook, not a notification.
		if (events.delete("message_end")) events.add("message_end_hook");
		// pi awaits `agent_end` handlers before the run goes on or settles (what they queue is the run's).
		if (events.delete("agent_end")) events.add("agent_end_hook");
		if (events.has("turn_start") || events.has("turn_end")) events.add("agent_start").add("turn_end");
		// A streaming reply's `message_start` / `message_update` come with pi's streaming message (streaming-message.mjs).
		if (events.delete("message_update") || events.has("message_start")) events.add("message_stream");
		return {
			type: "register",
			name,
			commands: [...this.commands.values()].map((c) => ({ name: c.name, description: c.description })),
			tools: [...this.tools.values()].map((t) => ({
				name: t.name,
				description: t.description ?? "",
				parameters: plainSchema(t.parameters),
				outputSchema: t.outputSchema === undefined ? undefined : plainSchema(t.outputSchema),
				active: t.defaultActive !== false && MODEL_EXPOSURES.has(t.exposure),
				exposure: t.exposure,
				executionMode: t.executionMode,
				label: t.label,
				promptSnippet: t.promptSnippet,
				promptGuidelines: t.promptGuidelines,
				// pi-rpc asks for it before schema validation, as pi runs it.
				prepareArguments: typeof t.prepareArguments === "function" ? true : undefined,
			})),
			events: [...events],
			// pi awaits session_start handlers before the first command.
			awaitSessionStart: true,
			// pi awaits its notification handlers (turn_start, message_start, model_select, …): pi-rpc asks, we answer when done.
			awaitEvents: true,
			virtualModels: this.virtualModels.catalog(),
			providers: this.providers.catalog(),
			flags: [...this.flags].map(([flag, options]) => ({ name: flag, type: options.type })),
		};
	}

	/**
	 * pi announces a registration change made after load to this extension's
	 * handlers within the call (pi-rpc tells the other extensions).
	 */
	mcpServersChanged(servers) {
		// Before the session (asked about project trust) nothing is announced: pi's runner binds with the session.
		if (!this.bound || this.stale || this.hello.sessionId === "") return;
		dispatch(this, { type: "mcp_servers_change", servers }, this.contexts.event(undefined), this.reportError);
	}

	unsupported(what) {
		if (this.unsupportedReported.has(what)) return;
		this.unsupportedReported.add(what);
		this.reportError(what, `${what} is not supported by pi-rpc's extension host`);
	}

	createApi() {
		const self = this;
		const ch = this.channel;
		const state = () => this.contexts.state();
		const invalidate = () => this.contexts.cache.clear();
		/** A tool registered just now reaches pi-rpc before the tools are read (pi's registry changes in place). */
		const flushTools = () => {
			if (self.flushRegistration?.()) invalidate();
		};
		const syncWrite = (method, params) => {
			const result = ch.call(method, params);
			invalidate();
			return result;
		};
		return {
			on(event, handler) {
				if (typeof handler !== "function") throw new TypeError(`pi.on("${event}"): the handler must be a function`);
				const list = self.handlers.get(event) ?? [];
				list.push(handler);
				self.handlers.set(event, list);
				self.onChange();
				return () => {
					const current = self.handlers.get(event) ?? [];
					const i = current.indexOf(handler);
					if (i >= 0) current.splice(i, 1);
					self.onChange();
				};
			},
			registerTool(definition) {
				if (!definition || typeof definition.name !== "string" || !definition.name) {
					throw new TypeError("pi.registerTool(): a tool needs a name");
				}
				if (typeof definition.execute !== "function") {
					throw new TypeError(`pi.registerTool(): tool "${definition.name}" needs an execute() function`);
				}
				self.tools.set(definition.name, definition);
				self.onChange();
			},
			registerCommand(name, options = {}) {
				if (typeof options.handler !== "function") {
					throw new TypeError(`pi.registerCommand("${name}"): the command needs a handler`);
				}
				self.commands.set(name, { name, description: options.description, handler: options.handler });
				self.onChange();
			},
			registerShortcut(shortcut, options) {
				// Accepted: there is no keyboard in RPC mode.
				self.shortcuts.set(shortcut, options);
			},
			registerFlag(name, options = {}) {
				if (options.default !== undefined && typeof options.default !== options.type) {
					throw new Error(`Invalid default for flag "${name}": expected ${options.type}, got ${typeof options.default}`);
				}
				self.flags.set(name, options);
			},
			getFlag(name) {
				// pi: only the extension's own flags; the command line's value once loaded (the default while loading).
				const flag = self.flags.get(name);
				if (!flag) return undefined;
				if (self.bound && Object.hasOwn(self.flagValues, name)) {
					const value = self.flagValues[name];
					if (flag.type === "boolean") return true;
					if (typeof value === "string") return value;
				}
				return flag.default;
			},
			registerMessageRenderer() {},
			registerEntryRenderer() {},
			registerMarkdownTransformer() {},
			registerToolRenderer(resolver) {
				// Kept for pi's `ExtensionRunner.resolveToolRenderers` (an SDK session's); RPC mode draws nothing.
				(self.toolRenderers ??= []).push(resolver);
			},
			sendMessage(message, options = {}) {
				ch.tell("sendMessage", {
					customType: message?.customType,
					content: message?.content,
					display: message?.display,
					details: message?.details,
					triggerTurn: options.triggerTurn,
					deliverAs: options.deliverAs,
				});
			},
			sendUserMessage(content, options = {}) {
				ch.tell("sendUserMessage", {
					content,
					deliverAs: options.deliverAs,
					expandPromptTemplates: options.expandPromptTemplates,
				});
			},
			appendEntry(customType, data) {
				syncWrite("appendEntry", { customType, data });
			},
			setSessionName(name) {
				syncWrite("setSessionName", { name: name ?? "" });
			},
			getSessionName() {
				return state().sessionName ?? undefined;
			},
			setLabel(entryId, label) {
				syncWrite("setLabel", { entryId, label: label ?? null });
			},
			getCommands() {
				return ch.call("getCommands").commands.map((c) => ({
					name: c.name,
					description: c.description ?? undefined,
					source: c.source,
					sourceInfo: c.sourceInfo
						? { ...c.sourceInfo, baseDir: c.sourceInfo.baseDir ?? undefined }
						: { path: c.path ?? "", source: "local", scope: scopeOf(c.location), origin: "top-level" },
				}));
			},
			exec(command, args, options) {
				return exec(command, args, options, self.cwd);
			},
			getActiveTools() {
				flushTools();
				return [...(state().activeTools ?? [])];
			},
			getAllTools() {
				flushTools();
				return ch.call("getAllTools").tools.map((t) => ({
					name: t.name,
					description: t.description,
					parameters: t.parameters,
					promptGuidelines: t.promptGuidelines ?? [],
					exposure: t.exposure ?? "direct",
					sourceInfo: t.sourceInfo
						? { ...t.sourceInfo, baseDir: t.sourceInfo.baseDir ?? undefined }
						: {
								path: t.path ?? t.builtinPath ?? `builtin:${t.name}`,
								source: "builtin",
								scope: "temporary",
								origin: "top-level",
							},
				}));
			},
			setActiveTools(names) {
				flushTools();
				syncWrite("setActiveTools", { names: [...(names ?? [])] });
			},
			async setModel(model) {
				const ok = await ch.request("setModel", { provider: model?.provider, id: model?.id });
				invalidate();
				return ok === true;
			},
			getThinkingLevel() {
				return state().thinkingLevel;
			},
			setThinkingLevel(level) {
				// When this extension's handlers come first, pi runs them up to their first wait before the call returns.
				const own = syncWrite("setThinkingLevel", { level });
				if (own?.run !== undefined) self.startUnawaited?.(own);
			},
			getSettings() {
				return readSettings(self.agentDir, self.cwd, self.projectTrusted);
			},
			events: self.bus,
			registerProvider(nameOrProvider, config) {
				self.providers.register(nameOrProvider, config);
				self.onChange();
			},
			unregisterProvider(name) {
				if (self.providers.unregister(name)) self.onChange();
			},
			registerVirtualModel(definition) {
				self.virtualModels.register(definition);
				self.onChange();
			},
			unregisterVirtualModel(provider, id) {
				if (self.virtualModels.unregister(provider, id)) self.onChange();
			},
			// Kept by pi-rpc for every extension of the session; its MCP client connects them.
			registerMcpServer(name, config) {
				const { servers } = ch.call("registerMcpServer", { name, config: JSON.parse(JSON.stringify(config ?? null)) });
				self.mcpServersChanged(servers);
			},
			unregisterMcpServer(name) {
				const before = JSON.stringify(self.pi.getMcpServers());
				const { servers } = ch.call("unregisterMcpServer", { name });
				if (JSON.stringify(servers) !== before) self.mcpServersChanged(servers);
			},
			getMcpServers() {
				return ch.call("getMcpServers").servers;
			},
			// The hook of pi's built-in extension factories (shims/coding-agent/builtin-extensions.cjs).
			// `commandsBefore`: pi registers the factory's `/mcp` now, after the commands registered so far.
			// `functions`: the options pi-rpc calls back (MCP's `createTransport`, its `credentials` / `openUrl` as `mcpAuth`), kept here once pi-rpc took the factory.
			[Symbol.for("pi-rpc.useBuiltinExtension")](name, options, functions) {
				syncWrite("useBuiltinExtension", { name, options, commandsBefore: self.commands.size });
				if (name === "mcp" && typeof functions?.createTransport === "function") self.mcpTransportFactory = functions.createTransport;
				if (name === "mcp" && typeof functions?.mcpAuth === "function") self.mcpAuth = functions.mcpAuth;
			},
		};
	}
}

/** `pi.events`: shared by the extension's instances and, through pi-rpc, the other extensions. */
export function createBus(channel) {
	const listeners = new Map();
	const deliver = (name, data) => {
		for (const fn of [...(listeners.get(name) ?? [])]) {
			try {
				fn(data);
			} catch (error) {
				process.stderr.write(`event bus listener for ${name} failed: ${error?.stack ?? error}\n`);
			}
		}
	};
	return {
		on(name, fn) {
			const list = listeners.get(name) ?? [];
			list.push(fn);
			listeners.set(name, list);
			return () => {
				const i = list.indexOf(fn);
				if (i >= 0) list.splice(i, 1);
			};
		},
		off(name, fn) {
			const list = listeners.get(name) ?? [];
			const i = list.indexOf(fn);
			if (i >= 0) list.splice(i, 1);
		},
		emit(name, data) {
			deliver(name, data);
			channel.tell("emit", { channel: name, data });
		},
		/** A message another extension emitted. */
		receive(name, data) {
			deliver(name, data);
		},
		clear() {
			listeners.clear();
		},
	};
}
