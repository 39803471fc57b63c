// pi-rpc extension host: the `agent_before_settle` boundary. Handlers run in
// registration order; each sees the draft entries and continuation proposed
// so far, with `context`, a preview of the model context once those drafts
// are appended, rebuilt after every handler. A draft that cannot be applied
// (a `context_edit` of an entry that is not on the branch…) makes the
// proposal invalid; pi-rpc then appends nothing and does not continue.

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

/** pi's `BoundaryContextPreview` for the session with `drafts` appended (throws on an invalid draft). */
export function boundaryContext(sessionManager, drafts) {
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
	return {
		contextEntries: projected.entries,
		contextMessages: projected.messages,
		llmMessages,
		pendingMessages: [],
		canContinue: runnable,
	};
}

/** Run the `agent_before_settle` handlers: `{entries, continue, valid}`. */
export async function beforeSettle(handlers, params, ctx, reportError) {
	let entries = Array.isArray(params.entries) ? params.entries : [];
	let shouldContinue = params.continue === true;
	let valid = true;
	const rebuild = () => {
		try {
			valid = true;
			return boundaryContext(ctx.sessionManager, entries);
		} catch (error) {
			valid = false;
			reportError("agent_before_settle", `Invalid boundary entries: ${error instanceof Error ? error.message : String(error)}`);
			return boundaryContext(ctx.sessionManager, []);
		}
	};
	let context = rebuild();
	for (const handler of handlers) {
		const event = { type: "agent_before_settle", outcome: params.outcome, entries, continue: shouldContinue, context };
		try {
			const result = await handler(event, ctx);
			if (result?.entries !== undefined) entries = result.entries;
			if (result?.continue !== undefined) shouldContinue = result.continue;
		} catch (error) {
			reportError("agent_before_settle", error);
		}
		context = rebuild();
	}
	return { entries, continue: shouldContinue, valid };
}
