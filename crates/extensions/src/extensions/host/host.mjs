// pi-rpc extension host: runs one extension written against pi's own
// TypeScript API (`export default function (pi: ExtensionAPI) {…}`) as a
// pi-rpc process extension (README-extensions.md). pi-rpc starts it as
//
//   node host.mjs <extension file>
//
// with PI_RPC_EXTENSION_HOST_MODULES naming the directory whose
// node_modules hold jiti (the TypeScript loader pi itself uses) and typebox.
// Imports of pi's packages resolve to the host's own modules (shims/), as
// pi maps them to its copies; `typebox` and `@sinclair/typebox` to the
// installed typebox. stdout is the protocol: anything the extension prints
// goes to stderr.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { format } from "node:util";

// The extension must never write on the protocol channel (fd 1, which only
// the I/O thread touches; reading process.stdout here would open it).
Object.defineProperty(process, "stdout", { configurable: true, enumerable: true, get: () => process.stderr });
for (const level of ["log", "info", "debug", "trace", "dir"]) {
	console[level] = (...args) => process.stderr.write(`${format(...args)}\n`);
}

const NODE_MAJOR = Number(process.versions.node.split(".")[0]);
if (NODE_MAJOR < 20) {
	const error = `TypeScript extensions need Node.js >= 20; ${process.execPath} is ${process.version}`;
	fs.writeSync(1, `${JSON.stringify({ type: "request", method: "fail", params: { event: "startup", error } })}\n`);
	process.exit(1);
}

const { Channel } = await import("./channel.mjs");
const { Instance, createBus } = await import("./api.mjs");
const { Providers } = await import("./providers.mjs");
const { createContextFactory } = await import("./context.mjs");
const { runHook, dispatch, projectTrust } = await import("./hooks.mjs");
const { createServices } = await import("./services.mjs");
const { createMcpTransports } = await import("./mcp-transports.mjs");
const { normalizeOptions } = await import("./prompt-options.mjs");
const { StreamingMessage } = await import("./streaming-message.mjs");

const extensionPath = path.resolve(process.argv[2] ?? "");
const modulesDir = process.env.PI_RPC_EXTENSION_HOST_MODULES ?? path.dirname(new URL(import.meta.url).pathname);

const errorText = (error) => (error instanceof Error ? error.message : String(error));

let hello;
let helloArrived;
const helloPromise = new Promise((resolve) => (helloArrived = resolve));
/**
 * pi loads its extensions one after another. With `loadTurn` in `hello`,
 * this module is compiled and imported at once, beside the others, but its
 * factory runs on pi-rpc's `turn`: once the extension loaded before it has
 * run its own, so the factory sees what pi's would of the others.
 */
let turnArrived;
const turnPromise = new Promise((resolve) => (turnArrived = resolve));
let instance;
let contexts;
/** What the shims reach (host-services.cjs); set once `hello` arrived. */
let services;
let chain = Promise.resolve();
const controllers = new Map();
let turnIndex = 0;
/** pi's streaming message of the reply the agent streams (`message_stream`). */
const streamingMessage = new StreamingMessage();

/** Run `work` after everything queued before it (events and hooks keep their order, as in pi). */
function serial(work) {
	const run = chain.then(work);
	chain = run.catch(() => {});
	return run;
}

/** Run `work` after everything queued before it, holding nothing queued after it. */
function alongside(work) {
	return chain.then(work);
}

const channel = new Channel(onLine, () => {
	// pi-rpc closed our input: finish what is queued (session_shutdown), then go.
	serial(() => {}).finally(() => channel.exit(0));
});
const mcpTransports = createMcpTransports(channel);

/**
 * A sign of life while loading: pi-rpc's start-up limit counts from the last
 * one, so that a slow start on a loaded machine is not taken for a hang.
 */
function starting(step) {
	if (!instance) channel.tell("starting", { step });
}
starting("host");

function reportError(event, error) {
	channel.tell("reportError", { event, error: errorText(error) });
}

process.on("uncaughtException", (error) => reportError("error", error));
process.on("unhandledRejection", (error) => reportError("error", error));
process.on("exit", (code) => {
	if (code !== 0) process.stderr.write(`the extension host exited with code ${code}\n`);
});

function fail(event, error) {
	channel.tell("fail", { event, error: errorText(error) });
	// pi-rpc stops the process when it reads `fail`; do not linger if it does not.
	setTimeout(() => process.exit(1), 2000).unref();
}

function onLine(line) {
	let message;
	try {
		message = JSON.parse(line);
	} catch {
		process.stderr.write(`unreadable line from pi-rpc: ${line.slice(0, 200)}\n`);
		return;
	}
	switch (message.type) {
		case "hello":
			helloArrived(message);
			break;
		case "turn":
			turnArrived();
			break;
		case "invalidate":
			// Every old instance had its `session_shutdown`: its `pi.events` listeners are gone, as pi invalidates its old runtime.
			serial(() => instance?.bus.clear());
			break;
		case "bind":
			// pi binds its new runtime once the last factory ran: the session's actions answer from now on.
			serial(() => {
				if (instance) instance.bound = true;
			});
			break;
		case "detachUi":
			// A command's `newSession({setup})` is about to run: pi's new runtime has no UI until it is done.
			uiAttached = false;
			break;
		case "attachUi":
			// The setup is done: the UI is given to the new runtime before its `session_start`.
			serial(() => {
				uiAttached = true;
			});
			break;
		case "setup":
			// A command's `newSession({setup})`: the new runtime is bound, its `session_start` waits for the setup.
			serial(() => {
				const gate = sessionStartGate;
				sessionStartGate = undefined;
				gate?.reach();
			});
			break;
		case "session":
			// Started to answer project_trust, kept for the session: its facts now.
			serial(() => joinSession(message));
			break;
		case "response":
			channel.resolve(message);
			break;
		case "cancel":
			controllers.get(String(message.id))?.abort();
			break;
		case "event": {
			const event = message.event ?? {};
			// pi does not await prompt-span handlers, nor queue them behind a hook waiting on that very prompt.
			if (event.type === "ui_prompt_start" || event.type === "ui_prompt_end") {
				if (instance) dispatch(instance, event, contexts.event(undefined), reportError);
			} else if (event.type === "message_stream") {
				receiveStream(event);
			} else {
				inTurn(event);
			}
			break;
		}
		case "request":
			if (!services?.handle(message, controllers)) onRequest(message);
			break;
		default:
			process.stderr.write(`unknown message from pi-rpc: ${message.type}\n`);
	}
}

/** A streaming reply's read (`message_stream`): applied now, its events handled in turn (streaming-message.mjs); done when the last is. */
function receiveStream(stream) {
	let last = serial(() => {});
	for (const made of streamingMessage.receive(stream)) last = serial(() => onEvent(made()));
	return last;
}

/** The handlers of the last read handed over with `stream_dispatch`. */
let streamUnderway = Promise.resolve();

/**
 * A streaming reply's read while pi-rpc reads the body on (an extension
 * listens to `provider_stream_event`): answered once every handler that
 * could run did, as after pi's microtasks (the rest wait on a timer or
 * I/O), saying whether they are done; `stream_drain` waits for the rest.
 */
function dispatchStream(stream) {
	const underway = receiveStream(stream);
	streamUnderway = underway;
	let outcome;
	underway.then(
		() => (outcome = { done: true }),
		(error) => (outcome = { error }),
	);
	return new Promise((answer, fail) => setImmediate(() => (outcome && "error" in outcome ? fail(outcome.error) : answer({ done: outcome !== undefined }))));
}

/**
 * Handle `event` after those queued before it, but `model_select`: pi
 * emits it on its own (a model switch's answer, or an extension's
 * `pi.setModel()`, awaits its handlers), so they run beside whatever else
 * this extension's handlers or hooks await, the handler calling
 * `pi.setModel()` included.
 */
function inTurn(event) {
	return event.type === "model_select" ? onEvent(event) : serial(() => onEvent(event));
}

/** The handlers of events pi emits without awaiting them, by run (`event_started`, an own `pi.setThinkingLevel()`). */
const unawaitedRuns = new Map();

/**
 * Start run `run` of `event`'s handlers (`thinking_level_select`) beside
 * the queue, as pi's emit starts them: up to their first wait now, the
 * rest beside whatever else this extension's handlers await.
 */
function startUnawaited({ run, event }) {
	const running = onEvent(event ?? {}).catch((error) => reportError(event?.type ?? "event", error));
	unawaitedRuns.set(String(run), running);
	return null;
}

/** Run `run`'s handlers, done. */
function finishUnawaited({ run }) {
	const running = unawaitedRuns.get(String(run)) ?? Promise.resolve();
	unawaitedRuns.delete(String(run));
	return running.then(() => null);
}

async function onEvent(event) {
	if (!instance) return;
	// An event means the agent has moved on: a snapshot read before it (the
	// tick cache of `getSession`/`getState`) must not answer its handlers.
	contexts.cache.clear();
	switch (event.type) {
		case "session_start":
			// The new instance was made in pi-rpc's phases before (`replace_shutdown`, `replace_factory`, `bind`).
			// pi's event has no session id (pi-rpc's other process extensions get it).
			delete event.sessionFile;
			delete event.initial;
			delete event.sessionId;
			break;
		case "bus":
			instance.bus.receive(event.channel, event.data);
			return;
		case "agent_start":
			turnIndex = 0;
			break;
		case "agent_settled":
			contexts.settled();
			break;
		case "turn_start":
			event.turnIndex = turnIndex;
			event.timestamp ??= Date.now();
			break;
		case "turn_end":
			// The handlers ran at the boundary (`turn_end_boundary`), before this notification.
			turnIndex++;
			return;
		default:
	}
	await dispatch(instance, event, contexts.event(undefined), reportError);
}

function onRequest(message) {
	const { id, method } = message;
	const params = message.params ?? {};
	const controller = new AbortController();
	controllers.set(String(id), controller);
	let work;
	if (method === "command") work = runCommand(params, controller.signal);
	else if (method === "execute_tool") work = runTool(params, controller.signal);
	else if (method === "prepare_arguments") work = prepareArguments(params);
	else if (method === "provider_stream") work = instance.providers.stream(params, controller.signal, channel);
	else if (method === "provider_oauth") work = instance.providers.oauth(params);
	else if (method === "provider_typed") work = instance.providers.typed(params, controller.signal);
	else if (method === "model_stream_hook") work = services.modelStreamHook(params);
	// An OAuth login's event or question for the caller's interaction (ModelRuntime.login, shims/coding-agent/models.cjs).
	else if (method === "login_interaction") work = Promise.resolve().then(() => services.logins.get(params.login)?.(params) ?? null);
	// The `session_start` of a new session pi-rpc held while another extension's `newSession` setup ran: answered once handled.
	else if (method === "session_start" && params.reason && params.reason !== "startup") work = serial(() => onEvent(params));
	// A new runtime's phases: every old instance's `session_shutdown`, then every factory in turn.
	else if (method === "replace_shutdown") work = serial(() => shutdownInstance(params));
	else if (method === "replace_factory") work = serial(() => renewInstance());
	else if (method === "project_trust") work = serial(() => projectTrust(instance, params));
	// An SDK session's MCP extension opens its servers with its own `createTransport` (session-mcp-tools.cjs).
	else if (method === "mcp_transport") work = mcpTransports.request(params.session !== undefined ? services.sdkMcpTransports.get(params.session) : instance?.mcpTransportFactory, params);
	// createMcpExtension's `credentials` / `openUrl` (shims/coding-agent/builtin-extensions.cjs).
	// An SDK session's go to that session's factory (session-mcp-tools.cjs).
	else if (method === "mcp_auth") work = Promise.resolve().then(() => mcpAuthHandler(params)?.(params) ?? Promise.reject(new Error("this extension gave createMcpExtension no credentials")));
	// A notification pi awaits (`awaitEvents`): answered once its handlers are done, in event order with the others.
	else if (method === "event") work = params?.type === "message_stream" ? receiveStream(params) : inTurn(params);
	else if (method === "stream_dispatch") work = dispatchStream(params);
	else if (method === "stream_drain") work = streamUnderway;
	// pi-ai awaits these handlers as it reads the body, apart from the agent's handlers: not in turn behind them.
	else if (method === "provider_stream_event") work = hook(method, params, controller.signal);
	// One pi emits without awaiting it (thinking_level_select): its handlers start beside the queue,
	// answered once they ran up to their first wait; `event_finished` once they are done.
	else if (method === "event_started") work = Promise.resolve(startUnawaited(params));
	else if (method === "event_finished") work = finishUnawaited(params);
	// pi asks the `input` hooks about each prompt as it comes: another prompt's are asked while these decide.
	else if (method === "input") work = alongside(() => hook(method, params, controller.signal));
	else if (method === "route_model") work = instance.virtualModels.route(params, contexts.event(controller.signal), controller.signal, instance.pi);
	else
		work = serial(() => hook(method, params, controller.signal));
	work.then(
		(result) => channel.send({ type: "response", id, result: result ?? null }),
		(error) => channel.send({ type: "response", id, error: errorText(error) || "failed" }),
	).finally(() => controllers.delete(String(id)));
}

/** The extension's `method` hook. */
function hook(method, params, signal) {
	// A hook means the agent has moved on (a `turn_end` boundary after the `message_end` that recorded its entry).
	contexts.cache.clear();
	return runHook(instance, method, params, contexts.event(signal), reportError);
}

async function runCommand({ name, args }, signal) {
	const command = instance.commands.get(name);
	if (!command) throw new Error(`unknown command: ${name}`);
	// The agent has moved on since a snapshot read in this task (a replaced session's `session_start` handlers).
	contexts.cache.clear();
	await command.handler(args ?? "", contexts.command(signal));
	return null;
}

/** Who answers an `mcp_auth` call: `/mcp`'s UI in an SDK session (`ui.*` ops), that session's factory, else this extension's. */
function mcpAuthHandler(params) {
	if (params.session === undefined) return instance?.mcpAuth;
	return String(params.op).startsWith("ui.") ? services.sdkMcpUi.get(params.session) : services.sdkMcpAuth.get(params.session);
}

/** A tool's `prepareArguments`, which pi-rpc asks for before it validates the arguments (as pi runs it). */
async function prepareArguments({ toolName, input }) {
	const tool = instance.tools.get(toolName);
	if (!tool) throw new Error(`unknown tool: ${toolName}`);
	return { args: typeof tool.prepareArguments === "function" ? tool.prepareArguments(input) : input };
}

async function runTool({ toolName, toolCallId, input }, signal) {
	const tool = instance.tools.get(toolName);
	if (!tool) throw new Error(`unknown tool: ${toolName}`);
	// Already prepared by pi-rpc before validation (`prepare_arguments`).
	const args = input;
	const onUpdate = (partial) =>
		channel.tell("toolUpdate", { toolCallId, content: partial?.content ?? [], details: partial?.details });
	const result = await tool.execute(toolCallId, args, signal, onUpdate, contexts.tool(signal, toolCallId));
	return {
		content: result?.content ?? [],
		details: result?.details,
		isError: result?.isError === true,
		terminate: result?.terminate === true ? true : undefined,
		usage: result?.usage,
		structuredContent: result?.structuredContent,
	};
}

// --- loading -------------------------------------------------------------

function displayName(file) {
	const base = path.basename(file);
	return /^index\.[cm]?[jt]s$/.test(base) ? path.basename(path.dirname(file)) : base;
}

/** The entry module of an installed package (its `main`, else `index.js`). */
function packageEntry(name) {
	const dir = path.join(modulesDir, "node_modules", ...name.split("/"));
	const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
	return path.join(dir, manifest.main ?? "index.js");
}

/** The path of one of the host's modules standing in for pi's packages. */
const shim = (name) => new URL(`./shims/${name}.cjs`, import.meta.url).pathname;

/**
 * pi's agent loop (@earendil-works/pi-agent-core), the installed package:
 * its imports of pi-ai go to the host's pi-ai, and its default stream
 * function is that pi-ai's `streamSimple` (`pi-ai/compat`'s), as pi's SDK sets pi-ai's own, so
 * the loop's model calls run through pi-rpc's providers.
 */
function loadAgentCore() {
	const load = createJiti(import.meta.url, {
		alias: { "@earendil-works/pi-ai": shim("pi-ai") },
		interopDefault: true,
		fsCache: transpileCache(),
	});
	const core = load(packageEntry("@earendil-works/pi-agent-core"));
	core.setDefaultStreamFn(load(shim("pi-ai-compat")).streamSimple);
	return core;
}

/** What the shims reach through `host-services.cjs`: pi-rpc, and pi's own packages the host installed. */
function installServices() {
	let tui;
	let agentCore;
	services = createServices(channel, hello);
	/** The `createTransport` of each SDK session's MCP extension, by the session id pi-rpc knows its connections by. */
	services.sdkMcpTransports = new Map();
	/** The `credentials` / `openUrl` handler (`mcp_auth`) of each SDK session's MCP extension, by session id. */
	services.sdkMcpAuth = new Map();
	/** The UI (`mcp_auth`'s `ui.*` ops) of the `/mcp` command running in each SDK session, by session id. */
	services.sdkMcpUi = new Map();
	services.tui = () => {
		// pi's TUI library (@earendil-works/pi-tui), loaded once and shared by every import of it.
		tui ??= libraryJiti(packageEntry("@earendil-works/pi-tui"));
		return tui;
	};
	services.agentCore = () => {
		// Loaded once and shared by every import of it, as pi shares its copy.
		agentCore ??= loadAgentCore();
		return agentCore;
	};
	const packages = new Map();
	/** An npm package the host installed (yaml, partial-json), loaded once. */
	services.package = (name) => {
		if (!packages.has(name)) packages.set(name, libraryJiti(packageEntry(name)));
		return packages.get(name);
	};
	/** A module of the host's packages by its path (highlight.js's core and grammars), loaded by Node's require. */
	services.require = createRequire(path.join(modulesDir, "package.json"));
	/** pi's registry facade over pi-rpc's catalog and credentials (`ctx.modelRegistry`), for pi's SDK classes. */
	services.modelRegistry = () => contexts.modelRegistry;
	/** What pi's `ExtensionRunner` in an SDK session reuses (shims/coding-agent/extension-runner.cjs). */
	services.extensionHost = {
		Instance,
		/** A registration store of providers (api.mjs's `pi.registerProvider`'s), for those registered on a `ModelRuntime` by hand. */
		Providers,
		dispatch,
		runHook,
		normalizeOptions,
		/** An extension file, loaded as this host loads its own (aliases, transpile cache). */
		importExtension: (file) =>
			createJiti(file, { alias: aliases(services.require), interopDefault: true, moduleCache: false, fsCache: transpileCache() }).import(file),
	};
	/** The interactions of OAuth logins under way, by login id (`login_interaction` calls). */
	services.logins = new Map();
	globalThis[Symbol.for("pi-rpc.extension-host")] = services;
}

/** jiti's aliases: pi's packages to the shims, typebox (and its subpaths) to the installed one. */
function aliases(require) {
	const alias = {};
	for (const scope of ["@earendil-works", "@mariozechner"]) {
		alias[`${scope}/pi-coding-agent`] = shim("pi-coding-agent");
		alias[`${scope}/pi-ai/compat`] = shim("pi-ai-compat");
		alias[`${scope}/pi-ai/models`] = shim("pi-ai-models");
		alias[`${scope}/pi-ai/oauth`] = shim("pi-ai-oauth");
		alias[`${scope}/pi-ai/providers/all`] = shim("pi-ai-compat");
		alias[`${scope}/pi-ai`] = shim("pi-ai");
		alias[`${scope}/pi-tui`] = shim("pi-tui");
		alias[`${scope}/pi-agent-core`] = shim("pi-agent-core");
	}
	const typebox = require.resolve("typebox");
	alias.typebox = typebox;
	alias["@sinclair/typebox"] = typebox;
	const manifest = packageManifest(typebox, "typebox");
	for (const key of Object.keys(manifest.exports ?? {})) {
		const sub = key.replace(/^\.\//, "");
		if (key === "." || sub.includes("*") || sub === "package.json") continue;
		const target = require.resolve(`typebox/${sub}`);
		alias[`typebox/${sub}`] = target;
		alias[`@sinclair/typebox/${sub}`] = target;
	}
	// typebox 0.x names of the same modules.
	if (alias["typebox/compile"]) alias["@sinclair/typebox/compiler"] = alias["typebox/compile"];
	return alias;
}

/** The package.json of the package `name` that `file` belongs to. */
function packageManifest(file, name) {
	for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
		try {
			const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
			if (manifest.name === name) return manifest;
		} catch {
			// not here
		}
	}
	return {};
}

let jiti;

/** Where jiti keeps its transpiled files: beside the host's packages, so every run after the first is warm. */
function transpileCache() {
	const dir = path.join(modulesDir, ".cache", "jiti");
	try {
		fs.mkdirSync(dir, { recursive: true });
		fs.accessSync(dir, fs.constants.W_OK);
		return dir;
	} catch {
		return true;
	}
}
/** A jiti with a module cache, for the libraries the shims load (each loaded once). */
let libraryJiti;
/** jiti's `createJiti`, from the host's packages. */
let createJiti;

async function loadFactory() {
	const module = await jiti.import(extensionPath);
	const factory = typeof module === "function" ? module : module?.default;
	if (typeof factory !== "function") {
		throw new Error(`Extension does not export a valid factory function: ${extensionPath}`);
	}
	return factory;
}

/** `bindNow`: the session's actions answer once the factory returned (else at pi-rpc's `bind`). */
async function createInstance(bindNow, renewed = false) {
	let registerQueued = false;
	// The changed registration goes out: at the end of this tick, or at once
	// when the registry is read next (pi's model runtime changes in place).
	const flush = () => {
		if (!registerQueued) return false;
		registerQueued = false;
		if (current.instance.stale) return false;
		channel.send(current.instance.registration(displayName(extensionPath)));
		return true;
	};
	const onChange = () => {
		if (!current.ready || current.instance.stale || registerQueued) return;
		registerQueued = true;
		queueMicrotask(flush);
	};
	const current = { ready: false, instance: undefined };
	const factory = await loadFactory();
	if (hello.loadTurn === true) await turnPromise;
	starting("factory");
	current.instance = new Instance({
		channel,
		hello,
		renewed,
		contexts,
		bus: createBus(channel),
		onChange,
		reportError,
	});
	current.instance.flushRegistration = flush;
	current.instance.startUnawaited = startUnawaited;
	await factory(current.instance.pi);
	// A native provider's key and offline model refresh go out with the first registration.
	await current.instance.providers.settled();
	current.ready = true;
	current.instance.bound = bindNow;
	return current.instance;
}

/** The gate of the next replacement's `session_start` (see `onEvent`). */
let sessionStartGate;
/** Whether the runtime has its UI (not while a command's `newSession({setup})` runs). */
let uiAttached = true;

/** Hold the next replacement's `session_start`: `reached` once it is due, `release()` lets it go. */
function gateSessionStart() {
	const gate = {};
	gate.reached = new Promise((resolve) => (gate.reach = resolve));
	gate.released = new Promise((resolve) => (gate.release = resolve));
	sessionStartGate = gate;
	const cancel = () => {
		if (sessionStartGate === gate) sessionStartGate = undefined;
		gate.release();
	};
	return { reached: gate.reached, release: gate.release, cancel };
}

/** The session's facts for an instance loaded before it (asked about project trust). */
async function joinSession({ sessionId, sessionFile, projectTrusted }) {
	const facts = hello ?? (await helloPromise);
	facts.sessionId = sessionId;
	facts.sessionFile = sessionFile ?? null;
	facts.projectTrusted = projectTrusted === true;
	if (instance) instance.projectTrusted = facts.projectTrusted;
}

/** A new runtime's first phase: the old instance's `session_shutdown` (its registrations stay until it is made anew). */
async function shutdownInstance({ reason, targetSessionFile }) {
	if (!instance) return null;
	instance.stale = true;
	const shutdown = { type: "session_shutdown", reason, ...(targetSessionFile ? { targetSessionFile } : {}) };
	await dispatch(instance, shutdown, contexts.event(undefined), reportError);
	return null;
}

/** A new runtime's second phase: the factory again, its instance unbound until `bind`; answered once registered. */
async function renewInstance() {
	try {
		instance = await createInstance(false, true);
	} catch (error) {
		fail("load", `Failed to load extension: ${errorText(error)}`);
		return null;
	}
	channel.send(instance.registration(displayName(extensionPath)));
	return null;
}

hello = await helloPromise;
contexts = createContextFactory(channel, hello, {
	afterEvents: () => serial(() => {}),
	api: () => instance.pi,
	providers: () => instance?.providers,
	flushRegistration: () => instance?.flushRegistration?.(),
	gateSessionStart,
	uiAttached: () => uiAttached,
});
try {
	const require = createRequire(path.join(modulesDir, "package.json"));
	({ createJiti } = require("jiti"));
	jiti = createJiti(extensionPath, { alias: aliases(require), interopDefault: true, moduleCache: false, fsCache: transpileCache() });
	libraryJiti = createJiti(import.meta.url, { interopDefault: true, tryNative: true });
	installServices();
	starting("module");
} catch (error) {
	fail("load", `the extension host cannot load its modules (jiti, typebox) from ${modulesDir}: ${errorText(error)}`);
	await new Promise(() => {});
}
try {
	// Bound with the others, at pi-rpc's `bind`, once every factory ran (at start-up as at a reload).
	instance = await createInstance(hello.bindOnRequest !== true);
} catch (error) {
	const text = errorText(error);
	fail("load", text.startsWith("Extension does not export") ? text : `Failed to load extension: ${text}`);
	await new Promise(() => {});
}
channel.send(instance.registration(displayName(extensionPath)));
