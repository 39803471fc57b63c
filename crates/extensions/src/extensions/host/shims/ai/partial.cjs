// pi-rpc extension host: the partial assistant message of a model call
// pi-rpc makes for an extension, kept as pi-ai keeps it. pi-rpc streams the
// call's updates (`streamData`: the `batch` made from one read of the
// provider, with the message's `fields` as they stand after it; an empty
// batch when the read only changed them, as a finish reason does); each is
// applied to one message object, which every pushed event carries as
// `partial` and which becomes the final message:
//
// * it starts empty with `stopReason: "pending"`;
// * a block is added at its `*_start` (a tool call as `{type, id, name,
//   arguments}`, its arguments parsed as they stream in);
// * the batch's `fields` give it what the provider said so far beyond the
//   blocks' text: the response id, usage, the stop reason once known (and a
//   failed or aborted call's error before its last blocks end), each
//   block's signature (pi-ai's `thinkingSignature` is there from the
//   block's start when the API says it then; the reply's duration once
//   its stream is over, for the agent's streaming message);
// * the call's answer gives it its final fields, then `done` or `error`.

"use strict";

const { ToolCallArgumentsStream } = require("./json.cjs");

const zeroUsage = () => ({
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

/** `target` made equal to `source`, the same object kept (`except`: keys left as they are). */
function becomeLike(target, source, except = []) {
	for (const key of Object.keys(target)) if (!(key in source) && !except.includes(key)) delete target[key];
	for (const [key, value] of Object.entries(source)) if (!except.includes(key)) target[key] = value;
}

class PartialMessage {
	#stream;
	#message;
	/** Argument text of each streaming tool call, by content index. */
	#args = new Map();

	/** `stream`: the AssistantMessageEventStream the events go to. */
	constructor(stream) {
		this.#stream = stream;
	}

	/** One `streamData` of pi-rpc's. */
	receive(data) {
		for (const update of Array.isArray(data?.batch) ? data.batch : [data]) this.#apply(update);
		if (data?.fields && this.#message) this.#take(data.fields);
	}

	/** The message's fields as pi-rpc's provider said them so far. */
	#take(fields) {
		const message = this.#message;
		if (fields.responseId !== undefined) message.responseId = fields.responseId;
		if (fields.usage) message.usage = fields.usage;
		if (fields.stopReason !== undefined) message.stopReason = fields.stopReason;
		if (fields.rawStopReason !== undefined) message.rawStopReason = fields.rawStopReason;
		if (fields.errorMessage !== undefined) message.errorMessage = fields.errorMessage;
		if (fields.durationMs !== undefined) message.durationMs = fields.durationMs;
		(Array.isArray(fields.blocks) ? fields.blocks : []).forEach((own, i) => {
			const block = message.content[i];
			if (!block || !own) return;
			for (const [key, value] of Object.entries(own)) block[key] = value;
		});
	}

	#apply(update) {
		if (update?.kind === "start") {
			const m = update.message ?? {};
			this.#message = { role: "assistant", content: [], api: m.api, provider: m.provider, model: m.model, usage: zeroUsage(), stopReason: "pending", timestamp: m.timestamp ?? Date.now() };
			if (m.responseId !== undefined) this.#message.responseId = m.responseId;
			this.#stream.push({ type: "start", partial: this.#message });
			return;
		}
		const event = update?.event;
		const message = this.#message;
		if (!event || !message) return;
		const i = event.contentIndex;
		const { id, toolName, ...piEvent } = event;
		switch (event.type) {
			case "text_start":
				message.content[i] = { type: "text", text: "" };
				break;
			case "text_delta":
				message.content[i].text += event.delta;
				break;
			case "thinking_start":
				message.content[i] = { type: "thinking", thinking: "" };
				break;
			case "thinking_delta":
				message.content[i].thinking += event.delta;
				break;
			case "toolcall_start":
				message.content[i] = { type: "toolCall", id, name: toolName, arguments: {} };
				this.#args.set(i, new ToolCallArgumentsStream());
				break;
			case "toolcall_delta": {
				const args = this.#args.get(i);
				if (args) message.content[i].arguments = args.append(event.delta);
				break;
			}
			case "text_end":
				message.content[i].text = event.content;
				break;
			case "thinking_end":
				message.content[i].thinking = event.content;
				break;
			case "toolcall_end":
				this.#args.delete(i);
				becomeLike(message.content[i], { type: "toolCall", ...event.toolCall });
				this.#stream.push({ ...piEvent, toolCall: message.content[i], partial: message });
				return;
			default:
		}
		this.#stream.push({ ...piEvent, partial: message });
	}

	/**
	 * The call's answer (`final`: its message; none when it has none): the
	 * partial takes the final fields, then `done` or `error` with the message.
	 */
	finish(answer) {
		const message = this.#message;
		// The level is the agent loop's to record (pi-agent-core adds it), not pi-ai's.
		const { thinkingLevel: _level, ...final } = answer ?? {};
		if (answer && message) {
			// pi-ai times the reply when it is done, after its blocks end.
			becomeLike(message, final, ["content", "durationMs"]);
			final.content?.forEach((block, i) => {
				if (message.content[i]?.type === block?.type) becomeLike(message.content[i], block);
				else message.content[i] = block;
			});
			message.content.length = final.content?.length ?? message.content.length;
		}
		const result = message && answer ? message : answer && final;
		if (!result) {
			this.#stream.end();
			return;
		}
		if (final.durationMs !== undefined) result.durationMs = final.durationMs;
		const failed = result.stopReason === "error" || result.stopReason === "aborted";
		this.#stream.push(failed ? { type: "error", reason: result.stopReason, error: result } : { type: "done", reason: result.stopReason, message: result });
		this.#stream.end();
	}
}

module.exports = { PartialMessage };
