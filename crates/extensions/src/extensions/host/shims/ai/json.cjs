// pi-rpc extension host: pi-ai's JSON helpers for tool-call arguments:
// repair of raw control characters and bad escapes in strings, streaming
// (partial) parses while arguments arrive, the final parse that reports
// malformed arguments, and argument validation (by pi-rpc, with the
// messages its own tools give).

"use strict";

const { services } = require("../host-services.cjs");

const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);
const CONTROL = { "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** JSON text with raw control characters inside strings escaped and stray backslashes doubled. */
function repairJson(json) {
	let out = "";
	let inString = false;
	for (let i = 0; i < json.length; i++) {
		const c = json[i];
		if (!inString) {
			out += c;
			if (c === '"') inString = true;
			continue;
		}
		if (c === '"') {
			out += c;
			inString = false;
		} else if (c === "\\") {
			const next = json[i + 1];
			if (next === "u" && /^[0-9a-fA-F]{4}$/.test(json.slice(i + 2, i + 6))) {
				out += json.slice(i, i + 6);
				i += 5;
			} else if (next !== undefined && ESCAPES.has(next)) {
				out += `\\${next}`;
				i += 1;
			} else {
				out += "\\\\";
			}
		} else if (c.charCodeAt(0) <= 0x1f) {
			out += CONTROL[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
		} else {
			out += c;
		}
	}
	return out;
}

function parseJsonWithRepair(json) {
	try {
		return JSON.parse(json);
	} catch (error) {
		const repaired = repairJson(json);
		if (repaired !== json) return JSON.parse(repaired);
		throw error;
	}
}

/** The arguments of a finished tool call; `argumentsError` (and `{}`) when they are not a JSON object. */
function parseToolCallArguments(json) {
	if (!json?.trim()) return { arguments: {} };
	try {
		const parsed = parseJsonWithRepair(json);
		if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
			throw new Error("Tool arguments must be a JSON object");
		}
		return { arguments: parsed };
	} catch (error) {
		return { arguments: {}, argumentsError: `${error instanceof Error ? error.message : String(error)}\n\nReceived arguments:\n${json}` };
	}
}

/** What a prefix of JSON text holds so far (`{}` when nothing usable). */
function parseStreamingJson(partial) {
	if (!partial || partial.trim() === "") return {};
	try {
		return parseJsonWithRepair(partial);
	} catch {
		const { parse } = services().package("partial-json");
		for (const text of [partial, repairJson(partial)]) {
			try {
				return parse(text) ?? {};
			} catch {
				// try the repaired text, then give up
			}
		}
		return {};
	}
}

/** A parser fed piece by piece; `snapshot()` is the value parsed so far (the same object while unchanged). */
class StreamingJsonParser {
	#text = "";
	#parsedAt = -1;
	#value;

	append(text) {
		this.#text += text;
		return [];
	}

	snapshot() {
		if (this.#parsedAt !== this.#text.length) {
			this.#parsedAt = this.#text.length;
			this.#value = this.#text.trim() === "" ? undefined : parseStreamingJson(this.#text);
		}
		return this.#value;
	}
}

/** A tool call's argument text as it streams in, with the arguments parsed so far. */
class ToolCallArgumentsStream {
	#text = "";
	#parser = new StreamingJsonParser();
	#seen;
	#arguments = {};

	get text() {
		return this.#text;
	}

	append(delta) {
		this.#text += delta;
		this.#parser.append(delta);
		return this.#partial();
	}

	replace(text) {
		if (text.startsWith(this.#text)) {
			const delta = text.slice(this.#text.length);
			return { delta, arguments: delta === "" ? this.#partial() : this.append(delta) };
		}
		this.#text = "";
		this.#parser = new StreamingJsonParser();
		return { delta: undefined, arguments: this.append(text) };
	}

	finish() {
		return parseToolCallArguments(this.#text);
	}

	#partial() {
		const value = this.#parser.snapshot();
		if (value === this.#seen) return this.#arguments;
		this.#seen = value;
		this.#arguments = typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
		return this.#arguments;
	}
}

const lib = (name, ...args) => services().channel.call("lib", { fn: name, args });

module.exports = {
	repairJson,
	parseJsonWithRepair,
	parseToolCallArguments,
	parseStreamingJson,
	StreamingJsonParser,
	ToolCallArgumentsStream,
	validateToolArguments: (tool, toolCall) => lib("validateToolArguments", tool, toolCall),
	validateToolCall: (tools, toolCall) => lib("validateToolCall", tools, toolCall),
};
