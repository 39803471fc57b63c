// pi-rpc extension host: pi 1.6.0's project-trust store and its check of a
// folder's trust-requiring resources. The store is the agent directory's
// `trust.json` (`{path: true | false | null}`), read and written under pi's
// lock (`trust.json.lock`, settings.cjs's `lockSync`): a folder's decision is
// the nearest one saved for it or a folder above it (`getEntry` names
// which); `setMany` saves (or, with `null`, removes) several at once, the
// keys sorted, as pi writes the file; a file that is no JSON object of those
// values is refused with pi's error.

"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { lockSync } = require("./settings.cjs");

const CONFIG_DIR_NAME = ".pi";
/** The entries of `<cwd>/.pi` that make a folder ask for trust (pi's list). */
const TRUST_REQUIRING = ["settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md"];

/** `~` expanded, a `file://` URL read as its path, then made absolute (pi's `resolvePath`). */
function absolute(input) {
	let p = String(input);
	if (p === "~") p = os.homedir();
	else if (p.startsWith("~/")) p = path.join(os.homedir(), p.slice(2));
	else if (p.startsWith("file://")) p = require("node:url").fileURLToPath(p);
	return path.resolve(p);
}

/** The path with its links resolved when it exists, else as given. */
function canonical(p) {
	try {
		return fs.realpathSync(p);
	} catch {
		return p;
	}
}

const folderKey = (cwd) => canonical(absolute(cwd));
/** The keys of `data` naming `folder` (pi compares them resolved). */
const keysOf = (data, folder) => Object.keys(data).filter((key) => path.resolve(key) === path.resolve(folder));

/** The decisions saved in `file` (none when it is missing); pi's errors for a malformed one. */
function readDecisions(file) {
	if (!fs.existsSync(file)) return {};
	let parsed;
	try {
		parsed = JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, ""));
	} catch (error) {
		throw new Error(`Failed to read trust store ${file}: ${error instanceof Error ? error.message : String(error)}`);
	}
	if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error(`Invalid trust store ${file}: expected an object`);
	for (const [key, value] of Object.entries(parsed)) {
		if (value !== true && value !== false && value !== null) throw new Error(`Invalid trust store ${file}: value for ${JSON.stringify(key)} must be true, false, or null`);
	}
	return parsed;
}

/** `data` written to `file`, keys sorted, two-space JSON and a newline. */
function writeDecisions(file, data) {
	const sorted = {};
	for (const key of Object.keys(data).sort()) if ([true, false, null].includes(data[key])) sorted[key] = data[key];
	fs.mkdirSync(path.dirname(file), { recursive: true });
	fs.writeFileSync(file, `${JSON.stringify(sorted, null, 2)}\n`, "utf8");
}

/** `fn()` under the store's lock (its directory made first). */
function locked(file, fn) {
	fs.mkdirSync(path.dirname(file), { recursive: true });
	const release = lockSync(file);
	try {
		return fn();
	} finally {
		release();
	}
}

/** pi's trust store of an agent directory. */
class ProjectTrustStore {
	constructor(agentDir) {
		this.trustPath = path.join(absolute(agentDir ?? require("./runtime.cjs").getAgentDir()), "trust.json");
	}
	/** The decision in force for `cwd` (`true`, `false`), or `null` when none is saved for it or above it. */
	get(cwd) {
		return this.getEntry(cwd)?.decision ?? null;
	}
	/** `{path, decision}` of the nearest saved decision at or above `cwd`, or `null`. */
	getEntry(cwd) {
		return locked(this.trustPath, () => {
			const data = readDecisions(this.trustPath);
			for (let folder = folderKey(cwd); ; folder = path.dirname(folder)) {
				for (const key of keysOf(data, folder)) if (data[key] === true || data[key] === false) return { path: key, decision: data[key] };
				if (path.dirname(folder) === folder) return null;
			}
		});
	}
	set(cwd, decision) {
		this.setMany([{ path: cwd, decision }]);
	}
	/** Each `{path, decision}` saved in turn (`null` removes the folder's own decision). */
	setMany(decisions) {
		locked(this.trustPath, () => {
			const data = readDecisions(this.trustPath);
			for (const { path: folder, decision } of decisions) {
				const key = folderKey(folder);
				for (const existing of keysOf(data, key)) delete data[existing];
				if (decision !== null) data[key] = decision;
			}
			writeDecisions(this.trustPath, data);
		});
	}
}

/**
 * Whether `cwd` has project resources that need trust: one of pi's entries
 * in its `.pi`, or an `.agents/skills` in it or a folder above it (the
 * user's own `~/.agents/skills` not counted).
 */
function hasTrustRequiringProjectResources(cwd) {
	const userSkills = path.join(canonical(absolute(process.env.HOME || os.homedir())), ".agents", "skills");
	let folder = folderKey(cwd);
	if (TRUST_REQUIRING.some((entry) => fs.existsSync(path.join(folder, CONFIG_DIR_NAME, entry)))) return true;
	for (;;) {
		const skills = path.join(folder, ".agents", "skills");
		if (path.resolve(skills) !== path.resolve(userSkills) && fs.existsSync(skills)) return true;
		const parent = path.dirname(folder);
		if (parent === folder) return false;
		folder = parent;
	}
}

module.exports = { ProjectTrustStore, hasTrustRequiringProjectResources };
