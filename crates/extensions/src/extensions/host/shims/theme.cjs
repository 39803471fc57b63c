// pi-rpc extension host: the theme of `ctx.ui.theme` and pi's theme getters
// in RPC mode, where nothing is drawn: every styling function returns its
// text unchanged (`fg("accent", "x")` is "x", `bold("x")` is "x").

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

module.exports = { plainTheme };
