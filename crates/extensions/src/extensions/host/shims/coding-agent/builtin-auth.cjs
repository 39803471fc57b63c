// pi-rpc extension host: the auth of pi-ai 1.6.0's built-in providers, as
// their provider objects carry it (`provider.auth.apiKey`, `.oauth`). An
// API-key auth has its `name`, a `login` asking pi's questions
// (api-key-login.cjs) and a `resolve({ctx, credential, signal})` reading
// the stored credential first, then the variables of the auth context
// `ctx.env` in pi's order: most providers their key variables; Anthropic
// its bearer token, its key variables, then workload identity federation;
// Amazon Bedrock its bearer token, profile, access keys and role variables;
// Google Vertex AI its key, or application default credentials with a
// project and location; Cloudflare's key with the account (and gateway)
// IDs, the AI Gateway's as its `cf-aig-authorization` header. An OAuth
// auth has pi's name, `isSubscription` and `loginLabel`, a `login` run by
// pi-rpc's flow of the provider, `refresh` and `toAuth` (GitHub Copilot's
// base URL taken from its token, or its enterprise domain).

"use strict";

const { apiKeyCredential } = require("./api-key-login.cjs");
const { oauthCredential, refreshOAuthCredential } = require("./oauth-login.cjs");

const STORED = "stored credential";
const COPILOT_BASE_URL = "https://api.individual.githubcopilot.com";
const VERTEX_ADC_PATH = "~/.config/gcloud/application_default_credentials.json";

/** `ctx.env(name)` between two checks of `signal`. */
const envOf = (ctx, signal) => async (name) => {
	signal?.throwIfAborted?.();
	const value = await ctx.env(name);
	signal?.throwIfAborted?.();
	return value;
};

/** The stored key's answer, when the credential has a key. */
const storedKey = (credential) => (credential?.key ? { auth: { apiKey: credential.key }, env: credential.env, source: STORED } : undefined);

/** The key of the first of `vars` the context sets. */
const keyVars = (vars) => async ({ ctx, credential, signal }) => {
	signal?.throwIfAborted?.();
	const stored = storedKey(credential);
	if (stored) return stored;
	const env = envOf(ctx, signal);
	for (const name of vars) {
		const value = await env(name);
		if (value) return { auth: { apiKey: value }, source: name };
	}
	return undefined;
};

/** Anthropic: a bearer token, a key, or the three settings of workload identity federation (two more if set). */
async function anthropic({ ctx, credential, signal }) {
	signal?.throwIfAborted?.();
	const stored = storedKey(credential);
	if (stored) return stored;
	const env = envOf(ctx, signal);
	const token = await env("ANTHROPIC_AUTH_TOKEN");
	if (token) return { auth: { headers: { Authorization: `Bearer ${token}` } }, source: "ANTHROPIC_AUTH_TOKEN" };
	for (const name of ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]) {
		const value = await env(name);
		if (value) return { auth: { apiKey: value }, source: name };
	}
	const federation = {};
	for (const name of ["ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_ORGANIZATION_ID", "ANTHROPIC_IDENTITY_TOKEN_FILE"]) {
		const value = await env(name);
		if (!value) return undefined;
		federation[name] = value;
	}
	for (const name of ["ANTHROPIC_SERVICE_ACCOUNT_ID", "ANTHROPIC_WORKSPACE_ID"]) {
		const value = await env(name);
		if (value) federation[name] = value;
	}
	return { auth: {}, env: federation, source: "workload identity federation" };
}

/** Amazon Bedrock: a stored token or profile, else the AWS variables the SDK's credential chain reads. */
async function amazonBedrock({ ctx, credential, signal }) {
	const env = envOf(ctx, signal);
	const stored = storedKey(credential);
	if (stored) return stored;
	if (await env("AWS_BEARER_TOKEN_BEDROCK")) return { auth: {}, source: "AWS_BEARER_TOKEN_BEDROCK" };
	if (credential?.env?.AWS_PROFILE ?? (await env("AWS_PROFILE"))) {
		return { auth: {}, env: credential?.env, source: credential?.env?.AWS_PROFILE ? STORED : "AWS_PROFILE" };
	}
	if ((await env("AWS_ACCESS_KEY_ID")) && (await env("AWS_SECRET_ACCESS_KEY"))) return { auth: {}, source: "AWS access keys" };
	if (await env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) return { auth: {}, source: "ECS task role" };
	if (await env("AWS_CONTAINER_CREDENTIALS_FULL_URI")) return { auth: {}, source: "ECS task role" };
	if (await env("AWS_WEB_IDENTITY_TOKEN_FILE")) return { auth: {}, source: "web identity token" };
	return undefined;
}

/** Google Vertex AI: a key, or a credentials file with a project and a location. */
async function googleVertex({ ctx, credential, signal }) {
	const env = envOf(ctx, signal);
	const key = credential?.key ?? (await env("GOOGLE_CLOUD_API_KEY"));
	if (key) return { auth: { apiKey: key }, source: credential?.key ? STORED : "GOOGLE_CLOUD_API_KEY" };
	const file = credential?.env?.GOOGLE_APPLICATION_CREDENTIALS ?? (await env("GOOGLE_APPLICATION_CREDENTIALS"));
	signal?.throwIfAborted?.();
	const exists = await ctx.fileExists(file ?? VERTEX_ADC_PATH);
	signal?.throwIfAborted?.();
	const project = credential?.env?.GOOGLE_CLOUD_PROJECT ?? (await env("GOOGLE_CLOUD_PROJECT")) ?? (await env("GCLOUD_PROJECT"));
	const location = credential?.env?.GOOGLE_CLOUD_LOCATION ?? (await env("GOOGLE_CLOUD_LOCATION"));
	if (exists && project && location) return { auth: {}, env: credential?.env, source: credential ? STORED : "gcloud application default credentials" };
	return undefined;
}

/** Cloudflare: the key, the account ID (and the gateway's), each from the credential, else the context. */
const cloudflare = (gateway) => async ({ ctx, credential, signal }) => {
	const env = envOf(ctx, signal);
	const value = async (name) => {
		const own = credential ? (name === "CLOUDFLARE_API_KEY" ? credential.key : credential.env?.[name]) : undefined;
		return own !== undefined ? own : env(name);
	};
	const apiKey = await value("CLOUDFLARE_API_KEY");
	const accountId = await value("CLOUDFLARE_ACCOUNT_ID");
	const gatewayId = gateway ? await value("CLOUDFLARE_GATEWAY_ID") : undefined;
	if (!apiKey || !accountId || (gateway && !gatewayId)) return undefined;
	const ids = { CLOUDFLARE_ACCOUNT_ID: accountId, ...(gatewayId ? { CLOUDFLARE_GATEWAY_ID: gatewayId } : {}) };
	const source = credential ? STORED : "CLOUDFLARE_API_KEY";
	if (!gateway) return { auth: { apiKey }, env: ids, source };
	return { auth: { headers: { "cf-aig-authorization": `Bearer ${apiKey}`, Authorization: null, "x-api-key": null } }, env: ids, source };
};

/** The providers whose key is not simply one of their variables. */
const RESOLVERS = new Map([
	["anthropic", anthropic],
	["amazon-bedrock", amazonBedrock],
	["google-vertex", googleVertex],
	["cloudflare-workers-ai", cloudflare(false)],
	["cloudflare-ai-gateway", cloudflare(true)],
]);

/** pi-ai's `ApiKeyAuth` of built-in provider `id` (`key`: `{name, vars}`). */
function apiKeyAuth(id, key) {
	return {
		name: key.name,
		login: async (interaction) => apiKeyCredential(id, interaction),
		resolve: RESOLVERS.get(id) ?? keyVars(key.vars ?? []),
	};
}

/** What a login's credential authorizes: its access token (Kimi's as a bearer header, Copilot's with its endpoint). */
function toAuth(id, credential) {
	if (id === "kimi-coding") return { headers: { Authorization: `Bearer ${credential.access}` } };
	if (id !== "github-copilot") return { apiKey: credential.access };
	const proxy = typeof credential.access === "string" ? credential.access.match(/proxy-ep=([^;]+)/)?.[1] : undefined;
	const domain = typeof credential.enterpriseUrl === "string" && credential.enterpriseUrl ? enterpriseDomain(credential.enterpriseUrl) : undefined;
	const baseUrl = proxy ? `https://${proxy.replace(/^proxy\./, "api.")}` : domain ? `https://copilot-api.${domain}` : COPILOT_BASE_URL;
	return { apiKey: credential.access, baseUrl };
}

/** A GitHub Enterprise URL's host (a bare domain as it is). */
function enterpriseDomain(value) {
	const trimmed = value.trim();
	if (!trimmed) return undefined;
	try {
		return new URL(trimmed.includes("://") ? trimmed : `https://${trimmed}`).hostname || undefined;
	} catch {
		return undefined;
	}
}

/** pi-ai's `OAuthAuth` of built-in provider `id` (`facts`: `{name, isSubscription?, loginLabel?}`). */
function oauthAuth(id, facts) {
	return {
		name: facts.name,
		isSubscription: facts.isSubscription,
		loginLabel: facts.loginLabel,
		login: async (interaction) => oauthCredential(id, interaction),
		refresh: async (credential, signal) => refreshOAuthCredential(id, credential, signal),
		toAuth: async (credential) => toAuth(id, credential),
	};
}

module.exports = { apiKeyAuth, oauthAuth };
