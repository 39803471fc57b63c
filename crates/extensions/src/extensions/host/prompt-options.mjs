// pi-rpc extension host: pi's `BuildSystemPromptOptions`, the structured
// inputs of the system prompt. `before_agent_start` handlers get the run's
// (as pi-rpc sends them, with the earlier extensions' changes) and change
// them in place; `event.systemPrompt` and `ctx.getSystemPrompt()` render
// them at once (pi-rpc's `buildSystemPrompt`), and what the handlers leave
// goes back whole, for pi-rpc to rebuild the run's prompt from.

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { services } = require("./shims/host-services.cjs");

/** pi's normalized options: every collection present and copied. */
export function normalizeOptions(input = {}) {
	return {
		customPrompt: input.customPrompt ?? undefined,
		forceSystemPrompt: input.forceSystemPrompt ?? undefined,
		selectedTools: [...(input.selectedTools ?? ["read", "bash", "edit", "write"])],
		hiddenTools: [...(input.hiddenTools ?? [])],
		toolSnippets: { ...(input.toolSnippets ?? {}) },
		toolGuidelines: Object.fromEntries(Object.entries(input.toolGuidelines ?? {}).map(([name, rules]) => [name, [...rules]])),
		promptGuidelines: [...(input.promptGuidelines ?? [])],
		appendSystemPrompt: input.appendSystemPrompt ?? "",
		sections: { ...(input.sections ?? {}) },
		cwd: input.cwd,
		contextFiles: (input.contextFiles ?? []).map((file) => ({ ...file })),
		skills: (input.skills ?? []).map((skill) => ({ ...skill })),
	};
}

/** The prompt `options` make (a forced one as it is); pi's error for an invalid section name. */
export function renderPrompt(options) {
	return services().channel.call("lib", { fn: "buildSystemPrompt", args: [options] });
}

/** pi's `ctx.getSystemPromptOptions()`: the session's prompt inputs as pi-rpc has them. */
export function sessionPromptOptions(channel) {
	return normalizeOptions(channel.call("getSystemPromptOptions"));
}
