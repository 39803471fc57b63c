// pi-rpc extension host: an SDK session's exports (agent-session.cjs):
// `exportToJsonl` (the current branch as a session file of its own) and
// `exportToHtml` (pi-rpc's HTML export of the session, the RPC
// `export_html` command's).

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { services } = require("../host-services.cjs");
const { lib } = require("./text.cjs");

class SessionExports {
	/** The current branch as a session file of its own (entries re-linked in order); its path. */
	exportToJsonl(outputPath) {
		const file = path.resolve(outputPath ?? `session-${new Date().toISOString().replace(/[:.]/g, "-")}.jsonl`);
		const sm = this.sessionManager;
		const header = { type: "session", version: 3, id: sm.getSessionId(), timestamp: new Date().toISOString(), cwd: sm.getCwd() };
		let parentId = null;
		const lines = [header];
		for (const entry of sm.getBranch()) {
			lines.push({ ...entry, parentId });
			parentId = entry.id;
		}
		fs.mkdirSync(path.dirname(file), { recursive: true });
		fs.writeFileSync(file, `${lines.map((e) => JSON.stringify(e)).join("\n")}\n`);
		return file;
	}
	/**
	 * pi's `exportToHtml(outputPath)`: the session file's entries, this
	 * session's system prompt and tools, rendered and written by pi-rpc's HTML
	 * export (the RPC `export_html` command's); a relative path is taken from
	 * pi-rpc's working directory. pi's theme and extension tool renderers do not apply.
	 */
	async exportToHtml(outputPath) {
		const sm = this.sessionManager;
		return lib("exportSessionHtml", {
			header: sm.getHeader(),
			entries: sm.getEntries(),
			leafId: sm.getLeafId(),
			sessionFile: sm.getSessionFile(),
			systemPrompt: this.systemPrompt,
			tools: this.agent.state.tools.map((t) => ({ name: t.name, description: t.description })),
			outputPath,
			cwd: services().hello.cwd,
		});
	}
}

/** The export members on `AgentSession`'s prototype. */
function addExports(AgentSession) {
	for (const name of ["exportToJsonl", "exportToHtml"]) {
		Object.defineProperty(AgentSession.prototype, name, { value: SessionExports.prototype[name], writable: true, configurable: true });
	}
}

module.exports = { addExports };
