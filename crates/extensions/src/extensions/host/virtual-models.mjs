// pi-rpc extension host: the virtual models an extension registers
// (`pi.registerVirtualModel`, pi's docs/virtual-models.md). Their catalog
// entries go to pi-rpc with the registration; before each model request made
// with one, pi-rpc asks `route_model`, and the router's answer names the
// physical model (and thinking level) the request goes to. Router state is
// kept on the session branch as a custom entry, as pi keeps it.

/** The `api` of a virtual catalog entry: pi-rpc routes it before any request. */
const VIRTUAL_API = "pi-virtual";
/** The custom entry that holds router state on the session branch (pi's name). */
const STATE_ENTRY = "pi.virtual-model-state";
const LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/** The catalog entry of a virtual model, as pi builds it. */
function catalogEntry(definition) {
	const levels = definition.thinkingLevels ?? ["off"];
	const thinkingLevelMap = {};
	for (const level of LEVELS) thinkingLevelMap[level] = levels.includes(level) ? level : null;
	return {
		id: definition.id,
		name: definition.name ?? definition.id,
		api: VIRTUAL_API,
		provider: definition.provider,
		baseUrl: "",
		reasoning: levels.some((level) => level !== "off"),
		thinkingLevelMap,
		input: definition.input ?? ["text", "image"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: definition.contextWindow ?? 0,
		maxTokens: definition.maxTokens ?? 0,
	};
}

/** The latest successful response among `messages` (its model is physical). */
function latestResponse(messages) {
	for (let i = messages.length - 1; i >= 0; i--) {
		const message = messages[i];
		if (message.role === "assistant" && message.stopReason !== "error" && message.stopReason !== "aborted") return message;
	}
	return undefined;
}

/** The router state the session branch stores for `provider/id`. */
function storedState(branch, provider, modelId) {
	for (let i = branch.length - 1; i >= 0; i--) {
		const entry = branch[i];
		if (entry.type !== "custom" || entry.customType !== STATE_ENTRY) continue;
		if (entry.data?.provider === provider && entry.data.modelId === modelId) return entry.data.state;
	}
	return undefined;
}

export class VirtualModels {
	constructor() {
		this.byKey = new Map();
	}

	register(definition) {
		const provider = String(definition?.provider ?? "").trim();
		const id = String(definition?.id ?? "").trim();
		if (!provider || !id) throw new Error("Virtual model provider and id must not be empty.");
		if (typeof definition.route !== "function") throw new Error(`Virtual model ${provider}/${id} needs a route() function.`);
		this.byKey.set(`${provider}/${id}`, definition);
	}

	unregister(provider, id) {
		return this.byKey.delete(`${provider}/${id}`);
	}

	catalog() {
		return [...this.byKey.values()].map(catalogEntry);
	}

	/**
	 * pi-rpc's `route_model` request: `{provider, id, reason, thinkingLevel, messages, failed?}`.
	 * The answer: `{provider, id, thinkingLevel}` of the physical model. With
	 * `manual` (pi's `ModelRuntime.resolveModel` called by an extension) the
	 * router gets the caller's `state`, nothing is stored, and the answer
	 * carries the router's `state` for the caller to keep.
	 */
	async route(params, ctx, signal, pi) {
		const { provider, id, reason, thinkingLevel, messages = [], failed, manual } = params;
		const definition = this.byKey.get(`${provider}/${id}`);
		const name = `Virtual model ${provider}/${id}`;
		if (!definition) throw new Error(`${name} is not registered.`);
		const find = (p, m) => {
			const model = ctx.modelRegistry.find(p, m);
			return model && model.api !== VIRTUAL_API ? model : undefined;
		};
		const latest = latestResponse(messages);
		const previousModel = latest && find(latest.provider, latest.model);
		const failedModel = failed && find(failed.provider, failed.model);
		const direct = reason === "direct";
		const state = manual ? params.state : direct ? undefined : storedState(ctx.sessionManager.getBranch(), provider, id);
		const request = {
			model: catalogEntry(definition),
			thinkingLevel,
			reason,
			previous: previousModel && { model: previousModel, thinkingLevel: latest.thinkingLevel },
			failed: failedModel && { model: failedModel, thinkingLevel: failed.thinkingLevel, message: failed },
			state,
			messages,
			signal,
		};
		const route = await definition.route(request, ctx);
		const target = route?.model && find(route.model.provider, route.model.id);
		if (!target) {
			const where = route?.model ? `${route.model.provider}/${route.model.id}` : String(route?.model);
			throw new Error(`${name} routed to ${where}, which is not a physical model.`);
		}
		// Any other value than the current state is stored before the request is sent, as in pi.
		if (manual) return { provider: target.provider, id: target.id, thinkingLevel: route.thinkingLevel, state: route.state };
		if (!direct && route.state !== undefined && route.state !== state) {
			pi.appendEntry(STATE_ENTRY, { provider, modelId: id, state: route.state });
		}
		return { provider: target.provider, id: target.id, thinkingLevel: route.thinkingLevel };
	}
}
