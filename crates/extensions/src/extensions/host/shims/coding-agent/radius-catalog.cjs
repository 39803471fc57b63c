// pi-rpc extension host: the built-in Radius provider's `refreshModels` as
// pi-ai 1.6.0 runs it. Radius's catalog is its gateway's, per account (an
// organisation can switch models off), so once known it replaces the
// shipped models rather than joining them:
// - offline, a stored entry's models are the provider's; without one, a
//   Radius OAuth login that still carries the gateway configuration an
//   older pi kept in it (`gatewayConfig`) is imported (stored, and made
//   the provider's models);
// - with the network, the gateway (`https://radius.pi.dev`) is asked for
//   its configuration (`GET /v1/config`, the key or login as a bearer
//   token), and its models (on pi's messages API at the gateway's base URL)
//   are stored and become the provider's; a failed or malformed answer is
//   an error with pi-ai's words.

"use strict";

/** The gateway pi-ai's built-in Radius provider signs in to and asks. */
const RADIUS_GATEWAY = "https://radius.pi.dev";
/** How much of a failed answer's body an error quotes. */
const ERROR_BODY_LIMIT = 512;

/** Whether `value` is a model entry of a gateway configuration (the fields pi-ai requires). */
function isGatewayModel(value) {
	if (!value || typeof value !== "object" || Array.isArray(value)) return false;
	const { id, name, reasoning, input, cost, contextWindow, maxTokens } = value;
	return (
		typeof id === "string" &&
		typeof name === "string" &&
		typeof reasoning === "boolean" &&
		Array.isArray(input) &&
		!!cost &&
		typeof cost === "object" &&
		!Array.isArray(cost) &&
		typeof contextWindow === "number" &&
		typeof maxTokens === "number"
	);
}

/** A gateway configuration `{baseUrl, models}` with its well-formed models only; undefined when it is not one. */
function gatewayConfig(value) {
	if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
	if (typeof value.baseUrl !== "string" || !Array.isArray(value.models)) return undefined;
	return { baseUrl: value.baseUrl, models: value.models.filter(isGatewayModel).map((model) => ({ ...model })) };
}

/** The provider's models of a gateway configuration: pi's messages API at the gateway's base URL. */
const configModels = (providerId, config) =>
	config.models.map((model) => ({ ...model, api: "pi-messages", provider: providerId, baseUrl: config.baseUrl }));

/** A failed answer's body as an error quotes it: trimmed, cut with an ellipsis past the limit. */
function quotedBody(text) {
	const trimmed = text.trim();
	return trimmed.length > ERROR_BODY_LIMIT ? `${[...trimmed].slice(0, ERROR_BODY_LIMIT).join("")}…` : trimmed;
}

/** The gateway's configuration for `apiKey` (none: asked without a token). */
async function fetchGatewayConfig(apiKey, signal) {
	const headers = { accept: "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
	const response = await fetch(new URL("/v1/config", RADIUS_GATEWAY), { headers, signal });
	if (!response.ok) {
		throw new Error(`Could not load Radius config from ${RADIUS_GATEWAY}: ${response.status}: ${quotedBody(await response.text())}`);
	}
	const config = gatewayConfig(await response.json());
	if (!config) throw new Error(`Invalid Radius config from ${RADIUS_GATEWAY}`);
	return config;
}

/**
 * One `refreshModels(context)` of Radius provider `providerId`; `setModels`
 * makes a catalog the provider's (inside the publication's `update`, so a
 * refresh overtaken by a newer one changes nothing).
 */
async function refreshRadiusModels(providerId, context, setModels) {
	const { stored, credential, signal } = context;
	if (stored) {
		const restored = (stored.models ?? []).filter((model) => model.provider === providerId);
		if (!(await context.publish({ update: () => setModels(restored) }))) return;
	}
	if (!stored && credential?.type === "oauth") {
		const kept = gatewayConfig(credential.gatewayConfig);
		const imported = kept ? configModels(providerId, kept) : [];
		if (imported.length > 0) {
			const publication = { persist: { models: imported, checkedAt: Date.now() }, update: () => setModels(imported) };
			if (!(await context.publish(publication))) return;
		}
	}
	if (!context.allowNetwork || signal?.aborted) return;
	const apiKey = credential?.type === "oauth" ? credential.access : credential?.key;
	const config = await fetchGatewayConfig(apiKey, signal);
	if (signal?.aborted) return;
	const fetched = configModels(providerId, config);
	await context.publish({ persist: { models: fetched, checkedAt: Date.now() }, update: () => setModels(fetched) });
}

module.exports = { refreshRadiusModels };
