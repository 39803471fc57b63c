// pi-rpc extension host: what `import … from "@earendil-works/pi-agent-core"`
// gives an extension: pi's own agent loop (`@earendil-works/pi-agent-core@1.6.0`,
// a pinned host package, one copy shared by every import), whose model
// calls go through pi-rpc's providers: its pi-ai is the host's, and its
// default stream function is that pi-ai's `streamSimple`, as pi's SDK sets
// pi-ai's own (host.mjs, `loadAgentCore`). Its types vanish with TypeScript.

"use strict";

module.exports = require("./host-services.cjs").services().agentCore();
