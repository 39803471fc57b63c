// pi-rpc extension host: the `extensions` and `themes` arrays of the settings
// files, as pi's package manager reads them for a `DefaultResourceLoader`.
// Plain entries are paths (relative to the settings file's directory: the
// project's `.pi`, the agent directory); globs, `!glob`, `+path` and `-path`
// decide which of the files found are enabled, and `!` / `+` / `-` also
// apply to the auto-discovered directories' files. The rules are pi-rpc's
// own (the `lib` function `settingsEnabled`, the code its session's skills
// and prompts are found with); the first mention of a file decides.

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { lib } = require("./text.cjs");

/** Files and whether each is enabled, in the order first mentioned. */
class SettingsFiles {
	constructor() {
		this.decided = new Map();
	}

	/**
	 * A settings array's files: its plain entries (but pi's `builtin:` names)
	 * expanded by `filesOf(resolvedPath)`, the array's patterns applied.
	 */
	addEntries(entries, base, filesOf) {
		const list = (entries ?? []).filter((e) => typeof e === "string" && e !== "");
		if (list.length === 0) return;
		const { plain } = lib("settingsEnabled", { entries: list });
		const files = plain.filter((e) => !e.startsWith("builtin:")).flatMap((e) => filesOf(path.resolve(base, expandHome(e))));
		this._decide(files, lib("settingsEnabled", { entries: list, base, files }).enabled);
	}

	/** An auto-discovered directory's files, enabled unless the array's `!` / `-` entries disable them (`+` enables). */
	addAuto(files, entries, base) {
		const list = (entries ?? []).filter((e) => typeof e === "string");
		this._decide(files, lib("settingsEnabled", { entries: list, base, files, auto: true }).enabled);
	}

	_decide(files, enabled) {
		const on = new Set(enabled);
		for (const file of files) if (!this.decided.has(file)) this.decided.set(file, on.has(file));
	}

	/** The enabled files, in order. */
	enabled() {
		return [...this.decided].filter(([, on]) => on).map(([file]) => file);
	}
}

function expandHome(p) {
	return p === "~" || p.startsWith("~/") ? path.join(require("node:os").homedir(), p.slice(1)) : p;
}

/** A theme path's files: a directory's `*.json` (pi's ignore rules aside), a file itself, nothing when missing. */
function themeFiles(p) {
	try {
		if (!fs.statSync(p).isDirectory()) return [p];
	} catch {
		return [];
	}
	return fs
		.readdirSync(p)
		.filter((name) => name.endsWith(".json") && !name.startsWith("."))
		.sort()
		.map((name) => path.join(p, name));
}

/**
 * The theme files of the settings and theme directories pi reads: the
 * project's (when trusted, from `.pi`) and the user's `themes` arrays, then
 * `.pi/themes` (when trusted) and the agent directory's `themes`.
 */
function settingsThemeFiles(settingsManager, cwd, agentDir) {
	const trusted = settingsManager.isProjectTrusted();
	const projectBase = path.join(cwd, ".pi");
	const project = trusted ? (settingsManager.getProjectSettings().themes ?? []) : [];
	const user = settingsManager.getGlobalSettings().themes ?? [];
	const files = new SettingsFiles();
	files.addEntries(project, projectBase, themeFiles);
	files.addEntries(user, agentDir, themeFiles);
	if (trusted) files.addAuto(themeFiles(path.join(projectBase, "themes")), project, projectBase);
	files.addAuto(themeFiles(path.join(agentDir, "themes")), user, agentDir);
	return files.enabled();
}

module.exports = { SettingsFiles, settingsThemeFiles };
