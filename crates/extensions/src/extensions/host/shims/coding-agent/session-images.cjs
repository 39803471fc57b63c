// pi-rpc extension host: an SDK session's images prepared as pi's
// `AgentSession` prepares them as they enter its conversation: a prompt's
// after the `before_agent_start` handlers, a queued message's at its
// delivery, a tool result's after the `tool_result` handlers. The work is
// pi-rpc's own image code (the running session's, through the host's
// `lib`), with the session's `images.autoResize` and the limits of its
// (routed) model's `inputLimits.images.resize`, else pi's defaults.

"use strict";

const { lib } = require("./text.cjs");

/** What pi-rpc's image code is given: `false` when the settings turn resizing off, else the model's resize options (`null`: pi's defaults). */
function resizeOptions(session) {
	if (session.settingsManager?.getImageAutoResize() === false) return false;
	return (session.routedModel?.model ?? session.model)?.inputLimits?.images?.resize ?? null;
}

const hasImage = (content) => Array.isArray(content) && content.some((block) => block?.type === "image");

/** A user message's images prepared in place: converted and fitted, their notes after its text, one that cannot be sent left out. */
function prepareUserMessage(session, message) {
	if (message?.role !== "user" || !hasImage(message.content)) return message;
	const prepared = lib("prepareUserImages", message.content, resizeOptions(session));
	if (prepared) message.content = prepared;
	return message;
}

/** An `afterToolCall` that runs `hook` (the `tool_result` handlers), then prepares the images of the content it leaves. */
function withToolResultImages(session, hook) {
	return async (context) => {
		const hookResult = await hook(context);
		const content = hookResult?.content ?? context.result.content ?? [];
		if (!hasImage(content)) return hookResult;
		const prepared = lib("prepareToolResultImages", content, resizeOptions(session));
		if (!prepared) return hookResult;
		return hookResult ? { ...hookResult, content: prepared } : { content: prepared, structuredContent: context.result.structuredContent };
	};
}

module.exports = { prepareUserMessage, withToolResultImages };
