// The transports of pi's `createMcpExtension({ createTransport })`: pi-rpc's
// MCP client speaks to a server through the extension's transport object
// (pi-mcp's `McpTransport`: `start`, `send`, `close`, `onMessage`,
// `onError`, `onClose`, optional `setProtocolVersion`). pi-rpc opens one per
// connection with the `mcp_transport` request (`{op: "open", stream, entry,
// cwd}`), sends messages through it (`{op: "send", stream, message}`) and
// closes it (`{op: "close", stream}`) or lets it go unclosed, as pi lets a
// client whose session expired go (`{op: "forget", stream}`); a `send` that
// throws answers `{failed: {message, status?, network?, kind?}}` (that
// request fails, as in pi);
// what the transport reports goes back
// as `streamData` of `stream`: `{message}`, `{error}`, `{closed: true}`.
// For a server that signs in with OAuth (`auth: true`), `createTransport`'s
// third argument is pi's `authProvider` (`token()`, `onUnauthorized(ctx)`,
// `settled()`), answered by pi-rpc's OAuth on its stored credentials
// through `streamService` calls of `stream`; for one with `auth.provider`,
// pi's provider-token `authProvider` (`token()`: the provider's API key).

function errorText(error) {
	return error instanceof Error ? error.message : String(error);
}

/** Whether `error` is an instance of a class named `name`, from whichever copy of pi-mcp threw it. */
function isPiMcpClass(error, name) {
	for (let proto = Object.getPrototypeOf(error ?? {}); proto; proto = Object.getPrototypeOf(proto)) {
		if (proto.constructor?.name === name) return true;
	}
	return false;
}

/** pi-mcp's subclasses of `McpHttpError` that pi's client handles on their own. */
const PI_MCP_KINDS = [
	["McpSessionExpiredError", "sessionExpired"],
	["McpAuthRequiredError", "authRequired"],
];

/**
 * What a transport's `send` threw, as pi's client reads it: its message; the
 * status of pi-mcp's HTTP error (pi retries a connect after a transient one)
 * and `kind` for its `McpSessionExpiredError` (pi starts a new session) and
 * `McpAuthRequiredError` (the server needs sign-in); `network` for a
 * `TypeError` (fetch's network failure, retried too).
 */
function sendFailure(error) {
	const failure = { message: errorText(error) };
	if (typeof error?.status === "number" && isPiMcpClass(error, "McpHttpError")) {
		failure.status = error.status;
		const kind = PI_MCP_KINDS.find(([name]) => isPiMcpClass(error, name));
		if (kind) failure.kind = kind[1];
	} else if (error instanceof TypeError) failure.network = true;
	return failure;
}

export function createMcpTransports(channel) {
	const open = new Map();
	const report = (stream, data) => channel.tell("streamData", { stream, data });

	/**
	 * pi's `authProvider` of the server whose transport is `stream`. As in
	 * pi, `settled()` waits for a refresh `onUnauthorized` started, even one
	 * whose request has not reached pi-rpc yet, and for pi-rpc's own.
	 */
	function authProvider(stream) {
		const ask = (params) => channel.request("streamService", { stream, ...params });
		const refreshing = new Set();
		return {
			token: async () => (await ask({ op: "token" })) ?? undefined,
			onUnauthorized: (context) => {
				const challenge = context?.response?.headers?.get?.("www-authenticate") ?? "";
				const call = ask({ op: "unauthorized", token: context?.token ?? null, challenge }).then(() => {});
				refreshing.add(call);
				return call.finally(() => refreshing.delete(call));
			},
			settled: async () => {
				await Promise.allSettled([...refreshing]);
				await ask({ op: "settled" });
			},
		};
	}

	/**
	 * pi's `authProvider` of a server with `auth.provider`: the token is the
	 * provider's API key, read at each request (`modelRegistry.getApiKeyForProvider`).
	 */
	function providerTokens(provider) {
		return {
			token: async () => (await channel.request("models", { op: "getProviderAuth", args: [provider] }))?.value?.auth?.apiKey,
			settled: async () => {},
		};
	}

	async function start(factory, { stream, entry, cwd, auth }) {
		if (typeof factory !== "function") throw new Error("this extension gave createMcpExtension no createTransport");
		const provider = typeof entry?.config?.url === "string" ? entry.config.auth?.provider : undefined;
		const given = auth ? authProvider(stream) : provider ? providerTokens(provider) : undefined;
		const transport = await factory(entry, cwd, given);
		if (!transport || typeof transport.start !== "function" || typeof transport.send !== "function") {
			throw new Error("createTransport did not return an MCP transport (start, send, close, onMessage, …)");
		}
		open.set(stream, transport);
		transport.onMessage?.((message) => {
			// pi's client tells the transport the version `initialize` settled on.
			const version = message?.result?.serverInfo ? message.result.protocolVersion : undefined;
			if (typeof version === "string") transport.setProtocolVersion?.(version);
			report(stream, { message });
		});
		transport.onError?.((error) => report(stream, { error: errorText(error) }));
		transport.onClose?.(() => {
			if (open.delete(stream)) report(stream, { closed: true });
		});
		try {
			await transport.start();
		} catch (error) {
			open.delete(stream);
			throw error;
		}
		return null;
	}

	return {
		/** One `mcp_transport` request of pi-rpc, for the extension whose factory is `factory`. */
		async request(factory, params) {
			const { op, stream } = params;
			if (op === "open") {
				// What createTransport or start() threw: pi retries pi-mcp's transient HTTP errors.
				try {
					return await start(factory, params);
				} catch (error) {
					return { failed: sendFailure(error) };
				}
			}
			const transport = open.get(stream);
			if (op === "send") {
				if (!transport) throw new Error("the MCP transport is closed");
				try {
					await transport.send(params.message);
				} catch (error) {
					return { failed: sendFailure(error) };
				}
				return null;
			}
			if (op === "close") {
				open.delete(stream);
				await transport?.close?.();
				return null;
			}
			if (op === "forget") {
				open.delete(stream);
				return null;
			}
			throw new Error(`unknown mcp_transport op: ${op}`);
		},
	};
}
