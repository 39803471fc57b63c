// pi-rpc extension host: pi's `DefaultPackageManager`, over pi-rpc's own
// package manager (the one behind `pi install/remove/list/update` and the
// packages loaded at start-up; the `lib` request `packages`, agent's
// extension_packages.rs). Settings are written to pi's files, then the given
// `SettingsManager` reloads them. `resolve()` answers the packages'
// resources only (pi-rpc's own discovery finds the top-level ones)
// (compat/DEVIATIONS.md).

"use strict";

const { lib } = require("./text.cjs");

class DefaultPackageManager {
	constructor(options) {
		this.cwd = options.cwd;
		this.agentDir = options.agentDir;
		this.settingsManager = options.settingsManager;
		this.progressCallback = undefined;
	}

	setProgressCallback(callback) {
		this.progressCallback = callback;
	}

	request(op, fields = {}) {
		const trusted = this.settingsManager?.isProjectTrusted?.() ?? true;
		return lib("packages", { op, cwd: this.cwd, agentDir: this.agentDir, trusted, ...fields });
	}

	/** Runs `work` as pi reports it to the progress callback: `start` (with `message`), then `complete` or `error`. */
	async withProgress(action, source, message, work) {
		this.progressCallback?.({ type: "start", action, source, message });
		try {
			const result = await work();
			this.progressCallback?.({ type: "complete", action, source });
			return result;
		} catch (error) {
			this.progressCallback?.({ type: "error", action, source, message: error.message });
			throw error;
		}
	}

	async reloadSettings() {
		await this.settingsManager?.reload?.();
	}

	async installAndPersist(source, options = {}) {
		await this.withProgress("install", source, `Installing ${source}...`, () => this.request("installAndPersist", { source, local: !!options.local }));
		await this.reloadSettings();
	}

	async removeAndPersist(source, options = {}) {
		const removed = await this.withProgress("remove", source, `Removing ${source}...`, () =>
			this.request("removeAndPersist", { source, local: !!options.local }),
		);
		await this.reloadSettings();
		return removed;
	}

	async update(source) {
		const changed = this.request("update", { source: source ?? "" });
		for (const line of changed) this.progressCallback?.({ type: "result", action: "update", source: line.split(" ")[0], message: line });
	}

	listConfiguredPackages() {
		return this.request("list");
	}

	getInstalledPath(source, scope) {
		return this.request("installedPath", { source, local: scope === "project" }) ?? undefined;
	}

	async resolve() {
		return this.request("resolve");
	}

	async resolveExtensionSources(sources, _options = {}) {
		return this.request("resolveExtensionSources", { sources: [...sources] });
	}

	async install(source, options = {}) {
		await this.withProgress("install", source, `Installing ${source}...`, () => this.request("install", { source, local: !!options.local }));
	}

	async remove(source, options = {}) {
		await this.withProgress("remove", source, `Removing ${source}...`, () => this.request("remove", { source, local: !!options.local }));
	}

	/** As pi: the source is added to (or re-pointed in) the scope's list, written through the `SettingsManager`. */
	addSourceToSettings(source, options = {}) {
		return this.editPackages("addSourceToSettings", source, !!options.local);
	}

	removeSourceFromSettings(source, options = {}) {
		return this.editPackages("removeSourceFromSettings", source, !!options.local);
	}

	editPackages(op, source, local) {
		const current = (local ? this.settingsManager.getProjectSettings() : this.settingsManager.getGlobalSettings()).packages ?? [];
		const { changed, packages } = this.request(op, { source, local, packages: current });
		if (!changed) return false;
		if (local) this.settingsManager.setProjectPackages(packages);
		else this.settingsManager.setPackages(packages);
		return true;
	}

	/** pi's answer from the settings as the `SettingsManager` has them: its pending writes land first. */
	async checkForAvailableUpdates() {
		await this.settingsManager?.flush?.();
		return this.request("availableUpdates");
	}
}

module.exports = { DefaultPackageManager };
