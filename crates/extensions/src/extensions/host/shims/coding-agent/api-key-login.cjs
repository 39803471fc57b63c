// pi-rpc extension host: the questions of an API-key login
// (`ModelRuntime.login(provider, "api_key", interaction)`) as pi 1.6.0 asks
// them, and the credential it stores. Most providers ask for their key
// alone (a `secret` prompt naming the provider's key). Four built-in
// providers ask more, in pi's order: Amazon Bedrock and Google Vertex AI
// first ask how to sign in (a `select`), then a token, a profile or the
// project, location and credentials file (with a note and its link);
// Cloudflare's providers ask the account ID (and the AI Gateway's ID) after
// the key. What they answer beside a key is kept in the credential's `env`,
// as pi keeps it in auth.json, where pi-rpc's requests read it too.

"use strict";

const { lib } = require("./text.cjs");

const AWS_CHAIN_DOCS = { label: "AWS credential provider chain", url: "https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html" };
const GOOGLE_ADC_DOCS = { label: "Application Default Credentials", url: "https://cloud.google.com/docs/authentication/provide-credentials-adc" };

/** One question to the caller; the login stops if it was cancelled meanwhile. */
async function ask(interaction, question) {
	interaction.signal?.throwIfAborted?.();
	const answer = await interaction.prompt(question);
	interaction.signal?.throwIfAborted?.();
	return answer;
}
const secret = (interaction, message) => ask(interaction, { type: "secret", message });
const text = (interaction, message) => ask(interaction, { type: "text", message });
const choose = (interaction, message, options) => ask(interaction, { type: "select", message, options: options.map(([id, label]) => ({ id, label })) });

/** Amazon Bedrock: a bearer token, an AWS profile, or the AWS credential chain as it is. */
async function amazonBedrock(interaction) {
	const method = await choose(interaction, "Select Amazon Bedrock authentication method:", [
		["bearer-token", "Bearer token"],
		["aws-profile", "AWS profile"],
		["credential-chain", "Existing AWS credential chain"],
	]);
	if (method === "bearer-token") return { type: "api_key", key: await secret(interaction, "Enter Amazon Bedrock bearer token") };
	interaction.notify?.({ type: "info", message: "Amazon Bedrock supports AWS profiles, IAM credentials, and role-based credentials.", links: [AWS_CHAIN_DOCS] });
	if (method === "aws-profile") return { type: "api_key", env: { AWS_PROFILE: await text(interaction, "Enter AWS profile name") } };
	if (method !== "credential-chain") throw new Error(`Unknown Amazon Bedrock auth method: ${method}`);
	await text(interaction, "Configure AWS credentials, then press Enter to continue");
	return { type: "api_key" };
}

/** Google Vertex AI: an API key, or a project and location with ADC or a service account's file. */
async function googleVertex(interaction) {
	const method = await choose(interaction, "Select Google Vertex AI authentication method:", [
		["api-key", "Google Cloud API key"],
		["adc", "Application Default Credentials"],
		["service-account", "Service account credentials file"],
	]);
	if (method === "api-key") return { type: "api_key", key: await secret(interaction, "Enter Google Cloud API key") };
	if (method !== "adc" && method !== "service-account") throw new Error(`Unknown Google Vertex AI auth method: ${method}`);
	const note =
		method === "adc"
			? "Run `gcloud auth application-default login`, then provide the project and location."
			: "Provide a service account credentials file, project, and location.";
	interaction.notify?.({ type: "info", message: note, links: [GOOGLE_ADC_DOCS] });
	const env = {
		GOOGLE_CLOUD_PROJECT: await text(interaction, "Enter Google Cloud project ID"),
		GOOGLE_CLOUD_LOCATION: await text(interaction, "Enter Google Cloud location"),
	};
	if (method === "service-account") env.GOOGLE_APPLICATION_CREDENTIALS = await text(interaction, "Enter service account credentials file path");
	return { type: "api_key", env };
}

/** Cloudflare: the key, then the account ID (and, for the AI Gateway, the gateway's ID). */
const cloudflare = (gateway) => async (interaction) => {
	const key = await secret(interaction, "Enter Cloudflare API key");
	const env = { CLOUDFLARE_ACCOUNT_ID: await text(interaction, "Enter Cloudflare account ID") };
	if (gateway) env.CLOUDFLARE_GATEWAY_ID = await text(interaction, "Enter Cloudflare AI Gateway ID");
	return { type: "api_key", key, env };
};

/** The built-in providers whose login asks more than the key. */
const MULTI_STEP = new Map([
	["amazon-bedrock", amazonBedrock],
	["google-vertex", googleVertex],
	["cloudflare-workers-ai", cloudflare(false)],
	["cloudflare-ai-gateway", cloudflare(true)],
]);

/** The credential `providerId`'s API-key login gets from the caller's `interaction`. */
async function apiKeyCredential(providerId, interaction) {
	const steps = MULTI_STEP.get(providerId);
	if (steps) return steps(interaction);
	// pi's question names a built-in provider's key ("Enter Groq API key"), a provider of models.json's or an extension's "API key".
	return { type: "api_key", key: await secret(interaction, lib("apiKeyLoginPrompt", providerId)) };
}

module.exports = { apiKeyCredential };
