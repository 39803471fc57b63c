// pi-rpc extension host: an OAuth login run by pi-rpc's own flow of the
// provider (the `models` request `login`, answered by the agent's OAuth
// flows), its events given to the caller's `interaction.notify` and its
// questions to `interaction.prompt`, as pi-ai's `OAuthAuth.login` asks its
// callbacks. The flow writes the credential into an `auth.json`: the
// runtime's own, or one of its own for a login whose credential goes
// elsewhere (a caller's credential store, a provider object's `login`).
// `refreshOAuthCredential` refreshes a credential with the provider's flow.

"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { services } = require("../host-services.cjs");

let loginCount = 0;

/** Run `providerId`'s OAuth login, its credential stored in `authPath`; the credential. */
async function oauthLoginInto(authPath, providerId, interaction) {
	const host = services();
	const id = `login-${++loginCount}`;
	host.logins.set(id, async ({ event, prompt }) => {
		if (event) {
			interaction?.notify?.(event);
			return null;
		}
		if (typeof interaction?.prompt !== "function") throw new Error(`The OAuth login of ${providerId} asks a question and was given no prompt`);
		return interaction.prompt({ ...prompt, ...(interaction.signal ? { signal: interaction.signal } : {}) });
	});
	const answer = host.channel.request("models", { op: "login", args: [providerId, authPath, id] });
	// `interaction.signal` withdraws the request: pi-rpc cancels the login.
	const requestId = host.channel.lastRequestId();
	const signal = interaction?.signal;
	const onAbort = () => host.channel.send({ type: "cancel", id: requestId });
	if (signal?.aborted) onAbort();
	else signal?.addEventListener?.("abort", onAbort, { once: true });
	try {
		return (await answer)?.value;
	} finally {
		signal?.removeEventListener?.("abort", onAbort);
		host.logins.delete(id);
	}
}

/** Run `providerId`'s OAuth login into an `auth.json` of its own; the credential (nothing is kept). */
async function oauthCredential(providerId, interaction) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-login-"));
	try {
		return await oauthLoginInto(path.join(dir, "auth.json"), providerId, interaction);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

/** `credential` refreshed now by `providerId`'s OAuth flow (pi-ai's `OAuthAuth.refresh`). */
async function refreshOAuthCredential(providerId, credential, signal) {
	signal?.throwIfAborted?.();
	// Told it expired, pi-rpc's refresh asks the provider for a new token whatever the credential says.
	const due = { ...(credential ?? {}), type: "oauth", expires: 0 };
	const answer = await services().channel.request("lib", { fn: "modelStore", args: [{ credentials: {} }, "refreshOAuth", providerId, due] });
	const refreshed = answer?.value;
	if (!refreshed) throw new Error(`OAuth refresh failed for ${providerId}`);
	return refreshed;
}

module.exports = { oauthLoginInto, oauthCredential, refreshOAuthCredential };
