// pi-rpc extension host: the providers an extension registers
// (`pi.registerProvider`, pi's docs/custom-provider.md). Their config (what
// models.json could say: baseUrl, apiKey, api, headers, authHeader, models)
// goes to pi-rpc with the registration; a provider with its own stream
// function (`streamSimple`, or a native provider's `api.streamSimple`) has
// the requests of its API sent here as `provider_stream`, and its pi-ai
// events go back as `streamData`, without the `partial` message they carry
// (what pi-rpc needs of it travels beside the event).

import { createRequire } from "node:module";

import { configRefreshProvider } from "./config-refresh.mjs";
import { ProviderRefresh } from "./provider-refresh.mjs";

const require = createRequire(import.meta.url);
const { normalizeContext } = require("./shims/ai/transcript.cjs");

/** pi-ai's wire APIs pi-rpc runs itself: a native provider naming one needs no stream here. */
const BUILTIN_APIS = new Set([
	"anthropic-messages",
	"openai-completions",
	"openai-responses",
	"openai-codex-responses",
	"azure-openai-responses",
	"google-generative-ai",
	"google-vertex",
	"mistral-conversations",
	"bedrock-converse-stream",
]);

/** JSON-safe copy (functions and symbols dropped). */
const plain = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/** `registerProvider(name, config)` or `registerProvider(provider)` as `{name, config, streamSimple, oauth}`. */
function normalize(nameOrProvider, config) {
	if (typeof nameOrProvider === "string") {
		const name = nameOrProvider.trim();
		if (!name) throw new Error("pi.registerProvider(): the provider needs a name");
		const cfg = config ?? {};
		if (typeof cfg.streamSimple === "function" && !cfg.api) {
			throw new Error(`pi.registerProvider("${name}"): a provider with streamSimple needs an \`api\``);
		}
		return { name, config: cfg, streamSimple: cfg.streamSimple, oauth: cfg.oauth };
	}
	const provider = nameOrProvider ?? {};
	const name = String(provider.id ?? "").trim();
	if (!name) throw new Error("pi.registerProvider(): the provider needs an id");
	const own = provider.streamSimple ?? provider.stream;
	const models = providerModels(provider);
	// pi's Provider streams its models itself, whatever their API: pi-rpc
	// routes its models' API (the first chat model's) to that stream.
	const api = typeof provider.api === "string" ? provider.api : (provider.api?.api ?? (own ? models?.find((m) => (m?.type ?? "chat") === "chat")?.api : undefined));
	const delegated = typeof provider.api === "object" ? (provider.api.streamSimple ?? provider.api.stream) : undefined;
	const streamSimple = own ?? (api && !BUILTIN_APIS.has(api) ? delegated : undefined);
	const data = { name: provider.name, baseUrl: provider.baseUrl, api, headers: provider.headers, models };
	return { name, config: data, streamSimple, oauth: provider.oauth, provider };
}

/**
 * A native provider's models (`getAllModels()`, its chat models and its
 * classifier and image models, else `getModels()`, which must not throw;
 * else its `models`). pi-rpc keeps the typed ones apart from the chat ones.
 */
function providerModels(provider) {
	for (const list of ["getAllModels", "getModels"]) {
		if (typeof provider[list] !== "function") continue;
		try {
			return provider[list]();
		} catch {
			return [];
		}
	}
	return provider.models;
}

/** The op names of pi-ai's typed model calls, and what a provider implements them with. */
const TYPED = {
	classify: { table: "classifiers", kind: "classifier" },
	generateImages: { table: "images", kind: "image" },
};

/**
 * The APIs whose `op` (`classify`, `generateImages`) the registration
 * implements: the config form's `classifiers` / `images` keys (pi's
 * provider composer dispatches on the model's `api`), `"*"` for a native
 * provider's own function (it serves every model of its own).
 */
function typedApis(entry, op) {
	if (!entry.legacy) return typeof entry.provider?.[op] === "function" ? ["*"] : [];
	const table = entry.config?.[TYPED[op].table];
	if (!table || typeof table !== "object") return [];
	return Object.keys(table).filter((api) => typeof table[api]?.[op] === "function");
}

/** pi-ai's default auth context: variables of the environment, files that exist (`~` is the home directory). */
const authContext = {
	async env(name) {
		const value = process.env[name];
		return typeof value === "string" && value.trim().length > 0 ? value : undefined;
	},
	async fileExists(path) {
		try {
			const { access } = await import("node:fs/promises");
			const { homedir } = await import("node:os");
			await access(String(path).startsWith("~") ? homedir() + String(path).slice(1) : String(path));
			return true;
		} catch {
			return false;
		}
	},
};

/** Longest wait for a native provider's key and offline model refresh before its registration goes out. */
const SETTLE_MS = 5000;

/** What pi-rpc needs of one pi-ai event: the event without `partial`, plus the block's id, name, signature. */
function slim(event) {
	const { partial, ...rest } = event ?? {};
	const block = typeof rest.contentIndex === "number" ? partial?.content?.[rest.contentIndex] : undefined;
	if (rest.type === "toolcall_start" && block) {
		rest.id ??= block.id;
		rest.toolName ??= block.name;
	}
	if ((rest.type === "text_end" || rest.type === "thinking_end") && block) {
		const signature = block.textSignature ?? block.thinkingSignature;
		if (signature) rest.signature = signature;
		if (block.redacted) rest.redacted = true;
	}
	return rest;
}

/** A `Headers` object or a plain record as a record of strings. */
function headerRecord(headers) {
	if (!headers) return {};
	if (typeof headers.forEach === "function" && typeof headers.get === "function") {
		const out = {};
		headers.forEach((value, name) => {
			out[name] = String(value);
		});
		return out;
	}
	return Object.fromEntries(Object.entries(headers).filter(([, v]) => v != null).map(([k, v]) => [k, String(v)]));
}

/**
 * The stream options' hooks (pi-ai's `onPayload`, `onResponse`,
 * `onProviderStreamEvent`): when extensions listen to pi's provider events
 * (`observed`), they become `before_provider_request` (its handlers'
 * payload is returned), `after_provider_response` and
 * `provider_stream_event`, as pi wires them for every provider.
 */
function streamHooks({ stream, observed }, channel) {
	if (!observed) {
		return { onPayload: async (payload) => payload, onResponse: async () => {}, onProviderStreamEvent: async () => {} };
	}
	return {
		onPayload: async (payload) => {
			const answer = await channel.request("providerHook", { stream, hook: "payload", payload: plain(payload) ?? null });
			return answer?.payload;
		},
		onResponse: async (response) => {
			const status = Number(response?.status ?? 0);
			await channel.request("providerHook", { stream, hook: "response", status, headers: headerRecord(response?.headers) });
		},
		// Answered once the \`provider_stream_event\` handlers ran: the stream awaits them, as in pi.
		onProviderStreamEvent: async (data) => {
			await channel.request("providerHook", { stream, hook: "streamEvent", data: plain(data) ?? null });
		},
	};
}

export class Providers {
	/**
	 * `onChange`: the registration changed after it went out (a native
	 * provider settled); `agentDir`, `offline` and `channel` (its network
	 * phase's turn) for its model refresh.
	 */
	constructor(onChange = () => {}, { agentDir, offline, channel, configRefresh = true } = {}) {
		this.byName = new Map();
		// A config form's `refreshModels` is run here (not for a runtime's own registrations: registration-refresh.cjs).
		this.configRefresh = configRefresh;
		this.onChange = onChange;
		this.settling = new Set();
		const turn = channel ? (params) => channel.request("providerRefresh", params) : undefined;
		this.refresh = new ProviderRefresh({ agentDir, offline, authContext, turn });
	}

	/**
	 * A native provider settles once registered, as pi's model runtime does
	 * with it: its `apiKey` auth is resolved (whether it has a key; each
	 * request asks again), and `refreshModels` runs its offline phase (the
	 * stored credential and catalog; `publish` applies the update), after
	 * which `getModels()` is its model list and the registration goes out.
	 * Then, unless offline, its network phase runs in the background, as
	 * pi's RPC mode refreshes catalogs after start, and the registration
	 * goes out again with the list it published. A config form with
	 * `refreshModels` is refreshed the same way (config-refresh.mjs).
	 */
	settle(entry) {
		const legacy = !entry.provider;
		const provider = entry.provider ?? configRefreshProvider(entry);
		const signal = AbortSignal.timeout(30_000);
		const refreshes = typeof provider.refreshModels === "function";
		// A config form's answer goes into its config itself.
		const publish = () => {
			if (!legacy) entry.config = { ...entry.config, models: providerModels(provider) };
		};
		const work = (async () => {
			if (legacy) return this.restoreWithin(provider, signal, publish);
			try {
				const stored = this.refresh.credential(provider.id);
				const credential = stored?.type === "api_key" ? stored : undefined;
				const resolved = await provider.auth?.apiKey?.resolve?.({ ctx: authContext, credential, signal });
				const apiKey = resolved?.auth?.apiKey;
				if (typeof apiKey === "string" && apiKey) entry.config = { ...entry.config, apiKey };
			} catch {
				// Not configured: the provider's models need a key from elsewhere.
			}
			if (refreshes) await this.restoreWithin(provider, signal, publish);
		})();
		this.settling.add(work);
		const current = () => this.byName.get(entry.name) === entry;
		work.finally(() => {
			this.settling.delete(work);
			if (current()) this.onChange();
			if (!refreshes || !current()) return;
			this.refresh
				.fetch(provider, AbortSignal.timeout(15_000))
				.then((ran) => {
					if (!ran || !current()) return;
					publish();
					this.onChange();
				})
				.catch(() => {
					// A failed network refresh keeps the catalog (pi logs nothing in RPC mode).
				});
		});
	}

	/** The offline phase of `provider`'s refresh, then `publish` (a failed refresh keeps the list, as pi's). */
	async restoreWithin(provider, signal, publish) {
		try {
			await this.refresh.restore(provider, signal);
		} catch {
			// pi keeps the previous list when a refresh fails.
		}
		publish();
	}

	/** Wait (a bounded time) for the native providers registered so far to settle. */
	async settled() {
		if (this.settling.size === 0) return;
		await Promise.race([Promise.all(this.settling), new Promise((resolve) => setTimeout(resolve, SETTLE_MS))]);
	}

	register(nameOrProvider, config) {
		let entry = normalize(nameOrProvider, config);
		const legacy = typeof nameOrProvider === "string";
		const previous = this.byName.get(entry.name);
		// The config form registered again: its defined fields go over the
		// previous config form's, the others stay (pi's model runtime). A
		// complete provider replaces whatever was registered under its id.
		const own = legacy
			? (({ streamSimple: _s, oauth: _o, refreshModels: _r, classifiers: _c, images: _i, ...data }) => data)(entry.config)
			: undefined;
		if (legacy && previous?.legacy) {
			const merged = { ...previous.config };
			for (const [key, value] of Object.entries(entry.config)) {
				if (value !== undefined) merged[key] = value;
			}
			entry = normalize(entry.name, merged);
			entry.calls = [...previous.calls, own];
		} else if (legacy) {
			entry.calls = [own];
		}
		entry.legacy = legacy;
		this.byName.set(entry.name, entry);
		if (!legacy && (entry.provider?.auth?.apiKey || typeof entry.provider?.refreshModels === "function")) {
			this.settle(entry);
		} else if (legacy && this.configRefresh && typeof entry.config?.refreshModels === "function") {
			this.settle(entry);
		}
	}

	unregister(name) {
		return this.byName.delete(name);
	}

	/** The registration's `providers`. */
	catalog() {
		return [...this.byName.values()].map((entry) => {
			const { name, config, streamSimple, oauth, legacy, provider, calls } = entry;
			const { streamSimple: _s, oauth: _o, refreshModels: _r, classifiers: _c, images: _i, ...data } = config ?? {};
			return {
				name,
				config: plain(data) ?? {},
				stream: typeof streamSimple === "function",
				oauth: oauth?.name ?? (oauth ? name : undefined),
				native: !legacy,
				// A native provider's key is asked for each request (`provider_oauth` `resolve`).
				key: !legacy && typeof provider?.auth?.apiKey?.resolve === "function",
				// The config form: each registerProvider call's own fields, in order.
				calls: legacy ? calls.map((call) => plain(call) ?? {}) : undefined,
				// The APIs of its classifier and image models it implements (`provider_typed`).
				classifiers: typedApis(entry, "classify"),
				images: typedApis(entry, "generateImages"),
			};
		});
	}

	/**
	 * pi-rpc's `provider_oauth`: `{provider, action, credential}`. `refresh`
	 * answers the refreshed credential as `auth.json` stores it (`type`
	 * `oauth`); `apiKey` answers `{apiKey}` for a request.
	 */
	async oauth({ provider, action, credential }) {
		if (action === "resolve") return this.resolveKey(provider, credential);
		const oauth = this.byName.get(provider)?.oauth;
		if (!oauth) throw new Error(`Provider "${provider}" has no OAuth login`);
		if (action === "refresh") {
			const refresh = oauth.refreshToken ?? oauth.refresh;
			const next = await refresh.call(oauth, credential, AbortSignal.timeout(15000));
			return { ...plain(next), type: "oauth" };
		}
		const apiKey = oauth.getApiKey ? await oauth.getApiKey(credential) : (await oauth.toAuth?.(credential))?.apiKey;
		return { apiKey };
	}

	/**
	 * A native provider's key for one request (pi-ai resolves its
	 * `auth.apiKey` before each request): `{apiKey, headers?, baseUrl?}`,
	 * `{}` when the provider is not configured. `credential` is the key
	 * stored for it (`auth.json`, `--api-key`), as pi passes it.
	 */
	async resolveKey(provider, credential) {
		const resolved = await this.resolveAuth(provider, credential ?? undefined, false);
		const auth = resolved?.auth;
		if (!auth) return {};
		return { apiKey: auth.apiKey, headers: auth.headers ? headerRecord(auth.headers) : undefined, baseUrl: auth.baseUrl };
	}

	/**
	 * A native provider's `auth.apiKey.resolve()` answer (`{auth, env}`),
	 * given `credential`, or (`lookup`) the key `auth.json` stores for it
	 * (pi's stored credential). A failure is pi-ai's "API key auth failed for
	 * provider …", its cause kept.
	 */
	async resolveAuth(provider, credential, lookup) {
		const apiKey = this.byName.get(provider)?.provider?.auth?.apiKey;
		if (typeof apiKey?.resolve !== "function") throw new Error(`Provider "${provider}" has no API key auth`);
		if (lookup) {
			const stored = this.refresh.credential(provider);
			credential = stored?.type === "api_key" ? stored : undefined;
		}
		try {
			return await apiKey.resolve({ ctx: authContext, credential, signal: AbortSignal.timeout(30_000) });
		} catch (error) {
			const cause = error instanceof Error ? error.message : String(error);
			throw new Error(`API key auth failed for provider ${provider}: ${cause}`, { cause: error });
		}
	}

	/**
	 * pi-rpc's `provider_typed`: `{op, model, context, options}`, a
	 * classifier or image model call of a registered provider (pi-ai's
	 * `classify` / `generateImages` after its auth was applied: `options`
	 * has the key and headers, `model` the base URL). The answer is the
	 * implementation's result; a failure is pi-rpc's to turn into pi's
	 * error result.
	 */
	async typed({ op, model, context, options = {} }, signal) {
		const typed = TYPED[op];
		if (!typed) throw new Error(`Unknown model call: ${op}`);
		const entry = this.byName.get(model?.provider);
		let call;
		if (entry && !entry.legacy && typeof entry.provider?.[op] === "function") {
			call = (...args) => entry.provider[op](...args);
		} else if (entry?.legacy) {
			const implementation = entry.config?.[typed.table]?.[model?.api];
			if (typeof implementation?.[op] === "function") call = (...args) => implementation[op](...args);
		}
		if (!call) throw new Error(`Provider ${model?.provider} has no ${typed.kind} implementation for "${model?.api}"`);
		return plain(await call(model, context, { ...options, signal })) ?? null;
	}

	/**
	 * pi-rpc's `provider_stream`: `{stream, api, model, context, options}`.
	 * Each event goes back as `streamData`; the answer comes once the
	 * stream ended (its `done` or `error` was sent).
	 */
	async stream(params, signal, channel) {
		const { stream, api, model, context = {}, options = {} } = params;
		// A native provider streams every model of its own, whatever the
		// model's API; a config form's stream serves its models of its `api`.
		const own = this.byName.get(model?.provider);
		const entry =
			own && typeof own.streamSimple === "function" && (!own.legacy || own.config.api === api)
				? own
				: [...this.byName.values()].reverse().find((p) => p.config.api === api && typeof p.streamSimple === "function");
		if (!entry) throw new Error(`No stream function is registered for the API "${api}"`);
		const transcript = normalizeContext({
			systemPrompt: context.systemPrompt,
			tools: context.tools ?? [],
			messages: context.messages ?? [],
		});
		const events = await entry.streamSimple(model, transcript, { ...options, ...streamHooks(params, channel), signal });
		if (!events || typeof events[Symbol.asyncIterator] !== "function") {
			throw new Error(`The stream function of provider "${entry.name}" did not return an event stream`);
		}
		for await (const event of events) {
			channel.tell("streamData", { stream, data: slim(event) });
			if (event?.type === "done" || event?.type === "error") break;
		}
		return null;
	}
}
