// pi-rpc extension host: a built-in provider's object as pi 1.6.0's model
// runtime gives it (`getProvider(id)`, `getProviders()`): pi-ai's provider
// (its id, pi-ai's name and base URL, `headers`, its API-key and OAuth auth
// from builtin-auth.cjs, its calls, `filterModels` / `filterAllModels`,
// `generateImages` / `classify` where pi-ai has them) wrapped as pi's
// runtime wraps it: a remote catalog restored from the store and refreshed
// from pi's catalog server (`refreshModels`, `refreshModelsAuth:
// "configured"`), OpenRouter's narrowed to the user's key instead, Radius
// as pi-ai makes it. Its models are pi-rpc's catalog of the provider (chat,
// then image, then classifier models), a restored catalog laid over them;
// its calls go through pi-rpc. A provider `models.json` or an extension
// configures is not made here (see registered-provider.cjs).

"use strict";

const { apiKeyAuth, oauthAuth } = require("./builtin-auth.cjs");
const { viaPiRpc } = require("../ai/calls.cjs");
const { AssistantMessageEventStream } = require("../ai/stream.cjs");
const { refreshProvider, refreshPersonalized, mergeModels, BUILTIN_GENERATED_AT, DEFAULT_CATALOG_BASE_URL } = require("./catalog-store.cjs");

const key = (name, ...vars) => ({ name, vars });
const oauth = (name, more = {}) => ({ name, ...more });
const SUBSCRIPTION = { isSubscription: true };

/**
 * pi-ai 1.6.0's built-in providers in its order: id, name, base URL, API-key
 * auth, OAuth auth, what else it has (`byModel`: an API for each API of its
 * catalog, the others one API for all their models).
 */
const PROVIDERS = [
	["amazon-bedrock", "Amazon Bedrock", undefined, key("AWS credentials or bearer token")],
	["ant-ling", "Ant Ling", "https://api.ant-ling.com/v1", key("Ant Ling API key", "ANT_LING_API_KEY")],
	["anthropic", "Anthropic", "https://api.anthropic.com", key("Anthropic API key"), oauth("Anthropic (Claude Pro/Max)", SUBSCRIPTION)],
	["azure", "Azure", undefined, key("Azure OpenAI API key", "AZURE_OPENAI_API_KEY"), undefined, { byModel: true }],
	["baseten", "Baseten", "https://inference.baseten.co/v1", key("Baseten API key", "BASETEN_API_KEY")],
	["cerebras", "Cerebras", "https://api.cerebras.ai/v1", key("Cerebras API key", "CEREBRAS_API_KEY")],
	["cloudflare-ai-gateway", "Cloudflare AI Gateway", undefined, key("Cloudflare API key"), undefined, { byModel: true }],
	["cloudflare-workers-ai", "Cloudflare Workers AI", undefined, key("Cloudflare API key"), undefined, { classify: true }],
	["deepseek", "DeepSeek", "https://api.deepseek.com", key("DeepSeek API key", "DEEPSEEK_API_KEY")],
	["fireworks", "Fireworks", "https://api.fireworks.ai/inference", key("Fireworks API key", "FIREWORKS_API_KEY"), undefined, { byModel: true }],
	[
		"github-copilot",
		"GitHub Copilot",
		"https://api.individual.githubcopilot.com",
		key("GitHub Copilot token", "COPILOT_GITHUB_TOKEN"),
		oauth("GitHub Copilot", SUBSCRIPTION),
		{ filterModels: "account", classify: true, byModel: true },
	],
	["google", "Google", "https://generativelanguage.googleapis.com/v1beta", key("Gemini API key", "GEMINI_API_KEY")],
	["google-vertex", "Google Vertex AI", undefined, key("Google Cloud credentials")],
	["groq", "Groq", "https://api.groq.com/openai/v1", key("Groq API key", "GROQ_API_KEY")],
	["huggingface", "Hugging Face", "https://router.huggingface.co/v1", key("Hugging Face token", "HF_TOKEN")],
	["kimi-coding", "Kimi For Coding", "https://api.kimi.com/coding/v1", key("Kimi API key", "KIMI_API_KEY"), oauth("Kimi Code (subscription)", { ...SUBSCRIPTION, loginLabel: "Sign in with Kimi Code" })],
	["meta", "Meta", "https://api.meta.ai/v1", key("Meta Model API key", "META_API_KEY"), oauth("Meta (Muse subscription)", { ...SUBSCRIPTION, loginLabel: "Sign in with Meta" })],
	["minimax", "MiniMax", "https://api.minimax.io/anthropic", key("MiniMax API key", "MINIMAX_API_KEY")],
	["minimax-cn", "MiniMax CN", "https://api.minimaxi.com/anthropic", key("MiniMax CN API key", "MINIMAX_CN_API_KEY")],
	["mistral", "Mistral", "https://api.mistral.ai", key("Mistral API key", "MISTRAL_API_KEY")],
	["moonshotai", "Moonshot AI", "https://api.moonshot.ai/v1", key("Moonshot AI API key", "MOONSHOT_API_KEY")],
	["moonshotai-cn", "Moonshot AI CN", "https://api.moonshot.cn/v1", key("Moonshot AI API key", "MOONSHOT_API_KEY")],
	["nvidia", "NVIDIA", "https://integrate.api.nvidia.com/v1", key("NVIDIA API key", "NVIDIA_API_KEY")],
	[
		"openai",
		"OpenAI",
		"https://api.openai.com/v1",
		key("OpenAI API key", "OPENAI_API_KEY"),
		oauth("OpenAI (ChatGPT subscription)", { ...SUBSCRIPTION, loginLabel: "Sign in with ChatGPT" }),
		{ filterAllModels: "subscription", classify: true },
	],
	["openai-codex", "OpenAI Codex", "https://chatgpt.com/backend-api", undefined, oauth("OpenAI (ChatGPT Plus/Pro)", SUBSCRIPTION)],
	["opencode", "OpenCode Zen", undefined, key("OpenCode API key", "OPENCODE_API_KEY"), undefined, { classify: true, byModel: true }],
	["opencode-go", "OpenCode Go", undefined, key("OpenCode API key", "OPENCODE_API_KEY"), undefined, { byModel: true }],
	[
		"openrouter",
		"OpenRouter",
		"https://openrouter.ai/api/v1",
		key("OpenRouter API key", "OPENROUTER_API_KEY"),
		oauth("OpenRouter OAuth", { loginLabel: "Sign in with OpenRouter" }),
		{ images: true, classify: true, catalog: "personal", byModel: true },
	],
	["qwen-token-plan", "Qwen Token Plan Team", "https://token-plan.maas.qwencloudapi.com/compatible-mode/v1", key("Qwen Token Plan Team API key", "QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY")],
	["qwen-token-plan-cn", "Qwen Token Plan Team CN", "https://token-plan.maas.qianwenaiapi.com/compatible-mode/v1", key("Qwen Token Plan Team CN API key", "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY")],
	["qwen-token-plan-individual", "Qwen Token Plan Individual", "https://token-plan.maas.qwencloudapi.com/compatible-mode/v1", key("Qwen Token Plan Individual API key", "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY", "QWEN_TOKEN_PLAN_API_KEY")],
	["qwen-token-plan-individual-cn", "Qwen Token Plan Individual CN", "https://token-plan.maas.qianwenaiapi.com/compatible-mode/v1", key("Qwen Token Plan Individual CN API key", "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY")],
	["radius", "Radius", undefined, key("Radius API key", "RADIUS_API_KEY"), oauth("Radius"), { catalog: "radius" }],
	["together", "Together", "https://api.together.ai/v1", key("Together API key", "TOGETHER_API_KEY")],
	["typesafe", "TypeSafe", undefined, key("TypeSafe API key", "TYPESAFE_API_KEY"), undefined, { classify: true, byModel: true }],
	["vercel-ai-gateway", "Vercel AI Gateway", "https://ai-gateway.vercel.sh", key("Vercel AI Gateway API key", "AI_GATEWAY_API_KEY"), undefined, { classify: true }],
	["xai", "xAI", "https://api.x.ai/v1", key("xAI API key", "XAI_API_KEY"), oauth("xAI (Grok/X subscription)", { ...SUBSCRIPTION, loginLabel: "Sign in with SuperGrok or X Premium" })],
	["xiaomi", "Xiaomi", "https://api.xiaomimimo.com/v1", key("Xiaomi API key", "XIAOMI_API_KEY")],
	["xiaomi-token-plan-ams", "Xiaomi Token Plan AMS", "https://token-plan-ams.xiaomimimo.com/v1", key("Xiaomi Token Plan AMS API key", "XIAOMI_TOKEN_PLAN_AMS_API_KEY")],
	["xiaomi-token-plan-cn", "Xiaomi Token Plan CN", "https://token-plan-cn.xiaomimimo.com/v1", key("Xiaomi Token Plan CN API key", "XIAOMI_TOKEN_PLAN_CN_API_KEY")],
	["xiaomi-token-plan-sgp", "Xiaomi Token Plan SGP", "https://token-plan-sgp.xiaomimimo.com/v1", key("Xiaomi Token Plan SGP API key", "XIAOMI_TOKEN_PLAN_SGP_API_KEY")],
	["zai", "Z.AI", "https://api.z.ai/api/coding/paas/v4", key("Z.AI API key", "ZAI_API_KEY")],
	["zai-coding-cn", "Z.AI Coding CN", "https://open.bigmodel.cn/api/coding/paas/v4", key("Z.AI Coding CN API key", "ZAI_CODING_CN_API_KEY")],
];

const FACTS = new Map(PROVIDERS.map(([id, name, baseUrl, apiKey, oauthFacts, more = {}]) => [id, { name, baseUrl, apiKey, oauth: oauthFacts, ...more }]));

const isChat = (model) => (model.type ?? "chat") === "chat";

/** GitHub Copilot: an OAuth login's `availableModelIds` (a list of strings) narrows the models. */
function accountModels(models, credential) {
	if (credential?.type !== "oauth") return models;
	const ids = credential.availableModelIds;
	if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) return models;
	const available = new Set(ids);
	return models.filter((model) => available.has(model.id));
}

/** OpenAI: a ChatGPT login reaches no classifier. */
const subscriptionModels = (models, credential) => (credential?.type === "oauth" ? models.filter((model) => (model.type ?? "chat") !== "classifier") : models);

/** A stored catalog entry's models of provider `id` when it is newer than pi's model data (none otherwise). */
const newerModels = (id, entry) => (entry && entry.lastModified !== undefined && entry.lastModified > BUILTIN_GENERATED_AT ? entry.models.filter((m) => m.provider === id) : []);

/**
 * A catalog store over a `refreshModels` context: it reads the context's
 * stored entry and publishes what is written (`persist`), with `update`
 * (`onUpdate(entry)`) when the entry brings models of its own.
 */
function contextStore(context, onUpdate) {
	return {
		read: async () => context.stored,
		write: async (_id, entry) => {
			const fresh = entry.models !== context.stored?.models;
			await context.publish(fresh ? { persist: entry, update: () => onUpdate(entry) } : { persist: entry });
		},
	};
}

/** A call that ends at once with pi's error result (`message`). */
function failedStream(model, message, signal) {
	const out = new AssistantMessageEventStream();
	const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
	const reason = signal?.aborted ? "aborted" : "error";
	const error = { role: "assistant", content: [], api: model?.api, provider: model?.provider, model: model?.id, usage: zero, stopReason: reason, errorMessage: message, timestamp: Date.now() };
	queueMicrotask(() => {
		out.push({ type: "error", reason, error });
		out.end(error);
	});
	return out;
}

/** Whether `id` is one of pi-ai's built-in providers. */
const isBuiltinProvider = (id) => FACTS.has(id);

/**
 * pi's object of built-in provider `id` (undefined for another id): its
 * models from `source.chat()` and `source.typed(type)`, its classifier and
 * image calls `source.calls` (`classify`, `generateImages`).
 */
function builtinProvider(id, source) {
	const facts = FACTS.get(id);
	if (!facts) return undefined;
	const auth = { ...(facts.apiKey ? { apiKey: apiKeyAuth(id, facts.apiKey) } : {}), ...(facts.oauth ? { oauth: oauthAuth(id, facts.oauth) } : {}) };
	const { calls } = source;
	// A call as the provider makes it (its API's, with the options as given; no credentials looked up).
	const call = (model, context, options) => {
		const apis = new Set(source.chat().map((m) => m.api));
		const api = facts.byModel ? (apis.has(model?.api) ? model.api : undefined) : (source.chat()[0]?.api ?? model?.api);
		if (!api) return failedStream(model, `Provider ${id} has no API implementation for "${model?.api}"`, options?.signal);
		return viaPiRpc(model, context, options ?? {}, api);
	};
	const stream = call;
	const streamSimple = call;
	if (facts.catalog === "radius") return radiusProvider(id, facts, auth, source, { stream, streamSimple });
	const baseline = () => [...source.chat(), ...source.typed("image"), ...source.typed("classifier")];
	// The catalog server of the runtime's `catalogBaseUrl`, else pi.dev.
	const catalogBaseUrl = source.catalogBaseUrl ?? DEFAULT_CATALOG_BASE_URL;
	let dynamic = [];
	let getModels = () => mergeModels(source.chat(), dynamic.filter(isChat));
	let getAllModels = () => mergeModels(baseline(), dynamic);
	let refreshModels = async (context) => {
		const restored = newerModels(id, context.stored);
		if (!(await context.publish({ update: () => (dynamic = restored) }))) return;
		if (!context.allowNetwork || context.signal?.aborted) return;
		const store = contextStore(context, (entry) => (dynamic = newerModels(id, entry)));
		await refreshProvider(id, store, { baseUrl: catalogBaseUrl, signal: context.signal, force: context.force });
	};
	if (facts.catalog === "personal") {
		// The catalog narrowed to the user's key replaces the provider's models once stored, offline too.
		const all = () => (dynamic.length > 0 ? dynamic : baseline());
		getModels = () => all().filter(isChat);
		getAllModels = all;
		refreshModels = async (context) => {
			const restored = (context.stored?.models ?? []).filter((m) => m.provider === id);
			if (!(await context.publish({ update: () => (dynamic = restored) }))) return;
			if (!context.allowNetwork || context.signal?.aborted) return;
			const credential = context.credential;
			const key = credential?.type === "oauth" ? credential.access : credential?.key;
			const store = contextStore(context, (entry) => (dynamic = entry.models));
			await refreshPersonalized(id, store, { baseUrl: catalogBaseUrl, signal: context.signal, builtin: baseline(), key, providerBaseUrl: context.baseUrl });
		};
	}
	const provider = {
		id,
		name: facts.name,
		baseUrl: facts.baseUrl,
		headers: undefined,
		auth,
		getModels,
		getAllModels,
		refreshModels,
		filterModels: facts.filterModels === "account" ? accountModels : undefined,
		filterAllModels: facts.filterAllModels === "subscription" ? subscriptionModels : undefined,
		stream,
		streamSimple,
	};
	if (facts.images) provider.generateImages = (model, context, options) => calls.generateImages(model, context, options);
	if (facts.classify) provider.classify = (model, context, options) => calls.classify(model, context, options);
	// pi's catalog server answers without the provider's login (OpenRouter's narrowing needs it).
	if (facts.catalog !== "personal") provider.refreshModelsAuth = "configured";
	return provider;
}

const { refreshRadiusModels } = require("./radius-catalog.cjs");

/** Radius as pi-ai makes it: its gateway's catalog, once known, replaces the shipped one (radius-catalog.cjs). */
function radiusProvider(id, facts, auth, source, { stream, streamSimple }) {
	let dynamic;
	return {
		id,
		name: facts.name,
		auth,
		getModels: () => dynamic ?? source.chat(),
		refreshModels: (context) => refreshRadiusModels(id, context, (models) => (dynamic = models)),
		stream,
		streamSimple,
	};
}

module.exports = { builtinProvider, isBuiltinProvider };
