// Drives pi 1.6.0's own refresh of a stored OAuth login against auth.json:
// pi-coding-agent's AuthStorage (proper-lockfile on auth.json) and pi-ai's
// refreshStoredOAuthCredential with the provider's OAuth flow, exactly the
// code pi runs before a request. The provider endpoints are hard-coded in
// pi-ai; route_fetch.mjs sends them where PI_RPC_ORIGIN_OVERRIDES says (the same
// test hook pi-rpc honours). tests/e2e/oauth.rs runs it.
//
// Usage: node pi_refresh.mjs REFERENCE_DIR AUTH_JSON PROVIDER
// Prints {"access": …, "refresh": …} of the credential stored afterwards.

import { pathToFileURL } from "node:url";

const [referenceDir, authPath, provider] = process.argv.slice(2);
await import("./route_fetch.mjs");

const modules = `${referenceDir}/node_modules/@earendil-works`;
const load = (path) => import(pathToFileURL(`${modules}/${path}`).href);
const { AuthStorage } = await load("pi-coding-agent/dist/core/auth-storage.js");
const { refreshStoredOAuthCredential } = await load("pi-ai/dist/auth/resolve.js");
const flows = {
  anthropic: async () => (await load("pi-ai/dist/auth/oauth/anthropic.js")).anthropicOAuth,
  "openai-codex": async () => (await load("pi-ai/dist/auth/oauth/openai-codex.js")).openaiCodexOAuth,
};
const oauth = await flows[provider]();
const storage = AuthStorage.create(authPath);
// pi's own window: refresh with less than five minutes left.
const expiresSoon = (credential) => Date.now() + 5 * 60 * 1000 >= credential.expires;
const stored = await refreshStoredOAuthCredential(storage, provider, oauth, expiresSoon, AbortSignal.timeout(60_000));
console.log(JSON.stringify({ access: stored?.access, refresh: stored?.refresh }));
