// pi-rpc extension host: an SDK session's `reload(options)` as pi 1.6.0's.
// The old extension instances get `session_shutdown` (reason `reload`) and
// go stale; the settings and the resource loader are read again; a new
// runner is made over the reloaded extensions (the old runner's flag values
// kept), the built-in tools made again from the settings read again and bound as the old one was, so the new instances' handlers,
// commands and tools are the ones in force; the tools active before stay
// active as far as the new extensions register them (those registered later,
// such as MCP tools, once they register, until the next run starts), with
// the settings' newly added default tools and the tools registration
// activates; then, once `bindExtensions` bound the session,
// `options.beforeSessionStart()` and the new instances' `session_start`
// (reason `reload`) and `resources_discover`.

"use strict";

const { attachExtensions, reloadedLoadout } = require("./session-extensions.cjs");
const { builtinDefinitions } = require("./session-tool-options.cjs");

/** The settings' default tools as the session reads them (none when its options chose the tools). */
function defaultTools(session) {
	const policy = session._toolPolicy;
	if (!policy?.usesDefaults) return [];
	return policy.defaultsOf(session.settingsManager?.getDefaultTools());
}

/** pi's `AgentSession.reload(options)` of `session`; `readResources()` takes the reloaded loader's resources into the prompt. */
async function reloadSession(session, options, readResources) {
	if (session.isStreaming) throw new Error("Wait for the current response to finish before reloading.");
	if (session.isCompacting) throw new Error("Wait for compaction to finish before reloading.");
	const oldRunner = session.extensionRunner;
	const flagValues = oldRunner?.getFlagValues() ?? new Map();
	if (oldRunner?.hasHandlers("session_shutdown")) await oldRunner.emit({ type: "session_shutdown", reason: "reload" });
	oldRunner?.invalidate();
	const previousDefaults = new Set(defaultTools(session));
	if (session.settingsManager) {
		await session.settingsManager.reload();
		session.agent.steeringMode = session.settingsManager.getSteeringMode();
		session.agent.followUpMode = session.settingsManager.getFollowUpMode();
	}
	await session.resourceLoader?.reload();
	readResources();
	const addedDefaults = defaultTools(session).filter((name) => !previousDefaults.has(name));
	// Tools the new extensions register later (MCP tools) are pending until then.
	const active = session.getActiveToolNames();
	session._pendingToolNames = new Set(active);
	session._restoredToolNames = new Set(active);

	// pi's `_buildRuntime`: the built-ins made again from the settings as they are now.
	const allowed = (name) => !session._toolPolicy || session._toolPolicy.isAllowed(name);
	session._builtinTools = builtinDefinitions(session._cwd, session.settingsManager, allowed);
	const extensionsResult = session.resourceLoader?.getExtensions?.() ?? { extensions: [], errors: [] };
	for (const [name, value] of flagValues) extensionsResult.runtime?.flagValues?.set(name, value);
	attachExtensions(session, extensionsResult, { modelRegistry: session._extensionModelRegistry });
	session._setActiveTools(reloadedLoadout(session, active, addedDefaults));

	if (session._extensionsBound) {
		await options?.beforeSessionStart?.();
		await session._extensions.start({ type: "session_start", reason: "reload" });
	}
}

module.exports = { reloadSession };
