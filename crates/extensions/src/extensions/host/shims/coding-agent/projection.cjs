// pi-rpc extension host: the model context of a session branch, by pi
// 1.6.0's rules (`buildContextEntries`, `buildSessionProjection`,
// `buildSessionContext`): the path root..leaf; with a compaction on it, the
// latest compaction first, then the entries it kept, then those after it;
// each entry projected to its messages, with its latest `context_edit`
// applied; the model and thinking level of the path.

"use strict";

const millis = (timestamp) => (typeof timestamp === "number" ? timestamp : new Date(timestamp).getTime());

/** The entries by id (`byId` when the caller has it). */
function indexOf(entries, byId) {
	if (byId) return byId;
	const index = new Map();
	for (const entry of entries) if (entry?.id) index.set(entry.id, entry);
	return index;
}

/** Root-to-leaf path: `leafId` null is the empty path, undefined (or unknown) the last entry. */
function pathTo(entries, leafId, byId) {
	if (leafId === null) return [];
	const index = indexOf(entries, byId);
	let entry = (leafId ? index.get(leafId) : undefined) ?? entries[entries.length - 1];
	const path = [];
	while (entry) {
		path.push(entry);
		entry = entry.parentId ? index.get(entry.parentId) : undefined;
	}
	return path.reverse();
}

/** The model and thinking level a path leaves set. */
function pathSettings(path) {
	let thinkingLevel = "off";
	let model = null;
	for (const entry of path) {
		if (entry.type === "thinking_level_change") thinkingLevel = entry.thinkingLevel;
		else if (entry.type === "model_change") model = { provider: entry.provider, modelId: entry.modelId };
		else if (entry.type === "message" && entry.message?.role === "assistant") {
			model = { provider: entry.message.provider, modelId: entry.message.model };
		}
	}
	return { thinkingLevel, model };
}

/** The messages one entry gives the model (custom entries, labels and settings give none). */
function sessionEntryToContextMessages(entry) {
	switch (entry?.type) {
		case "message": {
			const message = entry.message;
			// Hand-edited or old files may hold messages without content.
			if (message?.content == null) {
				if (message?.role === "system") return [{ ...message, content: "" }];
				if (["user", "assistant", "toolResult"].includes(message?.role)) return [{ ...message, content: [] }];
			}
			return [message];
		}
		case "custom_message":
			return [
				{
					role: "custom",
					customType: entry.customType,
					content: entry.content ?? [],
					display: entry.display,
					details: entry.details,
					timestamp: millis(entry.timestamp),
				},
			];
		case "branch_summary":
			return entry.summary ? [{ role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: millis(entry.timestamp) }] : [];
		case "compaction": {
			const summary = { role: "compactionSummary", summary: entry.summary, tokensBefore: entry.tokensBefore, timestamp: millis(entry.timestamp) };
			return entry.systemMessage ? [entry.systemMessage, summary] : [summary];
		}
		default:
			return [];
	}
}

/** The path's entries the context is built from (compaction-aware). */
function buildContextEntries(entries, leafId, byId) {
	const path = pathTo(entries ?? [], leafId, byId);
	const at = path.map((entry) => entry.type).lastIndexOf("compaction");
	if (at < 0) return path;
	const compaction = path[at];
	const kept = path.findIndex((entry) => entry.id === compaction.firstKeptEntryId);
	const before = kept >= 0 && kept < at ? path.slice(kept, at) : [];
	const isSystem = (entry) => entry.type === "message" && entry.message?.role === "system";
	return [compaction, ...before.filter((entry) => !isSystem(entry)), ...path.slice(at + 1)];
}

/** One entry's messages with its `context_edit` (if any): `null` drops them, else the content is replaced. */
function projectContextEntry(entry, edit) {
	const messages = sessionEntryToContextMessages(entry);
	if (!edit) return messages;
	if (edit.replacement === null) return [];
	const content = edit.replacement?.content;
	return messages.map((message) => {
		if (!["user", "assistant", "toolResult", "custom"].includes(message.role)) return message;
		const blocks = typeof content === "string" && (message.role === "assistant" || message.role === "toolResult");
		return { ...message, content: blocks ? [{ type: "text", text: content }] : content };
	});
}

/** Every context entry with the messages it gives, the messages, the model and thinking level. */
function buildSessionProjection(entries, leafId, byId) {
	const all = entries ?? [];
	const { thinkingLevel, model } = pathSettings(pathTo(all, leafId, byId));
	const selected = buildContextEntries(all, leafId, byId);
	const edits = new Map();
	for (const entry of selected) if (entry.type === "context_edit") edits.set(entry.targetId, entry);
	// Only the leading compaction gives its summary; an older one kept in range gives nothing.
	const projected = selected.map((sourceEntry, i) => ({
		sourceEntry,
		messages: sourceEntry.type === "compaction" && i > 0 ? [] : projectContextEntry(sourceEntry, edits.get(sourceEntry.id)),
	}));
	return { entries: projected, messages: projected.flatMap((p) => p.messages), thinkingLevel, model };
}

function buildSessionContext(entries, leafId, byId) {
	const { messages, thinkingLevel, model } = buildSessionProjection(entries, leafId, byId);
	return { messages, thinkingLevel, model };
}

module.exports = {
	sessionEntryToContextMessages,
	buildContextEntries,
	projectContextEntry,
	buildSessionProjection,
	buildSessionContext,
};
