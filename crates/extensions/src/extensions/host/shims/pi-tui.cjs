// pi-rpc extension host: what `import … from "@earendil-works/pi-tui"` gives
// an extension. RPC mode has no terminal, so components only exist to be
// constructed (by renderers and `ctx.ui.custom()` factories, which pi-rpc
// never runs): they render no lines. The text helpers work on plain text.

"use strict";

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

/** A theme whose styling functions return the text unchanged. */
const plainTheme = new Proxy(
	{ name: "rpc" },
	{
		get(target, key) {
			if (key in target) return target[key];
			if (typeof key !== "string") return undefined;
			return (first, second) => (second === undefined ? String(first ?? "") : String(second));
		},
	},
);

class Component {
	constructor(...args) {
		this.args = args;
		this.children = [];
	}
	render() {
		return [];
	}
	invalidate() {}
	handleInput() {}
	addChild(child) {
		this.children.push(child);
	}
	removeChild(child) {
		this.children = this.children.filter((c) => c !== child);
	}
	clear() {
		this.children = [];
	}
	setText() {}
	focus() {}
}

const classes = {};
for (const name of ["Text", "TruncatedText", "Box", "Container", "Spacer", "Markdown", "Input", "Editor", "SelectList", "SettingsList", "Loader", "CancellableLoader", "Image"]) {
	classes[name] = { [name]: class extends Component {} }[name];
}

const visibleWidth = (text) => [...String(text ?? "").replace(ANSI, "")].length;

function truncateToWidth(text, width, ellipsis = "...") {
	const plain = [...String(text ?? "").replace(ANSI, "")];
	if (plain.length <= width) return plain.join("");
	const room = Math.max(0, width - ellipsis.length);
	return plain.slice(0, room).join("") + ellipsis.slice(0, width);
}

function wrapTextWithAnsi(text, width) {
	const out = [];
	for (const line of String(text ?? "").replace(ANSI, "").split("\n")) {
		const chars = [...line];
		if (chars.length === 0) out.push("");
		for (let i = 0; i < chars.length; i += Math.max(1, width)) out.push(chars.slice(i, i + Math.max(1, width)).join(""));
	}
	return out;
}

const Key = new Proxy({}, { get: (_t, key) => (typeof key === "string" ? key : undefined) });

module.exports = {
	...classes,
	Component,
	plainTheme,
	visibleWidth,
	truncateToWidth,
	wrapTextWithAnsi,
	matchesKey: () => false,
	isKeyRelease: () => false,
	parseKey: () => undefined,
	Key,
};
