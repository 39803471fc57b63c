// pi-rpc extension host: a user's bash command as pi's SDK session runs it
// (`AgentSession.executeBash`). The command runs through pi's
// `BashOperations` (the caller's, else the local shell of tools.cjs); its
// output is cleaned as pi-rpc's own `bash` command cleans it (the
// `cleanShellOutput` library function: ANSI sequences, control characters
// and carriage returns removed, an unfinished escape sequence held for the
// next chunk), kept in a rolling buffer of twice the byte limit, and cut to
// its tail (2000 lines / 50KB) with the whole output written to
// `<tmpdir>/pi-bash-<16 hex>.log` once it outgrows the limit.

"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { lib, truncateTail, DEFAULT_MAX_BYTES } = require("./text.cjs");

/** A new output file `<tmpdir>/<prefix>-<16 hex><extension>`, readable by the user only. */
function outputFile(prefix, extension) {
	const file = path.join(os.tmpdir(), `${prefix}-${crypto.randomBytes(8).toString("hex")}${extension}`);
	return { file, stream: fs.createWriteStream(file, { mode: 0o600, flags: "wx" }) };
}

/**
 * Run `command` in `cwd` with `operations.exec`; `{output, exitCode,
 * cancelled, truncated, fullOutputPath}` as pi's bash execution answers.
 * `onChunk` gets each cleaned piece of output; `signal` cancels the command,
 * which then answers what it printed so far.
 */
async function executeBashWithOperations(command, cwd, operations, { onChunk, signal } = {}) {
	const maxBytes = DEFAULT_MAX_BYTES;
	const chunks = [];
	let kept = 0;
	let discarded = false;
	let rawBytes = 0;
	let temp;
	const ensureTemp = () => {
		if (temp) return;
		temp = outputFile("pi-bash", ".log");
		for (const chunk of chunks) temp.stream.write(chunk);
	};
	const decoder = new TextDecoder();
	let pending = "";
	const append = (raw, last) => {
		const cleaned = lib("cleanShellOutput", pending + raw, last);
		pending = cleaned.pending;
		const text = cleaned.text;
		if (!text) return;
		if (rawBytes > maxBytes) ensureTemp();
		temp?.stream.write(text);
		chunks.push(text);
		kept += text.length;
		while (kept > maxBytes * 2 && chunks.length > 1) {
			kept -= chunks.shift().length;
			discarded = true;
		}
		onChunk?.(text);
	};
	const onData = (data) => {
		rawBytes += data.length;
		append(decoder.decode(data, { stream: true }), false);
	};
	let exitCode = null;
	try {
		({ exitCode } = await operations.exec(command, cwd, { onData, signal }));
	} catch (error) {
		// A cancelled command still answers what it printed.
		if (!signal?.aborted) {
			temp?.stream.end();
			throw error;
		}
	}
	append(decoder.decode(), true);
	const full = chunks.join("");
	const tail = truncateTail(full);
	if (tail.truncated) ensureTemp();
	if (temp) await new Promise((resolve) => temp.stream.end(resolve));
	const cancelled = signal?.aborted ?? false;
	return {
		output: tail.truncated ? tail.content : full,
		exitCode: cancelled ? undefined : (exitCode ?? undefined),
		cancelled,
		truncated: discarded || tail.truncated,
		fullOutputPath: temp?.file,
	};
}

module.exports = { executeBashWithOperations };
