// pi-rpc extension host: pi's `parseArgs(args)`, answered by pi-rpc's own
// command-line table (the `parseArgs` library function, pi-config's
// cli_args_pi.rs) as pi's `Args` object, `unknownFlags` a Map as in pi.

"use strict";

const { lib } = require("./text.cjs");

/** pi's `parseArgs(args)`: pure, the process's own arguments untouched. */
function parseArgs(args) {
	const parsed = lib("parseArgs", [...(args ?? [])].map(String));
	return { ...parsed, unknownFlags: new Map(parsed.unknownFlags) };
}

module.exports = { parseArgs };
