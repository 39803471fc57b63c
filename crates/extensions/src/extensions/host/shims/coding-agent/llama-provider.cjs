// pi-rpc extension host: pi 1.6.0's own llama.cpp provider (its built-in
// `llama` extension registers it) as the session's model runtime gives it
// (`getProvider("llama.cpp")`, `getProviders()` after the built-in ones):
// pi's id and name, the default server's inference URL, an API-key auth
// whose login asks for the server and an optional key and lists the server
// (pi's questions and errors), whose `check` / `resolve` read the stored
// login's `env.LLAMA_BASE_URL`, else the variable; its models are pi-rpc's
// of the provider (the listed chat models, then the classifiers), a stored
// listing restored over them by `refreshModels`; its calls go through
// pi-rpc. pi-rpc lists a running server itself (crates/config's llama.rs),
// not through `refreshModels` (compat/DEVIATIONS.md).

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

/** The server's model list (`GET /models`), with pi's errors: unreachable, refused, not a router. */
async function listServer(serverUrl, apiKey, signal) {
	const headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
	const limit = AbortSignal.timeout(15_000);
	const combined = signal ? AbortSignal.any([signal, limit]) : limit;
	let response;
	try {
		response = await fetch(`${serverUrl}/models`, { headers, signal: combined });
	} catch (error) {
		if (signal?.aborted) throw error;
		const cause = error?.cause;
		const detail = cause instanceof Error && cause.message ? cause.message : typeof cause?.code === "string" ? cause.code : (error?.message ?? String(error));
		throw new Error(`Could not reach llama.cpp server at ${serverUrl}: ${detail}`, { cause: error });
	}
	const payload = await response.json().catch(() => undefined);
	if (!response.ok) throw new Error(answerError(payload, `llama.cpp returned HTTP ${response.status}`));
	if (!payload || typeof payload !== "object" || !Array.isArray(payload.data)) throw new Error("llama.cpp returned an invalid model catalog");
	if (!payload.data.every((m) => m && typeof m === "object" && typeof m.id === "string" && typeof m.status?.value === "string")) {
		throw new Error("Server is not running in llama.cpp router mode");
	}
	return payload.data;
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
			if (!context.stored) return;
			const stored = context.stored.models.filter((model) => model.provider === LLAMA_PROVIDER_ID);
			const listed = {
				chat: stored.filter((model) => (model.type ?? "chat") === "chat" && model.api === "openai-completions"),
				classifiers: stored.filter((model) => model.type === "classifier" && CLASSIFIER_APIS.has(model.api)),
			};
			await context.publish({ update: () => (restored = listed) });
		},
		stream: call,
		streamSimple: call,
		classify: (model, context, options) => source.calls.classify(model, context, options),
	};
}

module.exports = { llamaProvider, LLAMA_PROVIDER_ID };
