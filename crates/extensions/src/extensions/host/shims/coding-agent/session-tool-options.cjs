// pi-rpc extension host: the tool options of pi's `createAgentSession`
// (`tools`, `noTools`, `excludeTools`, `customTools`) as pi 1.6.0 reads them.
// A `tools` list of plain names or `*` patterns is an allowlist: a tool it
// does not match is not registered in the session at all (built-in,
// extension or custom), and one it matches is active even when its
// `defaultActive` is false. A list of only `+name`/`-name` entries changes the
// default selection instead. `noTools: "all"` allows nothing; any other
// `noTools` only empties the default built-ins. `excludeTools` (names or
// patterns) keeps a tool from being registered, after `tools`. The built-in
// tools are made as pi's `_buildRuntime` makes them, shaped by the settings.
"use strict";

const { applyToolModifiers, isToolModifier } = require("./settings.cjs");
const tools = require("./tools.cjs");

/** pi's built-in tools in its order (`powershell` registered, never active by default): `[name, its definition factory]`, from tools.cjs's table. */
const BUILTIN_TOOLS = Object.entries(tools).flatMap(([key, factory]) => {
	const made = /^create(\w+)ToolDefinition$/.exec(key);
	return made ? [[made[1].toLowerCase(), factory]] : [];
});

/**
 * The session's built-in tool definitions (those `isAllowed`), made from its
 * settings as pi makes them at creation and at every `reload()`: read's
 * `images.autoResize`, bash's `shellCommandPrefix` and `shellPath`.
 */
function builtinDefinitions(cwd, settingsManager, isAllowed) {
	const options = {
		read: { autoResizeImages: settingsManager?.getImageAutoResize() },
		bash: { commandPrefix: settingsManager?.getShellCommandPrefix(), shellPath: settingsManager?.getShellPath() },
	};
	return BUILTIN_TOOLS.filter(([name]) => isAllowed(name)).map(([name, factory]) => factory(cwd, options[name]));
}

const DEFAULT_TOOL_NAMES = ["read", "bash", "edit", "write"];
/** Exposures declared to the model when active (pi's `direct` and `model-only`). */
const DECLARED = new Set([undefined, "direct", "model-only"]);
const MCP_RESOURCE_TOOLS = new Set(["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]);
const isMcpToolName = (name) => name.startsWith("mcp__") || MCP_RESOURCE_TOOLS.has(name);

/** Whether a name is one of `entries`, each an exact name or a pattern where `*` is any text. */
function toolNameMatcher(entries) {
	const names = new Set(entries.filter((e) => !e.includes("*")));
	const patterns = entries
		.filter((e) => e.includes("*"))
		.map((e) => new RegExp(`^${e.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`));
	return (name) => names.has(name) || patterns.some((p) => p.test(name));
}

/** Why a `tools` list is refused (pi's words), or undefined. */
function toolListError(list) {
	if (!Array.isArray(list)) return "tools must be an array of tool names";
	const modifiers = list.filter(isToolModifier);
	if (modifiers.length === 0) return undefined;
	if (modifiers.length < list.length) return "tool names cannot be mixed with +name or -name entries";
	const pattern = modifiers.find((e) => e.includes("*"));
	return pattern ? `+name and -name entries take exact tool names, not patterns: ${pattern}` : undefined;
}

/**
 * The session's tool policy from its options: `initial`, the names selected;
 * `isAllowed(name)`, whether the tool may be registered;
 * `activates(definition)`, whether registering it makes it active;
 * `loadout(…)`, the first active names.
 */
function toolOptions(options, settingsDefaults) {
	const list = options.tools;
	const error = list !== undefined ? toolListError(list) : undefined;
	if (error) throw new Error(`Invalid tools option: ${error}`);
	const defaults = options.noTools ? [] : (settingsDefaults ?? DEFAULT_TOOL_NAMES);
	const modifiers = list?.some(isToolModifier) ? list : undefined;
	const selected = modifiers ? applyToolModifiers(defaults, modifiers) : list;
	const allowedNames = modifiers ? (options.noTools === "all" ? selected : undefined) : (list ?? (options.noTools === "all" ? [] : undefined));
	const allowed = allowedNames ? toolNameMatcher(allowedNames) : undefined;
	// MCP tools stay registered for codemode and tool_search unless the allowlist is empty or names some.
	const filtersMcp = allowedNames !== undefined && (allowedNames.length === 0 || allowedNames.some((e) => e.startsWith("mcp__")));
	const excluded = options.excludeTools ? toolNameMatcher(options.excludeTools) : undefined;
	const isAllowed = (name) => !excluded?.(name) && (!allowed || allowed(name) || (!filtersMcp && isMcpToolName(name)));
	const declared = (definition) => DECLARED.has(definition.exposure);
	const initial = (selected ?? defaults).filter((name) => !excluded?.(name));
	const activates = (definition) => declared(definition) && (allowed ? allowed(definition.name) : definition.defaultActive !== false);
	return {
		initial,
		/** Whether a `tools` list (or `noTools: "all"`) names the tools allowed. */
		hasAllowlist: allowed !== undefined,
		/** Whether the settings' default tools choose the selection (pi's `usesDefaultTools`): no plain `tools` list, no `noTools`. */
		usesDefaults: (list === undefined || modifiers !== undefined) && !options.noTools,
		/** The settings' default tools with the `+name`/`-name` entries applied, as a reload reads them again. */
		defaultsOf: (settingsDefaultsNow) => applyToolModifiers(settingsDefaultsNow ?? DEFAULT_TOOL_NAMES, modifiers ?? []),
		isAllowed,
		activates,
		/** The first active names: the selection, then the registered tools registration activates (built-ins only when named). */
		loadout: (builtins, extensionTools, customTools) => [
			...new Set([
				...initial,
				...(allowed ? builtins.filter(activates) : []).map((d) => d.name),
				...[...extensionTools, ...customTools].filter(activates).map((d) => d.name),
			]),
		],
	};
}

module.exports = { builtinDefinitions, toolOptions, toolNameMatcher, DECLARED };
