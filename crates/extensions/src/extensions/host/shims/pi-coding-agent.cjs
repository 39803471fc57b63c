// pi-rpc extension host: what `import … from "@earendil-works/pi-coding-agent"`
// gives an extension. Types vanish when TypeScript is loaded; these are the
// runtime values extensions use (type guards, truncation helpers, the
// file-mutation queue, paths), written from pi's documentation and its
// observed behaviour. Parts that need pi's own runtime (built-in tool
// factories, the session manager class, TUI components) are stand-ins: a
// factory throws a clear error, a component renders nothing.

"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const tui = require("./pi-tui.cjs");

const DEFAULT_MAX_BYTES = 50 * 1024;
const DEFAULT_MAX_LINES = 2000;
const CONFIG_DIR_NAME = ".pi";
const VERSION = "1.6.0";

function getAgentDir() {
	return process.env.PI_CODING_AGENT_DIR || path.join(os.homedir(), CONFIG_DIR_NAME, "agent");
}

function formatSize(bytes) {
	if (bytes < 1024) return `${bytes}B`;
	if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}KB`;
	return `${(bytes / (1024 * 1024)).toFixed(1)}MB`;
}

/** Lines of a text; a final newline ends the last line rather than starting one. */
function splitLines(text) {
	if (text === "") return [];
	const lines = text.split("\n");
	if (lines[lines.length - 1] === "") lines.pop();
	return lines;
}

function limits(options = {}) {
	return { maxLines: options.maxLines ?? DEFAULT_MAX_LINES, maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES };
}

function result(text, lines, kept, by, extra, max) {
	// The text fits as it is; or all its lines fit but not the final
	// newline, which pi counts as cut by lines.
	if (by === null && Buffer.byteLength(text, "utf8") > max.maxBytes) by = "lines";
	const content = kept.join("\n");
	return {
		content: by === null ? text : content,
		truncated: by !== null,
		truncatedBy: by,
		totalLines: lines.length,
		totalBytes: Buffer.byteLength(text, "utf8"),
		outputLines: by === null ? lines.length : kept.length,
		outputBytes: by === null ? Buffer.byteLength(text, "utf8") : Buffer.byteLength(content, "utf8"),
		lastLinePartial: extra.lastLinePartial ?? false,
		firstLineExceedsLimit: extra.firstLineExceedsLimit ?? false,
		maxLines: max.maxLines,
		maxBytes: max.maxBytes,
	};
}

/**
 * Whole lines, taken in `order`, while both limits hold; `by` names the
 * limit that stopped it (null when every line fits).
 */
function takeLines(lines, order, max) {
	const kept = [];
	let bytes = 0;
	for (const line of order) {
		const size = Buffer.byteLength(line, "utf8") + (kept.length > 0 ? 1 : 0);
		if (kept.length >= max.maxLines) return { kept, by: "lines", stoppedAt: line };
		if (bytes + size > max.maxBytes) return { kept, by: "bytes", stoppedAt: line };
		kept.push(line);
		bytes += size;
	}
	return { kept, by: null };
}

/** Keep the first lines that fit both limits (whole lines only). */
function truncateHead(text, options) {
	const max = limits(options);
	const lines = splitLines(String(text ?? ""));
	const { kept, by } = takeLines(lines, lines, max);
	const firstLineExceedsLimit = by === "bytes" && kept.length === 0;
	return result(String(text ?? ""), lines, kept, by, { firstLineExceedsLimit }, max);
}

/** The longest end of `line` (whole characters) within `maxBytes`. */
function tailBytes(line, maxBytes) {
	const chars = [...line];
	let bytes = 0;
	let start = chars.length;
	while (start > 0) {
		const size = Buffer.byteLength(chars[start - 1], "utf8");
		if (bytes + size > maxBytes) break;
		bytes += size;
		start--;
	}
	return chars.slice(start).join("");
}

/** Keep the last lines that fit both limits; a last line longer than the byte limit is cut to its end. */
function truncateTail(text, options) {
	const max = limits(options);
	const lines = splitLines(String(text ?? ""));
	const { kept, by, stoppedAt } = takeLines(lines, [...lines].reverse(), max);
	kept.reverse();
	const lastLinePartial = by === "bytes" && kept.length === 0;
	if (lastLinePartial) kept.push(tailBytes(stoppedAt, max.maxBytes));
	return result(String(text ?? ""), lines, kept, by, { lastLinePartial }, max);
}

function truncateLine(text, maxChars) {
	const s = String(text ?? "");
	if (s.length <= maxChars) return { text: s, wasTruncated: false };
	return { text: `${s.slice(0, maxChars)}... [truncated]`, wasTruncated: true };
}

const mutationQueues = new Map();

/** Run `work` after earlier work queued on the same file (symlinks share a queue). */
async function withFileMutationQueue(filePath, work) {
	let key = path.resolve(String(filePath));
	try {
		key = fs.realpathSync(key);
	} catch {
		// a new file: its resolved path is the key
	}
	const previous = mutationQueues.get(key) ?? Promise.resolve();
	const run = previous.then(() => work());
	const settled = run.catch(() => {});
	mutationQueues.set(key, settled);
	settled.then(() => {
		if (mutationQueues.get(key) === settled) mutationQueues.delete(key);
	});
	return run;
}

const isToolCallEventType = (toolName, event) => event?.toolName === toolName;
const resultOf = (toolName) => (event) => event?.toolName === toolName;

function unsupported(name) {
	return () => {
		throw new Error(`${name}() is not available in pi-rpc's extension host (it needs pi's own runtime)`);
	};
}

class CustomEditor extends tui.Editor {}
class DynamicBorder extends tui.Container {}

module.exports = {
	DEFAULT_MAX_BYTES,
	DEFAULT_MAX_LINES,
	CONFIG_DIR_NAME,
	VERSION,
	getAgentDir,
	formatSize,
	truncateHead,
	truncateTail,
	truncateLine,
	withFileMutationQueue,
	isToolCallEventType,
	isBashToolResult: resultOf("bash"),
	isReadToolResult: resultOf("read"),
	isEditToolResult: resultOf("edit"),
	isWriteToolResult: resultOf("write"),
	isGrepToolResult: resultOf("grep"),
	isFindToolResult: resultOf("find"),
	isLsToolResult: resultOf("ls"),
	defineTool: (definition) => definition,
	getSettingsListTheme: () => tui.plainTheme,
	getMarkdownTheme: () => tui.plainTheme,
	getSelectListTheme: () => tui.plainTheme,
	CustomEditor,
	DynamicBorder,
	createBashTool: unsupported("createBashTool"),
	createReadTool: unsupported("createReadTool"),
	createEditTool: unsupported("createEditTool"),
	createWriteTool: unsupported("createWriteTool"),
	createGrepTool: unsupported("createGrepTool"),
	createFindTool: unsupported("createFindTool"),
	createLsTool: unsupported("createLsTool"),
	createLocalBashOperations: unsupported("createLocalBashOperations"),
	convertToLlm: unsupported("convertToLlm"),
	serializeConversation: unsupported("serializeConversation"),
	SessionManager: {
		list: unsupported("SessionManager.list"),
		listAll: unsupported("SessionManager.listAll"),
	},
};
