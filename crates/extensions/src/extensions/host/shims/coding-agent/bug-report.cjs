// pi-rpc extension host: pi 1.6.0's `AgentSession.summarizeForBugReport`
// (what pi's interactive `/bug` asks the session's model when the user does
// not share the transcript): the session's model, routed once as a summary
// is when it is virtual, is given the newest messages that fit in 60% of its
// context window, serialized as a compaction serializes them, with the
// user's hint, and asked for a report on what went wrong; one call, no
// tools, at most 4096 output tokens, no cache writes, retried under the
// settings' `retry` without events, as pi's. The words it is given are
// pi-rpc's own (compat/DEVIATIONS.md); the failures are pi's.

"use strict";

const transcript = require("../ai/transcript.cjs");
const { lib } = require("./text.cjs");
const { summaryResponse } = require("./compaction.cjs");
const { settingsManagerOf } = require("./session-retry.cjs");

/** What the model is told it is doing. */
const REPORT_ROLE = `Someone using pi, a coding agent, is filing a problem report about it. You are given the conversation they had with the agent. Write the report for the people who maintain pi: what the user set out to do, and where and how the agent or its tools let them down.

You are not a participant in that conversation: do not reply to anything said in it and do not carry on its work. Your whole answer is the report.`;

/** The shape of the report, after the transcript. */
const REPORT_SHAPE = `Answer in Markdown, under these four headings:

## Goal
A few sentences on what the user was trying to get done.

## Problem
What failed and how it showed: a wrong answer, an error, a hang, a tool that misbehaved, anything unexpected. Give error messages and tool output word for word where the conversation has them.

## How to reproduce
Numbered steps, as exact as the conversation allows.

## Details
The tools called, the files involved, what the model did, and anything else that would help a maintainer reproduce or find the fault.

Refer to files only by their path: leave out their contents and any key, password, token or other secret that appears in the conversation. Keep to the facts and keep it short.`;

/** The newest `messages` whose estimated tokens fit in `budget` (the newest one always). */
function newestWithin(messages, budget) {
	let first = messages.length;
	let tokens = 0;
	while (first > 0) {
		const cost = lib("estimateTokens", messages[first - 1]);
		if (first < messages.length && tokens + cost > budget) break;
		tokens += cost;
		first -= 1;
	}
	return messages.slice(first);
}

/** The request's one user message: the (cut) transcript, the user's own words, the report's shape. */
function reportPrompt(messages, total, hint) {
	const parts = [];
	if (messages.length < total) parts.push(`The conversation below is cut short: only its last ${messages.length} of ${total} messages are shown.`);
	parts.push(`<transcript>\n${lib("serializeConversation", lib("convertToLlm", messages))}\n</transcript>`);
	if (hint) parts.push(`The user describes the problem as:\n<user-description>\n${hint}\n</user-description>`);
	parts.push(REPORT_SHAPE);
	return parts.join("\n\n");
}

/** pi's `summarizeForBugReport({hint, signal})` of `session`: the report's Markdown text. */
async function summarizeForBugReport(session, options = {}) {
	if (!session.model) throw new Error("No model selected");
	const { signal } = options;
	const writer = session._summaryTarget ? await session._summaryTarget(signal) : { model: session.model, thinkingLevel: session.thinkingLevel };
	const model = writer.model;
	const all = session.messages;
	const window = model.contextWindow > 0 ? model.contextWindow : 128000;
	const messages = newestWithin(all, Math.floor(window * 0.6));
	const response = await summaryResponse(REPORT_ROLE, reportPrompt(messages, all.length, options.hint?.trim()), model, {
		signal,
		thinkingLevel: writer.thinkingLevel,
		streamFn: session._streamFn,
		sessionId: session.sessionId,
		maxTokens: Math.min(4096, model.maxTokens > 0 ? model.maxTokens : Number.POSITIVE_INFINITY),
		retry: settingsManagerOf(session).getRetrySettings(),
	});
	if (response.stopReason === "aborted") throw new Error("Bug report summary was cancelled");
	if (response.stopReason === "error") throw new Error(`Bug report summary failed: ${response.errorMessage || "Unknown error"}`);
	if (response.stopReason === "length") throw new Error("Bug report summary failed: generation hit the token cap and the summary is incomplete");
	if (response.content.some((block) => block.type === "toolCall")) throw new Error("Bug report summary attempted to call a tool");
	const text = transcript.contentText(response.content).trim();
	if (!text) throw new Error("Bug report summary was empty");
	return text;
}

/** Install `summarizeForBugReport` on `AgentSession`'s prototype. */
function addBugReport(AgentSession) {
	Object.defineProperty(AgentSession.prototype, "summarizeForBugReport", {
		value(options) {
			return summarizeForBugReport(this, options);
		},
		configurable: true,
		writable: true,
	});
}

module.exports = { addBugReport };
