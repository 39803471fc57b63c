// pi-rpc extension host: the theme of `ctx.ui.theme` in RPC mode, as pi
// 1.6.0's RPC mode gives it (no terminal, stdout a pipe): its "system" theme
// in 256-colour mode. A foreground token is a colour of the terminal's
// 16-colour palette (`\x1b[38;5;<n>m`) or the terminal's default colour
// (`\x1b[39m`), faint for the muted tokens (`\x1b[2m`, closed with
// `\x1b[22;39m`); every background token is the terminal's default
// (`\x1b[49m`); bold, italic, underline, inverse and strikethrough add
// nothing (no colour support on a pipe). An unknown token throws pi's
// error. `plainTheme` (every function returns its text unchanged) serves
// the helpers that style nothing in RPC mode.

"use strict";

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

/** The foreground tokens and their palette colour (`null`: the terminal's default colour). */
const PALETTE = {
	text: null,
	userMessageText: null,
	toolTitle: null,
	accent: 5,
	borderAccent: 5,
	customMessageLabel: 5,
	mdCode: 5,
	mdListBullet: 5,
	syntaxType: 5,
	syntaxNumber: 5,
	thinkingHigh: 5,
	border: 4,
	mdLink: 4,
	syntaxKeyword: 4,
	thinkingMinimal: 4,
	thinkingLow: 4,
	syntaxVariable: 6,
	thinkingMedium: 6,
	success: 2,
	mdCodeBlock: 2,
	toolDiffAdded: 2,
	bashMode: 2,
	syntaxString: 2,
	error: 1,
	toolDiffRemoved: 1,
	thinkingMax: 1,
	warning: 3,
	mdHeading: 3,
	syntaxFunction: 3,
	thinkingXhigh: 13,
};

/** The muted foreground tokens: the default colour, faint. */
const FAINT = [
	"customMessageText",
	"syntaxOperator",
	"syntaxPunctuation",
	"muted",
	"dim",
	"thinkingText",
	"toolOutput",
	"mdLinkUrl",
	"mdQuote",
	"mdQuoteBorder",
	"mdHr",
	"mdCodeBlockBorder",
	"toolDiffContext",
	"syntaxComment",
	"scrollbarTrack",
	"scrollbarThumb",
	"searchMatchText",
	"borderMuted",
	"thinkingOff",
];

const BACKGROUNDS = [
	"selectedBg",
	"searchMatchBg",
	"userMessageBg",
	"customMessageBg",
	"toolPendingBg",
	"toolSuccessBg",
	"toolErrorBg",
];

const THINKING = {
	off: "thinkingOff",
	minimal: "thinkingMinimal",
	low: "thinkingLow",
	medium: "thinkingMedium",
	high: "thinkingHigh",
	xhigh: "thinkingXhigh",
	max: "thinkingMax",
};

const fgOpen = new Map();
for (const [token, index] of Object.entries(PALETTE)) fgOpen.set(token, index === null ? "\x1b[39m" : `\x1b[38;5;${index}m`);
for (const token of FAINT) fgOpen.set(token, "\x1b[39m");
const faint = new Set(FAINT);
const bgOpen = new Map(BACKGROUNDS.map((token) => [token, "\x1b[49m"]));

function lookup(table, token) {
	const value = table.get(token);
	if (value === undefined) throw new Error(`Unknown theme color: ${token}`);
	return value;
}

/** pi's theme of RPC mode. */
const rpcTheme = {
	name: "system",
	appearance: "dark",
	mode: "256color",
	fg(color, text) {
		const open = lookup(fgOpen, color);
		return faint.has(color) ? `${open}\x1b[2m${text}\x1b[22;39m` : `${open}${text}\x1b[39m`;
	},
	bg(color, text) {
		return `${lookup(bgOpen, color)}${text}\x1b[49m`;
	},
	bold: (text) => String(text),
	italic: (text) => String(text),
	underline: (text) => String(text),
	inverse: (text) => String(text),
	strikethrough: (text) => String(text),
	getFgAnsi(color) {
		const open = lookup(fgOpen, color);
		return faint.has(color) ? `${open}\x1b[2m` : open;
	},
	getBgAnsi: (color) => lookup(bgOpen, color),
	getColorMode: () => "256color",
	getThinkingBorderColor(level) {
		const token = THINKING[level] ?? "thinkingOff";
		return (text) => rpcTheme.fg(token, text);
	},
	getBashModeBorderColor() {
		return (text) => rpcTheme.fg("bashMode", text);
	},
};

module.exports = { plainTheme, rpcTheme };
