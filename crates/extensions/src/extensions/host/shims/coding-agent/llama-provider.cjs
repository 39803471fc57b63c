// pi-rpc extension host: pi 1.6.0's own llama.cpp provider (its built-in
// `llama` extension registers it) as the session's model runtime gives it
// (`getProvider("llama.cpp")`, `getProviders()` after the built-in ones):
// pi's id and name, the default server's inference URL, an API-key auth
// whose login asks for the server and an optional key and lists the server
// (pi's questions and errors), whose `check` / `resolve` read the stored
// login's `env.LLAMA_BASE_URL`, else the variable; its models are pi-rpc's
// of the provider (the listed chat models, then the classifiers), a stored
// listing restored over them by `refreshModels`, which with the network
// lists the login's server again as pi's does (`GET /models`, `/props`, a
// loaded model's `/props`) and keeps that listing; its calls go through
// pi-rpc. pi-rpc's session lists a running server at start itself
// (crates/config's llama.rs).

"use strict";

const { viaPiRpc } = require("../ai/calls.cjs");

const LLAMA_PROVIDER_ID = "llama.cpp";
const DEFAULT_SERVER_URL = "http://127.0.0.1:9931";
const CLASSIFIER_APIS = new Set(["llama-cpp-classify", "typesafe-system-one"]);

/** A server URL as pi keeps it: http(s), no query, fragment, trailing slash or `/v1`. */
function normalizeServerUrl(value) {
	const url = new URL(value.trim());
	if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("Server URL must use http or https");
	url.hash = "";
	url.search = "";
	url.pathname = url.pathname.replace(/\/+$/u, "").replace(/\/v1$/u, "") || "/";
	return url.toString().replace(/\/$/u, "");
}

const inferenceUrl = (serverUrl) => `${normalizeServerUrl(serverUrl)}/v1`;

/** The server a stored login names (`env.LLAMA_BASE_URL`). */
function credentialServer(credential) {
	const value = credential?.env?.LLAMA_BASE_URL;
	return typeof value === "string" && value.trim() ? normalizeServerUrl(value) : undefined;
}

/** The server of the stored login, else of the context's `LLAMA_BASE_URL`. */
async function configuredServer(ctx, credential) {
	const configured = credentialServer(credential) ?? (await ctx.env("LLAMA_BASE_URL"))?.trim();
	return configured ? normalizeServerUrl(configured) : undefined;
}

/** The error message a failed answer carries (`{error: {message}}`), else `fallback`. */
const answerError = (payload, fallback) => {
	const message = payload?.error?.message;
	return typeof message === "string" && message ? message : fallback;
};

/**
 * One request to the server (`path` under its URL) with the key as a
 * bearer token, given up after 15 s; its JSON answer, or pi's errors:
 * unreachable (naming the cause), or the answer's `error.message` (else the HTTP status).
 */
async function askServer(serverUrl, apiKey, path, signal) {
	const headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
	const limit = AbortSignal.timeout(15_000);
	const combined = signal ? AbortSignal.any([signal, limit]) : limit;
	let response;
	try {
		response = await fetch(`${serverUrl}${path}`, { headers, signal: combined });
	} catch (error) {
		if (signal?.aborted) throw error;
		const cause = error?.cause;
		const detail = cause instanceof Error && cause.message ? cause.message : typeof cause?.code === "string" ? cause.code : (error?.message ?? String(error));
		throw new Error(`Could not reach llama.cpp server at ${serverUrl}: ${detail}`, { cause: error });
	}
	const payload = await response.json().catch(() => undefined);
	if (!response.ok) throw new Error(answerError(payload, `llama.cpp returned HTTP ${response.status}`));
	return payload;
}

/** The server's model list (`GET /models`), with pi's errors: unreachable, refused, not a router. */
async function listServer(serverUrl, apiKey, signal) {
	const payload = await askServer(serverUrl, apiKey, "/models", signal);
	if (!payload || typeof payload !== "object" || !Array.isArray(payload.data)) throw new Error("llama.cpp returned an invalid model catalog");
	if (!payload.data.every((m) => m && typeof m === "object" && typeof m.id === "string" && typeof m.status?.value === "string")) {
		throw new Error("Server is not running in llama.cpp router mode");
	}
	return payload.data;
}

/** The server's (or with `model`, that model's, not loading it) `GET /props`: `models_autoload`, `chat_template`. */
async function serverProps(serverUrl, apiKey, signal, model) {
	const query = model ? `?${new URLSearchParams({ model, autoload: "false" })}` : "";
	const payload = await askServer(serverUrl, apiKey, `/props${query}`, signal);
	const props = {};
	if (typeof payload?.models_autoload === "boolean") props.models_autoload = payload.models_autoload;
	if (typeof payload?.chat_template === "string") props.chat_template = payload.chat_template;
	return props;
}

/** Whether the router loads an unloaded preset on its first use (asked only when the list has one). */
async function autoloads(serverUrl, apiKey, catalog, signal) {
	if (!catalog.some((entry) => entry.status.value === "unloaded" && entry.source === "preset")) return false;
	return serverProps(serverUrl, apiKey, signal).then((props) => props.models_autoload === true, () => false);
}

/** Whether pi offers a listed model: loaded, asleep (woken by a request), or a preset the router can load. */
const usable = (entry, autoload) =>
	entry.status.value === "loaded" ||
	entry.status.value === "sleeping" ||
	(autoload && entry.status.value === "unloaded" && !entry.status.failed && entry.source === "preset");

/** The context a listed model runs with: its runtime's, its `--ctx-size`, the stored one, its training's, else 128000. */
function contextOf(entry, stored) {
	if (entry.meta?.n_ctx > 0) return entry.meta.n_ctx;
	const args = entry.status.args ?? [];
	for (let i = 0; i + 1 < args.length; i++) {
		if (!["--ctx-size", "-c", "-ctx"].includes(args[i])) continue;
		const size = Number(args[i + 1]);
		if (Number.isSafeInteger(size) && size > 0) return size;
	}
	if (stored > 0) return stored;
	return entry.meta?.n_ctx_train > 0 ? entry.meta.n_ctx_train : 128000;
}

const outputs = (entry) => entry.architecture?.output_modalities ?? [];
/** A native decision model (`decisions` among its outputs); chat only when it also writes text. */
const decides = (entry) => outputs(entry).includes("decisions");
const chats = (entry) => !decides(entry) || outputs(entry).includes("text");
const takesImages = (entry) => entry.architecture?.input_modalities?.includes("image") === true;
const FREE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** A listed model as pi's chat model of it (`props`: a loaded model's, its template telling thinking). */
function chatModel(entry, serverUrl, props, stored) {
	const contextWindow = contextOf(entry, stored);
	const thinks = props?.chat_template?.includes("enable_thinking") === true;
	const levels = { off: "off", minimal: null, low: null, medium: "medium", high: null, xhigh: null };
	return {
		id: entry.id,
		name: entry.id,
		api: "openai-completions",
		provider: LLAMA_PROVIDER_ID,
		baseUrl: inferenceUrl(serverUrl),
		reasoning: thinks,
		...(thinks && { thinkingLevelMap: levels }),
		input: takesImages(entry) ? ["text", "image"] : ["text"],
		cost: { ...FREE },
		contextWindow,
		maxTokens: contextWindow,
		compat: {
			supportsStore: false,
			supportsReasoningEffort: false,
			supportsUsageInStreaming: true,
			supportsStrictMode: false,
			maxTokensField: "max_tokens",
			...(thinks && { thinkingFormat: "qwen-chat-template" }),
		},
	};
}

/** A listed model as pi's classifier: System One for a decision model, else label probabilities. */
function classifierModel(entry, serverUrl, stored) {
	const decision = decides(entry);
	const images = decision && takesImages(entry);
	return {
		type: "classifier",
		id: entry.id,
		name: entry.id,
		api: decision ? "typesafe-system-one" : "llama-cpp-classify",
		provider: LLAMA_PROVIDER_ID,
		baseUrl: decision ? inferenceUrl(serverUrl) : serverUrl,
		input: images ? ["text", "image"] : ["text"],
		cost: { ...FREE },
		contextWindow: contextOf(entry, stored),
		...(images && { compat: { imageInput: "images", sendImageOptInHeader: false } }),
	};
}

/**
 * The server's listing as pi's provider makes it (`stored`: the context
 * windows of the stored listing, by id): its usable models as chat models
 * (a loaded one's template asked for) and all of them as classifiers;
 * `undefined` once `signal` aborted.
 */
async function listedModels(serverUrl, apiKey, stored, signal) {
	const catalog = await listServer(serverUrl, apiKey, signal);
	if (signal.aborted) return undefined;
	const autoload = await autoloads(serverUrl, apiKey, catalog, signal);
	if (signal.aborted) return undefined;
	const offered = catalog.filter((entry) => usable(entry, autoload));
	const chat = await Promise.all(
		offered.filter(chats).map(async (entry) => {
			const props = entry.status.value === "loaded" ? await serverProps(serverUrl, apiKey, signal, entry.id) : undefined;
			return chatModel(entry, serverUrl, props, stored.get(entry.id));
		}),
	);
	const classifiers = offered.map((entry) => classifierModel(entry, serverUrl, stored.get(entry.id)));
	return signal.aborted ? undefined : { chat, classifiers };
}

/** pi's API-key auth of llama.cpp: a server (and key) asked for and checked, or the configured one. */
const llamaAuth = {
	name: "llama.cpp server",
	login: async (interaction) => {
		const entered = await interaction.prompt({ type: "text", message: "llama.cpp server URL", placeholder: process.env.LLAMA_BASE_URL ?? DEFAULT_SERVER_URL });
		const serverUrl = normalizeServerUrl(entered.trim() || process.env.LLAMA_BASE_URL || DEFAULT_SERVER_URL);
		const apiKey = (await interaction.prompt({ type: "secret", message: "API key (optional)" })).trim();
		await listServer(serverUrl, apiKey || undefined, interaction.signal);
		return { type: "api_key", key: apiKey || undefined, env: { LLAMA_BASE_URL: serverUrl } };
	},
	check: async ({ ctx, credential }) => {
		const serverUrl = await configuredServer(ctx, credential);
		return serverUrl ? { type: "api_key", source: credential ? "stored credential" : "LLAMA_BASE_URL" } : undefined;
	},
	resolve: async ({ ctx, credential }) => {
		const serverUrl = await configuredServer(ctx, credential);
		if (!serverUrl) return undefined;
		const apiKey = credential?.key ?? (await ctx.env("LLAMA_API_KEY")) ?? "local";
		return {
			auth: { apiKey, baseUrl: inferenceUrl(serverUrl) },
			env: { ...credential?.env, LLAMA_BASE_URL: serverUrl },
			source: credential ? "stored credential" : "LLAMA_BASE_URL",
		};
	},
};

/**
 * pi's llama.cpp provider over `source` (`chat()`: pi-rpc's chat models of
 * the provider, `typed(type)`: its models of a type, `calls.classify`).
 */
function llamaProvider(source) {
	let restored;
	const chat = () => restored?.chat ?? source.chat();
	const classifiers = () => restored?.classifiers ?? source.typed("classifier");
	const call = (model, context, options) => viaPiRpc(model, context, options ?? {}, model?.api ?? "openai-completions");
	return {
		id: LLAMA_PROVIDER_ID,
		name: "llama.cpp",
		baseUrl: inferenceUrl(DEFAULT_SERVER_URL),
		auth: { apiKey: llamaAuth },
		getModels: chat,
		getAllModels: () => [...chat(), ...classifiers()],
		refreshModels: async (context) => {
			const windows = new Map();
			if (context.stored) {
				const stored = context.stored.models.filter((model) => model.provider === LLAMA_PROVIDER_ID);
				const listed = {
					chat: stored.filter((model) => (model.type ?? "chat") === "chat" && model.api === "openai-completions"),
					classifiers: stored.filter((model) => model.type === "classifier" && CLASSIFIER_APIS.has(model.api)),
				};
				for (const model of [...listed.chat, ...listed.classifiers]) windows.set(model.id, model.contextWindow);
				if (!(await context.publish({ update: () => (restored = listed) }))) return;
			}
			// With the network, a login's server is listed again and the listing kept (pi's `persist`).
			if (!context.allowNetwork || context.signal.aborted || context.credential?.type !== "api_key") return;
			const serverUrl = credentialServer(context.credential);
			if (!serverUrl) return;
			const listed = await listedModels(serverUrl, context.credential.key, windows, context.signal);
			if (!listed) return;
			await context.publish({
				persist: { models: [...listed.chat, ...listed.classifiers], checkedAt: Date.now() },
				update: () => (restored = listed),
			});
		},
		stream: call,
		streamSimple: call,
		classify: (model, context, options) => source.calls.classify(model, context, options),
	};
}

module.exports = { llamaProvider, LLAMA_PROVIDER_ID };
