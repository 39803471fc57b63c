// pi-rpc extension host: pi's conversation and session helpers for
// extensions. Message conversion, serialization, token estimates and
// compaction thresholds are computed by pi-rpc (the `lib` request), so an
// extension sees exactly what pi-rpc's core computes; session files are
// read here (JSON lines, as pi writes them), and the context of a branch is
// built with pi's rules (compaction summary first, then the kept entries,
// `context_edit`s applied).

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const os = require("node:os");
const { lib } = require("./text.cjs");

const CURRENT_SESSION_VERSION = 3;
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

/** Entries of an older session version, as version 3 (current files need nothing). */
function migrateSessionEntries(entries) {
	return entries;
}

const getLatestCompactionEntry = (entries) => [...(entries ?? [])].reverse().find((e) => e?.type === "compaction");

const ms = (timestamp) => (typeof timestamp === "number" ? timestamp : Date.parse(timestamp) || 0);

/** The messages one entry contributes to a context (`first`: the leading compaction). */
function sessionEntryToContextMessages(entry, first = true) {
	switch (entry?.type) {
		case "message":
			return entry.message && entry.message.role !== "system" ? [entry.message] : [];
		case "custom_message":
			return [
				{
					role: "custom",
					customType: entry.customType,
					content: entry.content,
					display: entry.display,
					details: entry.details,
					timestamp: ms(entry.timestamp),
				},
			];
		case "branch_summary":
			return entry.summary ? [{ role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: ms(entry.timestamp) }] : [];
		case "compaction":
			return first
				? [{ role: "compactionSummary", summary: entry.summary, tokensBefore: entry.tokensBefore, timestamp: ms(entry.timestamp) }]
				: [];
		default:
			return [];
	}
}

/** Root-to-leaf path of `leafId` (the last entry when not given). */
function branchOf(entries, leafId) {
	const byId = new Map(entries.filter((e) => e?.id).map((e) => [e.id, e]));
	let entry = byId.get(leafId ?? entries.filter((e) => e?.id).at(-1)?.id);
	const out = [];
	while (entry) {
		out.push(entry);
		entry = entry.parentId ? byId.get(entry.parentId) : undefined;
	}
	return out.reverse();
}

/** The entries a branch's context is built from: the latest compaction, the kept ones, the rest. */
function buildContextEntries(entries, leafId) {
	const branch = branchOf(entries ?? [], leafId);
	const at = branch.map((e) => e.type).lastIndexOf("compaction");
	if (at < 0) return branch;
	const compaction = branch[at];
	const kept = branch.findIndex((e) => e.id === compaction.firstKeptEntryId);
	const before = kept >= 0 ? branch.slice(kept, at).filter((e) => !(e.type === "message" && e.message?.role === "system")) : [];
	return [compaction, ...before, ...branch.slice(at + 1)];
}

/** pi's `buildSessionContext`: the messages, model and thinking level of a branch. */
function buildSessionContext(entries, leafId) {
	const selected = buildContextEntries(entries, leafId);
	const edits = new Map();
	for (const e of selected) if (e.type === "context_edit") edits.set(e.targetId, e.replacement);
	const messages = [];
	selected.forEach((entry, i) => {
		if (edits.has(entry.id) && edits.get(entry.id) === null) return;
		for (let message of sessionEntryToContextMessages(entry, i === 0)) {
			const replacement = edits.get(entry.id);
			if (replacement?.content !== undefined) message = { ...message, content: replacement.content };
			messages.push(message);
		}
	});
	let model;
	let thinkingLevel = "off";
	for (const e of branchOf(entries ?? [], leafId)) {
		if (e.type === "model_change") model = { provider: e.provider, modelId: e.modelId };
		if (e.type === "message" && e.message?.role === "assistant") model = { provider: e.message.provider, modelId: e.message.model };
		if (e.type === "thinking_level_change") thinkingLevel = e.thinkingLevel;
	}
	return { messages, thinkingLevel, model };
}

const buildSessionProjection = (entries, leafId) => ({ entries: buildContextEntries(entries, leafId), context: buildSessionContext(entries, leafId) });

function agentDir() {
	return process.env.PI_CODING_AGENT_DIR || path.join(os.homedir(), ".pi", "agent");
}

/** The sessions directory pi uses for `cwd`. */
function sessionDirFor(cwd) {
	const name = `--${path.resolve(cwd).replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
	return path.join(agentDir(), "sessions", name);
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

function runtimeOnly(what) {
	return () => {
		throw new Error(`SessionManager.${what}() manages pi's own sessions; in pi-rpc use ctx.sessionManager and the session commands`);
	};
}

/** pi's SessionManager: listing sessions works; a second live session does not exist here. */
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

	static create = runtimeOnly("create");
	static open = runtimeOnly("open");
	static inMemory = runtimeOnly("inMemory");
	static continueRecent = runtimeOnly("continueRecent");
	static forkFrom = runtimeOnly("forkFrom");
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
	sessionEntryToContextMessages,
	buildContextEntries,
	buildSessionContext,
	buildSessionProjection,
	SessionManager,
};
