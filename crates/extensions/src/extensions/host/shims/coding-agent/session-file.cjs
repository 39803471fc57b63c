// pi-rpc extension host: pi's file-backed `SessionManager` for an SDK
// session (`SessionManager.create/open/continueRecent`, and
// `createAgentSession()` without a `sessionManager`). The session tree is
// session-memory.cjs's; this writes it as pi's session file (JSON lines: the
// header, then one entry a line) in pi's layout
// (`<agent dir>/sessions/--<cwd>--/<time>_<id>.jsonl`), so pi and pi-rpc open
// what the other wrote. As in pi, the file is made once the session holds a
// user or assistant message (setup entries alone leave no file), then each
// entry is appended.

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { MemorySessionManager } = require("./session-memory.cjs");
const { uuidv7 } = require("../ai/misc.cjs");
const { hasConversation, migrateToCurrentVersion, readSessionFile } = require("./session-switch.cjs");

/** The newest `.jsonl` session of `dir` (by modification time), with a header for `cwd` when given. */
function mostRecentSession(dir, cwd) {
	let files;
	try {
		files = fs
			.readdirSync(dir)
			.filter((f) => f.endsWith(".jsonl"))
			.map((f) => path.join(dir, f))
			.map((file) => ({ file, mtime: fs.statSync(file).mtimeMs }))
			.sort((a, b) => b.mtime - a.mtime);
	} catch {
		return null;
	}
	for (const { file } of files) {
		const header = readSessionFile(file)[0];
		if (header && (!cwd || (header.cwd && path.resolve(header.cwd) === path.resolve(cwd)))) return file;
	}
	return null;
}

class FileSessionManager extends MemorySessionManager {
	/**
	 * `file`: the session file to use (loaded when it exists; a new
	 * session written there otherwise); none: a new file in `sessionDir`.
	 */
	constructor(cwd, sessionDir, file, options) {
		const entries = file ? readSessionFile(file) : [];
		if (file && entries.length === 0 && fs.existsSync(file) && fs.statSync(file).size > 0) {
			throw new Error(`Session file is not a valid pi session: ${file}`);
		}
		const migrated = entries.length > 0 && migrateToCurrentVersion(entries);
		const header = entries[0];
		super(cwd, { id: header?.id ?? options?.id ?? uuidv7(), parentSession: options?.parentSession }, entries.slice(1));
		if (header) this.header = header;
		this.sessionDir = path.resolve(sessionDir);
		fs.mkdirSync(this.sessionDir, { recursive: true });
		this.sessionFile = file
			? path.resolve(file)
			: path.join(this.sessionDir, `${this.header.timestamp.replace(/[:.]/g, "-")}_${this.sessionId}.jsonl`);
		this.flushed = entries.length > 0;
		if (migrated) this.rewriteFile(); // an older session version is written again as pi writes it
		if (file && entries.length === 0 && fs.existsSync(file)) {
			// An empty file becomes this new session.
			this.rewriteFile();
			this.flushed = true;
		}
	}

	isPersisted() {
		return true;
	}
	getSessionDir() {
		return this.sessionDir;
	}
	append(type, fields) {
		const id = super.append(type, fields);
		this.#persist(this.byId.get(id));
		return id;
	}

	appendCompaction(...args) {
		const id = super.appendCompaction(...args);
		this.#persist(this.byId.get(id));
		return id;
	}

	rewriteFile() {
		fs.writeFileSync(this.sessionFile, [this.header, ...this.entries].map((e) => `${JSON.stringify(e)}\n`).join(""));
	}

	#persist(entry) {
		if (!this.flushed) {
			if (!hasConversation(this.entries)) return;
			fs.writeFileSync(this.sessionFile, [this.header, ...this.entries].map((e) => `${JSON.stringify(e)}\n`).join(""), { flag: "wx" });
			this.flushed = true;
			return;
		}
		fs.appendFileSync(this.sessionFile, `${JSON.stringify(entry)}\n`);
	}
}

module.exports = { FileSessionManager, mostRecentSession, readSessionFile };
