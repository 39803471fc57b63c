// pi-rpc extension host: pi's `AgentSessionRuntime` for an extension using
// pi's SDK, with `createAgentSessionRuntime`, `createAgentSessionServices`
// and `createAgentSessionFromServices`. The runtime holds one SDK session
// (agent-session.cjs) and replaces it as pi's does: `newSession` (a new
// session file in the same directory, or a new in-memory session),
// `switchSession` (a session file opened), `importFromJsonl` (a file copied
// into the session directory, then opened), each time asking the caller's
// factory for the new session and rebinding; `fork` (a branch of the
// session as a session of its own). The sub-session runs no extensions, so no
// `session_before_*` / `session_shutdown` events are sent (compat/DEVIATIONS.md).

"use strict";

const { randomUUID } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const transcript = require("../ai/transcript.cjs");
const { getAgentDir } = require("./runtime.cjs");
const { SessionManager } = require("./session.cjs");
const { FileSessionManager } = require("./session-file.cjs");
const { MemorySessionManager } = require("./session-memory.cjs");
const { relinkedBranch } = require("./session-switch.cjs");
const { SettingsManager } = require("./settings.cjs");
const { ModelRuntime } = require("./models.cjs");
const { DefaultResourceLoader } = require("./resources.cjs");
const { createAgentSession } = require("./agent-session.cjs");

class SessionImportFileNotFoundError extends Error {
	constructor(filePath) {
		super(`File not found: ${filePath}`);
		this.name = "SessionImportFileNotFoundError";
		this.filePath = filePath;
	}
}

/** pi refuses a session whose working directory is gone. */
function assertCwdExists(sessionManager) {
	const cwd = sessionManager.getCwd();
	if (!fs.existsSync(cwd)) throw new Error(`Session working directory does not exist: ${cwd}`);
}

/** The services a session is made from: settings, models, resources of `cwd`. */
async function createAgentSessionServices(options = {}) {
	const cwd = path.resolve(options.cwd ?? process.cwd());
	const agentDir = path.resolve(options.agentDir ?? getAgentDir());
	const settingsManager = options.settingsManager ?? SettingsManager.create(cwd, agentDir);
	const modelRuntime = options.modelRuntime ?? (await ModelRuntime.create());
	const resourceLoader = new DefaultResourceLoader({ ...(options.resourceLoaderOptions ?? {}), cwd, agentDir, settingsManager });
	await resourceLoader.reload(options.resourceLoaderReloadOptions);
	return { cwd, agentDir, settingsManager, modelRuntime, resourceLoader, diagnostics: [] };
}

/** A session made from `services` and a session manager (pi's `createAgentSession` with them). */
async function createAgentSessionFromServices(options) {
	const { services, ...rest } = options;
	return createAgentSession({
		...rest,
		cwd: services.cwd,
		agentDir: services.agentDir,
		settingsManager: services.settingsManager,
		modelRuntime: services.modelRuntime,
		resourceLoader: services.resourceLoader,
	});
}

class AgentSessionRuntime {
	constructor(session, services, createRuntime, diagnostics = [], modelFallbackMessage) {
		this._session = session;
		this._services = services;
		this._createRuntime = createRuntime;
		this._diagnostics = diagnostics;
		this._modelFallbackMessage = modelFallbackMessage;
		this._reported = new Set();
	}
	get services() {
		return this._services;
	}
	get session() {
		return this._session;
	}
	get cwd() {
		return this._services.cwd;
	}
	get diagnostics() {
		return this._diagnostics;
	}
	get modelFallbackMessage() {
		return this._modelFallbackMessage;
	}
	takeUnreportedDiagnostics() {
		return this._diagnostics.filter((d) => {
			const key = `${d.type}\0${d.message}`;
			if (this._reported.has(key)) return false;
			this._reported.add(key);
			return true;
		});
	}
	setRebindSession(rebind) {
		this._rebind = rebind;
	}
	setBeforeSessionInvalidate(hook) {
		this._beforeInvalidate = hook;
	}

	/** The session's extensions asked first (`session_before_switch` / `_fork`): whether one cancelled. */
	async _cancelledBy(event) {
		const runner = this._session.extensionRunner;
		if (!runner?.hasHandlers(event.type)) return false;
		return (await runner.emit(event))?.cancel === true;
	}

	/** The run stopped, the extensions' `session_shutdown` awaited, the session disposed. */
	async _teardown(reason, targetSessionFile) {
		await this._session.abort();
		const runner = this._session.extensionRunner;
		if (runner?.hasHandlers("session_shutdown")) await runner.emit({ type: "session_shutdown", reason, targetSessionFile });
		this._beforeInvalidate?.();
		this._session.dispose();
	}

	/** Ends the current session and makes the next from `sessionManager`. */
	async _replace(sessionManager, cwd, reason, withSession) {
		const previousSessionFile = this._session.sessionFile;
		await this._teardown(reason, sessionManager.getSessionFile());
		const result = await this._createRuntime({
			cwd,
			agentDir: this._services.agentDir,
			sessionManager,
			sessionStartEvent: { type: "session_start", reason, previousSessionFile },
		});
		this._session = result.session;
		this._services = result.services;
		this._diagnostics = result.diagnostics ?? [];
		this._modelFallbackMessage = result.modelFallbackMessage;
		if (this._rebind) await this._rebind(this._session);
		if (withSession) await withSession(this._session.createReplacedSessionContext());
	}

	async newSession(options = {}) {
		if (await this._cancelledBy({ type: "session_before_switch", reason: "new" })) return { cancelled: true };
		const current = this._session.sessionManager;
		const sessionManager = current.isPersisted()
			? new FileSessionManager(this.cwd, current.getSessionDir(), undefined, { parentSession: options.parentSession })
			: new MemorySessionManager(this.cwd, { parentSession: options.parentSession });
		await this._replace(sessionManager, this.cwd, "new");
		if (options.setup) await options.setup(this._session.sessionManager);
		if (options.withSession) await options.withSession(this._session.createReplacedSessionContext());
		return { cancelled: false };
	}

	async switchSession(sessionPath, options = {}) {
		if (await this._cancelledBy({ type: "session_before_switch", reason: "resume", targetSessionFile: sessionPath })) return { cancelled: true };
		const sessionManager = SessionManager.open(sessionPath, undefined, options.cwdOverride);
		assertCwdExists(sessionManager);
		await this._replace(sessionManager, sessionManager.getCwd(), "resume", options.withSession);
		return { cancelled: false };
	}

	async importFromJsonl(inputPath, cwdOverride) {
		const source = path.resolve(inputPath);
		if (!fs.existsSync(source)) throw new SessionImportFileNotFoundError(source);
		const dir = this._session.sessionManager.getSessionDir();
		fs.mkdirSync(dir, { recursive: true });
		let target = path.join(dir, path.basename(source));
		const alreadyThere = path.resolve(target) === source;
		if (!alreadyThere) {
			const { name, ext } = path.parse(target);
			for (let n = 1; fs.existsSync(target); n++) target = path.join(dir, `${name}-${n}${ext}`);
		}
		if (await this._cancelledBy({ type: "session_before_switch", reason: "resume", targetSessionFile: target })) return { cancelled: true };
		if (!alreadyThere) fs.copyFileSync(source, target, fs.constants.COPYFILE_EXCL);
		const sessionManager = SessionManager.open(target, dir, cwdOverride);
		try {
			assertCwdExists(sessionManager);
		} catch (error) {
			if (!alreadyThere) fs.rmSync(target, { force: true });
			throw error;
		}
		await this._replace(sessionManager, sessionManager.getCwd(), "resume");
		return { cancelled: false };
	}

	/**
	 * pi's fork: a new session holding the branch up to `entryId` ("at"), or
	 * up to the user message `entryId` leaves out ("before", its text handed
	 * back as `selectedText`); a session file of its own when persisted.
	 */
	async fork(entryId, options = {}) {
		const position = options.position ?? "before";
		if (await this._cancelledBy({ type: "session_before_fork", entryId, position })) return { cancelled: true };
		const current = this._session.sessionManager;
		const selected = current.getEntry(entryId);
		if (!selected) throw new Error("Invalid entry ID for forking");
		let target = selected.id;
		let selectedText;
		if (position !== "at") {
			if (selected.type !== "message" || selected.message?.role !== "user") throw new Error("Invalid entry ID for forking");
			target = selected.parentId;
			selectedText = transcript.contentText(selected.message.content, "");
		}
		const previous = this._session.sessionFile;
		let next;
		let cwd = this.cwd;
		if (!current.isPersisted()) {
			next = new MemorySessionManager(cwd, { parentSession: target ? undefined : previous });
			if (target) adopt(next, branchedEntries(current, target));
		} else {
			if (!previous) throw new Error("Persisted session is missing a session file");
			const dir = current.getSessionDir();
			if (!target) {
				next = new FileSessionManager(cwd, dir, undefined, { parentSession: previous });
			} else {
				if (!fs.existsSync(previous)) throw new Error("This session has not been saved yet. Send a message before cloning or forking it.");
				const source = SessionManager.open(previous, dir);
				cwd = source.getCwd();
				next = new FileSessionManager(cwd, dir, undefined, { parentSession: previous });
				adopt(next, branchedEntries(source, target));
				const talk = next.entries.some((e) => e.type === "message" && ["user", "assistant"].includes(e.message?.role));
				if (talk) {
					fs.writeFileSync(next.getSessionFile(), [next.header, ...next.entries].map((e) => `${JSON.stringify(e)}\n`).join(""));
					next.flushed = true;
				}
			}
		}
		await this._replace(next, cwd, "fork", options.withSession);
		return { cancelled: false, selectedText };
	}

	async dispose() {
		await this._teardown("quit");
	}
}

/**
 * The branch from the root to `leafId` as a session of its own: label
 * entries left out and the rest re-linked in order, then one label entry for
 * each labelled entry kept.
 */
function branchedEntries(sm, leafId) {
	const kept = relinkedBranch(sm, leafId);
	let parentId = kept.at(-1)?.id ?? null;
	const ids = new Set(kept.map((e) => e.id));
	const labels = [];
	for (const entry of kept) {
		const last = sm.getEntries().filter((e) => e.type === "label" && e.targetId === entry.id).at(-1);
		if (!last?.label) continue;
		let id;
		do id = randomUUID().slice(0, 8);
		while (ids.has(id));
		ids.add(id);
		labels.push({ type: "label", id, parentId, timestamp: last.timestamp, targetId: entry.id, label: last.label });
		parentId = id;
	}
	return [...kept, ...labels];
}

/** `manager` holding `entries`, its leaf the last. */
function adopt(manager, entries) {
	manager.entries = entries;
	manager.byId = new Map(entries.map((e) => [e.id, e]));
	manager.leafId = entries.at(-1)?.id ?? null;
}

/** pi's `createAgentSessionRuntime(factory, {cwd, agentDir, sessionManager})`. */
async function createAgentSessionRuntime(createRuntime, options) {
	assertCwdExists(options.sessionManager);
	const result = await createRuntime(options);
	return new AgentSessionRuntime(result.session, result.services, createRuntime, result.diagnostics, result.modelFallbackMessage);
}

module.exports = { AgentSessionRuntime, createAgentSessionRuntime, createAgentSessionServices, createAgentSessionFromServices };
