// pi-rpc extension host: pi's `SettingsManager` for an extension using pi's
// SDK. Settings live where pi keeps them (`<agent dir>/settings.json`, the
// project's `.pi/settings.json`), read and merged as pi merges them (the
// project over the user's, objects key by key, `defaultTools` modifiers
// appended), older keys migrated as pi migrates them. A setter changes the
// user's settings in memory at once and queues the write; the write puts
// only the keys this manager changed into the file as it is then (under
// pi's lock, `settings.json.lock`), so another program's changes survive.
// `flush()` waits for the writes, `drainErrors()` hands over what failed.
// `inMemory()` keeps everything in memory. The defaults are pi 1.6.0's.

"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { getAgentDir } = require("./runtime.cjs");

const CONFIG_DIR_NAME = ".pi";
const DEFAULT_TOOL_NAMES = ["read", "bash", "edit", "write"];
const CACHE_WARMING_MODES = ["off", "streaming", "idle"];
const DEFAULT_HTTP_IDLE_TIMEOUT_MS = 300_000;

/** pi 1.6.0's values for settings nobody set. */
const DEFAULTS = {
	transport: "auto",
	sessionShareDestination: "auto",
	steeringMode: "one-at-a-time",
	followUpMode: "one-at-a-time",
	compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 },
	branchSummary: { reserveTokens: 16384, skipPrompt: false },
	retry: { enabled: true, maxRetries: 3, baseDelayMs: 2000, maxAgentDelayMs: 60_000, provider: { maxRetryDelayMs: 60_000 } },
	hideThinkingBlock: false,
	showCacheMissNotices: false,
	quietStartup: false,
	defaultProjectTrust: "ask",
	collapseChangelog: false,
	enableInstallTelemetry: true,
	enableAnalytics: false,
	enableSkillCommands: true,
	terminal: { showImages: true, imageWidthCells: 60, clearOnShrink: false, showTerminalProgress: false },
	images: { autoResize: true, blockImages: false },
	doubleEscapeAction: "tree",
	treeFilterMode: "default",
	editorPaddingX: 0,
	outputPad: 1,
	autocompleteMaxVisible: 5,
	markdown: { codeBlockIndent: "  ", mermaid: "streaming" },
	cacheWarming: "idle",
	tuiMode: "fullscreen",
	fullscreenExitOutput: "transcript",
	fullscreenScrollbar: "auto",
	fullscreenCopyOnSelect: true,
	fullscreenWheelScrollLines: "auto",
};

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const isToolModifier = (entry) => typeof entry === "string" && /^[+-]/.test(entry);
const expandHome = (p) => (p === "~" ? require("node:os").homedir() : p.startsWith("~/") ? path.join(require("node:os").homedir(), p.slice(2)) : p);
const clone = (v) => (v === undefined ? undefined : structuredClone(v));

/** `overrides` over `base`: objects merged key by key, `undefined` ignored, a `defaultTools` of only modifiers appended. */
function mergeSettings(base, overrides) {
	const mergeObjects = (a, b) => {
		const out = { ...a };
		for (const [key, value] of Object.entries(b)) {
			if (value === undefined) continue;
			out[key] = isObject(out[key]) && isObject(value) ? mergeObjects(out[key], value) : value;
		}
		return out;
	};
	const merged = mergeObjects(base, overrides);
	const [a, b] = [base.defaultTools, overrides.defaultTools];
	if (Array.isArray(a) && Array.isArray(b) && b.every(isToolModifier)) merged.defaultTools = [...a, ...b];
	return merged;
}

/** The tools a list of names and `+name`/`-name` changes selects. */
function applyToolModifiers(base, entries) {
	const tools = [...base];
	for (const entry of entries) {
		if (!isToolModifier(entry)) continue;
		const name = entry.slice(1);
		const at = tools.indexOf(name);
		if (entry[0] === "+" && at === -1 && name) tools.push(name);
		else if (entry[0] === "-" && at !== -1) tools.splice(at, 1);
	}
	return tools;
}

/** Settings of an older pi, in today's keys. */
function migrate(settings) {
	if ("queueMode" in settings && !("steeringMode" in settings)) {
		settings.steeringMode = settings.queueMode;
		delete settings.queueMode;
	}
	if (!("transport" in settings) && typeof settings.websockets === "boolean") {
		settings.transport = settings.websockets ? "websocket" : "sse";
		delete settings.websockets;
	}
	if (isObject(settings.skills)) {
		const old = settings.skills;
		if (old.enableSkillCommands !== undefined && settings.enableSkillCommands === undefined) {
			settings.enableSkillCommands = old.enableSkillCommands;
		}
		if (Array.isArray(old.customDirectories) && old.customDirectories.length > 0) settings.skills = old.customDirectories;
		else delete settings.skills;
	}
	if (isObject(settings.retry)) {
		const retry = settings.retry;
		const provider = isObject(retry.provider) ? retry.provider : undefined;
		if (typeof retry.maxDelayMs === "number" && (provider?.maxRetryDelayMs ?? null) === null) {
			retry.provider = { ...(provider ?? {}), maxRetryDelayMs: retry.maxDelayMs };
		}
		delete retry.maxDelayMs;
	}
	return settings;
}

const parse = (text) => migrate(JSON.parse(String(text).replace(/^\uFEFF/, "")));

/** A lock on `file` as pi takes it (the directory `<file>.lock`); released by the returned function. */
function lockSync(file) {
	const dir = `${file}.lock`;
	for (let attempt = 1; ; attempt++) {
		try {
			fs.mkdirSync(dir);
			return () => fs.rmSync(dir, { recursive: true, force: true });
		} catch (error) {
			if (error?.code !== "EEXIST") throw error;
			try {
				if (Date.now() - fs.statSync(dir).mtimeMs > 10_000) {
					fs.rmSync(dir, { recursive: true, force: true });
					continue;
				}
			} catch {
				continue;
			}
			if (attempt >= 10) throw Object.assign(new Error("Lock file is already being held"), { code: "ELOCKED", file });
			const until = Date.now() + 20;
			while (Date.now() < until) {
				// pi waits synchronously too: setters stay synchronous
			}
		}
	}
}

/** pi's file storage: the user's `settings.json` in the agent directory, the project's in `<cwd>/.pi`. */
class FileSettingsStorage {
	constructor(cwd, agentDir) {
		this.paths = {
			global: path.join(path.resolve(expandHome(agentDir)), "settings.json"),
			project: path.join(path.resolve(expandHome(cwd)), CONFIG_DIR_NAME, "settings.json"),
		};
	}
	withLock(scope, fn) {
		const file = this.paths[scope];
		let release;
		try {
			const exists = fs.existsSync(file);
			if (exists) release = lockSync(file);
			const next = fn(exists ? fs.readFileSync(file, "utf8") : undefined);
			if (next !== undefined) {
				fs.mkdirSync(path.dirname(file), { recursive: true });
				release ??= lockSync(file);
				fs.writeFileSync(file, next, "utf8");
			}
		} finally {
			release?.();
		}
	}
}

class InMemorySettingsStorage {
	withLock(scope, fn) {
		const next = fn(this[scope]);
		if (next !== undefined) this[scope] = next;
	}
}

const settingsError = (scope, error, file) => ({ scope, ...(file ? { path: file } : {}), error: error instanceof Error ? error : new Error(String(error)) });

class SettingsManager {
	constructor(storage, loaded, projectTrusted = true, paths = {}) {
		this.storage = storage;
		this.projectTrusted = projectTrusted;
		this.paths = paths;
		this.global = loaded.global.settings;
		this.project = loaded.project.settings;
		this.loadErrors = { global: loaded.global.error, project: loaded.project.error };
		this.errors = ["global", "project"].filter((s) => loaded[s].error).map((s) => settingsError(s, loaded[s].error, paths[s]));
		this.changed = { global: new Map(), project: new Map() }; // field -> Set of nested keys, or null for the whole field
		this.writes = Promise.resolve();
		this.settings = mergeSettings(this.global, this.project);
	}

	static create(cwd = process.cwd(), agentDir = getAgentDir(), options = {}) {
		const storage = new FileSettingsStorage(cwd, agentDir);
		return SettingsManager._from(storage, options, storage.paths);
	}
	static fromStorage(storage, options = {}) {
		return SettingsManager._from(storage, options, {});
	}
	static inMemory(settings = {}, options = {}) {
		const storage = new InMemorySettingsStorage();
		storage.global = JSON.stringify(migrate(structuredClone(settings)), null, 2);
		return SettingsManager.fromStorage(storage, options);
	}
	static _from(storage, options, paths) {
		const trusted = options?.projectTrusted ?? true;
		const loaded = { global: SettingsManager._load(storage, "global", true), project: SettingsManager._load(storage, "project", trusted) };
		return new SettingsManager(storage, loaded, trusted, paths);
	}
	static _load(storage, scope, trusted) {
		if (!trusted) return { settings: {}, error: null };
		try {
			let text;
			storage.withLock(scope, (current) => {
				text = current;
				return undefined;
			});
			return { settings: text ? parse(text) : {}, error: null };
		} catch (error) {
			return { settings: {}, error };
		}
	}

	getSettings() {
		return structuredClone(this.settings);
	}
	getGlobalSettings() {
		return structuredClone(this.global);
	}
	getProjectSettings() {
		return structuredClone(this.project);
	}
	isProjectTrusted() {
		return this.projectTrusted;
	}
	setProjectTrusted(trusted) {
		if (this.projectTrusted === trusted) return;
		this.projectTrusted = trusted;
		this.changed.project.clear();
		const loaded = SettingsManager._load(this.storage, "project", trusted);
		this.project = loaded.settings;
		this.loadErrors.project = loaded.error;
		if (loaded.error) this._recordError("project", loaded.error);
		this.settings = mergeSettings(this.global, this.project);
	}
	async reload() {
		await this.writes;
		for (const scope of ["global", "project"]) {
			const loaded = SettingsManager._load(this.storage, scope, scope === "global" || this.projectTrusted);
			this.loadErrors[scope] = loaded.error;
			if (loaded.error) this._recordError(scope, loaded.error);
			else if (scope === "global") this.global = loaded.settings;
			else this.project = loaded.settings;
			this.changed[scope].clear();
		}
		this.settings = mergeSettings(this.global, this.project);
	}
	applyOverrides(overrides) {
		this.settings = mergeSettings(this.settings, overrides ?? {});
	}
	async flush() {
		await this.writes;
	}
	drainErrors() {
		return this.errors.splice(0);
	}
	_recordError(scope, error) {
		this.errors.push(settingsError(scope, error, this.paths[scope]));
	}

	/** Marks `field` (or its `nested` key) of `scope` changed and queues the write. */
	_save(scope, field, nested) {
		const marks = this.changed[scope];
		if (nested === undefined) marks.set(field, null);
		else if (marks.get(field) !== null) marks.set(field, new Set([...(marks.get(field) ?? []), nested]));
		this.settings = mergeSettings(this.global, this.project);
		if (this.loadErrors[scope]) return; // a file pi could not read is not overwritten
		const snapshot = structuredClone(scope === "global" ? this.global : this.project);
		const fields = new Map([...marks].map(([k, v]) => [k, v && new Set(v)]));
		this.writes = this.writes
			.then(() => {
				if (scope === "project" && !this.projectTrusted) throw new Error("Project is not trusted; refusing to write project settings");
				this.storage.withLock(scope, (current) => {
					const onDisk = current ? parse(current) : {};
					for (const [key, nestedKeys] of fields) {
						if (nestedKeys && isObject(snapshot[key])) {
							const inner = { ...(onDisk[key] ?? {}) };
							for (const k of nestedKeys) inner[k] = snapshot[key][k];
							onDisk[key] = inner;
						} else {
							onDisk[key] = snapshot[key];
						}
					}
					return JSON.stringify(onDisk, null, 2);
				});
				marks.clear();
			})
			.catch((error) => this._recordError(scope, error));
	}
	/** Sets the user's `field` (or `field.nested`) and saves it. */
	_setGlobal(field, value, nested) {
		if (nested === undefined) this.global[field] = value;
		else this.global[field] = { ...(isObject(this.global[field]) ? this.global[field] : {}), [nested]: value };
		this._save("global", field, nested);
	}
	_setProject(field, value) {
		if (!this.projectTrusted) throw new Error("Project is not trusted; refusing to write project settings");
		this.project = { ...structuredClone(this.project), [field]: value };
		this._save("project", field);
	}

	getSessionDir() {
		const dir = this.settings.sessionDir;
		return dir ? expandHome(dir) : dir;
	}
	setDefaultModelAndProvider(provider, modelId) {
		this.global.defaultProvider = provider;
		this._save("global", "defaultProvider");
		this._setGlobal("defaultModel", modelId);
	}
	getThemeSetting() {
		return typeof this.settings.theme === "string" ? this.settings.theme : undefined;
	}
	getTheme() {
		const theme = this.getThemeSetting();
		return theme?.includes("/") ? undefined : theme;
	}
	getExtensionChangelogVersion(key) {
		return this.settings.extensionChangelogVersions?.[key];
	}
	setExtensionChangelogVersion(key, version) {
		this._setGlobal("extensionChangelogVersions", version, key);
	}
	getModelThinkingLevel(provider, modelId) {
		return this.settings.modelThinkingLevels?.[`${provider}/${modelId}`];
	}
	getAllModelThinkingLevels() {
		return { ...(this.settings.modelThinkingLevels ?? {}) };
	}
	setModelThinkingLevel(provider, modelId, level) {
		this._setGlobal("modelThinkingLevels", { ...(this.global.modelThinkingLevels ?? {}), [`${provider}/${modelId}`]: level });
	}
	removeModelThinkingLevel(provider, modelId) {
		const levels = this.global.modelThinkingLevels;
		if (!levels) return;
		delete levels[`${provider}/${modelId}`];
		if (Object.keys(levels).length === 0) delete this.global.modelThinkingLevels;
		this._save("global", "modelThinkingLevels");
	}
	getSessionShareDestination() {
		const d = this.settings.sessionShareDestination;
		return d === "gist" || d === "radius" ? d : DEFAULTS.sessionShareDestination;
	}
	_compactionTokens(field, model) {
		const compaction = this.settings.compaction;
		const check = (value, name) => {
			if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) {
				throw new Error(`Invalid ${name} setting: ${String(value)}. Expected a non-negative safe integer.`);
			}
			return value;
		};
		const ordinary = check(compaction?.[field], `compaction.${field}`);
		const key = model ? `${model.provider}/${model.id}` : undefined;
		const entry = key !== undefined ? compaction?.modelOverrides?.[key] : undefined;
		if (entry !== undefined && !isObject(entry)) {
			throw new Error(`Invalid compaction.modelOverrides["${key}"] setting: ${String(entry)}. Expected an object.`);
		}
		return check(entry?.[field], `compaction.modelOverrides["${key}"].${field}`) ?? ordinary ?? DEFAULTS.compaction[field];
	}
	getCompactionReserveTokens(model) {
		return this._compactionTokens("reserveTokens", model);
	}
	getCompactionKeepRecentTokens(model) {
		return this._compactionTokens("keepRecentTokens", model);
	}
	getCompactionSettings(model) {
		return { enabled: this.getCompactionEnabled(), reserveTokens: this.getCompactionReserveTokens(model), keepRecentTokens: this.getCompactionKeepRecentTokens(model) };
	}
	getBranchSummarySettings() {
		return { reserveTokens: this.settings.branchSummary?.reserveTokens ?? DEFAULTS.branchSummary.reserveTokens, skipPrompt: this.getBranchSummarySkipPrompt() };
	}
	getRetrySettings() {
		const retry = this.settings.retry;
		return {
			enabled: this.getRetryEnabled(),
			maxRetries: retry?.maxRetries ?? DEFAULTS.retry.maxRetries,
			baseDelayMs: retry?.baseDelayMs ?? DEFAULTS.retry.baseDelayMs,
			maxAgentDelayMs: retry?.maxAgentDelayMs ?? DEFAULTS.retry.maxAgentDelayMs,
		};
	}
	getProviderRetrySettings() {
		const provider = this.settings.retry?.provider;
		return { timeoutMs: provider?.timeoutMs, maxRetries: provider?.maxRetries, maxRetryDelayMs: provider?.maxRetryDelayMs ?? DEFAULTS.retry.provider.maxRetryDelayMs };
	}
	getHttpIdleTimeoutMs() {
		return timeoutSetting(this.settings.httpIdleTimeoutMs, "httpIdleTimeoutMs") ?? DEFAULT_HTTP_IDLE_TIMEOUT_MS;
	}
	setHttpIdleTimeoutMs(ms) {
		if (!Number.isFinite(ms) || ms < 0) throw new Error(`Invalid httpIdleTimeoutMs setting: ${String(ms)}`);
		this._setGlobal("httpIdleTimeoutMs", Math.floor(ms));
	}
	getWebSocketConnectTimeoutMs() {
		return timeoutSetting(this.settings.websocketConnectTimeoutMs, "websocketConnectTimeoutMs");
	}
	/** The user's setting only: warming costs money. */
	getCacheWarmingMode() {
		const mode = this.global.cacheWarming;
		return CACHE_WARMING_MODES.includes(mode) ? mode : DEFAULTS.cacheWarming;
	}
	getExternalEditorCommand() {
		const own = this.settings.externalEditor;
		if (typeof own === "string" && own.trim() !== "") return own;
		return process.env.VISUAL || process.env.EDITOR || (process.platform === "win32" ? "notepad" : "nano");
	}
	getShellPath() {
		const p = this.settings.shellPath;
		return p ? expandHome(p) : p;
	}
	getQuietStartup() {
		const q = this.settings.quietStartup;
		return q === true || q === "header" ? q : DEFAULTS.quietStartup;
	}
	getDefaultProjectTrust() {
		const t = this.global.defaultProjectTrust;
		return t === "always" || t === "never" ? t : DEFAULTS.defaultProjectTrust;
	}
	getNpmCommand() {
		return this.settings.npmCommand ? [...this.settings.npmCommand] : undefined;
	}
	setNpmCommand(command) {
		this._setGlobal("npmCommand", command ? [...command] : undefined);
	}
	setEnableAnalytics(enabled) {
		this.global.enableAnalytics = enabled;
		if (enabled && !this.global.trackingId) {
			this.global.trackingId = crypto.randomUUID();
			this._save("global", "trackingId");
		}
		this._save("global", "enableAnalytics");
	}
	/** This installation's id, made on first use; the project's settings cannot set it. */
	getOrCreateDeviceId() {
		if (!this.global.deviceId) this._setGlobal("deviceId", crypto.randomUUID());
		return this.global.deviceId;
	}
	getTerminalCapabilityOverrides() {
		const t = this.settings.terminal;
		const images = t?.images;
		return {
			...(images === "kitty" || images === "iterm2" ? { images } : images === false ? { images: null } : {}),
			...(typeof t?.trueColor === "boolean" ? { trueColor: t.trueColor } : {}),
			...(typeof t?.hyperlinks === "boolean" ? { hyperlinks: t.hyperlinks } : {}),
		};
	}
	getImageWidthCells() {
		const width = this.settings.terminal?.imageWidthCells;
		return typeof width === "number" && Number.isFinite(width) ? Math.max(1, Math.floor(width)) : DEFAULTS.terminal.imageWidthCells;
	}
	setImageWidthCells(width) {
		this._setGlobal("terminal", Math.max(1, Math.floor(width)), "imageWidthCells");
	}
	getClearOnShrink() {
		const own = this.settings.terminal?.clearOnShrink;
		if (own !== undefined) return own;
		return process.env.PI_CLEAR_ON_SHRINK === "1" ? true : DEFAULTS.terminal.clearOnShrink;
	}
	getTuiMode() {
		return this.settings.tuiMode === "regular" ? "regular" : DEFAULTS.tuiMode;
	}
	getFullscreenExitOutput() {
		return this.settings.fullscreenExitOutput === "resume-hint" ? "resume-hint" : DEFAULTS.fullscreenExitOutput;
	}
	getFullscreenScrollbar() {
		const mode = this.settings.fullscreenScrollbar;
		return mode === "always" || mode === "hidden" ? mode : DEFAULTS.fullscreenScrollbar;
	}
	getFullscreenWheelScrollLines() {
		const lines = this.settings.fullscreenWheelScrollLines;
		return typeof lines === "number" && Number.isFinite(lines) ? Math.max(1, Math.min(100, Math.floor(lines))) : DEFAULTS.fullscreenWheelScrollLines;
	}
	setFullscreenWheelScrollLines(lines) {
		this._setGlobal("fullscreenWheelScrollLines", lines === "auto" ? lines : Math.max(1, Math.min(100, Math.floor(lines))));
	}
	/** The `defaultTools` selection every layer makes, or undefined when none sets it. */
	getDefaultTools() {
		const tools = this.settings.defaultTools;
		if (tools === undefined) return undefined;
		const entries = Array.isArray(tools) ? tools.filter((t) => typeof t === "string") : [];
		const plain = entries.filter((e) => !isToolModifier(e));
		return applyToolModifiers(plain.length > 0 || entries.length === 0 ? plain : DEFAULT_TOOL_NAMES, entries);
	}
	getTreeFilterMode() {
		const mode = this.settings.treeFilterMode;
		return ["default", "no-tools", "user-only", "labeled-only", "all"].includes(mode) ? mode : DEFAULTS.treeFilterMode;
	}
	getShowHardwareCursor() {
		return this.settings.showHardwareCursor ?? process.env.PI_HARDWARE_CURSOR === "1";
	}
	setEditorPaddingX(padding) {
		this._setGlobal("editorPaddingX", Math.max(0, Math.min(3, Math.floor(padding))));
	}
	getOutputPad() {
		return this.settings.outputPad === 0 ? 0 : DEFAULTS.outputPad;
	}
	setAutocompleteMaxVisible(max) {
		this._setGlobal("autocompleteMaxVisible", Math.max(3, Math.min(20, Math.floor(max))));
	}
	getMermaidRenderingMode() {
		const mode = this.settings.markdown?.mermaid;
		return mode === "off" || mode === "final" ? mode : DEFAULTS.markdown.mermaid;
	}
	getWarnings() {
		return { ...(this.settings.warnings ?? {}) };
	}
	setWarnings(warnings) {
		this._setGlobal("warnings", { ...warnings });
	}
}

function timeoutSetting(value, name) {
	let parsed = value;
	if (typeof parsed === "string") {
		const trimmed = parsed.trim();
		parsed = trimmed.toLowerCase() === "disabled" ? 0 : trimmed === "" ? undefined : Number(trimmed);
	}
	if (typeof parsed === "number" && Number.isFinite(parsed) && parsed >= 0) return Math.floor(parsed);
	if (value !== undefined) throw new Error(`Invalid ${name} setting: ${String(value)}`);
	return undefined;
}

/**
 * The plain members: `[getter, setter, field, nested key, default]`. A getter
 * reads the merged settings (the default when unset); a setter writes the
 * user's settings. `null` leaves a member out (hand-written above).
 */
const PLAIN = [
	["getLastChangelogVersion", "setLastChangelogVersion", "lastChangelogVersion"],
	["getDefaultProvider", "setDefaultProvider", "defaultProvider"],
	["getDefaultModel", "setDefaultModel", "defaultModel"],
	["getSteeringMode", "setSteeringMode", "steeringMode", undefined, DEFAULTS.steeringMode],
	["getFollowUpMode", "setFollowUpMode", "followUpMode", undefined, DEFAULTS.followUpMode],
	[null, "setTheme", "theme"],
	["getDefaultThinkingLevel", "setDefaultThinkingLevel", "defaultThinkingLevel"],
	["getTransport", "setTransport", "transport", undefined, DEFAULTS.transport],
	[null, "setSessionShareDestination", "sessionShareDestination"],
	["getCompactionEnabled", "setCompactionEnabled", "compaction", "enabled", DEFAULTS.compaction.enabled],
	["getBranchSummarySkipPrompt", null, "branchSummary", "skipPrompt", DEFAULTS.branchSummary.skipPrompt],
	["getRetryEnabled", "setRetryEnabled", "retry", "enabled", DEFAULTS.retry.enabled],
	[null, "setCacheWarmingMode", "cacheWarming"],
	["getHideThinkingBlock", "setHideThinkingBlock", "hideThinkingBlock", undefined, DEFAULTS.hideThinkingBlock],
	["getShowCacheMissNotices", "setShowCacheMissNotices", "showCacheMissNotices", undefined, DEFAULTS.showCacheMissNotices],
	[null, "setShellPath", "shellPath"],
	[null, "setQuietStartup", "quietStartup"],
	[null, "setDefaultProjectTrust", "defaultProjectTrust"],
	["getShellCommandPrefix", "setShellCommandPrefix", "shellCommandPrefix"],
	["getCollapseChangelog", "setCollapseChangelog", "collapseChangelog", undefined, DEFAULTS.collapseChangelog],
	["getEnableInstallTelemetry", "setEnableInstallTelemetry", "enableInstallTelemetry", undefined, DEFAULTS.enableInstallTelemetry],
	["getEnableAnalytics", null, "enableAnalytics", undefined, DEFAULTS.enableAnalytics],
	["getTrackingId", null, "trackingId"],
	["getEnableSkillCommands", "setEnableSkillCommands", "enableSkillCommands", undefined, DEFAULTS.enableSkillCommands],
	["getThinkingBudgets", null, "thinkingBudgets"],
	["getShowImages", "setShowImages", "terminal", "showImages", DEFAULTS.terminal.showImages],
	[null, "setClearOnShrink", "terminal", "clearOnShrink"],
	["getShowTerminalProgress", "setShowTerminalProgress", "terminal", "showTerminalProgress", DEFAULTS.terminal.showTerminalProgress],
	[null, "setTuiMode", "tuiMode"],
	[null, "setFullscreenExitOutput", "fullscreenExitOutput"],
	[null, "setFullscreenScrollbar", "fullscreenScrollbar"],
	["getFullscreenCopyOnSelect", "setFullscreenCopyOnSelect", "fullscreenCopyOnSelect", undefined, DEFAULTS.fullscreenCopyOnSelect],
	["getImageAutoResize", "setImageAutoResize", "images", "autoResize", DEFAULTS.images.autoResize],
	["getBlockImages", "setBlockImages", "images", "blockImages", DEFAULTS.images.blockImages],
	["getEnabledModels", "setEnabledModels", "enabledModels"],
	["getDoubleEscapeAction", "setDoubleEscapeAction", "doubleEscapeAction", undefined, DEFAULTS.doubleEscapeAction],
	[null, "setTreeFilterMode", "treeFilterMode"],
	[null, "setShowHardwareCursor", "showHardwareCursor"],
	["getEditorPaddingX", null, "editorPaddingX", undefined, DEFAULTS.editorPaddingX],
	[null, "setOutputPad", "outputPad"],
	["getAutocompleteMaxVisible", null, "autocompleteMaxVisible", undefined, DEFAULTS.autocompleteMaxVisible],
	["getCodeBlockIndent", null, "markdown", "codeBlockIndent", DEFAULTS.markdown.codeBlockIndent],
	[null, "setMermaidRenderingMode", "markdown", "mermaid"],
];
for (const [getter, setter, field, nested, fallback] of PLAIN) {
	if (getter) {
		SettingsManager.prototype[getter] = function () {
			const value = nested === undefined ? this.settings[field] : this.settings[field]?.[nested];
			return clone(value) ?? fallback;
		};
	}
	if (setter) {
		SettingsManager.prototype[setter] = function (value) {
			this._setGlobal(field, value, nested);
		};
	}
}

/** The resource lists: `get…` (a copy), `set…` (the user's), `setProject…` (the project's). */
for (const [name, field] of [
	["Packages", "packages"],
	["ExtensionPaths", "extensions"],
	["SkillPaths", "skills"],
	["PromptTemplatePaths", "prompts"],
	["ThemePaths", "themes"],
]) {
	SettingsManager.prototype[`get${name}`] = function () {
		return [...(this.settings[field] ?? [])];
	};
	SettingsManager.prototype[`set${name}`] = function (list) {
		this._setGlobal(field, list);
	};
	SettingsManager.prototype[`setProject${name}`] = function (list) {
		this._setProject(field, list);
	};
}

module.exports = {
	lockSync,
	SettingsManager,
	FileSettingsStorage,
	InMemorySettingsStorage,
	DEFAULT_TOOL_NAMES,
	CACHE_WARMING_MODES,
	applyToolModifiers,
	isToolModifier,
};
