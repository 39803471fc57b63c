// pi-rpc extension host: pi's `codemode` tool inside an SDK session
// (`createCodemodeExtension()` loaded there, session-builtins.cjs). The
// script runs in pi-rpc's own codemode: the call goes to pi-rpc on the
// built-in tool channel (`runBuiltinTool`, `toolName: "codemode"`) with the
// session's callable tools (`ctx.tools`) as its catalog, and pi-rpc calls
// back, through an operations object as pi's `*Operations` are called, for
// each tool the script calls (`callTool`: the session's `ctx.executeTool()`,
// its pipeline and hooks) and for `store()` / `load()` (the session's
// `codemode-store` entries on its branch, written with `pi.appendEntry`) and
// for the script's `models.*` (the session's `ctx.modelRegistry`: its
// catalog listed when a script first asks, its classify / generateImages).

"use strict";

const { services } = require("../host-services.cjs");
const { lib } = require("./text.cjs");

/** codemode's own name: scripts do not call it. */
const CODEMODE = "codemode";

/** What pi-rpc's codemode is told of each callable tool. */
function catalogOf(pi, tools) {
	const registered = new Map(pi.getAllTools().map((t) => [t.name, t]));
	return tools
		.filter((tool) => tool.name !== CODEMODE)
		.map((tool) => {
			const own = registered.get(tool.name);
			const entry = {
				name: tool.name,
				description: tool.description ?? "",
				parameters: tool.parameters ?? {},
				promptGuidelines: own?.promptGuidelines ?? tool.promptGuidelines ?? [],
				exposure: own?.exposure ?? tool.exposure ?? "direct",
			};
			if (tool.outputSchema) entry.outputSchema = tool.outputSchema;
			if (own?.namespace) entry.namespace = typeof own.namespace === "string" ? own.namespace : own.namespace.name;
			return entry;
		});
}

/** The model types a script's `models.*` know. */
const MODEL_TYPES = ["chat", "classifier", "image"];

/** `{<type>: {models, available}}` of the session's model registry, as a script's `models.*` see it. */
async function modelCatalog(registry) {
	const out = {};
	for (const type of MODEL_TYPES) {
		out[type] = { models: registry?.getModelsOfType?.(type) ?? [], available: (await registry?.getAvailableOfType?.(type)) ?? [] };
	}
	return JSON.parse(JSON.stringify(out));
}

/** A script's `models.classify` / `models.generateImages` of the session's registry, the model as the registry lists it (pi's). */
function modelCall(registry, { op, model, context }, signal) {
	const type = op === "classify" ? "classifier" : "image";
	const resolved = registry.getModelOfType(type, model?.provider, model?.id) ?? model;
	return op === "classify" ? registry.classify(resolved, context, { signal }) : registry.generateImages(resolved, context, { signal });
}

/** Run one script of the session's `codemode` (the tool's `execute`). */
async function runSessionCodemode(pi, options, toolCallId, params, signal, onUpdate, ctx) {
	const operations = {
		callTool: ({ name, args }, callSignal) => ctx.executeTool(String(name), args ?? {}, { signal: callSignal }),
		branchCustomData: ({ customType }) =>
			ctx.sessionManager
				.getBranch()
				.filter((entry) => entry.type === "custom" && entry.customType === customType)
				.map((entry) => entry.data ?? null),
		appendCustom: ({ customType, data }) => pi.appendEntry(customType, data) ?? null,
		// The script's `models.*`: the session's model registry (pi's `ctx.modelRegistry`).
		modelCatalog: () => modelCatalog(ctx.modelRegistry),
		modelCall: (args, callSignal) => modelCall(ctx.modelRegistry, args ?? {}, callSignal),
	};
	const result = await services().runBuiltinTool(
		{
			toolName: CODEMODE,
			toolCallId,
			input: params ?? {},
			cwd: ctx?.cwd,
			operations,
			supplied: Object.keys(operations),
			catalog: catalogOf(pi, ctx?.tools ?? []),
			models: options?.models !== false,
		},
		signal,
		onUpdate,
	);
	const out = { content: result.content, details: result.details };
	if (result.isError) out.isError = true;
	return out;
}

/** A settings value pi's `createCodemodeExtension` takes as the inline budget (a finite number, not negative). */
const budgetOf = (value) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined);

/**
 * pi's codemode `prepareLoadout`: codemode's description with the `Nested tools:` listing of
 * the session's callable tools and, with `mode: "on"`, the declared tools' `Codemode:` notes,
 * from pi-rpc's own listing (`lib` `codemodeLoadout`). Mode and budget: the factory's options,
 * else the session's `codemode` settings.
 */
function codemodeLoadout(pi, options, loadout) {
	const settings = pi.getSettings?.()?.codemode ?? {};
	const describe = (tool) => {
		const namespace = loadout.getNamespace(tool.name);
		return {
			name: tool.name,
			description: tool.description ?? "",
			parameters: tool.parameters ?? {},
			promptGuidelines: loadout.getPromptGuidelines(tool.name),
			exposure: loadout.getExposure(tool.name),
			...(namespace ? { namespace: typeof namespace === "string" ? namespace : namespace.name } : {}),
			...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
		};
	};
	return lib("codemodeLoadout", {
		declared: loadout.declared.map(describe),
		callable: loadout.callable.map(describe),
		mode: options?.mode ?? (settings.mode === "only" ? "only" : "on"),
		inlineBudget: budgetOf(options?.inlineBudget) ?? budgetOf(settings.inlineBudget),
		models: options?.models !== false,
	});
}

/** The text and level pi-rpc's `/mcp` answers over the SDK session `session`'s servers (`null`: it answered through dialogs). */
function mcpCommand(args, session, ui = false) {
	return services().channel.request("mcpCommand", { args: String(args ?? ""), session, ui });
}

module.exports = { runSessionCodemode, codemodeLoadout, mcpCommand };
