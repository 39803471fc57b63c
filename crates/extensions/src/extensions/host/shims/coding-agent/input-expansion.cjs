// pi-rpc extension host: pi's expansion of an SDK session's input
// (`session.prompt("/name args")`): a skill command `/skill:name args`
// becomes pi's skill block, then a prompt template `/name args` its body with
// `$1`, `$@`, `${@:N}`, … substituted. The rules are pi-rpc's own, the ones
// its top-level session expands with (the `lib` function `expandInput`,
// extension_expand.rs); the skills and templates are the session's resource
// loader's (given, or pi's `DefaultResourceLoader` of the session's cwd and
// agent directory, agent-session.cjs). A skill whose file cannot be read
// leaves the text as typed and is reported as pi reports it (`skill_expansion`).

"use strict";

const { lib } = require("./text.cjs");

/**
 * `text` as pi's session sends it: expanded unless `options.expandPromptTemplates`
 * is false (as `sendUserMessage` asks), or the text is no `/command`.
 */
function expandSessionInput(session, text, options = {}) {
	if (options.expandPromptTemplates === false || typeof text !== "string" || !text.startsWith("/")) return text;
	const loader = session.resourceLoader;
	const skills = (loader?.getSkills?.().skills ?? []).map((s) => ({ name: s.name, filePath: s.filePath, baseDir: s.baseDir }));
	const prompts = (loader?.getPrompts?.().prompts ?? []).map((p) => ({ name: p.name, content: p.content }));
	const answer = lib("expandInput", { text, skills, prompts });
	if (answer.error) {
		const report = { extensionPath: answer.error.path, event: "skill_expansion", error: answer.error.message };
		session.extensionRunner?.emitError?.(report);
	}
	return answer.text;
}

module.exports = { expandSessionInput };
