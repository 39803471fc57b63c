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

/** Files, whether each is enabled, and its rank, in the order first mentioned. */
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
		this._decide(files, lib("settingsEnabled", { entries: list, base, files }).enabled, rank);
	}

	/** An auto-discovered directory's files, enabled unless the array's `!` / `-` entries disable them (`+` enables). */
	addAuto(files, entries, base, rank) {
		const list = (entries ?? []).filter((e) => typeof e === "string");
		this._decide(files, lib("settingsEnabled", { entries: list, base, files, auto: true }).enabled, rank);
	}

	_decide(files, enabled, rank) {
		const on = new Set(enabled);
		for (const file of files) if (!this.decided.has(file)) this.decided.set(file, { on: on.has(file), rank });
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
	const trusted = settingsManager?.isProjectTrusted?.() !== false;
	const projectBase = path.join(cwd, ".pi");
	const project = trusted ? (settingsManager?.getProjectSettings?.()?.[key] ?? []) : [];
	const user = settingsManager?.getGlobalSettings ? (settingsManager.getGlobalSettings()[key] ?? []) : [];
	files.addEntries(project, projectBase, filesOf, RANK.projectEntries);
	files.addEntries(user, agentDir, filesOf, RANK.userEntries);
	if (trusted) files.addAuto(autoFiles(path.join(projectBase, dir)), project, projectBase, RANK.projectAuto);
	files.addAuto(autoFiles(path.join(agentDir, dir)), user, agentDir, RANK.userAuto);
	return files.enabled();
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
 * then the user's array and the agent directory's `themes`.
 */
function settingsThemeFiles(settingsManager, cwd, agentDir) {
	const options = { settingsManager, cwd, agentDir, key: "themes", dir: "themes", filesOf: themeFiles, autoFiles: autoThemeFiles };
	return addSettingsResources(new SettingsFiles(), options);
}

module.exports = { SettingsFiles, addSettingsResources, visibleChildren, settingsThemeFiles };
