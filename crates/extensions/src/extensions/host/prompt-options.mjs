// pi-rpc extension host: `before_agent_start`'s `systemPromptOptions`, the
// structured inputs of the system prompt, built from what the extension can
// see (active tools, their descriptions and guidelines, skills, cwd) plus
// the changes earlier extensions made (`overrides`, carried by pi-rpc).
// Handlers mutate the object; `promptOptionChanges` tells pi-rpc what they
// changed so it can apply it to the run's prompt.

/** The fields a handler may change and pi-rpc applies. */
const CHANGEABLE = ["sections", "promptGuidelines", "appendSystemPrompt", "forceSystemPrompt", "selectedTools"];

const firstLine = (text) => String(text ?? "").split("\n")[0].trim();

/** `systemPromptOptions` for the current run, with `overrides` (earlier extensions' changes) applied. */
export function systemPromptOptions(instance, overrides) {
	const pi = instance.pi;
	const selectedTools = pi.getActiveTools();
	const toolSnippets = {};
	const toolGuidelines = {};
	for (const tool of pi.getAllTools()) {
		if (!selectedTools.includes(tool.name)) continue;
		if (tool.description) toolSnippets[tool.name] = firstLine(tool.description);
		if (tool.promptGuidelines?.length) toolGuidelines[tool.name] = [...tool.promptGuidelines];
	}
	const skills = promptSkills(pi);
	const options = {
		selectedTools,
		hiddenTools: [],
		toolSnippets,
		toolGuidelines,
		promptGuidelines: [],
		sections: {},
		cwd: instance.cwd,
		contextFiles: [],
		skills,
	};
	for (const [key, value] of Object.entries(overrides ?? {})) {
		if (CHANGEABLE.includes(key)) options[key] = structuredClone(value);
	}
	return options;
}

/** The skills of the system prompt, as pi's options list them. */
export function promptSkills(pi) {
	return pi
		.getCommands()
		.filter((c) => c.source === "skill")
		.map((c) => ({ name: c.name.replace(/^skill:/, ""), description: c.description ?? "", filePath: c.sourceInfo.path }));
}

/**
 * pi's `ctx.getSystemPromptOptions()`: the session's prompt inputs as pi-rpc
 * has them (custom and appended prompt, context files, tools, their snippets
 * and rules), with the skills.
 */
export function sessionPromptOptions(channel, pi) {
	const options = channel.call("getSystemPromptOptions");
	return { customPrompt: undefined, forceSystemPrompt: undefined, ...options, skills: promptSkills(pi) };
}

/** What the handlers changed in `options` since `before` (a JSON copy): `null` when nothing. */
export function promptOptionChanges(before, options) {
	const changes = {};
	for (const key of CHANGEABLE) {
		const was = before[key];
		const now = options?.[key];
		if (JSON.stringify(was) !== JSON.stringify(now)) changes[key] = now ?? null;
	}
	return Object.keys(changes).length > 0 ? changes : null;
}
