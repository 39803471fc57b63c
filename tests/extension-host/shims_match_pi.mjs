// The extension host's stand-in for `@earendil-works/pi-coding-agent`
// (crates/extensions/src/extensions/host/shims/pi-coding-agent.cjs) must compute what pi
// 1.6.0's own helpers compute: this runs both over the same inputs and
// prints every difference. Exit status 1 when there is one.
//
//   node tests/extension-host/shims_match_pi.mjs <pi-coding-agent package dir>

import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ours = createRequire(import.meta.url)(path.join(here, "../../crates/extensions/src/extensions/host/shims/pi-coding-agent.cjs"));
const pi = await import(pathToFileURL(path.join(path.resolve(process.argv[2]), "dist/index.js")).href);

const texts = ["", "a", "a\n", "a\nb", "a\nb\n", "a\n\nb\n\n", "abcdef\nxyz", "é\nx", "xx\nhéllo", "line\n".repeat(30), "x".repeat(100)];
const options = [undefined, {}, { maxLines: 1 }, { maxLines: 2 }, { maxBytes: 1 }, { maxBytes: 4 }, { maxBytes: 5 }, { maxLines: 3, maxBytes: 12 }, { maxBytes: 50 }];
let failures = 0;
const check = (what, mine, theirs) => {
	const a = JSON.stringify(mine);
	const b = JSON.stringify(theirs);
	if (a !== b) {
		failures++;
		console.error(`${what}\n  host: ${a}\n  pi:   ${b}`);
	}
};
for (const text of texts) {
	for (const opt of options) {
		for (const fn of ["truncateHead", "truncateTail"]) {
			check(`${fn}(${JSON.stringify(text)}, ${JSON.stringify(opt)})`, ours[fn](text, opt), pi[fn](text, opt));
		}
	}
	for (const n of [0, 1, 3, 10, 200]) check(`truncateLine(${JSON.stringify(text)}, ${n})`, ours.truncateLine(text, n), pi.truncateLine(text, n));
}
for (const n of [0, 1, 1023, 1024, 1536, 51200, 1048575, 1048576, 1500000, 5e9]) check(`formatSize(${n})`, ours.formatSize(n), pi.formatSize(n));
for (const name of ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "CONFIG_DIR_NAME", "VERSION"]) check(name, ours[name], pi[name]);
check("isToolCallEventType", ours.isToolCallEventType("bash", { toolName: "bash" }), pi.isToolCallEventType("bash", { toolName: "bash" }));
check("isBashToolResult", ours.isBashToolResult({ toolName: "read" }), pi.isBashToolResult({ toolName: "read" }));
if (failures > 0) {
	console.error(`${failures} difference(s)`);
	process.exit(1);
}
console.log("the host's helpers match pi 1.6.0");
