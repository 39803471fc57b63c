// pi-rpc extension host: the MCP tools of an SDK session whose resource
// loader has pi's `createMcpExtension()`. pi 1.6.0 connects the configured
// servers again for that session, registers their tools there with their
// exposures and, at `session_start`, activates `codemode` / `tool_search`
// when the exposures ask for them, or warns that the tools cannot be called
// when neither is there. pi-rpc does the same over its own connections (the
// running session's servers, same configuration): `mcpTools` lists the
// tools once the servers settled, and each registered tool's `execute` asks
// pi-rpc's MCP client to run it (`mcpCallTool`). Nothing connects twice.

"use strict";

const { services } = require("../host-services.cjs");

/** pi's discovery tools, which reach tools that are not declared to the model. */
const CODEMODE = "codemode";
const TOOL_SEARCH = "tool_search";

/** The tool the sub-session registers for one of pi-rpc's MCP tools. */
function definitionOf(tool) {
	const definition = {
		name: tool.name,
		label: tool.name,
		description: tool.description ?? "",
		parameters: tool.parameters ?? { type: "object", properties: {} },
		exposure: tool.exposure,
		async execute(toolCallId, params) {
			const result = await services().channel.request("mcpCallTool", {
				name: tool.name,
				args: params ?? {},
				toolCallId: String(toolCallId ?? ""),
			});
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

/** Activate the discovery tools the servers' exposures ask for; warn once when none is there. */
function ensureDiscoveryActive(pi, ctx, answer, state) {
	if (!answer.codemode && !answer.toolSearch) return;
	const registered = new Set(pi.getAllTools().map((tool) => tool.name));
	const active = pi.getActiveTools();
	const activate = [];
	if (answer.codemode && registered.has(CODEMODE) && !active.includes(CODEMODE)) activate.push(CODEMODE);
	if (answer.toolSearch && registered.has(TOOL_SEARCH) && !active.includes(TOOL_SEARCH)) activate.push(TOOL_SEARCH);
	if (activate.length > 0) pi.setActiveTools([...active, ...activate]);
	const reachable = [...active, ...activate];
	if ([CODEMODE, TOOL_SEARCH].some((name) => registered.has(name) && reachable.includes(name))) return;
	if (state.warned) return;
	state.warned = true;
	ctx.ui.notify(answer.unreachable, "warning");
}

/** Register pi-rpc's MCP tools in the sub-session of `pi` when it starts. */
function registerSessionMcpTools(pi) {
	const state = { warned: false };
	pi.on("session_start", async (_event, ctx) => {
		const answer = await services().channel.request("mcpTools", {});
		for (const tool of answer.tools ?? []) pi.registerTool(definitionOf(tool));
		ensureDiscoveryActive(pi, ctx, answer, state);
	});
}

module.exports = { registerSessionMcpTools };
