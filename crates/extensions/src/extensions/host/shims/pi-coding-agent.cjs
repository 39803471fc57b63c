// pi-rpc extension host: what `import … from "@earendil-works/pi-coding-agent"`
// gives an extension: every name pi's package exports
// (tests/extension-host/shims_match_pi.mjs checks the list against pi's).
// The helpers are pi-rpc's own code, written from pi's documentation and
// behaviour; the built-in tool factories run pi-rpc's tools; pi's SDK
// (`createAgentSession`, `SessionManager`, `SettingsManager`, `ModelRuntime`,
// `ModelRegistry`, `DefaultResourceLoader`, `AgentSessionRuntime`) runs in the host over pi-rpc;
// what needs a second pi is present and fails clearly (coding-agent/runtime.cjs).
// Types vanish when TypeScript is loaded.

"use strict";

const text = require("./coding-agent/text.cjs");
const tools = require("./coding-agent/tools.cjs");
const session = require("./coding-agent/session.cjs");
const runtime = require("./coding-agent/runtime.cjs");
const { AgentSession, createAgentSession } = require("./coding-agent/agent-session.cjs");
const { SettingsManager } = require("./coding-agent/settings.cjs");
const { ModelRuntime, ModelRegistry } = require("./coding-agent/models.cjs");
const { DefaultResourceLoader, loadProjectContextFiles } = require("./coding-agent/resources.cjs");
const sessionRuntime = require("./coding-agent/session-runtime.cjs");
const { RpcClient } = require("./coding-agent/rpc-client.cjs");
const modelResolver = require("./coding-agent/model-resolver.cjs");
const { DefaultPackageManager } = require("./coding-agent/packages.cjs");
const { USE_BUILTIN: _useBuiltin, ...builtinExtensions } = require("./coding-agent/builtin-extensions.cjs");
const { parseArgs } = require("./coding-agent/args.cjs");
const { prepareCompaction: _prepareCompaction, ...compaction } = require("./coding-agent/compaction.cjs");
const { createExtensionRuntime, discoverAndLoadExtensions } = require("./coding-agent/extension-loader.cjs");
const { ExtensionRunner, wrapRegisteredTool, wrapRegisteredTools } = require("./coding-agent/extension-runner.cjs");

const sdk = { createExtensionRuntime, discoverAndLoadExtensions, ExtensionRunner, wrapRegisteredTool, wrapRegisteredTools, ...builtinExtensions, AgentSession, createAgentSession, SettingsManager, ModelRuntime, ModelRegistry, DefaultResourceLoader, loadProjectContextFiles, RpcClient, DefaultPackageManager, parseArgs, ...modelResolver, ...sessionRuntime };

const { lib: _lib, ...textExports } = text;
const { sessionDirFor: _sessionDirFor, ...sessionExports } = session;
Object.assign(module.exports, textExports, tools, sessionExports, runtime, compaction, sdk);
// Named here too, so that Node's import of this file lists them: a class
// reached through jiti's default-export fallback is a bound copy without its
// static members (`SessionManager.inMemory()`, `SessionManager.list()`).
exports.SessionManager = session.SessionManager;
exports.AgentSession = AgentSession;
exports.createAgentSession = createAgentSession;
exports.SettingsManager = SettingsManager;
exports.RpcClient = RpcClient;
exports.DefaultPackageManager = DefaultPackageManager;
exports.parseArgs = parseArgs;
exports.ModelRuntime = ModelRuntime;
exports.ModelRegistry = ModelRegistry;
exports.DefaultResourceLoader = DefaultResourceLoader;
exports.AgentSessionRuntime = sessionRuntime.AgentSessionRuntime;
exports.ExtensionRunner = ExtensionRunner;

// The interactive-mode components load pi's TUI library: only when used.
const UI_NAMES = [
	"Theme",
	"initTheme",
	"getMarkdownTheme",
	"getSelectListTheme",
	"getSettingsListTheme",
	"highlightCode",
	"getLanguageFromPath",
	"renderDiff",
	"keyText",
	"keyHint",
	"rawKeyHint",
	"truncateToVisualLines",
	"copyToClipboard",
	"DynamicBorder",
	"BorderedLoader",
	"CustomEditor",
	...Object.keys(require("./coding-agent/inert_components.cjs")),
];
for (const name of UI_NAMES) {
	Object.defineProperty(module.exports, name, {
		enumerable: true,
		get: () => require("./coding-agent/ui.cjs")[name],
	});
}
