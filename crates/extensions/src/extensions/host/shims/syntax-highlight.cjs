// pi-rpc extension host: code coloured by language, as pi 1.6.0 gives it to
// extensions (`highlightCode`, the markdown theme's `highlightCode`) and
// `getLanguageFromPath`. pi colours code with highlight.js 10.7.3 (one of
// the host's pinned packages, loaded on first use) and the grammars it
// registers at start-up: its RPC mode never loads the others, so a language
// outside them (html, css, sql, …) is not one pi colours. Each scope of the
// highlighted markup takes the theme token pi's code theme gives it (the
// innermost scope with a token wins, else the text colour), one line at a
// time; code of no known language is every line in the `mdCodeBlock` colour.

"use strict";

const { services } = require("./host-services.cjs");

/** The grammars pi registers at start-up, in its order (a later one's aliases win). */
const GRAMMARS = [
	"python", "java", "go", "javascript", "json", "cpp", "typescript", "php", "ruby", "c", "csharp", "nix", "bash",
	"rust", "scala", "kotlin", "swift", "dart", "groovy", "perl", "lua",
];

/** The theme call for each highlight.js scope (pi's code theme). */
const SCOPE_STYLES = Object.assign(Object.create(null), {
	default: ["fg", "text"],
	keyword: ["fg", "syntaxKeyword"],
	built_in: ["fg", "syntaxType"],
	literal: ["fg", "syntaxNumber"],
	number: ["fg", "syntaxNumber"],
	regexp: ["fg", "syntaxString"],
	string: ["fg", "syntaxString"],
	subst: ["fg", "text"],
	comment: ["fg", "syntaxComment"],
	doctag: ["fg", "syntaxComment"],
	meta: ["fg", "muted"],
	function: ["fg", "syntaxFunction"],
	title: ["fg", "syntaxFunction"],
	class: ["fg", "syntaxType"],
	type: ["fg", "syntaxType"],
	tag: ["fg", "syntaxPunctuation"],
	name: ["fg", "syntaxKeyword"],
	attr: ["fg", "syntaxVariable"],
	variable: ["fg", "syntaxVariable"],
	params: ["fg", "syntaxVariable"],
	operator: ["fg", "syntaxOperator"],
	punctuation: ["fg", "syntaxPunctuation"],
	emphasis: ["italic"],
	strong: ["bold"],
	link: ["underline"],
	addition: ["fg", "toolDiffAdded"],
	deletion: ["fg", "toolDiffRemoved"],
});

/** File extensions pi names a language for (`getLanguageFromPath`). */
const LANGUAGE_OF_EXTENSION = {
	ts: "typescript", tsx: "typescript", js: "javascript", jsx: "javascript", mjs: "javascript", cjs: "javascript",
	py: "python", rb: "ruby", rs: "rust", go: "go", java: "java", kt: "kotlin", swift: "swift", dart: "dart",
	groovy: "groovy", gradle: "groovy", nix: "nix", c: "c", h: "c", cpp: "cpp", cc: "cpp", cxx: "cpp", hpp: "cpp",
	cs: "csharp", php: "php", sh: "bash", bash: "bash", zsh: "bash", fish: "fish", ps1: "powershell", sql: "sql",
	html: "html", htm: "html", css: "css", scss: "scss", sass: "sass", less: "less", json: "json", yaml: "yaml",
	yml: "yaml", toml: "toml", xml: "xml", md: "markdown", markdown: "markdown", dockerfile: "dockerfile",
	makefile: "makefile", cmake: "cmake", lua: "lua", perl: "perl", r: "r", scala: "scala", clj: "clojure",
	ex: "elixir", exs: "elixir", erl: "erlang", hs: "haskell", ml: "ocaml", vim: "vim", graphql: "graphql",
	proto: "protobuf", tf: "hcl", hcl: "hcl",
};

let highlighter;
/** highlight.js with pi's start-up grammars, loaded once. */
function hljs() {
	if (!highlighter) {
		const load = services().require;
		const core = load("highlight.js/lib/core.js");
		for (const name of GRAMMARS) core.registerLanguage(name, load(`highlight.js/lib/languages/${name}.js`));
		highlighter = core;
	}
	return highlighter;
}

/** The language pi names for a file's extension, if any. */
function getLanguageFromPath(filePath) {
	const extension = String(filePath).split(".").pop()?.toLowerCase();
	return extension ? LANGUAGE_OF_EXTENSION[extension] : undefined;
}

/**
 * `code`'s lines coloured for `lang` with `theme` (pi's `highlightCode`):
 * in the `mdCodeBlock` colour when no language is given, highlight.js has no
 * grammar for it, or highlighting fails.
 */
function highlightCode(code, lang, theme) {
	const plain = () => code.split("\n").map((line) => theme.fg("mdCodeBlock", line));
	if (!lang) return plain();
	try {
		const library = hljs();
		if (!library.getLanguage(lang)) return plain();
		const html = library.highlight(code, { language: lang, ignoreIllegals: true }).value;
		return paintMarkup(html, theme).split("\n");
	} catch {
		return plain();
	}
}

const MARKUP = /<span class="([^"]*)">|<\/span>|&(?:amp|lt|gt|quot|#x27);/g;
const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'" };

/**
 * highlight.js's markup as terminal text: each run of text between two tags
 * is styled by the innermost scope that has a style, line by line (empty
 * lines stay empty); a span of a sub-language names no scope of its own.
 */
function paintMarkup(html, theme) {
	const scopes = [];
	let output = "";
	let text = "";
	const flush = () => {
		if (!text) return;
		const style = styleOf(scopes, theme);
		output += text
			.split("\n")
			.map((line) => (line ? style(line) : line))
			.join("\n");
		text = "";
	};
	let at = 0;
	for (const match of html.matchAll(MARKUP)) {
		text += html.slice(at, match.index);
		at = match.index + match[0].length;
		if (match[0].startsWith("&")) {
			text += ENTITIES[match[0]];
			continue;
		}
		flush();
		if (match[0] === "</span>") scopes.pop();
		else scopes.push(scopeOf(match[1]));
	}
	text += html.slice(at);
	flush();
	return output;
}

/** The highlight.js scope a span's classes name (`hljs-keyword` → `keyword`). */
function scopeOf(classes) {
	const found = classes.split(/\s+/).find((name) => name.startsWith("hljs-"));
	return found?.slice("hljs-".length);
}

/** The style of the innermost scope that has one (`meta-keyword` falls back to `meta`), else the text colour. */
function styleOf(scopes, theme) {
	for (let i = scopes.length - 1; i >= 0; i--) {
		const scope = scopes[i];
		if (!scope) continue;
		const style =
			SCOPE_STYLES[scope] ?? SCOPE_STYLES[before(scope, ".")] ?? SCOPE_STYLES[before(scope, "-")];
		if (style) return apply(style, theme);
	}
	return apply(SCOPE_STYLES.default, theme);
}

function before(scope, separator) {
	const index = scope.indexOf(separator);
	return index === -1 ? undefined : scope.slice(0, index);
}

function apply([method, token], theme) {
	return method === "fg" ? (text) => theme.fg(token, text) : (text) => theme[method](text);
}

module.exports = { highlightCode, getLanguageFromPath };
