// pi-rpc extension host: pi's compaction functions (`compact`,
// `generateSummary`, `generateSummaryWithUsage`, `findCutPoint`, the branch
// summary functions, and the
// `prepareCompaction` that `AgentSession.compact` uses). What to summarise
// and the texts the summarising model sees are pi-rpc's own compaction code
// (the `lib` request, crates/agent/src/agent/extension_compaction.rs); the
// model call is made here, as pi makes it: the caller's stream function, else
// the model's provider through pi-rpc, the summary system prompt, no cache
// writes, reasoning at the given thinking level; a failed call is retried
// under the given `retry` policy with its `callbacks`, as pi-ai's
// `retryAssistantCall` retries it (summary-retry.cjs).

"use strict";

const crypto = require("node:crypto");
const calls = require("../ai/calls.cjs");
const transcript = require("../ai/transcript.cjs");
const { lib } = require("./text.cjs");
const { sessionEntryToContextMessages, projectContextEntry } = require("./projection.cjs");
const { retryingCall } = require("./summary-retry.cjs");

const texts = () => lib("summaryTexts");

/** pi's FileOperations as the lists pi-rpc reads (`Set`s or arrays). */
const fileOpsJson = (ops) => ({ read: [...(ops?.read ?? [])], written: [...(ops?.written ?? [])], edited: [...(ops?.edited ?? [])] });

/** pi's `prepareCompaction(pathEntries, settings)`: what a compaction summarises, or undefined. */
function prepareCompaction(pathEntries, settings) {
	const p = lib("prepareCompaction", pathEntries ?? [], settings ?? {});
	if (!p) return undefined;
	return {
		...p,
		previousSummary: p.previousSummary ?? undefined,
		fileOps: { read: new Set(p.fileOps.read), written: new Set(p.fileOps.written), edited: new Set(p.fileOps.edited) },
	};
}

/** The answer of a call stopped before it was sent. */
const abortedAnswer = (model) => ({
	role: "assistant",
	content: [],
	api: model.api,
	provider: model.provider,
	model: model.id,
	usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
	stopReason: "aborted",
	errorMessage: "Request was aborted",
	timestamp: Date.now(),
});

/**
 * The answer of one one-off summary call (a compaction's, a branch
 * summary's, a bug report's): `promptText` as the only user message under
 * `systemPrompt`, no cache writes, reasoning at `thinkingLevel`, retried
 * under `retry`.
 */
async function summaryResponse(systemPrompt, promptText, model, options) {
	const { apiKey, headers, signal, thinkingLevel, streamFn, sessionId, retry, callbacks, maxTokens } = options;
	const context = {
		systemPrompt,
		messages: [{ role: "user", content: [{ type: "text", text: promptText }], timestamp: Date.now() }],
	};
	const request = { signal, apiKey, headers, cacheRetention: "none", sessionId: sessionId ?? crypto.randomUUID() };
	if (maxTokens !== undefined) request.maxTokens = maxTokens;
	if (model.reasoning && thinkingLevel && thinkingLevel !== "off") request.reasoning = thinkingLevel;
	const call = async () => (streamFn ? (await streamFn(model, context, request)).result() : calls.viaRegistry(model, context, request, true).result());
	// A signal aborted already sends nothing (pi's HTTP client refuses it before the request).
	const produce = async () => (signal?.aborted ? abortedAnswer(model) : call());
	return retryingCall(produce, retry, signal, callbacks);
}

/** One summarising call; its answer, or pi's error. */
async function summarize(label, promptText, model, options) {
	const response = await summaryResponse(texts().systemPrompt, promptText, model, options);
	if (response.stopReason === "aborted" && label === "Branch summarization") return { aborted: true };
	if (response.stopReason === "error") throw new Error(`${label} failed: ${response.errorMessage || "Unknown error"}`);
	if (response.stopReason === "length") throw new Error(`${label} failed: generation hit the token cap and the summary is incomplete`);
	if (response.content.some((block) => block.type === "toolCall")) throw new Error(`${label} attempted to call a tool`);
	return { text: transcript.contentText(response.content), usage: response.usage };
}

/** pi's `generateSummaryWithUsage(messages, model, _reserve, apiKey, headers, signal, custom, previous, thinking, streamFn, …)`. */
async function generateSummaryWithUsage(messages, model, _reserveTokens, apiKey, headers, signal, customInstructions, previousSummary, thinkingLevel, streamFn, _env, retry, callbacks, sessionId) {
	const prompt = lib("summaryPrompt", messages ?? [], previousSummary ?? null, customInstructions ?? null);
	return summarize("Summarization", prompt, model, { apiKey, headers, signal, thinkingLevel, streamFn, sessionId, retry, callbacks });
}

/** pi's `generateSummary`: the text of `generateSummaryWithUsage`. */
async function generateSummary(...args) {
	return (await generateSummaryWithUsage(...args)).text;
}

/** Two calls' usage added up; optional splits kept when either reports them; a provider's total only when both gave one. */
function sum(a, b) {
	const add = (keys, x, y) => Object.fromEntries(keys.map((k) => [k, (x?.[k] ?? 0) + (y?.[k] ?? 0)]));
	const optional = ["cacheWrite1h", "reasoning"].filter((k) => a[k] !== undefined || b[k] !== undefined);
	return {
		...add(["input", "output", "cacheRead", "cacheWrite", ...optional, "totalTokens"], a, b),
		cost: {
			...add(["input", "output", "cacheRead", "cacheWrite", "total"], a.cost, b.cost),
			totalFromProvider: a.cost?.totalFromProvider === true && b.cost?.totalFromProvider === true,
		},
	};
}

/** pi's `compact(preparation, model, apiKey, headers, custom, signal, thinking, streamFn, env, retry, callbacks, sessionId)`. */
async function compact(preparation, model, apiKey, headers, customInstructions, signal, thinkingLevel, streamFn, _env, retry, callbacks, sessionId) {
	const { firstKeptEntryId, messagesToSummarize, turnPrefixMessages, isSplitTurn, tokensBefore, previousSummary, fileOps } = preparation;
	const call = { apiKey, headers, signal, thinkingLevel, streamFn, sessionId, retry, callbacks };
	const history = () => generateSummaryWithUsage(messagesToSummarize, model, undefined, apiKey, headers, signal, customInstructions, previousSummary, thinkingLevel, streamFn, undefined, retry, callbacks, sessionId);
	let summary;
	let usage;
	if (isSplitTurn && turnPrefixMessages.length > 0) {
		const past = messagesToSummarize.length > 0 ? await history() : { text: previousSummary ?? texts().noPriorHistory };
		const prefix = await summarize("Turn prefix summarization", lib("turnPrefixPrompt", turnPrefixMessages, customInstructions ?? null), model, call);
		summary = `${past.text}${texts().splitTurnSeparator}${prefix.text}`;
		usage = past.usage ? sum(past.usage, prefix.usage) : prefix.usage;
	} else {
		({ text: summary, usage } = await history());
	}
	const { readFiles, modifiedFiles } = lib("computeFileLists", fileOpsJson(fileOps));
	summary += lib("formatFileOperations", readFiles, modifiedFiles);
	if (!firstKeptEntryId) throw new Error("First kept entry has no UUID - session may need migration");
	return { summary, firstKeptEntryId, tokensBefore, usage, details: { readFiles, modifiedFiles } };
}

const CUT_ROLES = ["user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"];
const TURN_ROLES = ["user", "bashExecution", "custom", "branchSummary", "compactionSummary"];
const messagesOf = (entry) => sessionEntryToContextMessages(entry) ?? [];
const startsTurn = (entry) => entry.type !== "compaction" && messagesOf(entry).some((m) => TURN_ROLES.includes(m.role));

function turnStart(entries, index, start) {
	for (let i = index; i >= start; i--) if (startsTurn(entries[i])) return i;
	return -1;
}

/** pi's `findCutPoint(entries, start, end, keepRecentTokens)` over a branch's entries. */
function findCutPoint(entries, startIndex, endIndex, keepRecentTokens) {
	const cutPoints = [];
	for (let i = startIndex; i < endIndex; i++) {
		if (entries[i].type !== "compaction" && messagesOf(entries[i]).some((m) => CUT_ROLES.includes(m.role))) cutPoints.push(i);
	}
	if (cutPoints.length === 0) return { firstKeptEntryIndex: startIndex, turnStartIndex: -1, isSplitTurn: false };
	let total = 0;
	let cut = cutPoints[0];
	for (let i = endIndex - 1; i >= startIndex; i--) {
		const tokens = messagesOf(entries[i]).reduce((n, m) => n + lib("estimateTokens", m), 0);
		if (tokens === 0) continue;
		total += tokens;
		if (total >= keepRecentTokens) {
			cut = cutPoints.find((c) => c >= i) ?? cutPoints[cutPoints.length - 1];
			break;
		}
	}
	while (cut > startIndex && entries[cut - 1].type !== "compaction" && messagesOf(entries[cut - 1]).length === 0) cut--;
	const starts = startsTurn(entries[cut]);
	const turnStartIndex = starts ? -1 : turnStart(entries, cut, startIndex);
	return { firstKeptEntryIndex: cut, turnStartIndex, isSplitTurn: !starts && turnStartIndex !== -1 };
}

/** pi's `collectEntriesForBranchSummary(session, oldLeafId, targetId)`: the old branch's entries after the common ancestor. */
function collectEntriesForBranchSummary(session, oldLeafId, targetId) {
	if (!oldLeafId) return { entries: [], commonAncestorId: null };
	const oldPath = new Set(session.getBranch(oldLeafId).map((e) => e.id));
	const common = [...session.getBranch(targetId)].reverse().find((e) => oldPath.has(e.id));
	const commonAncestorId = common?.id ?? null;
	const entries = [];
	for (let entry = session.getEntry(oldLeafId); entry && entry.id !== commonAncestorId; entry = entry.parentId ? session.getEntry(entry.parentId) : undefined) {
		entries.push(entry);
	}
	return { entries: entries.reverse(), commonAncestorId };
}

/** The message an entry gives a branch summary (tool results and metadata none; a context edit applied). */
function branchMessage(entry, edit) {
	if (entry.type === "message") return entry.message.role === "toolResult" ? undefined : edit ? projectContextEntry(entry, edit)[0] : entry.message;
	if (!["custom_message", "branch_summary", "compaction"].includes(entry.type)) return undefined;
	const messages = edit ? projectContextEntry(entry, edit) : sessionEntryToContextMessages(entry);
	return messages.find((m) => m.role !== "system");
}

/** pi's `extractFileOpsFromMessage`: the paths of `read`/`write`/`edit` calls (nested ones of a tool result too). */
function addFileOps(message, ops) {
	const calls = message.role === "toolResult" ? (message.nestedCalls?.calls ?? []) : message.role === "assistant" && Array.isArray(message.content) ? message.content.filter((b) => b?.type === "toolCall") : [];
	const sets = { read: ops.read, write: ops.written, edit: ops.edited };
	for (const call of calls) {
		const file = typeof call.arguments?.path === "string" ? call.arguments.path : undefined;
		if (file && sets[call.name]) sets[call.name].add(file);
	}
}

/** pi's `prepareBranchEntries(entries, tokenBudget)`: the newest messages within the budget, and the files touched. */
function prepareBranchEntries(entries, tokenBudget = 0) {
	const fileOps = { read: new Set(), written: new Set(), edited: new Set() };
	for (const entry of entries) {
		if (entry.type !== "branch_summary" || entry.fromHook || !entry.details) continue;
		for (const f of Array.isArray(entry.details.readFiles) ? entry.details.readFiles : []) fileOps.read.add(f);
		for (const f of Array.isArray(entry.details.modifiedFiles) ? entry.details.modifiedFiles : []) fileOps.edited.add(f);
	}
	const edits = new Map(entries.filter((e) => e.type === "context_edit").map((e) => [e.targetId, e]));
	const messages = [];
	let totalTokens = 0;
	for (let i = entries.length - 1; i >= 0; i--) {
		const entry = entries[i];
		const message = branchMessage(entry, edits.get(entry.id));
		if (!message) continue;
		addFileOps(message, fileOps);
		const tokens = lib("estimateTokens", message);
		if (tokenBudget > 0 && totalTokens + tokens > tokenBudget) {
			const isSummary = entry.type === "compaction" || entry.type === "branch_summary";
			if (isSummary && totalTokens < tokenBudget * 0.9) {
				messages.unshift(message);
				totalTokens += tokens;
			}
			break;
		}
		messages.unshift(message);
		totalTokens += tokens;
	}
	return { messages, fileOps, totalTokens };
}

/** pi's `generateBranchSummary(entries, options)`: `{summary, usage, readFiles, modifiedFiles}`, `{aborted}` or `{error}`. */
async function generateBranchSummary(entries, options) {
	const { model, apiKey, headers, signal, thinkingLevel, customInstructions, replaceInstructions, reserveTokens = 16384, streamFn, retry, callbacks } = options;
	const { messages, fileOps } = prepareBranchEntries(entries, (model.contextWindow || 128000) - reserveTokens);
	if (messages.length === 0) return { summary: "No content to summarize" };
	const prompt = lib("branchSummaryPrompt", messages, customInstructions ?? null, Boolean(replaceInstructions && customInstructions));
	let answer;
	try {
		answer = await summarize("Branch summarization", prompt, model, { apiKey, headers, signal, thinkingLevel, streamFn, sessionId: undefined, retry, callbacks });
	} catch (error) {
		return { error: error.message };
	}
	if (answer.aborted) return { aborted: true };
	const { readFiles, modifiedFiles } = lib("computeFileLists", fileOpsJson(fileOps));
	const summary = `${texts().branchPreamble}${answer.text}${lib("formatFileOperations", readFiles, modifiedFiles)}`;
	return { summary: summary || "No summary generated", usage: answer.usage, readFiles, modifiedFiles };
}

module.exports = {
	summaryResponse,
	compact,
	generateSummary,
	generateSummaryWithUsage,
	findCutPoint,
	prepareCompaction,
	collectEntriesForBranchSummary,
	prepareBranchEntries,
	generateBranchSummary,
};
