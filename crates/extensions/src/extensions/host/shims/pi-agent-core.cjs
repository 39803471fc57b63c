// pi-rpc extension host: what `import … from "@earendil-works/pi-agent-core"`
// gives an extension. Its message and tool types vanish with TypeScript.
// Its values run a second agent loop inside the extension (`Agent`,
// `agentLoop`, …): pi-rpc's agent is the Rust core, so these exist and fail
// with a clear error; an extension that needs a sub-agent starts `pi` as a
// process (as pi's subagent example does).

"use strict";

const ONLY_IN_PI = "pi-agent-core's agent loop is not available in pi-rpc's extension host; start `pi` as a process for a sub-agent";

function unavailable(name) {
	return {
		[name]: () => {
			throw new Error(`${name}(): ${ONLY_IN_PI}`);
		},
	}[name];
}

class Agent {
	constructor() {
		throw new Error(`Agent: ${ONLY_IN_PI}`);
	}
}

module.exports = {
	Agent,
	DEFAULT_AGENT_IDENTITY: { attribution: { name: "pi", url: "https://pi.dev", categories: ["cli-agent"] } },
	agentLoop: unavailable("agentLoop"),
	agentLoopContinue: unavailable("agentLoopContinue"),
	runAgentLoop: unavailable("runAgentLoop"),
	runAgentLoopContinue: unavailable("runAgentLoopContinue"),
	runToolCall: unavailable("runToolCall"),
	setDefaultStreamFn: unavailable("setDefaultStreamFn"),
	streamProxy: unavailable("streamProxy"),
};
