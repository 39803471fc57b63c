// pi-rpc extension host: an SDK session's `modelRuntime` (pi 1.6.0's
// `AgentSession.modelRuntime`). pi's session keeps the `ModelRuntime` it was
// made with: the caller's (`createAgentSession({modelRuntime})`, the same
// object), else one it made itself over the agent directory's `models.json`
// and `auth.json` (`ModelRuntime.create()`, models.cjs; the `agentDir`
// option's files when given), not the running session's catalog. The
// session's extensions' registrations are laid into that runtime as pi
// registers them into it: it lists, calls and routes them from the session's
// making on, and keeps them after `dispose()`, as pi's does.

"use strict";

const { createSessionModels } = require("./session-models.cjs");

/**
 * pi's session registering its extensions' providers and virtual models
 * into the caller's `runtime`: a layer of them over the runtime's registry
 * (`extensions()`: the session's loaded extensions; `context()`: the
 * context a router is given).
 */
function registerSessionModels(runtime, { extensions, context }) {
	const layer = createSessionModels({ base: runtime.registry, extensions, context, sources: () => runtime.refreshSources?.() });
	runtime.registry = layer.registry;
}

/** pi's `session.modelRuntime` getter on `AgentSession`. */
function addModelRuntime(AgentSession) {
	Object.defineProperty(AgentSession.prototype, "modelRuntime", {
		get() {
			return this._modelRuntime;
		},
		configurable: true,
	});
}

module.exports = { registerSessionModels, addModelRuntime };
