// pi-rpc extension host: pi's `SessionManager.inMemory(cwd)`, the session
// tree an SDK session (`createAgentSession`, agent-session.cjs) keeps in
// memory: a header, then entries linked by `parentId`, the leaf the next
// entry hangs from, entry ids of eight hex digits; the context of the leaf's
// branch is built by pi's rules (projection.cjs). Nothing is written to disk.
// `newSession`, `setSessionFile`, `createBranchedSession`: session-switch.cjs.

"use strict";

const { randomUUID } = require("node:crypto");
const path = require("node:path");
const projection = require("./projection.cjs");
const { getCurrentSystemMessage } = require("../ai/transcript.cjs");
const switching = require("./session-switch.cjs");

const SESSION_VERSION = 3;

class MemorySessionManager {
	constructor(cwd = process.cwd(), options = {}, entries) {
		this.cwd = path.resolve(cwd);
		this.sessionFile = undefined;
		const header = {
			type: "session",
			version: SESSION_VERSION,
			id: options?.id ?? randomUUID(),
			timestamp: new Date().toISOString(),
			cwd: this.cwd,
			parentSession: options?.parentSession,
		};
		this.replaceSession(header, entries ?? []);
	}

	/** This manager now holds the session of `header` with `entries` (a header among them skipped); the leaf is the last. */
	replaceSession(header, entries) {
		this.header = header;
		this.sessionId = header.id;
		this.byId = new Map();
		this.entries = [];
		this.leafId = null;
		for (const entry of entries) {
			if (entry?.type === "session") continue;
			this.entries.push(entry);
			if (entry?.id) this.byId.set(entry.id, entry);
			this.leafId = entry?.id ?? this.leafId;
		}
	}

	/** Writes the whole session to its file (a file-backed manager's; nothing in memory). */
	rewriteFile() {}
	newSession(options) {
		return switching.newSession(this, options);
	}
	setSessionFile(file) {
		switching.setSessionFile(this, file);
	}
	createBranchedSession(leafId) {
		return switching.createBranchedSession(this, leafId);
	}

	/** A fresh id, unique in this session. */
	newId() {
		for (let i = 0; i < 100; i++) {
			const id = randomUUID().slice(0, 8);
			if (!this.byId.has(id)) return id;
		}
		return randomUUID();
	}

	/** Append `fields` as an entry of `type` at the leaf; it becomes the leaf. */
	append(type, fields) {
		const entry = { type, id: this.newId(), parentId: this.leafId, timestamp: new Date().toISOString(), ...fields };
		this.entries.push(entry);
		this.byId.set(entry.id, entry);
		this.leafId = entry.id;
		return entry.id;
	}

	isPersisted() {
		return false;
	}
	getCwd() {
		return this.cwd;
	}
	getSessionDir() {
		return "";
	}
	usesDefaultSessionDir() {
		return false;
	}
	getSessionId() {
		return this.sessionId;
	}
	getSessionFile() {
		return this.sessionFile;
	}
	getHeader() {
		return this.header;
	}
	getEntries() {
		return [...this.entries];
	}
	getEntryCount() {
		return this.entries.length;
	}
	getEntry(id) {
		return this.byId.get(id);
	}
	getLeafId() {
		return this.leafId;
	}
	getLeafEntry() {
		return this.leafId ? this.byId.get(this.leafId) : undefined;
	}
	getChildren(parentId) {
		return this.entries.filter((e) => e.parentId === parentId);
	}
	getLabel(id) {
		let label;
		for (const e of this.entries) if (e.type === "label" && e.targetId === id) label = e.label;
		return label;
	}
	/**
	 * pi's tree of the session: each entry a node `{entry, children, label,
	 * labelTimestamp}` (the label as its last label entry left it), roots
	 * first (an entry whose parent is missing is one), children oldest first.
	 */
	getTree() {
		const labels = new Map();
		for (const e of this.entries) if (e.type === "label") labels.set(e.targetId, e.label === undefined ? undefined : { label: e.label, at: e.timestamp });
		const nodes = new Map(this.entries.map((entry) => [entry.id, { entry, children: [], label: labels.get(entry.id)?.label, labelTimestamp: labels.get(entry.id)?.at }]));
		const roots = [];
		for (const entry of this.entries) {
			const parent = entry.parentId === null || entry.parentId === entry.id ? undefined : nodes.get(entry.parentId);
			(parent ? parent.children : roots).push(nodes.get(entry.id));
		}
		const time = (node) => new Date(node.entry.timestamp).getTime();
		for (const node of nodes.values()) node.children.sort((a, b) => time(a) - time(b));
		return roots;
	}
	getSessionName() {
		const info = [...this.entries].reverse().find((e) => e.type === "session_info");
		return info?.name?.trim() || undefined;
	}
	/** Root to `fromId` (default: the leaf). */
	getBranch(fromId) {
		const branch = [];
		let entry = this.byId.get(fromId ?? this.leafId);
		while (entry) {
			branch.push(entry);
			entry = entry.parentId ? this.byId.get(entry.parentId) : undefined;
		}
		return branch.reverse();
	}
	buildContextEntries() {
		return projection.buildContextEntries(this.entries, this.leafId, this.byId);
	}
	buildSessionProjection() {
		return projection.buildSessionProjection(this.entries, this.leafId, this.byId);
	}
	buildSessionContext() {
		return projection.buildSessionContext(this.entries, this.leafId, this.byId);
	}

	appendMessage(message) {
		return this.append("message", { message });
	}
	appendThinkingLevelChange(thinkingLevel) {
		return this.append("thinking_level_change", { thinkingLevel });
	}
	appendModelChange(provider, modelId) {
		return this.append("model_change", { provider, modelId });
	}
	/** pi's `usage` entry (a cache refresh's usage, kind `cache_warm`): outside the conversation, in the totals. */
	appendUsage(kind, provider, model, usage, note) {
		return this.byId.get(this.append("usage", { kind, provider, model, usage, ...(note ? { note } : {}) }));
	}
	appendCustomEntry(customType, data) {
		return this.append("custom", { customType, data });
	}
	appendSessionInfo(name) {
		return this.append("session_info", { name: String(name).replace(/[\r\n]+/g, " ").trim() });
	}
	appendCustomMessageEntry(customType, content, display, details) {
		return this.append("custom_message", { customType, content, display, details });
	}
	appendLabelChange(targetId, label) {
		if (!this.byId.has(targetId)) throw new Error(`Entry ${targetId} not found`);
		return this.append("label", { targetId, label });
	}
	/**
	 * pi's `appendContextEdit(targetId, replacement)`: the model content of a
	 * user, assistant or tool-result message, or of a custom message, on the
	 * branch replaced (`{content}`) or dropped (`null`) from the context.
	 */
	appendContextEdit(targetId, replacement) {
		const content = replacement?.content;
		if (replacement !== null && (typeof replacement !== "object" || (typeof content !== "string" && !Array.isArray(content)))) {
			throw new Error("Context edit replacement must be null or contain string/array content");
		}
		const target = this.byId.get(targetId);
		if (!target) throw new Error(`Entry ${targetId} not found`);
		if (!this.getBranch().some((e) => e.id === targetId)) throw new Error(`Entry ${targetId} is not on the active branch`);
		const role = target.type === "custom_message" ? "custom" : target.type === "message" ? target.message?.role : undefined;
		if (!["custom", "user", "assistant", "toolResult"].includes(role)) throw new Error(`Entry ${targetId} does not contribute editable model content`);
		const asBlocks = replacement !== null && (role === "assistant" || role === "toolResult") && typeof content === "string";
		return this.append("context_edit", { targetId, replacement: asBlocks ? { content: [{ type: "text", text: content }] } : replacement });
	}
	/** A compaction; it carries the system message in force, which the context then starts with (as pi's). */
	appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage) {
		const timestamp = new Date().toISOString();
		const system = getCurrentSystemMessage(this.buildSessionProjection().messages);
		const id = this.newId();
		const entry = { type: "compaction", id, parentId: this.leafId, timestamp };
		Object.assign(entry, { summary, firstKeptEntryId: firstKeptEntryId ?? id, tokensBefore, details, usage, fromHook });
		if (system) entry.systemMessage = { ...system, timestamp: new Date(timestamp).getTime() };
		this.entries.push(entry);
		this.byId.set(id, entry);
		this.leafId = id;
		return id;
	}
	/** pi's move to `branchFromId` (null: the root) with a summary of the branch left, which becomes the leaf. */
	branchWithSummary(branchFromId, summary, details, fromHook, usage) {
		if (branchFromId !== null && !this.byId.has(branchFromId)) throw new Error(`Entry ${branchFromId} not found`);
		const fromId = this.leafId ?? "root";
		this.leafId = branchFromId;
		return this.append("branch_summary", { fromId, summary, details, usage, fromHook });
	}
	/** Move the leaf to `id`: the next entry starts a branch there. */
	branch(id) {
		if (!this.byId.has(id)) throw new Error(`Entry ${id} not found`);
		this.leafId = id;
	}
	resetLeaf() {
		this.leafId = null;
	}
}

module.exports = { MemorySessionManager };
