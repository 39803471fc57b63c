// pi-rpc extension host: pi's interactive-mode components, theme and key
// hints, for extensions that build their own UI. RPC mode has no terminal:
// the components are pi-tui components (pi's own TUI library) that render
// plain text if an extension renders them itself, and nothing shows them;
// the theme is pi's RPC-mode theme (theme.cjs). This module is loaded on first use,
// since it loads pi-tui.

"use strict";

const { services } = require("../host-services.cjs");
const themes = require("../theme.cjs");

const tui = services().tui();

/** A horizontal rule as wide as asked, coloured with `color`. */
class DynamicBorder {
	constructor(color = (s) => s) {
		this.color = color;
	}
	invalidate() {}
	render(width) {
		return [this.color("─".repeat(Math.max(1, width)))];
	}
}

/** A loader inside borders, cancellable with Escape in pi (an AbortSignal here too). */
class BorderedLoader extends tui.Container {
	constructor(ui, theme, message, options = {}) {
		super();
		this.cancellable = options.cancellable !== false;
		this.controller = new AbortController();
		this.addChild(new DynamicBorder());
		this.loader = new tui.Text(String(message ?? ""), 1, 0);
		this.addChild(this.loader);
		this.addChild(new DynamicBorder());
	}
	get signal() {
		return this.controller.signal;
	}
	set onAbort(fn) {
		this.abortHandler = fn;
	}
	handleInput() {}
	dispose() {}
}

/** pi's editor with app key bindings; in RPC mode nobody types into it. */
class CustomEditor extends tui.Editor {
	constructor(ui, theme, keybindings, options = {}) {
		super(ui, theme, options);
		this.keybindings = keybindings;
		this.embedWorkingStatus = options.embedWorkingStatus === true;
		this.actionHandlers = new Map();
	}
	setWorkingStatusIndicator() {}
	onAction(action, handler) {
		this.actionHandlers.set(action, handler);
	}
}

/** An empty pi-tui component of class `name`, for an inert component's `get…List()`. */
function emptyPart(name) {
	if (name === "SelectList") return new tui.SelectList([], 1, themes.getSelectListTheme());
	if (name === "SettingsList") return new tui.SettingsList([], 1, themes.getSettingsListTheme(), () => {}, () => {});
	return new tui[name]();
}

const ANSI = /\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\))/g;

/** The member `name` of an inert component, made as its `kind` says (inert_components.cjs). */
function inertMember(proto, base, name, kind) {
	const [how, arg] = kind === undefined ? [] : [kind.split(":")[0], kind.slice(kind.indexOf(":") + 1)];
	const define = (descriptor) => Object.defineProperty(proto, name, { configurable: true, ...descriptor });
	const method = (value) => define({ value, writable: true });
	if (name === "focused") {
		return define({
			get() {
				return this._focused === true;
			},
			set(value) {
				this._focused = value;
			},
		});
	}
	if (how === undefined && ["render", "invalidate", "handleMouse"].includes(name)) {
		return method(function (...args) {
			if (base) return base.prototype[name].apply(this, args);
			return name === "render" ? [] : undefined;
		});
	}
	if (how === "store" || (how === undefined && /^set[A-Z]/.test(name))) {
		const field = how === "store" ? arg : name[3].toLowerCase() + name.slice(4);
		return method(function (value) {
			this[field] = value;
		});
	}
	if (how === "get") return define({ get: () => JSON.parse(arg) });
	if (how === "arg") {
		return method(function () {
			return this._args[Number(arg)];
		});
	}
	if (how === "child") {
		return method(function () {
			this._parts ??= {};
			return (this._parts[name] ??= emptyPart(arg));
		});
	}
	if (how === "signal") {
		return define({
			get() {
				return (this._abort ??= new AbortController()).signal;
			},
		});
	}
	if (how === "ask") return method(async () => Promise.reject(new Error("nobody can answer in RPC mode: there is no terminal")));
	if (how === "append") {
		return method(function (chunk) {
			this._output = (this._output ?? "") + String(chunk).replace(ANSI, "").replace(/\r\n/g, "\n").replace(/\r/g, "\n");
		});
	}
	if (how === "output") {
		return method(function () {
			return this._output ?? "";
		});
	}
	return method(() => {});
}

/** pi's interactive-mode component `name` with its public members, inert (row: [base, members]). */
function inertComponent(name, [baseName, members]) {
	const base = baseName ? tui[baseName] : null;
	const fields = [];
	const Base = base ?? class {};
	const cls = {
		[name]: class extends Base {
			constructor(...args) {
				super();
				this._args = args;
				for (const [field, value] of fields) this[field] = value;
			}
		},
	}[name];
	for (const member of members.split(" ")) {
		const [memberName, kind] = member.split("=");
		if (kind?.startsWith("field:")) {
			const text = kind.slice("field:".length);
			fields.push([memberName, text === "undefined" ? undefined : JSON.parse(text)]);
		} else {
			inertMember(cls.prototype, base, memberName, kind);
		}
	}
	return cls;
}

/** Components of pi's interactive mode that only exist to be constructed here. */
const inert = {};
for (const [name, row] of Object.entries(require("./inert_components.cjs"))) inert[name] = inertComponent(name, row);

/** The keys bound to `keybinding`, as pi writes them (`ctrl+o`). */
function keyText(keybinding) {
	const keys = tui.getKeybindings?.().getKeys?.(keybinding) ?? [];
	return [...keys].join("/");
}

/** Wrap `text` into at most `maxVisualLines` lines of `width` (the start or the end kept). */
function truncateToVisualLines(text, maxVisualLines, width, paddingX = 0, keep = "end") {
	if (!text) return { visualLines: [], skippedCount: 0 };
	const all = new tui.Text(text, paddingX, 0).render(width);
	if (all.length <= maxVisualLines) return { visualLines: all, skippedCount: 0 };
	const visualLines = keep === "start" ? all.slice(0, maxVisualLines) : all.slice(-maxVisualLines);
	return { visualLines, skippedCount: all.length - maxVisualLines };
}

module.exports = {
	Theme: themes.Theme,
	initTheme: themes.initTheme,
	getMarkdownTheme: themes.getMarkdownTheme,
	getSelectListTheme: themes.getSelectListTheme,
	getSettingsListTheme: themes.getSettingsListTheme,
	highlightCode: themes.highlightCode,
	getLanguageFromPath: require("../syntax-highlight.cjs").getLanguageFromPath,
	renderDiff: (diff) => String(diff ?? ""),
	keyText,
	keyHint: (keybinding, description) => `${keyText(keybinding)} ${description}`,
	rawKeyHint: (key, description) => `${key} ${description}`,
	truncateToVisualLines,
	copyToClipboard: async () => {
		throw new Error("there is no clipboard in RPC mode");
	},
	DynamicBorder,
	BorderedLoader,
	CustomEditor,
	...inert,
};
