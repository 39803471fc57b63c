// pi-rpc extension host: pi's built-in extension factories
// (`createCodemodeExtension`, `createToolSearchExtension`,
// `createMcpExtension`) applied to an extension inside an SDK session. pi
// 1.6.0 loads them there like any extension: `codemode` and `tool_search`
// registered inactive, `/mcp` registered. pi-rpc's built-ins live in its
// Rust core and serve its own session only (builtin-extensions.cjs hands
// them to top-level extensions), so inside the sub-session the factory
// registers the same tools (pi-rpc's definitions: description, parameters,
// guidelines) and command, and running them there answers that they serve
// pi-rpc's own session (compat/DEVIATIONS.md).

"use strict";

const { lib } = require("./text.cjs");

const unavailable = (what) => `${what} is pi-rpc's built-in of its own session; it does not run inside an SDK session`;

/** `pi`'s registrations of the built-in `name` (the factory's hook, `pi[USE_BUILTIN](name, options)`). */
function useBuiltinInSession(pi, name) {
	if (name === "codemode" || name === "tool_search") {
		const definition = lib("builtinToolDefinition", name);
		pi.registerTool({
			name: definition.name,
			label: definition.name,
			description: definition.description,
			parameters: definition.parameters,
			promptSnippet: definition.promptSnippet ?? undefined,
			promptGuidelines: definition.promptGuidelines,
			defaultActive: false,
			execute: async () => {
				throw new Error(unavailable(`The ${definition.name} tool`));
			},
		});
		return;
	}
	if (name === "mcp") {
		pi.registerCommand("mcp", {
			description: "Show MCP server status",
			handler: async (_args, ctx) => ctx.ui.notify(unavailable("MCP"), "warning"),
		});
	}
	// "mcp:loadedConfig" (a `loadConfig` answer): nothing connects MCP servers here.
}

module.exports = { useBuiltinInSession };
