// pi-rpc extension host: the MCP tools of an SDK session whose resource
// loader has pi's `createMcpExtension()`. pi 1.6.0 connects the configured
// servers again for that session in the background and registers their
// tools there whenever a server connects or changes its tool list (a tool
// it dropped is registered again `hidden`); at `session_start` it activates
// `codemode` / `tool_search` when the servers' exposures ask for them, or
// warns that the tools cannot be called when neither is there; the first
// prompt waits for the servers with `direct` tools, and a tool that reaches
// other tools (a codemode script, `tool_search`, the resource tools) for the
// servers it may reach. pi-rpc does the same over its own connections (the
// running session's servers, same configuration): `mcpTools` answers the
// tools once they changed from the listing the sub-session has (watched
// from `session_start` on) or once the servers a hook waits for settled,
// and each registered tool's `execute` asks pi-rpc's MCP client to run it
// (`mcpCallTool`), its progress streamed to `onUpdate` and the call
// cancelled when its signal aborts. Nothing connects twice.

"use strict";

const { services } = require("../host-services.cjs");

/** pi's discovery tools, which reach tools that are not declared to the model. */
const CODEMODE = "codemode";
const TOOL_SEARCH = "tool_search";
/** The resource tools, which reach every server. */
const RESOURCE_TOOLS = new Set(["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]);
/** pi's error when an MCP call's signal aborts (pi-mcp's `McpAbortError`). */
const ABORTED = "MCP request aborted";
/** The key of a tool registered again as `hidden` (its server dropped it). */
const HIDDEN = "\0hidden";

/** The tool the sub-session registers for one of pi-rpc's MCP tools. */
function definitionOf(tool) {
	const definition = {
		name: tool.name,
		label: tool.label ?? tool.name,
		description: tool.description ?? "",
		parameters: tool.parameters ?? { type: "object", properties: {} },
		exposure: tool.exposure,
		async execute(toolCallId, params, signal, onUpdate) {
			if (signal?.aborted) throw new Error(ABORTED);
			const call = { name: tool.name, args: params ?? {}, toolCallId: String(toolCallId ?? "") };
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

/** pi-rpc's answer to `mcpTools` `params` (sdk_session_mcp.rs); `signal` withdraws the request. */
function mcpTools(params, signal) {
	return services().mcpTools(params, signal);
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
		const definition = definitionOf(tool);
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
			answer = await mcpTools({ after: state.version }, watch.signal);
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

/** Register pi-rpc's MCP tools in the sub-session of `pi` as its servers offer them. */
function registerSessionMcpTools(pi) {
	const state = { warned: false, waitedForStartup: false, version: undefined, tools: new Map(), watch: undefined };
	pi.on("session_start", async (_event, ctx) => {
		state.warned = false;
		state.waitedForStartup = false;
		// From the configuration, before any tool is registered: the servers' tools come later.
		ensureDiscoveryActive(pi, ctx, await mcpTools({}), state);
		void watchTools(pi, state);
	});
	// The first prompt waits for the servers with `direct` tools, so they are declared in its first request.
	pi.on("before_agent_start", async () => {
		if (state.waitedForStartup) return;
		state.waitedForStartup = true;
		applyListing(pi, state, await mcpTools({ wait: "direct" }));
	});
	// A tool that reaches other tools waits for the servers it may reach, so their tools are there when it runs.
	pi.on("tool_call", async (event) => {
		const wait = reachOf(event.toolName, event.input);
		if (wait !== undefined) applyListing(pi, state, await mcpTools({ wait }));
	});
	pi.on("session_shutdown", () => {
		state.watch?.abort();
	});
}

module.exports = { registerSessionMcpTools };
