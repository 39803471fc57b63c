// pi-rpc extension host: pi's built-in extension factories
// (`createCodemodeExtension`, `createToolSearchExtension`,
// `createMcpExtension`) applied to an extension inside an SDK session. pi
// 1.6.0 loads them there like any extension: `codemode` and `tool_search`
// registered inactive, `/mcp` registered. pi-rpc's built-ins live in its
// Rust core, so inside the sub-session the factory registers the same tools
// (pi-rpc's definitions: description, parameters, guidelines) and command,
// which run pi-rpc's built-ins over the sub-session:
// - `tool_search` searches the sub-session's tools as pi's does (those of
//   `codemode` / `deferred` exposure not active yet), ranked and answered by
//   pi-rpc's own `tool_search` (`lib` `toolSearch`), and activates the matches;
// - `codemode` runs its script in pi-rpc's codemode, whose nested calls come
//   back to run the sub-session's tools (session-codemode.cjs); its
//   description lists the callable tools as pi's `prepareLoadout` does;
// - the MCP servers are connected again for the sub-session, and their
//   tools registered there, run by pi-rpc's MCP client over those
//   connections (session-mcp-tools.cjs); `/mcp` answers with them, as the
//   running session's `/mcp` does, through the sub-session's UI.

"use strict";

const { services } = require("../host-services.cjs");
const { lib } = require("./text.cjs");
const { runSessionCodemode, codemodeLoadout, mcpCommand } = require("./session-codemode.cjs");
const { registerSessionMcpTools } = require("./session-mcp-tools.cjs");

/** What builtin-extensions.cjs sends, in place of a built-in's name, with `loadConfig(ctx)`'s answer. */
const LOADED_MCP_CONFIG = "mcp:loadedConfig";

/** The last `loadConfig(ctx)` answer of each sub-session extension's `createMcpExtension({ loadConfig })`. */
const loadedConfigs = new WeakMap();

/** Exposures `tool_search` can load (pi's). */
const SEARCHABLE = new Set(["codemode", "deferred"]);

/** pi-rpc's `tool_search` over the session's searchable, inactive tools; the matches activated. */
function searchAndLoad(pi, params) {
	const active = pi.getActiveTools();
	const candidates = pi.getAllTools().filter((t) => SEARCHABLE.has(t.exposure) && !active.includes(t.name));
	const answer = lib("toolSearch", candidates.map((t) => ({ name: t.name, description: t.description ?? "" })), params);
	if (answer.error) throw new Error(answer.error);
	const loaded = answer.loaded ?? [];
	if (loaded.length > 0) pi.setActiveTools([...active, ...loaded]);
	return { content: [{ type: "text", text: answer.text }], details: { loaded } };
}

/** pi-rpc's calls for `/mcp`'s UI inside an SDK session (`ui.*` ops of `mcp_auth`), answered by `ui`. */
function commandUi(ui) {
	const open = new Map();
	// Dialogs withdrawn before they were opened (the calls cross): not opened.
	const withdrawn = new Set();
	return async ({ op, text, level, title, placeholder, options, dialog }) => {
		if (op === "ui.notify") return void ui.notify(text, level);
		if (op === "ui.withdraw") return void (open.has(dialog) ? open.get(dialog).abort() : withdrawn.add(dialog));
		if (withdrawn.delete(dialog)) return null;
		const controller = new AbortController();
		open.set(dialog, controller);
		try {
			const answer = op === "ui.select" ? await ui.select(title, options, { signal: controller.signal }) : await ui.input(title, placeholder, { signal: controller.signal });
			return typeof answer === "string" ? answer : null;
		} finally {
			open.delete(dialog);
		}
	};
}

/** `pi`'s registrations of the built-in `name` (the factory's hook, `pi[USE_BUILTIN](name, options)`). */
function useBuiltinInSession(pi, name, options = {}, runtime = undefined, instance = undefined) {
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
			...(name === "codemode" ? { prepareLoadout: (loadout) => codemodeLoadout(pi, options, loadout) } : {}),
			execute:
				name === "tool_search"
					? async (_id, params) => searchAndLoad(pi, params ?? {})
					: (id, params, signal, onUpdate, ctx) => runSessionCodemode(pi, options, id, params, signal, onUpdate, ctx),
		});
		return;
	}
	if (name === "mcp") {
		let connections;
		pi.registerCommand("mcp", {
			description: lib("mcpCommandDescription"),
			handler: async (args, ctx) => {
				// Its notifications and dialogs go to this command's `ctx.ui`, as pi's MCP extension's do.
				const session = connections?.session();
				const uis = services().sdkMcpUi;
				if (session !== undefined) uis?.set(session, commandUi(ctx.ui));
				try {
					const notice = await mcpCommand(args, session, session !== undefined && uis !== undefined);
					if (notice) ctx.ui.notify(notice.text, notice.level);
				} finally {
					if (session !== undefined) uis?.delete(session);
				}
			},
		});
		// The factory's options pi-rpc applies to the sub-session's connections.
		const openOptions = () => {
			const open = {};
			if (typeof options.startupWaitMs === "number") open.startupWaitMs = options.startupWaitMs;
			if (typeof options.logPath === "string") open.logPath = options.logPath;
			if (loadedConfigs.has(pi)) open.loaded = loadedConfigs.get(pi);
			// Kept by the host's `instance` once the factory applied (api.mjs).
			if (typeof instance?.mcpTransportFactory === "function") open.createTransport = instance.mcpTransportFactory;
			// Its `credentials` / `openUrl`, answering pi-rpc's `mcp_auth` calls for these connections.
			if (typeof instance?.mcpAuth === "function") open.mcpAuth = { handler: instance.mcpAuth, credentials: options.credentials === true, openUrl: options.openUrl === true };
			return open;
		};
		connections = registerSessionMcpTools(pi, runtime, openOptions);
		return;
	}
	// What `loadConfig(ctx)` answered at this `session_start` (its handler runs before the connections open): their servers.
	if (name === LOADED_MCP_CONFIG) loadedConfigs.set(pi, options);
}

module.exports = { useBuiltinInSession };
