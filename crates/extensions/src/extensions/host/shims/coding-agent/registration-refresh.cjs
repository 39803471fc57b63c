// pi-rpc extension host: pi 1.6.0's offline model refresh of the providers
// registered on a runtime. pi's runtime refreshes its catalog after each
// registration change (`registerProvider`, `unregisterProvider`, a virtual
// model) and at `refresh()`: a config form's `refreshModels` is asked then,
// without the network (`allowNetwork: false`), and the models it publishes
// become the provider's. This does the same for the registrations an SDK
// session's runtime layer holds (session-models.cjs), once per change.

"use strict";

/** The context pi's runtime gives a registration's `refreshModels` offline. */
function offlineContext(provider, signal) {
	return {
		credential: undefined,
		stored: undefined,
		publish: async (publication) => {
			if (signal?.aborted) return false;
			publication?.update?.();
			return true;
		},
		allowNetwork: false,
		force: undefined,
		signal: signal ?? new AbortController().signal,
		baseUrl: provider.baseUrl,
	};
}

/**
 * `ids()`: the config registrations with a `refreshModels`;
 * `providerOf(id)`: the runtime's provider object of one (its
 * `refreshModels` publishes into the registration). `run(signal)` refreshes
 * them now; `schedule()` once after the current change.
 */
function createRegistrationRefresh({ ids, providerOf }) {
	let queued;
	const run = async (signal) => {
		await Promise.all(
			ids().map(async (id) => {
				const provider = providerOf(id);
				if (typeof provider?.refreshModels !== "function") return;
				try {
					await provider.refreshModels(offlineContext(provider, signal));
				} catch {
					// A failed refresh leaves the registration's models, as pi's does.
				}
			}),
		);
	};
	const schedule = () => {
		queued ??= Promise.resolve().then(() => {
			queued = undefined;
			return run();
		});
	};
	return { run, schedule };
}

module.exports = { createRegistrationRefresh };
