// pi-rpc extension host: pi 1.6.0's `prepareLoadout` hooks of an SDK
// session's tools (agent-session.cjs). Each time the active tools are set,
// every declared tool whose definition has `prepareLoadout` (the built-in
// factories' `codemode`, an extension's own) is given pi's loadout
// `{declared, callable, registered, getExposure, getNamespace,
// getPromptGuidelines}`; the `descriptions` it answers replace the declared
// tools' descriptions (what the model's request carries). A hook that throws
// is reported as pi's `prepare_loadout` extension error.

"use strict";

/** Exposures callable whether active or not (pi's). */
const ALWAYS_CALLABLE = new Set(["codemode", "deferred"]);

const exposureOf = (definition) => definition?.exposure ?? "direct";

/** The declared agent tools `tools`, their descriptions as the definitions' hooks change them. */
function applyLoadout(session, tools) {
	const definitionOf = (name) => session._tools.get(name);
	const hooks = tools.map((tool) => definitionOf(tool.name)).filter((d) => typeof d?.prepareLoadout === "function");
	if (hooks.length === 0) return tools;
	const active = new Set(tools.map((tool) => tool.name));
	const agentTool = (definition) => ({
		...session._agentTool(definition),
		exposure: exposureOf(definition),
		...(definition.outputSchema ? { outputSchema: definition.outputSchema } : {}),
	});
	const definitions = [...session._tools.values()];
	const loadout = {
		declared: tools,
		callable: definitions
			.filter((d) => ALWAYS_CALLABLE.has(exposureOf(d)) || (exposureOf(d) === "direct" && active.has(d.name)))
			.map(agentTool),
		registered: definitions.map(agentTool),
		getExposure: (name) => exposureOf(definitionOf(name)),
		getNamespace: (name) => definitionOf(name)?.namespace,
		getPromptGuidelines: (name) => definitionOf(name)?.promptGuidelines ?? [],
	};
	const descriptions = new Map();
	for (const definition of hooks) {
		try {
			const changes = definition.prepareLoadout(loadout);
			for (const [name, description] of Object.entries(changes?.descriptions ?? {})) descriptions.set(name, description);
		} catch (error) {
			session.extensionRunner?.emitError?.({
				extensionPath: definition.sourceInfo?.path ?? "<unknown>",
				event: "prepare_loadout",
				error: error instanceof Error ? error.message : String(error),
				stack: error instanceof Error ? error.stack : undefined,
			});
		}
	}
	return tools.map((tool) => (descriptions.has(tool.name) ? { ...tool, description: descriptions.get(tool.name) } : tool));
}

module.exports = { applyLoadout };
