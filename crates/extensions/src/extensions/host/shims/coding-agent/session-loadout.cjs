// pi-rpc extension host: pi 1.6.0's `prepareLoadout` hooks of an SDK
// session's tools (agent-session.cjs). Each time the active tools are set,
// every declared tool whose definition has `prepareLoadout` (the built-in
// factories' `codemode`, an extension's own) is given pi's loadout
// `{declared, callable, registered, getExposure, getNamespace,
// getPromptGuidelines}`; the `descriptions` it answers replace the declared
// tools' descriptions (what the model's request carries), and the
// `hiddenDeclarations` it names (codemode's `direct` tools with
// `mode: "only"`) are left out of the requests' tool declarations and of the
// prompt's tool list, as pi's projection of the transcript leaves them out.
// A hook that throws is reported as pi's `prepare_loadout` extension error.
// pi applies the loadout again before each request (`refreshLoadout`), so
// tools registered since, or a changed `codemode.mode`, show there.

"use strict";

/** Exposures callable whether active or not (pi's). */
const ALWAYS_CALLABLE = new Set(["codemode", "deferred"]);

const exposureOf = (definition) => definition?.exposure ?? "direct";

/** The declared agent tools `tools`, their descriptions as the definitions' hooks change them. */
function applyLoadout(session, tools) {
	const definitionOf = (name) => session._tools.get(name);
	const hooks = tools.map((tool) => definitionOf(tool.name)).filter((d) => typeof d?.prepareLoadout === "function");
	session._hiddenDeclarations = new Set();
	hideDeclarations(session);
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
			for (const name of changes?.hiddenDeclarations ?? []) session._hiddenDeclarations.add(name);
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

/** Marks the agent's `transformContext` that leaves the hidden declarations out. */
const HIDES = Symbol("pi-rpc.hiddenDeclarations");

/**
 * pi's projection of each request's transcript: the system messages'
 * `toolsAdded` / `toolsRemoved` without the hidden declarations, after the
 * `context` handlers (installed over whatever `transformContext` is there now).
 */
function hideDeclarations(session) {
	const agent = session.agent;
	if (agent.transformContext?.[HIDES]) return;
	const previous = agent.transformContext;
	const projected = async (messages, signal) => {
		const transformed = previous ? await previous(messages, signal) : messages;
		const hidden = session._hiddenDeclarations;
		if (!hidden?.size) return transformed;
		return transformed.map((message) => {
			if (message.role !== "system" || (!message.toolsAdded && !message.toolsRemoved)) return message;
			const { toolsAdded, toolsRemoved, ...rest } = message;
			const added = (toolsAdded ?? []).filter((tool) => !hidden.has(tool.name));
			const removed = (toolsRemoved ?? []).filter((tool) => !hidden.has(tool.name));
			return { ...rest, ...(added.length > 0 ? { toolsAdded: added } : {}), ...(removed.length > 0 ? { toolsRemoved: removed } : {}) };
		});
	};
	projected[HIDES] = true;
	agent.transformContext = projected;
}

/**
 * The loadout applied again before a request (pi's `_preparePromptAndToolLoadout`):
 * the active tools' descriptions and hidden declarations as the hooks answer
 * now; `options` (prompt options) get the hidden declarations as `hiddenTools`.
 */
function refreshLoadout(session, options) {
	session.setActiveToolsByName(session.getActiveToolNames());
	return options && { ...options, hiddenTools: [...(session._hiddenDeclarations ?? [])] };
}

module.exports = { applyLoadout, refreshLoadout };
