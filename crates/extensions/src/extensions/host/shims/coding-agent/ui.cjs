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

/** Components of pi's interactive mode that only exist to be constructed here. */
const inert = {};
for (const name of require("./inert_components.cjs")) {
	inert[name] = { [name]: class extends tui.Container {} }[name];
}

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
