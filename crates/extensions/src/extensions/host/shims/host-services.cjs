// pi-rpc extension host: how the shims reach the host (the channel to
// pi-rpc, the session facts of `hello`, pi's own libraries it installed).
// host.mjs installs the services before any extension loads; a shim loaded
// outside the host (its tests) gets a clear error when it needs them.

"use strict";

const KEY = Symbol.for("pi-rpc.extension-host");

function services() {
	const found = globalThis[KEY];
	if (!found) throw new Error("this needs pi-rpc's extension host (pi-rpc runs extensions in it)");
	return found;
}

module.exports = { services };
