// pi-rpc extension host: pi's conversation and session helpers for
// extensions. Message conversion, serialization, token estimates and
// compaction thresholds are computed by pi-rpc (the `lib` request), so an
// extension sees exactly what pi-rpc's core computes; session files are
// read here (JSON lines, as pi writes them), and the context of a branch is
// built with pi's rules (projection.cjs).

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const os = require("node:os");
const { lib } = require("./text.cjs");
const projection = require("./projection.cjs");
const { MemorySessionManager } = require("./session-memory.cjs");
const { FileSessionManager, mostRecentSession, readSessionFile } = require("./session-file.cjs");
const { migrateToCurrentVersion } = require("./session-switch.cjs");
const { uuidv7 } = require("../ai/misc.cjs");

const CURRENT_SESSION_VERSION = 3;
/** A session id pi accepts as a file name part. */
const VALID_SESSION_ID = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const DEFAULT_COMPACTION_SETTINGS = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };

const convertToLlm = (messages) => lib("convertToLlm", messages ?? []);
const serializeConversation = (messages) => lib("serializeConversation", messages ?? []);
const estimateTokens = (message) => lib("estimateTokens", message);
const calculateContextTokens = (usage) => lib("calculateContextTokens", usage);
const shouldCompact = (contextTokens, contextWindow, settings) =>
	lib("shouldCompact", contextTokens, contextWindow, settings ?? DEFAULT_COMPACTION_SETTINGS);

/** The usage of the last assistant message that ended normally. */
function getLastAssistantUsage(messages) {
	for (let i = (messages ?? []).length - 1; i >= 0; i--) {
		const m = messages[i];
		const ended = m?.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted";
		if (ended && m.usage) return m.usage;
	}
	return undefined;
}

/** The index of the user message that starts the turn holding `index` (-1: none). */
function findTurnStartIndex(entries, index, start = 0) {
	for (let i = index; i >= start; i--) {
		const e = entries[i];
		const role = e?.type === "message" ? e.message?.role : undefined;
		if (role === "user" || role === "bashExecution" || e?.type === "custom_message" || e?.type === "branch_summary") return i;
	}
	return -1;
}

/** Entries of a session file's text (the header left out); bad lines are skipped. */
function parseSessionEntries(text) {
	const out = [];
	for (const line of String(text ?? "").split("\n")) {
		if (!line.trim()) continue;
		try {
			out.push(JSON.parse(line));
		} catch {
			// a torn last line
		}
	}
	return out;
}

/** pi's: entries of an older session version migrated in place to version 3 (session-switch.cjs). */
function migrateSessionEntries(entries) {
	migrateToCurrentVersion(entries);
}

const getLatestCompactionEntry = (entries) => [...(entries ?? [])].reverse().find((e) => e?.type === "compaction");

function agentDir() {
	return process.env.PI_CODING_AGENT_DIR || path.join(os.homedir(), ".pi", "agent");
}

/** The sessions directory pi uses for `cwd`. */
function sessionDirFor(cwd, root = agentDir()) {
	const name = `--${path.resolve(cwd).replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
	return path.join(root, "sessions", name);
}

/** Facts of a session file: its header, name, first message, counts. */
function sessionInfo(file) {
	const lines = parseSessionEntries(fs.readFileSync(file, "utf8"));
	const header = lines[0] ?? {};
	const entries = lines.slice(1);
	const messages = entries.filter((e) => e.type === "message");
	const firstUser = messages.find((e) => e.message?.role === "user")?.message;
	const text = (c) => (typeof c === "string" ? c : (c ?? []).filter((b) => b.type === "text").map((b) => b.text).join(" "));
	const stat = fs.statSync(file);
	return {
		path: file,
		id: header.id,
		cwd: header.cwd ?? "",
		name: [...entries].reverse().find((e) => e.type === "session_info")?.name,
		parentSessionPath: header.parentSession,
		created: new Date(header.timestamp ?? stat.birthtimeMs),
		modified: stat.mtime,
		messageCount: messages.length,
		firstMessage: firstUser ? text(firstUser.content) : "(no messages)",
		allMessagesText: messages.map((e) => text(e.message?.content)).join(" "),
	};
}

function listDir(dir) {
	let files;
	try {
		files = fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
	} catch {
		return [];
	}
	return files.map((f) => sessionInfo(path.join(dir, f))).sort((a, b) => b.modified - a.modified);
}

/** pi's SessionManager: listing sessions, and the SDK's sessions, in memory or in pi's session files. */
class SessionManager {
	static list(cwd, sessionDir) {
		return Promise.resolve(listDir(sessionDir ?? sessionDirFor(cwd)));
	}

	static listAll() {
		const root = path.join(agentDir(), "sessions");
		let dirs = [];
		try {
			dirs = fs.readdirSync(root).map((d) => path.join(root, d));
		} catch {
			// no sessions yet
		}
		return Promise.resolve(dirs.flatMap(listDir).sort((a, b) => b.modified - a.modified));
	}

	/**
	 * pi's lookup of a session file by its id in `sessionDir` (pi's directory
	 * for `cwd` when not given; another directory's sessions must be of
	 * `cwd`), undefined when none is.
	 */
	static findById(cwd, id, sessionDir) {
		const dir = path.resolve(sessionDir ?? sessionDirFor(cwd));
		const ofCwdOnly = sessionDir !== undefined && dir !== path.resolve(sessionDirFor(cwd));
		let files = [];
		try {
			files = fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
		} catch {
			return undefined;
		}
		for (const file of files) {
			const full = path.join(dir, file);
			let header;
			try {
				header = JSON.parse(fs.readFileSync(full, "utf8").split("\n", 1)[0]);
			} catch {
				continue;
			}
			if (header?.type !== "session" || header.id !== id) continue;
			if (ofCwdOnly && (typeof header.cwd !== "string" || path.resolve(header.cwd) !== path.resolve(cwd))) continue;
			return full;
		}
		return undefined;
	}

	/** A new session written to a file of `sessionDir` (pi's directory for `cwd` when not given). */
	static create(cwd, sessionDir, options) {
		return new FileSessionManager(cwd, sessionDir ?? sessionDirFor(cwd), undefined, options);
	}

	/** The session of `file` (its header's cwd unless `cwdOverride`; new sessions go to `sessionDir`, else the file's directory). */
	static open(file, sessionDir, cwdOverride) {
		const resolved = path.resolve(file);
		let header;
		try {
			header = parseSessionEntries(fs.readFileSync(resolved, "utf8"))[0];
		} catch {
			// a file not there yet: a new session is written there
		}
		const cwd = cwdOverride ?? (typeof header?.cwd === "string" ? header.cwd : undefined) ?? process.cwd();
		return new FileSessionManager(cwd, sessionDir ?? path.dirname(resolved), resolved);
	}

	/** The newest session of `sessionDir` (pi's directory for `cwd` when not given), or a new one. */
	static continueRecent(cwd, sessionDir) {
		const dir = path.resolve(sessionDir ?? sessionDirFor(cwd));
		const ownDir = path.resolve(sessionDirFor(cwd)) === dir;
		const recent = mostRecentSession(dir, ownDir ? undefined : cwd);
		return new FileSessionManager(cwd, dir, recent ?? undefined);
	}

	/** A session tree kept in memory, for an SDK session (`createAgentSession`). */
	static inMemory(cwd = process.cwd(), options, entries) {
		return new MemorySessionManager(cwd, options, entries);
	}

	/** A new session of `targetCwd` holding every entry of the session file `sourcePath` (its header names the source). */
	static forkFrom(sourcePath, targetCwd, sessionDir, options) {
		const source = path.resolve(sourcePath);
		const cwd = path.resolve(targetCwd);
		const entries = readSessionFile(source);
		if (entries.length === 0) throw new Error(`Cannot fork: source session file is empty or invalid: ${source}`);
		const dir = path.resolve(sessionDir ?? sessionDirFor(cwd));
		fs.mkdirSync(dir, { recursive: true });
		if (options?.id !== undefined && !VALID_SESSION_ID.test(options.id)) {
			throw new Error("Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character");
		}
		const id = options?.id ?? uuidv7();
		const timestamp = new Date().toISOString();
		const file = path.join(dir, `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
		const header = { type: "session", version: CURRENT_SESSION_VERSION, id, timestamp, cwd, parentSession: source };
		const body = [header, ...entries.filter((e) => e.type !== "session")].map((e) => `${JSON.stringify(e)}\n`).join("");
		fs.writeFileSync(file, body, { flag: "wx" });
		return new FileSessionManager(cwd, dir, file);
	}
}

module.exports = {
	CURRENT_SESSION_VERSION,
	DEFAULT_COMPACTION_SETTINGS,
	convertToLlm,
	serializeConversation,
	estimateTokens,
	calculateContextTokens,
	shouldCompact,
	getLastAssistantUsage,
	findTurnStartIndex,
	parseSessionEntries,
	migrateSessionEntries,
	getLatestCompactionEntry,
	...projection,
	SessionManager,
	sessionDirFor,
};
