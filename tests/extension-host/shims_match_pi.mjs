// The extension host's stand-ins for pi's packages
// (crates/extensions/src/extensions/host/shims/) must export every name pi 1.6.0's modules
// export, and their helpers must compute what pi's own compute: this loads
// both, compares the export lists of `pi-coding-agent`, `pi-ai`,
// `pi-ai/compat`, `pi-ai/models` and `pi-agent-core`, runs the helpers over
// the same inputs, and prints every difference. Exit status 1 when there is one.
//
//   node tests/extension-host/shims_match_pi.mjs <pi-coding-agent package dir> <extension host dir>

import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const shims = path.join(here, "../../crates/extensions/src/extensions/host/shims");
const packageDir = path.resolve(process.argv[2]);
// The shims load through jiti with typebox aliased, as the host loads them.
const hostRequire = createRequire(path.join(path.resolve(process.argv[3]), "package.json"));
const { createJiti } = hostRequire("jiti");
const jiti = createJiti(import.meta.url, { alias: { typebox: hostRequire.resolve("typebox") }, interopDefault: true });
// What the host's services give the shims that need no pi-rpc: its packages,
// and pi's agent loop with its pi-ai imports mapped to the host's (as host.mjs loads it).
const agentCore = () =>
	createJiti(import.meta.url, {
		alias: { "@earendil-works/pi-ai": path.join(shims, "pi-ai.cjs"), typebox: hostRequire.resolve("typebox") },
		interopDefault: true,
	})(path.join(path.resolve(process.argv[3]), "node_modules/@earendil-works/pi-agent-core/dist/index.js"));
// pi's TUI library, as the host gives it to `pi-tui` (one copy).
let tuiLibrary;
const tui = () => (tuiLibrary ??= jiti(path.join(path.resolve(process.argv[3]), "node_modules/@earendil-works/pi-tui/dist/index.js")));
globalThis[Symbol.for("pi-rpc.extension-host")] = { package: (name) => hostRequire(name), agentCore, tui };
const ours = jiti(path.join(shims, "pi-coding-agent.cjs"));
const pi = await import(pathToFileURL(path.join(packageDir, "dist/index.js")).href);

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
// Every name of pi's modules (pi-ai also gives `Type`, which pi maps in for extensions).
const ESM = async (dir, file) => import(pathToFileURL(path.join(packageDir, "..", dir, "dist", file)).href);
const modules = [
	["pi-coding-agent", ours, pi],
	["pi-ai", jiti(path.join(shims, "pi-ai.cjs")), await ESM("pi-ai", "index.js")],
	["pi-ai/compat", jiti(path.join(shims, "pi-ai-compat.cjs")), await ESM("pi-ai", "compat.js")],
	["pi-ai/models", jiti(path.join(shims, "pi-ai-models.cjs")), await ESM("pi-ai", "models.js")],
	["pi-ai/oauth", jiti(path.join(shims, "pi-ai-oauth.cjs")), await ESM("pi-ai", "oauth.js")],
	["pi-agent-core", jiti(path.join(shims, "pi-agent-core.cjs")), await ESM("pi-agent-core", "index.js")],
	["pi-tui", jiti(path.join(shims, "pi-tui.cjs")), await ESM("pi-tui", "index.js")],
];
for (const [name, mine, theirs] of modules) {
	const have = new Set(Object.keys(mine));
	const missing = Object.keys(theirs).filter((k) => !have.has(k));
	if (missing.length > 0) {
		failures++;
		console.error(`${name} lacks: ${missing.join(" ")}`);
	}
}
// The host's pi-tui is the version pi 1.6.0 ships with.
const version = (dir) => JSON.parse(fs.readFileSync(path.join(dir, "node_modules/@earendil-works/pi-tui/package.json"), "utf8")).version;
check("pi-tui version", version(path.resolve(process.argv[3])), version(path.join(packageDir, "..", "..", "..")));

// Every public member of pi's exported classes (their prototype chain and
// statics) and objects: the host's have them too, but for the differences
// README-extensions.md and compat/DEVIATIONS.md give (each named here, so a
// new gap or a closed one shows). `private`/`protected` members (pi's
// `.d.ts`) and `_` names are pi's inside.
const KNOWN_GAPS = {
	// pi's bug-report prompt (interactive `/bug`).
	"pi-coding-agent.AgentSession": ["summarizeForBugReport"],
	// The project-trust phase's own loading (i25-trust2's part).
	"pi-coding-agent.DefaultResourceLoader": ["loadProjectTrustExtensions"],
	// TUI tool renderers (no TUI in RPC mode; pi's HTML export page is not pi-rpc's).
	"pi-coding-agent.ExtensionRunner": ["resolveToolRenderers"],
	"pi-coding-agent.ProjectTrustStore": ["getEntry", "setMany"],
};
// Members the host's classes set on each instance (pi's are on the prototype).
const ON_INSTANCES = { "pi-coding-agent.AgentSession": ["resourceLoader"] };
for (const [label, names] of Object.entries(ON_INSTANCES)) KNOWN_GAPS[label] = [...(KNOWN_GAPS[label] ?? []), ...names];
// pi's front ends (refused on purpose).
const REFUSED = new Set(["InteractiveMode"]);
// pi's interactive-mode components: inert in RPC mode, with every public member of pi's (its
// `.d.ts` fields too, which the host's may set on each instance).
const INERT = new Set(Object.keys(hostRequire(path.join(shims, "coding-agent/inert_components.cjs"))));
const hidden = new Map();
const fields = new Map();
for (const dir of ["pi-coding-agent", "pi-ai", "pi-agent-core"]) {
	const walk = (d) => {
		for (const f of fs.readdirSync(d, { withFileTypes: true })) {
			const p = path.join(d, f.name);
			if (f.isDirectory()) walk(p);
			else if (f.name.endsWith(".d.ts")) {
				for (const c of fs.readFileSync(p, "utf8").matchAll(/declare (?:abstract )?class (\w+)[^{]*\{([\s\S]*?)\n\}/g)) {
					const names = hidden.get(c[1]) ?? new Set();
					for (const m of c[2].matchAll(/^\s+(?:private|protected) (?:static )?(?:readonly )?(?:get |set )?(\w+)/gm)) names.add(m[1]);
					hidden.set(c[1], names);
					fields.set(c[1], new Set([...c[2].matchAll(/^ {4}(?:readonly )?(\w+)\??:/gm)].map((m) => m[1])));
				}
			}
		}
	};
	walk(path.join(packageDir, "..", dir, "dist"));
}
const isClass = (v) => typeof v === "function" && /^class\b/.test(Function.prototype.toString.call(v));
const chain = (object) => {
	const names = new Set();
	for (let p = object; p && p !== Object.prototype && p !== Function.prototype; p = Object.getPrototypeOf(p)) for (const k of Object.getOwnPropertyNames(p)) names.add(k);
	return names;
};
const statics = (cls) => new Set(Object.getOwnPropertyNames(cls).filter((k) => !["length", "name", "prototype"].includes(k)));
const memberGaps = (label, className, theirs, mine) => {
	const missing = [...theirs].filter((k) => !mine.has(k) && k !== "constructor" && !k.startsWith("_") && !hidden.get(className)?.has(k));
	const known = KNOWN_GAPS[label] ?? [];
	const unknown = missing.filter((k) => !known.includes(k));
	if (unknown.length > 0) {
		failures++;
		console.error(`${label} lacks: ${unknown.join(" ")}`);
	}
	const closed = known.filter((k) => !missing.includes(k));
	if (closed.length > 0) {
		failures++;
		console.error(`${label} has now (take it out of KNOWN_GAPS and the docs): ${closed.join(" ")}`);
	}
};
// An inert component built with no arguments renders nothing, and what its setters are given it keeps.
const inertBehaviour = (label, component, piClass) => {
	check(`${label}.render(80)`, component.render(80), []);
	for (const name of Object.getOwnPropertyNames(piClass.prototype).filter((n) => /^set[A-Z]/.test(n) && typeof component[n] === "function")) {
		component[name](7);
		check(`${label}.${name}(7) kept`, Object.values(component).includes(7), true);
	}
	if ("focused" in piClass.prototype) {
		component.focused = true;
		check(`${label}.focused`, component.focused, true);
	}
};
for (const [name, mine, theirs] of modules) {
	for (const key of Object.keys(theirs)) {
		const [a, b] = [mine[key], theirs[key]];
		const label = `${name}.${key}`;
		if (REFUSED.has(key) || key === "Type") continue;
		if (INERT.has(key)) {
			const instance = new a();
			memberGaps(label, key, new Set([...chain(b.prototype), ...fields.get(key)]), new Set([...chain(a.prototype), ...Object.keys(instance)]));
			inertBehaviour(label, instance, theirs[key]);
		} else if (isClass(b)) {
			if (key !== "SessionManager") memberGaps(label, key, chain(b.prototype), chain(a?.prototype));
			memberGaps(`${label} (static)`, key, statics(b), new Set(typeof a === "function" ? [...statics(a), ...chain(a)] : []));
		} else if (b && typeof b === "object" && !Array.isArray(b)) {
			memberGaps(label, key, new Set(Object.keys(b)), new Set(a && typeof a === "object" ? Object.keys(a) : []));
		}
	}
}
// pi's SessionManager is one class; the host's makes in-memory and file managers: their members are compared.
memberGaps("pi-coding-agent.SessionManager#", "SessionManager", chain(pi.SessionManager.inMemory("/")), chain(ours.SessionManager.inMemory("/")));

const aiOurs = jiti(path.join(shims, "pi-ai.cjs"));
const aiPi = await ESM("pi-ai", "index.js");
const usage = { input: 1200, output: 300, cacheRead: 50, cacheWrite: 20, totalTokens: 1570, cost: {} };
const model = { cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } };
check("calculateCost", aiOurs.calculateCost(model, structuredClone(usage)), aiPi.calculateCost(model, structuredClone(usage)));
for (const level of ["off", "minimal", "high", "xhigh", "max", "bogus"]) {
	const m = { reasoning: true, thinkingLevelMap: { minimal: null, xhigh: "max" } };
	check(`clampThinkingLevel(${level})`, aiOurs.clampThinkingLevel(m, level), aiPi.clampThinkingLevel(m, level));
}
for (const text of ['{"a": 1', '{"a": "x\ny"}', '{"a": [1, 2', "not json", '{"p": "c:\\d"}', "[1]", ""]) {
	check(`parseStreamingJson(${JSON.stringify(text)})`, aiOurs.parseStreamingJson(text), aiPi.parseStreamingJson(text));
	check(`parseToolCallArguments(${JSON.stringify(text)})`, aiOurs.parseToolCallArguments(text), aiPi.parseToolCallArguments(text));
}
const transcript = {
	messages: [
		{ role: "system", content: "Base.", sections: { a: "<a>1</a>" }, toolsAdded: [{ name: "t1", description: "d", parameters: {} }], timestamp: 1 },
		{ role: "user", content: "hi", timestamp: 2 },
		{ role: "system", content: "More.", sections: { a: null, b: "<b/>" }, toolsRemoved: [{ name: "t1" }], toolsAdded: [{ name: "t2", description: "e", parameters: {} }], timestamp: 3 },
	],
};
for (const fn of ["collapseSystemMessages"]) check(fn, aiOurs[fn](transcript), aiPi[fn](transcript));
for (const fn of ["getCurrentSystemPrompt", "getCurrentTools", "getCurrentSystemMessage", "getDeclaredTools", "hasToolRedefinitions", "hasNonAdditiveToolChanges"]) {
	check(fn, aiOurs[fn](transcript.messages), aiPi[fn](transcript.messages));
}
check("resolveTranscriptTools", aiOurs.resolveTranscriptTools(transcript.messages, "additions"), aiPi.resolveTranscriptTools(transcript.messages, "additions"));
check("renderSystemMessageUpdate", aiOurs.renderSystemMessageUpdate(transcript.messages[2]), aiPi.renderSystemMessageUpdate(transcript.messages[2]));
const args = new aiOurs.ToolCallArgumentsStream();
const argsPi = new aiPi.ToolCallArgumentsStream();
for (const piece of ['{"pa', 'th": "a', '.txt", "n": 4', "}"]) check(`ToolCallArgumentsStream.append(${piece})`, args.append(piece), argsPi.append(piece));
check("ToolCallArgumentsStream.finish", args.finish(), argsPi.finish());
for (const [o, l] of [[undefined, undefined], [5, undefined], [5, 3], ["7", "2"], [null, 4], ["x", 2]]) {
	check(`formatReadLineRange(${o}, ${l})`, ours.formatReadLineRange(o, l), pi.formatReadLineRange(o, l));
}
const eventStream = aiOurs.createAssistantMessageEventStream();
eventStream.push({ type: "start", partial: {} });
eventStream.push({ type: "done", reason: "stop", message: { role: "assistant", timestamp: Date.now() } });
const seen = [];
for await (const e of eventStream) seen.push(e.type);
check("AssistantMessageEventStream events", seen, ["start", "done"]);
check("AssistantMessageEventStream result", typeof (await eventStream.result()).durationMs, "number");

// pi-ai's in-memory stores: the same calls give the same answers (copies, serialized modifies, an aborted call).
async function storesRun(ai) {
	const out = [];
	const models = new ai.InMemoryModelsStore();
	const entry = { models: [{ id: "m" }], etag: "e1" };
	await models.write("p", entry);
	entry.etag = "changed";
	const read = await models.read("p");
	read.models.push({ id: "x" });
	out.push(await models.read("p"), await models.read("q"));
	await models.delete("p");
	out.push(await models.read("p"));
	const credentials = new ai.InMemoryCredentialStore();
	const order = [];
	const slow = credentials.modify("p", async (current) => {
		await new Promise((r) => setTimeout(r, 20));
		order.push(["first", current ?? null]);
		return { type: "api_key", key: "one" };
	});
	const second = credentials.modify("p", async (current) => {
		order.push(["second", current]);
		return undefined;
	});
	out.push(await slow, await second, order, await credentials.read("p"), await credentials.list());
	const aborted = AbortSignal.abort(new Error("stop"));
	for (const call of [() => credentials.read("p", { signal: aborted }), () => credentials.modify("p", async () => ({ type: "x" }), { signal: aborted })]) {
		try {
			out.push(await call());
		} catch (error) {
			out.push(`rejected: ${error.message}`);
		}
	}
	await credentials.delete("p");
	out.push(await credentials.list());
	return out;
}
check("in-memory stores", await storesRun(jiti(path.join(shims, "pi-ai.cjs"))), await storesRun(await ESM("pi-ai", "index.js")));

// A session's tree (labels, a branch) and a session file found by its id.
function treeRun(SessionManager) {
	const sm = SessionManager.inMemory("/work");
	const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 });
	const a = sm.appendMessage(user("a"));
	const b = sm.appendMessage(user("b"));
	sm.appendLabelChange(a, "start");
	sm.branch(a);
	sm.appendMessage(user("c"));
	sm.appendLabelChange(b, "gone");
	sm.appendLabelChange(b, undefined);
	const shape = (node) => [node.entry.type, node.entry.message?.content?.[0]?.text ?? node.entry.label ?? null, node.label ?? null, typeof node.labelTimestamp, node.children.map(shape)];
	return sm.getTree().map(shape);
}
check("SessionManager getTree", treeRun(ours.SessionManager), treeRun(pi.SessionManager));
{
	const root = fs.mkdtempSync(path.join(os.tmpdir(), "sessions-"));
	const [cwd, other] = [path.join(root, "proj"), path.join(root, "other")];
	const sm = pi.SessionManager.create(cwd, path.join(root, "dir"));
	sm.appendMessage({ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 });
	sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "yes" }], timestamp: 2, api: "x", provider: "p", model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop" });
	const id = sm.getSessionId();
	const finds = (SessionManager) => [
		SessionManager.findById(cwd, id, path.join(root, "dir")),
		SessionManager.findById(other, id, path.join(root, "dir")) ?? null,
		SessionManager.findById(cwd, "nope", path.join(root, "dir")) ?? null,
		SessionManager.findById(cwd, id, path.join(root, "missing")) ?? null,
	];
	check("SessionManager.findById", finds(ours.SessionManager), finds(pi.SessionManager));
	fs.rmSync(root, { recursive: true, force: true });
}

// pi's SettingsManager over the same files: every getter, the files its setters write, in memory, untrusted, a broken file.
async function settingsRun(SettingsManager) {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), "settings-"));
	const [agent, cwd] = [path.join(root, "agent"), path.join(root, "proj")];
	fs.mkdirSync(path.join(cwd, ".pi"), { recursive: true });
	fs.mkdirSync(agent, { recursive: true });
	const userFile = path.join(agent, "settings.json");
	fs.writeFileSync(userFile, JSON.stringify({ queueMode: "all", websockets: true, defaultTools: ["read", "bash"], compaction: { enabled: false, reserveTokens: 100, modelOverrides: { "p/m": { keepRecentTokens: 9 } } }, retry: { maxDelayMs: 5 }, theme: "a/b", skills: { customDirectories: ["x"] }, httpIdleTimeoutMs: "90", terminal: { images: false, imageWidthCells: 0.5 } }));
	fs.writeFileSync(path.join(cwd, ".pi", "settings.json"), JSON.stringify({ defaultTools: ["+grep", "-bash"], compaction: { keepRecentTokens: 7 }, followUpMode: "all", cacheWarming: "off" }));
	const sm = SettingsManager.create(cwd, agent);
	const out = { getters: {} };
	for (const name of Object.getOwnPropertyNames(SettingsManager.prototype).filter((n) => /^(get|is)[A-Z]/.test(n) && n !== "getOrCreateDeviceId" && n !== "getCompactionTokenSetting").sort()) {
		try {
			out.getters[name] = sm[name]();
		} catch (error) {
			out.getters[name] = `error: ${error.message}`;
		}
	}
	out.modelCompaction = sm.getCompactionSettings({ provider: "p", id: "m" });
	sm.setDefaultThinkingLevel("low");
	sm.setCompactionEnabled(true);
	sm.setModelThinkingLevel("p", "m", "high");
	sm.setProjectSkillPaths(["s"]);
	sm.setShowImages(false);
	sm.setDefaultModelAndProvider("prov", "mod");
	sm.setAutocompleteMaxVisible(50);
	fs.writeFileSync(userFile, JSON.stringify({ ...JSON.parse(fs.readFileSync(userFile, "utf8")), external: true }));
	await sm.flush();
	out.written = { merged: sm.getSettings(), errors: sm.drainErrors(), user: JSON.parse(fs.readFileSync(userFile, "utf8")), project: JSON.parse(fs.readFileSync(path.join(cwd, ".pi", "settings.json"), "utf8")) };
	const memory = SettingsManager.inMemory({ steeringMode: "all", compaction: { enabled: false } });
	memory.setTheme("dark");
	await memory.flush();
	out.memory = [memory.getSettings(), memory.getGlobalSettings(), memory.getSteeringMode(), memory.getTheme()];
	const untrusted = SettingsManager.create(cwd, agent, { projectTrusted: false });
	out.untrusted = [untrusted.getSettings(), untrusted.getProjectSettings()];
	try {
		untrusted.setProjectThemePaths(["t"]);
	} catch (error) {
		out.untrusted.push(error.message);
	}
	fs.writeFileSync(userFile, "{broken");
	const broken = SettingsManager.create(cwd, agent);
	broken.setTheme("x");
	await broken.flush();
	out.broken = [broken.drainErrors().map((e) => [e.scope, e.path === userFile]), fs.readFileSync(userFile, "utf8"), broken.getTheme()];
	fs.rmSync(root, { recursive: true, force: true });
	return out;
}
const [settingsOurs, settingsPi] = [await settingsRun(ours.SettingsManager), await settingsRun(pi.SettingsManager)];
for (const key of Object.keys(settingsPi)) check(`SettingsManager ${key}`, settingsOurs[key], settingsPi[key]);

if (failures > 0) {
	console.error(`${failures} difference(s)`);
	process.exit(1);
}
console.log("the host's helpers match pi 1.6.0");
