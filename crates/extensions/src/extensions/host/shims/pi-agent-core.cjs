// pi-rpc extension host: what `import … from "@earendil-works/pi-agent-core"`
// gives an extension. Its message and tool types vanish with TypeScript;
// nothing at run time is needed in RPC mode.

"use strict";

module.exports = {};
