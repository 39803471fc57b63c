// pi-rpc extension host: an SDK session's `modelRuntime` (pi 1.6.0's
// `AgentSession.modelRuntime`). pi's session keeps the `ModelRuntime` it was
// made with: the caller's (`createAgentSession({modelRuntime})`, the same
// object), else one it made itself, into which its extensions register
// their providers and virtual models. pi-rpc's default is a `ModelRuntime`
// over the session's models (session-models.cjs: the running session's
// catalog with the sub-session's registrations laid over it), so it lists,
// calls and routes what the session does; a provider or virtual model
// registered on it by hand is the session's. A caller's runtime is given
// back as it is, the session's extensions' registrations laid into it as pi
// registers them into it: it lists, calls and routes them from the session's
// making on, and keeps them after `dispose()`, as pi's does.

"use strict";

const { ModelRuntime } = require("./models.cjs");
const { createSessionModels } = require("./session-models.cjs");

/** The `modelRuntime` of a session: `given`, else a runtime over `sessionModels`. */
function sessionModelRuntime(given, sessionModels) {
	if (given) return given;
	const runtime = new ModelRuntime(sessionModels.registry);
	// What is registered on the session's runtime by hand is the session's (models.cjs `ownRegistrations`).
	runtime.own = sessionModels;
	return runtime;
}

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

module.exports = { sessionModelRuntime, registerSessionModels, addModelRuntime };
