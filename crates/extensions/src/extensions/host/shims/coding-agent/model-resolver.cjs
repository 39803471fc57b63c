// pi-rpc extension host: pi's `resolveCliModel` and
// `resolveModelScopeWithDiagnostics`, computed by pi-rpc's own model resolver
// (the one behind `--model` and `--models`; the `lib` request, agent's
// extension_model_resolver.rs). The models go over as pi's objects and come
// back as their indexes, so an extension gets its runtime's own objects.

"use strict";

const { lib } = require("./text.cjs");

const NO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
/**
 * What pi-rpc's resolver reads of a model (its provider, id, name and
 * reasoning), the other fields of pi-rpc's `Model` left empty: a catalog of
 * some 1700 models then crosses to pi-rpc in a fraction of the bytes.
 */
function resolverModel(m) {
	return { provider: m.provider, id: m.id, name: m.name ?? m.id, reasoning: m.reasoning === true, api: "", baseUrl: "", input: [], cost: NO_COST, contextWindow: 0, maxTokens: 0 };
}

/** The providers among `models` that have credentials in `runtime`. */
function usableProviders(models, runtime) {
	const providers = [...new Set(models.map((m) => m.provider))];
	return providers.filter((provider) => runtime.hasConfiguredAuth(provider));
}

/** pi's `resolveCliModel({cliProvider, cliModel, cliThinking, inlineApiKey, modelRuntime})`, synchronous as pi's. */
function resolveCliModel(options) {
	const { cliProvider, cliModel, cliThinking, inlineApiKey, modelRuntime } = options ?? {};
	if (!cliModel) return { model: undefined, warning: undefined, error: undefined };
	const models = [...modelRuntime.getModels()];
	const answer = lib(
		"resolveCliModel",
		{ cliProvider, cliModel, cliThinking, inlineApiKey },
		models.map(resolverModel),
		inlineApiKey ? [] : usableProviders(models, modelRuntime),
	);
	if (answer.error !== undefined) return { model: undefined, warning: undefined, error: answer.error };
	const chosen = answer.model;
	let model;
	if (chosen.index !== undefined) {
		model = models[chosen.index];
	} else {
		model = { ...models[chosen.base], id: chosen.id, name: chosen.id };
		if (chosen.reasoning) model.reasoning = true;
	}
	return {
		model,
		thinkingLevel: answer.thinkingLevel ?? undefined,
		warning: answer.warning ?? undefined,
		error: undefined,
	};
}

/** pi's `resolveModelScopeWithDiagnostics(patterns, modelRuntime, options)`: scope patterns among the available models. */
async function resolveModelScopeWithDiagnostics(patterns, modelRuntime, options) {
	const models = [...(await modelRuntime.getAvailable(undefined, options))];
	const answer = lib("resolveModelScope", [...patterns], models.map(resolverModel));
	return {
		scopedModels: answer.scoped.map(({ index, thinkingLevel }) => ({
			model: models[index],
			thinkingLevel: thinkingLevel ?? undefined,
		})),
		diagnostics: answer.diagnostics,
	};
}

module.exports = { resolveCliModel, resolveModelScopeWithDiagnostics };
