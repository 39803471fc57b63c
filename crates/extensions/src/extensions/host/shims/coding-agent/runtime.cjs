// pi-rpc extension host: the rest of pi's package for extensions. Small
// helpers work as in pi (the event bus, source infos, skills, image types,
// stored credentials; project trust is trust-store.cjs). pi's SDK session
// and its services (`createAgentSession`, `SettingsManager`, `ModelRuntime`,
// `DefaultResourceLoader`, `AgentSessionRuntime`, …) are their own files;
// what remains of pi's SDK (its front ends `main`, `InteractiveMode`,
// `runRpcMode`, a second extension runtime, `DefaultPackageManager`, the
// compaction functions, …; `RpcClient` and the model resolvers have their
// own files) is not part of pi-rpc: those names exist and fail
// with a clear error when used, naming what an extension can use instead
// (pi-agent-core's agent loop, or pi as a process; compat/DEVIATIONS.md).

"use strict";

const { EventEmitter } = require("node:events");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { lib, parseFrontmatter } = require("./text.cjs");

const CONFIG_DIR_NAME = ".pi";
const VERSION = "1.6.0";

function getAgentDir() {
	return process.env.PI_CODING_AGENT_DIR || path.join(os.homedir(), CONFIG_DIR_NAME, "agent");
}

/** Where pi's package would be: the extension host's own files stand in for it. */
const getPackageDir = () => path.resolve(__dirname, "..", "..");

/** pi's event bus: `emit(channel, data)`, `on(channel, handler)` (returns the unsubscribe function). */
function createEventBus() {
	const emitter = new EventEmitter();
	return {
		emit: (channel, data) => {
			emitter.emit(channel, data);
		},
		on: (channel, handler) => {
			const safe = async (data) => {
				try {
					await handler(data);
				} catch (error) {
					process.stderr.write(`Event handler error (${channel}): ${error?.stack ?? error}\n`);
				}
			};
			emitter.on(channel, safe);
			return () => emitter.off(channel, safe);
		},
		clear: () => emitter.removeAllListeners(),
	};
}

function createSyntheticSourceInfo(sourcePath, options = {}) {
	const info = {
		path: sourcePath,
		source: options.source,
		scope: options.scope ?? "temporary",
		origin: options.origin ?? "top-level",
		baseDir: options.baseDir,
	};
	if (options.changelogPath) info.changelogPath = options.changelogPath;
	return info;
}

const isToolCallEventType = (toolName, event) => event?.toolName === toolName;
const resultOf = (toolName) => (event) => event?.toolName === toolName;

/** `<skill name="…" location="…">` blocks as pi writes them into prompts. */
function parseSkillBlock(text) {
	const match = String(text ?? "").match(
		/^<skill name="([^"]+)" location="([^"]+)">\n([\s\S]*?)\n<\/skill>(?:\n\n([\s\S]+))?$/,
	);
	if (!match) return null;
	return { name: match[1], location: match[2], content: match[3], userMessage: match[4]?.trim() || undefined };
}

/** The system-prompt block advertising `skills`, as pi-rpc writes it. */
const formatSkillsForPrompt = (skills, fileReadTool = "read") => lib("formatSkillsForPrompt", skills ?? [], fileReadTool);

/** The skills of a directory: each `SKILL.md` (recursively) with a description. */
function loadSkillsFromDir({ dir, source = "local" } = {}) {
	const skills = [];
	const diagnostics = [];
	const walk = (current) => {
		let entries;
		try {
			entries = fs.readdirSync(current, { withFileTypes: true });
		} catch {
			return;
		}
		for (const entry of entries) {
			if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
			const full = path.join(current, entry.name);
			if (entry.isDirectory()) walk(full);
			else if (entry.name === "SKILL.md") {
				try {
					const { frontmatter } = parseFrontmatter(fs.readFileSync(full, "utf8"));
					if (!frontmatter.description) {
						diagnostics.push({ type: "warning", message: "description is required", path: full });
						continue;
					}
					skills.push({
						name: frontmatter.name ?? path.basename(current),
						description: frontmatter.description,
						filePath: full,
						baseDir: current,
						disableModelInvocation: frontmatter["disable-model-invocation"] === true,
						sourceInfo: createSyntheticSourceInfo(full, { source, baseDir: current }),
					});
				} catch (error) {
					diagnostics.push({ type: "warning", message: String(error?.message ?? error), path: full });
				}
			}
		}
	};
	walk(path.resolve(dir ?? "."));
	return { skills, diagnostics };
}

/** Skills of the user's and the project's skill directories (and `skillPaths`). */
function loadSkills(options = {}) {
	const cwd = options.cwd ?? process.cwd();
	const dirs = [
		path.join(options.agentDir ?? getAgentDir(), "skills"),
		path.join(cwd, CONFIG_DIR_NAME, "skills"),
		...(options.skillPaths ?? []),
	];
	const all = dirs.map((dir) => loadSkillsFromDir({ dir }));
	return { skills: all.flatMap((r) => r.skills), diagnostics: all.flatMap((r) => r.diagnostics) };
}

/** The image type of a file from its first bytes (PNG, JPEG, GIF, WebP, BMP), else null. */
async function detectSupportedImageMimeTypeFromFile(filePath) {
	const handle = await fs.promises.open(filePath, "r");
	try {
		const head = Buffer.alloc(12);
		await handle.read(head, 0, 12, 0);
		if (head[0] === 0x89 && head.toString("latin1", 1, 4) === "PNG") return "image/png";
		if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
		if (head.toString("latin1", 0, 4) === "GIF8") return "image/gif";
		if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WEBP") return "image/webp";
		if (head.toString("latin1", 0, 2) === "BM") return "image/bmp";
		return null;
	} finally {
		await handle.close();
	}
}

function formatDimensionNote(result) {
	if (!result?.wasResized) return undefined;
	const scale = result.originalWidth / result.width;
	return `[Image: original ${result.originalWidth}x${result.originalHeight}, displayed at ${result.width}x${result.height}. Multiply coordinates by ${scale.toFixed(2)} to map to original image.]`;
}

/** The credential stored for `provider` in `auth.json` (the agent directory's). */
function readStoredCredential(provider, agentDir = getAgentDir()) {
	try {
		const all = JSON.parse(fs.readFileSync(path.join(agentDir, "auth.json"), "utf8"));
		return all?.[provider];
	} catch {
		return undefined;
	}
}

class CredentialSynchronizationError extends Error {
	constructor(message, options) {
		super(message, options);
		this.name = "CredentialSynchronizationError";
	}
}

/** A name of pi's SDK: present, and a clear error when used. */
function sdkOnly(name) {
	const fail = () => {
		throw new Error(
			`${name} belongs to pi's SDK, which embeds a second pi; it is not available in pi-rpc's extension host: ` +
				"run an agent of your own with @earendil-works/pi-agent-core (Agent, agentLoop), or start pi as a process",
		);
	};
	return { [name]: class {
		constructor() {
			fail();
		}
		static create = fail;
	} }[name];
}

const sdk = {};
for (const name of [
	"InteractiveMode",
]) {
	sdk[name] = sdkOnly(name);
}
for (const name of [
	"main",
	"runPrintMode",
	"runRpcMode",
]) {
	sdk[name] = (...args) => new (sdkOnly(name))(...args);
}

/** pi's `convertToPng(base64, mimeType)`, computed by pi-rpc's image code (`null` when undecodable). */
async function convertToPng(base64Data, mimeType) {
	return lib("convertToPng", base64Data, mimeType);
}

/** pi's `resizeImage(bytes, mimeType, options)`: fitted into `maxWidth`/`maxHeight`/`maxBytes` by pi-rpc's image code. */
async function resizeImage(inputBytes, mimeType, options) {
	return lib("resizeImage", Buffer.from(inputBytes).toString("base64"), mimeType ?? "", options ?? {});
}

module.exports = {
	...sdk,
	convertToPng,
	resizeImage,
	CONFIG_DIR_NAME,
	VERSION,
	VIRTUAL_MODEL_STATE_ENTRY: "pi.virtual-model-state",
	getAgentDir,
	getPackageDir,
	getDocsPath: () => path.join(getPackageDir(), "docs"),
	getExamplesPath: () => path.join(getPackageDir(), "examples"),
	getReadmePath: () => path.join(getPackageDir(), "README.md"),
	createEventBus,
	createSyntheticSourceInfo,
	isToolCallEventType,
	isBashToolResult: resultOf("bash"),
	isReadToolResult: resultOf("read"),
	isEditToolResult: resultOf("edit"),
	isWriteToolResult: resultOf("write"),
	isGrepToolResult: resultOf("grep"),
	isFindToolResult: resultOf("find"),
	isLsToolResult: resultOf("ls"),
	isPowerShellToolResult: resultOf("powershell"),
	parseSkillBlock,
	formatSkillsForPrompt,
	loadSkills,
	loadSkillsFromDir,
	detectSupportedImageMimeTypeFromFile,
	formatDimensionNote,
	readStoredCredential,
	CredentialSynchronizationError,
};
