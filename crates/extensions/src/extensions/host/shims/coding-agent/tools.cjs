// pi-rpc extension host: pi's built-in tool factories. `createReadTool(cwd,
// options)`, `createBashToolDefinition(cwd, options)`, … build tools whose
// description and schema are pi-rpc's built-ins, and whose `execute` asks
// pi-rpc to run the built-in (`runBuiltinTool`): with the extension's own
// operations (`options.operations`, pi's `ReadOperations`, `BashOperations`,
// …) when it supplies them, which pi-rpc then calls back for every file
// read, write, listing or command, as pi's ssh example runs its tools on a
// remote machine. `bash` keeps pi's options: `commandPrefix`, `spawnHook`,
// `exposeSessionEnvironment`, `shellPath` (its commands then run by that
// shell, through pi's local operations). `powershell` is pi's PowerShell
// tool: the same options, run by pi-rpc's `powershell`, which fails as pi's
// does off Windows unless the extension gives it operations.

"use strict";

const { spawn } = require("node:child_process");
const { services } = require("../host-services.cjs");

/** The operations each tool may be given (pi's `*Operations` members). */
const OPERATIONS = {
	read: ["readFile", "access", "detectImageMimeType", "createReadStream"],
	bash: ["exec"],
	powershell: ["exec"],
	edit: ["readFile", "writeFile", "access"],
	write: ["writeFile", "mkdir"],
	grep: ["isDirectory", "readFile"],
	find: ["exists", "glob"],
	ls: ["exists", "stat", "readdir"],
};

/** The tools that run commands in a shell (pi's `createShellToolDefinition`). */
const SHELL_TOOLS = new Set(["bash", "powershell"]);

/** pi's message off Windows, where it finds no PowerShell. */
const NO_POWERSHELL = "The powershell tool is only available on Windows.";

/** The text of a result's content blocks. */
const textOf = (content) =>
	(content ?? [])
		.filter((b) => b?.type === "text")
		.map((b) => b.text)
		.join("\n");

/** Session facts as pi's bash exposes them (`PI_SESSION_ID`, `PI_MODEL`, …). */
function sessionEnvironment(ctx) {
	const env = {};
	if (!ctx) return env;
	try {
		env.PI_SESSION_ID = ctx.sessionManager.getSessionId();
		const file = ctx.sessionManager.getSessionFile();
		if (file) env.PI_SESSION_FILE = file;
		const model = ctx.model;
		if (model) {
			env.PI_PROVIDER = model.provider;
			env.PI_MODEL = model.id;
		}
		if (ctx.thinkingLevel) env.PI_REASONING_LEVEL = ctx.thinkingLevel;
	} catch {
		// no session to describe
	}
	return env;
}

/** What `bash` runs: the prefixed command, its cwd and environment, after the spawn hook. */
function spawnContext(command, cwd, options, ctx) {
	const env = { ...process.env };
	for (const key of ["PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL"]) delete env[key];
	if (options.exposeSessionEnvironment !== false) Object.assign(env, sessionEnvironment(ctx));
	const prefixed = options.commandPrefix ? `${options.commandPrefix}\n${command}` : command;
	const base = { command: prefixed, cwd, env };
	return typeof options.spawnHook === "function" ? options.spawnHook(base) ?? base : base;
}

/** The variables of `env` that differ from this process's environment. */
function envChanges(env) {
	const changes = {};
	for (const [key, value] of Object.entries(env ?? {})) {
		if (value !== undefined && process.env[key] !== value) changes[key] = String(value);
	}
	return changes;
}

/** `createXToolDefinition(cwd, options)` for built-in tool `name`. */
function createDefinition(name, cwd, options = {}) {
	const spec = services().builtinTools().get(name);
	if (!spec) throw new Error(`pi-rpc has no built-in tool "${name}"`);
	// A `shellPath` runs bash's commands through pi's local operations with that shell.
	const ops = options.operations ?? (name === "bash" && options.shellPath ? createLocalBashOperations({ shellPath: options.shellPath }) : undefined);
	const supplied = ops ? OPERATIONS[name].filter((op) => typeof ops[op] === "function") : [];
	return {
		name,
		label: name,
		description: spec.description,
		promptSnippet: spec.promptSnippet,
		promptGuidelines: [...(spec.promptGuidelines ?? [])],
		parameters: spec.parameters,
		async execute(toolCallId, params, signal, onUpdate, ctx) {
			let input = params;
			let runCwd = ctx?.cwd || cwd;
			let env;
			if (SHELL_TOOLS.has(name)) {
				const spawned = spawnContext(params?.command ?? "", runCwd, options, ctx);
				input = { ...params, command: spawned.command };
				runCwd = spawned.cwd;
				env = envChanges(spawned.env);
			}
			// `read` fits images into the model's own limits, else the tool's options', as pi's.
			const resizeOptions = name === "read" ? (ctx?.model?.inputLimits?.images?.resize ?? options.resizeOptions) : undefined;
			const result = await services().runBuiltinTool(
				{ toolName: name, toolCallId, input, cwd: runCwd, env, operations: ops, supplied, resizeImages: name === "read" ? options.autoResizeImages : undefined, resizeOptions },
				signal,
				onUpdate,
			);
			// pi's built-ins throw their failures; the agent shows the message.
			if (result.isError && !(SHELL_TOOLS.has(name) && result.structuredContent)) throw new Error(textOf(result.content));
			const out = { content: result.content, details: result.details };
			if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
			if (result.isError) out.isError = true;
			return out;
		},
	};
}

/** pi's `AgentTool` form of a definition (what `createReadTool` returns). */
function asAgentTool(definition) {
	return {
		name: definition.name,
		label: definition.label,
		description: definition.description,
		parameters: definition.parameters,
		prepareArguments: definition.prepareArguments,
		executionMode: definition.executionMode,
		execute: (toolCallId, params, signal, onUpdate, ctx) => definition.execute(toolCallId, params, signal, onUpdate, ctx),
	};
}

// pi's built-in tools in its order (session-tool-options.cjs reads it from the factories' names).
const factories = {};
for (const [name, label] of [
	["read", "Read"],
	["bash", "Bash"],
	["powershell", "PowerShell"],
	["edit", "Edit"],
	["write", "Write"],
	["grep", "Grep"],
	["find", "Find"],
	["ls", "Ls"],
]) {
	factories[`create${label}ToolDefinition`] = (cwd, options) => createDefinition(name, cwd, options);
	factories[`create${label}Tool`] = (cwd, options) => asAgentTool(createDefinition(name, cwd, options));
}

/** The shell pi runs commands with: `shellPath`, else bash, else sh. */
function getShellConfig(customShellPath) {
	if (customShellPath) return { shell: customShellPath, args: ["-c"] };
	const fs = require("node:fs");
	const bash = ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"].find((p) => fs.existsSync(p));
	return { shell: bash ?? "sh", args: ["-c"] };
}

/** pi's local command execution, for extensions that wrap it (`BashOperations`). */
function createLocalBashOperations(options = {}) {
	return {
		exec(command, cwd, { onData, signal, timeout, env } = {}) {
			return new Promise((resolve, reject) => {
				if (signal?.aborted) return reject(new Error("aborted"));
				const { shell, args } = getShellConfig(options.shellPath);
				let child;
				try {
					child = spawn(shell, [...args, command], { cwd, env: env ?? process.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
				} catch (error) {
					return reject(error);
				}
				let timer;
				let ended;
				const kill = (why) => {
					ended = why;
					try {
						process.kill(-child.pid, "SIGKILL");
					} catch {
						child.kill("SIGKILL");
					}
				};
				if (typeof timeout === "number" && timeout > 0) timer = setTimeout(() => kill(`timeout:${timeout}`), timeout * 1000);
				const onAbort = () => kill("aborted");
				signal?.addEventListener("abort", onAbort, { once: true });
				child.stdout.on("data", (d) => onData?.(d));
				child.stderr.on("data", (d) => onData?.(d));
				child.on("error", (error) => {
					clearTimeout(timer);
					signal?.removeEventListener("abort", onAbort);
					reject(error);
				});
				child.on("close", (code) => {
					clearTimeout(timer);
					signal?.removeEventListener("abort", onAbort);
					if (ended) reject(new Error(ended));
					else resolve({ exitCode: code });
				});
			});
		},
	};
}

/** pi's `getPowerShellConfig()`: PowerShell is looked for on Windows only, and pi-rpc runs on Unix. */
function getPowerShellConfig() {
	throw new Error(NO_POWERSHELL);
}

/** pi's local PowerShell execution: here each command fails as pi's does off Windows. */
function createLocalPowerShellOperations() {
	return { exec: async () => getPowerShellConfig() };
}

/** pi's `createCodingTools(cwd)`: read, bash, edit, write. */
const createCodingTools = (cwd, options = {}) =>
	["read", "bash", "edit", "write"].map((n) => asAgentTool(createDefinition(n, cwd, options[n])));
/** pi's `createReadOnlyTools(cwd)`: read, grep, find, ls. */
const createReadOnlyTools = (cwd, options = {}) =>
	["read", "grep", "find", "ls"].map((n) => asAgentTool(createDefinition(n, cwd, options[n])));

module.exports = {
	...factories,
	createCodingTools,
	createReadOnlyTools,
	createLocalBashOperations,
	createLocalPowerShellOperations,
	getShellConfig,
	getPowerShellConfig,
	defineTool: (definition) => definition,
};
