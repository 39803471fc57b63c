// pi-rpc extension host: pi's `AgentSessionRuntime` for an extension using
// pi's SDK, with `createAgentSessionRuntime`, `createAgentSessionServices`
// and `createAgentSessionFromServices`. The runtime holds one SDK session
// (agent-session.cjs) and replaces it as pi's does: `newSession` (a new
// session file in the same directory, or a new in-memory session),
// `switchSession` (a session file opened), `importFromJsonl` (a file copied
// into the session directory, then opened), each time asking the caller's
// factory for the new session and rebinding. The sub-session runs no
// extensions, so no `session_before_*` / `session_shutdown` events are sent;
// `fork` is not available (compat/DEVIATIONS.md).

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { getAgentDir } = require("./runtime.cjs");
const { SessionManager } = require("./session.cjs");
const { FileSessionManager } = require("./session-file.cjs");
const { MemorySessionManager } = require("./session-memory.cjs");
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

	/** Ends the current session and makes the next from `sessionManager`. */
	async _replace(sessionManager, cwd, reason, withSession) {
		const previousSessionFile = this._session.sessionFile;
		await this._session.abort();
		this._beforeInvalidate?.();
		this._session.dispose();
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
		if (withSession) await withSession(this._session);
	}

	async newSession(options = {}) {
		const current = this._session.sessionManager;
		const sessionManager = current.isPersisted()
			? new FileSessionManager(this.cwd, current.getSessionDir(), undefined, { parentSession: options.parentSession })
			: new MemorySessionManager(this.cwd, { parentSession: options.parentSession });
		await this._replace(sessionManager, this.cwd, "new");
		if (options.setup) await options.setup(this._session.sessionManager);
		if (options.withSession) await options.withSession(this._session);
		return { cancelled: false };
	}

	async switchSession(sessionPath, options = {}) {
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
			fs.copyFileSync(source, target, fs.constants.COPYFILE_EXCL);
		}
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

	async fork() {
		throw new Error("AgentSessionRuntime.fork() is not available in pi-rpc's extension host (compat/DEVIATIONS.md); use SessionManager.forkFrom() and switchSession()");
	}

	async dispose() {
		await this._session.abort();
		this._beforeInvalidate?.();
		this._session.dispose();
	}
}

/** pi's `createAgentSessionRuntime(factory, {cwd, agentDir, sessionManager})`. */
async function createAgentSessionRuntime(createRuntime, options) {
	assertCwdExists(options.sessionManager);
	const result = await createRuntime(options);
	return new AgentSessionRuntime(result.session, result.services, createRuntime, result.diagnostics, result.modelFallbackMessage);
}

module.exports = { AgentSessionRuntime, createAgentSessionRuntime, createAgentSessionServices, createAgentSessionFromServices };
