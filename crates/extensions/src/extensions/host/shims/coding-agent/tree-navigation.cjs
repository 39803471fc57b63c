// pi-rpc extension host: pi's `AgentSession.navigateTree` for the SDK
// session (agent-session.cjs), with the sub-session's extension events
// around it as pi 1.6.0 has them: `session_before_tree` (a handler may
// cancel, give the branch summary itself, or change the instructions and
// the label) and `session_tree` once the new position is in place.

"use strict";

const transcript = require("../ai/transcript.cjs");
const compaction = require("./compaction.cjs");
const { summaryRetry } = require("./summary-retry.cjs");

/** The summary pi-rpc's summariser writes of the branch left, or undefined when it was stopped. */
async function summariseBranch(session, entries, instructions, signal) {
	const writer = await session._summaryTarget(signal);
	const result = await compaction.generateBranchSummary(entries, {
		model: writer.model,
		thinkingLevel: writer.thinkingLevel,
		signal,
		customInstructions: instructions.customInstructions,
		replaceInstructions: instructions.replaceInstructions,
		reserveTokens: session.settingsManager?.getBranchSummarySettings().reserveTokens,
		streamFn: session._streamFn,
		...summaryRetry(session, { source: "branchSummary" }),
	});
	if (result.aborted) return undefined;
	if (result.error) throw new Error(result.error);
	return { text: result.summary, usage: result.usage, details: { readFiles: result.readFiles || [], modifiedFiles: result.modifiedFiles || [] } };
}

/**
 * Move `session` to `targetId`: a user (or custom) message's parent, its
 * text handed back as `editorText`; any other entry itself. With
 * `summarize`, the branch left becomes a `branch_summary` entry at the new
 * position (the extension's summary if one gave it, else the summariser's),
 * which takes the label. The agent continues from there.
 */
async function navigateTree(session, targetId, options = {}) {
	if (session.isStreaming) throw new Error("Wait for the current response to finish before navigating the session tree.");
	if (session.isCompacting) throw new Error("Wait for the current compaction or tree navigation to finish before navigating the session tree.");
	const sm = session.sessionManager;
	const oldLeafId = sm.getLeafId();
	if (targetId === oldLeafId) return { cancelled: false };
	if (options.summarize && !session.model) throw new Error("No model available for summarization");
	const target = sm.getEntry(targetId);
	if (!target) throw new Error(`Entry ${targetId} not found`);
	const { entries, commonAncestorId } = compaction.collectEntriesForBranchSummary(sm, oldLeafId, targetId);
	const instructions = { customInstructions: options.customInstructions, replaceInstructions: options.replaceInstructions };
	let label = options.label;
	const controller = new AbortController();
	session._compacting = controller;
	try {
		const runner = session.extensionRunner;
		let own;
		if (runner?.hasHandlers("session_before_tree")) {
			const preparation = { targetId, oldLeafId, commonAncestorId, entriesToSummarize: entries, userWantsSummary: options.summarize ?? false, ...instructions, label };
			const answer = await runner.emit({ type: "session_before_tree", preparation, signal: controller.signal });
			if (answer?.cancel) return { cancelled: true };
			if (answer?.summary && options.summarize) own = answer.summary;
			for (const key of ["customInstructions", "replaceInstructions"]) if (answer?.[key] !== undefined) instructions[key] = answer[key];
			if (answer?.label !== undefined) label = answer.label;
		}
		let summary;
		if (own) summary = { text: own.summary, usage: own.usage, details: own.details };
		else if (options.summarize && entries.length > 0) {
			summary = await summariseBranch(session, entries, instructions, controller.signal);
			if (!summary) return { cancelled: true, aborted: true };
		}
		let leaf = targetId;
		let editorText;
		if ((target.type === "message" && target.message?.role === "user") || target.type === "custom_message") {
			leaf = target.parentId ?? null;
			editorText = transcript.contentText(target.type === "message" ? target.message.content : target.content, "");
		}
		let summaryEntry;
		if (summary?.text) {
			const id = sm.branchWithSummary(leaf, summary.text, summary.details, own !== undefined, summary.usage);
			summaryEntry = sm.getEntry(id);
			if (label) sm.appendLabelChange(id, label);
		} else {
			if (leaf === null) sm.resetLeaf();
			else sm.branch(leaf);
			if (label) sm.appendLabelChange(targetId, label);
		}
		session.agent.state.messages = sm.buildSessionContext().messages;
		// The new position is in place: a session_tree handler may navigate again.
		session._compacting = undefined;
		await runner?.emit({ type: "session_tree", newLeafId: sm.getLeafId(), oldLeafId, summaryEntry, fromExtension: summary?.text ? own !== undefined : undefined });
		return { editorText, cancelled: false, summaryEntry };
	} finally {
		if (session._compacting === controller) session._compacting = undefined;
	}
}

module.exports = { navigateTree };
