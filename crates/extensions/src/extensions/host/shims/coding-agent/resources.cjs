// pi-rpc extension host: pi's `DefaultResourceLoader` and
// `loadProjectContextFiles` for an extension using pi's SDK. Skills, prompt
// templates, context files (AGENTS.md / CLAUDE.md) and the SYSTEM.md /
// APPEND_SYSTEM.md files are found by pi-rpc's own discovery (the `lib`
// function `discoverResources`, extension_resources.rs) for the loader's cwd
// and agent directory, as pi finds them; the loader's options (`no…`,
// `additional…Paths`, `systemPrompt`, `appendSystemPrompt`, the `…Override`
// functions) apply as in pi. Themes are found here (`*.json` of the theme
// directories and the settings' theme paths). `reload()` also loads the
// extensions (its `extensionFactories`, `additionalExtensionPaths`, and the
// discovered ones unless `noExtensions`) into a runtime of their own
// (extension-loader.cjs) for `createAgentSession` to run.

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { lib } = require("./text.cjs");
const { getAgentDir, createEventBus } = require("./runtime.cjs");
const { SettingsManager } = require("./settings.cjs");
const { settingsThemeFiles, defaultSourceInfo } = require("./settings-resources.cjs");
const { loadThemeFromPath } = require("../theme.cjs");

const expandHome = (p) => (p === "~" || p.startsWith("~/") ? path.join(require("node:os").homedir(), p.slice(1)) : p);

/** `{path, content}` of each context file pi reads for `cwd`: the agent directory's, then each directory from `/` down to `cwd`. */
function loadProjectContextFiles({ cwd, agentDir } = {}) {
	return lib("discoverResources", { cwd: cwd ?? process.cwd(), agentDir: agentDir ?? getAgentDir(), noSkills: true, noPromptTemplates: true }).agentsFiles;
}

/** A prompt given as a file's path (when such a file exists) or as its text. */
function promptInput(source, cwd) {
	if (source === undefined || source === null) return undefined;
	const candidate = path.resolve(cwd, expandHome(String(source)));
	try {
		if (fs.statSync(candidate).isFile()) return fs.readFileSync(candidate, "utf8");
	} catch {
		// not a file: the text itself
	}
	return String(source);
}

/**
 * Themes of `paths` (directories of `*.json`, or files; the first `defaults` are the theme directories): pi's `Theme`s
 * (`theme.cjs`).
 */
function loadThemes(paths, defaults) {
	const themes = [];
	const diagnostics = [];
	const load = (file) => {
		try {
			const theme = loadThemeFromPath(file);
			themes.push(theme);
		} catch (error) {
			diagnostics.push({ type: "warning", message: error instanceof Error ? error.message : "failed to load theme", path: file });
		}
	};
	for (const [i, p] of paths.entries()) {
		let stat;
		try {
			stat = fs.statSync(p);
		} catch {
			// The theme directories need not exist; a path asked for must.
			if (i >= defaults) diagnostics.push({ type: "warning", message: "theme path does not exist", path: p });
			continue;
		}
		if (stat.isDirectory()) {
			for (const name of fs.readdirSync(p).sort()) if (name.endsWith(".json")) load(path.join(p, name));
		} else if (p.endsWith(".json")) {
			load(p);
		} else {
			diagnostics.push({ type: "warning", message: "theme path is not a json file", path: p });
		}
	}
	const seen = new Map();
	for (const theme of themes) {
		if (seen.has(theme.name)) {
			const collision = { resourceType: "theme", name: theme.name, winnerPath: seen.get(theme.name).sourcePath ?? "<builtin>", loserPath: theme.sourcePath ?? "<builtin>" };
			diagnostics.push({ type: "collision", message: `name "${theme.name}" collision`, path: theme.sourcePath, collision });
		} else {
			seen.set(theme.name, theme);
		}
	}
	return { themes: [...seen.values()], diagnostics };
}

class DefaultResourceLoader {
	constructor(options = {}) {
		this.cwd = path.resolve(options.cwd ?? process.cwd());
		this.agentDir = path.resolve(expandHome(options.agentDir ?? getAgentDir()));
		this.settingsManager = options.settingsManager ?? SettingsManager.create(this.cwd, this.agentDir);
		this.eventBus = options.eventBus ?? createEventBus();
		this.options = { ...options };
		this.extensionsResult = { extensions: [], errors: [], runtime: undefined };
		this.skills = { skills: [], diagnostics: [] };
		this.prompts = { prompts: [], diagnostics: [] };
		this.themes = { themes: [], diagnostics: [] };
		this.agentsFiles = { agentsFiles: [] };
		this.systemPrompt = undefined;
		this.systemPromptPath = undefined;
		this.appendSystemPrompt = [];
		this.appendSystemPromptPaths = [];
		this.extraPaths = { skills: [], prompts: [], themes: [] };
		/** The `sourceInfo` of the themes an extension's `resources_discover` added (by path), as pi keeps them. */
		this.extraThemeInfos = new Map();
		this.packageExtensions = [];
	}

	getExtensions() {
		return this.extensionsResult;
	}
	getSkills() {
		return this.skills;
	}
	getPrompts() {
		return this.prompts;
	}
	getThemes() {
		return this.themes;
	}
	getAgentsFiles() {
		return this.agentsFiles;
	}
	getSystemPrompt() {
		return this.systemPrompt;
	}
	getSystemPromptSource() {
		return this.systemPromptPath ? { path: this.systemPromptPath } : undefined;
	}
	getAppendSystemPrompt() {
		return this.appendSystemPrompt;
	}
	getAppendSystemPromptSources() {
		return this.appendSystemPromptPaths.map((p) => ({ path: p }));
	}

	/** More skill, prompt and theme paths (an extension's `resources_discover`), loaded at once. */
	extendResources(paths = {}) {
		const add = (key, list) => this.extraPaths[key].push(...(list ?? []).map((e) => (typeof e === "string" ? e : e.path)));
		add("skills", paths.skillPaths);
		add("prompts", paths.promptPaths);
		add("themes", paths.themePaths);
		for (const entry of paths.themePaths ?? []) {
			if (typeof entry === "string" || !entry?.metadata) continue;
			const file = path.resolve(this.cwd, expandHome(entry.path));
			const baseDir = entry.metadata.baseDir ? path.resolve(this.cwd, expandHome(entry.metadata.baseDir)) : undefined;
			this.extraThemeInfos.set(file, { path: file, source: entry.metadata.source, scope: entry.metadata.scope, origin: entry.metadata.origin, baseDir });
		}
		return this._load();
	}

	/** The `sourceInfo` of an extension's theme path that is `file` or holds it (pi's first such). */
	extraThemeInfo(file) {
		const resolved = path.resolve(file);
		for (const [base, info] of this.extraThemeInfos) {
			if (resolved === base || resolved.startsWith(base.endsWith(path.sep) ? base : base + path.sep)) return { ...info, path: file };
		}
		return undefined;
	}

	/**
	 * pi's `reload(options)`. With `resolveProjectTrust`, first the
	 * project-trust pass (`loadProjectTrustExtensions`), whose result the
	 * function is given to decide the project's trust; the settings take that
	 * decision, and the pass's extensions are kept for the session's set.
	 */
	async reload(options) {
		let preloaded;
		if (options?.resolveProjectTrust) {
			preloaded = await this.loadProjectTrustExtensions();
			this.settingsManager.setProjectTrusted(await options.resolveProjectTrust({ extensionsResult: preloaded }));
			await this.settingsManager.reload();
		} else {
			// pi re-reads the settings on every reload, for the trust they already have.
			await this.settingsManager.reload();
		}
		this._load();
		const o = this.options;
		this.extensionsResult = await this._loadExtensions(this.packageExtensions ?? [], preloaded);
		// A package that could not be installed is skipped with pi's warning (one per path).
		const installWarnings = (this.installFailures ?? []).map((f) => ({ path: f.source, warning: f.warning }));
		this.extensionsResult.warnings = [...new Map([...(this.extensionsResult.warnings ?? []), ...installWarnings].map((w) => [w.path, w])).values()];
		if (o.extensionsOverride) this.extensionsResult = o.extensionsOverride(this.extensionsResult);
	}

	/**
	 * pi's project-trust pass: the project counted untrusted in the settings
	 * (reloaded so), the extensions that needs no trust loaded and returned
	 * (the command line's, the user's, the user settings' and their packages',
	 * the inline factories), the loader's own resources left as they were.
	 */
	async loadProjectTrustExtensions() {
		this.settingsManager.setProjectTrusted(false);
		await this.settingsManager.reload();
		const packages = this.options.noExtensions ? [] : lib("discoverResources", { cwd: this.cwd, agentDir: this.agentDir, projectTrusted: false, packages: true, noSkills: true, noPromptTemplates: true, noContextFiles: true }).packageExtensions;
		return this._loadExtensions(packages);
	}

	/** The loader's extensions (extension-loader.cjs) with the packages' (`{path, sourceInfo}`), over `preloaded` when given. */
	_loadExtensions(packageExtensions, preloaded) {
		const { loadResourceLoaderExtensions } = require("./extension-loader.cjs");
		const o = this.options;
		return loadResourceLoaderExtensions({
			cwd: this.cwd,
			agentDir: this.agentDir,
			settingsManager: this.settingsManager,
			noExtensions: o.noExtensions === true,
			additionalExtensionPaths: o.additionalExtensionPaths,
			extensionFactories: o.extensionFactories,
			packageExtensions,
			eventBus: this.eventBus,
			preloaded,
		});
	}

	/**
	 * pi's resources for the loader's cwd and agent directory. The settings' pi
	 * packages are resolved by pi-rpc's package manager in the same call (the
	 * one its own session loads them with): their skills and templates come with
	 * the others, their themes join the theme paths, their extension files are
	 * kept as `packageExtensions`.
	 */
	_load() {
		const o = this.options;
		const resolve = (p) => path.resolve(this.cwd, expandHome(p));
		const found = lib("discoverResources", {
			cwd: this.cwd,
			agentDir: this.agentDir,
			projectTrusted: this.settingsManager.isProjectTrusted(),
			packages: true,
			noSkills: o.noSkills === true,
			noPromptTemplates: o.noPromptTemplates === true,
			noContextFiles: o.noContextFiles === true,
			additionalSkillPaths: [...(o.additionalSkillPaths ?? []), ...this.extraPaths.skills],
			additionalPromptTemplatePaths: [...(o.additionalPromptTemplatePaths ?? []), ...this.extraPaths.prompts],
		});
		const skills = { skills: found.skills, diagnostics: found.skillDiagnostics };
		this.skills = o.skillsOverride ? o.skillsOverride(skills) : skills;
		const prompts = { prompts: found.prompts, diagnostics: found.promptDiagnostics };
		this.prompts = o.promptsOverride ? o.promptsOverride(prompts) : prompts;

		// The settings' `themes` arrays and the theme directories, their patterns applied as pi's (settings-resources.cjs).
		const settingsThemes = o.noThemes ? { files: [], infos: new Map() } : settingsThemeFiles(this.settingsManager, this.cwd, this.agentDir);
		const packageThemes = o.noThemes ? [] : found.packageThemes;
		const themePaths = [...settingsThemes.files, ...packageThemes.map((t) => t.path), ...(o.additionalThemePaths ?? []).map(resolve), ...this.extraPaths.themes.map(resolve)];
		const themes = loadThemes(themePaths, 0);
		// The settings' packages' extension files (`{path, sourceInfo}`), for the loader's extensions.
		this.packageExtensions = o.noExtensions ? [] : found.packageExtensions;
		this.installFailures = found.installFailures ?? [];
		this.themes = o.themesOverride ? o.themesOverride(themes) : themes;
		// Then each theme's `sourceInfo`, as pi's: an extension's or the package's or settings' own, else the theme's, else the default.
		// (A package's metadata outranks the settings', as pi's package manager records the first it finds.)
		const infos = new Map([...settingsThemes.infos, ...packageThemes.map((t) => [t.path, t.sourceInfo])]);
		for (const theme of this.themes.themes ?? []) {
			const file = theme.sourcePath;
			if (file) theme.sourceInfo = this.extraThemeInfo(file) ?? infos.get(path.resolve(file)) ?? theme.sourceInfo ?? defaultSourceInfo(file, this.cwd, this.agentDir);
		}

		const agentsFiles = { agentsFiles: found.agentsFiles };
		this.agentsFiles = o.agentsFilesOverride ? o.agentsFilesOverride(agentsFiles) : agentsFiles;

		const systemSource = o.systemPrompt ?? found.systemPromptPath ?? undefined;
		const system = promptInput(systemSource, this.cwd);
		this.systemPrompt = o.systemPromptOverride ? o.systemPromptOverride(system) : system;
		this.systemPromptPath = systemSource !== undefined && fs.existsSync(resolve(systemSource)) ? resolve(systemSource) : undefined;
		const appendSources = o.appendSystemPrompt ?? (found.appendSystemPromptPath ? [found.appendSystemPromptPath] : []);
		const appended = appendSources.map((s) => promptInput(s, this.cwd)).filter((s) => s !== undefined);
		this.appendSystemPrompt = o.appendSystemPromptOverride ? o.appendSystemPromptOverride(appended) : appended;
		this.appendSystemPromptPaths = appendSources.filter((s) => fs.existsSync(resolve(s))).map(resolve);
	}
}

/** pi's loader of an SDK session made without one (`createAgentSession`): a `DefaultResourceLoader` of `options`, reloaded. */
async function loadedDefaultResourceLoader(options) {
	const loader = new DefaultResourceLoader(options);
	await loader.reload();
	return loader;
}

module.exports = { DefaultResourceLoader, loadProjectContextFiles, loadedDefaultResourceLoader };
