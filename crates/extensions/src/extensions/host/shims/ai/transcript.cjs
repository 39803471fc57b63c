// pi-rpc extension host: pi-ai's transcript helpers. A transcript carries
// the prompt and the tools in system messages: the leading one declares
// them, later ones patch the text (`content`), the named `sections` (null
// removes one) and the tools (`toolsAdded`, `toolsRemoved`). These replay
// that state, as providers that take one system prompt need it.

"use strict";

const isSystem = (m) => m?.role === "system";

/** The text of a message content (a string, or the text blocks joined). */
function contentText(content, separator = "\n") {
	if (typeof content === "string") return content;
	return (content ?? [])
		.filter((b) => b?.type === "text")
		.map((b) => b.text)
		.join(separator);
}

/** A system message as one prompt: its content, then its sections. */
function getSystemMessageText(message) {
	const parts = [contentText(message.content), ...Object.values(message.sections ?? {}).filter((t) => t !== null)];
	return parts.filter((p) => p.length > 0).join("\n\n");
}

/** A later system message as a model that takes mid-conversation system messages sees it. */
function renderSystemMessageUpdate(message) {
	const parts = [];
	const text = contentText(message.content);
	if (text.length > 0) parts.push(text);
	for (const [name, value] of Object.entries(message.sections ?? {})) {
		parts.push(value === null ? `Removed system prompt section "${name}".` : `Updated system prompt section "${name}":\n\n${value}`);
	}
	return parts.join("\n\n");
}

function createInitialSystemMessage(systemPrompt, tools) {
	const prompt = systemPrompt !== undefined && systemPrompt.length > 0;
	const hasTools = tools !== undefined && tools.length > 0;
	if (!prompt && !hasTools) return undefined;
	const message = { role: "system", content: systemPrompt ?? "" };
	if (hasTools) message.toolsAdded = tools;
	message.timestamp = 0;
	return message;
}

/** `{systemPrompt, tools, messages}` as a transcript (the prompt and tools in a leading system message). */
function normalizeContext(context) {
	const head = createInitialSystemMessage(context.systemPrompt, context.tools);
	return { messages: head ? [head, ...context.messages] : context.messages };
}

const getInitialSystemMessage = (messages) => (isSystem(messages[0]) ? messages[0] : undefined);
const withoutInitialSystemMessage = (messages) => (getInitialSystemMessage(messages) ? messages.slice(1) : messages);

/** The tools after every system message's additions and removals. */
function getCurrentTools(messages) {
	const tools = new Map();
	for (const m of messages.filter(isSystem)) {
		for (const t of m.toolsRemoved ?? []) tools.delete(t.name);
		for (const t of m.toolsAdded ?? []) tools.set(t.name, t);
	}
	return [...tools.values()];
}

/** One system message holding the current prompt text, sections and tools (undefined: none). */
function getCurrentSystemMessage(messages) {
	const texts = [];
	const sections = new Map();
	let timestamp;
	for (const m of messages.filter(isSystem)) {
		timestamp ??= m.timestamp;
		const text = contentText(m.content);
		if (text.length > 0) texts.push(text);
		for (const [name, value] of Object.entries(m.sections ?? {})) {
			if (value === null) sections.delete(name);
			else sections.set(name, value);
		}
	}
	const tools = getCurrentTools(messages);
	if (timestamp === undefined && tools.length === 0) return undefined;
	const message = { role: "system", content: texts.join("\n\n") };
	if (sections.size > 0) message.sections = Object.fromEntries(sections);
	if (tools.length > 0) message.toolsAdded = tools;
	message.timestamp = timestamp ?? 0;
	return message;
}

function getCurrentSystemPrompt(messages) {
	const head = getCurrentSystemMessage(messages);
	return head ? getSystemMessageText(head) : "";
}

/** The transcript with its system messages folded into one leading message. */
function collapseSystemMessages(context) {
	const head = getCurrentSystemMessage(context.messages);
	const rest = context.messages.filter((m) => !isSystem(m));
	return { messages: head ? [head, ...rest] : rest };
}

const resolveTranscript = (context, midConversation) => (midConversation ? context : collapseSystemMessages(context));

/** A tool as the model sees it: name, description, schema (JSON), constrained sampling. */
function toToolDeclaration(tool) {
	const out = { name: tool.name, description: tool.description, parameters: JSON.parse(JSON.stringify(tool.parameters)) };
	if (tool.constrainedSampling !== undefined) out.constrainedSampling = tool.constrainedSampling;
	return out;
}

const declarationsEqual = (a, b) => JSON.stringify(toToolDeclaration(a)) === JSON.stringify(toToolDeclaration(b));

function getToolStateChanges(previous, current) {
	const before = new Map(previous.map((t) => [t.name, t]));
	const after = new Map(current.map((t) => [t.name, t]));
	return {
		toolsAdded: current.filter((t) => !before.has(t.name) || !declarationsEqual(before.get(t.name), t)).map(toToolDeclaration),
		toolsRemoved: previous.filter((t) => !after.has(t.name) || !declarationsEqual(t, after.get(t.name))).map((t) => ({ name: t.name })),
	};
}

/** Every tool ever declared, the latest definition of each, in first-declaration order. */
function getDeclaredTools(messages) {
	const all = new Map();
	for (const m of messages.filter(isSystem)) for (const t of m.toolsAdded ?? []) all.set(t.name, t);
	return [...all.values()];
}

function hasToolRedefinitions(messages) {
	const seen = new Map();
	for (const m of messages.filter(isSystem)) {
		for (const t of m.toolsAdded ?? []) {
			if (seen.has(t.name) && !declarationsEqual(seen.get(t.name), t)) return true;
			seen.set(t.name, t);
		}
	}
	return false;
}

/** Index (among system messages) of the last removal or re-declaration, -1 when none. */
function lastNonAdditiveChange(systemMessages) {
	const declared = new Set();
	let last = -1;
	systemMessages.forEach((m, i) => {
		if ((m.toolsRemoved?.length ?? 0) > 0) last = i;
		for (const t of m.toolsAdded ?? []) {
			if (declared.has(t.name)) last = i;
			declared.add(t.name);
		}
	});
	return last;
}

const hasNonAdditiveToolChanges = (messages) => lastNonAdditiveChange(messages.filter(isSystem)) >= 0;

/** Which tools go in the request's tool list and how many system messages fold into it. */
function resolveTranscriptTools(messages, support) {
	const system = messages.filter(isSystem);
	if (support === "none") return { requestTools: getCurrentTools(system), foldedSystemMessages: system.length };
	if (support === "changes") return { requestTools: [], foldedSystemMessages: 0 };
	const folded = Math.max(getInitialSystemMessage(messages) ? 1 : 0, lastNonAdditiveChange(system) + 1);
	return { requestTools: getCurrentTools(system.slice(0, folded)), foldedSystemMessages: folded };
}

module.exports = {
	contentText,
	getSystemMessageText,
	renderSystemMessageUpdate,
	createInitialSystemMessage,
	normalizeContext,
	getInitialSystemMessage,
	withoutInitialSystemMessage,
	getCurrentTools,
	getCurrentSystemMessage,
	getCurrentSystemPrompt,
	collapseSystemMessages,
	resolveTranscript,
	toToolDeclaration,
	declarationsEqual,
	getToolStateChanges,
	getDeclaredTools,
	hasToolRedefinitions,
	hasNonAdditiveToolChanges,
	resolveTranscriptTools,
};
