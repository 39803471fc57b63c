// pi-rpc extension host: pi's text helpers for extensions (truncation,
// sizes, read ranges, front matter, diffs), written from pi's documentation
// and its observed behaviour (tests/extension-host/shims_match_pi.mjs runs
// them beside pi's own). Diffs are computed by pi-rpc itself, which shows the
// same diffs in its edit results.

"use strict";

const fs = require("node:fs");
const path = require("node:path");

const DEFAULT_MAX_BYTES = 50 * 1024;
const DEFAULT_MAX_LINES = 2000;
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

/** A number from a number or a numeric string; undefined otherwise. */
function lineNumber(value) {
	const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
	return typeof n === "number" && Number.isFinite(n) ? n : undefined;
}

/** `:start-end` of a read call's offset and limit ("" when neither is usable). */
function formatReadLineRange(offset, limit) {
	if ((offset === null || offset === undefined) && (limit === null || limit === undefined)) return "";
	const start = offset === null || offset === undefined ? 1 : lineNumber(offset);
	if (start === undefined) return "";
	if (limit === null || limit === undefined) return `:${start}`;
	const count = lineNumber(limit);
	if (count === undefined) return "";
	const end = start + count - 1;
	return end ? `:${start}-${end}` : `:${start}`;
}

/** YAML front matter (between `---` lines at the start) and the body after it. */
function parseFrontmatter(content) {
	const text = String(content ?? "").replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
	if (!text.startsWith("---")) return { frontmatter: {}, body: text };
	const close = text.indexOf("\n---", 3);
	if (close < 0) return { frontmatter: {}, body: text };
	const yamlText = text.slice(4, close);
	const body = text.slice(close + 4).trim();
	if (!yamlText) return { frontmatter: {}, body };
	const { services } = require("../host-services.cjs");
	return { frontmatter: services().package("yaml").parse(yamlText) ?? {}, body };
}

const stripFrontmatter = (content) => parseFrontmatter(content).body;

/** pi-rpc's library function `name`. */
function lib(name, ...args) {
	const { services } = require("../host-services.cjs");
	return services().channel.call("lib", { fn: name, args });
}

/** The numbered display diff of two texts and the first changed line (in the new text). */
function generateDiffString(oldContent, newContent) {
	const result = lib("generateDiffString", String(oldContent ?? ""), String(newContent ?? ""));
	return { diff: result.diff, firstChangedLine: result.firstChangedLine ?? undefined };
}

/** A unified patch of two texts under `--- path` / `+++ path` headers. */
function generateUnifiedPatch(filePath, oldContent, newContent) {
	return lib("generateUnifiedPatch", String(filePath), String(oldContent ?? ""), String(newContent ?? ""));
}

module.exports = {
	DEFAULT_MAX_BYTES,
	DEFAULT_MAX_LINES,
	formatSize,
	truncateHead,
	truncateTail,
	truncateLine,
	withFileMutationQueue,
	formatReadLineRange,
	parseFrontmatter,
	stripFrontmatter,
	generateDiffString,
	generateUnifiedPatch,
	lib,
};
