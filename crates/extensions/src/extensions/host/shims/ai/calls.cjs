// pi-rpc extension host: pi-ai's model calls. `stream`, `streamSimple`,
// `complete` and `completeSimple` run through pi-rpc's own providers (the
// `modelStream` request), so an extension's model call uses the same wire
// APIs, credentials, proxies and base URLs as the agent; `…Api()` (pi-ai's
// built-in wire APIs, which an extension's provider may delegate to) does
// the same with the API it names. APIs registered here with
// `registerApiProvider` are called in the host instead.

"use strict";

const { services } = require("../host-services.cjs");
const { AssistantMessageEventStream } = require("./stream.cjs");
const { normalizeContext, getCurrentSystemPrompt, getCurrentTools, toToolDeclaration } = require("./transcript.cjs");

/** The options every call passes on (pi-ai's `streamSimple` keeps these of its base options). */
const SIMPLE_OPTIONS = ["apiKey", "headers", "maxTokens", "reasoning", "sessionId", "temperature", "toolChoice", "samplingParams", "cacheRetention", "metadata", "thinkingBudgets"];
/** What a provider-specific `stream` call adds (the options of the model's API pi-rpc's providers apply). */
const API_OPTIONS = [...SIMPLE_OPTIONS, "thinkingDisplay", "serviceTier", "reasoningSummary"];

/** The options pi-rpc's providers take. */
function callOptions(options = {}, keys = SIMPLE_OPTIONS) {
	const out = {};
	for (const key of keys) {
		if (options[key] !== undefined && options[key] !== null) out[key] = options[key];
	}
	return out;
}

/** pi-ai's thinking levels pi-rpc's providers take. */
const LEVELS = new Set(["minimal", "low", "medium", "high", "xhigh"]);

/**
 * The thinking level of a provider-specific `stream` call (pi-ai's
 * `ModelsApiStreamOptions` of the model's API), where `streamSimple`'s
 * `reasoning` is no option: the OpenAI-style APIs' `reasoningEffort`,
 * Anthropic's `effort` with `thinkingEnabled`, Google's `thinking.level`
 * with `thinking.enabled`; none otherwise.
 */
function apiReasoning(options = {}) {
	let level;
	if (typeof options.reasoningEffort === "string") level = options.reasoningEffort;
	else if (options.thinkingEnabled === true && typeof options.effort === "string") level = options.effort;
	else if (options.thinking?.enabled === true && typeof options.thinking.level === "string") level = options.thinking.level;
	level = level?.toLowerCase();
	if (level === "max") level = "xhigh";
	return LEVELS.has(level) ? level : undefined;
}

/**
 * What a provider-specific `stream` call asks beyond the level, as pi-ai's
 * APIs read it: Anthropic's budget (`thinkingBudgetTokens`, 1024 when
 * thinking is enabled without one; a level is then needed for thinking to be
 * on at all), Google's `thinking.budgetTokens` (when no `thinking.level`),
 * the caller's `maxTokens` alone as the output cap, and a call that says
 * nothing of thinking (Anthropic's `thinkingEnabled`, Google's `thinking`).
 */
function apiExtras(model, options = {}) {
	const extras = { maxTokensAsGiven: true };
	const anthropic = model?.api === "anthropic-messages";
	if (anthropic ? options.thinkingEnabled === undefined : model?.api?.startsWith("google-") && options.thinking === undefined) {
		extras.thinkingUnsaid = true;
	}
	if (anthropic && options.thinkingEnabled === true) {
		extras.thinkingBudget = options.thinkingBudgetTokens || 1024;
		// Adaptive-thinking Claude models then send no effort.
		if (typeof options.effort !== "string") extras.effortUnsaid = true;
	} else if (options.thinking?.enabled === true && options.thinking.level === undefined && Number.isInteger(options.thinking.budgetTokens)) {
		extras.thinkingBudget = options.thinking.budgetTokens;
	}
	return extras;
}

/**
 * The `modelStream` parameters of a call. `api` (`stream`, not `streamSimple`,
 * through the registry): the options are the model API's own.
 */
function callParams(model, context, options, api, apiOptions = false) {
	const transcript = normalizeContext(context ?? { messages: [] });
	const { reasoning: _reasoning, ...rest } = options ?? {};
	const extras = apiOptions ? apiExtras(model, options) : {};
	// Thinking enabled by its budget alone (or, on openai-responses and
	// azure-openai-responses, by a `reasoningSummary`): on, the budget deciding how much.
	const summaryOnly = ["openai-responses", "azure-openai-responses"].includes(model?.api) && options?.reasoningSummary;
	const reasoning = apiReasoning(options) ?? (extras.thinkingBudget !== undefined || summaryOnly ? "medium" : undefined);
	return {
		model: { ...model, api: api ?? model.api },
		systemPrompt: getCurrentSystemPrompt(transcript.messages),
		tools: getCurrentTools(transcript.messages).map(toToolDeclaration),
		messages: transcript.messages.filter((m) => m.role !== "system"),
		options: apiOptions ? { ...callOptions({ ...rest, ...(reasoning ? { reasoning } : {}) }, API_OPTIONS), ...extras } : callOptions(options),
	};
}

/** pi-ai's request hooks of a call's options (`onPayload`, `onResponse`, `transformHeaders`, `onProviderStreamEvent`), when it has any. */
function requestHooks(options = {}) {
	const hooks = {};
	for (const key of ["onPayload", "onResponse", "transformHeaders", "onProviderStreamEvent"]) if (typeof options?.[key] === "function") hooks[key] = options[key];
	return Object.keys(hooks).length > 0 ? hooks : undefined;
}

/** A call of pi-rpc's provider for `api` (the model's own when not given). */
function viaPiRpc(model, context, options = {}, api) {
	return services().modelStream(callParams(model, context, options, api), options.signal, new AssistantMessageEventStream(), requestHooks(options));
}

/**
 * pi's `modelRegistry.stream/streamSimple`: the request goes to the model's
 * provider (an extension's own stream included) with its request-time auth,
 * as the agent's requests do; a provider pi-rpc does not know or one
 * without credentials ends the stream with pi's error. `simple`
 * (`streamSimple`): a virtual model's request is routed first (pi's
 * reason `direct`); `stream` does not route it and ends with pi's error.
 */
function viaRegistry(model, context, options = {}, simple = false) {
	const params = { ...callParams(model, context, options, undefined, !simple), registry: true, simple };
	return services().modelStream(params, options.signal, new AssistantMessageEventStream(), requestHooks(options));
}

/** API implementations registered in the host (`registerApiProvider`), by API name. */
const registry = new Map();

function callFor(kind) {
	return (model, context, options) => {
		const own = registry.get(model?.api);
		if (own) return own[kind](model, normalizeContext(context ?? { messages: [] }), options);
		return viaPiRpc(model, context, options);
	};
}

const stream = callFor("stream");
const streamSimple = callFor("streamSimple");
const complete = async (model, context, options) => stream(model, context, options).result();
const completeSimple = async (model, context, options) => streamSimple(model, context, options).result();

/** pi-ai's `…Api()`: `{api, stream, streamSimple}` of a built-in wire API, run by pi-rpc. */
function builtinApi(api) {
	const call = (model, context, options) => viaPiRpc(model, context, options, api);
	return () => ({ api, stream: call, streamSimple: call });
}

const APIS = {
	anthropicMessagesApi: "anthropic-messages",
	openAICompletionsApi: "openai-completions",
	openAIResponsesApi: "openai-responses",
	openAICodexResponsesApi: "openai-codex-responses",
	azureOpenAIResponsesApi: "azure-openai-responses",
	googleGenerativeAIApi: "google-generative-ai",
	googleVertexApi: "google-vertex",
	mistralConversationsApi: "mistral-conversations",
	bedrockConverseStreamApi: "bedrock-converse-stream",
	piMessagesApi: "pi-messages",
};
const apiFactories = Object.fromEntries(Object.entries(APIS).map(([name, api]) => [name, builtinApi(api)]));

/** The older per-API functions (`streamAnthropic`, `streamSimpleOpenAIResponses`, …). */
const perApi = {};
for (const [suffix, api] of [
	["Anthropic", "anthropic-messages"],
	["OpenAICompletions", "openai-completions"],
	["OpenAIResponses", "openai-responses"],
	["OpenAICodexResponses", "openai-codex-responses"],
	["AzureOpenAIResponses", "azure-openai-responses"],
	["Google", "google-generative-ai"],
	["GoogleVertex", "google-vertex"],
	["Mistral", "mistral-conversations"],
]) {
	perApi[`stream${suffix}`] = (model, context, options) => viaPiRpc(model, context, options, api);
	perApi[`streamSimple${suffix}`] = (model, context, options) => viaPiRpc(model, context, options, api);
}

function registerApiProvider(provider, sourceId) {
	if (!provider?.api) throw new Error("registerApiProvider(): the provider needs an `api`");
	registry.set(provider.api, { ...provider, sourceId });
}

module.exports = {
	stream,
	streamSimple,
	complete,
	completeSimple,
	...apiFactories,
	...perApi,
	registerApiProvider,
	getApiProvider: (api) => registry.get(api),
	getApiProviders: () => [...registry.values()],
	unregisterApiProviders: (sourceId) => {
		for (const [api, p] of registry) if (p.sourceId === sourceId) registry.delete(api);
	},
	resetApiProviders: () => registry.clear(),
	registerBuiltInApiProviders: () => {},
	lazyApi: (api) => builtinApi(api)(),
	lazyStream: (api) => (model, context, options) => viaPiRpc(model, context, options, api),
	viaPiRpc,
	viaRegistry,
};
