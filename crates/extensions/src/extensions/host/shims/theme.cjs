// pi-rpc extension host: pi's theme in RPC mode, `ctx.ui.theme` and the
// `Theme` class, `initTheme` and the component themes pi-coding-agent
// exports. pi 1.6.0's RPC mode loads the theme the settings name once at
// start-up (here: when first read) (`theme`: `dark`, `light` or a custom theme file
// `<agent dir>/themes/<name>.json`; a name with "/" (automatic light/dark),
// an unknown or invalid theme silently give the system theme) and
// registers no other themes (packages' and extensions' themes are for the
// interactive mode; `DefaultResourceLoader` makes them `Theme`s with
// `loadThemeFromPath`). The system theme is drawn from the terminal's
// 16-colour palette (`\x1b[38;5;<n>m`) or its default colours, faint for
// the muted tokens, its appearance from `COLORFGBG`; the dark and light
// themes' colours are pi's, read from pi 1.6.0's own output (a probe
// extension printing every token's colour). Colours are turned into escape codes in the
// terminal's colour mode (`256color` on a pipe, `truecolor` when
// `COLORTERM` says so) by pi's own TUI library, loaded only when a theme
// needs it. bold, italic, underline, inverse and strikethrough add nothing
// (no colour support on a pipe); `style()` writes every attribute asked.

"use strict";

const fs = require("node:fs");
const path = require("node:path");

let tuiLibrary;
/** pi's TUI library (its colour functions), loaded on first use. */
function tui() {
	tuiLibrary ??= require("./host-services.cjs").services().tui();
	return tuiLibrary;
}

/** The host's `hello` (agent dir, cwd, project trust), when running in the host. */
function hello() {
	try {
		return require("./host-services.cjs").services().hello ?? {};
	} catch {
		return {};
	}
}

/** The theme tokens, in pi's order; the background ones and the fallbacks of optional ones. */
const TOKENS = [
	"accent", "border", "borderAccent", "borderMuted", "success", "error", "warning", "muted", "dim", "text",
	"thinkingText", "scrollbarTrack", "scrollbarThumb", "selectedBg", "searchMatchBg", "searchMatchText",
	"userMessageBg", "userMessageText", "customMessageBg", "customMessageText", "customMessageLabel",
	"toolPendingBg", "toolSuccessBg", "toolErrorBg", "toolTitle", "toolOutput", "mdHeading", "mdLink", "mdLinkUrl",
	"mdCode", "mdCodeBlock", "mdCodeBlockBorder", "mdQuote", "mdQuoteBorder", "mdHr", "mdListBullet",
	"toolDiffAdded", "toolDiffRemoved", "toolDiffContext", "syntaxComment", "syntaxKeyword", "syntaxFunction",
	"syntaxVariable", "syntaxString", "syntaxNumber", "syntaxType", "syntaxOperator", "syntaxPunctuation",
	"thinkingOff", "thinkingMinimal", "thinkingLow", "thinkingMedium", "thinkingHigh", "thinkingXhigh",
	"thinkingMax", "bashMode",
];
const BACKGROUNDS = new Set([
	"selectedBg", "searchMatchBg", "userMessageBg", "customMessageBg", "toolPendingBg", "toolSuccessBg", "toolErrorBg",
]);
const FALLBACKS = {
	scrollbarTrack: "muted",
	scrollbarThumb: "text",
	searchMatchBg: "selectedBg",
	searchMatchText: "text",
	thinkingMax: "thinkingXhigh",
};

/** The system theme without reported terminal colours: palette index, or "" for the terminal's default. */
const SYSTEM = {
	accent: 5, borderAccent: 5, customMessageLabel: 5, mdCode: 5, mdListBullet: 5, syntaxType: 5, border: 4, mdLink: 4,
	syntaxKeyword: 4, syntaxVariable: 6, success: 2, mdCodeBlock: 2, toolDiffAdded: 2, bashMode: 2, syntaxNumber: 5,
	error: 1, toolDiffRemoved: 1, warning: 3, mdHeading: 3, syntaxFunction: 3, syntaxString: 2, thinkingMinimal: 4,
	thinkingLow: 4, thinkingMedium: 6, thinkingHigh: 5, thinkingXhigh: 13, thinkingMax: 1, text: "",
	userMessageText: "", customMessageText: "", toolTitle: "", syntaxOperator: "", syntaxPunctuation: "", muted: "",
	dim: "", thinkingText: "", toolOutput: "", mdLinkUrl: "", mdQuote: "", mdQuoteBorder: "", mdHr: "",
	mdCodeBlockBorder: "", toolDiffContext: "", syntaxComment: "", scrollbarTrack: "", scrollbarThumb: "",
	searchMatchText: "", borderMuted: "", thinkingOff: "", selectedBg: "", searchMatchBg: "", userMessageBg: "",
	customMessageBg: "", toolPendingBg: "", toolSuccessBg: "", toolErrorBg: "",
};
/** The system theme's faint tokens. */
const SYSTEM_DIM = [
	"customMessageText", "syntaxOperator", "syntaxPunctuation", "muted", "dim", "thinkingText", "toolOutput",
	"mdLinkUrl", "mdQuote", "mdQuoteBorder", "mdHr", "mdCodeBlockBorder", "toolDiffContext", "syntaxComment",
	"scrollbarTrack", "scrollbarThumb", "searchMatchText", "borderMuted", "thinkingOff",
];

const DARK = {
	accent: "#a798d7", border: "#5fa8cc", borderAccent: "#a08ed5", borderMuted: "#768186", success: "#68b78d",
	error: "#ea7f81", warning: "#cd9a22", muted: "#9da5a9", dim: "#7e888e", text: "#dee0e1", thinkingText: "#96a0a4",
	scrollbarTrack: "#484e52", scrollbarThumb: "#97a0a5", searchMatchText: "#9da5a9", userMessageText: "#dee0e1",
	customMessageText: "#9da5a9", customMessageLabel: "#a798d7", toolTitle: "#dee0e1", toolOutput: "#9da5a9",
	mdHeading: "#cd9a22", mdLink: "#69add0", mdLinkUrl: "#9da5a9", mdCode: "#a798d7", mdCodeBlock: "#68b78d",
	mdCodeBlockBorder: "#9da5a9", mdQuote: "#9da5a9", mdQuoteBorder: "#9da5a9", mdHr: "#9da5a9",
	mdListBullet: "#a798d7", toolDiffAdded: "#68b78d", toolDiffRemoved: "#ea7f81", toolDiffContext: "#9da5a9",
	syntaxComment: "#9da5a9", syntaxKeyword: "#69add0", syntaxFunction: "#cd9a22", syntaxVariable: "#5db3ba",
	syntaxString: "#de8d5a", syntaxNumber: "#68b78d", syntaxType: "#a798d7", syntaxOperator: "#9da5a9",
	syntaxPunctuation: "#9da5a9", thinkingOff: "#6c767b", thinkingMinimal: "#68808d", thinkingLow: "#5489a4",
	thinkingMedium: "#6185cc", thinkingHigh: "#9776e5", thinkingXhigh: "#de54c1", thinkingMax: "#fe5462",
	bashMode: "#5eb286", selectedBg: "#213b49", searchMatchBg: "#4e2f1b", userMessageBg: "#213b49",
	customMessageBg: "#3a3055", toolPendingBg: "#34383a", toolSuccessBg: "#254131", toolErrorBg: "#5b282a",
};
const LIGHT = {
	accent: "#7459b4", border: "#3d8eb3", borderAccent: "#8a72cb", borderMuted: "#9aa2a7", success: "#337e58",
	error: "#c8253d", warning: "#8f6802", muted: "#677176", dim: "#879095", text: "#3b3f41", thinkingText: "#7c868c",
	scrollbarTrack: "#e1e3e4", scrollbarThumb: "#96a0a4", searchMatchText: "#677176", userMessageText: "#3b3f41",
	customMessageText: "#677176", customMessageLabel: "#7459b4", toolTitle: "#3b3f41", toolOutput: "#677176",
	mdHeading: "#8f6802", mdLink: "#2f7899", mdLinkUrl: "#677176", mdCode: "#7459b4", mdCodeBlock: "#337e58",
	mdCodeBlockBorder: "#677176", mdQuote: "#677176", mdQuoteBorder: "#677176", mdHr: "#677176",
	mdListBullet: "#7459b4", toolDiffAdded: "#337e58", toolDiffRemoved: "#c8253d", toolDiffContext: "#677176",
	syntaxComment: "#677176", syntaxKeyword: "#2f7899", syntaxFunction: "#8f6802", syntaxVariable: "#287a81",
	syntaxString: "#a45417", syntaxNumber: "#337e58", syntaxType: "#7459b4", syntaxOperator: "#677176",
	syntaxPunctuation: "#677176", thinkingOff: "#c2c8ca", thinkingMinimal: "#b5c4cb", thinkingLow: "#9fc2d5",
	thinkingMedium: "#a2b7e0", thinkingHigh: "#b5a5e8", thinkingXhigh: "#e585cd", thinkingMax: "#fe7479",
	bashMode: "#40976c", selectedBg: "#dfe7ec", searchMatchBg: "#ede3dd", userMessageBg: "#dfe7ec",
	customMessageBg: "#e6e4ee", toolPendingBg: "#e4e5e6", toolSuccessBg: "#dee9e1", toolErrorBg: "#eee2e1",
};
const BUILTIN = { dark: { colors: DARK, appearance: "dark" }, light: { colors: LIGHT, appearance: "light" } };

const THINKING = {
	off: "thinkingOff",
	minimal: "thinkingMinimal",
	low: "thinkingLow",
	medium: "thinkingMedium",
	high: "thinkingHigh",
	xhigh: "thinkingXhigh",
	max: "thinkingMax",
};

/** The colour of a palette index (what pi-tui's `indexedColor` gives), without loading pi-tui. */
function paletteColor(index) {
	if (!Number.isInteger(index) || index < 0 || index > 255) return tui().indexedColor(index);
	return Object.freeze({ kind: "indexed", index });
}

/** The optional tokens a theme leaves out take their fallback's value. */
function withFallbacks(values) {
	const all = { ...values };
	for (const [token, fallback] of Object.entries(FALLBACKS)) {
		if (all[token] !== undefined) continue;
		if (all[fallback] === undefined) throw new Error(`Theme token ${token} has unresolved fallback ${fallback}`);
		all[token] = all[fallback];
	}
	return all;
}

/** Dark or light from `COLORFGBG` (`fg;bg` or `fg;xpm;bg`), the terminal's only hint in RPC mode; else dark. */
function terminalAppearance() {
	const fields = String(process.env.COLORFGBG ?? "").split(";");
	const last = fields[fields.length - 1]?.trim();
	if (fields.length < 2 || !/^\d+$/.test(last ?? "")) return "dark";
	const index = Number(last);
	if (index > 15) return "dark";
	return index <= 6 || index === 8 ? "dark" : "light";
}

/** The background a theme's own colours suit (palette colours 0-15 say nothing), if any says. */
function detectAppearance(foregrounds, backgrounds) {
	const lightness = (colors) => {
		const fixed = colors.filter((c) => c.kind !== "indexed" || c.index >= 16);
		if (fixed.length === 0) return undefined;
		return fixed.reduce((sum, c) => sum + tui().colorToOklch(c).l, 0) / fixed.length;
	};
	const fg = lightness(foregrounds);
	const bg = lightness(backgrounds);
	if (fg !== undefined && bg !== undefined) return bg < fg ? "dark" : "light";
	if (bg !== undefined) return bg < 0.5 ? "dark" : "light";
	if (fg !== undefined) return fg > 0.5 ? "dark" : "light";
	return undefined;
}

/** pi's `Theme`: escape codes per token for the theme's colour mode. */
class Theme {
	#mode;
	#fg = new Map();
	#bg = new Map();
	#concrete = {};
	#defaultFg = [];
	#defaultBg = [];
	#dim;
	#appearance;
	#colors;

	constructor(fgColors, bgColors, mode, options = {}) {
		this.name = options.name;
		this.sourcePath = options.sourcePath;
		this.sourceInfo = options.sourceInfo;
		this.#mode = mode;
		this.#dim = new Set(options.dim ?? []);
		const all = withFallbacks({ ...fgColors, ...bgColors });
		const entries = Object.entries(all);
		const foregrounds = [];
		const backgrounds = [];
		const add = (token, value, background) => {
			if (value === "") {
				(background ? this.#defaultBg : this.#defaultFg).push(token);
				return background ? "\x1b[49m" : "\x1b[39m";
			}
			const color = typeof value === "number" ? paletteColor(value) : tui().parseColor(value);
			this.#concrete[token] = color;
			(background ? backgrounds : foregrounds).push(color);
			if (color.kind === "indexed") return `\x1b[${background ? 48 : 38};5;${color.index}m`;
			return background ? tui().backgroundAnsi(color, this.getColorMode()) : tui().foregroundAnsi(color, this.getColorMode());
		};
		for (const [token, value] of entries) if (!BACKGROUNDS.has(token)) this.#fg.set(token, add(token, value, false));
		for (const [token, value] of entries) if (BACKGROUNDS.has(token)) this.#bg.set(token, add(token, value, true));
		this.#appearance = options.appearance ?? detectAppearance(foregrounds, backgrounds);
	}

	/** The background the theme suits: its own, from its colours, else the terminal's. */
	get appearance() {
		return this.#appearance ?? terminalAppearance();
	}

	/** Every token's colour; "" tokens take the terminal's default colours (guessed: RPC mode gets no report). */
	get colors() {
		if (!this.#colors) {
			const lib = tui();
			const dark = this.appearance === "dark";
			const foreground = dark ? lib.rgbColor(229, 229, 231) : lib.rgbColor(0, 0, 0);
			const background = dark ? lib.rgbColor(0, 0, 0) : lib.rgbColor(255, 255, 255);
			const colors = { ...this.#concrete };
			for (const token of this.#defaultFg) colors[token] = foreground;
			for (const token of this.#defaultBg) colors[token] = background;
			for (const token of this.#dim) if (colors[token]) colors[token] = lib.mixColors(colors[token], background, 0.4);
			this.#colors = Object.freeze(colors);
		}
		return this.#colors;
	}

	style(text, options) {
		const { fg, bg } = options;
		if (typeof fg === "string" && this.#dim.has(fg)) options = { ...options, dim: true };
		const lib = tui();
		const fgAnsi =
			fg === undefined ? undefined : typeof fg === "string" ? this.#token(this.#fg, fg) : lib.foregroundAnsi(fg, this.getColorMode());
		const bgAnsi =
			bg === undefined ? undefined : typeof bg === "string" ? this.#token(this.#bg, bg) : lib.backgroundAnsi(bg, this.getColorMode());
		return lib.styleTextWithAnsi(text, fgAnsi, bgAnsi, options);
	}

	fg(color, text) {
		const open = this.#token(this.#fg, color);
		return this.#dim.has(color) ? `${open}\x1b[2m${text}\x1b[22;39m` : `${open}${text}\x1b[39m`;
	}

	bg(color, text) {
		return `${this.#token(this.#bg, color)}${text}\x1b[49m`;
	}

	#token(table, token) {
		const open = table.get(token);
		if (open === undefined) throw new Error(`Unknown theme color: ${token}`);
		return open;
	}

	bold(text) {
		return String(text);
	}
	italic(text) {
		return String(text);
	}
	underline(text) {
		return String(text);
	}
	inverse(text) {
		return String(text);
	}
	strikethrough(text) {
		return String(text);
	}

	getFgAnsi(color) {
		const open = this.#token(this.#fg, color);
		return this.#dim.has(color) ? `${open}\x1b[2m` : open;
	}

	getBgAnsi(color) {
		return this.#token(this.#bg, color);
	}

	/** The colour mode (pi's TypeScript-private `mode`, readable in JavaScript). */
	get mode() {
		return this.getColorMode();
	}

	/** The terminal's colour mode (asked of pi-tui when first needed). */
	getColorMode() {
		this.#mode ??= tui().getTerminalColorMode();
		return this.#mode;
	}

	getThinkingBorderColor(level) {
		const token = THINKING[level] ?? "thinkingOff";
		return (text) => this.fg(token, text);
	}

	getBashModeBorderColor() {
		return (text) => this.fg("bashMode", text);
	}
}

/** Split a theme's values into its foreground and background tokens. */
function split(values) {
	const fg = {};
	const bg = {};
	for (const [token, value] of Object.entries(values)) (BACKGROUNDS.has(token) ? bg : fg)[token] = value;
	return { fg, bg };
}

function systemTheme() {
	const { fg, bg } = split(SYSTEM);
	// Every system colour is a palette index or a default: the mode is asked only if wanted.
	return new Theme(fg, bg, undefined, { name: "system", appearance: terminalAppearance(), dim: SYSTEM_DIM });
}

const isColorValue = (v) => typeof v === "string" || (Number.isInteger(v) && v >= 0 && v <= 255);

/** pi's checks of a theme file (its JSON schema); an error when it does not hold. */
function checkThemeJson(label, json) {
	const fail = (what) => {
		throw new Error(`Invalid theme "${label}": ${what}`);
	};
	if (typeof json !== "object" || json === null || Array.isArray(json)) fail("expected an object");
	const known = ["$schema", "name", "appearance", "vars", "colors", "export"];
	for (const key of Object.keys(json)) if (!known.includes(key)) fail(`unknown property ${key}`);
	if (typeof json.name !== "string" || json.name === "") fail("name must be a non-empty string");
	if (json.name.includes("/")) fail(`invalid theme name "${json.name}"`);
	if (json.$schema !== undefined && typeof json.$schema !== "string") fail("$schema must be a string");
	if (json.appearance !== undefined && json.appearance !== "dark" && json.appearance !== "light") fail("appearance");
	const record = (value, what) => {
		if (typeof value !== "object" || value === null || Array.isArray(value)) fail(`${what} must be an object`);
	};
	if (json.vars !== undefined) {
		record(json.vars, "vars");
		for (const [name, value] of Object.entries(json.vars)) if (!isColorValue(value)) fail(`vars.${name}`);
	}
	record(json.colors, "colors");
	for (const [token, value] of Object.entries(json.colors)) {
		if (!TOKENS.includes(token)) fail(`unknown color ${token}`);
		if (!isColorValue(value)) fail(`colors.${token}`);
	}
	const missing = TOKENS.filter((t) => !(t in FALLBACKS) && json.colors[t] === undefined);
	if (missing.length > 0) fail(`missing colors ${missing.join(", ")}`);
	if (json.export !== undefined) {
		record(json.export, "export");
		for (const [key, value] of Object.entries(json.export)) {
			if (!["pageBg", "cardBg", "infoBg"].includes(key) || !isColorValue(value)) fail(`export.${key}`);
		}
	}
	return json;
}

/** A colour value with its variable references (`vars`) followed. */
function resolveValue(value, vars, seen = new Set()) {
	if (typeof value === "number" || value === "" || value.startsWith("#") || /^ok(lch|hsl)\(/i.test(value)) return value;
	if (seen.has(value)) throw new Error(`Circular variable reference detected: ${value}`);
	if (!(value in vars)) throw new Error(`Variable reference not found: ${value}`);
	seen.add(value);
	return resolveValue(vars[value], vars, seen);
}

function createTheme(json, appearance, sourcePath) {
	const vars = json.vars ?? {};
	const values = {};
	for (const [token, value] of Object.entries(json.colors)) values[token] = resolveValue(value, vars);
	const { fg, bg } = split(withFallbacks(values));
	return new Theme(fg, bg, tui().getTerminalColorMode(), { name: json.name, sourcePath, appearance: json.appearance ?? appearance });
}

/** pi's `loadThemeFromPath`: the theme file `file` as a `Theme` (its `sourcePath` the file); throws as pi's when it is none. */
function loadThemeFromPath(file) {
	const text = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "");
	let json;
	try {
		json = JSON.parse(text);
	} catch (error) {
		throw new Error(`Failed to parse theme ${file}: ${error}`);
	}
	return createTheme(checkThemeJson(file, json), undefined, file);
}

/** The theme called `name`, as pi's RPC mode finds it (no registered themes); throws when none or invalid. */
function loadTheme(name) {
	if (name === "system") return systemTheme();
	const builtin = BUILTIN[name];
	if (builtin) return createTheme({ name, colors: builtin.colors }, builtin.appearance);
	const agentDir = hello().agentDir ?? process.env.PI_CODING_AGENT_DIR ?? path.join(require("node:os").homedir(), ".pi", "agent");
	const file = path.join(agentDir, "themes", `${name}.json`);
	if (!fs.existsSync(file)) throw new Error(`Theme not found: ${name}`);
	const text = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "");
	let json;
	try {
		json = JSON.parse(text);
	} catch (error) {
		throw new Error(`Failed to parse theme ${name}: ${error}`);
	}
	return createTheme(checkThemeJson(name, json));
}

/** The theme `name` names, or the system theme when it cannot be loaded (pi's `initTheme`). */
function loadOrSystem(name) {
	try {
		return loadTheme(name ?? "system");
	} catch {
		return systemTheme();
	}
}

/** The settings' `theme` (the project's over the user's when the project is trusted), without "/" ones. */
function settingsThemeName() {
	const h = hello();
	const read = (file) => {
		try {
			const value = JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "")).theme;
			return typeof value === "string" ? value : undefined;
		} catch {
			return undefined;
		}
	};
	const agentDir = h.agentDir ?? process.env.PI_CODING_AGENT_DIR;
	let name = agentDir ? read(path.join(agentDir, "settings.json")) : undefined;
	if (h.projectTrusted === true && h.cwd) name = read(path.join(h.cwd, ".pi", "settings.json")) ?? name;
	return name?.includes("/") ? undefined : name;
}

let current;

/** The theme in use: the settings' one, loaded when first asked for. */
function currentTheme() {
	current ??= loadOrSystem(settingsThemeName());
	return current;
}

/** pi's `initTheme(name)`: the theme in use becomes `name`'s (the system theme if it cannot be loaded). */
function initTheme(name) {
	current = loadOrSystem(name);
}

/** pi's global `theme`: whichever theme is in use when a member is read. */
const theme = new Proxy(
	{},
	{
		get(_target, key) {
			const t = currentTheme();
			const value = t[key];
			return typeof value === "function" ? value.bind(t) : value;
		},
	},
);

const fgOf = (token) => (text) => currentTheme().fg(token, text);

function getMarkdownTheme() {
	return {
		heading: fgOf("mdHeading"),
		link: fgOf("mdLink"),
		linkUrl: fgOf("mdLinkUrl"),
		code: fgOf("mdCode"),
		codeBlock: fgOf("mdCodeBlock"),
		codeBlockBorder: fgOf("mdCodeBlockBorder"),
		quote: fgOf("mdQuote"),
		quoteBorder: fgOf("mdQuoteBorder"),
		hr: fgOf("mdHr"),
		listBullet: fgOf("mdListBullet"),
		bold: (text) => currentTheme().bold(text),
		italic: (text) => currentTheme().italic(text),
		underline: (text) => currentTheme().underline(text),
		strikethrough: (text) => currentTheme().strikethrough(text),
		highlightCode,
	};
}

/** pi's `highlightCode`: `code`'s lines coloured for `lang` with the theme in use. */
function highlightCode(code, lang) {
	return require("./syntax-highlight.cjs").highlightCode(code, lang, currentTheme());
}

function getSelectListTheme() {
	return {
		selectedPrefix: fgOf("accent"),
		selectedText: fgOf("accent"),
		description: fgOf("muted"),
		scrollInfo: fgOf("muted"),
		noMatch: fgOf("muted"),
	};
}

function getEditorTheme() {
	return { borderColor: fgOf("borderMuted"), selectList: getSelectListTheme() };
}

function getSettingsListTheme() {
	return {
		label: (text, selected) => (selected ? currentTheme().fg("accent", text) : text),
		value: (text, selected) => currentTheme().fg(selected ? "accent" : "muted", text),
		description: fgOf("dim"),
		cursor: currentTheme().fg("accent", "→ "),
		hint: fgOf("dim"),
	};
}

module.exports = {
	Theme,
	loadThemeFromPath,
	theme,
	currentTheme,
	initTheme,
	getMarkdownTheme,
	getSelectListTheme,
	getEditorTheme,
	getSettingsListTheme,
	highlightCode,
};
