// pi-rpc extension host: a SessionManager's own changes of session, as pi
// 1.6.0's: `newSession` (a new header and no entries; a file-backed manager
// names a new file in its directory, written once the session talks),
// `setSessionFile` (the session of that file, or a new session to be written
// there) and `createBranchedSession` (a new session holding the path from the
// root to an entry, without its label entries, whose labels are made again at
// its end; a file-backed one gets a new file naming the old one as its
// `parentSession`). Used by session-memory.cjs's manager (in memory) and
// session-file.cjs's (pi's session files); also reads pi's session files.

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { randomUUID } = require("node:crypto");
const { uuidv7 } = require("../ai/misc.cjs");

const SESSION_VERSION = 3;
/** A session id pi accepts as a file name part. */
const VALID_SESSION_ID = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/** Entries of a session file; `[]` when it is missing or not a pi session. */
function readSessionFile(file) {
	let text;
	try {
		text = fs.readFileSync(file, "utf8");
	} catch {
		return [];
	}
	const entries = [];
	for (const line of text.split("\n")) {
		if (!line.trim()) continue;
		try {
			entries.push(JSON.parse(line));
		} catch {
			// a torn or broken line is skipped, as pi skips it
		}
	}
	const header = entries[0];
	return header?.type === "session" && typeof header.id === "string" ? entries : [];
}

/**
 * pi's migration of an older session file's entries (in place) to version 3:
 * version 1 entries get short ids chained in file order (a compaction's
 * `firstKeptEntryIndex` becomes the `firstKeptEntryId` of that line), and a
 * version 2 `hookMessage` becomes a `custom` message; the header names the
 * version. Whether anything was migrated (the file is then written again).
 */
function migrateToCurrentVersion(entries) {
	const header = entries.find((e) => e.type === "session");
	const version = header?.version ?? 1;
	if (version >= SESSION_VERSION) return false;
	if (version < 2) {
		const taken = new Set();
		let parentId = null;
		for (const entry of entries) {
			if (entry.type === "session") {
				entry.version = 2;
				continue;
			}
			entry.id = freshId(taken);
			entry.parentId = parentId;
			parentId = entry.id;
			if (entry.type === "compaction" && typeof entry.firstKeptEntryIndex === "number") {
				const kept = entries[entry.firstKeptEntryIndex];
				if (kept && kept.type !== "session") entry.firstKeptEntryId = kept.id;
				delete entry.firstKeptEntryIndex;
			}
		}
	}
	for (const entry of entries) {
		if (entry.type === "session") entry.version = SESSION_VERSION;
		else if (entry.type === "message" && entry.message?.role === "hookMessage") entry.message.role = "custom";
	}
	return true;
}

/** Whether `entries` hold a user or assistant message: pi writes a new session's file from then on. */
function hasConversation(entries) {
	return entries.some((e) => e.type === "message" && (e.message?.role === "user" || e.message?.role === "assistant"));
}

/** A session header of now, and the file name pi gives its session in a session directory. */
function sessionHeader(id, cwd, parentSession) {
	return { type: "session", version: SESSION_VERSION, id, timestamp: new Date().toISOString(), cwd, parentSession };
}
const sessionFileName = (header) => `${header.timestamp.replace(/[:.]/g, "-")}_${header.id}.jsonl`;

/** pi's `newSession(options?)`: `{id?, parentSession?}`; the new file's path (file-backed), else the current one. */
function newSession(manager, options) {
	if (options?.id !== undefined && !VALID_SESSION_ID.test(options.id)) {
		throw new Error(
			"Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character",
		);
	}
	const header = sessionHeader(options?.id ?? uuidv7(), manager.getCwd(), options?.parentSession);
	manager.replaceSession(header, []);
	manager.flushed = false;
	if (manager.isPersisted()) manager.sessionFile = path.join(manager.getSessionDir(), sessionFileName(header));
	return manager.sessionFile;
}

/**
 * pi's `setSessionFile(file)`: the session that file holds; an empty file
 * becomes a new session written there at once, a missing one a new session
 * written there once it talks; a file that is not a pi session is refused
 * (the manager then names it, its session unchanged, as pi's).
 */
function setSessionFile(manager, file) {
	const resolved = path.resolve(file);
	manager.sessionFile = resolved; // kept even when the file is refused, as pi keeps it
	if (!fs.existsSync(resolved)) {
		newSession(manager);
		manager.sessionFile = resolved;
		return;
	}
	const entries = readSessionFile(resolved);
	if (entries.length === 0) {
		if (fs.statSync(resolved).size > 0) throw new Error(`Session file is not a valid pi session: ${resolved}`);
		newSession(manager);
		manager.sessionFile = resolved;
		manager.rewriteFile();
		manager.flushed = true;
		return;
	}
	const migrated = migrateToCurrentVersion(entries);
	manager.replaceSession(entries[0], entries.slice(1));
	if (migrated) manager.rewriteFile();
	manager.flushed = true;
}

/** The labels in force (a cleared one gone), in the order pi's label map keeps them. */
function labelsInForce(entries) {
	const labels = new Map();
	for (const e of entries) {
		if (e.type !== "label") continue;
		if (e.label) labels.set(e.targetId, { label: e.label, timestamp: e.timestamp });
		else labels.delete(e.targetId);
	}
	return labels;
}

/** A short entry id not in `taken` (added to it). */
function freshId(taken) {
	let id = randomUUID().slice(0, 8);
	for (let i = 0; i < 100 && taken.has(id); i++) id = randomUUID().slice(0, 8);
	if (taken.has(id)) id = randomUUID();
	taken.add(id);
	return id;
}

/**
 * The path from the root to `leafId` without its label entries, the rest
 * re-linked in order (a compaction's kept entry moved off a dropped label to
 * the entry after it), as pi's branched sessions start; pi's "Entry … not
 * found" for an unknown id.
 */
function relinkedBranch(manager, leafId) {
	const branch = manager.getBranch(leafId);
	if (branch.length === 0) throw new Error(`Entry ${leafId} not found`);
	const kept = [];
	const movedLabels = new Map();
	let pendingLabels = [];
	let parentId = null;
	for (const entry of branch) {
		if (entry.type === "label") {
			pendingLabels.push(entry.id);
			continue;
		}
		for (const id of pendingLabels) movedLabels.set(id, entry.id);
		pendingLabels = [];
		const copy = { ...entry, parentId };
		if (entry.type === "compaction" && entry.firstKeptEntryId !== entry.id) {
			copy.firstKeptEntryId = movedLabels.get(entry.firstKeptEntryId) ?? entry.firstKeptEntryId;
		}
		kept.push(copy);
		parentId = entry.id;
	}
	return kept;
}

/**
 * pi's `createBranchedSession(leafId)`: the path from the root to `leafId`
 * as a new session (label entries left out and the path chained again
 * without them, a compaction's kept entry moved off a dropped label), then
 * one label entry for each label in force on the path. File-backed: the new
 * file's path (written now if the path talks), else undefined.
 */
function createBranchedSession(manager, leafId) {
	const previousFile = manager.getSessionFile();
	const kept = relinkedBranch(manager, leafId);
	let parentId = kept.at(-1)?.id ?? null;
	const persisted = manager.isPersisted();
	const header = sessionHeader(uuidv7(), manager.getCwd(), persisted ? previousFile : undefined);
	const ids = new Set(kept.map((e) => e.id));
	const labelEntries = [];
	for (const [targetId, { label, timestamp }] of labelsInForce(manager.getEntries())) {
		if (!ids.has(targetId)) continue;
		const entry = { type: "label", id: "", parentId, timestamp, targetId, label };
		entry.id = freshId(ids);
		labelEntries.push(entry);
		parentId = entry.id;
	}
	manager.replaceSession(header, [...kept, ...labelEntries]);
	if (!persisted) return undefined;
	manager.sessionFile = path.join(manager.getSessionDir(), sessionFileName(header));
	manager.flushed = hasConversation(manager.getEntries());
	if (manager.flushed) manager.rewriteFile();
	return manager.sessionFile;
}

module.exports = { createBranchedSession, hasConversation, migrateToCurrentVersion, newSession, readSessionFile, relinkedBranch, setSessionFile, VALID_SESSION_ID };
