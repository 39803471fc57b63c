// pi-rpc extension host: the `extensions` and `themes` arrays of the settings
// files, as pi's package manager reads them for a `DefaultResourceLoader`.
// Plain entries are paths (relative to the settings file's directory: the
// project's `.pi`, the agent directory); globs, `!glob`, `+path` and `-path`
// decide which of the files found are enabled, and `!` / `+` / `-` also
// apply to the auto-discovered directories' files. The rules are pi-rpc's
// own (the `lib` function `settingsEnabled`, the code its session's skills
// and prompts are found with); the first mention of a file decides. The
// files come out in pi's precedence: the project's settings entries, its
// directory, the user's entries, the user's directory. Directories are
// listed as pi lists them, their `.gitignore` / `.ignore` / `.fdignore`
// honoured (the `lib` function `resourceDir`, pi-rpc's own ignore matcher).

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { lib } = require("./text.cjs");

/** pi's precedence ranks of the settings' files (pi sorts its resources by them, keeping their order within one). */
const RANK = { projectEntries: 0, projectAuto: 1, userEntries: 2, userAuto: 3 };

/**
 * What pi's package manager says of a file of `rank` (its `sourceInfo`
 * less the path): a settings entry's is `local`, an auto-discovered
 * directory's `auto` with the settings' directory (`base`) as `baseDir`.
 */
function metadataOf(rank, base) {
	const scope = rank < RANK.userEntries ? "project" : "user";
	if (rank === RANK.projectEntries || rank === RANK.userEntries) return { source: "local", scope, origin: "top-level" };
	return { source: "auto", scope, origin: "top-level", baseDir: base };
}

/** Files, whether each is enabled, its rank and pi's metadata of it, in the order first mentioned. */
class SettingsFiles {
	constructor() {
		this.decided = new Map();
	}

	/**
	 * A settings array's files: its plain entries (but pi's `builtin:` names)
	 * expanded by `filesOf(resolvedPath)`, the array's patterns applied.
	 */
	addEntries(entries, base, filesOf, rank) {
		const list = (entries ?? []).filter((e) => typeof e === "string" && e !== "");
		if (list.length === 0) return;
		const { plain } = lib("settingsEnabled", { entries: list });
		const files = plain.filter((e) => !e.startsWith("builtin:")).flatMap((e) => filesOf(path.resolve(base, expandHome(e))));
		this._decide(files, lib("settingsEnabled", { entries: list, base, files }).enabled, rank, base);
	}

	/** An auto-discovered directory's files, enabled unless the array's `!` / `-` entries disable them (`+` enables). */
	addAuto(files, entries, base, rank) {
		const list = (entries ?? []).filter((e) => typeof e === "string");
		this._decide(files, lib("settingsEnabled", { entries: list, base, files, auto: true }).enabled, rank, base);
	}

	_decide(files, enabled, rank, base) {
		const on = new Set(enabled);
		for (const file of files) if (!this.decided.has(file)) this.decided.set(file, { on: on.has(file), rank, base });
	}

	/** pi's `sourceInfo` of each file mentioned (enabled or not), by path. */
	sourceInfos() {
		return new Map([...this.decided].map(([file, d]) => [file, { path: file, ...metadataOf(d.rank, d.base) }]));
	}

	/** The enabled files, by rank (a stable sort, as pi's). */
	enabled() {
		return [...this.decided]
			.filter(([, d]) => d.on)
			.sort(([, a], [, b]) => a.rank - b.rank)
			.map(([file]) => file);
	}
}

/**
 * The project's and the user's settings arrays (`key`) and auto-discovered
 * directories (`dir`), added in pi's order: the entries first (they decide
 * a file mentioned twice), then the directories. `filesOf` lists an entry's
 * path, `autoFiles` a directory.
 */
function addSettingsResources(files, { settingsManager, cwd, agentDir, key, dir, filesOf, autoFiles }) {
	return addedSettingsFiles(files, { settingsManager, cwd, agentDir, key, dir, filesOf, autoFiles }).enabled();
}

/** `files` with the settings' resources added as by {@link addSettingsResources}. */
function addedSettingsFiles(files, { settingsManager, cwd, agentDir, key, dir, filesOf, autoFiles }) {
	const trusted = settingsManager?.isProjectTrusted?.() !== false;
	const projectBase = path.join(cwd, ".pi");
	const project = trusted ? (settingsManager?.getProjectSettings?.()?.[key] ?? []) : [];
	const user = settingsManager?.getGlobalSettings ? (settingsManager.getGlobalSettings()[key] ?? []) : [];
	files.addEntries(project, projectBase, filesOf, RANK.projectEntries);
	files.addEntries(user, agentDir, filesOf, RANK.userEntries);
	if (trusted) files.addAuto(autoFiles(path.join(projectBase, dir)), project, projectBase, RANK.projectAuto);
	files.addAuto(autoFiles(path.join(agentDir, dir)), user, agentDir, RANK.userAuto);
	return files;
}

/** The children of an auto-discovered directory pi looks at (`{path, dir}`; dot names, `node_modules` and ignored ones left out). */
function visibleChildren(dir) {
	return lib("resourceDir", { dir }).children;
}

function expandHome(p) {
	return p === "~" || p.startsWith("~/") ? path.join(require("node:os").homedir(), p.slice(1)) : p;
}

/** A settings theme path's files: a directory's `*.json` at any depth (ignore files honoured), a file itself, nothing when missing. */
function themeFiles(p) {
	try {
		if (!fs.statSync(p).isDirectory()) return [p];
	} catch {
		return [];
	}
	return lib("resourceDir", { dir: p, suffix: ".json" }).files;
}

/** A theme directory's own `*.json` files (not its subdirectories'), as pi's auto-discovery finds them. */
function autoThemeFiles(dir) {
	return visibleChildren(dir)
		.filter((c) => !c.dir && c.path.endsWith(".json"))
		.map((c) => c.path);
}

/**
 * The theme files of the settings and theme directories pi reads: the
 * project's (when trusted, from `.pi`) `themes` array and `.pi/themes`,
 * then the user's array and the agent directory's `themes` (`files`), and
 * pi's `sourceInfo` of each (`infos`, by path).
 */
function settingsThemeFiles(settingsManager, cwd, agentDir) {
	const options = { settingsManager, cwd, agentDir, key: "themes", dir: "themes", filesOf: themeFiles, autoFiles: autoThemeFiles };
	const files = addedSettingsFiles(new SettingsFiles(), options);
	return { files: files.enabled(), infos: files.sourceInfos() };
}

/** The source pi names a path that is no file by: `builtin` for `builtin:<name>`, `inline` for `<inline:…>`; none for a file. */
function syntheticSource(p) {
	if (p.startsWith("builtin:")) return "builtin";
	if (p.startsWith("<") && p.endsWith(">")) return p.slice(1, -1).split(":")[0] || "temporary";
	return undefined;
}

/**
 * pi's default `sourceInfo` of a resource file no package or settings entry
 * names: the user's or the project's when under one of their resource
 * directories (that directory its `baseDir`), else a temporary one beside it.
 */
function defaultSourceInfo(file, cwd, agentDir) {
	const synthetic = syntheticSource(file);
	if (synthetic) return { path: file, source: synthetic, scope: "temporary", origin: "top-level" };
	const resolved = path.resolve(file);
	const under = (root) => resolved === root || resolved.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
	const kinds = ["skills", "prompts", "themes", "extensions"];
	for (const [scope, base] of [["user", agentDir], ["project", path.join(cwd, ".pi")]]) {
		const root = kinds.map((kind) => path.resolve(base, kind)).find(under);
		if (root) return { path: file, source: "local", scope, origin: "top-level", baseDir: root };
	}
	let dir = path.dirname(resolved);
	try {
		if (fs.statSync(resolved).isDirectory()) dir = resolved;
	} catch {
		// gone since it was read: beside it
	}
	return { path: file, source: "local", scope: "temporary", origin: "top-level", baseDir: dir };
}

module.exports = { SettingsFiles, addSettingsResources, addedSettingsFiles, visibleChildren, settingsThemeFiles, defaultSourceInfo, syntheticSource };
