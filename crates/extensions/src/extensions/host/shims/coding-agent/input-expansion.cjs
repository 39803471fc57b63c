// pi-rpc extension host: pi's expansion of an SDK session's input
// (`session.prompt("/name args")`): a skill command `/skill:name args`
// becomes pi's skill block, then a prompt template `/name args` its body with
// `$1`, `$@`, `${@:N}`, … substituted. The rules are pi-rpc's own, the ones
// its top-level session expands with (the `lib` function `expandInput`,
// extension_expand.rs); the skills and templates are the session's resource
// loader's, or, without one, those a `DefaultResourceLoader` finds for the
// session's cwd and agent directory (`createAgentSession`'s `agentDir`, else
// pi's), what pi's `createAgentSession` would have loaded. A skill whose file cannot be read leaves the text as
// typed and is reported as pi reports it (`skill_expansion`).

"use strict";

const { lib } = require("./text.cjs");

/**
 * The resource loader whose skills and templates the session expands with;
 * without one of its own, a loader made at its first `/` input (as pi's, made
 * once; the session's `reload()` reloads it) and kept as `_inputLoader`.
 */
function loaderOf(session) {
	if (session.resourceLoader) return session.resourceLoader;
	if (!session._inputLoader) {
		const { DefaultResourceLoader } = require("./resources.cjs");
		session._inputLoader = new DefaultResourceLoader({ cwd: session._cwd, agentDir: session._agentDir, settingsManager: session.settingsManager });
		session._inputLoader._load();
	}
	return session._inputLoader;
}

/**
 * `text` as pi's session sends it: expanded unless `options.expandPromptTemplates`
 * is false (as `sendUserMessage` asks), or the text is no `/command`.
 */
function expandSessionInput(session, text, options = {}) {
	if (options.expandPromptTemplates === false || typeof text !== "string" || !text.startsWith("/")) return text;
	const loader = loaderOf(session);
	const skills = (loader.getSkills?.().skills ?? []).map((s) => ({ name: s.name, filePath: s.filePath, baseDir: s.baseDir }));
	const prompts = (loader.getPrompts?.().prompts ?? []).map((p) => ({ name: p.name, content: p.content }));
	const answer = lib("expandInput", { text, skills, prompts });
	if (answer.error) {
		const report = { extensionPath: answer.error.path, event: "skill_expansion", error: answer.error.message };
		session.extensionRunner?.emitError?.(report);
	}
	return answer.text;
}

module.exports = { expandSessionInput };
