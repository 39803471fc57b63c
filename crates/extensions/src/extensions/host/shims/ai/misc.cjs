// pi-rpc extension host: the rest of pi-ai: identity headers, retry and
// overflow rules, prompt-cache warming arithmetic, diagnostics, the faux
// provider's message builders, session resources. Image generation and
// Bedrock module injection belong to providers pi-rpc does not run in the
// host: they fail with a clear error.

"use strict";

const crypto = require("node:crypto");

const PI_AI_VERSION = "1.6.0";
const PI_ATTRIBUTION = { name: "pi", url: "https://pi.dev", categories: ["cli-agent"] };

function uuidv7() {
	const bytes = crypto.randomBytes(16);
	const ms = BigInt(Date.now());
	for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
	bytes[6] = (bytes[6] & 0x0f) | 0x70;
	bytes[8] = (bytes[8] & 0x3f) | 0x80;
	const hex = bytes.toString("hex");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function StringEnum(values, options = {}) {
	const { Type } = require("typebox");
	return Type.Unsafe({ ...options, type: "string", enum: [...values] });
}

const formatThrownValue = (value) => (value instanceof Error ? value.message : typeof value === "string" ? value : JSON.stringify(value));

const OVERFLOW = [
	/prompt is too long/i,
	/maximum context length/i,
	/context[ _-]?length[ _-]?exceeded/i,
	/too many tokens/i,
	/input is too long/i,
	/exceeds the context window/i,
	/request too large/i,
];

/** Whether a failed response says the context did not fit. */
function isContextOverflow(message, contextWindow) {
	if (message?.stopReason === "error" && OVERFLOW.some((p) => p.test(message.errorMessage ?? ""))) return true;
	const input = (message?.usage?.input ?? 0) + (message?.usage?.cacheRead ?? 0);
	return Boolean(contextWindow) && message?.stopReason === "stop" && input > contextWindow;
}

/** Whether an assistant error is worth another attempt (overloaded, rate limits, 5xx, network). */
function isRetryableAssistantError(message) {
	if (message?.stopReason !== "error") return false;
	return /overloaded|rate.?limit|too many requests|429|5\d\d|timeout|timed out|network|ECONNRESET|socket hang up|fetch failed|temporarily/i.test(
		message.errorMessage ?? "",
	);
}

const retryDelayMs = (attempt, baseDelayMs = 2000) => baseDelayMs * 2 ** Math.max(0, attempt - 1);

async function retryAssistantCall(call, options = {}) {
	const max = options.maxRetries ?? 3;
	for (let attempt = 0; ; attempt++) {
		const message = await call(attempt);
		if (attempt >= max || !isRetryableAssistantError(message) || options.signal?.aborted) return message;
		await new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt + 1, options.baseDelayMs)));
	}
}

const TTL = { short: 5 * 60 * 1000, long: 60 * 60 * 1000 };

module.exports = {
	PI_AI_VERSION,
	PI_ATTRIBUTION,
	// pi-ai describes its telemetry here; the host emits none, so it lists no span or metric (README-extensions.md, Imports).
	AI_TELEMETRY_SCHEMA: { version: 1, spans: {}, metrics: {} },
	DEFAULT_MAX_AGENT_RETRY_DELAY_MS: 60000,
	CACHE_WARMING_IDLE_CONTINUATION_PROBABILITY: 0.15,
	CACHE_WARMING_MAX_AGE_MS: 3600000,
	CACHE_WARMING_MAX_IDLE_AGE_MS: 1800000,
	CACHE_WARMING_MINIMUM_EXPECTED_SAVINGS: 0.05,
	ANTHROPIC_API_KEY_ENV: "ANTHROPIC_API_KEY",
	ANTHROPIC_AUTH_TOKEN_ENV: "ANTHROPIC_AUTH_TOKEN",
	ANTHROPIC_FEDERATION_RULE_ID_ENV: "ANTHROPIC_FEDERATION_RULE_ID",
	ANTHROPIC_IDENTITY_TOKEN_FILE_ENV: "ANTHROPIC_IDENTITY_TOKEN_FILE",
	ANTHROPIC_OAUTH_TOKEN_ENV: "ANTHROPIC_OAUTH_TOKEN",
	ANTHROPIC_ORGANIZATION_ID_ENV: "ANTHROPIC_ORGANIZATION_ID",
	ANTHROPIC_SERVICE_ACCOUNT_ID_ENV: "ANTHROPIC_SERVICE_ACCOUNT_ID",
	ANTHROPIC_WORKSPACE_ID_ENV: "ANTHROPIC_WORKSPACE_ID",
	uuidv7,
	StringEnum,
	formatThrownValue,
	getClientVersion: () => PI_AI_VERSION,
	formatUserAgent: (identity) => `${identity?.name ?? "pi"}/${identity?.version ?? PI_AI_VERSION}`,
	mergeClientIdentity: (...identities) => Object.assign({}, ...identities.filter(Boolean)),
	withClientIdentity: (options, identity) => ({ ...options, clientIdentity: identity }),
	getAttributionHeaders: () => ({}),
	getIdentityHeaders: () => ({}),
	getOpenCodeSessionHeaders: (sessionId) => (sessionId ? { "x-session-affinity": sessionId } : {}),
	getOverflowPatterns: () => [...OVERFLOW],
	isContextOverflow,
	isRecoverableLength: (message) => message?.stopReason === "length" && !message.content?.some((b) => b.type === "toolCall"),
	isRetryableAssistantError,
	retryDelayMs,
	retryAssistantCall,
	getPromptCacheTtlMs: (_model, retention) => (retention === "long" ? TTL.long : TTL.short),
	getCacheWarmingDelayMs: (ttlMs) => Math.max(0, ttlMs - 30000),
	getCacheWarmingRequestOptions: (options) => ({ ...options, maxTokens: 1 }),
	isCacheWarmingReplayable: () => false,
	evaluateCacheWarming: () => ({ action: "stop", warmCost: 0, missCost: 0, continuationProbability: 0 }),
	createAssistantMessageDiagnostic: (kind, message, details) => ({ kind, message, details, timestamp: Date.now() }),
	appendAssistantMessageDiagnostic: (message, diagnostic) => {
		message.diagnostics = [...(message.diagnostics ?? []), diagnostic];
		return message;
	},
	extractDiagnosticError: (message) => message?.errorMessage,
	fauxText: (text) => ({ type: "text", text }),
	fauxThinking: (thinking) => ({ type: "thinking", thinking }),
	fauxToolCall: (name, args = {}) => ({ type: "toolCall", id: `faux_${uuidv7()}`, name, arguments: args }),
	fauxAssistantMessage: (content) => ({ content: typeof content === "string" ? [{ type: "text", text: content }] : content, stopReason: "stop" }),
	fauxProvider: () => ({ api: "faux" }),
	createFauxCore: () => ({ api: "faux" }),
	registerFauxProvider: () => {},
	lazyOAuth: (load) => load,
	registerSessionResourceCleanup: (() => {
		const cleanups = new Set();
		const register = (fn) => {
			cleanups.add(fn);
			return () => cleanups.delete(fn);
		};
		register.cleanups = cleanups;
		return register;
	})(),
	cleanupSessionResources: async () => {},
	generateImages: async () => {
		throw new Error("image generation is not available in pi-rpc's extension host");
	},
	generateImagesOpenRouter: async () => {
		throw new Error("image generation is not available in pi-rpc's extension host");
	},
	getImageModel: () => undefined,
	getImageModels: () => [],
	getImageProviders: () => [],
	getImagesApiProvider: () => undefined,
	registerImagesApiProvider: () => {},
	registerBuiltInImagesApiProviders: () => {},
	setBedrockProviderLoader: () => {},
	setBedrockProviderModule: () => {},
};
