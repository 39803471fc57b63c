// pi-rpc extension host: pi's actionable boundaries, `turn_end` and
// `agent_before_settle`. Handlers run in registration order; each sees the
// draft entries and continuation proposed so far, with `context`, a preview of
// the model context once those drafts are appended (and the messages still
// queued), rebuilt after every handler. A draft that cannot be applied (a
// `context_edit` of an entry that is not on the branch…) makes the proposal
// invalid; pi-rpc then appends nothing and does not continue.

import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const projection = require("./shims/coding-agent/projection.cjs");
const { lib } = require("./shims/coding-agent/text.cjs");

/** A fresh 8-hex entry id not in `byId`. */
function newId(byId) {
	for (;;) {
		const id = randomBytes(4).toString("hex");
		if (!byId.has(id)) return id;
	}
}

/** The ids on the path root..`leaf`. */
function branchIds(byId, leaf) {
	const ids = new Set();
	for (let entry = leaf ? byId.get(leaf) : undefined; entry; entry = entry.parentId ? byId.get(entry.parentId) : undefined) {
		ids.add(entry.id);
	}
	return ids;
}

/** A `context_edit` draft checked as pi's session manager checks it: the entry to append. */
function contextEdit(draft, byId, leaf, base) {
	const replacement = draft.replacement;
	const content = replacement?.content;
	if (replacement !== null && (typeof replacement !== "object" || (typeof content !== "string" && !Array.isArray(content)))) {
		throw new Error("Context edit replacement must be null or contain string/array content");
	}
	const target = byId.get(draft.targetId);
	if (!target) throw new Error(`Entry ${draft.targetId} not found`);
	if (!branchIds(byId, leaf).has(draft.targetId)) throw new Error(`Entry ${draft.targetId} is not on the active branch`);
	const role = target.type === "message" ? target.message?.role : target.type === "custom_message" ? "custom" : undefined;
	if (!["user", "assistant", "toolResult", "custom"].includes(role)) {
		throw new Error(`Entry ${draft.targetId} does not contribute editable model content`);
	}
	const asBlocks = replacement !== null && (role === "assistant" || role === "toolResult") && typeof content === "string";
	return { type: "context_edit", ...base, targetId: draft.targetId, replacement: asBlocks ? { content: [{ type: "text", text: content }] } : replacement };
}

/** The session entry a draft becomes (undefined: pi appends nothing for it). */
function draftEntry(draft, entries, byId, leaf) {
	const id = newId(byId);
	const base = { id, parentId: leaf ?? null, timestamp: new Date().toISOString() };
	switch (draft?.type) {
		case "custom":
			return { type: "custom", customType: draft.customType, data: draft.data, ...base };
		case "custom_message":
			return { type: "custom_message", customType: draft.customType, content: draft.content, display: draft.display, details: draft.details, ...base };
		case "context_edit":
			return contextEdit(draft, byId, leaf, base);
		case "compaction": {
			const messages = projection.buildSessionProjection(entries, leaf ?? null, byId).messages;
			const systemMessage = lib("currentSystemMessage", messages);
			return {
				type: "compaction",
				...base,
				summary: draft.summary,
				firstKeptEntryId: draft.firstKeptEntryId ?? id,
				tokensBefore: 0,
				details: draft.details,
				usage: draft.usage,
				fromHook: true,
				...(systemMessage ? { systemMessage } : {}),
			};
		}
		default:
			return undefined;
	}
}

/** pi's conversion for the model, system messages kept where they are. */
function toLlm(messages) {
	const out = [];
	let run = [];
	const flush = () => {
		if (run.length > 0) out.push(...lib("convertToLlm", run));
		run = [];
	};
	for (const message of messages) {
		if (message?.role === "system") {
			flush();
			out.push(message);
		} else {
			run.push(message);
		}
	}
	flush();
	return out;
}

/**
 * pi's `BoundaryContextPreview` for the session with `drafts` appended (throws
 * on an invalid draft). `pending`: pi-rpc's queued messages, then the custom
 * messages held for the turn's end (`pendingMessages`); `boundary` decides how
 * they count for `canContinue`, as in pi.
 */
export function boundaryContext(sessionManager, drafts, pending = { queued: [], held: [] }, boundary = "agent_before_settle") {
	const entries = sessionManager.getEntries();
	const byId = new Map(entries.map((entry) => [entry.id, entry]));
	let leaf = sessionManager.getLeafId();
	for (const draft of drafts ?? []) {
		const entry = draftEntry(draft, entries, byId, leaf);
		if (!entry) continue;
		entries.push(entry);
		byId.set(entry.id, entry);
		leaf = entry.id;
	}
	const projected = projection.buildSessionProjection(entries, leaf ?? null, byId);
	const llmMessages = toLlm(projected.messages);
	const finalRole = llmMessages[llmMessages.length - 1]?.role;
	const runnable = llmMessages.some((message) => message.role !== "system") && finalRole !== "assistant";
	const queued = pending.queued ?? [];
	const held = pending.held ?? [];
	const queueCounts = boundary === "turn_end" ? queued.length > 0 : finalRole === "assistant" && queued.length > 0;
	return {
		contextEntries: projected.entries,
		contextMessages: projected.messages,
		llmMessages,
		pendingMessages: [...queued, ...held],
		canContinue: runnable || held.length > 0 || queueCounts,
	};
}

/** The session entry id of each message of a turn, found on the branch (latest first). */
function turnEntryIds(sessionManager, message, toolResults) {
	const branch = sessionManager.getBranch().filter((entry) => entry.type === "message");
	const latest = (test) => {
		for (let i = branch.length - 1; i >= 0; i--) if (test(branch[i].message)) return branch[i].id;
		return undefined;
	};
	const messageEntryId = latest((m) => m?.role === message?.role && m?.timestamp === message?.timestamp);
	const toolResultEntryIds = (toolResults ?? []).flatMap((result) => {
		const id = latest((m) => m?.role === "toolResult" && m?.toolCallId === result?.toolCallId);
		return id ? [id] : [];
	});
	return { messageEntryId, toolResultEntryIds };
}

/** The fields of pi's `turn_end` event before the proposal (`turnIndex`, `message`, …). */
export function turnEndEvent(sessionManager, params) {
	const { messageEntryId, toolResultEntryIds } = turnEntryIds(sessionManager, params.message, params.toolResults);
	return {
		type: "turn_end",
		turnIndex: params.turnIndex,
		message: params.message,
		toolResults: params.toolResults ?? [],
		messageEntryId,
		toolResultEntryIds,
		outcome: params.outcome,
	};
}

/**
 * Run the handlers of boundary `base.type` (`turn_end`, `agent_before_settle`)
 * with `base` as the event's own fields: `{entries, continue, valid}`.
 */
export async function runBoundary(handlers, base, params, ctx, reportError) {
	const boundary = base.type;
	let entries = Array.isArray(params.entries) ? params.entries : [];
	let shouldContinue = params.continue === true;
	let valid = true;
	const pending = params.pending ?? { queued: [], held: [] };
	let context = boundaryContext(ctx.sessionManager, entries, pending, boundary);
	for (const handler of handlers) {
		const event = { ...base, entries, continue: shouldContinue, context };
		try {
			const result = await handler(event, ctx);
			if (result?.entries !== undefined) entries = result.entries;
			if (result?.continue !== undefined) shouldContinue = result.continue;
		} catch (error) {
			reportError(boundary, error);
		}
		// As pi: an invalid proposal keeps the last good preview.
		try {
			context = boundaryContext(ctx.sessionManager, entries, pending, boundary);
			valid = true;
		} catch (error) {
			valid = false;
			reportError(boundary, `Invalid boundary entries: ${error instanceof Error ? error.message : String(error)}`);
		}
	}
	return { entries, continue: shouldContinue, valid };
}
