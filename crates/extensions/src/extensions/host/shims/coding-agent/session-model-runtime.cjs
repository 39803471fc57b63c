// pi-rpc extension host: an SDK session's `modelRuntime` (pi 1.6.0's
// `AgentSession.modelRuntime`). pi's session keeps the `ModelRuntime` it was
// made with: the caller's (`createAgentSession({modelRuntime})`, the same
// object), else one it made itself, into which its extensions register
// their providers and virtual models. pi-rpc's default is a `ModelRuntime`
// over the session's models (session-models.cjs: the running session's
// catalog with the sub-session's registrations laid over it), so it lists,
// calls and routes what the session does; a virtual model registered on it
// by hand is the session's. A caller's runtime is given back as it is; its
// `resolveModel` also routes the virtual models of the session's
// extensions, which pi registers into it.

"use strict";

const { ModelRuntime } = require("./models.cjs");

/** Sessions made with a caller's runtime, whose own virtual models that runtime routes too. */
const sessionsOf = new WeakMap();

/** The `modelRuntime` of a session: `given`, else a runtime over `sessionModels`. */
function sessionModelRuntime(given, sessionModels) {
	if (given) {
		const sessions = sessionsOf.get(given) ?? [];
		sessions.push(sessionModels);
		sessionsOf.set(given, sessions);
		return given;
	}
	const runtime = new ModelRuntime(sessionModels.registry);
	// pi's `registerVirtualModel` on the session's runtime makes the model the session's.
	Object.defineProperties(runtime, {
		registerVirtualModel: { value: (definition) => sessionModels.registerByHand(definition), writable: true, configurable: true },
		unregisterVirtualModel: { value: (provider, id) => void sessionModels.unregisterByHand(provider, id), writable: true, configurable: true },
	});
	return runtime;
}

/** The session models of a caller's `runtime` that route `model` (a virtual model of that session's), if any. */
function sessionRouting(runtime, model) {
	return (sessionsOf.get(runtime) ?? []).find((sessionModels) => sessionModels.routes(model));
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

module.exports = { sessionModelRuntime, sessionRouting, addModelRuntime };
