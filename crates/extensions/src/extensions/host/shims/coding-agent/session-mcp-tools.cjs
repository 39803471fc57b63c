// pi-rpc extension host: the MCP tools of an SDK session whose resource
// loader has pi's `createMcpExtension()`. pi 1.6.0 connects the configured
// servers again for that session in the background (`mcp.json` read for its
// cwd and project trust, and the servers its own extensions register, also
// later) and registers their tools there whenever a server connects or
// changes its tool list (a tool it dropped is registered again `hidden`);
// at `session_start` it activates `codemode` / `tool_search` when the
// servers' exposures ask for them, or warns that the tools cannot be called
// when neither is there, and once the servers settled it warns about those
// that failed; the first prompt waits for the servers with `direct` tools,
// and a tool that reaches other tools (a codemode script, `tool_search`, the
// resource tools) for the servers it may reach. pi-rpc does the same on
// connections of the sub-session's own (sdk_session_conns.rs), opened by
// the first `mcpTools` request and closed at `session_shutdown` or when the
// session is disposed: `mcpTools` answers the tools once they changed from
// the listing the sub-session has (watched from `session_start` on) or once
// the servers a hook waits for settled, and each registered tool's
// `execute` asks pi-rpc's MCP client to run it there (`mcpCallTool`), its
// progress streamed to `onUpdate` and the call cancelled when its signal
// aborts.

"use strict";

const { randomUUID } = require("node:crypto");
const { services } = require("../host-services.cjs");

/** pi's discovery tools, which reach tools that are not declared to the model. */
const CODEMODE = "codemode";
const TOOL_SEARCH = "tool_search";
/** The resource tools, which reach every server. */
const RESOURCE_TOOLS = new Set(["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]);
/** pi's error when an MCP call's signal aborts (pi-mcp's `McpAbortError`). */
const ABORTED = "MCP request aborted";
/** pi's system-prompt section listing the servers whose tools are not declared. */
const MCP_SERVERS_SECTION = "mcp_servers";
/** The key of a tool registered again as `hidden` (its server dropped it). */
const HIDDEN = "\0hidden";

/** The tool the sub-session `state.session` registers for one of its MCP tools. */
function definitionOf(tool, state) {
	const definition = {
		name: tool.name,
		label: tool.label ?? tool.name,
		description: tool.description ?? "",
		parameters: tool.parameters ?? { type: "object", properties: {} },
		exposure: tool.exposure,
		async execute(toolCallId, params, signal, onUpdate) {
			if (signal?.aborted) throw new Error(ABORTED);
			const call = { session: state.session, name: tool.name, args: params ?? {}, toolCallId: String(toolCallId ?? "") };
			const result = await services().mcpCallTool(call, signal, onUpdate);
			if (signal?.aborted && result.isError) throw new Error(ABORTED);
			const out = { content: result.content ?? [], details: result.details ?? {} };
			if (result.isError) out.isError = true;
			if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
			return out;
		},
	};
	if (tool.namespace) definition.namespace = { name: tool.namespace };
	if (tool.outputSchema) definition.outputSchema = tool.outputSchema;
	return definition;
}

/** pi-rpc's answer to `mcpTools` `params` for the sub-session `state.session` (sdk_session_mcp.rs); `signal` withdraws the request. */
function mcpTools(state, params, signal) {
	return services().mcpTools({ session: state.session, ...params }, signal);
}

/** The servers the sub-session's extensions registered (pi's `getMcpServers()` there). */
function registeredServers(runtime) {
	return [...(runtime?.mcpServers ?? [])].map(([name, config]) => ({ name, config, extensionPath: runtime.mcpServerOwners?.get(name) ?? "<inline>" }));
}

/**
 * The names of `registered` that are new or registered again with another
 * config since the last call (pi connects those); `state.registered`
 * becomes `registered`.
 */
function changedServers(state, registered) {
	const before = state.registered ?? new Map();
	state.registered = new Map(registered.map((server) => [server.name, JSON.stringify(server.config)]));
	return registered.filter((server) => before.get(server.name) !== JSON.stringify(server.config)).map((server) => server.name);
}

/** The sub-session's connections are closed (its servers stopped); the watch withdrawn. */
function closeConnections(state) {
	state.watch?.abort();
	state.life?.abort();
	const session = state.session;
	if (session === undefined) return;
	state.session = undefined;
	services().sdkMcpTransports?.delete(session);
	services().sdkMcpAuth?.delete(session);
	services().mcpTools({ session, close: true }).catch(() => {});
}

/**
 * Register the tools of `answer` that are new or changed since the last
 * listing; tools no server offers any more are registered again `hidden`
 * (tools cannot be unregistered) and leave the active tools.
 */
function applyListing(pi, state, answer) {
	if (answer.version === state.version) return;
	state.version = answer.version;
	const offered = new Set();
	for (const tool of answer.tools ?? []) {
		offered.add(tool.name);
		const key = JSON.stringify(tool);
		if (state.tools.get(tool.name)?.key === key) continue;
		const definition = definitionOf(tool, state);
		state.tools.set(tool.name, { key, definition });
		pi.registerTool(definition);
	}
	const withdrawn = new Set();
	for (const [name, entry] of state.tools) {
		if (offered.has(name) || entry.key === HIDDEN) continue;
		entry.key = HIDDEN;
		withdrawn.add(name);
		pi.registerTool({ ...entry.definition, exposure: "hidden" });
	}
	if (withdrawn.size > 0) pi.setActiveTools(pi.getActiveTools().filter((name) => !withdrawn.has(name)));
}

/** Register the tools as they change, until `session_shutdown` (or pi-rpc goes). */
async function watchTools(pi, state) {
	state.watch?.abort();
	const watch = (state.watch = new AbortController());
	while (!watch.signal.aborted) {
		let answer;
		try {
			answer = await mcpTools(state, { after: state.version }, watch.signal);
		} catch {
			return;
		}
		if (!watch.signal.aborted) applyListing(pi, state, answer);
	}
}

/** Activate the discovery tools the servers' exposures ask for; warn once when none is there (pi's rules). */
function ensureDiscoveryActive(pi, ctx, answer, state) {
	if (!answer.needsCodemode && !answer.needsToolSearch) return;
	const registered = new Set(pi.getAllTools().map((tool) => tool.name));
	const hasCodemode = registered.has(CODEMODE);
	const hasToolSearch = registered.has(TOOL_SEARCH);
	const active = pi.getActiveTools();
	const activate = [];
	if (answer.needsCodemode && hasCodemode && answer.autoEnableCodemode && !active.includes(CODEMODE)) activate.push(CODEMODE);
	if (answer.needsToolSearch && hasToolSearch && !active.includes(TOOL_SEARCH)) activate.push(TOOL_SEARCH);
	if (activate.length > 0) pi.setActiveTools([...active, ...activate]);
	const reachable = [...active, ...activate];
	if (hasCodemode && reachable.includes(CODEMODE)) return;
	if (hasToolSearch && reachable.includes(TOOL_SEARCH)) return;
	if (state.warned) return;
	state.warned = true;
	const autoOff = answer.needsCodemode && hasCodemode && !answer.autoEnableCodemode;
	ctx.ui.notify(autoOff ? answer.unreachableAutoOff : answer.unreachable, "warning");
}

/** What a call of `toolName` with `input` waits for before it runs: the servers it may reach. */
function reachOf(toolName, input) {
	if (toolName === CODEMODE) return { script: typeof input?.code === "string" ? input.code : "" };
	if (toolName === TOOL_SEARCH || RESOURCE_TOOLS.has(toolName)) return "all";
	return undefined;
}

/**
 * Connect the MCP servers for the sub-session of `pi` (`runtime`: its
 * extension runtime) and register their tools there as they offer them;
 * answers the `session` its connections go by (for its `/mcp`).
 * `openOptions()` adds what `createMcpExtension(options)` asks of the
 * connections when they open at `session_start` (`loaded`: what its
 * `loadConfig(ctx)` answered, `startupWaitMs`, `logPath`, `createTransport`,
 * `mcpAuth`: its `credentials` / `openUrl`).
 */
function registerSessionMcpTools(pi, runtime, openOptions = () => ({})) {
	const state = { session: undefined, warned: false, waitedForStartup: false, version: undefined, tools: new Map(), watch: undefined, life: undefined, registered: undefined };
	pi.on("session_start", async (_event, ctx) => {
		closeConnections(state);
		state.session = randomUUID();
		// Withdraws the session's reports when its connections close.
		state.life = new AbortController();
		state.warned = false;
		state.waitedForStartup = false;
		state.version = undefined;
		// The sub-session's own connections, for its cwd and trust and the servers its extensions registered.
		const { createTransport, mcpAuth, ...asked } = openOptions();
		const open = { cwd: ctx.cwd, projectTrusted: Boolean(ctx.isProjectTrusted?.()), ...asked };
		// The servers connect through the factory's `createTransport`, which the host keeps for pi-rpc's calls.
		if (createTransport) {
			services().sdkMcpTransports?.set(state.session, createTransport);
			open.transports = true;
		}
		// Its sign-ins use the factory's `credentials` / `openUrl`, which the host keeps the same way.
		if (mcpAuth) {
			services().sdkMcpAuth?.set(state.session, mcpAuth.handler);
			open.auth = { credentials: mcpAuth.credentials, openUrl: mcpAuth.openUrl };
		}
		const registered = registeredServers(runtime);
		changedServers(state, registered);
		// From the configuration, before any tool is registered: the servers' tools come later.
		ensureDiscoveryActive(pi, ctx, await mcpTools(state, { open, registered }), state);
		void watchTools(pi, state);
		// Servers that failed or need a sign-in are reported once every one settled, as pi does.
		const session = state.session;
		mcpTools(state, { report: true }, state.life.signal)
			.then((answer) => {
				if (answer.report && state.session === session) ctx.ui.notify(answer.report, "warning");
			})
			.catch(() => {});
	});
	// Servers the sub-session's extensions register or unregister later connect or close right away;
	// those that connect and fail or need a sign-in are reported once they settled, as pi reports them.
	pi.on("mcp_servers_change", async (_event, ctx) => {
		const session = state.session;
		if (session === undefined) return;
		const registered = registeredServers(runtime);
		const connecting = changedServers(state, registered);
		let answer;
		try {
			answer = await mcpTools(state, { registered });
		} catch {
			return;
		}
		if (state.session !== session) return;
		ensureDiscoveryActive(pi, ctx, answer, state);
		// Watched again, now with the new servers' connections.
		void watchTools(pi, state);
		if (connecting.length === 0) return;
		const report = await mcpTools(state, { report: true, only: connecting }, state.life.signal).catch(() => undefined);
		if (report?.report && state.session === session) ctx.ui.notify(report.report, "warning");
	});
	// The first prompt waits for the servers with `direct` tools, so they are declared in its first request.
	// Every prompt lists the servers whose tools are not declared in the `mcp_servers` section, as they are then.
	pi.on("before_agent_start", async (event, ctx) => {
		if (state.session === undefined) return;
		const first = !state.waitedForStartup;
		state.waitedForStartup = true;
		const answer = await mcpTools(state, first ? { wait: "direct" } : {});
		// pi's note when a `direct` server was still connecting once `startupWaitMs` passed.
		if (first && answer.stillConnecting) ctx.ui.notify(answer.stillConnecting, "info");
		if (first) applyListing(pi, state, answer);
		const sections = event.systemPromptOptions?.sections;
		if (!sections) return;
		if (answer.section) sections[MCP_SERVERS_SECTION] = answer.section;
		else delete sections[MCP_SERVERS_SECTION];
	});
	// A tool that reaches other tools waits for the servers it may reach, so their tools are there when it runs.
	pi.on("tool_call", async (event) => {
		const wait = reachOf(event.toolName, event.input);
		if (wait !== undefined && state.session !== undefined) applyListing(pi, state, await mcpTools(state, { wait }));
	});
	pi.on("session_shutdown", () => closeConnections(state));
	runtime?.sessionDisposers?.add(() => closeConnections(state));
	return { session: () => state.session };
}

module.exports = { registerSessionMcpTools };
