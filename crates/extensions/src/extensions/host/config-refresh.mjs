// pi-rpc extension host: a config form's `refreshModels`
// (`pi.registerProvider(name, {…, refreshModels})`) as pi 1.6.0's composed
// provider runs it. pi's model runtime refreshes the provider like a native
// one (provider-refresh.mjs): without the network once registered (the
// stored credential, the provider's entry of `models-store.json`), then,
// in RPC mode, with the network and the credential its key resolves to.
// The models it returns replace the registration's (`config.models`) once
// published; `undefined` leaves them.

import { execSync } from "node:child_process";

/** A `$VAR` / `${VAR}` template filled from the environment (unset: undefined). */
function template(value) {
	let unset = false;
	const filled = value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, braced, bare) => {
		const found = process.env[braced ?? bare];
		if (found === undefined) unset = true;
		return found ?? "";
	});
	return unset ? undefined : filled;
}

/** A `!command` key: the command's trimmed output (none when it fails or prints nothing). */
function commandKey(command) {
	try {
		const output = execSync(command, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 10_000 }).trim();
		return output || undefined;
	} catch {
		return undefined;
	}
}

/** The key the config's `apiKey` gives: a literal, an environment template, or a `!command`'s output. */
function configKey(apiKey) {
	if (typeof apiKey !== "string" || !apiKey) return undefined;
	if (apiKey.startsWith("!")) return commandKey(apiKey.slice(1));
	return apiKey.includes("$") ? template(apiKey) : apiKey;
}

/**
 * A pi-ai provider over the config form `entry` for its model refresh:
 * `auth.apiKey.resolve` gives the stored key, else the config's; its
 * `refreshModels` asks the config's and publishes the answer into
 * `entry.config.models`.
 */
export function configRefreshProvider(entry) {
	const config = entry.config;
	return {
		id: entry.name,
		baseUrl: config.baseUrl,
		auth: {
			apiKey: {
				resolve: async ({ credential } = {}) => {
					const key = credential?.type === "api_key" && credential.key ? credential.key : configKey(config.apiKey);
					return key ? { auth: { apiKey: key } } : undefined;
				},
			},
		},
		getModels: () => entry.config.models,
		async refreshModels(context) {
			const models = await config.refreshModels(context);
			if (context.signal?.aborted) return;
			await context.publish({
				update: () => {
					if (Array.isArray(models)) entry.config = { ...entry.config, models };
				},
			});
		},
	};
}
